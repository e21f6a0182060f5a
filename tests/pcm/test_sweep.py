"""Sweep configuration and the shaping of simulator output into the results table."""

from __future__ import annotations

import csv
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest

from manylab.pcm.sweep import (
    TABLE_COLUMNS,
    ConfigError,
    SweepConfig,
    shape,
    summarise,
    write_table,
)


def point(policy: str, frames: int, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "type": "point",
        "trace": "t",
        "policy": policy,
        "mem_frac": frames / 100,
        "frames": frames,
        "dram_share": 0.05,
        "hit_ratio": 0.5,
        "fg_hit_ratio": 0.5,
        "time": 100.0,
        "fg_time": 80.0,
        "fg_storage_time": 40.0,
        "energy_nj": 1000.0,
    }
    base.update(kw)
    return base


def test_shape_normalises_to_lru_of_same_point() -> None:
    objs = [
        {"type": "summary", "requests": 10},
        point("fgbg", 10, fg_time=40.0, energy_nj=800.0, time=90.0),
        point("lru", 10),
        point("lru", 20, fg_time=50.0),
        point("2q", 20, fg_time=100.0),
    ]
    rows = shape(objs, trace="trace1")
    assert [(r["policy"], r["frames"]) for r in rows] == [
        ("lru", 10),
        ("fgbg", 10),
        ("lru", 20),
        ("2q", 20),
    ]
    assert all(r["trace"] == "trace1" for r in rows)
    fgbg = rows[1]
    assert fgbg["fg_time_vs_lru"] == pytest.approx(0.5)
    assert fgbg["energy_vs_lru"] == pytest.approx(0.8)
    assert fgbg["time_vs_lru"] == pytest.approx(0.9)
    assert fgbg["fg_storage_share"] == pytest.approx(1.0)
    assert rows[3]["fg_time_vs_lru"] == pytest.approx(2.0)
    assert rows[0]["fg_time_vs_lru"] == pytest.approx(1.0)


def test_shape_without_lru_gives_nan() -> None:
    (row,) = shape([point("fgbg", 10)])
    assert math.isnan(row["fg_time_vs_lru"])


def test_shape_keeps_dram_shares_apart() -> None:
    rows = shape(
        [
            point("lru", 10),
            point("lru", 10, dram_share=0.1, fg_time=20.0),
            point("fgbg", 10, dram_share=0.1, fg_time=10.0),
        ]
    )
    fgbg = next(r for r in rows if r["policy"] == "fgbg")
    assert fgbg["fg_time_vs_lru"] == pytest.approx(0.5)


def test_summarise_counts_hit_ratio_shortfalls() -> None:
    objs = [
        point("lru", 10, hit_ratio=0.5),
        point("2q", 10, hit_ratio=0.6),
        point("fgbg", 10, hit_ratio=0.55, fg_time=40.0),
        point("lru", 20, hit_ratio=0.7),
        point("2q", 20, hit_ratio=0.7),
        point("fgbg", 20, hit_ratio=0.7, fg_time=60.0),
    ]
    summ = {s.policy: s for s in summarise(shape(objs))}
    f = summ["fgbg"]
    assert f.points == 2
    assert f.mean_fg_time_vs_lru == pytest.approx((0.5 + 0.75) / 2)
    assert (f.below_lru_hits, f.below_2q_hits) == (0, 1)
    assert summ["lru"].below_2q_hits == 1


def test_write_table_has_all_columns(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    write_table(shape([point("lru", 10, lifetime_s=None)]), path)
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0].keys()) == TABLE_COLUMNS
    assert rows[0]["lifetime_s"] == ""
    assert float(rows[0]["fg_time_vs_lru"]) == 1.0


def test_config_argv() -> None:
    c = SweepConfig(
        gen="trace2",
        gen_set={"seed": "3"},
        policies=["lru", "fgbg"],
        mem=[0.1, 0.5],
        dram_share=[0.05, 0.1],
        set=["time.pcm_write=60"],
    )
    assert c.argv() == [
        "run",
        "--gen",
        "trace2",
        "--gen-set",
        "seed=3",
        "--policies",
        "lru,fgbg",
        "--mem",
        "0.1,0.5",
        "--dram-share",
        "0.05,0.1",
        "--time-model",
        "paper",
        "--energy-model",
        "table1",
        "--set",
        "time.pcm_write=60",
    ]
    assert c.label() == "trace2(seed=3)"


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({}, "exactly one of"),
        ({"gen": "trace3"}, "unknown generator"),
        ({"gen": "trace1", "policies": ["lfu"]}, "unknown policy 'lfu'"),
        ({"gen": "trace1", "mem": [0.0]}, "memory fraction"),
        ({"gen": "trace1", "dram_share": [1.5]}, "DRAM share"),
    ],
)
def test_config_validation(kw: dict[str, Any], msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        SweepConfig(**kw).validate()


def test_config_from_toml(tmp_path: Path) -> None:
    p = tmp_path / "s.toml"
    p.write_text('[pcm]\ntrace = "t.mlpt"\nmem_pages = [100, 200]\npolicies = ["lru"]\n')
    c = SweepConfig.from_toml(p)
    assert c.trace == tmp_path / "t.mlpt"
    assert c.mem == [] and c.mem_pages == [100, 200]
    p.write_text('[pcm]\ngen = "trace1"\ncolour = 1\n')
    with pytest.raises(ConfigError, match="unknown key 'colour'"):
        SweepConfig.from_toml(p)


def test_example_configs_parse() -> None:
    # runs/pcm/ holds sweep configs ([pcm]) and study specs ([study], tests/unit/test_spec.py).
    files = sorted((Path(__file__).resolve().parents[2] / "runs" / "pcm").glob("*.toml"))
    tables = {p: tomllib.loads(p.read_text()) for p in files}
    assert all(("pcm" in t) != ("study" in t) for t in tables.values()), tables.keys()
    configs = [p for p, t in tables.items() if "pcm" in t]
    assert configs, "no runs/pcm/*.toml sweep config"
    for p in configs:
        SweepConfig.from_toml(p).validate()


def test_fg_time_under_each_reading_against_lru(tmp_path: Path) -> None:
    readings = {"paper": 100.0, "paper-evict": 40.0, "paper-evict-fg": 60.0}
    rows = shape([
        point("lru", 10, fg_time_by_model=readings),
        point("fgbg", 10, fg_time_by_model={"paper": 50.0, "paper-evict": 30.0,
                                            "paper-evict-fg": 15.0}),
        point("lru", 20, fg_time_by_model=readings),
        point("fgbg", 20, fg_time_by_model={"paper": 150.0, "paper-evict": 10.0,
                                            "paper-evict-fg": 30.0}),
    ])
    fgbg10 = rows[1]["fg_time_vs_lru_by_model"]
    assert fgbg10 == pytest.approx({"paper": 0.5, "paper-evict": 0.75, "paper-evict-fg": 0.25})
    (f,) = [s for s in summarise(rows) if s.policy == "fgbg"]
    assert f.mean_fg_time_vs_lru_by_model == pytest.approx(
        {"paper": (0.5 + 1.5) / 2, "paper-evict": (0.75 + 0.25) / 2,
         "paper-evict-fg": (0.25 + 0.5) / 2})
    path = tmp_path / "r.csv"
    write_table(rows, path)
    with path.open() as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0])[-3:] == ["fg_time_vs_lru.paper", "fg_time_vs_lru.paper-evict",
                                   "fg_time_vs_lru.paper-evict-fg"]
    assert float(table[3]["fg_time_vs_lru.paper-evict-fg"]) == pytest.approx(0.5)
