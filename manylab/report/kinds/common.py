"""Drawing helpers shared by plot sets: one metric against the layout's x, per series."""

from __future__ import annotations

from pathlib import Path

from manylab.report import plots
from manylab.report.axes import Layout, series_label, x_positions
from manylab.report.records import Record
from manylab.report.stats import aggregate, group


def metric_figure(records: list[Record], lay: Layout, columns: list[str], out_dir: Path,
                  name: str, title: str, caption: str, log2_x: bool = False) -> plots.Figure:
    """One panel per column: mean ± std over repeats against x, one line per series.

    log2_x: a base-2 logarithmic x axis ticked at the values (core and thread counts)."""
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
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(where.values()), [str(v) for v in where])
            ax.minorticks_off()
        ax.set_xlabel(lay.x)
        ax.set_ylabel(column.split(".", 1)[-1])
        ax.set_title(column, fontsize=9)
        ax.grid(alpha=0.3)
        plots.legend(ax)
    return plots.save(fig, out_dir, name, title, caption)


def first_lines(records: list[Record]) -> list[Record]:
    """One record per point (its first result line): for per-point columns like stats.*."""
    return [r for r in records if r.get("line", 0) == 0]
