"""memlat and stream, compiled natively: their result lines, their own checks, and their
refusals of bad arguments."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc not installed")
    folder = tmp_path_factory.mktemp("bin")

    def compile_one(name: str) -> Path:
        binary = folder / name
        subprocess.run([gcc, "-O2", "-pthread", "-Wall", "-Wextra", "-Werror",
                        f"-I{REPO / 'workloads/include'}", str(REPO / "workloads" / f"{name}.c"),
                        "-o", str(binary)], check=True)
        return binary

    return compile_one


def result(binary: Path, *args: str) -> dict:
    done = subprocess.run([str(binary), *args], capture_output=True, text=True, check=True)
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("MANYLAB-RESULT ")]
    return json.loads(line.split(" ", 1)[1])


def test_memlat_rungs_are_phases_in_order(build):
    out = result(build("memlat"), "--sizes", "4K,64K", "--steps", "1000", "--remote",
                 "--owner", "0")
    assert out["verified"] is True
    rungs = out["rungs"]
    assert [(r["phase"], r["kind"], r["size"], r["lines"]) for r in rungs] == [
        (1, "local", 4096, 64), (2, "local", 65536, 1024), (3, "remote", 4096, 64)]
    assert [r["steps"] for r in rungs] == [1000, 1000, 64]  # remote: one pass over its lines
    assert all(r["ns_per_load"] > 0 for r in rungs)


@pytest.mark.parametrize("args", [["--stride", "12"], ["--sizes", "64"], ["--steps", "0"],
                                  ["--sizes", "4K,1X"], ["--bogus"]])
def test_memlat_refuses_bad_arguments(build, args):
    done = subprocess.run([str(build("memlat")), *args], capture_output=True, text=True)
    assert done.returncode == 2 and "memlat: bad" in done.stderr


def test_stream_counts_bytes_as_stream_does_and_checks_its_arrays(build):
    out = result(build("stream"), "--threads", "3", "--size", "96K", "--reps", "2")
    assert out["verified"] is True and out["elements"] == 96 * 1024 // 8
    per_array = 96 * 1024 * 2  # bytes of one array, times reps
    assert [(k["phase"], k["name"], k["bytes"]) for k in out["kernels"]] == [
        (1, "copy", 2 * per_array), (2, "scale", 2 * per_array),
        (3, "add", 3 * per_array), (4, "triad", 3 * per_array)]


def test_stream_refuses_more_threads_than_elements(build):
    done = subprocess.run([str(build("stream")), "--threads", "5", "--size", "32"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "stream: bad arguments" in done.stderr
