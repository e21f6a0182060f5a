"""Figures shaped like the paper's Figs. 4-7: grouped bars over memory size, one bar per policy.

fig-hit-ratio, fig-fg-hit-ratio, fig-fg-time (normalised to LRU), fig-energy (normalised to LRU),
plus fig-pcm-wear (max writes per PCM frame). Each as PNG and SVG.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from manylab.pcm.sweep import POLICIES  # noqa: E402

FIGURES = (
    ("hit-ratio", "hit_ratio", "Hit ratio (all requests)", False),
    ("fg-hit-ratio", "fg_hit_ratio", "Hit ratio (foreground requests)", False),
    ("fg-time", "fg_time_vs_lru", "Foreground time / LRU", True),
    ("energy", "energy_vs_lru", "Memory energy / LRU", True),
    ("pcm-wear", "wear_max", "Max writes per PCM frame", False),
)

LABELS = {"lru": "LRU", "2q": "2Q", "fgbg": "FG/BG (paper)", "clock-dwf": "CLOCK-DWF-like"}


def _f(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) else math.nan


def _slug(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in s).strip("-")


def plot_all(rows: Sequence[Mapping[str, Any]], outdir: Path) -> list[Path]:
    """Write every figure for every (trace, DRAM share); return the paths written."""
    written: list[Path] = []
    groups = sorted({(str(r["trace"]), _f(r["dram_share"])) for r in rows})
    multi_share = len({g[1] for g in groups}) > 1
    for trace, share in groups:
        sel = [r for r in rows if r["trace"] == trace and _f(r["dram_share"]) == share]
        mems = sorted({_f(r["mem_frac"]) for r in sel})
        policies = [p for p in POLICIES if any(r["policy"] == p for r in sel)]
        for name, col, ylabel, ref_line in FIGURES:
            fig, ax = plt.subplots(figsize=(7.5, 3.6))
            width = 0.8 / max(len(policies), 1)
            for i, p in enumerate(policies):
                by_mem = {_f(r["mem_frac"]): _f(r[col]) for r in sel if r["policy"] == p}
                xs = [k + (i - (len(policies) - 1) / 2) * width for k in range(len(mems))]
                ax.bar(xs, [by_mem.get(m, math.nan) for m in mems], width, label=LABELS.get(p, p))
            if ref_line:
                ax.axhline(1.0, color="black", linewidth=0.8)
            ax.set_xticks(range(len(mems)))
            ax.set_xticklabels([f"{m * 100:.0f}%" for m in mems])
            ax.set_xlabel("memory size (share of footprint)")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{trace}, DRAM {share * 100:g}% of memory")
            ax.legend(
                fontsize=8, ncol=len(policies), loc="upper center", bbox_to_anchor=(0.5, -0.22)
            )
            fig.tight_layout()
            stem = f"fig-{name}-{_slug(trace)}" + (f"-dram{share:g}" if multi_share else "")
            for ext in ("png", "svg"):
                path = outdir / f"{stem}.{ext}"
                fig.savefig(path, dpi=120)
                written.append(path)
            plt.close(fig)
    return written
