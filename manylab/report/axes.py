"""Choosing what goes on the x axis and what becomes a series, from the swept parameters."""

from __future__ import annotations

from dataclasses import dataclass

from manylab.report.records import Record, is_number
from manylab.report.stats import sort_key

PREFERRED_X = ("workload.args.procs", "machine.vcpus", "workload.args.threads",
               "workload.args.size", "workload.args.sizes")


@dataclass(frozen=True)
class Layout:
    x: str                # the swept key on the x axis ("point" when nothing is swept)
    series: list[str]     # the other swept keys: one line per combination
    numeric_x: bool


def layout(records: list[Record], swept: list[str]) -> Layout:
    if not swept:
        return Layout("point", [], False)

    def numeric(key: str) -> bool:
        values = [r.get(key) for r in records if r.get(key) is not None]
        return bool(values) and all(is_number(v) for v in values)

    ordered = [k for k in PREFERRED_X if k in swept] + [k for k in swept if numeric(k)]
    x = ordered[0] if ordered else swept[0]
    return Layout(x, [k for k in swept if k != x], numeric(x))


def series_label(keys: list[str], values: tuple[object, ...]) -> str:
    if not keys:
        return "all points"
    return ", ".join(f"{k.split('.')[-1]}={v}" for k, v in zip(keys, values, strict=True))


def x_positions(records: list[Record], lay: Layout) -> dict[object, float]:
    """Where each x value goes: itself when numeric, else its rank."""
    values = sorted({r.get(lay.x) for r in records}, key=sort_key)
    if lay.numeric_x:
        return {v: float(v) for v in values if v is not None and is_number(v)}
    return {v: float(i) for i, v in enumerate(values)}


def writers_layout(records: list[Record], swept: list[str]) -> Layout:
    """x = writer processes (or vCPUs); every other sweep is a series, except keys that move in
    lockstep with x (`workers = "{vcpus}"`)."""
    lay = layout(records, swept)
    for key in ("workload.args.procs", "machine.vcpus"):
        if key in swept:
            series = [k for k in swept if k != key and not lockstep(records, key, k)]
            return Layout(key, series, True)
    return lay


def lockstep(records: list[Record], a: str, b: str) -> bool:
    """Whether the values of a and b determine each other in every record."""
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for record in records:
        va, vb = str(record.get(a)), str(record.get(b))
        if forward.setdefault(va, vb) != vb or backward.setdefault(vb, va) != va:
            return False
    return True
