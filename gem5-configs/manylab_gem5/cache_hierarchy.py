"""MESI_Two_Level Ruby caches on the preset's mesh: each core's L1 at its tile, the shared L2
banks on their tiles, one directory per memory channel at its controller."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gem5.coherence_protocol import CoherenceProtocol
from gem5.components.cachehierarchies.ruby.abstract_ruby_cache_hierarchy import (
    AbstractRubyCacheHierarchy,
)
from gem5.components.cachehierarchies.ruby.caches.mesi_two_level.directory import (
    Directory,
)
from gem5.components.cachehierarchies.ruby.caches.mesi_two_level.dma_controller import (
    DMAController,
)
from gem5.components.cachehierarchies.ruby.caches.mesi_two_level.l1_cache import (
    L1Cache,
)
from gem5.components.cachehierarchies.ruby.caches.mesi_two_level.l2_cache import (
    L2Cache,
)
from gem5.isas import ISA
from gem5.utils.requires import requires
from m5.objects import (
    DMASequencer,
    RubyPortProxy,
    RubySequencer,
    RubySystem,
)

from .mesh_network import MeshNetwork

if TYPE_CHECKING:
    from gem5.components.boards.abstract_board import AbstractBoard


class MeshMESITwoLevel(AbstractRubyCacheHierarchy):
    def __init__(self, system: dict[str, Any]) -> None:
        super().__init__()
        self._system = system

    def incorporate_cache(self, board: AbstractBoard) -> None:
        requires(coherence_protocol_required=CoherenceProtocol.MESI_TWO_LEVEL)
        desc = self._system
        line = board.get_cache_line_size()
        l1 = desc["l1"]
        l2 = desc["l2"]
        banks = l2["banks"]

        self.ruby_system = RubySystem()
        self.ruby_system.number_of_virtual_networks = 3
        self.ruby_system.network = MeshNetwork(self.ruby_system, desc["mesh"])
        network = self.ruby_system.network

        placed = []
        self._l1_controllers = []
        cores = board.get_processor().get_cores()
        for i, core in enumerate(cores):
            cache = L1Cache(
                f"{l1['size_kib']}KiB",
                l1["assoc"],
                f"{l1['size_kib']}KiB",
                l1["assoc"],
                network,
                core,
                len(banks),
                line,
                board.processor.get_isa(),
                board.get_clock_domain(),
            )
            cache.sequencer = RubySequencer(
                version=i, dcache=cache.L1Dcache, clk_domain=cache.clk_domain
            )
            if board.has_io_bus():
                cache.sequencer.connectIOPorts(board.get_io_bus())
            cache.ruby_system = self.ruby_system
            core.connect_icache(cache.sequencer.in_ports)
            core.connect_dcache(cache.sequencer.in_ports)
            core.connect_walker_ports(
                cache.sequencer.in_ports, cache.sequencer.in_ports
            )
            if board.get_processor().get_isa() == ISA.X86:
                core.connect_interrupt(
                    cache.sequencer.interrupt_out_port, cache.sequencer.in_ports
                )
            else:
                core.connect_interrupt()
            self._l1_controllers.append(cache)
            placed.append((cache, desc["cores"][i]))

        self._l2_controllers = []
        for router in banks:
            bank = L2Cache(
                f"{l2['size_kib']}KiB", l2["assoc"], network, len(banks), line
            )
            bank.ruby_system = self.ruby_system
            self._l2_controllers.append(bank)
            placed.append((bank, router))

        channel_routers = [
            router
            for region in desc["memory"]["regions"]
            for router in region["channels"][: region["channels_used"]]
        ]
        self._directory_controllers = []
        # RegionMemory has one port per used channel, in this same region order.
        for (mem_range, port), router in zip(
            board.get_mem_ports(), channel_routers, strict=True
        ):
            directory = Directory(network, line, mem_range, port)
            directory.ruby_system = self.ruby_system
            self._directory_controllers.append(directory)
            placed.append((directory, router))

        self._dma_controllers = []
        if board.has_dma_ports():
            for i, port in enumerate(board.get_dma_ports()):
                ctrl = DMAController(network, line)
                ctrl.dma_sequencer = DMASequencer(version=i, in_ports=port)
                ctrl.ruby_system = self.ruby_system
                self._dma_controllers.append(ctrl)
                placed.append((ctrl, desc["dma_router"]))

        self.ruby_system.num_of_sequencers = len(self._l1_controllers) + len(
            self._dma_controllers
        )
        self.ruby_system.l1_controllers = self._l1_controllers
        self.ruby_system.l2_controllers = self._l2_controllers
        self.ruby_system.directory_controllers = self._directory_controllers
        if self._dma_controllers:
            self.ruby_system.dma_controllers = self._dma_controllers

        network.connect(placed)

        self.ruby_system.sys_port_proxy = RubyPortProxy()
        board.connect_system_port(self.ruby_system.sys_port_proxy.in_ports)
