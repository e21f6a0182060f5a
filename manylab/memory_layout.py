"""Where a point's memory lies: its NUMA nodes, their guest-physical ranges in QEMU's order,
and the device of each range as the plugin is told. qemu.py builds the command line from it,
plugin.py the plugin's `mem=` ranges, gem5/system.py the gem5 memory regions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from manylab.params import MachineParams, NumaNode, PointParams
from manylab.units import parse_cpus, parse_size

RAM_BASE_ARM64 = 0x4000_0000
GIB = 1 << 30
# A node of this device is guest RAM the kernel keeps as legacy persistent memory (memmap=!):
# the pmem driver makes it /dev/pmem0, the workload's disk (kernel fragment `pmem`).
STORAGE = "storage"
# The plugin's memory devices (plugin/src/memory.rs), in its order.
DEVICES = ("dram", "mcdram", "pcm", STORAGE)


@dataclass(frozen=True)
class MemRange:
    device: str
    start: int
    size: int


def numa_nodes(machine: MachineParams) -> list[NumaNode]:
    """The point's NUMA nodes; one DRAM node holding every CPU when the spec gives none."""
    if machine.numa:
        return list(machine.numa)
    return [NumaNode(machine.memory, f"0-{machine.vcpus - 1}", "dram")]


def memory_map(arch: str, nodes: Sequence[NumaNode]) -> list[MemRange]:
    """Guest-physical ranges of each node, in QEMU's order (nodes fill RAM one after another).

    q35 keeps RAM below 4 GiB up to 2 GiB when the machine has 2.75 GiB or more (else up to
    2.75 GiB) and puts the rest at 4 GiB; arm64 virt has one contiguous bank at 1 GiB.
    """
    return [r for _, r in node_memory_map(arch, nodes)]


def node_memory_map(arch: str, nodes: Sequence[NumaNode]) -> list[tuple[int, MemRange]]:
    """`memory_map` with each range's node number (QEMU's `nodeid`: the index in `nodes`)."""
    total = sum(parse_size(n.size) for n in nodes)
    if arch == "arm64":
        segments = [(RAM_BASE_ARM64, total)]
    else:
        low = min(total, 2 * GIB if total >= 0xB000_0000 else 0xB000_0000)
        segments = [(0, low)] + ([(4 * GIB, total - low)] if total > low else [])
    ranges: list[tuple[int, MemRange]] = []
    offset = 0
    for index, node in enumerate(nodes):
        want_start, want_end = offset, offset + parse_size(node.size)
        ram_offset = 0
        for base, size in segments:
            lo, hi = max(want_start, ram_offset), min(want_end, ram_offset + size)
            if lo < hi:
                ranges.append((index, MemRange(node.device, base + lo - ram_offset, hi - lo)))
            ram_offset += size
        offset = want_end
    return ranges


def plugin_view(point: PointParams) -> list[MemRange]:
    """Each node's RAM as the plugin sees it: QEMU 10's `qemu_plugin_hwaddr_phys_addr` is the
    guest-physical address (QEMU 7.2 added RAM-block offsets and showed node k at twice its
    base), so the plugin's ranges are the guest's memory map."""
    return memory_map(point.machine.arch, numa_nodes(point.machine))


def storage_cmdline(point: PointParams) -> str:
    """`memmap=SIZE!START` for each range of a storage node, so that the kernel leaves it to
    the pmem driver instead of its page allocator."""
    return " ".join(f"memmap={r.size:#x}!{r.start:#x}" for r in plugin_view(point)
                    if r.device == STORAGE)


def has_storage(machine: MachineParams) -> bool:
    return any(node.device == STORAGE for node in machine.numa)


NodeCpus = list[tuple[int, list[int]]]


def plugin_numa(point: PointParams) -> tuple[list[tuple[int, MemRange]], NodeCpus]:
    """The plugin's view with the guest's NUMA layout: each range with its node, and each node's
    vCPUs (nodes without `cpus` left out). The plugin's SNC cluster modes home node k's memory
    and run node k's vCPUs in cluster k (plugin/README.md "The model")."""
    nodes = numa_nodes(point.machine)
    cpus = [(index, parse_cpus(node.cpus))
            for index, node in enumerate(nodes) if node.cpus is not None]
    return node_memory_map(point.machine.arch, nodes), cpus
