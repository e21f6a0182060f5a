"""Drawing helpers shared by plot sets: one metric against the layout's x, per series."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure as MplFigure

from manylab.errors import LabError
from manylab.report import plots
from manylab.report.axes import Layout, series_label, writers_layout, x_positions
from manylab.report.model import Context, Section
from manylab.report.records import Record, is_number, numeric_columns, ok_records
from manylab.report.stats import aggregate, gains, group, sort_key


def metric_figure(records: list[Record], lay: Layout, columns: list[str], out_dir: Path,
                  name: str, title: str, caption: str, log2_x: bool = False,
                  log_y: bool = False) -> plots.Figure:
    """One panel per column: mean ± std over repeats against x, one line per series.

    log2_x: a base-2 logarithmic x axis ticked at the values (core and thread counts).
    log_y: a logarithmic y axis (symmetric near zero, so zero counts still show)."""
    fig, axes = plots.subplots(len(columns))
    where = x_positions(records, lay)
    for ax, column in zip(axes, columns, strict=True):
        for series_values, members in group(records, lay.series).items():
            summaries = aggregate(members, [lay.x], column)
            xs = sorted((k[0] for k in summaries if k[0] in where), key=lambda v: where[v])
            if not xs:
                continue
            plots.errorbar_line(ax, [where[v] for v in xs], [summaries[(v,)] for v in xs],
                                series_label(lay.series, series_values))
        if not lay.numeric_x:
            ax.set_xticks(list(where.values()), [str(v) for v in where], rotation=30,
                          fontsize=7)
        elif log2_x and min(where.values(), default=0) > 0:
            plots.log2_ticks(ax, list(where.values()))
        if log_y:
            values = [float(r[column]) for r in records if is_number(r.get(column))]
            if values and min(values) > 0:
                ax.set_yscale("log")
            else:
                positive = [v for v in values if v > 0]
                ax.set_yscale("symlog", linthresh=min(positive, default=1.0))
                ax.set_ylim(bottom=0)
        plots.finish(ax, lay.x, column.split(".", 1)[-1], title=column)
    return plots.save(fig, out_dir, name, title, caption)


MODELLED_TIME_NOTE = ("Modelled time is the machine model's (plugin README \"Modelled time\"): "
                      "max over vCPUs of instructions x CPI + stall cycles / MLP + idle cycles "
                      "(a vCPU far behind the others, halted or spinning, moved up to them), "
                      "at the preset's clock; not guest time. Read it from points run with "
                      "machine.quantum_unit = \"cycles\": with instruction turns a vCPU that "
                      "stalls less falls behind without waiting and is moved up too.")


def modelled_rate(records: list[Record], amount: str, time_ns: str, out: str,
                  unit: float) -> list[Record]:
    """Copies of the records holding both columns, with `out` = amount / unit per modelled
    second (time_ns is a region's stats...time.modelled_ns)."""
    rated = []
    for record in records:
        a, t = record.get(amount), record.get(time_ns)
        if is_number(a) and is_number(t) and float(str(t)) > 0:
            rated.append({**record, out: float(str(a)) / unit / (float(str(t)) * 1e-9)})
    return rated


def first_lines(records: list[Record]) -> list[Record]:
    """One record per point (its first result line): for per-point columns like stats.*."""
    return [r for r in records if r.get("line", 0) == 0]


def baseline(ctx: Context, records: list[Record]) -> tuple[str, str] | None:
    """The (key, value) other kernel settings are compared with: the spec's report.baseline,
    else kernel.variant=stock when stock is among several variants; None when neither applies.
    Raises LabError when report.baseline names a value no point has."""
    given = str(ctx.settings.get("baseline", ""))
    if given:
        key, _, value = given.partition("=")
        if not any(str(r.get(key)) == value for r in records):
            found = sorted({str(r.get(key)) for r in records})
            raise LabError(f"report.baseline '{given}' matches no point (values of {key}: "
                           f"{', '.join(found)}): fix [report] baseline in the study spec")
        return key, value
    variants = {r.get("kernel.variant") for r in records}
    if "stock" in variants and len(variants) > 1:
        return "kernel.variant", "stock"
    return None


def series_keys(series: list[str], base: tuple[str, str]) -> list[str]:
    """Every swept series key, the setting's keys first (how comparison lines are labelled)."""
    keys = setting_keys(series, base)
    return keys + [k for k in series if k not in keys]


def measured_lines(ax: Axes, rows: list[Record], x: str, keys: list[str], column: str) -> None:
    """Mean ± std of `column` against a numeric x, a line per combination of `keys`."""
    for combo, members in group(rows, keys).items():
        summaries = aggregate(members, [x], column)
        xs = sorted((k[0] for k in summaries), key=sort_key)
        plots.errorbar_line(ax, [float(v) for v in xs], [summaries[(v,)] for v in xs],
                            "measured: " + series_label(keys, combo))


def setting_axes(rows: list[Record], lay: Layout, base: tuple[str, str],
                 column: str) -> tuple[MplFigure, Axes]:
    """One panel with ``column`` of each setting against x (a line per series but the
    baseline's factor), for a comparison with the baseline."""
    fig, axes = plots.subplots(1, width=7.0, height=4.6)
    measured_lines(axes[0], rows, lay.x, series_keys(lay.series, base), column)
    return fig, axes[0]


def finish_setting_axes(ax: Axes, rows: list[Record], lay: Layout, level: float,
                        published_x: Iterable[float], ylabel: str) -> None:
    """The no-change line at ``level``, base-2 ticks at the points' and the published x,
    the labels and legend."""
    ax.axhline(level, color="black", linewidth=0.8)
    plots.log2_ticks(ax, sorted({float(r[lay.x]) for r in rows} | set(published_x)))
    plots.finish(ax, lay.x, ylabel)


def setting_keys(series: list[str], base: tuple[str, str]) -> list[str]:
    """What one kernel setting is: the baseline's key plus every other swept kernel key (a
    setting is compared with the baseline whatever those other keys hold)."""
    return [base[0]] + [k for k in series if k.startswith("kernel.") and k != base[0]]


def setting_gains(records: list[Record], lay: Layout, column: str,
                  base: tuple[str, str]) -> list[Record]:
    """Per kernel setting other than the baseline: its gain over the baseline at the same
    writers and other (non-kernel) settings, paired by repeat index, in percent."""
    key, value = base
    keys = setting_keys(lay.series, base)
    match = [lay.x, "repeat"] + [k for k in lay.series if k not in keys]
    reference = [r for r in records if str(r.get(key)) == value]
    out = []
    for combo, members in group([r for r in records if str(r.get(key)) != value], keys).items():
        for row in gains(reference + members, key, value, str(combo[0]), column, match):
            out.append({**row, **dict(zip(keys, combo, strict=True))})
    return out


def guest_time_caveat(records: list[Record]) -> list[str]:
    """What a rate in guest time means for these points: under icount one clock counts the
    instructions of all vCPUs; without it guest time follows host load."""
    notes = []
    if any(r.get("machine.reproducible") for r in records):
        notes.append("Note: in instruction time (machine.reproducible, icount) guest time counts "
                     "the instructions of all vCPUs together, 1 ns each: a machine with N busy "
                     "vCPUs spends N guest nanoseconds per instruction step of each, so "
                     "guest-time rates measure work per machine instruction and do not grow "
                     "with cores even when the work scales perfectly. Read scaling from the "
                     "rates in modelled time where the report draws them (the machine model's "
                     "time), or from the instruction and coherence counts of the same work.")
    if not all(r.get("machine.reproducible") for r in records):
        notes.append("Caution: these rates are in guest time under TCG without icount, which "
                     "runs at the host's pace: points run at different host loads are not "
                     "comparable, and the lab's instruction and coherence counts (below) are the "
                     "measurement to compare. Compare rates only between points run side by "
                     "side on a quiet host, or with machine.reproducible (icount).")
    return notes


def no_points(title: str) -> list[Section]:
    """The section of a plot set that has no successful point to draw."""
    return [Section(title, ["No successful point to plot."])]


@dataclass(frozen=True)
class WritersFigure:
    """What a writers plot set (pwriter, forkbench) draws first: its successful points, their
    writers layout and the figure of its rates against the layout's x."""

    good: list[Record]
    lay: Layout
    figure: plots.Figure


def writers_figure(ctx: Context, metrics: tuple[str, ...], name: str, what: str,
                   caption: str) -> WritersFigure | None:
    """The figure (titled "WHAT vs x") of those of ``metrics`` that the successful points hold
    as numbers (``result.`` columns), in their writers layout; None when no point succeeded."""
    good = ok_records(ctx.records)
    if not good:
        return None
    lay = writers_layout(good, ctx.swept)
    present = numeric_columns(good, "result.")
    columns = [c for c in metrics if c in present]
    return WritersFigure(good, lay, metric_figure(good, lay, columns, ctx.out_dir, name,
                                                  f"{what} vs {lay.x}", caption, log2_x=True))
