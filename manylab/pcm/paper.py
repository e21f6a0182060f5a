"""The paper's published results (hybrid DRAM/PCM buffer cache, KIISE 2015), for comparison.

These are the paper's values on its own Nexus 7 traces, not anything this lab measured.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperResult:
    trace: str
    description: str
    fg_bg_ratio: float
    fg_time_change_vs_lru: float  # -0.58 = 58% less foreground execution time than LRU
    energy_change_vs_lru: float


PAPER = {
    "trace1": PaperResult(
        "trace1",
        "Chrome in foreground, Hangouts/Gmail pushes in background",
        15.0,
        -0.58,
        -0.22,
    ),
    "trace2": PaperResult(
        "trace2", "many apps switched between foreground and background", 3.0, -0.73, -0.23
    ),
}

PAPER_HIT_RATIO_CLAIM = "hit ratios never below LRU or 2Q"
PAPER_DRAM_SHARE = 0.05
PAPER_MEMORY_RANGE = "10%-100% of the workload footprint"
