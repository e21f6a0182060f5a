"""The QEMU backend: a point boots the lab's kernel and root image under QEMU (TCG), with the
plugin when the point enables it or runs in lockstep."""

from __future__ import annotations

import functools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manylab import atomic, image, kernel, pointdir
from manylab.backends import ready_state, records, supervise
from manylab.backends.qemu import command as qemu
from manylab.backends.qemu import plugin, snapshot
from manylab.backends.records import result_record, run_failure, write_console_outputs
from manylab.crate_build import StaleBuild
from manylab.errors import LabError
from manylab.hashing import sha256_file
from manylab.params import PointParams
from manylab.workloads import run_script


@dataclass(frozen=True)
class Artifacts:
    kernel: kernel.KernelArtifacts
    image: image.ImageArtifacts
    plugin: Path | None


def build_artifacts(point: PointParams) -> Artifacts:
    library = plugin.library() if plugin.wanted(point) else None
    return Artifacts(kernel.build(kernel.request_for(point)), image.for_point(point), library)


class QemuBackend:
    name = "qemu"

    def default_timeout(self, point: PointParams) -> float:
        return qemu.default_timeout(point)

    def model_mb(self, point: PointParams) -> int:
        return 4096 if point.plugin.enabled else 0

    def check_tools(self, point: PointParams) -> None:
        qemu.version(qemu.binary(point.machine.arch))
        if plugin.wanted(point):
            plugin.library()

    def stale_tool(self, point: PointParams, inputs: dict[str, Any]) -> str | None:
        if inputs.get("qemu", {}).get("version") != qemu.version(qemu.binary(point.machine.arch)):
            return "QEMU version"
        restored_or_tried = "snapshot" in inputs or "snapshot_error" in inputs
        if restored_or_tried != snapshot.wanted(point):
            return "snapshot setting"
        if plugin.wanted(point):
            now = plugin_sha_now()
            if now is not None and inputs.get("plugin", {}).get("sha256") != now:
                return "plugin"
        return None

    def build_ready_state(self, point: PointParams, kernel_art: kernel.KernelArtifacts,
                          image_art: image.ImageArtifacts) -> None:
        if snapshot.wanted(point):
            snapshot.ensure(point, kernel_art, image_art)

    def run_into(self, point_id: str, study: str, point: PointParams, staging: Path,
                 inputs_base: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        artifacts = build_artifacts(point)
        snap, snapshot_error = None, None
        if snapshot.wanted(point):
            try:
                snap = snapshot.ensure(point, artifacts.kernel, artifacts.image)
            except ready_state.StateFailed as error:
                snapshot_error = str(error)
                print(f"manylab: point {point_id}: no snapshot ({error}): it boots instead",
                      flush=True)
        with tempfile.TemporaryDirectory(prefix="manylab-run-") as scratch_name:
            scratch = Path(scratch_name)
            script = run_script(point)
            disk = snapshot.sparse_disk(scratch / "disk.img", point)
            plugin_args: list[str] = []
            plugin_value = None
            if artifacts.plugin is not None:
                plugin_args = plugin.arguments(point, staging / pointdir.STATS,
                                               artifacts.kernel.system_map)
                plugin_value = plugin.qemu_argument(artifacts.plugin, plugin_args)
            if snap is not None:
                run = scratch / "run.fwcfg"
                snapshot.run_file(run, script, f"point {point_id}")
                argv = snapshot.restore_argv(snap, point, artifacts.kernel, artifacts.image,
                                             disk, run, plugin_value)
            else:
                initrd = scratch / "initramfs.cpio"
                with initrd.open("wb") as out, artifacts.image.initramfs.open("rb") as base:
                    shutil.copyfileobj(base, out)
                    out.write(image.run_config_cpio(script))
                argv = qemu.command(point, artifacts.kernel.boot_image, initrd, disk,
                                    plugin_value)
            record = inputs_record(inputs_base, point, artifacts, argv, plugin_args, script,
                                   timeout_s, snap)
            if snapshot_error is not None:
                record["snapshot_error"] = snapshot_error
            atomic.write_json(staging / pointdir.INPUTS, record)
            outcome = supervise.run(argv, staging / pointdir.CONSOLE,
                                    staging / pointdir.QEMU_STDERR, timeout_s,
                                    label=f"point {point_id}")
        write_console_outputs(staging, outcome)
        failure = run_failure(outcome)
        if (failure is None and artifacts.plugin is not None
                and not (staging / pointdir.STATS).exists()):
            failure = "the plugin wrote no stats.json"
        return result_record(point_id, study, "qemu", outcome, failure)


@functools.cache
def plugin_sha_now() -> str | None:
    try:
        return sha256_file(plugin.library())
    except StaleBuild:
        raise  # stored points cannot be judged against a build that is out of date
    except LabError:
        return None  # not built yet: build_for builds it, the points run anyway


def inputs_record(inputs_base: dict[str, Any], point: PointParams, artifacts: Artifacts,
                  argv: list[str], plugin_args: list[str], script: str,
                  timeout_s: float, snap: snapshot.Snapshot | None) -> dict[str, Any]:
    record = records.inputs_record(
        inputs_base, artifacts.kernel, ("boot_image_sha256", artifacts.kernel.boot_image),
        artifacts.image, ("initramfs_sha256", artifacts.image.initramfs), script, "qemu",
        {"argv": argv, "version": qemu.version(argv[0]),
         "cmdline": qemu.kernel_cmdline(point, snapshot.GUEST_CMDLINE if snap is not None
                                        else "")},
        timeout_s)
    if snap is not None:
        record["snapshot"] = snapshot.describe(snap)
    if artifacts.plugin is not None:
        record["plugin"] = {**plugin.describe(artifacts.plugin), "args": plugin_args}
    return record


QEMU = QemuBackend()
