"""The point's memory: one region per NUMA node of the spec, in address order, each made of
its device's channels (interleaved), DDR4 for DRAM, HBM for MCDRAM, and for PCM gem5's NVM
DIMM (NVM_2400_1x64: its bus turnaround and rank switch times) with the preset's PCM latencies;
a MemCtrl drives either kind of interface."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gem5.components.memory.abstract_memory_system import AbstractMemorySystem
from m5.objects import (
    AddrRange,
    DDR4_2400_8x8,
    HBM_1000_4H_1x128,
    MemCtrl,
    NVM_2400_1x64,
    NVMInterface,
)

if TYPE_CHECKING:
    from gem5.components.boards.abstract_board import AbstractBoard
    from m5.objects import Port


def pcm_interface(region: dict[str, Any]) -> NVMInterface:
    """gem5's NVM DIMM with the digest's PCM read and write latencies (Table 1)."""
    return NVM_2400_1x64(tREAD=f"{region['read_ns']}ns", tWRITE=f"{region['write_ns']}ns")


INTERFACES = {
    "dram": lambda region: DDR4_2400_8x8(),
    "mcdram": lambda region: HBM_1000_4H_1x128(),
    "pcm": pcm_interface,
}


class RegionMemory(AbstractMemorySystem):
    def __init__(self, memory: dict[str, Any]) -> None:
        super().__init__()
        self._memory = memory
        self._size = memory["size"]
        controllers = []
        for region in memory["regions"]:
            for _ in range(region["channels_used"]):
                iface = INTERFACES[region["device"]](region)
                iface.addr_mapping = "RoRaBaCoCh"
                controllers.append(MemCtrl(dram=iface))
        self.mem_ctrl = controllers

    def incorporate_memory(self, board: AbstractBoard) -> None:
        pass

    def get_mem_ports(self) -> list[tuple[AddrRange, Port]]:
        return [(ctrl.dram.range, ctrl.port) for ctrl in self.mem_ctrl]

    def get_memory_controllers(self) -> list[MemCtrl]:
        return list(self.mem_ctrl)

    def get_size(self) -> int:
        return self._size

    def set_memory_range(self, ranges: list[AddrRange]) -> None:
        if len(ranges) != 1 or ranges[0].size() != self._size:
            raise ValueError("RegionMemory needs one range of the memory's size")
        base = ranges[0].start
        low_bit = int(math.log2(self._memory["interleave_bytes"]))
        ctrls = iter(self.mem_ctrl)
        for region in self._memory["regions"]:
            channels = region["channels_used"]
            bits = int(math.log2(channels))
            for match in range(channels):
                ctrl = next(ctrls)
                start = base + region["start"]
                if bits:
                    ctrl.dram.range = AddrRange(
                        start=start,
                        size=region["size"],
                        intlvHighBit=low_bit + bits - 1,
                        xorHighBit=0,
                        intlvBits=bits,
                        intlvMatch=match,
                    )
                else:
                    ctrl.dram.range = AddrRange(start=start, size=region["size"])
