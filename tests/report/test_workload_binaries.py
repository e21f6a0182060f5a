"""Each C workload built for the host and run natively at tiny sizes: its --help names every
argument the lab passes, bad arguments exit 2 without a result line, and its MANYLAB-RESULT line
parses through the lab's console reader with the fields the reports read."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from manylab.console import ConsoleState
from manylab.workloads import REGISTRY

REPO = Path(__file__).resolve().parents[2]
COMPILED = ("pwriter", "forkbench", "falseshare", "lrustress", "forkstress", "contention",
            "ldustress", "serialprobe", "umountrace")


@pytest.fixture(scope="module")
def binaries(tmp_path_factory) -> dict[str, Path]:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    out = tmp_path_factory.mktemp("workloads")
    built = {}
    for name in COMPILED:
        built[name] = out / name
        subprocess.run(["gcc", "-static", "-O2", "-pthread", "-Wall", "-Werror",
                        f"-I{REPO / 'workloads' / 'include'}",
                        str(REPO / "workloads" / f"{name}.c"), "-o", str(built[name])],
                       check=True)
    return built


def run(binary: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120,
                          check=False, cwd=cwd)


def parsed(stdout: str) -> ConsoleState:
    state = ConsoleState()
    for line in stdout.splitlines():
        state.feed(line)
    assert state.bad_results == 0
    return state


@pytest.mark.parametrize("name", COMPILED)
def test_help_names_every_argument_the_lab_passes(binaries, name):
    out = run(binaries[name], "--help")
    text = out.stdout + out.stderr
    for key in REGISTRY[name].args:
        assert "--" + key.replace("_", "-") in text, key


@pytest.mark.parametrize("name", COMPILED)
def test_an_unknown_option_exits_2_without_a_result(binaries, name):
    out = run(binaries[name], "--no-such-option")
    assert out.returncode == 2
    assert "MANYLAB-RESULT" not in out.stdout


def test_pwriter_writes_reads_and_verifies(binaries, tmp_path):
    out = run(binaries["pwriter"], "--procs", "3", "--size", "64K", "--pattern", "rand",
              "--read", "--dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    (line,) = parsed(out.stdout).results
    assert line["workload"] == "pwriter" and line["ok"] is True and line["verified"] is True
    assert line["write"]["bytes"] == 3 * 64 * 1024 and line["write"]["mismatches"] == 0
    assert line["write"]["aggregate_mib_s"] > 0 and line["read"]["aggregate_mib_s"] > 0
    assert line["pin"] is False
    pinned = run(binaries["pwriter"], "--procs", "3", "--size", "64K", "--read", "--pin",
                 "--dir", str(tmp_path))
    assert pinned.returncode == 0, pinned.stderr
    (line,) = parsed(pinned.stdout).results
    assert line["pin"] is True and line["verified"] is True


@pytest.mark.parametrize("mode", ["fork", "aim7"])
def test_forkbench_counts_operations(binaries, tmp_path, mode):
    out = run(binaries["forkbench"], "--mode", mode, "--workers", "2", "--iterations", "5",
              "--warmup", "0", "--dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    (line,) = parsed(out.stdout).results
    assert line["workload"] == "forkbench" and line["ok"] is True
    assert line["params"] == {**line["params"], "mode": mode, "workers": 2, "iterations": 5}
    assert line["ops"] == 10 and line["failed"] == 0 and line["ops_per_s"] > 0
    if mode == "aim7":
        assert sum(line["tasks"].values()) == 10


def test_contention_counts_and_verifies_every_loop(binaries):
    out = run(binaries["contention"], "--threads", "2", "--iters", "20000", "--cs", "2")
    assert out.returncode == 0, out.stderr
    (line,) = parsed(out.stdout).results
    assert line["workload"] == "contention" and line["verified"] is True
    assert line["ops_per_loop"] == 40000
    for loop in ("atomic", "lock", "padded"):
        assert 0 <= line[f"{loop}_handoffs"] < 40000
        assert line[f"{loop}_handoffs_per_1000"] == pytest.approx(
            1000 * line[f"{loop}_handoffs"] / 40000, abs=1e-3)
    assert "atomic_contended" not in line
    assert line["lock_contended_share"] == pytest.approx(line["lock_contended"] / 40000,
                                                          abs=1e-5)
    # one lock per thread on its own line: nobody ever waits or takes over
    assert line["padded_handoffs"] == 0 and line["padded_contended"] == 0


def test_contention_runs_one_loop_alone(binaries):
    out = run(binaries["contention"], "--threads", "3", "--iters", "1000", "--mode", "lock")
    (line,) = parsed(out.stdout).results
    assert "lock_handoffs" in line and "atomic_handoffs" not in line
    assert "padded_handoffs" not in line and line["verified"] is True


def test_serialprobe_runs_every_phase_with_one_checksum(binaries):
    out = run(binaries["serialprobe"], "--threads", "2", "--sections", "2", "--work", "1000")
    assert out.returncode == 0, out.stderr
    (line,) = parsed(out.stdout).results
    assert line["workload"] == "serialprobe" and line["verified"] is True
    assert (line["threads"], line["sections"], line["work"], line["lock"]) == (2, 2, 1000, "all")
    assert line["phases"] == ["serial", "spin", "mutex", "none"]
    assert [line[f"{p}_phase"] for p in line["phases"]] == [1, 2, 3, 4]
    assert line["sections_per_phase"] == 4
    for lock in ("spin", "mutex"):
        assert 0 <= line[f"{lock}_contended"] <= 4
        assert line[f"{lock}_contended_share"] == pytest.approx(line[f"{lock}_contended"] / 4)
    assert "none_contended" not in line and "serial_contended" not in line
    assert len(line["checksum"]) == 16 and int(line["checksum"], 16)


def test_serialprobe_keeps_phase_numbers_and_the_checksum_for_one_lock(binaries):
    out = run(binaries["serialprobe"], "--threads", "3", "--sections", "2", "--work", "1000")
    full = parsed(out.stdout).results[0]
    out = run(binaries["serialprobe"], "--threads", "3", "--sections", "2", "--work", "1000",
              "--lock", "mutex", "--no-pin")
    assert out.returncode == 0, out.stderr
    (line,) = parsed(out.stdout).results
    assert line["phases"] == ["serial", "mutex"] and line["mutex_phase"] == 3
    assert "spin_s" not in line and "none_s" not in line and line["pin"] is False
    # the sections' arithmetic depends on (thread, section) only, not on the phase or the lock
    assert line["checksum"] == full["checksum"] and line["verified"] is True


def test_ldustress_races_forks_and_truncation_on_the_host(binaries, tmp_path):
    # --min-*: past the 2 s, until one truncation check was conclusive and three forks were made
    # (a loaded host may not finish them in 2 s; the workload stops at 20 s regardless)
    out = run(binaries["ldustress"], "--duration", "2", "--forkers", "1", "--movers", "0",
              "--hold-us", "20000", "--min-file-checks", "1", "--min-forks", "3",
              "--dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    (line,) = parsed(out.stdout).results
    assert line["workload"] == "ldustress" and line["verified"] is True and line["failure"] == ""
    assert line["forks"] >= 3 and line["children_ok"] == line["forks"]
    assert line["mremaps"] >= line["forks"] and line["file_checks"] > 0
    assert line["leftover_entries"] == 0 and line["hangs"] == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="umountrace mounts tmpfs: needs root")
def test_umountrace_mounts_maps_and_unmounts_on_the_host(binaries, tmp_path):
    out = run(binaries["umountrace"], "--dir", str(tmp_path), "--duration", "1",
              "--workers", "2", "--files", "3", "--pages", "2", "--fork")
    assert out.returncode == 0, out.stderr
    (line,) = parsed(out.stdout).results
    assert line["workload"] == "umountrace" and line["verified"] is True, line
    assert line["cycles"] > 0 and line["mappings"] == 3 * line["cycles"] == line["children"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # mount points unmounted, removed
    # a failed call fails the run and is named
    out = run(binaries["umountrace"], "--dir", str(tmp_path / "missing"), "--duration", "1",
              "--workers", "1")
    (line,) = parsed(out.stdout).results
    assert out.returncode == 1 and line["verified"] is False
    assert line["failure"].startswith("mkdir") and "missing/m0" in line["failure"], line


def test_bad_values_exit_2(binaries):
    assert run(binaries["contention"], "--mode", "spin").returncode == 2
    assert run(binaries["serialprobe"], "--lock", "ticket").returncode == 2
    assert run(binaries["serialprobe"], "--sections", "0").returncode == 2
    # manylab_threads.h: an integer in range, the whole text, or exit 2 naming the option
    for bad in ("0", "12x", "", "600"):
        out = run(binaries["contention"], "--threads", bad)
        assert out.returncode == 2 and "--threads" in out.stderr, bad
    assert run(binaries["falseshare"], "--iters", "1e3").returncode == 2
    assert run(binaries["pwriter"], "--size", "5000", "--block", "4096").returncode == 2
    assert run(binaries["forkbench"], "--mode", "spawn").returncode == 2
    assert run(binaries["ldustress"], "--file-size", "5000").returncode == 2
    assert run(binaries["ldustress"], "--filers", "0", "--min-file-checks", "1").returncode == 2
    assert run(binaries["ldustress"], "--forkers", "0", "--min-forks", "1").returncode == 2
    assert run(binaries["ldustress"], "--movers", "0", "--min-pages-moved", "1").returncode == 2
    assert run(binaries["umountrace"], "--duration", "1").returncode == 2  # no --dir
    assert run(binaries["umountrace"], "--dir", "/tmp", "--pages", "0").returncode == 2
