"""The fallback plot set: every numeric result column against the swept key."""

from __future__ import annotations

from manylab.report.axes import layout
from manylab.report.kinds import PlotSet, register
from manylab.report.kinds.common import metric_figure
from manylab.report.model import Context, Section
from manylab.report.records import Record, numeric_columns, ok_records

PANELS_PER_FIGURE = 6


def sections(ctx: Context) -> list[Section]:
    good = ok_records(ctx.records)
    columns = [c for c in numeric_columns(good, "result.")]
    if not good or not columns:
        return [Section(f"{ctx.workload}: results", ["No successful point with a numeric "
                                                       "result to plot."])]
    lay = layout(good, ctx.swept)
    figures = []
    for start in range(0, len(columns), PANELS_PER_FIGURE):
        chunk = columns[start:start + PANELS_PER_FIGURE]
        figures.append(metric_figure(
            good, lay, chunk, ctx.out_dir, f"{ctx.workload}-results-{start // 6 + 1}",
            f"{ctx.workload}: results against {lay.x}",
            f"Mean ± sample std over repeats of {', '.join(chunk)}; one line per "
            f"{', '.join(lay.series) or 'study'}."))
    return [Section(f"{ctx.workload}: results", [
        f"{len(columns)} numeric result columns of {len(good)} successful records, "
        f"plotted against {lay.x}."], figures)]


def columns(records: list[Record], swept: list[str]) -> list[str]:
    return swept + numeric_columns(records, "result.")


GENERIC = register(PlotSet("generic", sections, columns))
