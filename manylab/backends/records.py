"""What every backend writes alike: inputs.json's common part before a run; workload.json and
kstats.json from its console, and result.json's content after it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from manylab import atomic, image, kernel, pointdir
from manylab.backends.supervise import RunOutcome
from manylab.hashing import sha256_file_cached


def inputs_record(inputs_base: dict[str, Any], kernel_artifacts: kernel.KernelArtifacts,
                  kernel_file: tuple[str, Path], image_artifacts: image.ImageArtifacts,
                  image_file: tuple[str, Path], script: str, emulator: str,
                  emulator_record: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """inputs.json's content for a run of `emulator` (qemu or gem5): the kernel and the root
    image with the hash of the file the emulator boots (`kernel_file`, `image_file`: the key to
    record it under and the file), the run script, and the emulator's own record."""
    manifest = json.loads((kernel_artifacts.directory / "manifest.json").read_text())
    kernel_key, kernel_path = kernel_file
    image_key, image_path = image_file
    return {
        **inputs_base,
        "kernel": {**manifest, "artifacts": str(kernel_artifacts.directory),
                   kernel_key: sha256_file_cached(kernel_path)},
        "image": {"key": image_artifacts.key, "directory": str(image_artifacts.directory),
                  image_key: sha256_file_cached(image_path),
                  **image.inputs_extras(image_artifacts)},
        "run_script": script,
        emulator: emulator_record,
        "timeout_s": timeout_s,
    }


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
