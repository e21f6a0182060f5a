"""CHI Ruby caches on the preset's mesh: each core's L1I and L1D (request nodes) at its tile,
one home node per L2 bank (directory and L2 slice) on the bank's tile, address-interleaved,
one memory node per memory channel at its controller, and the board's boot memory and DMA
request nodes at the I/O router."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gem5.coherence_protocol import CoherenceProtocol
from gem5.components.cachehierarchies.chi.nodes.dma_requestor import DMARequestor
from gem5.components.cachehierarchies.chi.nodes.memory_controller import (
    MemoryController,
)
from gem5.components.cachehierarchies.chi.nodes.private_l1_moesi_cache import (
    PrivateL1MOESICache,
)
from gem5.components.cachehierarchies.ruby.abstract_ruby_cache_hierarchy import (
    AbstractRubyCacheHierarchy,
)
from gem5.utils.requires import requires
from m5.objects import NULL, AddrRange, RubyPortProxy, RubySequencer, RubySystem

from .chi_home_node import HomeNode
from .mesh_network import MeshNetwork

if TYPE_CHECKING:
    from gem5.components.boards.abstract_board import AbstractBoard

# CHI's message classes each have a virtual network: request, snoop, response, data
# (src/mem/ruby/protocol/chi/CHI-cache.sm, virtual_network 0-3; data is Garnet's data vnet).
VNETS = 4
# Bytes of a line per CHI data message: the stdlib nodes' data_channel_size, so a line
# travels as two data messages; the network sizes them the same.
DATA_BYTES = 32


def home_ranges(spans: list[AddrRange], line: int, homes: int, home: int) -> list[AddrRange]:
    """The lines of `spans` whose home is node `home` of `homes` (a power of two): selected by
    the address bits just above the line offset."""
    bits = int(math.log2(homes))
    if bits == 0:
        return [AddrRange(span.start, size=span.size()) for span in spans]
    low = int(math.log2(line))
    return [
        AddrRange(span.start, size=span.size(), intlvHighBit=low + bits - 1,
                  intlvBits=bits, intlvMatch=home)
        for span in spans
    ]


class MeshCHI(AbstractRubyCacheHierarchy):
    def __init__(self, system: dict[str, Any]) -> None:
        super().__init__()
        self._system = system

    def incorporate_cache(self, board: AbstractBoard) -> None:
        requires(coherence_protocol_required=CoherenceProtocol.CHI)
        desc = self._system
        line = board.get_cache_line_size()
        clock = board.get_clock_domain()
        isa = board.get_processor().get_isa()

        self.ruby_system = RubySystem()
        self.ruby_system.number_of_virtual_networks = VNETS
        self.ruby_system.network = MeshNetwork(self.ruby_system, desc["mesh"], VNETS)
        network = self.ruby_system.network
        network.data_msg_size = DATA_BYTES

        placed = []
        l1 = desc["l1"]
        l1_size = f"{l1['size_kib']}KiB"
        cores = board.get_processor().get_cores()
        icaches, dcaches = [], []
        for i, core in enumerate(cores):
            icache = PrivateL1MOESICache(l1_size, l1["assoc"], network, core, line, isa, clock)
            dcache = PrivateL1MOESICache(l1_size, l1["assoc"], network, core, line, isa, clock)
            # Load-linked lines stay unique for a while, so that a store-conditional can
            # succeed under contention (CHI_config.py does the same for its L1Ds).
            dcache.sc_lock_enabled = True
            dcache.sequencer = RubySequencer(
                version=i, dcache=dcache.cache, clk_domain=clock, ruby_system=self.ruby_system
            )
            icache.sequencer = RubySequencer(
                version=len(cores) + i, dcache=NULL, clk_domain=clock,
                ruby_system=self.ruby_system,
            )
            if board.has_io_bus():
                dcache.sequencer.connectIOPorts(board.get_io_bus())
            core.connect_icache(icache.sequencer.in_ports)
            core.connect_dcache(dcache.sequencer.in_ports)
            # Both table walkers (instruction and data side) read page tables through the L1D.
            core.connect_walker_ports(dcache.sequencer.in_ports, dcache.sequencer.in_ports)
            # Arm's GIC is a memory-mapped device: the core needs no interrupt port in Ruby.
            core.connect_interrupt()
            for cache in (icache, dcache):
                cache.ruby_system = self.ruby_system
                placed.append((cache, desc["cores"][i]))
            icaches.append(icache)
            dcaches.append(dcache)

        # The board's memories: its boot memory first (ArmBoard.get_mem_ports), then the
        # point's regions (RegionMemory, one port per used channel in region order).
        ports = list(board.get_mem_ports())
        regions = len(board.get_memory().get_mem_ports())
        boot_ports, region_ports = ports[: len(ports) - regions], ports[len(ports) - regions:]
        spans = [span for span, _ in boot_ports] + list(board.mem_ranges)

        l2 = desc["l2"]
        banks = l2["banks"]
        index_bit = int(math.log2(line)) + int(math.log2(len(banks)))
        homes = []
        for i, router in enumerate(banks):
            home = HomeNode(f"{l2['size_kib']}KiB", l2["assoc"], network, line, clock,
                            home_ranges(spans, line, len(banks), i), index_bit)
            home.ruby_system = self.ruby_system
            homes.append(home)
            placed.append((home, router))

        channel_routers = [
            router
            for region in desc["memory"]["regions"]
            for router in region["channels"][: region["channels_used"]]
        ]
        routers = [desc["dma_router"]] * len(boot_ports) + channel_routers
        memories = []
        for (span, port), router in zip(boot_ports + region_ports, routers, strict=True):
            memory = MemoryController(network, span, port)
            memory.ruby_system = self.ruby_system
            memories.append(memory)
            placed.append((memory, router))

        dmas = []
        if board.has_dma_ports():
            for i, port in enumerate(board.get_dma_ports()):
                dma = DMARequestor(network, line, clock)
                dma.sequencer = RubySequencer(
                    version=2 * len(cores) + i, in_ports=port, dcache=NULL,
                    ruby_system=self.ruby_system,
                )
                dma.ruby_system = self.ruby_system
                dmas.append(dma)
                placed.append((dma, desc["dma_router"]))

        built = len(icaches) + len(dcaches) + len(homes) + len(dmas)
        expected = desc["chi"]["cache_controllers"]
        if built != expected:
            # The lab checked NUMBER_BITS_PER_SET against its own count: make a wrong count loud.
            raise ValueError(
                f"{built} CHI cache controllers ({len(dmas)} DMA) where the lab counted "
                f"{expected} (manylab/backends/gem5/system.py chi_counts)"
            )

        self.ruby_system.num_of_sequencers = len(icaches) + len(dcaches) + len(dmas)
        self.ruby_system.l1i_controllers = icaches
        self.ruby_system.l1d_controllers = dcaches
        self.ruby_system.home_nodes = homes
        self.ruby_system.memory_nodes = memories
        if dmas:
            self.ruby_system.dma_controllers = dmas

        # After the nodes have their parents: a node given as a parameter before that would be
        # adopted by the first node that names it.
        for requester in icaches + dcaches + dmas:
            requester.downstream_destinations = homes
        for home in homes:
            home.downstream_destinations = memories

        network.connect(placed)

        self.ruby_system.sys_port_proxy = RubyPortProxy()
        board.connect_system_port(self.ruby_system.sys_port_proxy.in_ports)
