"""Kernel counters over the region of interest (`kstat.roi.*`, manylab/kstats.py), for every
workload: the kernel variants' own counters (LDU's log, FinerLRU's batches) and the vmstat
events of page, migration, reclaim and THP traffic, per setting, with the count per workload
operation when the workload reports its operations (`result.ops`)."""

from __future__ import annotations

from manylab import kstats
from manylab.report.axes import layout
from manylab.report.kinds.common import first_lines
from manylab.report.model import Context, Section, Table
from manylab.report.records import Record, is_number, numeric_columns, ok_records
from manylab.report.stats import aggregate, group, sort_key

ROI = "kstat.roi."
GROUPS = {"ldu": "LDU's log (debugfs ldu/stats)",
          "finer_lru": "FinerLRU's drained batches (debugfs finer_lru/batches)",
          "vmstat": "vmstat events"}
VMSTAT_EVENTS = ("pgfault", "pgmajfault", "pgalloc_normal", "pgalloc_movable", "pgfree",
                 "pgmigrate_success", "pgmigrate_fail", "numa_hit", "numa_miss", "numa_foreign",
                 "pgscan_kswapd", "pgscan_direct", "pgsteal_kswapd", "pgsteal_direct",
                 "workingset_refault_anon", "workingset_refault_file", "thp_fault_alloc",
                 "thp_split_page", "compact_stall", "tlb_remote_flush")
OPS = "result.ops"


def shown_columns(points: list[Record], group_name: str) -> list[str]:
    """The group's ROI columns that are not 0 in every point (vmstat: only VMSTAT_EVENTS)."""
    prefix = f"{ROI}{group_name}."
    columns = numeric_columns(points, prefix)
    if group_name == "vmstat":
        columns = [f"{prefix}{name}" for name in VMSTAT_EVENTS if f"{prefix}{name}" in columns]
    return [c for c in columns if any(is_number(p.get(c)) and p.get(c) != 0 for p in points)]


def cell(points: list[Record], column: str) -> str:
    """Mean over the points, and per operation when they report operations (not for gauges:
    a level at the end of the ROI)."""
    summary = aggregate(points, [], column).get(())
    if summary is None:
        return ""
    ops = aggregate(points, [], OPS).get(())
    if ops is None or ops.mean <= 0 or kstats.is_gauge(column.removeprefix(ROI)):
        return f"{summary.mean:,.0f}"
    return f"{summary.mean:,.0f} ({summary.mean / ops.mean:,.2f})"


def sections(ctx: Context) -> list[Section]:
    points = [p for p in first_lines(ok_records(ctx.records))
              if any(key.startswith(ROI) for key in p)]
    if not points:
        return []
    lay = layout(points, ctx.swept)
    keys = [*lay.series, lay.x] if lay.x in ctx.swept else list(lay.series)
    per_op = any(is_number(p.get(OPS)) for p in points)
    settings = sorted(group(points, keys).items(), key=lambda kv: [sort_key(v) for v in kv[0]])
    tables = []
    for group_name, title in GROUPS.items():
        columns = shown_columns(points, group_name)
        if not columns:
            continue
        body = [[*map(str, combo), *(cell(members, c) for c in columns)]
                for combo, members in settings]
        tables.append(Table(f"{title} over the ROI", [*keys, *(c.removeprefix(
            f"{ROI}{group_name}.") for c in columns)], body))
    if not tables:
        return []
    unit = " and, in brackets, per operation of the workload (result.ops)" if per_op else ""
    return [Section(f"{ctx.workload}: kernel counters", [
        "Counters the kernel changed between the edges of the region of interest "
        f"(mean over repeats{unit}); counters that stayed 0 everywhere are left out. Every "
        "counter, over the ROI (kstat.roi.*) and over the whole workload (kstat.run.*), is in "
        "../results.csv; the snapshots are in each point's kstats.json."], [], tables)]
