"""workloads/mmf.c built for the host and run natively with tiny sizes; its lab registration."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from manylab import plan, workloads
from manylab import spec as specs
from manylab.errors import LabError

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "workloads" / "mmf.c"


@pytest.fixture(scope="module")
def mmf(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed")
    binary = tmp_path_factory.mktemp("mmf") / "mmf"
    subprocess.run(["gcc", "-static", "-O2", "-pthread", "-Wall", "-Werror",
                    f"-I{REPO / 'workloads' / 'include'}", str(SOURCE), "-o", str(binary)],
                   check=True)
    return binary


def run(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120,
                          check=False)


def results(stdout: str) -> list[dict]:
    lines = [line for line in stdout.splitlines() if line.startswith("MANYLAB-RESULT ")]
    return [json.loads(line.split(" ", 1)[1]) for line in lines]


def test_help_lists_every_option(mmf):
    out = run(mmf, "--help")
    assert out.returncode == 0
    for option in ("--path", "--method", "--open", "--sizes", "--transfers", "--warmup",
                   "--buffer", "--verify", "--dir"):
        assert option in out.stdout


@pytest.mark.parametrize("args", [["--path", "pipes"], ["--method", "mmap"], ["--open", "x"],
                                  ["--sizes", "0"], ["--sizes", "1K,,"], ["--sizes", "12Q"],
                                  ["--transfers", "0"], ["--warmup", "-1"], ["--verify", "some"],
                                  ["extra"]])
def test_bad_arguments_exit_2(mmf, args):
    out = run(mmf, *args)
    assert out.returncode == 2 and "mmf: bad arguments" in out.stderr and out.stdout == ""


def test_every_combination_transfers_verified_bytes(mmf, tmp_path):
    out = run(mmf, "--sizes", "1K,3001,70K", "--transfers", "3", "--warmup", "1",
              "--dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    lines = results(out.stdout)
    assert len(lines) == 3 * 3 * 2 * 2
    seen = {(r["path"], r["method"], r["open"], r["size"]) for r in lines}
    assert len(seen) == 36
    for r in lines:
        assert r["workload"] == "mmf" and r["ok"] is True and r["verified"] is True
        assert r["mismatches"] == 0
        assert r["bytes"] == 3 * r["size"]
        assert r["verified_bytes"] == 4 * r["size"]  # warm-up transfer checked too
        assert r["transfers"] == 3 and r["warmup"] == 1 and r["dir"] == str(tmp_path)
        assert r["seconds"] > 0 and r["throughput_mib_s"] > 0
        lat = r["latency_us"]
        assert 0 < lat["min"] <= lat["p50"] <= lat["max"] and lat["min"] <= lat["mean"]
        assert r["server"]["served"] == 3
        server = r["server"]
        if r["open"] == "l_open":
            assert server["setup_once_us"] > 0 and server["open_us_mean"] == 0
        else:
            assert server["open_us_mean"] > 0 and server["close_us_mean"] > 0
            mapped = r["method"] == "mmf"
            assert (server["mmap_us_mean"] > 0) == mapped
            assert (server["munmap_us_mean"] > 0) == mapped
            steps = sum(server[f"{k}_us_mean"] for k in ("open", "mmap", "munmap", "close"))
            assert steps <= server["setup_us_mean"] + 0.01
    assert [r["index"] for r in lines] == list(range(36))
    assert list(tmp_path.iterdir()) == []  # served files removed


def test_selection_and_first_only_verification(mmf, tmp_path):
    out = run(mmf, "--path", "unix,tcp", "--method", "mmf", "--open", "n_open", "--sizes", "4K",
              "--transfers", "5", "--warmup", "0", "--verify", "first", "--dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    lines = results(out.stdout)
    assert [(r["path"], r["method"], r["open"]) for r in lines] == \
        [("unix", "mmf", "n_open"), ("tcp", "mmf", "n_open")]
    assert all(r["verified_bytes"] == 4096 and r["verify"] == "first" for r in lines)
    # a fresh mapping per request faults its page in every time
    assert all(r["server"]["minflt_per_transfer"] >= 1 for r in lines)


def test_unwritable_directory_fails_with_a_result_line(mmf, tmp_path):
    out = run(mmf, "--path", "pipe", "--sizes", "1K", "--transfers", "1",
              "--dir", str(tmp_path / "no" / "such"))
    assert out.returncode == 1
    lines = results(out.stdout)
    assert lines and all(r["ok"] is False and r["error"] == "create the file" for r in lines)


def test_registry_command_line_and_validation():
    args = {"path": "pipe", "method": "all", "open": "all", "sizes": "1K,64K", "transfers": 20}
    workloads.check_args(Path("s.toml"), "mmf", args)
    line = workloads.command_line("mmf", args)
    assert line == ("mmf --path pipe --method all --open all --sizes 1K,64K --transfers 20"
                    ' --dir "$MANYLAB_WORKDIR"')
    with pytest.raises(LabError, match="not one of"):
        workloads.check_args(Path("s.toml"), "mmf", {"path": "socket"})
    with pytest.raises(LabError, match="has no argument"):
        workloads.check_args(Path("s.toml"), "mmf", {"size": "1K"})


def test_the_study_spec_plans():
    spec = specs.load(REPO / "runs" / "mmf.toml")
    points = plan.points(spec)
    assert len(points) == 18 and spec.repeats >= 3
    assert {p.params["workload"]["args"]["path"] for p in points} == {"pipe", "unix", "tcp"}
    full = plan.points(specs.load(REPO / "runs" / "mmf.toml", "full"))
    sizes = full[0].params["workload"]["args"]["sizes"].split(",")
    assert sizes[0] == "1K" and sizes[-1] == "30M"
    assert full[0].params["workload"]["args"]["transfers"] == 1000
    icount = specs.load(REPO / "runs" / "mmf.toml", "icount")
    assert icount.name == "mmf-icount" and len(plan.points(icount)) == 9
