"""gem5 checkpoints: a point's system booted once on its boot cores to the point where the
guest is ready for any run, saved by gem5 and restored by every point of that system (gem5's
standard flow: boot on fast cores, restore into the detailed ones).

The guest stops itself where it is ready, as under QEMU: booted with manylab.snapshot=1, its
init runs `gem5op checkpoint` (m5 op 0x43) after the clocksource settled, gem5-configs/
run_point.py saves the checkpoint there and ends. A restore continues after that instruction
and reads the point's run script through gem5's readfile, a host file given at restore that
the checkpoint does not hold. The checkpoint is a cached ready state
(manylab/backends/ready_state.py), keyed by the system description without its readfile, the
kernel and root image by content, gem5's binary and the lab's gem5 configs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from manylab import atomic, image, kernel, pointdir
from manylab.backends import ready_state, supervise
from manylab.backends.gem5 import command
from manylab.hashing import sha256_file_cached
from manylab.params import PointParams
from manylab.paths import cache_root

FORMAT = 1  # bump when the saved state or the guest's ready protocol changes
FOLDER = "cpt"
SYSTEM_JSON = "gem5-system.json"
# Per-point fields of the system description: not part of what a checkpoint saves.
PER_POINT = ("readfile",)


def wanted(point: PointParams) -> bool:
    """Whether the point restores a checkpoint: machine.snapshot = "auto" on atomic boot
    cores. Atomic cores bypass Ruby's caches, so at the ready point they hold no line and the
    checkpoint is memory and devices alone; with timing boot cores gem5 would have to flush
    the caches first, which neither MESI_Two_Level (x86) nor CHI (arm64) can (no Flush
    request), so such a point boots."""
    return (point.machine.snapshot == "auto" and point.machine.backend == "gem5"
            and point.gem5.boot_cpu == "atomic")


def checkpoints_dir() -> Path:
    return cache_root() / "gem5-checkpoints"


def key_inputs(description: dict[str, Any], gem5: Path, kernel_art: kernel.KernelArtifacts,
               image_art: image.ImageArtifacts) -> dict[str, Any]:
    """What the checkpoint depends on: the system (its ISA among it; files by content), gem5
    and its configs."""
    system = {k: v for k, v in description.items() if k not in PER_POINT}
    system["kernel"], system["disk"] = "@kernel", "@disk"
    inputs = {
        "format": FORMAT,
        "system": system,
        "gem5_version": command.version(gem5),
        "gem5_sha256": sha256_file_cached(gem5),
        "configs": command.configs_hashes(),
        "kernel_key": kernel_art.key,
        "vmlinux_sha256": sha256_file_cached(kernel_art.vmlinux),
        "image_key": image_art.key,
        "disk_sha256": sha256_file_cached(image_art.rootfs_ext2),
    }
    if "bootloader" in description:  # arm64
        system["bootloader"] = "@bootloader"
        inputs["bootloader_sha256"] = sha256_file_cached(Path(description["bootloader"]))
    return inputs


def ensure(description: dict[str, Any], gem5: Path, kernel_art: kernel.KernelArtifacts,
           image_art: image.ImageArtifacts, timeout_s: float) -> ready_state.ReadyState:
    """The checkpoint of this system from the cache, checked; built when missing or bad.
    Raises ready_state.StateFailed when gem5 could not boot the guest to its ready point."""
    inputs = key_inputs(description, gem5, kernel_art, image_art)
    return ready_state.ensure(checkpoints_dir(), inputs,
                              lambda staging: _build(description, gem5, staging, timeout_s))


def _build(description: dict[str, Any], gem5: Path, staging: Path,
           timeout_s: float) -> ready_state.Built:
    label = f"gem5 checkpoint, {description['cpus']} cores of {description['preset']}"
    print(f"manylab: building {label} ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="manylab-cpt-") as scratch_name:
        scratch = Path(scratch_name)
        waiting = scratch / "run.sh"
        waiting.write_text("")  # the boot reads no script: it stops at its ready point
        system_json = scratch / SYSTEM_JSON
        atomic.write_json(system_json, {**description, "readfile": str(waiting)})
        argv = command.argv(gem5, scratch / "m5out", system_json)
        argv += ["--checkpoint-out", str(staging / FOLDER)]
        outcome = supervise.run(argv, staging / pointdir.CONSOLE,
                                staging / pointdir.GEM5_STDERR, timeout_s, program="gem5")
    failure = outcome.console.reason if outcome.console.failures else None
    saved = staging / FOLDER / "m5.cpt"
    if failure is None and not saved.is_file():
        failure = outcome.failure or "the guest never reached its ready point (gem5op checkpoint)"
    if failure is not None:
        raise ready_state.StateFailed(f"{label}: {failure}")
    files = sorted(p.relative_to(staging).as_posix()
                   for p in (staging / FOLDER).rglob("*") if p.is_file())
    size = sum((staging / name).stat().st_size for name in files)
    print(f"manylab: {label} built in {outcome.seconds:.0f} s ({size >> 20} MiB)", flush=True)
    return ready_state.Built(files, {"argv": argv, "build_s": round(outcome.seconds, 3)})


def folder(state: ready_state.ReadyState) -> Path:
    return state.file(FOLDER)


def restore_args(state: ready_state.ReadyState) -> list[str]:
    """run_point.py's arguments that restore the checkpoint."""
    return ["--restore", str(folder(state))]


def describe(state: ready_state.ReadyState) -> dict[str, Any]:
    """inputs.json's record of the checkpoint a point restored."""
    files = state.manifest["files"]
    return {"key": state.key, "directory": str(state.directory),
            "bytes": sum(f["bytes"] for f in files.values()),
            "files": files, "build_s": state.manifest.get("build_s"),
            "inputs": state.manifest["inputs"]}
