"""The guest side of the gem5 tier, run natively: gem5's pseudo-instructions are executed only
when MANYLAB_GEM5=1 (outside gem5 they are illegal instructions), and gem5op refuses to run
outside gem5."""

import shutil
import signal
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def build(name: str, source: Path, out: Path) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    binary = out / name
    subprocess.run(["gcc", "-static", "-O2", "-pthread", "-Wall", "-Werror",
                    f"-I{REPO / 'workloads' / 'include'}", str(source), "-o", str(binary)],
                   check=True)
    return binary


def run(binary: Path, *args: str, gem5: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin"} | ({"MANYLAB_GEM5": gem5} if gem5 is not None else {})
    return subprocess.run([str(binary), *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def test_gem5op_refuses_outside_gem5(tmp_path):
    tool = build("gem5op", REPO / "workloads" / "tools" / "gem5op.c", tmp_path)
    for gem5 in (None, "0"):
        out = run(tool, "exit", gem5=gem5)
        assert out.returncode == 2 and "not under gem5" in out.stderr
    assert run(tool, "frobnicate", gem5="1").returncode == 2
    assert run(tool).returncode == 2


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists()
                    or "x86_64" not in subprocess.run(["uname", "-m"], capture_output=True,
                                                      text=True).stdout,
                    reason="the x86-64 encoding is checked on an x86-64 host")
def test_roi_markers_issue_gem5_work_items_only_when_asked(tmp_path):
    workload = build("falseshare", REPO / "workloads" / "falseshare.c", tmp_path)
    args = ("--threads", "2", "--iters", "1000", "--mode", "shared", "--no-pin")
    assert run(workload, *args).returncode == 0
    assert run(workload, *args, gem5="0").returncode == 0
    # On a real CPU gem5's 0f 04 work-begin is an illegal instruction: the marker issued it.
    assert run(workload, *args, gem5="1").returncode == -signal.SIGILL
