"""The gem5 backend: one point -> a gem5 full-system run -> the same point folder as QEMU's
(inputs.json, console.log, workload.json, stats.json, result.json), plus gem5's own output
under gem5/ (stats.txt, config.json, roi.json)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from manylab import atomic, image, kernel, pointdir
from manylab.backends import ready_state, records, supervise
from manylab.backends.gem5 import checkpoint, command, machine, stats, system
from manylab.backends.records import result_record, run_failure, write_console_outputs
from manylab.errors import LabError
from manylab.hashing import sha256_file
from manylab.params import PointParams
from manylab.workloads import run_script

# Boot and region under gem5 take minutes to hours: the lab's default limit per point.
DEFAULT_TIMEOUT_S = 4 * 3600.0


def describe_machine(point: PointParams) -> machine.Machine:
    return machine.describe(point.plugin.preset, point.machine.vcpus, dict(point.plugin.set))


def prepare(point: PointParams, kernel_artifacts: kernel.KernelArtifacts,
            image_artifacts: image.ImageArtifacts, folder: Path) -> dict[str, Any]:
    """Write the run script and the system description into folder; return the description."""
    script = folder / "run.sh"
    script.write_text(run_script(point))
    bootloader = command.bootloader(point) if point.machine.arch == "arm64" else None
    inputs = system.Gem5Inputs(kernel_artifacts.vmlinux, image_artifacts.rootfs_ext2, script,
                               bootloader)
    description = system.describe(point, describe_machine(point), inputs)
    atomic.write_json(folder / checkpoint.SYSTEM_JSON, description)
    return description


class Gem5Backend:
    name = "gem5"

    def default_timeout(self, point: PointParams) -> float:
        return DEFAULT_TIMEOUT_S

    def model_mb(self, point: PointParams) -> int:
        return 4096

    def check_tools(self, point: PointParams) -> None:
        gem5 = command.binary(point)
        vcpus = point.machine.vcpus
        if point.machine.arch == "arm64":
            command.bootloader(point)
            widest = system.chi_counts(describe_machine(point), vcpus)["cache_controllers"]
        else:
            machine.describer()
            widest = vcpus  # MESI_Two_Level: one L1 controller per core
        command.check_build(gem5, point.machine.arch, widest)

    def stale_tool(self, point: PointParams, inputs: dict[str, Any]) -> str | None:
        recorded = inputs.get("gem5", {})
        if recorded.get("version") != command.version(command.binary(point)):
            return "gem5 version"
        restored_or_tried = "checkpoint" in recorded or "checkpoint_error" in recorded
        if restored_or_tried != checkpoint.wanted(point):
            return "checkpoint setting"
        return None

    def build_ready_state(self, point: PointParams, kernel_art: kernel.KernelArtifacts,
                          image_art: image.ImageArtifacts) -> None:
        if checkpoint.wanted(point):
            with tempfile.TemporaryDirectory(prefix="manylab-gem5-") as scratch:
                description = prepare(point, kernel_art, image_art, Path(scratch))
                checkpoint.ensure(description, command.binary(point), kernel_art, image_art,
                                  DEFAULT_TIMEOUT_S)

    def run_into(self, point_id: str, study: str, point: PointParams, staging: Path,
                 inputs_base: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        return run_into(point_id, study, point, staging, inputs_base, timeout_s)


GEM5 = Gem5Backend()


def run_into(point_id: str, study: str, point: PointParams, staging: Path,
             inputs_base: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    gem5 = command.binary(point)
    kernel_artifacts = kernel.build(kernel.request_for(point))
    image_artifacts = image.for_point(point)
    description = prepare(point, kernel_artifacts, image_artifacts, staging)
    outdir = staging / "gem5"
    argv = command.argv(gem5, outdir, staging / checkpoint.SYSTEM_JSON)
    tool = {"version": command.version(gem5), "binary_sha256": sha256_file(gem5),
            "configs": command.configs_hashes(), "system": checkpoint.SYSTEM_JSON}
    if "bootloader" in description:  # arm64
        tool["bootloader_sha256"] = sha256_file(Path(description["bootloader"]))
    if checkpoint.wanted(point):
        try:
            state = checkpoint.ensure(description, gem5, kernel_artifacts, image_artifacts,
                                      timeout_s)
            argv += checkpoint.restore_args(state)
            tool["checkpoint"] = checkpoint.describe(state)
        except ready_state.StateFailed as error:
            tool["checkpoint_error"] = str(error)
            print(f"manylab: point {point_id}: no checkpoint ({error}): it boots instead",
                  flush=True)
    record = records.inputs_record(
        inputs_base, kernel_artifacts, ("vmlinux_sha256", kernel_artifacts.vmlinux),
        image_artifacts, ("rootfs_ext2_sha256", image_artifacts.rootfs_ext2),
        (staging / "run.sh").read_text(), "gem5", {"argv": argv, **tool}, timeout_s)
    atomic.write_json(staging / pointdir.INPUTS, record)
    outcome = supervise.run(argv, staging / pointdir.CONSOLE, staging / pointdir.GEM5_STDERR,
                       timeout_s, program="gem5")
    write_console_outputs(staging, outcome)
    failure = run_failure(outcome)
    stats_txt = outdir / "stats.txt"
    if failure is None:
        try:
            imported = stats.import_run(stats_txt, outdir / "roi.json", description,
                                        record["gem5"]["version"])
            atomic.write_json(staging / pointdir.STATS, imported)
        except LabError as error:
            failure = str(error)
    return result_record(point_id, study, "gem5", outcome, failure)

