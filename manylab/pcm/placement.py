"""The kernel's placement against the trace simulator's, on the same requests (issue 28 item 6).

A point that ran the ``hybrid-pcm`` kernel with the page-cache request recorder on a machine
with a DRAM and a PCM node (``machine.numa`` devices) holds, in its console, every request with
the node its page sat on once served, and the nodes' free pages as the recording started; in
kstats.json, the kernel's demotions, promotions and reclaim over the workload's ROI. This module
turns the recording into a trace, replays it in ``manylab-pcmsim`` on a memory of the same
usable size (each node's free pages and file page cache less its high watermark, the level
kswapd reclaims to), and
sets the figures side by side: hit ratios, the share of requests served from DRAM per class,
and pages moved between the devices and out to storage.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from manylab import kstats, pointdir
from manylab.hybrid_pcm import policy_in
from manylab.pcm import capture, engine
from manylab.pcm.capture import CaptureError, GuestRequest

SIMULATED = ("fgbg", "lru")
JSON = "placement.json"
FOREGROUND_ADJ = 0


@dataclass(frozen=True)
class Nodes:
    """The DRAM and the PCM node of the machine, and the page cache each can take."""

    dram: int
    pcm: int
    dram_pages: int
    pcm_pages: int


def device_nodes(numa: list[dict[str, Any]]) -> tuple[int, int]:
    """The node numbers of the DRAM and the PCM device in a `machine.numa` list."""
    devices = [str(node.get("device", "dram")) for node in numa]
    if devices.count("dram") != 1 or devices.count("pcm") != 1:
        raise CaptureError(f"machine.numa has devices {devices}: the placement check needs "
                           "exactly one dram and one pcm node")
    return devices.index("dram"), devices.index("pcm")


def usable_nodes(taken: capture.Capture, dram: int, pcm: int) -> Nodes:
    """What the page cache of the recorded files can take on each node as the first
    recording started: its free pages and the page cache already there (reclaim may take it),
    less its high watermark (kswapd keeps that much free)."""
    if not taken.starts:
        raise CaptureError("no pagereq-start line on the console (the image's pagereq "
                           "predates it: rebuild the image)")
    start = taken.starts[0]

    def usable(node: int) -> int:
        if node not in start.free:
            raise CaptureError(f"pagereq-start lists nodes {sorted(start.free)}, not {node}")
        return max(1, start.free[node] + start.file.get(node, 0)
                   - start.high_watermark.get(node, 0))
    return Nodes(dram, pcm, usable(dram), usable(pcm))


def share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


Figures = dict[str, float | int | None]


def figures(*, requests: int, fg_requests: int, hits: int, fg_hits: int, fg_on_dram: int,
            bg_on_dram: int, dram_hits: int, no_node: int, demoted: int | None,
            promoted: int | None, evicted: int | None, cached: int | None) -> Figures:
    """One column of the comparison, by the names the table shows."""
    return {
        "requests": requests,
        "foreground requests": fg_requests,
        "hit ratio": share(hits, requests),
        "foreground hit ratio": share(fg_hits, fg_requests),
        "foreground served from DRAM": share(fg_on_dram, fg_requests),
        "background served from DRAM": share(bg_on_dram, requests - fg_requests),
        "hits in DRAM": share(dram_hits, hits),
        "requests on no node": no_node,
        "pages moved to PCM (demoted)": demoted,
        "pages moved to DRAM (promoted)": promoted,
        "pages evicted to storage": evicted,
        "page cache at the end (pages)": cached,
    }


def kernel_figures(requests: list[GuestRequest], nodes: Nodes, roi: dict[str, int]) -> Figures:
    """What the recorder and the kernel's counters over the ROI say (`roi`: kstats'
    differences, levels for `nr_` items). A request's node is where its page sat once served
    (for a miss, where it was placed); -1 when a fault gave up first. The kernel's page cache
    also holds pages no request asked for (readahead) and files outside the recording."""
    fg = [r for r in requests if r.oom_score_adj == FOREGROUND_ADJ]
    demoted = roi.get("vmstat.pgdemote_kswapd", 0) + roi.get("vmstat.pgdemote_direct", 0)
    lru_levels = ("vmstat.nr_active_file", "vmstat.nr_inactive_file")
    return figures(
        requests=len(requests), fg_requests=len(fg),
        hits=sum(r.hit for r in requests), fg_hits=sum(r.hit for r in fg),
        fg_on_dram=sum(r.nid == nodes.dram for r in fg),
        bg_on_dram=sum(r.nid == nodes.dram and r.oom_score_adj != FOREGROUND_ADJ
                       for r in requests),
        dram_hits=sum(r.hit and r.nid == nodes.dram for r in requests),
        no_node=sum(r.nid < 0 for r in requests),
        demoted=demoted if roi else None,
        promoted=roi.get("hybrid_pcm.promote_success") if roi else None,
        evicted=roi.get("vmstat.pgsteal_file", 0) - demoted if roi else None,
        cached=sum(roi[name] for name in lru_levels) if all(n in roi for n in lru_levels)
        else None)


def simulator_figures(point: dict[str, Any]) -> Figures:
    """The same figures from one pcmsim point."""
    requests, hits = int(point["requests"]), int(point["hits"])
    return figures(
        requests=requests, fg_requests=int(point["fg_requests"]),
        hits=hits, fg_hits=int(point["fg_hits"]),
        fg_on_dram=int(point["fg_on_dram"]),
        bg_on_dram=int(point["on_dram"]) - int(point["fg_on_dram"]),
        dram_hits=int(point["dram_hits"]), no_node=0,
        demoted=int(point["to_pcm"]), promoted=int(point["to_dram"]),
        evicted=int(point["evictions"]), cached=requests - hits - int(point["evictions"]))


def simulate(trace: Path, nodes: Nodes) -> dict[str, dict[str, Any]]:
    """pcmsim's points for each simulated policy on a memory of the nodes' usable pages."""
    frames = nodes.dram_pages + nodes.pcm_pages
    out = engine.run(["run", "--trace", str(trace), "--policies", ",".join(SIMULATED),
                      "--mem-pages", str(frames), "--dram-share", repr(nodes.dram_pages / frames)])
    points = {o["policy"]: o for o in engine.parse_jsonl(out) if o.get("type") == "point"}
    for policy in SIMULATED:
        if policy not in points:
            raise engine.EngineError(f"manylab-pcmsim gave no {policy} point")
        if int(points[policy]["dram_frames"]) != nodes.dram_pages:
            raise engine.EngineError(f"pcmsim's DRAM has {points[policy]['dram_frames']} frames,"
                                     f" not {nodes.dram_pages}")
    return points


@dataclass(frozen=True)
class Comparison:
    point: Path
    policy: str
    nodes: Nodes
    figures: dict[str, Figures]  # column -> figure -> value

    def as_json(self) -> dict[str, Any]:
        return {"point": str(self.point), "kernel_policy": self.policy,
                "nodes": asdict(self.nodes), "figures": self.figures}


def compare(point_dir: Path, trace: Path) -> Comparison:
    """Record the point's capture as `trace` (and requests.csv beside it) and compare."""
    files = pointdir.read(point_dir)
    if files is None:
        raise CaptureError(f"{point_dir}: not a finished point (no {pointdir.RESULT})")
    params = files.params
    dram, pcm = device_nodes(list(params.get("machine", {}).get("numa", [])))
    taken = capture.load(point_dir)
    capture.write(taken, trace, trace.parent / capture.REQUESTS)
    nodes = usable_nodes(taken, dram, pcm)
    roi = {name.removeprefix("roi."): value
           for name, value in kstats.differences(files.kstats or {}).items()
           if name.startswith("roi.")}
    columns = {"kernel": kernel_figures(taken.requests, nodes, roi)}
    for policy, point in simulate(trace, nodes).items():
        columns[policy] = simulator_figures(point)
    policy = policy_in(str(params.get("kernel", {}).get("cmdline", ""))) or "off"
    return Comparison(point_dir, policy, nodes, columns)


def _cell(value: float | int | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return f"{value:,}"


def render(c: Comparison) -> str:
    """A Markdown table: one row per figure, the kernel's then each simulated policy's."""
    head = (f"{c.point.name}: kernel policy `{c.policy}`; memory DRAM {c.nodes.dram_pages:,} + "
            f"PCM {c.nodes.pcm_pages:,} pages (node {c.nodes.dram} and {c.nodes.pcm}: free and "
            "file pages less the high watermark as the recording started)")
    columns = ["kernel", *SIMULATED]
    lines = [head, "", "| figure | " + " | ".join(f"`{k}`" if k != "kernel" else k
                                                  for k in columns) + " |",
             "| --- |" + " ---: |" * len(columns)]
    for figure in c.figures["kernel"]:
        lines.append(f"| {figure} | " + " | ".join(_cell(c.figures[k][figure]) for k in columns)
                     + " |")
    return "\n".join(lines) + "\n"
