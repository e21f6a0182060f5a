"""pwriter, compiled natively: a clean write and read verifies; a flipped byte, a block moved
to another offset and a block from another writer's file each fail the check."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCK = 4096


@pytest.fixture(scope="module")
def pwriter(tmp_path_factory) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc not installed")
    binary = tmp_path_factory.mktemp("bin") / "pwriter"
    subprocess.run([gcc, "-O2", "-Wall", "-Wextra", "-Werror", f"-I{REPO / 'workloads/include'}",
                    str(REPO / "workloads" / "pwriter.c"), "-o", str(binary)], check=True)
    return binary


def run(binary: Path, *args: str) -> tuple[int, dict]:
    done = subprocess.run([str(binary), *args], capture_output=True, text=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("MANYLAB-RESULT "))
    return done.returncode, json.loads(line.split(" ", 1)[1])


def keep_files(binary: Path, folder: Path) -> tuple[Path, Path]:
    code, result = run(binary, "-n", "2", "-s", "64K", "-p", "rand", "-k", "-d", str(folder))
    assert code == 0 and result["write"]["bytes"] == 2 * 65536
    return folder / "pwriter.0", folder / "pwriter.1"


def read_back(binary: Path, folder: Path) -> tuple[int, dict]:
    return run(binary, "-n", "2", "-s", "64K", "-R", "-d", str(folder))


def test_clean_files_verify(pwriter, tmp_path):
    code, result = run(pwriter, "-n", "3", "-s", "256K", "-p", "rand", "-r", "-d", str(tmp_path))
    assert code == 0 and result["verified"] is True and result["read"]["mismatches"] == 0
    assert result["read"]["bytes"] == 3 * 256 * 1024


def test_a_flipped_byte_fails(pwriter, tmp_path):
    first, _ = keep_files(pwriter, tmp_path)
    data = bytearray(first.read_bytes())
    data[5 * BLOCK + 1000] ^= 0x40
    first.write_bytes(bytes(data))
    code, result = read_back(pwriter, tmp_path)
    assert code == 1 and result["verified"] is False and result["read"]["mismatches"] == 1


def test_a_block_at_the_wrong_offset_fails(pwriter, tmp_path):
    first, _ = keep_files(pwriter, tmp_path)
    data = bytearray(first.read_bytes())
    data[2 * BLOCK:3 * BLOCK] = data[7 * BLOCK:8 * BLOCK]
    first.write_bytes(bytes(data))
    code, result = read_back(pwriter, tmp_path)
    assert code == 1 and result["read"]["mismatches"] >= 1


def test_a_block_of_another_file_fails(pwriter, tmp_path):
    first, second = keep_files(pwriter, tmp_path)
    data = bytearray(first.read_bytes())
    data[3 * BLOCK:4 * BLOCK] = second.read_bytes()[3 * BLOCK:4 * BLOCK]
    first.write_bytes(bytes(data))
    code, result = read_back(pwriter, tmp_path)
    assert code == 1 and result["read"]["mismatches"] > 1  # header and body both differ


def test_a_block_size_the_header_does_not_fit_is_refused(pwriter, tmp_path):
    for block in ("8", "100"):
        done = subprocess.run([str(pwriter), "-b", block, "-s", "800", "-d", str(tmp_path)],
                              capture_output=True, text=True)
        assert done.returncode == 2 and "multiple of 8 from 16" in done.stderr
