"""The benchmark driver: parsing the binary's CSV, the plan, and a tiny end-to-end run.

No timing is asserted: the benchmark prints figures, it does not judge them.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from manylab.pcm import bench, engine

needs_binary = pytest.mark.skipif(
    not engine.binary_path().is_file(), reason="manylab-pcmsim not built"
)

SAMPLE = (
    "policy,frames,requests,requests_per_wall_s,requests_per_cpu_s,peak_rss_kib\n"
    "lru,5325,10000000,20000000,22904671,6000\n"
    "fgbg,5325,10000000,9000000,,\n"
)


def test_parse_bench_csv() -> None:
    rows = bench.parse_bench_csv(SAMPLE, "trace2 packed")
    assert [r.policy for r in rows] == ["lru", "fgbg"]
    assert rows[0] == bench.BenchRow(
        "trace2 packed", "lru", 5325, 10_000_000, 2e7, 22904671.0, 6000
    )
    assert rows[1].cpu_per_s is None and rows[1].peak_rss_kib is None
    assert bench.target_summary(rows) == ["met     trace2 packed lru 5325 frames"]
    assert "22.90" in bench.table(rows)


def test_plan_covers_reproduce_sizes_and_memory_cases(tmp_path: Path) -> None:
    cases = dict(bench.plan(1000, "lru", tmp_path))
    assert cases["trace1 packed"][-1] == bench.REPRODUCE_MEM
    assert "--trace" in cases["trace2 file"]
    mem = [args for label, args in bench.plan(1000, "lru", tmp_path) if label.startswith("memory")]
    assert len(mem) == 4 and all("--stream" in a for a in mem)


@needs_binary
def test_tiny_run_prints_table() -> None:
    out = io.StringIO()
    rows = bench.run(requests=20_000, policies="lru,fgbg", with_large=False, out=out)
    cases = {r.case for r in rows}
    assert {"trace1 packed", "trace2 packed", "trace2 file"} <= cases
    assert all(r.requests > 0 and r.wall_per_s > 0 for r in rows)
    assert all(r.peak_rss_kib is None or r.peak_rss_kib > 0 for r in rows)
    text = out.getvalue()
    assert "peak RSS MiB" in text and "target 10 M requests per CPU-second" in text
