"""forkbench (digest section 5): fork-storm rates against cores per kernel setting, and the
speed-up over the baseline setting beside the LDU thesis's published speed-ups."""

from __future__ import annotations

from pathlib import Path

from manylab.report import plots
from manylab.report.axes import Layout, series_label
from manylab.report.kinds import PlotSet, register
from manylab.report.kinds.common import (
    baseline,
    finish_setting_axes,
    guest_time_caveat,
    no_points,
    series_keys,
    setting_axes,
    setting_gains,
    writers_figure,
)
from manylab.report.model import Context, Section, Table
from manylab.report.published import LDU_SPEEDUP, Published
from manylab.report.records import Record
from manylab.report.stats import aggregate, sort_key

RATE, PER_WORKER = "result.ops_per_s", "result.ops_per_s_per_worker"
MODE = "result.params.mode"
PUBLISHED_CORES = 120
# the thesis's figure per forkbench mode: aim7 is AIM7-multiuser, fork the lmbench-like loop
PUBLISHED_BY_MODE = {"aim7": "aim7_speedup", "fork": "lmbench_fork_speedup"}


def published_for(mode: str) -> Published | None:
    metric = PUBLISHED_BY_MODE.get(mode)
    return next((p for p in LDU_SPEEDUP if p.metric == metric), None)


def speedup_figure(rows: list[Record], lay: Layout, base: tuple[str, str], modes: list[str],
                   out_dir: Path) -> plots.Figure:
    fig, ax = setting_axes(rows, lay, base, "speedup")
    for mode in modes:
        item = published_for(mode)
        if item:
            ax.plot([PUBLISHED_CORES], [item.value], marker="D", linestyle="none",
                    label=f"{item.label}: {item.value:g}x ({mode})")
    finish_setting_axes(ax, rows, lay, 1.0, [float(PUBLISHED_CORES)],
                        f"speed-up over {base[1]} (ops/s ratio)")
    return plots.save(fig, out_dir, "forkbench-speedup",
                      f"Fork-storm speed-up over {base[0]}={base[1]} vs {lay.x}",
                      "Operations per second of each setting divided by the baseline's at the "
                      "same x, mode and repeat; mean ± std over repeats. Diamonds: the "
                      "thesis's speed-ups at 120 cores (8 x Xeon E7-8870).")


def sections(ctx: Context) -> list[Section]:
    first = writers_figure(ctx, (RATE, PER_WORKER), "forkbench-rate", "Fork-storm rate",
                           "Operations (AIM7-like task mixes or fork+exit loops) per second of "
                           "guest time, total and per worker; mean ± std over repeats.")
    if first is None:
        return no_points("forkbench")
    good, lay, figures = first.good, first.lay, [first.figure]
    paragraphs: list[str] = guest_time_caveat(good)
    tables: list[Table] = []
    base = baseline(ctx, good)
    if base is None:
        paragraphs.append("No baseline kernel setting ([report] baseline): rates only.")
        return [Section("forkbench: fork-storm rates", paragraphs, figures, tables)]
    rows = [{**r, "speedup": 1.0 + r["gain_pct"] / 100.0}
            for r in setting_gains(good, lay, RATE, base)]
    if not rows:
        paragraphs.append(f"No setting shares an x value with {base[0]}={base[1]}.")
        return [Section("forkbench: fork-storm rates", paragraphs, figures, tables)]
    modes = sorted({str(r.get(MODE)) for r in good})
    figures.append(speedup_figure(rows, lay, base, modes, ctx.out_dir))
    keys = series_keys(lay.series, base)
    top = max((r[lay.x] for r in rows), key=sort_key)
    at_top = aggregate([r for r in rows if r[lay.x] == top], keys, "speedup")
    for combo, summary in at_top.items():
        mode = str(dict(zip(keys, combo, strict=True)).get("workload.args.mode",
                                                           modes[0] if len(modes) == 1 else ""))
        item = published_for(mode)
        published = f"; published at 120 cores: {item.value:g}x" if item else ""
        paragraphs.append(f"At {lay.x}={top}, {series_label(keys, combo)}: speed-up "
                          f"{summary.mean:.3f}x (std {summary.std:.3f}, n={summary.n})"
                          f"{published}.")
    summary_all = aggregate(rows, [*keys, lay.x], "speedup")
    tables.append(Table(f"Speed-up over {base[0]}={base[1]}",
                        [*keys, lay.x, "mean", "std", "95% CI", "n"],
                        [[*map(str, k), f"{s.mean:.3f}", f"{s.std:.3f}", f"±{s.ci95:.3f}",
                          str(s.n)] for k, s in sorted(summary_all.items(), key=str)]))
    return [Section("forkbench: fork-storm rates", paragraphs, figures, tables)]


def columns(records: list[Record], swept: list[str]) -> list[str]:
    return swept + ["repeat", MODE, "result.params.workers", "result.ops", RATE, PER_WORKER,
                    "result.failed", "result.ok"]


FORKBENCH = register(PlotSet("forkbench", sections, columns))
