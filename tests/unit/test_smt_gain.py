"""The first-order ROI time across core.smt_gain, on hand-computed cases."""
import pytest

from manylab.errors import LabError
from manylab.report import smt_gain
from manylab.report.smt_gain import Layout


def vcpu(cycles: float, idle: float, smt: float, wait: float = 0.0) -> dict[str, float]:
    return {"cycles": cycles, "idle_cycles": idle, "smt_cycles": smt, "wait_cycles": wait}


def test_pair_slowdown_spans_turn_taking_to_no_sharing() -> None:
    assert smt_gain.pair_slowdown(4, 1.0) == 2.0
    assert smt_gain.pair_slowdown(4, 1.5) == pytest.approx(2 / (1 + 0.5 / 3))
    assert smt_gain.pair_slowdown(4, 4.0) == 1.0
    assert smt_gain.pair_slowdown(2, 1.25) == pytest.approx(1.6)


def test_gains_are_one_to_threads_with_the_runs_own() -> None:
    assert smt_gain.gains(4, 1.5) == [1.0, 1.5, 2.0, 3.0, 4.0]
    assert smt_gain.gains(2, 1.25) == [1.0, 1.25, 2.0]


def test_layout_counts_the_most_vcpus_on_one_core() -> None:
    machine = {"threads_per_core": 4, "core.smt_gain": 1.5}
    assert smt_gain.layout(machine, [0, 1, 2, 0, 1]) == Layout(4, 1.5, 2)


def test_time_factors_scale_with_the_machines_own_work() -> None:
    # run at G = 1.5 (T = 4): SMT cycles = 0.714286 x base, so 300 SMT cycles are 420 base.
    # A: 1,000 cycles, 100 idle, 200 wait, 300 SMT: own work 700. B: 1,000 cycles, all its
    # own, no SMT. Sum 1,700. G = 1: A's SMT -> 420, sum 1,820 (1.0706); G = 2 (slowdown 1.5):
    # 210, 1,610; G = 3 (1.2): 84, 1,484; G = 4: 0, 1,400. Wait and idle scale in proportion.
    vcpus = [vcpu(1000, 100, 300, 200), vcpu(1000, 0, 0)]
    factors = smt_gain.time_factors(Layout(4, 1.5, 2), vcpus)
    assert list(factors) == [1.0, 1.5, 2.0, 3.0, 4.0]
    assert [factors[g] for g in factors] == pytest.approx(
        [1820 / 1700, 1.0, 1610 / 1700, 1484 / 1700, 1400 / 1700])


def test_time_factors_of_a_vcpu_that_shares_throughout() -> None:
    # base 700 cycles, all with a sibling busy: 500 SMT cycles at G = 1.5, own work 1,200.
    # G = 1: 700 x 2 = 1,400; G = 3: 700 x 1.2 = 840; G = 4: 700 (no sharing).
    factors = smt_gain.time_factors(Layout(4, 1.5, 2), [vcpu(1400, 200, 500)])
    assert factors[1.0] == pytest.approx(1400 / 1200)
    assert factors[3.0] == pytest.approx(840 / 1200)
    assert factors[4.0] == pytest.approx(700 / 1200)


@pytest.mark.parametrize(("machine", "why"), [
    (Layout(4, 1.5, 1), "no core hosts two vCPUs"),
    (Layout(4, 1.5, 3), "a core hosts 3 vCPUs"),
    (Layout(4, 4.0, 2), "core.smt_gain 4 = threads_per_core"),
])
def test_time_factors_refuse_what_they_cannot_estimate(machine: Layout, why: str) -> None:
    with pytest.raises(LabError, match=why):
        smt_gain.time_factors(machine, [vcpu(1000, 0, 100)])
