"""Verdicts on a paper's claim from repeated measurements: a claim is judged only where the
95% confidence interval over the repeats settles it; otherwise the verdict says so.

Verdict words: "reproduced", "direction only" (the sign agrees, the size does not), "not
reproduced", "not resolved" (the interval spans the boundary that decides), "one run" (no
interval: at least two repeats are needed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from manylab.report.stats import Summary, sort_key

REPRODUCED, DIRECTION_ONLY = "reproduced", "direction only"
NOT_REPRODUCED, NOT_RESOLVED, ONE_RUN = "not reproduced", "not resolved", "one run"


def interval(s: Summary) -> tuple[float, float] | None:
    """The 95% confidence interval of the mean; None below two values."""
    if s.n < 2 or math.isnan(s.ci95):
        return None
    return s.mean - s.ci95, s.mean + s.ci95


def gain_verdict(s: Summary, low: float, high: float = math.inf) -> str:
    """A claimed gain of `low`..`high` percent against the measured gains `s` (percent)."""
    found = interval(s)
    if found is None:
        return ONE_RUN
    lo, hi = found
    if hi < 0:
        return f"{NOT_REPRODUCED} (a loss)"
    if lo <= 0:
        return f"{NOT_RESOLVED} (the interval spans no change)"
    if hi < low:
        return f"{DIRECTION_ONLY} (a gain below the paper's)"
    if lo > high:
        return f"{DIRECTION_ONLY} (a gain above the paper's)"
    return REPRODUCED


def no_change_verdict(s: Summary, tolerance: float) -> str:
    """A claim of no change, read as within ±`tolerance` percent, against measured gains."""
    found = interval(s)
    if found is None:
        return ONE_RUN
    lo, hi = found
    if -tolerance <= lo and hi <= tolerance:
        return REPRODUCED
    if lo > tolerance:
        return f"{NOT_REPRODUCED} (a gain)"
    if hi < -tolerance:
        return f"{NOT_REPRODUCED} (a loss)"
    return f"{NOT_RESOLVED} (the interval reaches past ±{tolerance:g}%)"


@dataclass(frozen=True)
class Peak:
    """Where a throughput curve peaks, and what its last point does against the peak."""
    at: Any
    top_at: Any
    drop_pct: float  # 100 x (1 - last mean / peak mean)
    verdict: str


def peak_then_fall(by_x: Mapping[Any, Summary]) -> Peak | None:
    """The claim "throughput rises to a peak, then falls": reproduced when the curve's last
    point lies below its peak with the two intervals apart."""
    if not by_x:
        return None
    xs = sorted(by_x, key=sort_key)
    peak = max(xs, key=lambda x: by_x[x].mean)
    top = xs[-1]
    drop = 100.0 * (1.0 - by_x[top].mean / by_x[peak].mean) if by_x[peak].mean else math.nan
    if peak == top:
        return Peak(peak, top, 0.0, f"{NOT_REPRODUCED} (highest at the largest count)")
    at_peak, at_top = interval(by_x[peak]), interval(by_x[top])
    if at_peak is None or at_top is None:
        return Peak(peak, top, drop, ONE_RUN)
    if at_top[1] < at_peak[0]:
        return Peak(peak, top, drop, REPRODUCED)
    return Peak(peak, top, drop, f"{NOT_RESOLVED} (the intervals overlap: a plateau)")
