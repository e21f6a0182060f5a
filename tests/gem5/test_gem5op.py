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


def arm64_object(source: Path, out: Path) -> bytes:
    if shutil.which("aarch64-linux-gnu-gcc") is None:
        pytest.skip("aarch64-linux-gnu-gcc not installed")
    obj = out / (source.stem + ".o")
    subprocess.run(["aarch64-linux-gnu-gcc", "-c", "-O2", "-Wall", "-Werror",
                    f"-I{REPO / 'workloads' / 'include'}", str(source), "-o", str(obj)],
                   check=True)
    return obj.read_bytes()


def m5op_word(func: int) -> bytes:
    """gem5's aarch64 m5 op: 0xff000110 with the function in bits 16-23 (gem5's
    util/m5/src/abi/arm64/m5op.S; decoded as Gem5Op64, src/arch/arm/isa/formats/aarch64.isa)."""
    return (0xFF000110 | func << 16).to_bytes(4, "little")


def test_the_arm64_guest_tools_carry_gem5s_aarch64_m5_ops(tmp_path):
    tool = arm64_object(REPO / "workloads" / "tools" / "gem5op.c", tmp_path)
    # readfile 0x50, exit 0x21, checkpoint 0x43, work-begin 0x5a and work-end 0x5b
    for func in (0x50, 0x21, 0x43, 0x5A, 0x5B):
        assert m5op_word(func) in tool, hex(func)
    workload = arm64_object(REPO / "workloads" / "falseshare.c", tmp_path)
    for func in (0x5A, 0x5B):  # the region's markers
        assert m5op_word(func) in workload, hex(func)
