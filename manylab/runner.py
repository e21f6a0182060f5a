"""Running one point on its backend (manylab/backends) into a complete result folder written
atomically; which stored points are current; building what a study needs before it runs.

The point folder's files are named in manylab/pointdir.py; result.json is written last, and
the folder is staged beside its final place and renamed in whole.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from manylab import atomic, backends, image, kernel, pointdir
from manylab import spec as specs
from manylab.backends import ready_state
from manylab.backends.qemu import plugin
from manylab.hashing import sha256_file
from manylab.params import PointParams
from manylab.paths import REPO_ROOT, RUNS_DIR
from manylab.plan import Point


def results_dir(spec: specs.Spec, root: Path | None = None) -> Path:
    return (root or RUNS_DIR) / spec.name


def study_dir(target: str) -> Path:
    """A study's folder from what a command was given: a spec (``*.toml``) or the folder."""
    path = Path(target)
    if path.suffix == ".toml":
        return results_dir(specs.load(path))
    return path


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
def _image_key_now(arch: str, bundles: tuple[str, ...] = ()) -> str:
    return image.image_key(arch, bundles)


def stale_input(point_dir: Path, point: PointParams) -> str | None:
    """What differs between the inputs a stored point was made from and those the lab would use
    now (the backend's own tools and settings, the kernel, the root image with its workloads),
    or None when the point is current."""
    inputs = pointdir.read_json(point_dir / pointdir.INPUTS)
    if not isinstance(inputs, dict):
        return "inputs.json"
    if (tool := backends.of(point).stale_tool(point, inputs)) is not None:
        return tool
    if inputs.get("kernel", {}).get("key") != _kernel_key_now(kernel.request_for(point)):
        return "kernel"
    if inputs.get("image", {}).get("key") != _image_key_now(point.machine.arch,
                                                            image.bundles_for(point)):
        return "root image"
    return None


def staging_dir(spec: specs.Spec, point: Point, root: Path | None = None) -> Path:
    """Where this process writes a point while it runs (its console.log grows there)."""
    return results_dir(spec, root) / f".{point.id}.staging-{os.getpid()}"


def run_point(spec: specs.Spec, point: Point, root: Path | None = None) -> dict[str, Any]:
    """Run one point to a complete result folder; return its result.json content."""
    study_dir = results_dir(spec, root)
    study_dir.mkdir(parents=True, exist_ok=True)
    final = study_dir / point.id
    staging = staging_dir(spec, point, root)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        result = _run_into(spec, point, staging)
        atomic.write_json(staging / pointdir.RESULT, result)
        atomic.replace_dir(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def default_timeout(point: PointParams) -> float:
    return backends.of(point).default_timeout(point)


def _run_into(spec: specs.Spec, point: Point, staging: Path) -> dict[str, Any]:
    typed = point.config
    timeout = float(spec.timeout_s) or default_timeout(typed)
    return backends.of(typed).run_into(point.id, spec.name, typed, staging,
                                       _common_inputs(spec, point), timeout)


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
        elif (reason := stale_input(study_dir / point.id, point.config)) is not None:
            stale[reason] += 1
            chosen.append(point)
    if stale:
        which = ", ".join(f"{count} by another {reason}" for reason, count in stale.items())
        print(f"manylab: {sum(stale.values())} stored points were made from other inputs "
              f"({which}): they run again and their folders are replaced", file=sys.stderr)
    return chosen


def build_for(points: list[Point]) -> None:
    """Build every artifact the points need (kernels, root images, ready states), once each,
    before any point runs."""
    kernels: dict[kernel.KernelRequest, kernel.KernelArtifacts] = {}
    images: dict[tuple[str, tuple[str, ...]], image.ImageArtifacts] = {}
    tools_checked: set[tuple[str, bool]] = set()
    for point in points:
        request = kernel.request_for(point.config)
        if request not in kernels:
            kernels[request] = kernel.build(request)
        wanted = (request.arch, image.bundles_for(point.config))
        if wanted not in images:
            images[wanted] = image.build(*wanted)
        backend = backends.of(point.config)
        tools = (backend.name, plugin.wanted(point.config))
        if tools not in tools_checked:
            tools_checked.add(tools)
            backend.check_tools(point.config)
        try:
            backend.build_ready_state(point.config, kernels[request], images[wanted])
        except ready_state.StateFailed as error:
            print(f"manylab: {error}: its points boot instead", file=sys.stderr)
