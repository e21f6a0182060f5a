"""Saving matplotlib figures (Agg, PNG + SVG) and the small drawing helpers plot sets share."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure as MplFigure  # noqa: E402

from manylab.report.published import Published  # noqa: E402
from manylab.report.stats import Summary  # noqa: E402

PUBLISHED_COLORS = ("#7f7f7f", "#8c564b", "#e377c2", "#bcbd22", "#17becf")


@dataclass(frozen=True)
class Figure:
    """A saved plot: files relative to the report folder."""
    name: str
    title: str
    caption: str
    png: str
    svg: str


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "plot"


def subplots(panels: int, width: float = 5.2,
             height: float = 3.8) -> tuple[MplFigure, list[Axes]]:
    cols = 2 if panels == 4 else min(panels, 3)
    rows = (panels + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for extra in flat[panels:]:
        extra.set_visible(False)
    return fig, flat[:panels]


def save(fig: MplFigure, out_dir: Path, name: str, title: str, caption: str) -> Figure:
    fig.suptitle(title)
    fig.tight_layout()
    stem = slug(name)
    fig.savefig(out_dir / f"{stem}.png", dpi=110)
    fig.savefig(out_dir / f"{stem}.svg")
    plt.close(fig)
    return Figure(stem, title, caption, f"{stem}.png", f"{stem}.svg")


def human_size(value: Any) -> str:
    number = float(value)
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if number >= 1 << shift and number % (1 << shift) == 0:
            return f"{int(number) >> shift}{unit}"
    return f"{number:g}"


def errorbar_line(ax: Axes, xs: Sequence[float], summaries: Sequence[Summary], label: str,
                  marker: str = "o") -> None:
    """Means with ± one sample standard deviation over repeats."""
    ax.errorbar(list(xs), [s.mean for s in summaries], yerr=[s.std for s in summaries],
                label=label, marker=marker, capsize=3, linewidth=1.4, markersize=4)


def published_lines(ax: Axes, published: Sequence[Published], unit: str = "%") -> None:
    """Horizontal dashed lines (or bands for ranges) for published values, labelled."""
    for index, item in enumerate(published):
        color = PUBLISHED_COLORS[index % len(PUBLISHED_COLORS)]
        text = f"{item.label}: {item.text(unit).split(' (')[0]}"
        if item.low == item.high:
            ax.axhline(item.value, color=color, linestyle="--", linewidth=1.2, label=text)
        else:
            ax.axhspan(item.low, item.high, color=color, alpha=0.18, label=text)


def legend(ax: Axes, fontsize: float = 7.0) -> None:
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=fontsize, loc="best")


def finish(ax: Axes, xlabel: str, ylabel: str | None = None, title: str | None = None,
           legend_size: float = 7.0) -> None:
    """Axis labels, a small title, a light grid and the legend."""
    ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    legend(ax, legend_size)


def log2_ticks(ax: Axes, values: Sequence[float]) -> None:
    """A base-2 logarithmic x axis ticked at the given values (core and thread counts)."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(values), [f"{v:g}" for v in values])
    ax.minorticks_off()
