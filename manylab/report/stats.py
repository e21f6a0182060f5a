"""Data shaping for reports: grouping, means and error bars over repeats, paired gains."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from manylab.report.records import Record, is_number

# Two-sided 95% Student t critical values by degrees of freedom (1..30); 1.96 beyond.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t95(df: int) -> float:
    if df < 1:
        return math.nan
    return _T95[df - 1] if df <= len(_T95) else 1.960


@dataclass(frozen=True)
class Summary:
    """Mean of n values, their sample standard deviation and the 95% CI half-width."""
    mean: float
    std: float
    n: int
    ci95: float


def summarize(values: Iterable[float]) -> Summary:
    data = [float(v) for v in values]
    n = len(data)
    if n == 0:
        return Summary(math.nan, math.nan, 0, math.nan)
    mean = sum(data) / n
    if n == 1:
        return Summary(mean, 0.0, 1, 0.0)
    std = math.sqrt(sum((v - mean) ** 2 for v in data) / (n - 1))
    return Summary(mean, std, n, t95(n - 1) * std / math.sqrt(n))


GroupKey = tuple[Any, ...]


def group(records: Iterable[Record], keys: Sequence[str]) -> dict[GroupKey, list[Record]]:
    """Records by their values of `keys`, groups in first-seen order."""
    groups: dict[GroupKey, list[Record]] = {}
    for record in records:
        groups.setdefault(tuple(record.get(k) for k in keys), []).append(record)
    return groups


def aggregate(records: Iterable[Record], keys: Sequence[str],
              value: str) -> dict[GroupKey, Summary]:
    """Per group of `keys`: the summary of the numeric `value`s (groups without one left out)."""
    out: dict[GroupKey, Summary] = {}
    for key, members in group(records, keys).items():
        values = [r[value] for r in members if is_number(r.get(value))]
        if values:
            out[key] = summarize(values)
    return out


def sort_key(value: Any) -> tuple[int, float, str]:
    """Numbers in numeric order first, then everything else by its text."""
    if is_number(value):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def sorted_values(records: Iterable[Record], key: str) -> list[Any]:
    return sorted({r.get(key) for r in records}, key=sort_key)


def gains(records: Iterable[Record], key: str, base: str, other: str, value: str,
          match: Sequence[str], higher_is_better: bool = True) -> list[Record]:
    """Paired gain of `other` over `base` in percent, for records equal on every `match` key.

    With higher_is_better (throughput): 100 * (other / base - 1). Otherwise (time, latency):
    100 * (base / other - 1), so a positive gain always means `other` is better. Each result
    record holds the match keys and `gain_pct`, `base_value`, `other_value`.
    """
    pairs: dict[GroupKey, dict[str, Record]] = {}
    for record in records:
        side = record.get(key)
        if side in (base, other) and is_number(record.get(value)):
            pairs.setdefault(tuple(record.get(k) for k in match), {})[str(side)] = record
    out: list[Record] = []
    for match_values, sides in pairs.items():
        if base not in sides or other not in sides:
            continue
        b, o = float(sides[base][value]), float(sides[other][value])
        numerator, denominator = (o, b) if higher_is_better else (b, o)
        if denominator == 0:
            continue
        row: Record = dict(zip(match, match_values, strict=True))
        row.update(gain_pct=100.0 * (numerator / denominator - 1.0), base_value=b, other_value=o)
        out.append(row)
    return out
