"""A preset's machine as the plugin describes it (`manylab-machine`, built with the plugin).

The plugin's Rust parameters are the one description of each chip: the gem5 tier asks the
plugin's own code for the mesh, tiles, caches, memory controllers and vCPU placement instead
of keeping a second copy in Python.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manylab.crate_build import built
from manylab.errors import LabError

Pos = tuple[int, int]


def describer() -> Path:
    return built("MANYLAB_MACHINE_BIN", "manylab-machine", "the machine describer")


def positions(text: str) -> list[Pos]:
    """`r:c/r:c/...` (the plugin's position lists) -> [(r, c), ...]; `none` -> []."""
    if text in ("", "none"):
        return []
    out: list[Pos] = []
    for item in text.split("/"):
        row, col = item.split(":")
        out.append((int(row), int(col)))
    return out


@dataclass(frozen=True)
class Machine:
    params: dict[str, Any]
    vcpus: int
    tiles: list[Pos]
    vcpu_core: list[int]
    core_tile: list[int]
    ddr_mc_of_quadrant: list[Pos]
    mcdram_mc_of_quadrant: list[Pos]

    @property
    def rows(self) -> int:
        return int(self.params["mesh.rows"])

    @property
    def cols(self) -> int:
        return int(self.params["mesh.cols"])

    def vcpu_tile(self, vcpu: int) -> Pos:
        return self.tiles[self.core_tile[self.vcpu_core[vcpu]]]


def from_json(data: dict[str, Any]) -> Machine:
    return Machine(
        params=data["machine"], vcpus=int(data["vcpus"]), tiles=positions(data["tiles"]),
        vcpu_core=[int(c) for c in data["vcpu_core"]],
        core_tile=[int(t) for t in data["core_tile"]],
        ddr_mc_of_quadrant=positions(data["ddr_mc_of_quadrant"]),
        mcdram_mc_of_quadrant=positions(data["mcdram_mc_of_quadrant"]))


def describe(preset: str, vcpus: int, overrides: dict[str, Any]) -> Machine:
    argv = [str(describer()), preset, "--vcpus", str(vcpus)]
    for key, value in sorted(overrides.items()):
        text = ("on" if value else "off") if isinstance(value, bool) else str(value)
        argv += ["--set", f"{key}={text}"]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise LabError(f"plugin preset {preset!r}: {result.stderr.strip()}")
    return from_json(json.loads(result.stdout))
