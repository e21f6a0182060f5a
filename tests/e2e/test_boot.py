"""Boot the real stock kernel under QEMU and check what the lab records."""

import json

import pytest

from tests.e2e.helpers import manylab, point_dirs, result_of, table

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]

WRITER = """
[study]
name = "{name}"
[machine]
arch = "{arch}"
vcpus = {vcpus}
memory = "512M"
[workload]
name = "pwriter"
fs = "{fs}"
args = {{ procs = "{{vcpus}}", size = "4M", pattern = ["seq", "rand"], read = true }}
"""


def run_writer(tmp_path, arch: str, vcpus: int, fs: str = "tmpfs"):
    spec = tmp_path / "writer.toml"
    spec.write_text(WRITER.format(name="writer", arch=arch, vcpus=vcpus, fs=fs))
    root = tmp_path / "results"
    manylab("run", str(spec), "--results-root", str(root), "-j", "2")
    return spec, root / "writer"


def check_writer_points(study_dir, arch: str, vcpus: int) -> None:
    dirs = point_dirs(study_dir)
    assert len(dirs) == 2
    for point_dir in dirs:
        result = result_of(point_dir)
        assert result["status"] == "ok", result
        outputs = json.loads((point_dir / "workload.json").read_text())
        assert len(outputs) == 1
        out = outputs[0]
        assert out["workload"] == "pwriter" and out["procs"] == vcpus
        assert out["verified"] is True and out["ok"] is True
        assert out["write"]["bytes"] == vcpus * (4 << 20)
        assert out["write"]["aggregate_mib_s"] > 0
        inputs = json.loads((point_dir / "inputs.json").read_text())
        assert inputs["kernel"]["source"]["version"].startswith("6.1.")
        assert inputs["kernel"]["source"]["tarball_sha256"]
        assert inputs["qemu"]["argv"][0].endswith(
            "qemu-system-x86_64" if arch == "x86_64" else "qemu-system-aarch64")
        assert "-smp" in inputs["qemu"]["argv"]
        console = (point_dir / "console.log").read_text()
        assert f"MANYLAB-BOOTED cpus={vcpus}" in console
    rows = table(study_dir)
    assert sorted(r["workload.args.pattern"] for r in rows) == ["rand", "seq"]
    assert all(r["status"] == "ok" and float(r["result.write.aggregate_mib_s"]) > 0
               for r in rows)


def test_x86_writer_study_runs_and_rerun_skips_complete_points(tmp_path):
    spec, study_dir = run_writer(tmp_path, "x86_64", 2)
    check_writer_points(study_dir, "x86_64", 2)
    stamps = {p.name: (p / "result.json").stat().st_mtime_ns for p in point_dirs(study_dir)}
    again = manylab("run", str(spec), "--results-root", str(study_dir.parent))
    assert "0 to run, 2 already complete" in again.stderr
    assert stamps == {p.name: (p / "result.json").stat().st_mtime_ns
                      for p in point_dirs(study_dir)}


def test_arm64_writer_study_runs(tmp_path):
    _, study_dir = run_writer(tmp_path, "arm64", 2)
    check_writer_points(study_dir, "arm64", 2)


def test_writer_on_ext2_virtio_disk(tmp_path):
    spec = tmp_path / "ext2.toml"
    spec.write_text(WRITER.format(name="ext2", arch="x86_64", vcpus=2, fs="ext2")
                    .replace('["seq", "rand"]', '"rand"'))
    root = tmp_path / "results"
    manylab("run", str(spec), "--results-root", str(root))
    (point_dir,) = point_dirs(root / "ext2")
    assert result_of(point_dir)["status"] == "ok"
    out = json.loads((point_dir / "workload.json").read_text())[0]
    assert out["dir"] == "/mnt/work" and out["verified"] is True


def failing_study(tmp_path, name: str, cmdline: str, script: str, timeout_s: int = 0):
    spec = tmp_path / f"{name}.toml"
    spec.write_text(f"""
[study]
name = "{name}"
timeout_s = {timeout_s}
[kernel]
cmdline = "{cmdline}"
[machine]
vcpus = 2
[workload]
name = "shell"
args = {{ script = "{script}" }}
""")
    root = tmp_path / "results"
    finished = manylab("run", str(spec), "--results-root", str(root), check=False)
    assert finished.returncode == 1, finished.stderr
    (point_dir,) = point_dirs(root / name)
    return result_of(point_dir), point_dir


def test_forced_panic_is_a_failed_run_with_the_reason(tmp_path):
    result, point_dir = failing_study(tmp_path, "panic", "rdinit=/no-such-init init=/no-such-init",
                                      "true")
    assert result["status"] == "failed"
    # rdinit failing makes the kernel try a root device, which the lab machine lacks
    assert result["reason"] == "kernel panic: VFS: Unable to mount root fs on unknown-block(0,0)"
    assert "Kernel panic - not syncing" in (point_dir / "console.log").read_text()


def test_crash_from_the_workload_is_reported(tmp_path):
    result, _ = failing_study(tmp_path, "crash", "sysrq_always_enabled",
                              "echo c > /proc/sysrq-trigger")
    assert result["status"] == "failed"
    assert result["reason"].startswith("kernel panic: sysrq triggered crash")


def test_a_hung_guest_times_out_instead_of_hanging_the_lab(tmp_path):
    result, _ = failing_study(tmp_path, "hang", "", "sleep 100000", timeout_s=45)
    assert result["status"] == "failed"
    assert result["reason"].startswith("hang: no exit within")
    assert "after boot" in result["reason"]


def test_an_interrupted_study_keeps_finished_points_and_leaves_no_half_result(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    spec = tmp_path / "interrupt.toml"
    spec.write_text("""
[study]
name = "interrupt"
[machine]
reproducible = false  # free-running: in instruction time the idle guest's sleep 300 is over
                      # at once (icount skips idle time), and both points could finish
                      # between two looks of the loop below
[workload]
name = "shell"
args = { script = ["echo MANYLAB-RESULT {}", "sleep 300; echo MANYLAB-RESULT {}"] }
""")
    root = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, "-m", "manylab.cli", "run", str(spec), "-j", "2",
                             "--results-root", str(root)], stderr=subprocess.PIPE, text=True)
    study_dir = root / "interrupt"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if study_dir.is_dir() and len(point_dirs(study_dir)) == 1:
            break
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    (kept,) = point_dirs(study_dir)
    assert result_of(kept)["status"] == "ok"
    assert sorted(p.name for p in study_dir.iterdir()) == [kept.name]


def test_boot_prints_the_console_and_says_where_it_grows():
    """`manylab boot` (the soak scripts' way in): the guest command's output on stdout, the
    live console's path on stderr before the guest starts, the result in runs/boot/."""
    result = manylab("boot", "--vcpus", "1", "--",
                     "echo MANYLAB-HELLO-$((6*7)); echo MANYLAB-RESULT '{\"ok\": true}'")
    assert "MANYLAB-HELLO-42" in result.stdout
    assert "MANYLAB-BOOTED cpus=1" in result.stdout
    first, *_, last = result.stderr.strip().splitlines()
    live = first.split("console while the guest runs: ", 1)[1]
    assert "/runs/boot/.stock-x86_64-1c-shell-r0-" in live and live.endswith("/console.log")
    assert last.startswith("manylab: ok (") and "/runs/boot/stock-x86_64-1c-shell-r0-" in last
