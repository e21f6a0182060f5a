"""Verdicts from repeats, on hand-computed intervals: [1, 2, 3] has mean 2 and a 95%
half-width of 4.303 / sqrt(3) = 2.484 (t with 2 degrees of freedom), so 2 ± 2.484."""

from manylab.report.axes import Layout
from manylab.report.kinds.pwriter import baseline_peak, knl_verdicts
from manylab.report.stats import Summary, summarize
from manylab.report.verdicts import (
    NOT_RESOLVED,
    ONE_RUN,
    REPRODUCED,
    gain_verdict,
    interval,
    no_change_verdict,
    peak_then_fall,
)


def shifted(values: list[float], by: float) -> Summary:
    return summarize([v + by for v in values])


def test_interval_needs_two_values():
    assert interval(summarize([5.0])) is None
    lo, hi = interval(summarize([1.0, 2.0, 3.0]))  # type: ignore[misc]
    assert round(lo, 3) == -0.484 and round(hi, 3) == 4.484


def test_gain_against_a_published_range():
    three = [1.0, 2.0, 3.0]
    assert gain_verdict(summarize([90.0]), 70, 140) == ONE_RUN
    assert gain_verdict(shifted(three, 98), 70, 140) == REPRODUCED  # 97.5..102.5
    assert gain_verdict(shifted(three, 68), 70, 140) == REPRODUCED  # 67.5..72.5 meets 70
    assert gain_verdict(shifted(three, 60), 70, 140).startswith("direction only (a gain below")
    assert gain_verdict(shifted(three, 150), 70, 140).startswith("direction only (a gain above")
    assert gain_verdict(shifted(three, 0), 70, 140).startswith(NOT_RESOLVED)  # -0.5..4.5
    assert gain_verdict(shifted(three, -10), 70, 140) == "not reproduced (a loss)"


def test_no_change_within_a_tolerance():
    three = [1.0, 2.0, 3.0]
    assert no_change_verdict(shifted(three, -2), 5) == REPRODUCED  # -2.5..2.5
    assert no_change_verdict(shifted(three, 0), 5) == REPRODUCED  # -0.5..4.5
    assert no_change_verdict(shifted(three, 2), 5).startswith(NOT_RESOLVED)  # 1.5..6.5
    assert no_change_verdict(shifted(three, 6), 5) == "not reproduced (a gain)"  # 5.5..10.5
    assert no_change_verdict(shifted(three, -12), 5) == "not reproduced (a loss)"  # -12.5..-7.5


def test_peak_then_fall():
    three = [1.0, 2.0, 3.0]
    falls = {16: shifted(three, 10), 64: shifted(three, 20), 256: shifted(three, 12)}
    peak = peak_then_fall(falls)
    assert peak is not None and (peak.at, peak.top_at, peak.verdict) == (64, 256, REPRODUCED)
    assert round(peak.drop_pct, 2) == round(100 * (1 - 14 / 22), 2)
    plateau = {16: shifted(three, 10), 64: shifted(three, 20), 256: shifted(three, 19)}
    assert peak_then_fall(plateau).verdict.startswith(NOT_RESOLVED)  # type: ignore[union-attr]
    rising = {16: shifted(three, 10), 256: shifted(three, 20)}
    assert peak_then_fall(rising).verdict.startswith("not reproduced")  # type: ignore[union-attr]
    assert peak_then_fall({16: summarize([1.0]), 64: summarize([0.5]),
                           32: summarize([2.0])}).verdict == ONE_RUN  # type: ignore[union-attr]
    assert peak_then_fall({}) is None


def test_baseline_peak_orders_writer_counts_as_numbers():
    column = "rate"
    base = ("kernel.cmdline", "finer_lru.factor=1")
    rated = [{"kernel.cmdline": base[1], "workload.args.procs": procs, column: rate}
             for procs, rates in ((16, [9.0, 10.0, 11.0]), (64, [19.0, 20.0, 21.0]),
                                  (128, [7.0, 8.0, 9.0])) for rate in rates]
    lines = baseline_peak(rated, Layout("workload.args.procs", ["kernel.cmdline"], True),
                          base, column)
    # 128 sorts before 64 as text: the peak at 64 must still be read against 128, the largest.
    assert lines[1] == (f"kernel.cmdline=finer_lru.factor=1 peaks at workload.args.procs=64; "
                        f"at workload.args.procs=128 it is 60.0% below the peak: {REPRODUCED}.")


def test_stock_beside_the_series_is_not_judged_as_a_finerlru_gain():
    keys = ["kernel.cmdline", "kernel.variant"]
    gains = [1.0, 2.0, 3.0]
    summary = {("finer_lru.factor=256", "finerlru", 128): shifted(gains, 44),
               ("", "stock", 128): shifted(gains, 1)}
    lines = knl_verdicts(summary, keys, "workload.args.procs",
                         [{"plugin.preset": "knl-64"}])
    assert len(lines) == 2 and "variant=finerlru" in lines[1]
