"""A Garnet network shaped like the preset's mesh: one router per site, links between
neighbours, memory-controller stops outside the grid, controllers attached where the
description puts them. Link weights make gem5's table routing dimension-ordered."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from m5.objects import (
    GarnetExtLink,
    GarnetIntLink,
    GarnetNetwork,
    GarnetNetworkInterface,
    GarnetRouter,
)

if TYPE_CHECKING:
    from m5.objects import RubyController, RubySystem

# Table routing takes, at each router, the lowest-weight output on a shortest path; giving
# the first dimension weight 1 and the other 2 routes the first dimension first.
WEIGHTS = {"YX": {"y": 1, "x": 2}, "XY": {"x": 1, "y": 2}}
PORTS = {"x": ("East", "West"), "y": ("South", "North")}


class MeshNetwork(GarnetNetwork):
    def __init__(self, ruby_system: RubySystem, mesh: dict[str, Any], vnets: int = 3) -> None:
        """`vnets`: the protocol's virtual networks (MESI_Two_Level 3, CHI 4)."""
        super().__init__()
        self.ruby_system = ruby_system
        self.number_of_virtual_networks = vnets
        self.num_rows = mesh["rows"]
        self.ni_flit_size = mesh["flit_bytes"]
        self.vcs_per_vnet = mesh["vcs_per_vnet"]
        self.routing_algorithm = 0
        self._mesh = mesh

    def connect(self, placed: list[tuple[RubyController, int]]) -> None:
        """`placed`: (controller, router id) pairs."""
        mesh = self._mesh
        latency = mesh["router_latency"]
        link_latency = mesh["link_latency"]
        self.routers = [
            GarnetRouter(router_id=r["id"], latency=latency)
            for r in mesh["routers"]
        ]
        self.ext_links = [
            GarnetExtLink(
                link_id=i,
                ext_node=controller,
                int_node=self.routers[router],
                latency=link_latency,
            )
            for i, (controller, router) in enumerate(placed)
        ]
        weights = WEIGHTS[mesh["routing"]]
        int_links = []
        link_id = len(placed)
        for link in mesh["links"]:
            out_port, in_port = PORTS[link["axis"]]
            for src, dst, src_port, dst_port in (
                (link["a"], link["b"], out_port, in_port),
                (link["b"], link["a"], in_port, out_port),
            ):
                int_links.append(
                    GarnetIntLink(
                        link_id=link_id,
                        src_node=self.routers[src],
                        dst_node=self.routers[dst],
                        src_outport=src_port,
                        dst_inport=dst_port,
                        latency=link_latency,
                        weight=weights[link["axis"]],
                    )
                )
                link_id += 1
        self.int_links = int_links
        self.netifs = [
            GarnetNetworkInterface(id=i) for i in range(len(self.ext_links))
        ]
