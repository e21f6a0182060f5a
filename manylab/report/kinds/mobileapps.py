"""mobileapps under the hybrid-pcm kernel's placement policies (digest section 4,
docs/pcm-policy.md "Full system"): per scenario and memory size, each policy's PCM writes,
DRAM and PCM energy, modelled time and hit ratios over the request phase (the ROI), as ratios to
the LRU-like baseline policy (`tiered` unless [report] baseline names another), beside the
paper's published cuts, with verdicts on the 95% interval over repeats."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from manylab.hybrid_pcm import policy_in
from manylab.memory_layout import STORAGE
from manylab.report import plots
from manylab.report.kinds import PlotSet, register
from manylab.report.kinds.common import MODELLED_TIME_NOTE, no_points
from manylab.report.model import Context, Section, Table
from manylab.report.published import (
    MOBILE_PCM_DRAM_READ_NS,
    MOBILE_PCM_ENERGY_CUT,
    MOBILE_PCM_FG_TIME_CUT,
    MOBILE_PCM_HIT_RATIO_CLAIM,
    MOBILE_PCM_PAPER,
    MOBILE_PCM_STORAGE_UNITS,
    Published,
)
from manylab.report.records import Record, is_number, ok_records
from manylab.report.stats import Summary, group, summarize
from manylab.report.verdicts import (
    NOT_REPRODUCED,
    NOT_RESOLVED,
    ONE_RUN,
    REPRODUCED,
    gain_verdict,
    interval,
)
from manylab.units import parse_size

TITLE = "mobileapps: placement policies against the LRU-like baseline"
POLICY = "policy"
SCENARIO = "scenario"
MEMORY = "memory"
DEFAULT_BASELINE = "tiered"
PAPER_POLICY = "importance"
PAGE = 4096
HIT_TOLERANCE = 0.5  # percentage points: "never below" allows this much below the baseline

PCM_WRITES = "stats.roi.mem.pcm.writes"
DRAM_ENERGY = "stats.roi.mem.dram.energy_nj"
PCM_ENERGY = "stats.roi.mem.pcm.energy_nj"
ENERGY = "stats.roi.mem.energy_nj"
TIME = "stats.roi.time.modelled_ns"
# Span k of mobileapps is the requests of class k (0 foreground): their vCPUs' modelled time.
FG_TIME = "stats.roi.time.span0.modelled_ns"
FG_SPANS_LOST = "stats.roi.time.span0.lost"
FLASH_READ_NS = MOBILE_PCM_STORAGE_UNITS * MOBILE_PCM_DRAM_READ_NS
PCM_WEAR = "stats.roi.mem.pcm.max_line_writes"
HIT_RATIO = "result.hit_ratio"
FG_REQUESTS = "result.by_class.foreground.requests"
FG_HITS = "result.by_class.foreground.hits"
FG_SHARE = "result.fg_share"
STORAGE_READS = "stats.roi.mem.storage.reads"
STORAGE_WRITES = "stats.roi.mem.storage.writes"
PGPGIN = "kstat.roi.vmstat.pgpgin"  # KiB read from storage
DEMOTED = ("kstat.roi.vmstat.pgdemote_kswapd", "kstat.roi.vmstat.pgdemote_direct")
MIGRATED = "kstat.roi.vmstat.pgmigrate_success"


@dataclass(frozen=True)
class Metric:
    name: str          # the derived record's key
    label: str         # the table's heading
    value: Callable[[Record], float | None]
    ratio: bool = True  # compared with the baseline as a ratio (else a difference in points)


def number(value: object) -> float | None:
    """A record's value as a float; None when it is not a finite number."""
    return float(str(value)) if is_number(value) else None


def _column(key: str, scale: float = 1.0) -> Callable[[Record], float | None]:
    def read(record: Record) -> float | None:
        value = number(record.get(key))
        return None if value is None else value / scale
    return read


def _fg_hit_ratio(record: Record) -> float | None:
    hits, requests = number(record.get(FG_HITS)), number(record.get(FG_REQUESTS))
    if hits is not None and requests:
        return hits / requests
    return None


