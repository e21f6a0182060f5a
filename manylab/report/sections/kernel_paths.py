"""Kernel lock paths (digest sections 1, 2 and 5): what each kernel setting does to the work and
the coherence traffic of the functions the study lists in plugin.functions.

Drawn for every workload whose points carry `fn.*` columns. The spec's [report] section names
the setting the others are compared with (`baseline`), the patterns whose instructions count as
lock waiting (`lock_wait`), and the paper whose claim is checked (`paper`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from manylab.report import plots
from manylab.report.axes import Layout, series_label, writers_layout, x_positions
from manylab.report.kinds.common import (
    baseline,
    first_lines,
    metric_figure,
    series_keys,
    setting_keys,
)
from manylab.report.model import Context, Section, Table
from manylab.report.published import FINERLRU_LOCK_WAIT, Published
from manylab.report.records import Record, is_number, numeric_columns, ok_records
from manylab.report.stats import aggregate, group, sort_key, sorted_values

LOCK_WAIT = "lock_wait.insts"
LOCK_WAIT_PCT = "lock_wait.pct_of_roi_insts"
LOCK_WAIT_PATH_PCT = "lock_wait.pct_of_path_insts"
LOCK_WAIT_TIME_PCT = "lock_wait.pct_of_path_cycles"
PATH_INSTS = "paths.insts"
PATH_CYCLES = "paths.cycles"
PATH_MSGS = "paths.coh.msgs"
HOT_LINE = "hotline.roi.coh.msgs"
ROI_MSGS = "stats.roi.coh.msgs"
KIND_PREFIX = "stats.roi.coh.msgs."
COMPARED = (LOCK_WAIT, PATH_MSGS, HOT_LINE, ROI_MSGS)
LINESTYLES = ("-", "--", ":", "-.")  # after matplotlib's ten colours, the next style

CLAIMS = {
    "finerlru": ("FinerLRU (digest sections 1-2): a larger factor cuts lock-wait work and "
                 "LRU-lock coherence traffic at high writer counts"),
    "ldu": ("LDU (digest section 5): logged rmap updates cut rmap lock work and its "
            "coherence traffic in fork storms"),
}
PUBLISHED_WAIT: dict[str, tuple[Published, ...]] = {"finerlru": FINERLRU_LOCK_WAIT}


def with_derived(records: list[Record], lock_wait: list[str]) -> list[Record]:
    """Each record plus lock_wait.insts (summed over the lock_wait patterns) and its share, in
    percent, of the ROI's instructions and of the listed lock paths' instructions (paths.insts:
    every function a plugin.functions pattern matches, the lock-wait ones included), the
    latter being the papers' measure (the share of the LRU-add path spent waiting); and, where
    the plugin gave modelled cycles per function (the causal clock's `cycles`: base + stall +
    wait), the lock-wait functions' share of the paths' cycles: the same measure in time."""
    out = []
    for record in records:
        row = dict(record)
        summed = {metric: _summed(record, lock_wait, metric) for metric in ("insts", "cycles")}
        if summed["insts"] is not None:
            row[LOCK_WAIT] = summed["insts"]
        for share, metric, total in ((LOCK_WAIT_PCT, "insts", "stats.roi.insts"),
                                     (LOCK_WAIT_PATH_PCT, "insts", PATH_INSTS),
                                     (LOCK_WAIT_TIME_PCT, "cycles", PATH_CYCLES)):
            part, whole = summed[metric], record.get(total)
            if part is not None and whole is not None and is_number(whole) and float(whole) > 0:
                row[share] = 100.0 * part / float(whole)
        out.append(row)
    return out


def _summed(record: Record, patterns: list[str], metric: str) -> float | None:
    """fn.<pattern>.<metric> summed over the patterns; None without patterns or a value."""
    parts = [record.get(f"fn.{p}.{metric}") for p in patterns]
    if not patterns or not all(is_number(v) for v in parts):
        return None
    return sum(float(v) for v in parts if v is not None)


def ratio_rows(records: list[Record], lay: Layout, base: tuple[str, str],
               metrics: list[str]) -> list[Record]:
    """For every other value of the baseline key, at every x and every other swept setting:
    baseline mean / other mean per metric (above 1 = the other setting does less)."""
    key, value = base
    keys = setting_keys(lay.series, base)
    others = [k for k in lay.series if k not in keys]
    match = [lay.x, *others] if lay.x not in keys else others
    rows: list[Record] = []
    for combo, members in group(records, match).items():
        reference = [r for r in members if str(r.get(key)) == value]
        if not reference:
            continue
        candidates_by = group([r for r in members if str(r.get(key)) != value], keys)
        for setting, candidates in sorted(candidates_by.items(),
                                          key=lambda kv: [sort_key(v) for v in kv[0]]):
            row: Record = {**dict(zip(match, combo, strict=True)),
                           **dict(zip(keys, setting, strict=True))}
            for metric in metrics:
                b = aggregate(reference, [], metric).get(())
                o = aggregate(candidates, [], metric).get(())
                if b is None or o is None:
                    continue
                row[f"{metric}.base"] = b.mean
                row[f"{metric}.other"] = o.mean
                row[f"{metric}.ratio"] = b.mean / o.mean if o.mean > 0 else None
            rows.append(row)
    return rows


def ratio_table(rows: list[Record], match: list[str], metrics: list[str]) -> Table:
    columns = [*match]
    for metric in metrics:
        columns += [f"{metric} base", f"{metric} other", "ratio"]
    body = []
    for row in rows:
        line = [str(row.get(k, "")) for k in match]
        for metric in metrics:
            ratio = row.get(f"{metric}.ratio")
            line += [_num(row.get(f"{metric}.base")), _num(row.get(f"{metric}.other")),
                     f"{ratio:.2f}x" if ratio is not None else ""]
        body.append(line)
    return Table("Baseline / setting, per metric (mean over repeats; above 1: the setting does "
                 "less)", columns, body)


def _num(value: Any) -> str:
    return f"{float(value):,.0f}" if is_number(value) else ""


def ratio_figure(rows: list[Record], lay: Layout, base: tuple[str, str], metrics: list[str],
                 out_dir: Path, workload: str) -> plots.Figure:
    key = base[0]
    series = series_keys(lay.series, base)
    fig, axes = plots.subplots(len(metrics))
    where = x_positions(rows, lay)
    for ax, metric in zip(axes, metrics, strict=True):
        for index, (combo, members) in enumerate(group(rows, series).items()):
            points = sorted((where[r[lay.x]], float(r[f"{metric}.ratio"])) for r in members
                            if r.get(lay.x) in where and r.get(f"{metric}.ratio"))
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                        linestyle=LINESTYLES[index // 10 % len(LINESTYLES)],
                        label=series_label(series, combo))
        if not lay.numeric_x:
            ax.set_xticks(list(where.values()), [str(v) for v in where], rotation=30,
                          fontsize=7)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        if lay.numeric_x:
            plots.log2_ticks(ax, list(where.values()))
        plots.finish(ax, lay.x, "baseline / setting", title=metric)
    return plots.save(fig, out_dir, f"{workload}-paths-ratio",
                      f"{workload}: reduction against {key}={base[1]}",
                      "Mean of the baseline setting divided by the mean of each other setting "
                      "at the same x and other settings (log scale; above 1: the setting does "
                      "less work or sends fewer messages).")


def kinds_figure(records: list[Record], lay: Layout, out_dir: Path,
                 workload: str) -> plots.Figure | None:
    """Coherence messages by type inside the ROI at the largest x, one bar per setting."""
    kinds = [c for c in numeric_columns(records, KIND_PREFIX)
             if any(float(r.get(c) or 0) > 0 for r in records)]
    xs = sorted_values(records, lay.x)
    if not kinds or not xs:
        return None
    if lay.numeric_x:
        at = f" at {lay.x}={xs[-1]}"
        top = [r for r in records if r.get(lay.x) == xs[-1]]
        series = lay.series
    else:
        at, top, series = "", records, [lay.x, *lay.series]
    settings = group(top, series)
    fig, axes = plots.subplots(1, width=9.0, height=4.2)
    ax = axes[0]
    width = 0.8 / max(len(settings), 1)
    for index, (combo, members) in enumerate(settings.items()):
        means = [aggregate(members, [], k).get(()) for k in kinds]
        ax.bar([i + index * width for i in range(len(kinds))],
               [m.mean if m else 0.0 for m in means], width,
               yerr=[m.std if m else 0.0 for m in means], capsize=2,
               label=series_label(series, combo))
    ax.set_xticks([i + width * (len(settings) - 1) / 2 for i in range(len(kinds))],
                  [k.removeprefix(KIND_PREFIX) for k in kinds], rotation=30, fontsize=8)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylabel("messages in the ROI")
    ax.grid(alpha=0.3, axis="y")
    plots.legend(ax)
    return plots.save(fig, out_dir, f"{workload}-coherence-kinds",
                      f"{workload}: coherence messages by type{at}",
                      "Messages of each type in the region of interest, mean ± std over "
                      "repeats (symmetric log scale).")


def verdict(rows: list[Record], lay: Layout, base: tuple[str, str], paper: str) -> list[str]:
    """The paper's claim checked at the largest x, per setting, with the numbers."""
    if not rows:
        return ["No setting shares an x value with the baseline: nothing to compare."]
    claim = CLAIMS.get(paper, "the setting reduces lock-wait work and lock-path coherence "
                              "traffic")
    key = base[0]
    where = f"against {key}={base[1]}"
    if lay.x not in setting_keys(lay.series, base):
        top = max((r[lay.x] for r in rows if r.get(lay.x) is not None), key=sort_key)
        rows = [r for r in rows if r.get(lay.x) == top]
        where = f"at {lay.x}={top} (the largest), {where}"
    lines = [f"Claim checked: {claim}. Compared {where}."]
    labels = series_keys(lay.series, base)
    for row in rows:
        setting = ", ".join(f"{k.split('.')[-1]}={row[k]}" for k in labels if k in row)
        facts = []
        reduced = []
        for metric, label in ((LOCK_WAIT, "lock-wait instructions"),
                              (PATH_MSGS, "lock-path coherence messages")):
            ratio = row.get(f"{metric}.ratio")
            if ratio is None:
                continue
            reduced.append(ratio > 1.0)
            facts.append(f"{label} {_num(row[f'{metric}.base'])} -> "
                         f"{_num(row[f'{metric}.other'])} ({ratio:.2f}x)")
        if not facts:
            continue
        outcome = ("reproduces the paper's direction" if all(reduced)
                   else "does not reproduce the paper's direction" if not any(reduced)
                   else "reproduces it only in part")
        lines.append(f"{setting}: {'; '.join(facts)}: {outcome}.")
    return lines


