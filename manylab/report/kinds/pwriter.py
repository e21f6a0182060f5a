"""pwriter (digest sections 1-2): aggregate throughput vs writers per kernel variant/factor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from manylab.report import plots
from manylab.report.axes import Layout, series_label
from manylab.report.kinds import PlotSet, register
from manylab.report.kinds.common import (
    MODELLED_TIME_NOTE,
    baseline,
    finish_setting_axes,
    guest_time_caveat,
    metric_figure,
    modelled_rate,
    no_points,
    series_keys,
    setting_axes,
    setting_gains,
    writers_figure,
)
from manylab.report.model import Context, Section, Table
from manylab.report.published import (
    FINERLRU_CHIP_DIRECTION,
    FINERLRU_CHIPS_PAPER,
    FINERLRU_GAIN,
    FINERLRU_GAIN_THREADS,
)
from manylab.report.records import Record
from manylab.report.stats import GroupKey, Summary, aggregate, group, sort_key, sorted_values
from manylab.report.verdicts import gain_verdict, no_change_verdict, peak_then_fall

WRITE, READ = "result.write.aggregate_mib_s", "result.read.aggregate_mib_s"
# Per phase: the bytes it moved, its ROI phase's modelled time, the derived rate's column.
MODELLED = (("result.write.bytes", "stats.roi.phase1.time.modelled_ns", "modelled.write.mib_s"),
            ("result.read.bytes", "stats.roi.phase2.time.modelled_ns", "modelled.read.mib_s"))


# A chip's "gain" reproduces from this modelled write gain up, "none" within +-NONE_PCT
# (each judged on the 95% interval over repeats, manylab.report.verdicts).
GAIN_PCT, NONE_PCT = 10.0, 5.0
KNL_PRESET = "knl-64"


def with_modelled_rates(good: list[Record]) -> tuple[list[Record], list[str]]:
    """The records with each phase's rate in modelled time (bytes / its ROI phase's
    time.modelled_ns), and the rate columns found."""
    rated = good
    columns: list[str] = []
    for amount, time_ns, out in MODELLED:
        with_rate = modelled_rate(rated, amount, time_ns, out, 1 << 20)
        if with_rate:
            rated, columns = with_rate, [*columns, out]
    return rated, columns


def modelled_figure(rated: list[Record], columns: list[str], lay: Layout,
                    out_dir: Path) -> plots.Figure | None:
    """Throughput in modelled time: a phase's bytes / its ROI phase's time.modelled_ns."""
    if not columns:
        return None
    return metric_figure(rated, lay, columns, out_dir, "pwriter-throughput-modelled",
                         f"Aggregate throughput in modelled time vs {lay.x}",
                         "MiB per modelled second: the phase's bytes (result.<phase>.bytes) / "
                         "its ROI phase's stats.roi.phase<k>.time.modelled_ns (write = phase "
                         "1, read = phase 2). " + MODELLED_TIME_NOTE, log2_x=True)


def chip_verdicts(summary: dict[GroupKey, Summary], keys: list[str], x: str) -> list[str]:
    """Per preset with a published direction: the modelled write gain at its largest writer
    count (`summary`: gains by `keys` + x) against the paper's per-chip finding."""
    if "plugin.preset" not in keys:
        return []
    preset_at = keys.index("plugin.preset")
    top: dict[GroupKey, Any] = {}
    for combo in summary:
        setting, at = combo[:-1], combo[-1]
        if setting not in top or sort_key(at) > sort_key(top[setting]):
            top[setting] = at
    lines = []
    for combo, gain in sorted(summary.items(), key=str):
        setting = combo[:-1]
        preset = str(setting[preset_at])
        if (combo[-1] != top[setting] or preset not in FINERLRU_CHIP_DIRECTION
                or _is_stock(keys, setting)):
            continue
        expected, finding = FINERLRU_CHIP_DIRECTION[preset]
        outcome = (gain_verdict(gain, GAIN_PCT) if expected == "gain"
                   else no_change_verdict(gain, NONE_PCT))
        lines.append(f"{series_label(keys, setting)}, {x}={combo[-1]}: write gain in modelled "
                     f"time {_with_interval(gain)}; the paper: {finding}: {outcome}.")
    if lines:
        lines.insert(0, f"Against {FINERLRU_CHIPS_PAPER}, per chip (a gain reproduces from "
                        f"+{GAIN_PCT:g}%, no change within ±{NONE_PCT:g}%, each on the 95% "
                        "interval over repeats):")
    return lines


def _is_stock(keys: list[str], setting: GroupKey) -> bool:
    """Stock Linux beside the series: compared with factor 1, never judged as a FinerLRU gain."""
    return dict(zip(keys, setting, strict=True)).get("kernel.variant") == "stock"


def _with_interval(s: Summary) -> str:
    spread = f" ± {s.ci95:.1f} (95% CI)" if s.n > 1 else ""
    return f"{s.mean:+.1f}%{spread}, n={s.n}"


def knl_verdicts(summary: dict[GroupKey, Summary], keys: list[str], x: str,
                 rated: list[Record]) -> list[str]:
    """The KNL claim (+70-140% sequential write throughput at 64-256 threads with FF=256)
    against the modelled write gains at those writer counts, when every point (`rated`) ran
    on the knl-64 model."""
    if not rated or any(r.get("plugin.preset") != KNL_PRESET for r in rated):
        return []
    knl = FINERLRU_GAIN[0]
    lines = [f"{series_label(keys, combo[:-1])}, {x}={combo[-1]}: {_with_interval(gain)}: "
             f"{gain_verdict(gain, knl.low, knl.high)}."
             for combo, gain in sorted(summary.items(), key=lambda kv: [sort_key(v) for v in kv[0]])
             if combo[-1] in FINERLRU_GAIN_THREADS and not _is_stock(keys, combo[:-1])]
    if lines:
        lines.insert(0, f"Against {knl.text()} (write gain in modelled time, 95% interval over "
                        "repeats):")
    return lines