def _fg_time_with_flash(record: Record) -> float | None:
    """Foreground request time (ms) plus a flash page read per foreground miss."""
    time_ns, hits = number(record.get(FG_TIME)), number(record.get(FG_HITS))
    requests = number(record.get(FG_REQUESTS))
    if time_ns is None or hits is None or requests is None:
        return None
    return (time_ns + (requests - hits) * FLASH_READ_NS) / 1e6


def _pages_in(record: Record) -> float | None:
    """pgpgin's pages; none on a storage node, whose pmem driver reads through rw_page, past
    the block layer's counter (its line reads stand instead)."""
    kib = number(record.get(PGPGIN))
    if kib is None or number(record.get(STORAGE_READS)):
        return None
    return kib * 1024 / PAGE


def _demoted(record: Record) -> float | None:
    values = [number(record.get(key)) for key in DEMOTED]
    found = [v for v in values if v is not None]
    return sum(found) if found else None


METRICS = (
    Metric("pcm_writes", "PCM writes (lines)", _column(PCM_WRITES)),
    Metric("dram_energy_uj", "DRAM energy (µJ)", _column(DRAM_ENERGY, 1e3)),
    Metric("pcm_energy_uj", "PCM energy (µJ)", _column(PCM_ENERGY, 1e3)),
    Metric("energy_uj", "memory energy (µJ)", _column(ENERGY, 1e3)),
    Metric("fg_time_ms", "foreground request time (ms)", _column(FG_TIME, 1e6)),
    Metric("fg_time_flash_ms", "the same + flash read per fg miss (ms)", _fg_time_with_flash),
    Metric("time_ms", "modelled ROI time, all apps (ms)", _column(TIME, 1e6)),
    Metric("pcm_wear", "max writes to one PCM line", _column(PCM_WEAR)),
    Metric("hit_ratio", "hit ratio", _column(HIT_RATIO), ratio=False),
    Metric("fg_hit_ratio", "foreground hit ratio", _fg_hit_ratio, ratio=False),
)
# Kernel counters beside them (no comparison): what the model does not see or what explains it.
COUNTERS = (
    Metric("pages_in", "pages read from storage", _pages_in),
    Metric("storage_reads", "storage line reads (fills)", _column(STORAGE_READS)),
    Metric("storage_writes", "storage line writes (writeback)", _column(STORAGE_WRITES)),
    Metric("demoted", "pages demoted", _demoted),
    Metric("migrated", "pages migrated (demotion + promotion)", _column(MIGRATED)),
    Metric("fg_lost", "foreground requests not timed (migrated)", _column(FG_SPANS_LOST)),
)


def policy_of(record: Record) -> str:
    """The hybrid_pcm.policy of the record's kernel command line ("off" when not given)."""
    return policy_in(str(record.get("kernel.cmdline") or "")) or "off"


def memory_of(record: Record) -> str:
    """The memory against the apps' files: "files 99 MiB / 140M (DRAM 44M)" (the files' size
    from the result's apps and pages per app)."""
    total = str(record.get("machine.memory", ""))
    numa = record.get("machine.numa")
    nodes = json.loads(numa) if isinstance(numa, str) and numa.startswith("[") else numa
    machine = total
    if isinstance(nodes, list) and nodes and isinstance(nodes[0], dict):
        memory = [n for n in nodes if n.get("device") != STORAGE]
        if len(memory) < len(nodes):  # a storage node is the disk, not memory
            total = f"{sum(parse_size(n['size']) for n in memory) >> 20}M"
        machine = f"{total} (DRAM {nodes[0].get('size', '?')})"
    apps, pages = number(record.get("result.apps")), number(record.get("result.pages"))
    if apps is not None and pages is not None:
        return f"files {round(apps * pages * PAGE / 2**20)} MiB / {machine}"
    return machine


def _memory_order(label: str) -> tuple[float, ...]:
    """Labels in the order of the numbers they hold (files, then memory)."""
    return tuple(float(n) for n in re.findall(r"\d+(?:\.\d+)?", label))


