"""The thesis's workloads (issue #31) built for the host and run natively at tiny sizes: aim7
(AIM7-multiuser-like) and lmproc (lmbench-like process creation). Their job mix, counts and
rates are checked against hand-computed values, and their result lines go through the lab's
console reader and table flattening."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from manylab.console import ConsoleState
from manylab.results import flatten
from manylab.workloads import REGISTRY, command_line

REPO = Path(__file__).resolve().parents[2]

# AIM7's multiuser (shared system) workfile: test -> weight (total 780), as its suite ships it
WORKFILE = {
    "add_double": 30, "add_float": 30, "add_int": 30, "add_long": 30, "add_short": 30,
    "array_rtns": 10, "brk_test": 10, "creat-clo": 10, "dgram_pipe": 10, "dir_rtns_1": 10,
    "disk_cp": 20, "disk_rd": 20, "disk_rr": 20, "disk_rw": 20, "disk_src": 20, "disk_wrt": 20,
    "div_double": 10, "div_float": 10, "div_int": 10, "div_long": 10, "div_short": 10,
    "exec_test": 20, "fork_test": 10, "jmp_test": 10, "link_test": 10, "matrix_rtns": 10,
    "mem_rtns_1": 10, "mem_rtns_2": 10, "misc_rtns_1": 10, "mul_double": 20, "mul_float": 20,
    "mul_int": 20, "mul_long": 20, "mul_short": 20, "new_raph": 10, "num_rtns_1": 10,
    "page_test": 10, "pipe_cpy": 10, "ram_copy": 10, "series_1": 10, "shared_memory": 10,
    "shell_rtns_1": 20, "sieve": 10, "signal_test": 10, "sort_rtns_1": 10, "stream_pipe": 10,
    "string_rtns": 30, "sync_disk_cp": 10, "sync_disk_rw": 10, "sync_disk_wrt": 10,
    "tcp_test": 10, "trig_rtns": 10, "udp_test": 10,
}
# jobs per user of each weight at AIM7's LOADNUM 100: 30/780*100 = 3.85 -> 4,
# 20/780*100 = 2.56 -> 3, 10/780*100 = 1.28 -> 1 (six 30s, thirteen 20s, thirty-four 10s)
JOBS_AT_100 = {30: 4, 20: 3, 10: 1}
# per user at LOADNUM 100, by category (hand count of the workfile)
CATEGORY_JOBS = {"compute": 55, "memory": 4, "file": 24, "ipc": 7, "process": 7}
# AIM7's loop counts of the process tests: fork_test 100 forks, exec_test 5 execs, shell 1 run
PROCESS_PER_USER_AT_SCALE_1 = 100 * 1 + 5 * 3 + 1 * 3


@pytest.fixture(scope="module")
def binaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    out = tmp_path_factory.mktemp("thesis-workloads")
    built = {}
    for name in ("aim7", "lmproc"):
        built[name] = out / name
        subprocess.run(["gcc", "-static", "-O2", "-pthread", "-Wall", "-Wextra", "-Werror",
                        f"-I{REPO / 'workloads' / 'include'}",
                        str(REPO / "workloads" / f"{name}.c"), "-o", str(built[name])],
                       check=True)
    return built


def run(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=300,
                          check=False)


def result(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert out.returncode == 0, out.stderr
    state = ConsoleState()
    for line in out.stdout.splitlines():
        state.feed(line)
    assert state.bad_results == 0 and state.bad_kstats == 0
    assert set(state.kstats) == {"roi_begin", "roi_end"}  # the ROI opened and closed
    (line,) = state.results
    return line


def aim7_list(binary: Path, jobs: int, *more: str) -> dict[str, Any]:
    out = run(binary, "--list", "--jobs", str(jobs), *more)
    assert out.returncode == 0, out.stderr
    listed: dict[str, Any] = json.loads(out.stdout)
    return listed


@pytest.mark.parametrize("name", ["aim7", "lmproc"])
def test_help_names_every_argument_and_bad_options_exit_2(binaries, name):
    out = run(binaries[name], "--help")
    for key in REGISTRY[name].args:
        assert "--" + key.replace("_", "-") in out.stdout, key
    for bad in (["--no-such-option"], ["extra"]):
        out = run(binaries[name], *bad)
        assert out.returncode == 2 and "MANYLAB-RESULT" not in out.stdout
    assert REGISTRY[name].marks_regions is True


def test_bad_values_exit_2(binaries):
    for args in (["--scale", "0"], ["--scale", "x"], ["--jobs", "0"], ["--users", "-1"]):
        assert run(binaries["aim7"], *args, "--list").returncode == 2, args
    for args in (["--mode", "spawn"], ["--parallel", "0"], ["--iterations", "0"]):
        out = run(binaries["lmproc"], *args)
        assert out.returncode == 2 and "MANYLAB-RESULT" not in out.stdout, args


def test_mix_is_the_workfile_with_aim7s_rounding(binaries):
    listed = aim7_list(binaries["aim7"], 100)
    tests = {t["name"]: t for t in listed["tests"]}
    assert {name: t["weight"] for name, t in tests.items()} == WORKFILE
    assert sum(WORKFILE.values()) == 780
    assert {name: t["jobs"] for name, t in tests.items()} == {
        name: JOBS_AT_100[weight] for name, weight in WORKFILE.items()}
    assert listed["jobs_per_user"] == 6 * 4 + 13 * 3 + 34 * 1 == 97
    by_category: dict[str, int] = {}
    for t in listed["tests"]:
        by_category[t["category"]] = by_category.get(t["category"], 0) + t["jobs"]
    assert by_category == CATEGORY_JOBS
    assert tests["fork_test"]["aim7_count"] == 100 and tests["exec_test"]["aim7_count"] == 5
    # LOADNUM 50: 30 -> 1.92 -> 2, 20 -> 1.28 -> 1, 10 -> 0.64 -> 1 (rounded half up)
    assert aim7_list(binaries["aim7"], 50)["jobs_per_user"] == 6 * 2 + 13 + 34 == 59
    # LOADNUM 200: 30 -> 7.69 -> 8, 20 -> 5.13 -> 5, 10 -> 2.56 -> 3
    assert aim7_list(binaries["aim7"], 200)["jobs_per_user"] == 6 * 8 + 13 * 5 + 34 * 3 == 215
    # at least one job of a test whose share is not zero: LOADNUM 10 -> 53 tests x 1
    assert aim7_list(binaries["aim7"], 10)["jobs_per_user"] == 53


def test_disk_files_follow_filesize_and_poolsize(binaries):
    # AIM7: FILESIZE 1M + POOLSIZE 10M / users, in 1 KB blocks (sync_* tests: half)
    tests = {t["name"]: t for t in aim7_list(binaries["aim7"], 100, "--users", "8")["tests"]}
    assert tests["disk_rr"]["aim7_count"] == 1024 + 10240 // 8 == 2304
    assert tests["sync_disk_wrt"]["aim7_count"] == 2304 // 2


def test_aim7_runs_every_job_and_reports_aim7s_rates(binaries, tmp_path):
    users = 3
    line = result(run(binaries["aim7"], "--users", str(users), "--scale", "0.001",
                      "--seed", "7", "--dir", str(tmp_path)))
    assert line["workload"] == "aim7" and line["ok"] is True and line["failed"] == 0
    assert line["params"] == {"users": users, "jobs": 100, "scale": 0.001, "seed": 7,
                              "dirs": line["params"]["dirs"]}
    assert line["jobs_per_user"] == 97 and line["tests"] == 53
    assert line["jobs"] == line["ops"] == line["expected_jobs"] == users * 97
    assert {k: v["jobs"] for k, v in line["categories"].items()} == {
        k: users * v for k, v in CATEGORY_JOBS.items()}
    elapsed = line["elapsed_s"]
    assert elapsed > 0
    # AIM7: jobs/min = jobs per user / real time * 60 * users (without AIM7's 10 s start delay)
    assert line["jobs_per_min"] == pytest.approx(60 * 97 * users / elapsed, rel=1e-4)
    assert line["jobs_per_s"] == line["ops_per_s"] == pytest.approx(line["jobs_per_min"] / 60,
                                                                    rel=1e-4)
    assert line["jobs_per_s_per_user"] == pytest.approx(97 / elapsed, rel=1e-4)
    assert 0 <= line["jti"] <= 100
    user_s = line["user_s"]
    assert 0 < user_s["min"] <= user_s["mean"] <= user_s["max"] <= elapsed + 1e-6
    # every iteration of a process test forks once; exec_test's also exec, shell_rtns_1's run
    # a shell script
    assert line["forks"] == line["categories"]["process"]["iterations"]
    assert line["forks"] >= line["execs"] + line["shells"]
    assert line["kernel_forks"] >= line["forks"]  # the host's other processes fork too
    assert 0 <= line["idle_share"] <= 1 and line["cpus"] >= 1
    assert line["disk_kb"] == 1024 + 10240 // users
    assert list(tmp_path.iterdir()) == []  # everything it made is gone


def test_aim7_is_deterministic_given_the_seed(binaries, tmp_path):
    def counts(seed: str) -> tuple[Any, ...]:
        line = result(run(binaries["aim7"], "--users", "4", "--scale", "0.002", "--seed",
                          seed, "--dir", str(tmp_path)))
        return (line["categories"], line["forks"], line["execs"], line["shells"])

    assert counts("5") == counts("5")
    assert counts("5") != counts("6")


def test_aim7_scaled_counts_keep_their_expected_value(binaries, tmp_path):
    users, scale = 40, 0.0005
    line = result(run(binaries["aim7"], "--users", str(users), "--scale", str(scale),
                      "--dir", str(tmp_path)))
    listed = aim7_list(binaries["aim7"], 100)
    compute = sum(t["jobs"] * t["aim7_count"] for t in listed["tests"]
                  if t["category"] == "compute")
    # add 4 x (1.5M + 1M + 5M + 5M + 2M), mul 3 x (1M + 1M + 20k + 20k + 25k),
    # div 250k + 250k + 3 x 75k, and 2,196 iterations of the small compute tests
    assert compute == 58_000_000 + 6_195_000 + 725_000 + 2_196
    expected = users * compute * scale
    # each job's count is rounded up or down at random: the sum stays within a job's rounding
    # per job of the 55 x 40 compute jobs, and in practice much closer to its mean
    got = line["categories"]["compute"]["iterations"]
    assert abs(got - expected) <= users * CATEGORY_JOBS["compute"]
    assert got == pytest.approx(expected, rel=0.002)


def test_aim7_scale_1_process_counts_are_aim7s(binaries):
    listed = aim7_list(binaries["aim7"], 100)
    per_user = sum(t["jobs"] * t["aim7_count"] for t in listed["tests"]
                   if t["category"] == "process")
    assert per_user == PROCESS_PER_USER_AT_SCALE_1 == 118


@pytest.mark.parametrize("mode,test", [("fork", "Process fork+exit"),
                                       ("exec", "Process fork+execve"),
                                       ("shell", "Process fork+/bin/sh -c")])
def test_lmproc_counts_and_rates(binaries, mode, test):
    copies, iterations = 3, 5
    line = result(run(binaries["lmproc"], "--mode", mode, "--parallel", str(copies),
                      "--iterations", str(iterations), "--warmup", "1"))
    assert line["workload"] == "lmproc" and line["ok"] is True and line["failed"] == 0
    assert line["params"] == {"mode": mode, "parallel": copies, "iterations": iterations,
                              "warmup": 1}
    assert line["test"] == test and line["copies"] == copies
    assert line["ops"] == copies * iterations
    assert line["ops_per_s"] == pytest.approx(line["ops"] / line["elapsed_s"], rel=1e-3)
    assert 0 < line["us_per_op_min"] <= line["us_per_op"] <= line["us_per_op_max"]
    assert line["us_per_op_min"] <= line["us_per_op_mean"] <= line["us_per_op_max"]
    # a copy's loop lies inside the ROI: its time per operation is at most the ROI's per copy
    assert line["us_per_op_max"] <= line["elapsed_s"] / iterations * 1e6 * 1.0001
    assert line["kernel_forks"] >= line["ops"]


AIM7_LINE = ('MANYLAB-RESULT {"workload": "aim7", "params": {"users": 2, "jobs": 100, '
             '"scale": 0.01, "seed": 1, "dirs": 2}, "jobs_per_user": 97, "tests": 53, '
             '"expected_jobs": 194, "jobs": 194, "ops": 194, "failed": 0, "elapsed_s": 0.5, '
             '"jobs_per_min": 23280.000, "jobs_per_s": 388.000, "ops_per_s": 388.000, '
             '"jobs_per_s_per_user": 194.000000, "jti": 90, "user_s": {"min": 0.45, '
             '"mean": 0.475, "max": 0.5}, "disk_kb": 6144, "common_kb": 62, "categories": '
             '{"compute": {"jobs": 110, "iterations": 1298443}, "process": {"jobs": 14, '
             '"iterations": 3}}, "forks": 3, "execs": 0, "shells": 1, "kernel_forks": 5, '
             '"idle_share": 0.25, "cpus": 2, "cpu_s": 0.75, "ok": true}')


def test_a_result_line_becomes_table_columns():
    state = ConsoleState()
    state.feed("[    1.234567] " + AIM7_LINE)
    (line,) = state.results
    row: dict[str, Any] = {}
    flatten(line, "result", row)
    # 60 s x 97 jobs x 2 users / 0.5 s = 23,280 jobs per minute; / 60 = 388 per second
    assert row["result.jobs_per_min"] == 60 * 97 * 2 / 0.5 == 23280
    assert row["result.ops_per_s"] == 388
    assert row["result.categories.process.iterations"] == 3
    assert row["result.user_s.mean"] == 0.475
    assert row["result.params.scale"] == 0.01


def test_command_lines():
    assert command_line("aim7", {"users_per_cpu": 4, "scale": 0.02, "seed": 1}) == (
        'aim7 --users-per-cpu 4 --scale 0.02 --seed 1 --dir "$MANYLAB_WORKDIR"')
    assert command_line("lmproc", {"mode": "shell", "parallel": 1000, "iterations": 10}) == (
        "lmproc --mode shell --parallel 1000 --iterations 10")
