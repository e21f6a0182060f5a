"""The plugin's `stats.*` columns, for every workload: any figure the plugin adds appears here.

Columns are grouped by the first part of their name (`stats.coherence.inv` -> coherence,
`stats.l2_misses` -> l2); each group is one figure, a panel per column, against the swept key.
"""

from __future__ import annotations

from manylab.report.axes import layout
from manylab.report.kinds.common import first_lines, metric_figure
from manylab.report.model import Context, Section
from manylab.report.records import numeric_columns, ok_records

PANELS_PER_FIGURE = 6


def stats_group(column: str) -> str:
    name = column.removeprefix("stats.")
    if "." in name:
        return name.split(".", 1)[0]
    return name.split("_", 1)[0] if "_" in name else "stats"


def sections(ctx: Context) -> list[Section]:
    points = first_lines(ok_records(ctx.records))
    columns = numeric_columns(points, "stats.")
    if not columns:
        return []
    groups: dict[str, list[str]] = {}
    for column in columns:
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
                    [f"{len(columns)} plugin summary columns in {len(groups)} groups."],
                    figures)]