def derived(records: list[Record]) -> list[Record]:
    """One row per successful point: policy, scenario, memory, repeat and the metrics."""
    rows = []
    for record in ok_records(records):
        row: Record = {POLICY: policy_of(record),
                       SCENARIO: str(record.get("result.scenario",
                                                record.get("workload.args.scenario", ""))),
                       MEMORY: memory_of(record), "repeat": record.get("repeat", 0),
                       "fg_share": record.get(FG_SHARE)}
        for metric in (*METRICS, *COUNTERS):
            row[metric.name] = metric.value(record)
        rows.append(row)
    return rows


def baseline_policy(ctx: Context) -> str:
    return policy_in(str(ctx.settings.get("baseline", ""))) or DEFAULT_BASELINE


def paired(rows: list[Record], base: str) -> list[Record]:
    """Each non-baseline row against the baseline's row of the same scenario, memory and
    repeat: `<metric>.vs` = ratio (or difference in percentage points for hit ratios)."""
    reference = {(r[SCENARIO], r[MEMORY], r["repeat"]): r for r in rows if r[POLICY] == base}
    out = []
    for row in rows:
        other = reference.get((row[SCENARIO], row[MEMORY], row["repeat"]))
        if row[POLICY] == base or other is None:
            continue
        pair: Record = {k: row[k] for k in (POLICY, SCENARIO, MEMORY, "repeat")}
        for metric in METRICS:
            mine, theirs = row[metric.name], other[metric.name]
            if mine is None or theirs is None:
                continue
            if not metric.ratio:
                pair[f"{metric.name}.vs"] = 100.0 * (mine - theirs)
            elif theirs > 0:
                pair[f"{metric.name}.vs"] = mine / theirs
        out.append(pair)
    return out


def _summary(rows: list[Record], key: str) -> Summary:
    return summarize(r[key] for r in rows if is_number(r.get(key)))


def _mean_text(s: Summary, digits: int = 4) -> str:
    if s.n == 0:
        return ""
    spread = f" ± {s.ci95:.2g}" if s.n > 1 and not math.isnan(s.ci95) else ""
    return f"{s.mean:.{digits}g}{spread}"


def _cut(rows: list[Record], key: str) -> Summary:
    """The cut against the baseline in percent (100 x (1 - ratio)) of each pair."""
    return summarize(100.0 * (1.0 - r[key]) for r in rows if is_number(r.get(key)))


def not_below_verdict(s: Summary, tolerance: float = HIT_TOLERANCE) -> str:
    """The claim "never below the baseline", on differences in percentage points."""
    found = interval(s)
    if found is None:
        return ONE_RUN
    lo, hi = found
    if hi < -tolerance:
        return f"{NOT_REPRODUCED} (below the baseline)"
    if lo >= -tolerance:
        return REPRODUCED
    return f"{NOT_RESOLVED} (the interval reaches below the baseline)"


def _cut_row(where: list[str], claim: str, s: Summary, published: Published | None) -> list[str]:
    measured = f"{s.mean:+.1f}% ± {s.ci95:.1f} (n={s.n})" if s.n > 1 else (
        f"{s.mean:+.1f}% (n=1)" if s.n else "")
    if published is None:
        return [*where, claim, measured, "no published figure", ""]
    verdict = gain_verdict(s, published.low, published.high) if s.n else ""
    return [*where, claim, measured, published.text(), verdict]


def verdict_rows(pairs: list[Record], scenario: str, memory: str) -> list[list[str]]:
    where = [scenario, memory, PAPER_POLICY]
    mine = [p for p in pairs if p[POLICY] == PAPER_POLICY]
    if not mine:
        return []
    hits = _summary(mine, "hit_ratio.vs")
    hit_text = f"{hits.mean:+.2f} points ± {hits.ci95:.2f} (n={hits.n})" if hits.n else ""
    return [
        _cut_row(where, "memory energy cut", _cut(mine, "energy_uj.vs"),
                 MOBILE_PCM_ENERGY_CUT.get(scenario)),
        _cut_row(where, "foreground time cut (requests' modelled time)",
                 _cut(mine, "fg_time_ms.vs"), MOBILE_PCM_FG_TIME_CUT.get(scenario)),
        _cut_row(where, f"foreground time cut, + {FLASH_READ_NS / 1e3:g} µs per miss",
                 _cut(mine, "fg_time_flash_ms.vs"), MOBILE_PCM_FG_TIME_CUT.get(scenario)),
        _cut_row(where, "modelled ROI time cut, all apps", _cut(mine, "time_ms.vs"), None),
        _cut_row(where, "PCM write cut", _cut(mine, "pcm_writes.vs"), None),
        [*where, "hit ratio against the baseline", hit_text,
         f"{MOBILE_PCM_HIT_RATIO_CLAIM} ({MOBILE_PCM_PAPER})",
         not_below_verdict(hits) if hits.n else ""],
    ]