def baseline_peak(rated: list[Record], lay: Layout, base: tuple[str, str],
                  column: str) -> list[str]:
    """The KNL claim that stock's throughput rises to 32-64 threads, then falls sharply,
    against the baseline setting's modelled write throughput."""
    key, value = base
    reference = [r for r in rated if str(r.get(key)) == value]
    others = [k for k in lay.series if k != key]
    lines = []
    for combo, members in group(reference, others).items():
        by_x = {x: summary for (x,), summary in aggregate(members, [lay.x], column).items()}
        peak = peak_then_fall(by_x)
        if peak is None:
            continue
        where = f"{series_label(others, combo)}: " if others else ""
        lines.append(f"{where}{key}={value} peaks at {lay.x}={peak.at}; at {lay.x}="
                     f"{peak.top_at} it is {peak.drop_pct:.1f}% below the peak: "
                     f"{peak.verdict}.")
    if lines:
        lines.insert(0, f"Against {FINERLRU_GAIN[0].paper}: the baseline's write throughput "
                        "rises to 32-64 threads, then falls sharply (modelled time, 95% "
                        "intervals over repeats):")
    return lines


def gain_figure(gain_rows: list[Record], lay: Layout, out_dir: Path, label: str,
                base: tuple[str, str]) -> plots.Figure:
    fig, ax = setting_axes(gain_rows, lay, base, "gain_pct")
    knl = FINERLRU_GAIN[0]
    ax.errorbar(list(FINERLRU_GAIN_THREADS), [knl.value] * 3,
                yerr=[(knl.high - knl.low) / 2] * 3, fmt="D", color="#9467bd", capsize=4,
                label=f"{knl.label}: +{knl.low:g}-{knl.high:g}%")
    plots.published_lines(ax, FINERLRU_GAIN[1:])
    finish_setting_axes(ax, gain_rows, lay, 0, FINERLRU_GAIN_THREADS,
                        f"gain over {base[1]} (% {label})")
    return plots.save(fig, out_dir, f"pwriter-gain-{label}",
                      f"{label} throughput gain over {base[0]}={base[1]} vs writers",
                      "100 x (setting / baseline - 1) of aggregate throughput, paired by "
                      "repeat, "
                      "mean ± std over repeats; grey: the paper's KNL range at 64-256 threads.")


def sections(ctx: Context) -> list[Section]:
    first = writers_figure(ctx, (WRITE, READ), "pwriter-throughput", "Aggregate throughput",
                           "All bytes / (last finish - first start), guest time; mean ± "
                           "sample std over repeats; one line per kernel variant and "
                           "swept factor.")
    if first is None:
        return no_points("pwriter")
    good, lay, figures = first.good, first.lay, [first.figure]
    rated, rate_columns = with_modelled_rates(good)
    modelled = modelled_figure(rated, rate_columns, lay, ctx.out_dir)
    if modelled is not None:
        figures.append(modelled)
    paragraphs = guest_time_caveat(good)
    tables = []
    base = baseline(ctx, good)
    if base is not None:
        compared = [(good, WRITE, "write"), (good, READ, "read")]
        compared += [(rated, column, f"{column.split('.')[1]}-modelled")
                     for column in rate_columns]
        for records, column, label in compared:
            rows = setting_gains(records, lay, column, base)
            if not rows:
                continue
            figures.append(gain_figure(rows, lay, ctx.out_dir, label, base))
            top = max(r[lay.x] for r in rows)
            keys = series_keys(lay.series, base)
            at_top = aggregate([r for r in rows if r[lay.x] == top], keys, "gain_pct")
            paragraphs.append(
                f"{label}: gain over {base[0]}={base[1]} at {lay.x}={top}: " + "; ".join(
                    f"{series_label(keys, v)} {s.mean:+.1f}% (std {s.std:.1f}, n={s.n})"
                    for v, s in at_top.items())
                + f". Published: {FINERLRU_GAIN[0].text()}; {FINERLRU_GAIN[1].text()}.")
            summary = aggregate(rows, [*keys, lay.x], "gain_pct")
            if label == "write-modelled":
                paragraphs.extend(chip_verdicts(summary, keys, lay.x))
                paragraphs.extend(knl_verdicts(summary, keys, lay.x, rated))
                paragraphs.extend(baseline_peak(rated, lay, base, column))
            tables.append(Table(f"{label} gain over {base[0]}={base[1]} (%)",
                                [*keys, lay.x, "mean %", "std", "95% CI", "n"],
                                [[*map(str, k), f"{s.mean:+.1f}", f"{s.std:.1f}",
                                  f"±{s.ci95:.1f}", str(s.n)]
                                 for k, s in sorted(summary.items(), key=str)]))
    else:
        variants = ", ".join(map(str, sorted_values(good, "kernel.variant")))
        paragraphs.append(f"Kernel variant(s) {variants} and no [report] baseline: no gain "
                          "to compare with the FinerLRU figures.")
    return [Section("pwriter: parallel buffered writers", paragraphs, figures, tables)]


def columns(records: list[Record], swept: list[str]) -> list[str]:
    return swept + ["repeat", "result.procs", "result.size", WRITE, READ, "result.verified",
                    *[time_ns for _, time_ns, _ in MODELLED]]


PWRITER = register(PlotSet("pwriter", sections, columns))
