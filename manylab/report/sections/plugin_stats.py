"""The plugin's `stats.*` columns, for every workload.

With the plugin's region summary (`stats.roi.*`, `stats.total.*`), the key figures of the ROI
(or of the whole run without markers) are drawn; every column stays in results.csv. Other
columns are grouped by the first part of their name (`stats.coherence.inv` -> coherence,
`stats.l2_misses` -> l2); each group is one figure, a panel per column, against the swept key.
"""

from __future__ import annotations

import re

from manylab.report.axes import layout
from manylab.report.kinds.common import first_lines, metric_figure
from manylab.report.model import Context, Section
from manylab.report.records import numeric_columns, ok_records

PANELS_PER_FIGURE = 6
KEY_FIGURES = ("insts", "mem.accesses", "l1d.miss_rate", "l2.miss_rate", "coh.msgs",
               "coh.hops", "coh.invalidations", "l1d.misses.coherence", "mem.reads",
               "mem.writes", "mem.pcm.writes", "mem.energy_nj", "time.modelled_ns")
SPAN_TIME = re.compile(r"time\.span(\d+)\.modelled_ns")


def key_columns(columns: list[str]) -> list[str]:
    """The key figures of the ROI region (else the whole run), when the plugin wrote them, and
    the modelled time of each span number the workload used (plugin README "Spans")."""
    region = "roi" if any(c.startswith("stats.roi.") for c in columns) else "total"
    present = set(columns)
    spans = {int(found.group(1)): column for column in columns
             if (found := SPAN_TIME.fullmatch(column.removeprefix(f"stats.{region}.")))}
    return [f"stats.{region}.{k}" for k in KEY_FIGURES if f"stats.{region}.{k}" in present] + \
        [spans[n] for n in sorted(spans)]


def stats_group(column: str) -> str:
    name = column.removeprefix("stats.")
    if "." in name:
        return name.split(".", 1)[0]
    return name.split("_", 1)[0] if "_" in name else "stats"


def sections(ctx: Context) -> list[Section]:
    """Points that ran the machine model (a plugin loaded only for the vCPU switch has no
    model figures; its interleaving columns belong to the contention plot set)."""
    points = [p for p in first_lines(ok_records(ctx.records)) if p.get("plugin.enabled") is True]
    columns = [c for c in numeric_columns(points, "stats.")
               if not c.startswith("stats.interleave.")]
    if not columns:
        return []
    shown = key_columns(columns) or columns
    groups: dict[str, list[str]] = {}
    for column in shown:
        groups.setdefault(stats_group(column), []).append(column)
    lay = layout(points, ctx.swept)
    figures = []
    for name, members in groups.items():
        for start in range(0, len(members), PANELS_PER_FIGURE):
            chunk = members[start:start + PANELS_PER_FIGURE]
            part = f" ({start // PANELS_PER_FIGURE + 1})" if len(members) > PANELS_PER_FIGURE \
                else ""
            figures.append(metric_figure(
                points, lay, chunk, ctx.out_dir, f"{ctx.workload}-stats-{name}-{start}",
                f"{ctx.workload}: plugin {name}{part} against {lay.x}",
                f"Machine-model statistics ({', '.join(chunk)}), mean ± std over repeats."))
    return [Section(f"{ctx.workload}: machine-model statistics",
                    [f"{len(shown)} of the {len(columns)} plugin summary columns, in "
                     f"{len(groups)} groups; all of them are in ../results.csv."],
                    figures)]
