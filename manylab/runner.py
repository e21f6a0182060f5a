"""Running one point: artifacts, QEMU, and a complete result folder written atomically.

The point folder's files are named in manylab/pointdir.py; result.json is written last, and
the folder is staged beside its final place and renamed in whole.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manylab import atomic, image, kernel, plugin, pointdir, qemu
from manylab import spec as specs
from manylab.errors import LabError
from manylab.gem5 import backend as gem5_backend
from manylab.gem5 import command as gem5_command
from manylab.gem5 import machine as gem5_machine
from manylab.hashing import sha256_file
from manylab.paths import REPO_ROOT, RUNS_DIR
from manylab.plan import Point
from manylab.spec import parse_size
from manylab.workloads import run_script


@dataclass(frozen=True)
class Artifacts:
    kernel: kernel.KernelArtifacts
    image: image.ImageArtifacts
    plugin: Path | None


def results_dir(spec: specs.Spec, root: Path | None = None) -> Path:
    return (root or RUNS_DIR) / spec.name


def kernel_request(params: dict[str, Any]) -> kernel.KernelRequest:
    return kernel.KernelRequest(params["kernel"]["variant"], params["machine"]["arch"],
                                tuple(params["kernel"]["fragments"]))


def build_artifacts(params: dict[str, Any]) -> Artifacts:
    library = plugin.library() if plugin.wanted(params) else None
    return Artifacts(kernel.build(kernel_request(params)), image.build(params["machine"]["arch"]),
                     library)


def _git_state() -> dict[str, str]:
    def git(*args: str) -> str:
        result = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True,
                                text=True, check=False)
        return result.stdout.strip()

    return {"commit": git("rev-parse", "HEAD") or "none",
            "dirty": "yes" if git("status", "--porcelain", "--untracked-files=no") else "no"}


@functools.cache
def _kernel_key_now(request: kernel.KernelRequest) -> str:
    return kernel.resolve(request).key


@functools.cache
def _image_key_now(arch: str) -> str:
    return image.image_key(arch)


@functools.cache
def _plugin_sha_now() -> str | None:
    try:
        return sha256_file(plugin.library())
    except LabError:
        return None  # not built yet: build_for builds it, the points run anyway


def stale_input(point_dir: Path, params: dict[str, Any]) -> str | None:
    """What differs between the inputs a stored point was made from and those the lab would use
    now (the emulator's version, the kernel, the root image with its workloads, the plugin),
    or None when the point is current."""
    inputs = pointdir.read_json(point_dir / pointdir.INPUTS)
    if not isinstance(inputs, dict):
        return "inputs.json"
    arch = params["machine"]["arch"]
    if params["machine"].get("backend") == "gem5":
        recorded = inputs.get("gem5", {}).get("version")
        if recorded != gem5_command.version(gem5_command.binary(params)):
            return "gem5 version"
    elif inputs.get("qemu", {}).get("version") != qemu.version(qemu.binary(arch)):
        return "QEMU version"
    if inputs.get("kernel", {}).get("key") != _kernel_key_now(kernel_request(params)):
        return "kernel"
    if inputs.get("image", {}).get("key") != _image_key_now(arch):
        return "root image"
    if params["machine"].get("backend") != "gem5" and plugin.wanted(params):
        now = _plugin_sha_now()
        if now is not None and inputs.get("plugin", {}).get("sha256") != now:
            return "plugin"
    return None


def run_point(spec: specs.Spec, point: Point, root: Path | None = None) -> dict[str, Any]:
    """Run one point to a complete result folder; return its result.json content."""
    study_dir = results_dir(spec, root)
    study_dir.mkdir(parents=True, exist_ok=True)
    final = study_dir / point.id
    staging = study_dir / f".{point.id}.staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        result = _run_into(spec, point, staging)
        atomic.write_json(staging / pointdir.RESULT, result)
        atomic.replace_dir(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def default_timeout(params: dict[str, Any]) -> float:
    if params["machine"]["backend"] == "gem5":
        return gem5_backend.DEFAULT_TIMEOUT_S
    return qemu.default_timeout(params)


def _run_into(spec: specs.Spec, point: Point, staging: Path) -> dict[str, Any]:
    params = point.params
    timeout = float(spec.timeout_s) or default_timeout(params)
    if params["machine"]["backend"] == "gem5":
        return gem5_backend.run_into(point.id, spec.name, params, staging,
                                     _common_inputs(spec, point), timeout)
    artifacts = build_artifacts(params)
    with tempfile.TemporaryDirectory(prefix="manylab-run-") as scratch_name:
        scratch = Path(scratch_name)
        script = run_script(params)
        initrd = scratch / "initramfs.cpio"
        with initrd.open("wb") as out, artifacts.image.initramfs.open("rb") as base:
            shutil.copyfileobj(base, out)
            out.write(image.run_config_cpio(script))
        disk = None
        if params["workload"]["fs"] == "ext2":
            disk = scratch / "disk.img"
            with disk.open("wb") as handle:
                handle.truncate(parse_size(params["workload"]["disk"]))
        plugin_args: list[str] = []
        plugin_value = None
        if artifacts.plugin is not None:
            plugin_args = plugin.arguments(params, staging / pointdir.STATS,
                                           artifacts.kernel.system_map)
            plugin_value = plugin.qemu_argument(artifacts.plugin, plugin_args)
        argv = qemu.command(params, artifacts.kernel.boot_image, initrd, disk, plugin_value)
        inputs = _inputs_record(spec, point, artifacts, argv, plugin_args, script, timeout)
        atomic.write_json(staging / pointdir.INPUTS, inputs)
        outcome = qemu.run(argv, staging / pointdir.CONSOLE, staging / pointdir.QEMU_STDERR,
                           timeout)
    atomic.write_json(staging / pointdir.WORKLOAD, outcome.console.results)
    failure = outcome.failure
    if failure is None and not outcome.console.results:
        failure = "the workload printed no MANYLAB-RESULT line"
    if failure is None and artifacts.plugin is not None and not (staging / pointdir.STATS).exists():
        failure = "the plugin wrote no stats.json"
    return {
        "point": point.id,
        "study": spec.name,
        "status": "failed" if failure else "ok",
        "reason": failure,
        "exit_status": outcome.console.exit_status,
        "qemu_returncode": outcome.returncode,
        "timing": {"total_s": round(outcome.seconds, 3),
                   "boot_s": None if outcome.boot_seconds is None
                   else round(outcome.boot_seconds, 3)},
        "kernel_reports": outcome.console.failures,
    }


def _common_inputs(spec: specs.Spec, point: Point) -> dict[str, Any]:
    """What every backend records: the point, its spec, the lab's commit, the host."""
    return {
        "point": point.id,
        "study": spec.name,
        "spec": {"path": str(spec.path), "table": spec.raw,
                 "sha256": sha256_file(spec.path) if spec.path.is_file() else None},
        "params": point.params,
        "lab": _git_state(),
        "host": {"machine": platform.machine(), "node": platform.node(),
                 "cpus": os.cpu_count()},
    }


def _inputs_record(spec: specs.Spec, point: Point, artifacts: Artifacts, argv: list[str],
                   plugin_args: list[str], script: str, timeout: float) -> dict[str, Any]:
    kernel_manifest = json.loads((artifacts.kernel.directory / "manifest.json").read_text())
    record: dict[str, Any] = {
        **_common_inputs(spec, point),
        "kernel": {**kernel_manifest, "artifacts": str(artifacts.kernel.directory),
                   "boot_image_sha256": sha256_file(artifacts.kernel.boot_image)},
        "image": {"key": artifacts.image.key, "directory": str(artifacts.image.directory),
                  "initramfs_sha256": sha256_file(artifacts.image.initramfs)},
        "run_script": script,
        "qemu": {"argv": argv, "version": qemu.version(argv[0]),
                 "cmdline": qemu.kernel_cmdline(point.params)},
        "timeout_s": timeout,
    }
    if artifacts.plugin is not None:
        record["plugin"] = {**plugin.describe(artifacts.plugin), "args": plugin_args}
    return record


def select(points: list[Point], study_dir: Path, force: bool,
           retry_failed: bool) -> list[Point]:
    """The points to run: not yet complete, failed (with retry_failed), made from other inputs
    than the lab's current ones (stale_input), or all (force)."""
    chosen = []
    stale: Counter[str] = Counter()
    for point in points:
        result = pointdir.read_result(study_dir / point.id)
        if force or result is None or (retry_failed and result["status"] != "ok"):
            chosen.append(point)
        elif (reason := stale_input(study_dir / point.id, point.params)) is not None:
            stale[reason] += 1
            chosen.append(point)
    if stale:
        which = ", ".join(f"{count} by another {reason}" for reason, count in stale.items())
        print(f"manylab: {sum(stale.values())} stored points were made from other inputs "
              f"({which}): they run again and their folders are replaced", file=sys.stderr)
    return chosen


def build_for(points: list[Point]) -> None:
    """Build every artifact the points need, once each, before any point runs."""
    seen: set[tuple[Any, ...]] = set()
    for point in points:
        request = kernel_request(point.params)
        for key, action in (((request,), lambda r=request: kernel.build(r)),
                            ((request.arch,), lambda a=request.arch: image.build(a))):
            if key not in seen:
                seen.add(key)
                action()
        if point.params["machine"]["backend"] == "gem5":
            if ("gem5",) not in seen:
                seen.add(("gem5",))
                gem5_command.check_build(gem5_command.binary(point.params))
                gem5_machine.describer()
        elif plugin.wanted(point.params) and ("plugin",) not in seen:
            seen.add(("plugin",))
            plugin.library()
