"""Where gem5 is, which gem5 it is, and the command line of one point."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manylab.errors import LabError
from manylab.hashing import sha256_file
from manylab.params import PointParams
from manylab.paths import REPO_ROOT

CONFIGS_DIR = REPO_ROOT / "gem5-configs"
RUN_SCRIPT = CONFIGS_DIR / "run_point.py"
BUILD_TARGET = "X86_MESI_Two_Level"
RUBY_DEFAULT_BITS_PER_SET = 64
RUBY_WIDE_BITS_PER_SET = 256


@dataclass(frozen=True)
class Target:
    """The gem5 build one guest arch needs. gem5 v24 builds one Ruby protocol per binary, and
    the tiers use different ones, so each arch has its own binary: [gem5] binary (the point's
    arch) or the arch's environment variable."""
    build: str  # gem5 build folder (gem5-configs/README.md)
    env: str  # the environment variable naming the binary
    isa: str  # in messages
    isa_option: str  # gem5's build option for the ISA
    protocol: str  # gem5's PROTOCOL build option
    wide_bits: int  # the NUMBER_BITS_PER_SET the README builds with
    widest: str  # the protocol's largest set of controllers of one kind, in messages


TARGETS = {
    "x86_64": Target(BUILD_TARGET, "MANYLAB_GEM5", "x86", "USE_X86_ISA", "MESI_Two_Level",
                     RUBY_WIDE_BITS_PER_SET, "cores"),
    "arm64": Target("ARM_CHI", "MANYLAB_GEM5_ARM", "arm", "USE_ARM_ISA", "CHI", 1024,
                    "CHI cache controllers (an L1I and an L1D per core, the home nodes, DMA)"),
}
BOOTLOADER_ENV = "MANYLAB_GEM5_ARM_BOOTLOADER"
BOOTLOADER = "boot_foundation.arm64"


def binary(point: PointParams) -> Path:
    """The gem5 binary of the point's arch: [gem5] binary, else $MANYLAB_GEM5 (x86_64) or
    $MANYLAB_GEM5_ARM (arm64); a clear error when neither exists."""
    target = TARGETS[point.machine.arch]
    given = point.gem5.binary or os.environ.get(target.env, "")
    if not given:
        raise LabError(f"gem5 not found: set {target.env}=/path/to/build/{target.build}/gem5.opt "
                       "or [gem5] binary in the spec (build gem5 v24 for "
                       f"{target.build}: gem5-configs/README.md)")
    path = Path(given).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise LabError(f"gem5 binary {path} does not exist or is not executable: fix "
                       f"{target.env} or [gem5] binary (gem5-configs/README.md)")
    return path


def bootloader(point: PointParams) -> Path:
    """gem5's arm64 bootloader (users build it: gem5-configs/README.md): [gem5] bootloader,
    else $MANYLAB_GEM5_ARM_BOOTLOADER; a clear error when neither names a file."""
    given = point.gem5.bootloader or os.environ.get(BOOTLOADER_ENV, "")
    if not given:
        raise LabError(f"gem5's arm64 bootloader not found: set {BOOTLOADER_ENV}=/path/to/"
                       f"{BOOTLOADER} or [gem5] bootloader in the spec (build it from gem5's "
                       "system/arm/bootloader/arm64: gem5-configs/README.md)")
    path = Path(given).expanduser()
    if not path.is_file():
        raise LabError(f"gem5 bootloader {path} does not exist: fix {BOOTLOADER_ENV} or [gem5] "
                       "bootloader (gem5-configs/README.md)")
    return path


BUILD_INFO_SCRIPT = CONFIGS_DIR / "build_info.py"
BUILD_INFO_PREFIX = "MANYLAB-GEM5-BUILD "


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
                   f"or gem5.fast built for {BUILD_TARGET} (MANYLAB_GEM5_ARM: built for "
                   f"{TARGETS['arm64'].build})")


def version(path: Path) -> str:
    """`gem5 version 24.0.0.1`, recorded in inputs.json like QEMU's version."""
    return f"gem5 version {build_info(path).get('version', 'unknown')}"


def check_build(path: Path, arch: str = "x86_64", widest: int = 1) -> None:
    """The configs need gem5 v24 built for the arch's ISA and protocol (x86_64: X86 and
    MESI_Two_Level, arm64: ARM and CHI), with Ruby's controller sets wide enough for the
    point's `widest` controllers of one kind: one L1 per core (x86_64); every CHI cache
    controller (arm64: 2 per core, the home nodes and DMA; system.chi_counts)."""
    target = TARGETS[arch]
    info = build_info(path)
    build = info.get("build", {})
    found = str(info.get("version", ""))
    if not found.startswith("24.") or build.get("PROTOCOL") != target.protocol or \
            build.get(target.isa_option) != "True":
        raise LabError(f"{path}: gem5 {found} with ISA {target.isa}="
                       f"{build.get(target.isa_option)} and protocol {build.get('PROTOCOL')}: "
                       f"the lab's configs need gem5 v24 built for {target.build} "
                       "(gem5-configs/README.md)")
    bits = int(build.get("NUMBER_BITS_PER_SET", RUBY_DEFAULT_BITS_PER_SET))
    if widest > bits:
        raise LabError(f"{path}: Ruby's controller sets hold {bits} controllers of a kind "
                       f"(NUMBER_BITS_PER_SET) and the point has {widest} {target.widest}: "
                       f"rebuild gem5 with NUMBER_BITS_PER_SET={target.wide_bits} (scons "
                       "setconfig, gem5-configs/README.md)")


def configs_hashes() -> dict[str, str]:
    return {str(p.relative_to(CONFIGS_DIR)): sha256_file(p)
            for p in sorted(CONFIGS_DIR.rglob("*.py"))}


def argv(gem5: Path, outdir: Path, system_json: Path) -> list[str]:
    return [str(gem5), "--quiet", f"--outdir={outdir}", "--listener-mode=off",
            str(RUN_SCRIPT), str(system_json)]
