"""Post-boot snapshots: a QEMU machine booted to the point where its guest waits for a run
script, saved as a migration stream and restored by every point of that machine.

The snapshot is a cached ready state (manylab/backends/ready_state.py), keyed by everything the
saved state depends on: the QEMU command line with the kernel and root image by content, the
disk's size, QEMU's version.

The guest stops itself where it is ready: its init runs snapshot-point, which writes to QEMU's
pvpanic-pci device, and QEMU (-action panic=pause) pauses the machine at that instruction, so
every build of one key saves the same state (a stop requested by the host would land wherever
the guest happened to be). The stream is saved without its run state
(migration.store-global-state=off), so a restore starts running at once. The restored guest
reads its run script from the fw_cfg file opt/manylab/run, which QEMU reads from the host at
start and does not migrate: the boot sees a waiting marker, each restore the point's script,
padded to the same size.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from manylab import image, kernel, pointdir
from manylab.backends import ready_state, supervise
from manylab.backends.guest import READY_POINT_CMDLINE
from manylab.backends.qemu import command as qemu
from manylab.errors import LabError
from manylab.hashing import sha256_file_cached
from manylab.memory_layout import has_storage
from manylab.params import PointParams
from manylab.paths import cache_root
from manylab.qmp import Qmp
from manylab.units import parse_size

FORMAT = 3  # bump when the saved state or the guest's waiting protocol changes
RUN_FW_CFG = "opt/manylab/run"
RUN_FW_CFG_BYTES = 64 * 1024
RUN_HEADER = b"#manylab-run\n"
WAIT_HEADER = b"#manylab-wait\n"
READY_LINE = "MANYLAB-READY"
GUEST_CMDLINE = READY_POINT_CMDLINE
STATE = "state.mig"
SAVE_POLL_S = 0.1
PAUSE_WAIT_S = 120.0
# Only the build: pause where the guest asks, and save no run state (a restore then runs).
BUILD_ARGS = ["-action", "panic=pause", "-global", "migration.store-global-state=off"]
# Only the restore: an incoming migration ends by announcing the guest's network cards on a
# host-clock timer (5 rounds, 50-450 ms), and under -icount QEMU cuts every vCPU's turn at the
# earliest host-clock deadline too (icount_get_limit), so how many instructions a vCPU runs
# before the next one gets its turn would follow the host. No rounds, no such timer.
RESTORE_ARGS = ["-global", "migration.announce-rounds=0"]


Snapshot = ready_state.ReadyState


def wanted(point: PointParams) -> bool:
    return point.machine.snapshot == "auto" and point.machine.backend == "qemu"


def snapshots_dir() -> Path:
    path = cache_root() / "snapshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def machine_argv(point: PointParams, boot_image: Path, initramfs: Path, disk: Path | None,
                 run_file: Path) -> list[str]:
    """The command line shared by the snapshot's boot and every restore of it."""
    argv = qemu.command(point, boot_image, initramfs, disk, None, GUEST_CMDLINE)
    return argv + ["-fw_cfg", f"name={RUN_FW_CFG},file={run_file}", "-device", "pvpanic-pci"]


def key_inputs(point: PointParams, kernel_art: kernel.KernelArtifacts,
               image_art: image.ImageArtifacts) -> dict[str, Any]:
    """What the saved state depends on; the files by content, per-run files by size."""
    disk = Path("@disk") if wants_disk(point) else None
    argv = machine_argv(point, Path("@kernel"), Path("@initramfs"), disk, Path("@run"))
    return {
        "format": FORMAT,
        "argv": argv,
        "qemu_version": qemu.version(argv[0]),
        "kernel_key": kernel_art.key,
        "kernel_sha256": sha256_file_cached(kernel_art.boot_image),
        "image_key": image_art.key,
        "initramfs_sha256": sha256_file_cached(image_art.initramfs),
        "disk_bytes": parse_size(point.workload.disk) if disk is not None else None,
        "run_fw_cfg_bytes": RUN_FW_CFG_BYTES,
    }


def ensure(point: PointParams, kernel_art: kernel.KernelArtifacts,
           image_art: image.ImageArtifacts) -> Snapshot:
    """The point's snapshot from the cache, checked; built (or rebuilt) when missing or bad.
    Raises ready_state.StateFailed when the machine could not be saved."""
    return ready_state.ensure(snapshots_dir(), key_inputs(point, kernel_art, image_art),
                              lambda staging: _build(point, kernel_art, image_art, staging))


def waiting_file(path: Path) -> None:
    path.write_bytes(WAIT_HEADER.ljust(RUN_FW_CFG_BYTES, b"\0"))


def run_file(path: Path, script: str, where: str) -> None:
    """The fw_cfg file that hands a restored guest its run script."""
    data = RUN_HEADER + script.encode()
    if len(data) > RUN_FW_CFG_BYTES:
        raise LabError(f"{where}: the run script is {len(data)} bytes; a restored snapshot takes "
                       f"at most {RUN_FW_CFG_BYTES}: shorten it or set machine.snapshot = 'off'")
    path.write_bytes(data.ljust(RUN_FW_CFG_BYTES, b"\0"))


