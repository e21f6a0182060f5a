"""The Markdown report labels the paper's numbers and states the direction."""

from __future__ import annotations

from typing import Any

from manylab.pcm.report import render
from manylab.pcm.sweep import shape


def pt(policy: str, frames: int, fg_time: float, energy: float, hit: float) -> dict[str, Any]:
    return {
        "type": "point",
        "trace": "x",
        "policy": policy,
        "mem_frac": frames / 10,
        "frames": frames,
        "dram_share": 0.05,
        "hit_ratio": hit,
        "fg_hit_ratio": hit,
        "time": fg_time,
        "fg_time": fg_time,
        "fg_storage_time": fg_time / 2,
        "energy_nj": energy,
        "to_dram": 0,
        "to_pcm": 0,
        "wear_max": 3,
        "lifetime_s": 86400.0,
    }


def test_report_compares_with_paper() -> None:
    rows = shape(
        [
            pt("lru", 1, 100, 100, 0.5),
            pt("2q", 1, 100, 100, 0.5),
            pt("fgbg", 1, 50, 90, 0.6),
            pt("lru", 2, 100, 100, 0.7),
            pt("2q", 2, 100, 100, 0.7),
            pt("fgbg", 2, 70, 70, 0.7),
        ],
        trace="trace1",
    )
    md = render(rows, "T", notes=["synthetic"])
    assert "paper's published values" in md
    line = next(ln for ln in md.splitlines() if ln.startswith("| trace1 | -40.0%"))
    assert "| -58% |" in line and "| -22% |" in line and "-20.0%" in line
    assert "fg_time: yes, energy: yes, hits: yes" in line
    assert "| 50% |" in line  # LRU FG time on storage
    assert "synthetic" in md


def test_report_shows_every_reading_of_the_time_accounting() -> None:
    def with_readings(p: dict[str, Any], paper: float, evict: float) -> dict[str, Any]:
        return {**p, "fg_time_by_model": {"paper": paper, "paper-evict": evict}}

    rows = shape(
        [
            with_readings(pt("lru", 1, 100, 100, 0.5), 100, 10),
            with_readings(pt("fgbg", 1, 50, 90, 0.6), 90, 4),
        ],
        trace="trace2",
    )
    md = render(rows, "T")
    assert "| trace | `paper` | `paper-evict` | paper |" in md
    assert "| trace2 | -10.0% | -60.0% | -73% |" in md
