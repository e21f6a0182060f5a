import math

import pytest

from manylab.report.stats import aggregate, gains, group, sort_key, summarize, t95


def test_summary_of_three_values_by_hand():
    s = summarize([1.0, 2.0, 3.0])
    assert s.mean == 2.0 and s.n == 3
    assert s.std == pytest.approx(1.0)
    assert s.ci95 == pytest.approx(4.303 / math.sqrt(3))


def test_summary_of_one_and_none():
    assert summarize([5.0]).std == 0.0 and summarize([5.0]).ci95 == 0.0
    assert summarize([]).n == 0 and math.isnan(summarize([]).mean)


def test_t_table_edges():
    assert t95(1) == 12.706 and t95(30) == 2.042 and t95(100) == 1.96
    assert math.isnan(t95(0))


def test_group_keeps_first_seen_order():
    rows = [{"a": 2, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "z"}]
    groups = group(rows, ["a"])
    assert list(groups) == [(2,), (1,)]
    assert [r["b"] for r in groups[(2,)]] == ["x", "z"]


def test_aggregate_is_mean_and_std_over_repeats_and_skips_non_numbers():
    rows = [{"k": "a", "v": 10.0}, {"k": "a", "v": 14.0}, {"k": "a", "v": None},
            {"k": "b", "v": "text"}, {"k": "c", "v": 3}]
    out = aggregate(rows, ["k"], "v")
    assert set(out) == {("a",), ("c",)}
    assert out[("a",)].mean == 12.0 and out[("a",)].std == pytest.approx(math.sqrt(8))
    assert out[("c",)].n == 1


def test_gain_throughput_and_latency_by_hand():
    rows = [{"m": "normal", "case": 1, "thr": 100.0, "lat": 20.0},
            {"m": "mmf", "case": 1, "thr": 150.0, "lat": 10.0},
            {"m": "normal", "case": 2, "thr": 200.0, "lat": 5.0},
            {"m": "mmf", "case": 2, "thr": 100.0, "lat": 10.0},
            {"m": "mmf", "case": 3, "thr": 1.0, "lat": 1.0}]  # no partner: left out
    up = {g["case"]: g["gain_pct"] for g in gains(rows, "m", "normal", "mmf", "thr", ["case"])}
    assert up == {1: pytest.approx(50.0), 2: pytest.approx(-50.0)}
    down = {g["case"]: g["gain_pct"]
            for g in gains(rows, "m", "normal", "mmf", "lat", ["case"], higher_is_better=False)}
    assert down == {1: pytest.approx(100.0), 2: pytest.approx(-50.0)}


def test_sort_key_numbers_before_text():
    assert sorted(["b", 10, 2, "a"], key=sort_key) == [2, 10, "a", "b"]