def policy_table(rows: list[Record], pairs: list[Record], base: str) -> Table:
    columns = [SCENARIO, MEMORY, POLICY, "n", "fg share"]
    for metric in METRICS:
        columns.append(metric.label)
        columns.append(f"{'x' if metric.ratio else 'points vs'} {base}")
    columns += [metric.label for metric in COUNTERS]
    table_rows = []
    keys = [SCENARIO, MEMORY, POLICY]
    for (scenario, memory, policy), members in sorted(
            group(rows, keys).items(),
            key=lambda item: (str(item[0][0]), _memory_order(str(item[0][1])),
                              str(item[0][2]) != base, str(item[0][2]))):
        vs = [p for p in pairs if (p[SCENARIO], p[MEMORY], p[POLICY]) == (scenario, memory,
                                                                             policy)]
        line = [str(scenario), str(memory), str(policy), str(len(members)),
                _mean_text(_summary(members, "fg_share"), 3)]
        for metric in METRICS:
            line.append(_mean_text(_summary(members, metric.name)))
            line.append("" if policy == base else _mean_text(_summary(vs, f"{metric.name}.vs"),
                                                             3))
        line += [_mean_text(_summary(members, metric.name)) for metric in COUNTERS]
        table_rows.append(line)
    return Table(f"Per scenario, memory size and policy over the ROI (mean ± 95% CI over "
                 f"repeats; ratios and differences paired by repeat with {base})",
                 columns, table_rows)


def ratio_figure(pairs: list[Record], base: str, out_dir: Path) -> plots.Figure:
    panels = [("energy_uj.vs", f"memory energy / {base}"),
              ("pcm_writes.vs", f"PCM writes / {base}"),
              ("fg_time_ms.vs", f"foreground time / {base}")]
    fig, axes = plots.subplots(len(panels))
    memories = sorted({str(p[MEMORY]) for p in pairs}, key=_memory_order)
    where = {m: float(i) for i, m in enumerate(memories)}
    for ax, (key, ylabel) in zip(axes, panels, strict=True):
        for (scenario, policy), members in group(pairs, [SCENARIO, POLICY]).items():
            by_memory = {m: _summary([p for p in members if p[MEMORY] == m], key)
                         for m in memories}
            xs = [m for m in memories if by_memory[m].n]
            if xs:
                plots.errorbar_line(ax, [where[m] for m in xs], [by_memory[m] for m in xs],
                                    f"{policy}, {scenario}")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(list(where.values()), memories, rotation=20, fontsize=7)
        plots.finish(ax, "apps' files / memory", ylabel)
    return plots.save(fig, out_dir, "mobileapps-vs-baseline",
                      f"Policies against {base}: energy, PCM writes, foreground time",
                      f"Each policy's ROI figure divided by {base}'s at the same scenario, "
                      "memory size and repeat; mean ± std over repeats. Below 1: less than "
                      "the baseline.")


