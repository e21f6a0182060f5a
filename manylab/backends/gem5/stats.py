"""gem5's stats.txt -> the lab's stats schema (the plugin's `summary` keys), so tables,
reports and comparisons read both tiers the same way.

The region of interest is the statistics block dumped at the workload's work-end
(gem5-configs/run_point.py: block 0 = boot, 1 = region, 2 = the rest). Its phases are times
only: roi.json holds the tick of each phase marker, and phase k's time is the sum of the
intervals from a phase-k marker to the next marker or the region's end, as the plugin sums a
phase that opens again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manylab.errors import LabError
from manylab.pointdir import STATS_SCHEMA

BEGIN = "---------- Begin Simulation Statistics ----------"
END = "---------- End Simulation Statistics   ----------"
LINE_BYTES = 64
RUBY = "board.cache_hierarchy.ruby_system"
TICKS_PER_SECOND = 1e12  # gem5's default tick, 1 ps


@dataclass(frozen=True)
class RubyNames:
    """Where a protocol's caches and coherence events are in stats.txt."""
    l1d: str  # the L1D caches' m_demand_* prefix
    l2: str  # the shared L2's
    event: str  # the controllers' event counts
    kinds: dict[str, str]  # summary key -> the protocol's event names


# x86: MESI_Two_Level. GETS/GETX/UPGRADE are counted at the L2 bank, forwards and
# invalidations at the L1 that holds the line.
MESI = RubyNames(
    l1d=rf"{RUBY}\.l1_controllers\d*\.L1Dcache\.m_demand_",
    l2=rf"{RUBY}\.l2_controllers\d*\.L2cache\.m_demand_",
    event=rf"{RUBY}\.(L1|L2)Cache_Controller\.",
    kinds={"gets": "L1_GETS", "getm": "L1_GETX", "upgrade": "L1_UPGRADE",
           "fwd_gets": "Fwd_GETS", "fwd_getm": "Fwd_GETX", "inv": "Inv"})
# arm64: CHI (gem5-configs/manylab_gem5/cache_hierarchy_chi.py; names as an ARM_CHI v24 build
# writes them). Every node is a Cache_Controller: requests are counted at the home node (an L1I's
# reads among them), snoops at the L1 that holds the line: the shared snoops (the holder
# keeps a shared copy and supplies the line) as forwarded reads, SnpUniqueFwd (the owner
# hands the line to the writer) as a forwarded write, SnpUnique and SnpCleanInvalid as
# invalidations.
CHI = RubyNames(
    l1d=rf"{RUBY}\.l1d_controllers\d*\.cache\.m_demand_",
    l2=rf"{RUBY}\.home_nodes\d*\.cache\.m_demand_",
    event=rf"{RUBY}\.Cache_Controller\.",
    kinds={"gets": "(ReadShared|ReadNotSharedDirty)", "getm": "(ReadUnique|ReadUnique_PoC)",
           "upgrade": "(CleanUnique|CleanUnique_Stale|MakeReadUnique)",
           "fwd_gets": "(SnpShared|SnpSharedFwd|SnpNotSharedDirtyFwd)",
           "fwd_getm": "SnpUniqueFwd", "inv": "(SnpUnique|SnpCleanInvalid)"})
PROTOCOLS = {"x86": MESI, "arm64": CHI}


def parse(text: str) -> list[dict[str, float]]:
    """Every statistics block of a stats.txt: name (with `::label` for vector entries) ->
    first value; non-numeric values (nan, inf) are kept as floats, text is skipped."""
    blocks: list[dict[str, float]] = []
    current: dict[str, float] | None = None
    for line in text.splitlines():
        if line.startswith(BEGIN):
            current = {}
            continue
        if line.startswith(END):
            if current is not None:
                blocks.append(current)
            current = None
            continue
        if current is None or not line.strip():
            continue
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        try:
            current[fields[0]] = float(fields[1])
        except ValueError:
            continue
    return blocks


def total(block: dict[str, float], pattern: str) -> float:
    """Sum of the entries whose full name matches the regular expression."""
    compiled = re.compile(pattern)
    return sum(v for k, v in block.items() if compiled.fullmatch(k) and v == v)


def _sum_each(block: dict[str, float], patterns: Iterable[str]) -> float:
    return sum(total(block, p) for p in patterns)


