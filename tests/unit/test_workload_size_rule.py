"""The workloads' one size rule (workloads/include/manylab_util.h), compiled natively and
checked on hand-computed cases, and a workload refusing a size the rule rejects."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INCLUDE = REPO / "workloads" / "include"

PROBE = r"""
#include <inttypes.h>
#include "manylab_util.h"
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		uint64_t v = 7;
		if (manylab_parse_size(argv[i], &v))
			printf("error\n");
		else
			printf("%" PRIu64 "\n", v);
	}
	return 0;
}
"""

CASES = {
    "4096": "4096", "0": "0", "64K": "65536", "64k": "65536", "8m": "8388608",
    "2G": "2147483648", "18446744073709551615": "18446744073709551615",
    "17179869183G": str(17179869183 << 30),
    "": "error", "1.5M": "error", "-1": "error", "+4": "error", "4X": "error",
    "4KB": "error", " 4": "error", "4 ": "error", "K": "error",
    "18446744073709551616": "error", "17179869184G": "error",
}


@pytest.fixture(scope="module")
def gcc() -> str:
    path = shutil.which("gcc")
    if path is None:
        pytest.skip("gcc not installed")
    return path


def test_size_rule_on_hand_computed_cases(gcc, tmp_path):
    source = tmp_path / "probe.c"
    source.write_text(PROBE)
    binary = tmp_path / "probe"
    subprocess.run([gcc, "-O2", "-Wall", "-Werror", f"-I{INCLUDE}", str(source), "-o",
                    str(binary)], check=True)
    out = subprocess.run([str(binary), *CASES], capture_output=True, text=True, check=True)
    assert dict(zip(CASES, out.stdout.splitlines(), strict=True)) == CASES


def test_a_workload_refuses_a_bad_suffix(gcc, tmp_path):
    binary = tmp_path / "lrustress"
    subprocess.run([gcc, "-static", "-O2", "-pthread", "-Wall", "-Werror", f"-I{INCLUDE}",
                    str(REPO / "workloads" / "lrustress.c"), "-o", str(binary)], check=True)
    out = subprocess.run([str(binary), "--size", "4X"], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 2
    assert "bad size '4X' for --size" in out.stderr
