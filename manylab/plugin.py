"""The hook to the machine-model QEMU plugin (plugin/): where it is and what it is told."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from manylab.errors import LabError
from manylab.hashing import sha256_file
from manylab.paths import PLUGIN_DIR
from manylab.qemu import RAM_BASE_ARM64, MemRange, numa_nodes
from manylab.spec import parse_size


def library() -> Path:
    override = os.environ.get("MANYLAB_PLUGIN")
    path = Path(override) if override else PLUGIN_DIR / "target/release/libmanylab_plugin.so"
    if not path.is_file():
        raise LabError(f"QEMU plugin {path} is not built: run scripts/setup.sh "
                       "(cargo build --release in plugin/)")
    return path


def plugin_view(point: dict[str, Any]) -> list[MemRange]:
    """Each node's RAM as QEMU 7.2's plugin API reports it, which is not guest-physical.

    qemu_plugin_hwaddr_phys_addr returns ram_block.offset + offset + memory_region.addr. With
    one memory-backend-ram per NUMA node, node k's block and its region inside the machine's RAM
    container both sit at the node's RAM base b_k, so node k appears at 2 * b_k (measured on
    x86 q35 and arm64 virt: accesses bound to node 1 of 2 x 512 MiB arrive at 0x40000000).
    Without NUMA nodes there is one block: x86 reports RAM offsets (0..size, the PCI hole
    closed), arm64 virt the true addresses from 1 GiB.
    """
    machine = point["machine"]
    if not machine["numa"]:
        base = RAM_BASE_ARM64 if machine["arch"] == "arm64" else 0
        return [MemRange("dram", base, parse_size(machine["memory"]))]
    ranges = []
    ram_base = 0
    for node in numa_nodes(machine):
        size = parse_size(node["size"])
        ranges.append(MemRange(node.get("device", "dram"), 2 * ram_base, size))
        ram_base += size
    return ranges


def wanted(point: dict[str, Any]) -> bool:
    """The plugin loads for the model, or only for the vCPU switch every quantum instructions."""
    return bool(point["plugin"]["enabled"] or point["machine"]["quantum"])


def _flag(value: bool) -> str:
    return "on" if value else "off"


def arguments(point: dict[str, Any], stats_out: Path, system_map: Path) -> list[str]:
    """The plugin's key=value arguments for one point (QEMU's -plugin option, after the path)."""
    settings = point["plugin"]
    machine = point["machine"]
    mode = settings["mode"] if settings["enabled"] else "none"
    args = [f"out={stats_out}", f"preset={settings['preset']}", f"mode={mode}",
            f"roi={_flag(settings['roi'])}", f"checker={_flag(settings['checker'])}",
            f"sysmap={system_map}", f"quantum={machine['quantum']}",
            f"quantum_shared={machine['quantum_shared']}"]
    for mem in plugin_view(point):
        args.append(f"mem={mem.device}:{mem.start:#x}:{mem.size:#x}")
    for key, value in sorted(settings["set"].items()):
        text = _flag(value) if isinstance(value, bool) else str(value)
        args.append(f"set.{key}={text}")
    return args


def qemu_argument(library_path: Path, args: list[str]) -> str:
    """QEMU's -plugin value; commas inside values are doubled as QEMU's option parser wants."""
    return ",".join([str(library_path)] + [a.replace(",", ",,") for a in args])


def describe(library_path: Path) -> dict[str, str]:
    return {"library": str(library_path), "sha256": sha256_file(library_path)}