def summary(block: dict[str, float], system: dict[str, Any], prefix: str) -> dict[str, float]:
    """One block in the plugin's summary keys (`<prefix>.l1d.misses`, ...)."""
    out: dict[str, float] = {}

    def put(name: str, value: float) -> None:
        out[f"{prefix}.{name}"] = value

    # simInsts is cumulative over blocks; the cores' committed counts are reset with them.
    put("insts", total(block, r"board\.processor\.\w+\.core\.commitStats\d+\.numInsts"))
    put("sim_seconds", total(block, r"simSeconds"))
    put("host_seconds", total(block, r"hostSeconds"))
    names = PROTOCOLS[system.get("isa", "x86")]
    l1, l2 = names.l1d, names.l2
    put("l1d.hits", total(block, l1 + "hits"))
    put("l1d.misses", total(block, l1 + "misses"))
    put("l1d.accesses", total(block, l1 + "accesses"))
    put("l2.hits", total(block, l2 + "hits"))
    put("l2.misses", total(block, l2 + "misses"))
    put("l2.accesses", total(block, l2 + "accesses"))
    # Requests by type, counted where the protocol handles them (RubyNames).
    for name, gem5_event in names.kinds.items():
        put(f"coh.msgs.{name}", total(block, rf"{names.event}{gem5_event}::total"))
    # Copies another core's write removed: sharers' invalidations and the owner's forward.
    put("coh.invalidations", out[f"{prefix}.coh.msgs.inv"] + out[f"{prefix}.coh.msgs.fwd_getm"])
    net = rf"{RUBY}\.network"
    put("coh.msgs", total(block, net + r"\.packets_injected::total"))
    put("coh.flits", total(block, net + r"\.flits_injected::total"))
    put("coh.hops", total(block, net + r"\.average_hops") *
        total(block, net + r"\.packets_received::total"))
    put("coh.avg_hops", total(block, net + r"\.average_hops"))
    put("coh.avg_packet_latency_ticks", total(block, net + r"\.average_packet_latency"))
    reads_all = writes_all = energy_all = 0.0
    bits = LINE_BYTES * 8
    controllers = _controllers(system)
    for device in ("dram", "mcdram", "pcm"):
        reads = writes = 0.0
        for index, region in controllers:
            if region["device"] != device:
                continue
            ctrl = rf"board\.memory\.mem_ctrl{index}"
            reads += total(block, ctrl + r"\.readReqs")
            writes += total(block, ctrl + r"\.writeReqs")
        energy = reads * bits * _nj(system, device, "read") + \
            writes * bits * _nj(system, device, "write")
        put(f"mem.{device}.reads", reads)
        put(f"mem.{device}.writes", writes)
        put(f"mem.{device}.energy_nj", energy)
        reads_all, writes_all, energy_all = reads_all + reads, writes_all + writes, \
            energy_all + energy
    put("mem.reads", reads_all)
    put("mem.writes", writes_all)
    put("mem.energy_nj", energy_all)
    return out


def phase_times(roi: dict[str, Any], ticks_per_second: float) -> dict[str, float]:
    """`roi.phase<k>.time.modelled_ns` of every phase the region's markers opened."""
    marks = sorted((int(m["tick"]), int(m["phase"])) for m in roi.get("phases", []))
    edges = [tick for tick, _ in marks[1:]] + [int(roi["end_tick"])] if marks else []
    out: dict[str, float] = {}
    for (start, phase), end in zip(marks, edges, strict=True):
        key = f"roi.phase{phase}.time.modelled_ns"
        out[key] = out.get(key, 0.0) + (end - start) / ticks_per_second * 1e9
    return out


def _controllers(system: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """Memory controller index -> its region, in the order gem5-configs creates them
    (board.memory.mem_ctrl0, 1, ...: regions in address order, channels within each)."""
    out: list[tuple[int, dict[str, Any]]] = []
    for region in system["memory"]["regions"]:
        for _ in range(region["channels_used"]):
            out.append((len(out), region))
    return out


def _nj(system: dict[str, Any], device: str, direction: str) -> float:
    for region in system["memory"]["regions"]:
        if region["device"] == device:
            return float(region[f"{direction}_nj_per_bit"])
    return 0.0


def import_run(stats_txt: Path, roi_json: Path, system: dict[str, Any],
               version: str = "unknown") -> dict[str, Any]:
    """A gem5 run's stats.json in the plugin's schema (`schema`, `tool`, `summary` with the
    region's `roi.*` figures), and gem5's raw region block for everything else."""
    if not stats_txt.is_file():
        raise LabError(f"{stats_txt}: gem5 wrote no stats.txt (see gem5-stderr.log)")
    blocks = parse(stats_txt.read_text())
    try:
        roi = json.loads(roi_json.read_text())
    except (FileNotFoundError, ValueError):
        raise LabError(f"{roi_json}: no region of interest was recorded: the workload's ROI "
                       "markers never reached gem5 (is the image's init passing "
                       "manylab.backend=gem5?)") from None
    index = int(roi["stats_block"])
    if roi.get("end_tick") is None or index >= len(blocks):
        raise LabError(f"{stats_txt}: the region of interest has no statistics block "
                       f"(found {len(blocks)} blocks; the region did not end)")
    block = blocks[index]
    figures = summary(block, system, "roi")
    ticks_per_second = block.get("simFreq", TICKS_PER_SECOND)
    # From the ticks: stats.txt rounds simSeconds to microseconds.
    figures["roi.time.modelled_ns"] = (int(roi["end_tick"]) - int(roi["begin_tick"])) / \
        ticks_per_second * 1e9
    figures.update(phase_times(roi, ticks_per_second))
    return {
        "schema": STATS_SCHEMA,
        "tool": {"name": "gem5", "version": version},
        "source": "gem5",
        "summary": figures,
        "roi": {"begin_tick": roi["begin_tick"], "end_tick": roi["end_tick"],
                "cpu": roi.get("roi_cpu"), "phases": roi.get("phases", [])},
        "gem5_roi_block": block,
    }
