"""A point -> the gem5 system it runs on: a JSON description that gem5-configs/run_point.py
turns into gem5 standard-library components. Pure data: testable without gem5.

Mapping of the plugin's machine onto gem5's Ruby MESI_Two_Level protocol (x86_64; CHI for
arm64, ARM_DIFFERENCES) and Garnet:
- one Garnet router per mesh site (rows x cols, row-major ids), disabled sites included (they
  still route), plus one router per memory controller that sits outside the grid, one link
  from its edge site, so a memory access crosses the same number of links as in the plugin;
- each vCPU is one gem5 core whose L1 (I and D) controller sits at its tile's router;
- MESI_Two_Level's shared L2 is address-interleaved over a power-of-two number of banks, one
  per tile on the first such tiles (all tiles on every preset but altra-80);
- one directory per memory channel at its controller's router; each NUMA node of the point is
  a memory region of its device, interleaved over that device's controllers (the first 2^k
  of them: gem5 interleaves channels by address bits).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manylab.backends.gem5 import checkpoint
from manylab.backends.gem5.machine import Machine, Pos, positions
from manylab.backends.guest import LAB_CMDLINE, READY_POINT_CMDLINE
from manylab.memory_layout import numa_nodes
from manylab.params import PointParams
from manylab.units import parse_size

SYSTEM_FORMAT = 1
HZ = 100
# X86Board maps all RAM below the PCI hole at 3 GiB.
X86_MAX_MEMORY = 3 << 30
DEVICE_CONTROLLERS = {"dram": "mc.ddr", "pcm": "mc.ddr", "mcdram": "mc.mcdram"}

DIFFERENCES = [
    "protocol: MESI (gem5 MESI_Two_Level) where the plugin models MESIF; no Forward state, so a "
    "clean line shared by several L1s is supplied by the L2 bank, not by a sharer",
    "L2: one shared, address-interleaved L2 bank per tile (static NUCA) where the plugin has a "
    "per-tile L2 shared by the tile's cores and a hashed distributed directory; a line's L2 bank "
    "and directory are fixed by address bits, not by the plugin's hash or cluster mode",
    "cluster modes: hemisphere, quadrant, SNC-2 and SNC-4 affinity are not expressed; "
    "addresses interleave over all banks and all controllers of their device",
    "last-level cache: MESI_Two_Level has no memory-side cache below its L2, so the plugin's "
    "LLC/SLC slice at the home (icelake-32, altra-80) is absent: private-L2 misses go to memory",
    "Owned state: MESI_Two_Level has no O state; a dirty line read by another core is written "
    "back, where the plugin's MOESIF (epyc2-64) keeps it dirty in its owner",
    "home: gem5's directory sits at the memory controller on every preset; the plugin's home is "
    "a hashed tile except on epyc2-64 (beside the controller, as the I/O die's probe filter)",
    "SMT: each vCPU is its own gem5 core with private L1s on its tile's router (the plugin puts "
    "a core's SMT threads in one L1D)",
    "hops: Garnet counts router-to-router link traversals of every flit; the plugin counts "
    "Manhattan hops per message",
    "memory: gem5's DDR4/HBM/NVM interface timing models (banks, rows, queues) against the "
    "plugin's fixed per-device latencies; the guest sees one flat memory (gem5's x86 board "
    "gives no NUMA tables), so NUMA nodes become address regions, not guest NUMA nodes",
]


# arm64 (CHI, gem5-configs/README.md "arm64 (CHI)"): what differs from the plugin.
ARM_DIFFERENCES = [
    "protocol: gem5's CHI (MOESI states UC/UD/SC/SD/I) where the plugin models the preset's "
    "MESIF or MOESIF; no Forward state; atomics run at the L1 (near)",
    "L2 and home: one CHI home node per tile on the first 2^k tiles, holding the directory of "
    "its addresses (exact) and a slice of the shared L2 as its cache (keeps lines read shared "
    "and written back, drops lines an L1 takes unique); lines are homed by address bits, not "
    "by the plugin's hash or cluster mode; the plugin has a per-tile L2 shared by the tile's "
    "cores",
    "cluster modes: hemisphere, quadrant, SNC-2 and SNC-4 affinity are not expressed; "
    "addresses interleave over all home nodes and all controllers of their device",
    "last-level cache: no memory-side cache below the home nodes' slices (icelake-32's LLC, "
    "altra-80's SLC are absent)",
    "SMT: each vCPU is its own gem5 core with private L1I and L1D on its tile's router (the "
    "plugin puts a core's SMT threads in one L1D)",
    "hops: Garnet counts router-to-router link traversals of every flit; the plugin counts "
    "Manhattan hops per message; CHI carries a line in two 32-byte data messages",
    "memory: gem5's DDR4/HBM/NVM interface timing models against the plugin's fixed "
    "per-device latencies; gem5's Arm device tree has no NUMA nodes, so NUMA nodes become "
    "address regions from 2 GiB up, not guest NUMA nodes",
]
# DMA ports of gem5's ArmBoard on VExpress_GEM5_Foundation: the PL111 display controller and
# the root disk's virtio-blk PCI device; each gets a CHI DMA request node.
ARM_DMA_CONTROLLERS = 2


@dataclass(frozen=True)
class Gem5Inputs:
    kernel: Path
    disk: Path
    readfile: Path
    bootloader: Path | None = None  # arm64: gem5's boot_foundation.arm64


def router_id(pos: Pos, cols: int) -> int:
    return pos[0] * cols + pos[1]


def _inside(pos: Pos, rows: int, cols: int) -> bool:
    return 0 <= pos[0] < rows and 0 <= pos[1] < cols


def _edge_site(pos: Pos, rows: int, cols: int) -> Pos:
    return (min(max(pos[0], 0), rows - 1), min(max(pos[1], 0), cols - 1))


def mesh(machine: Machine) -> dict[str, Any]:
    """Routers (grid sites, then outside memory controllers) and bidirectional links."""
    rows, cols = machine.rows, machine.cols
    routers: list[dict[str, Any]] = []
    active = set(machine.tiles)
    for r in range(rows):
        for c in range(cols):
            routers.append({"id": r * cols + c, "pos": [r, c],
                            "site": "tile" if (r, c) in active else "disabled"})
    links: list[dict[str, Any]] = []
    for r in range(rows):
        for c in range(cols):
            if c + 1 < cols:
                links.append({"a": r * cols + c, "b": r * cols + c + 1, "axis": "x"})
            if r + 1 < rows:
                links.append({"a": r * cols + c, "b": (r + 1) * cols + c, "axis": "y"})
    outside: dict[Pos, int] = {}
    for key in ("mc.ddr", "mc.mcdram"):
        for pos in positions(machine.params[key]):
            if _inside(pos, rows, cols) or pos in outside:
                continue
            outside[pos] = len(routers)
            edge = _edge_site(pos, rows, cols)
            axis = "x" if pos[0] == edge[0] else "y"
            routers.append({"id": outside[pos], "pos": list(pos), "site": "memory"})
            links.append({"a": router_id(edge, cols), "b": outside[pos], "axis": axis})
    return {"rows": rows, "cols": cols, "routers": routers, "links": links,
            "routing": machine.params["mesh.routing"],
            "flit_bytes": int(machine.params["mesh.flit_bytes"]),
            "router_latency": 1, "link_latency": 1, "vcs_per_vnet": 4}


def controller_router(machine: Machine, pos: Pos, net: dict[str, Any]) -> int:
    for router in net["routers"]:
        if tuple(router["pos"]) == tuple(pos):
            return int(router["id"])
    raise ValueError(f"no router at {pos}")


def power_of_two_floor(count: int) -> int:
    power = 1
    while power * 2 <= count:
        power *= 2
    return power


def l2_banks(machine: Machine) -> list[int]:
    """Routers of the L2 banks: the first 2^k active tiles (MESI_Two_Level selects banks by
    address bits, so their number is a power of two)."""
    count = power_of_two_floor(len(machine.tiles))
    return [router_id(pos, machine.cols) for pos in machine.tiles[:count]]


def memory(point: PointParams, machine: Machine, net: dict[str, Any]) -> dict[str, Any]:
    regions = []
    start = 0
    for node in numa_nodes(point.machine):
        device = node.device
        size = parse_size(node.size)
        mcs = positions(machine.params[DEVICE_CONTROLLERS[device]]) or \
            positions(machine.params["mc.ddr"])
        regions.append({
            "device": device, "start": start, "size": size,
            "channels": [controller_router(machine, pos, net) for pos in mcs],
            "channels_used": power_of_two_floor(len(mcs)),
            "read_ns": float(machine.params[f"{device}.read_ns"]),
            "write_ns": float(machine.params[f"{device}.write_ns"]),
            "read_nj_per_bit": float(machine.params[f"{device}.read_nj_per_bit"]),
            "write_nj_per_bit": float(machine.params[f"{device}.write_nj_per_bit"]),
        })
        start += size
    return {"size": start, "regions": regions,
            "interleave_bytes": point.gem5.interleave}


def kernel_args(point: PointParams, clock_hz: int) -> list[str]:
    """The lab's parameters with gem5's root disk. Not the QEMU tier's `tsc=reliable
    no_timer_check lapic_timer_period=`: with them Linux 6.1 stops after `pnp: PnP ACPI:
    disabled` on gem5 v24's x86 board (measured); it calibrates the APIC timer against
    gem5's PIT instead. lpj is the TSC's cycles per jiffy (gem5's TSC counts the core clock).
    With machine.snapshot = "auto" the guest stops at its ready point (gem5op checkpoint),
    whether a checkpoint is then taken or the point boots cold: both run one guest path."""
    args = ["earlyprintk=ttyS0", "console=ttyS0", *LAB_CMDLINE.split(),
            f"lpj={clock_hz // HZ}",
            "root=/dev/sda", "rw", "init=/init", "manylab.backend=gem5"]
    if checkpoint.wanted(point):
        args.append(READY_POINT_CMDLINE)
    return args + point.kernel.cmdline.split()


def arm_kernel_args(point: PointParams) -> list[str]:
    """The lab's parameters with the Arm board's console (the first PL011, also as the early
    console) and root disk (virtio-blk). No lpj: arm64 takes its delay loop from the generic
    timer's frequency (arch/arm64/kernel/time.c), and lpj= would override it."""
    args = ["console=ttyAMA0", "earlycon=pl011,0x1c090000", *LAB_CMDLINE.split(),
            "root=/dev/vda", "rw", "init=/init", "manylab.backend=gem5"]
    if checkpoint.wanted(point):
        args.append(READY_POINT_CMDLINE)
    return args + point.kernel.cmdline.split()


def chi_counts(machine: Machine, vcpus: int) -> dict[str, int]:
    """The CHI cache controllers of an arm64 point (Ruby's controller sets hold them all, one
    MachineType: gem5-configs/README.md "arm64 (CHI)")."""
    homes = len(l2_banks(machine))
    return {"l1_controllers": 2 * vcpus, "home_nodes": homes,
            "dma_controllers": ARM_DMA_CONTROLLERS,
            "cache_controllers": 2 * vcpus + homes + ARM_DMA_CONTROLLERS}


def parse_clock(text: str) -> int:
    units = {"ghz": 10**9, "mhz": 10**6, "khz": 10**3, "hz": 1}
    low = text.strip().lower()
    for unit, scale in units.items():
        if low.endswith(unit):
            return int(float(low[:-len(unit)]) * scale)
    raise ValueError(f"bad clock {text!r}: expected e.g. '2GHz'")


def describe(point: PointParams, machine: Machine, inputs: Gem5Inputs) -> dict[str, Any]:
    """The whole gem5 system of one point, as gem5-configs/run_point.py reads it."""
    settings = point.gem5
    clock_hz = parse_clock(settings.clock)
    net = mesh(machine)
    vcpus = point.machine.vcpus
    params = machine.params
    arm = point.machine.arch == "arm64"
    description = {
        "format": SYSTEM_FORMAT,
        "preset": params["preset"],
        "isa": "arm64" if arm else "x86",
        "clock": settings.clock,
        "cpus": vcpus,
        "boot_cpu": settings.boot_cpu,
        "roi_cpu": settings.cpu,
        "kernel": str(inputs.kernel),
        "disk": str(inputs.disk),
        "readfile": str(inputs.readfile),
        "kernel_args": arm_kernel_args(point) if arm else kernel_args(point, clock_hz),
        "mesh": net,
        "cores": [router_id(machine.vcpu_tile(v), machine.cols) for v in range(vcpus)],
        "l1": {"size_kib": int(params["l1d.size_kib"]), "assoc": int(params["l1d.ways"])},
        "l2": {"size_kib": int(params["l2.size_kib"]), "assoc": int(params["l2.ways"]),
               "banks": l2_banks(machine)},
        "memory": memory(point, machine, net),
        "dma_router": controller_router(machine, positions(params["mc.ddr"])[0], net),
        "differences": ARM_DIFFERENCES if arm else DIFFERENCES,
    }
    if arm:
        if inputs.bootloader is None:
            raise ValueError("an arm64 gem5 system needs gem5's bootloader")
        description["bootloader"] = str(inputs.bootloader)
        description["chi"] = chi_counts(machine, vcpus)
    return description