def wants_disk(point: PointParams) -> bool:
    """A virtio disk for fs = "ext2", unless a storage node is the workload's disk."""
    return point.workload.fs == "ext2" and not has_storage(point.machine)


def sparse_disk(path: Path, point: PointParams) -> Path | None:
    if not wants_disk(point):
        return None
    with path.open("wb") as handle:
        handle.truncate(parse_size(point.workload.disk))
    return path


def build_timeout(point: PointParams) -> float:
    """Twice a cold boot's allowance: a 256-vCPU x86 build took 598-770 s on 2 loaded cores."""
    return 2 * qemu.boot_allowance(point) + 600


class _Saver:
    """Saves the machine once its guest has paused itself: migrate to a file, quit."""

    def __init__(self, socket_path: Path, state: Path) -> None:
        self.socket_path = socket_path
        self.state = state
        self.saved = False
        self.error: str | None = None
        self.save_s = 0.0

    def on_line(self, line: str) -> None:
        if READY_LINE not in line or self.saved or self.error:
            return
        started = time.monotonic()
        try:
            monitor = Qmp(self.socket_path)
            try:
                deadline = time.monotonic() + PAUSE_WAIT_S
                while monitor.execute("query-status").get("status") != "guest-panicked":
                    if time.monotonic() > deadline:
                        raise LabError(f"the guest did not pause itself within "
                                       f"{PAUSE_WAIT_S:.0f} s of MANYLAB-READY (snapshot-point)")
                    time.sleep(SAVE_POLL_S)
                monitor.execute("migrate-set-parameters", **{"max-bandwidth": 0})
                monitor.execute("migrate", uri=f"file:{self.state}")
                while True:
                    status = monitor.execute("query-migrate").get("status")
                    if status == "completed":
                        break
                    if status in ("failed", "cancelled"):
                        raise LabError(f"QEMU migration {status}")
                    time.sleep(SAVE_POLL_S)
                self.saved = True
                self.save_s = time.monotonic() - started
                monitor.execute("quit")
            finally:
                monitor.close()
        except (LabError, OSError) as error:
            self.error = str(error)


def _build(point: PointParams, kernel_art: kernel.KernelArtifacts,
           image_art: image.ImageArtifacts, staging: Path) -> ready_state.Built:
    label = f"snapshot {point.machine.arch} {point.machine.vcpus} vCPUs"
    print(f"manylab: building {label} ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="manylab-snap-") as scratch_name:
        scratch = Path(scratch_name)
        run = scratch / "run.fwcfg"
        waiting_file(run)
        disk = sparse_disk(scratch / "disk.img", point)
        argv = machine_argv(point, kernel_art.boot_image, image_art.initramfs, disk, run)
        socket_path = scratch / "qmp.sock"
        saver = _Saver(socket_path, staging / STATE)
        outcome = supervise.run(argv + BUILD_ARGS
                                + ["-qmp", f"unix:{socket_path},server=on,wait=off"],
                                staging / pointdir.CONSOLE, staging / pointdir.QEMU_STDERR,
                                build_timeout(point), on_line=saver.on_line, label=label)
    failure = outcome.console.reason if outcome.console.failures else None
    if failure is None and not saver.saved:
        failure = saver.error or outcome.failure or "the guest never reported ready"
    if failure is not None:
        raise ready_state.StateFailed(f"{label}: {failure}")
    size = (staging / STATE).stat().st_size
    print(f"manylab: {label} built in {outcome.seconds:.0f} s ({size >> 20} MiB)", flush=True)
    return ready_state.Built([STATE], {
        "argv": argv, "boot_s": round(outcome.boot_seconds or 0.0, 3),
        "build_s": round(outcome.seconds, 3), "save_s": round(saver.save_s, 3)})


def restore_argv(snap: Snapshot, point: PointParams, kernel_art: kernel.KernelArtifacts,
                 image_art: image.ImageArtifacts, disk: Path | None, run: Path,
                 plugin_argument: str | None) -> list[str]:
    argv = machine_argv(point, kernel_art.boot_image, image_art.initramfs, disk, run)
    argv += [*RESTORE_ARGS, "-incoming", f"file:{snap.file(STATE)}"]
    if plugin_argument:
        argv += ["-plugin", plugin_argument]
    return argv


def describe(snap: Snapshot) -> dict[str, Any]:
    """inputs.json's record of the snapshot a point restored."""
    manifest = snap.manifest
    state = manifest["files"][STATE]
    return {"key": snap.key, "directory": str(snap.directory), "sha256": state["sha256"],
            "bytes": state["bytes"], "build_s": manifest.get("build_s"),
            "inputs": manifest["inputs"]}
