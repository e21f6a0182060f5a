"""The backends a point runs on (`machine.backend`). A backend takes a planned point and an
empty staging folder, builds or finds what the point needs, runs it, leaves inputs.json,
console.log, workload.json (and stats.json) in the folder and returns result.json's content;
the runner owns the folder's life (staging, atomic rename, result.json) and what every backend
records alike (`inputs_base`: the point, its spec, the lab's commit, the host)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from manylab import atomic, pointdir
from manylab.errors import LabError
from manylab.params import PointParams

if TYPE_CHECKING:
    from manylab.qemu import RunOutcome


class Backend(Protocol):
    name: str

    def default_timeout(self, point: PointParams) -> float:
        """The time limit of a point when the spec sets none, in seconds."""

    def model_mb(self, point: PointParams) -> int:
        """Host memory the backend's model needs beyond the guest's RAM (batch requests)."""

    def check_tools(self, point: PointParams) -> None:
        """Raise a LabError naming the fix when the backend's tools are missing or unusable."""

    def stale_tool(self, point: PointParams, inputs: dict[str, Any]) -> str | None:
        """What of the backend's own tools differs from those a stored point's inputs.json
        records (for example "QEMU version"), or None."""

    def run_into(self, point_id: str, study: str, point: PointParams, staging: Path,
                 inputs_base: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Run the point into staging; return result.json's content."""


def of(point: PointParams) -> Backend:
    from manylab.backends.qemu import QEMU
    from manylab.gem5.backend import GEM5

    backends: dict[str, Backend] = {QEMU.name: QEMU, GEM5.name: GEM5}
    name = point.machine.backend
    if name not in backends:
        raise LabError(f"unknown backend '{name}': choose one of {', '.join(backends)}")
    return backends[name]


def write_console_outputs(staging: Path, outcome: RunOutcome) -> None:
    """workload.json (the workload's result lines) and, when the run script's snapshots reached
    the console, kstats.json (kernel counters before and after the workload)."""
    console = outcome.console
    atomic.write_json(staging / pointdir.WORKLOAD, console.results)
    if console.kstats or console.bad_kstats:
        atomic.write_json(staging / pointdir.KSTATS,
                          {**console.kstats, "unreadable_lines": console.bad_kstats})


def run_failure(outcome: RunOutcome) -> str | None:
    """Why a finished emulator run failed (as the console and exit showed it), or None."""
    if outcome.failure is None and not outcome.console.results:
        return "the workload printed no MANYLAB-RESULT line"
    return outcome.failure


def result_record(point_id: str, study: str, program: str, outcome: RunOutcome,
                  failure: str | None) -> dict[str, Any]:
    """result.json's content for a run of `program` (qemu or gem5)."""
    return {
        "point": point_id,
        "study": study,
        "status": "failed" if failure else "ok",
        "reason": failure,
        "exit_status": outcome.console.exit_status,
        f"{program}_returncode": outcome.returncode,
        "timing": {"total_s": round(outcome.seconds, 3),
                   "boot_s": None if outcome.boot_seconds is None
                   else round(outcome.boot_seconds, 3),
                   "peak_rss_mib": None if outcome.peak_rss_mib is None
                   else round(outcome.peak_rss_mib, 1)},
        "kernel_reports": outcome.console.failures,
    }
