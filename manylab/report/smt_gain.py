"""A point's ROI modelled time at another `core.smt_gain` (G) than it ran with, to first order.

G has no source for the presets' chips, so a result at more vCPUs than cores is to be shown
across 1..threads_per_core (plugin README "SMT siblings share a core"). Where no core hosts
more than two vCPUs, every SMT cycle of a vCPU (`time.vcpus[].smt_cycles`) was charged with
exactly one sibling busy: (s(G) - 1) x the vCPU's base cycles then, with s(G) = 2 / (1 + (G -
1) / (T - 1)) the plugin's slowdown of two busy threads (plugin/src/smt.rs). The estimate
rescales those cycles to the other gain and takes the ROI's time to scale as the machine's own
work does: the sum over vCPUs of base, SMT and stall cycles. Wait and idle cycles (waiting for
and catching up with other vCPUs) are taken to scale with the others' speed, i.e. in proportion.
A rate at G is the measured one times estimate(run's G) / estimate(G), so it equals the
measured rate at the run's own gain. Checked against runs at other gains in docs/results ("The
SMT gain checked against direct runs"): first order, not a substitute for them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from manylab.errors import LabError


@dataclass(frozen=True)
class Layout:
    """What the estimate needs of the machine a point ran on."""
    threads_per_core: int
    run_gain: float
    vcpus_per_core: int  # the most vCPUs any core hosts


def pair_slowdown(threads_per_core: int, gain: float) -> float:
    """How much slower each of two busy threads of a core runs than one alone."""
    return 2.0 / (1.0 + (gain - 1.0) / (threads_per_core - 1))


def gains(threads_per_core: int, run_gain: float) -> list[float]:
    """The range to show: 1 (threads take turns) to T (no sharing), whole steps and the run's."""
    return sorted({1.0, run_gain, *(float(g) for g in range(2, threads_per_core + 1))})


def layout(machine_params: dict[str, Any], vcpu_core: list[int]) -> Layout:
    """From stats.json's params.machine and the plugin's vCPU -> core map."""
    return Layout(int(machine_params["threads_per_core"]), float(machine_params["core.smt_gain"]),
                  max(Counter(vcpu_core).values(), default=0))


def work_cycles(vcpus: list[dict[str, Any]], smt_scale: float) -> float:
    """The vCPUs' base, stall and SMT cycles (SMT scaled by smt_scale), summed."""
    return sum(float(v["cycles"]) - float(v["idle_cycles"]) - float(v["wait_cycles"])
               + float(v["smt_cycles"]) * (smt_scale - 1.0) for v in vcpus)


def time_factors(machine: Layout, vcpus: list[dict[str, Any]]) -> dict[float, float]:
    """Gain -> the ROI's modelled time at that gain over its time at the run's gain; a
    LabError saying why when the estimate does not apply."""
    if machine.vcpus_per_core <= 1 or machine.threads_per_core <= 1:
        raise LabError("no core hosts two vCPUs: the gain does not enter")
    if machine.vcpus_per_core > 2:
        raise LabError(f"a core hosts {machine.vcpus_per_core} vCPUs: the SMT cycles mix "
                       "sharing degrees, which stats.json does not split")
    run_extra = pair_slowdown(machine.threads_per_core, machine.run_gain) - 1.0
    if run_extra <= 0.0:
        raise LabError(f"core.smt_gain {machine.run_gain:g} = threads_per_core: no SMT cycles "
                       "to rescale")
    at_run = work_cycles(vcpus, 1.0)
    if at_run <= 0.0:
        raise LabError("no busy cycles in the ROI")
    return {g: work_cycles(vcpus, (pair_slowdown(machine.threads_per_core, g) - 1.0)
                           / run_extra) / at_run
            for g in gains(machine.threads_per_core, machine.run_gain)}
