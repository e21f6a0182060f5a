"""Where gem5 is, which gem5 it is, and the command line of one point."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from manylab.errors import LabError
from manylab.hashing import sha256_file
from manylab.params import PointParams
from manylab.paths import REPO_ROOT

CONFIGS_DIR = REPO_ROOT / "gem5-configs"
RUN_SCRIPT = CONFIGS_DIR / "run_point.py"
BUILD_TARGET = "X86_MESI_Two_Level"


def binary(point: PointParams) -> Path:
    """The gem5 binary: [gem5] binary, else $MANYLAB_GEM5; a clear error when neither exists."""
    given = point.gem5.binary or os.environ.get("MANYLAB_GEM5", "")
    if not given:
        raise LabError(f"gem5 not found: set MANYLAB_GEM5=/path/to/build/{BUILD_TARGET}/gem5.opt "
                       "or [gem5] binary in the spec (build gem5 v24 for "
                       f"{BUILD_TARGET}: gem5-configs/README.md)")
    path = Path(given).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise LabError(f"gem5 binary {path} does not exist or is not executable: fix "
                       "MANYLAB_GEM5 or [gem5] binary (gem5-configs/README.md)")
    return path


BUILD_INFO_SCRIPT = CONFIGS_DIR / "build_info.py"
BUILD_INFO_PREFIX = "MANYLAB-GEM5-BUILD "
RUBY_DEFAULT_BITS_PER_SET = 64
RUBY_WIDE_BITS_PER_SET = 256


@functools.cache
def build_info(path: Path) -> dict[str, Any]:
    """The binary's version and build options, from gem5-configs/build_info.py run by it
    (gem5 v24.0's own --build-info fails)."""
    with tempfile.TemporaryDirectory(prefix="manylab-gem5-info-") as outdir:
        result = subprocess.run([str(path), "--quiet", f"--outdir={outdir}",
                                 "--listener-mode=off", str(BUILD_INFO_SCRIPT)],
                                capture_output=True, text=True, check=False, timeout=300)
    for line in result.stdout.splitlines():
        if line.startswith(BUILD_INFO_PREFIX):
            value = json.loads(line[len(BUILD_INFO_PREFIX):])
            if isinstance(value, dict):
                return value
    last = (result.stderr.strip().splitlines() or ["no output"])[-1]
    raise LabError(f"{path}: not a usable gem5 binary ({last}): set MANYLAB_GEM5 to gem5.opt "
                   f"or gem5.fast built for {BUILD_TARGET}")


def version(path: Path) -> str:
    """`gem5 version 24.0.0.1`, recorded in inputs.json like QEMU's version."""
    return f"gem5 version {build_info(path).get('version', 'unknown')}"


def check_build(path: Path, cores: int = 1) -> None:
    """The configs need gem5 v24 built with the X86 ISA and the MESI_Two_Level protocol, and
    Ruby's controller sets wide enough for one L1 controller per core."""
    info = build_info(path)
    build = info.get("build", {})
    found = str(info.get("version", ""))
    if not found.startswith("24.") or build.get("PROTOCOL") != "MESI_Two_Level" or \
            build.get("USE_X86_ISA") != "True":
        raise LabError(f"{path}: gem5 {found} with ISA x86={build.get('USE_X86_ISA')} and "
                       f"protocol {build.get('PROTOCOL')}: the lab's configs need gem5 v24 "
                       f"built for {BUILD_TARGET} (gem5-configs/README.md)")
    bits = int(build.get("NUMBER_BITS_PER_SET", RUBY_DEFAULT_BITS_PER_SET))
    if cores > bits:
        raise LabError(f"{path}: Ruby's controller sets hold {bits} controllers of a kind "
                       f"(NUMBER_BITS_PER_SET) and the point has {cores} cores: rebuild gem5 "
                       f"with NUMBER_BITS_PER_SET={RUBY_WIDE_BITS_PER_SET} (scons "
                       f"menuconfig, gem5-configs/README.md)")


def configs_hashes() -> dict[str, str]:
    return {str(p.relative_to(CONFIGS_DIR)): sha256_file(p)
            for p in sorted(CONFIGS_DIR.rglob("*.py"))}


def argv(gem5: Path, outdir: Path, system_json: Path) -> list[str]:
    return [str(gem5), "--quiet", f"--outdir={outdir}", "--listener-mode=off",
            str(RUN_SCRIPT), str(system_json)]
