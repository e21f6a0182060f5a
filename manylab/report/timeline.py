"""A point's ROI as a timeline in Chrome trace-event JSON (opens in Perfetto UI and
chrome://tracing): one track per vCPU; on it, one slice per ROI phase as long as that vCPU's
modelled time in the phase, split into what the machine model charged it: base (instructions x
CPI), stall (memory), smt (a sibling's share of the core), wait (the causal clock: data another
vCPU wrote later) and idle (halted or moved up to the others). Phases follow each other on the
region's clock (a phase lasts as long as its slowest vCPU). The split is a composition, not an
order: the plugin sums each kind over the phase.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from manylab import atomic

KINDS = ("base", "stall", "smt", "wait", "idle")
PHASE = re.compile(r"^roi\.phase(\d+)$")


def phases(regions: dict[str, Any]) -> list[str]:
    """The ROI's phase regions in phase order, or the whole ROI when it has none."""
    found = sorted((int(m.group(1)), name) for name in regions
                   if (m := PHASE.match(name)) is not None)
    return [name for _, name in found] or (["roi"] if "roi" in regions else [])


def events(stats: dict[str, Any]) -> list[dict[str, Any]]:
    """The trace events of a stats.json; [] when it has no per-vCPU ROI times."""
    regions, summary = stats.get("regions", {}), stats.get("summary", {})
    out: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "ROI, modelled time"}}]
    named: set[int] = set()
    start_us = 0.0
    for region in phases(regions):
        vcpus = regions[region].get("time.vcpus") or []
        cycles, region_ns = summary.get(f"{region}.time.cycles"), summary.get(
            f"{region}.time.modelled_ns")
        if not vcpus or not cycles or region_ns is None:
            continue
        us_per_cycle = float(region_ns) / float(cycles) / 1e3
        label = region.removeprefix("roi.")
        for vcpu in vcpus:
            tid = int(vcpu["vcpu"])
            if tid not in named:
                named.add(tid)
                out.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
                            "args": {"name": f"vCPU {tid}"}})
            parts = {kind: float(vcpu.get(f"{kind}_cycles", 0)) for kind in KINDS[1:]}
            parts = {"base": float(vcpu["cycles"]) - sum(parts.values()), **parts}
            out.append({"name": label, "cat": "phase", "ph": "X", "pid": 1, "tid": tid,
                        "ts": start_us, "dur": float(vcpu["cycles"]) * us_per_cycle,
                        "args": {"insts": vcpu.get("insts", 0),
                                 **{f"{k}_cycles": round(v) for k, v in parts.items()}}})
            at = start_us
            for kind in KINDS:
                if parts[kind] > 0:
                    dur = parts[kind] * us_per_cycle
                    out.append({"name": kind, "cat": "charge", "ph": "X", "pid": 1, "tid": tid,
                                "ts": at, "dur": dur, "args": {"cycles": round(parts[kind])}})
                    at += dur
        start_us += float(region_ns) / 1e3
    return out if named else []


def write(stats: dict[str, Any], point: str, out: Path) -> bool:
    """Write the timeline of a point's stats.json content to `out`; False (nothing written)
    without per-vCPU times."""
    found = events(stats)
    if not found:
        return False
    atomic.write_text(out, json.dumps({"traceEvents": found, "displayTimeUnit": "ns",
                                       "otherData": {"point": point}}))
    return True