def sections(ctx: Context) -> list[Section]:
    points = first_lines(ok_records(ctx.records))
    if not numeric_columns(points, "fn."):
        return []
    lock_wait = [str(p) for p in ctx.settings.get("lock_wait", [])]
    paper = str(ctx.settings.get("paper", ""))
    points = with_derived(points, lock_wait)
    lay = writers_layout(points, ctx.swept)
    summary = [c for c in (LOCK_WAIT, LOCK_WAIT_PCT, LOCK_WAIT_PATH_PCT, LOCK_WAIT_TIME_PCT,
                           PATH_MSGS, HOT_LINE)
               if c in numeric_columns(points, "")]
    figures = [metric_figure(points, lay, summary, ctx.out_dir, f"{ctx.workload}-lock-paths",
                             f"{ctx.workload}: lock-wait work and lock-path traffic vs {lay.x}",
                             "Inside the ROI: instructions in the report.lock_wait functions "
                             f"({', '.join(lock_wait) or 'none given'}) and their share of "
                             "all instructions and of the listed paths' instructions; "
                             "coherence messages of every listed function; "
                             "messages on the hottest line. Mean ± std over repeats.",
                             log2_x=lay.numeric_x, log_y=True)]
    published = PUBLISHED_WAIT.get(paper, ())
    if published and LOCK_WAIT_PATH_PCT in summary:
        figures.append(wait_share_figure(points, lay, published, ctx.out_dir, ctx.workload))
    per_function = [c for c in numeric_columns(points, "fn.") if c.endswith(".coh.msgs")
                    and any(float(r.get(c) or 0) > 0 for r in points)]
    figures.append(metric_figure(points, lay, per_function, ctx.out_dir,
                                 f"{ctx.workload}-functions-coh",
                                 f"{ctx.workload}: coherence messages per kernel function",
                                 "Messages caused by accesses of the functions each pattern "
                                 "matches, inside the ROI; mean ± std over repeats.",
                                 log2_x=lay.numeric_x, log_y=True))
    kinds = kinds_figure(points, lay, ctx.out_dir, ctx.workload)
    if kinds:
        figures.append(kinds)
    paragraphs: list[str] = []
    tables = [hot_lines_table(points, lay)]
    base = baseline(ctx, points)
    if base and (base[0] in lay.series or base[0] == lay.x):
        metrics = [m for m in COMPARED if m in numeric_columns(points, "")]
        rows = ratio_rows(points, lay, base, metrics)
        figures.append(ratio_figure(rows, lay, base, metrics, ctx.out_dir, ctx.workload))
        keys = setting_keys(lay.series, base)
        match = ([lay.x] if lay.x not in keys else []) + [k for k in lay.series if k not in keys]
        match += keys
        tables.insert(0, ratio_table(rows, match, metrics))
        paragraphs += verdict(rows, lay, base, paper)
    else:
        paragraphs.append("No baseline kernel setting among the points (set [report] "
                          "baseline in the spec): figures only, no reduction ratios.")
    return [Section(f"{ctx.workload}: kernel lock paths", paragraphs, figures, tables)]


