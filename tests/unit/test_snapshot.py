"""Snapshot keys, the run script's fw_cfg file and the restore's command line
(manylab/backends/qemu/snapshot.py); the cache's checks are in test_ready_state.py, the
restores themselves in tests/e2e/test_snapshot.py."""

from pathlib import Path

import pytest

from manylab import plan
from manylab import spec as specs
from manylab.backends import ready_state
from manylab.backends.qemu import snapshot
from manylab.errors import LabError
from manylab.image import ImageArtifacts
from manylab.kernel import KernelArtifacts
from manylab.params import PointParams


@pytest.fixture
def artifacts(tmp_path: Path) -> tuple[KernelArtifacts, ImageArtifacts]:
    boot = tmp_path / "vmlinux"
    boot.write_bytes(b"kernel")
    initramfs = tmp_path / "initramfs.cpio"
    initramfs.write_bytes(b"image")
    kernel_art = KernelArtifacts("k1", tmp_path, boot, boot, tmp_path / "System.map",
                                 tmp_path / "config")
    return kernel_art, ImageArtifacts("i1", tmp_path, initramfs, tmp_path / "rootfs.ext2", ())


def points(write_spec, body: str) -> list[PointParams]:
    return [p.config for p in plan.points(specs.load(write_spec(body)))]


def keys(write_spec, artifacts, body: str) -> list[str]:
    return [ready_state.key_of(snapshot.key_inputs(p, *artifacts))
            for p in points(write_spec, body)]


def test_what_runs_after_the_restore_shares_one_snapshot(write_spec, artifacts):
    # workload, its arguments, sysctls, the plugin and the repeats: one key
    body = """
[study]
repeats = 2
[kernel]
sysctl = { "vm.dirty_ratio" = 20 }
[machine]
vcpus = 4
[workload]
name = ["pwriter", "falseshare"]
[plugin]
enabled = [true, false]
preset = "knl-64"
set = { "bw.behind_epochs" = [2, 8] }
"""
    found = keys(write_spec, artifacts, body)
    assert len(found) == 2 * 2 * 2 * 2 and len(set(found)) == 1


def test_what_the_boot_depends_on_changes_the_key(write_spec, artifacts):
    body = """
[kernel]
cmdline = ["", "finer_lru.factor=64"]
[machine]
vcpus = [2, 4]
memory = ["512M", "1G"]
[workload]
name = "pwriter"
"""
    found = keys(write_spec, artifacts, body)
    assert len(set(found)) == 8
    kernel_art, image_art = artifacts
    (point,) = points(write_spec, '[workload]\nname = "pwriter"\n')
    before = ready_state.key_of(snapshot.key_inputs(point, kernel_art, image_art))
    kernel_art.boot_image.write_bytes(b"another kernel")
    assert ready_state.key_of(snapshot.key_inputs(point, kernel_art, image_art)) != before


def test_an_ext2_disk_enters_the_key_by_size(write_spec, artifacts):
    body = """
[workload]
name = "pwriter"
fs = ["tmpfs", "ext2"]
disk = ["1G", "2G"]
"""
    found = keys(write_spec, artifacts, body)
    tmpfs, ext2 = found[:2], found[2:]
    assert tmpfs[0] == tmpfs[1]  # no disk: its size does not matter
    assert len({tmpfs[0], *ext2}) == 3


def test_the_run_file_has_one_size_and_refuses_a_longer_script(tmp_path):
    waiting, run = tmp_path / "wait", tmp_path / "run"
    snapshot.waiting_file(waiting)
    snapshot.run_file(run, "echo hello\n", "point p")
    assert waiting.stat().st_size == run.stat().st_size == snapshot.RUN_FW_CFG_BYTES
    assert run.read_bytes().rstrip(b"\0") == b"#manylab-run\necho hello\n"
    assert not waiting.read_bytes().startswith(b"#manylab-run")
    with pytest.raises(LabError, match="point p: the run script is .* machine.snapshot"):
        snapshot.run_file(run, "x" * snapshot.RUN_FW_CFG_BYTES, "point p")


def test_restore_adds_the_incoming_state_no_announce_and_the_plugin(write_spec, artifacts,
                                                                      tmp_path):
    (point,) = points(write_spec, '[workload]\nname = "pwriter"\n')
    kernel_art, image_art = artifacts
    snap = ready_state.ReadyState("k", tmp_path / "k", {})
    run = tmp_path / "run"
    shared = snapshot.machine_argv(point, kernel_art.boot_image, image_art.initramfs, None, run)
    argv = snapshot.restore_argv(snap, point, kernel_art, image_art, None, run, "lib.so,a=1")
    assert argv == shared + ["-global", "migration.announce-rounds=0", "-incoming",
                             f"file:{snap.file(snapshot.STATE)}", "-plugin", "lib.so,a=1"]
    assert f"name={snapshot.RUN_FW_CFG},file={run}" in argv
    assert snapshot.GUEST_CMDLINE in argv[argv.index("-append") + 1]
