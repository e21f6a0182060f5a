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


def kernel_figures(requests: list[GuestRequest], nodes: Nodes,
                   roi: dict[str, int]) -> dict[str, float | int | None]:
    """What the recorder and the kernel's counters over the ROI say (`roi`: kstats'
    differences, levels for `nr_` items). A request's node is where its page sat once served
    (for a miss, where it was placed); -1 when a fault gave up first. The kernel's page cache
    also holds pages no request asked for (readahead) and files outside the recording."""
    fg = [r for r in requests if r.oom_score_adj == FOREGROUND_ADJ]
    bg = [r for r in requests if r.oom_score_adj != FOREGROUND_ADJ]
    hits = [r for r in requests if r.hit]
    demoted = roi.get("vmstat.pgdemote_kswapd", 0) + roi.get("vmstat.pgdemote_direct", 0)
    reclaimed = roi.get("vmstat.pgsteal_file", 0)
    return {
        "requests": len(requests),
        "foreground requests": len(fg),
        "hit ratio": share(len(hits), len(requests)),
        "foreground hit ratio": share(sum(r.hit for r in fg), len(fg)),
        "foreground served from DRAM": share(sum(r.nid == nodes.dram for r in fg), len(fg)),
        "background served from DRAM": share(sum(r.nid == nodes.dram for r in bg), len(bg)),
        "hits in DRAM": share(sum(r.nid == nodes.dram for r in hits), len(hits)),
        "requests on no node": sum(r.nid < 0 for r in requests),
        "pages moved to PCM (demoted)": demoted if roi else None,
        "pages moved to DRAM (promoted)": roi.get("hybrid_pcm.promote_success") if roi else None,
        "pages evicted to storage": reclaimed - demoted if roi else None,
        "page cache at the end (pages)": (roi["vmstat.nr_active_file"]
                                          + roi["vmstat.nr_inactive_file"])
        if "vmstat.nr_active_file" in roi and "vmstat.nr_inactive_file" in roi else None,
    }


def simulator_figures(point: dict[str, Any]) -> dict[str, float | int | None]:
    """The same figures from one pcmsim point."""
    requests, fg = int(point["requests"]), int(point["fg_requests"])
    bg_on_dram = int(point["on_dram"]) - int(point["fg_on_dram"])
    return {
        "requests": requests,
        "foreground requests": fg,
        "hit ratio": point["hit_ratio"],
        "foreground hit ratio": point["fg_hit_ratio"],
        "foreground served from DRAM": share(int(point["fg_on_dram"]), fg),
        "background served from DRAM": share(bg_on_dram, requests - fg),
        "hits in DRAM": share(int(point["dram_hits"]), int(point["hits"])),
        "requests on no node": 0,
        "pages moved to PCM (demoted)": point["to_pcm"],
        "pages moved to DRAM (promoted)": point["to_dram"],
        "pages evicted to storage": point["evictions"],
        "page cache at the end (pages)": requests - int(point["hits"]) - int(point["evictions"]),
    }


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
    figures: dict[str, dict[str, float | int | None]]  # column -> figure -> value

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
    figures = {"kernel": kernel_figures(taken.requests, nodes, roi)}
    for policy, point in simulate(trace, nodes).items():
        figures[policy] = simulator_figures(point)
    cmdline = str(params.get("kernel", {}).get("cmdline", ""))
    policy = next((w.split("=", 1)[1] for w in cmdline.split()
                   if w.startswith("hybrid_pcm.policy=")), "off")
    return Comparison(point_dir, policy, nodes, figures)


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
