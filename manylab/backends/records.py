"""What every backend writes alike from a finished emulator run: workload.json and kstats.json
from its console, and result.json's content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from manylab import atomic, pointdir
from manylab.backends.supervise import RunOutcome


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