NOTES = [
    "What is measured: the request phase of mobileapps (ROI region 0, phase 1) under the "
    "machine model: PCM and DRAM line reads and writes and their energy (Table 1 energies, "
    "no refresh) as the plugin counts them, the modelled time, and the workload's own hit "
    "counts (mincore() before each request).",
    "Foreground time: each request's pread or pwrite is a span of its class (plugin README "
    "\"Spans\"); the foreground request time is the sum over the foreground app's requests of "
    "the modelled time their vCPU took, fills from storage, reclaim in the request and waits "
    "for other vCPUs included. A request whose task migrated in it is not timed (counted in "
    "the table). The paper's foreground time charges storage 1000 DRAM accesses a page; the "
    f"second reading adds {FLASH_READ_NS / 1e3:g} µs (1000 x Table 1's 50 ns DRAM read) per "
    "foreground miss to bracket the flash latency the model leaves out. The modelled ROI time "
    "of all apps is shown too. The foreground share of the requests is in the table.",
    MODELLED_TIME_NOTE,
]
MISSES_ON_VIRTIO = (
    "Misses: the files live on ext2 on a virtio disk, whose DMA the model does not see. A "
    "miss costs what the guest itself executes and touches (allocating and placing the folio, "
    "the block layer, the interrupt, the copy to the app), not a storage latency: the paper's "
    "1000-unit eviction charge has no counterpart here. Nor does the fill: the disk writes the "
    "missed page into its folio by DMA, so a page filled on PCM costs no PCM write in the "
    "model (the paper charges one), while a page the kernel demotes or promotes is copied by "
    "the CPU and every line of it is counted. The table gives the pages read from storage "
    "and the pages demoted and migrated over the ROI (kernel counters) so that the PCM "
    "writes can be read against them.")
MISSES_ON_STORAGE = (
    "Misses: the files live on ext2 on the machine's storage node, guest RAM that the pmem "
    "driver serves as a block device, so every fill is a CPU copy from storage into the "
    "folio and every writeback a copy back: the model counts the fill's line writes on the "
    "device the folio sits on, as it counts the lines of a page the kernel demotes or "
    "promotes. Storage's own reads and writes are in the table and out of the memory "
    "energy (the kernel's pgpgin misses these reads: the pmem driver serves them through "
    "rw_page, past the block layer); a storage line costs DRAM's latency (storage.* keys), "
    "so a miss carries no flash latency and the paper's 1000-unit eviction charge has no "
    "counterpart here.")


def sections(ctx: Context) -> list[Section]:
    rows = derived(ctx.records)
    if not rows:
        return no_points(TITLE)
    base = baseline_policy(ctx)
    pairs = paired(rows, base)
    paragraphs = [f"Baseline: hybrid_pcm.policy={base} (Linux's DRAM-first tiering, the "
                  "LRU-like policy). The paper's policy is "
                  f"{PAPER_POLICY}; the paper's figures are means over its memory sizes."]
    paragraphs += NOTES
    on_storage = any(number(r.get(STORAGE_READS)) for r in ctx.records)
    paragraphs.append(MISSES_ON_STORAGE if on_storage else MISSES_ON_VIRTIO)
    tables = [policy_table(rows, pairs, base)]
    figures = []
    if not pairs:
        paragraphs.append(f"No point of {base} to compare with: ratios and verdicts left out.")
    else:
        figures.append(ratio_figure(pairs, base, ctx.out_dir))
        verdicts: list[list[str]] = []
        scenarios = sorted({str(p[SCENARIO]) for p in pairs})
        for scenario in scenarios:
            here = [p for p in pairs if p[SCENARIO] == scenario]
            memories = sorted({str(p[MEMORY]) for p in here}, key=_memory_order)
            for memory in memories:
                verdicts += verdict_rows([p for p in here if p[MEMORY] == memory], scenario,
                                         memory)
            if len(memories) > 1:
                verdicts += verdict_rows(here, scenario, "all sizes")
        if verdicts:
            tables.append(Table(f"Verdicts: {PAPER_POLICY} against {base} beside the paper "
                                f"({MOBILE_PCM_PAPER})",
                                [SCENARIO, MEMORY, POLICY, "claim", "measured",
                                 "published", "verdict"], verdicts))
        else:
            paragraphs.append(f"No point of {PAPER_POLICY}: no verdict.")
    return [Section(TITLE, paragraphs, figures, tables)]


def columns(records: list[Record], swept: list[str]) -> list[str]:
    return swept + ["repeat", "result.scenario", "result.requests", "result.writes",
                    FG_SHARE, HIT_RATIO, FG_HITS, FG_REQUESTS, PCM_WRITES, DRAM_ENERGY,
                    PCM_ENERGY, ENERGY, FG_TIME, FG_SPANS_LOST, TIME, PCM_WEAR, PGPGIN,
                    STORAGE_READS, STORAGE_WRITES, *DEMOTED, MIGRATED,
                    "result.ok"]


MOBILEAPPS = register(PlotSet("mobileapps", sections, columns))