def wait_share_figure(points: list[Record], lay: Layout, published: tuple[Published, ...],
                      out_dir: Path, workload: str) -> plots.Figure:
    fig, axes = plots.subplots(1, width=7.0, height=4.4)
    ax = axes[0]
    where = x_positions(points, lay)
    measures = [(LOCK_WAIT_TIME_PCT, "time"), (LOCK_WAIT_PATH_PCT, "instructions")]
    measures = [m for m in measures if any(m[0] in r for r in points)]
    for combo, members in group(points, lay.series).items():
        for column, name in measures:
            summaries = aggregate(members, [lay.x], column)
            xs = sorted((k[0] for k in summaries if k[0] in where), key=lambda v: where[v])
            plots.errorbar_line(ax, [where[x] for x in xs], [summaries[(x,)] for x in xs],
                                f"measured ({name}): " + series_label(lay.series, combo))
    ax.set_xticks(list(where.values()), [str(v) for v in where], fontsize=7)
    plots.published_lines(ax, published)
    if lay.numeric_x:
        plots.log2_ticks(ax, list(where.values()))
    plots.finish(ax, lay.x, "lock-wait share (%)")
    return plots.save(fig, out_dir, f"{workload}-lock-wait-share",
                      f"{workload}: lock-wait share vs {lay.x}",
                      "Ours, in time: the lock_wait functions' modelled cycles (base + stall + "
                      "the causal clock's wait) as a share of those of every plugin.functions "
                      "match (the LRU add and drain paths with their lock), the paper's "
                      "measure; in instructions: the same share of instructions (a waiting "
                      "CPU spins at a different instructions-per-cycle than one doing list "
                      "work). Published: share of folio_add_lru time spent waiting on the LRU "
                      "lock.")


def hot_lines_table(points: list[Record], lay: Layout) -> Table:
    keys = [lay.x, *lay.series, "repeat"]
    ordered = sorted(points, key=lambda r: tuple(sort_key(r.get(k)) for k in keys))
    return Table("Hottest cache line per point (inside the ROI)",
                 [*keys, "line", "coherence messages"],
                 [[str(r.get(k, "")) for k in keys]
                  + [str(r.get("hotline.roi.symbol", "")), _num(r.get(HOT_LINE))]
                  for r in ordered])
