"""A CHI home node (HN-F) with a slice of the shared L2 as its last-level cache: the stdlib's
home node (SimpleDirectory: exact directory, direct memory and direct cache transfer, Owned
state) given a real cache and an allocation policy.

Allocation as configs/ruby/CHI_config.py's CHI_HNFController: the slice keeps lines read
shared and written back, and drops a line an L1 takes unique (its L1 writes it back into the
slice on eviction). Atomics never reach it: the stdlib nodes run them at the L1 (near)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gem5.components.cachehierarchies.chi.nodes.directory import SimpleDirectory
from m5.objects import RubyCache

if TYPE_CHECKING:
    from m5.objects import AddrRange, ClockDomain, RubyNetwork


class HomeNode(SimpleDirectory):
    def __init__(
        self,
        size: str,
        assoc: int,
        network: RubyNetwork,
        cache_line_size: int,
        clk_domain: ClockDomain,
        addr_ranges: list[AddrRange],
        start_index_bit: int,
    ) -> None:
        """`addr_ranges`: the lines this node is home to; `start_index_bit`: the slice's set
        index starts above the address bits that choose the home node."""
        super().__init__(network, cache_line_size, clk_domain)
        self.addr_ranges = addr_ranges
        self.cache = RubyCache(size=size, assoc=assoc, start_index_bit=start_index_bit)
        self.alloc_on_readshared = True
        self.alloc_on_readonce = True
        self.alloc_on_writeback = True
        self.dealloc_on_unique = True
