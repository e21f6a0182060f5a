#!/usr/bin/env python3
"""FinerLRU issue #13 F3: the memcg lru_zone_size counters before and after patch 0002.

Reads each point of a study (default runs/finerlru-f3, made by runs/finerlru-f3.toml) and
prints one Markdown row per point from its stats.json and result.json:
  - coherence messages, invalidations and stall cycles the plugin attributes to
    mem_cgroup_update_lru_size in the ROI (or `--region`), and its share of the region's
    coherence messages;
  - the counter line among the region's hot lines: its rank, messages and invalidations, or
    "-" when it is not listed;
  - the write phase's modelled time (`roi.phase1` `time.modelled_ns`, the slowest vCPU) and
    the modelled write rate, bytes written / that time; the modelled time of `roi.phase2`,
    where pwriter (without `read`) unlinks its files and reports;
  - the point's wall time on the host.

The counter line is found by address, since the plugin has no symbol for heap lines: in
finerlru-shared-size the shared counters sit right after the root memcg's
mem_cgroup_per_node, whose kvzalloc'ed block (order 4, 64 KiB aligned) begins the line at
`--offset` (0x8380 = sizeof(struct mem_cgroup_per_node) on x86_64 with the series' config:
objdump of mem_cgroup_update_lru_size shows `lock add %rcx,0x8380(%rax,%rdx,8)`). With
`ZONE_DMA32` (a guest of up to 4 GiB) and the inactive anon list (tmpfs folios), the counter
written is at byte 40 of that line. In `finerlru` the per-CPU copies are elsewhere and the
same offset is the unused tail of the block.

Usage: .venv/bin/python scripts/f3_lines.py [runs/finerlru-f3] [--region roi.phase1]
                                            [--offset 0x8380] [--align 0x10000]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FUNCTION = "mem_cgroup_update_lru_size"


@dataclass
class PointFigures:
    point: str
    variant: str
    vcpus: int
    wall_s: float
    fn_msgs: int
    fn_invalidations: int
    fn_stall_cycles: int
    roi_msgs: int
    line_rank: int | None
    line_msgs: int
    line_invalidations: int
    write_ns: float
    write_bytes: int
    unlink_ns: float

    @property
    def fn_share(self) -> float:
        return self.fn_msgs / self.roi_msgs if self.roi_msgs else 0.0

    @property
    def write_gbs(self) -> float:
        return self.write_bytes / self.write_ns if self.write_ns else 0.0


def size_bytes(text: str | int) -> int:
    if isinstance(text, int):
        return text
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def figures(point: str, params: dict[str, Any], stats: dict[str, Any], wall_s: float,
            offset: int, align: int, region: str = "roi") -> PointFigures:
    """The F3 figures of one point from its parameters, stats.json and wall time: the
    function and the line in `region`, the write phase's modelled time."""
    roi = stats["regions"][region]
    function: dict[str, Any] = next(
        (f for f in roi.get("functions", []) if f.get("name") == FUNCTION), {})
    rank: int | None = None
    line: dict[str, Any] = {}
    for index, hot in enumerate(roi.get("hot_lines", []), 1):
        if int(str(hot["paddr"]), 16) % align == offset:
            rank, line = index, hot
            break
    vcpus = int(params["machine"]["vcpus"])
    args = params["workload"]["args"]
    procs = vcpus if str(args.get("procs", vcpus)) == "{vcpus}" else int(args["procs"])
    regions = stats["regions"]
    phase = regions.get("roi.phase1", regions["roi"])["stats"]
    unlink = regions.get("roi.phase2", {}).get("stats", {})
    return PointFigures(
        point=point,
        variant=str(params["kernel"]["variant"]),
        vcpus=vcpus,
        wall_s=wall_s,
        fn_msgs=int(function.get("coh.msgs", 0)),
        fn_invalidations=int(function.get("coh.invalidations", 0)),
        fn_stall_cycles=int(function.get("stall_cycles", 0)),
        roi_msgs=int(roi["stats"]["coh.msgs"]),
        line_rank=rank,
        line_msgs=int(line.get("coh.msgs", 0)),
        line_invalidations=int(line.get("coh.invalidations", 0)),
        write_ns=float(phase.get("time.modelled_ns", 0.0)),
        write_bytes=procs * size_bytes(args.get("size", "16M")),
        unlink_ns=float(unlink.get("time.modelled_ns", 0.0)),
    )


def load(study: Path, offset: int, align: int, region: str = "roi") -> list[PointFigures]:
    found = []
    for folder in sorted(p for p in study.iterdir() if (p / "stats.json").is_file()):
        params = json.loads((folder / "inputs.json").read_text())["params"]
        stats = json.loads((folder / "stats.json").read_text())
        result = json.loads((folder / "result.json").read_text())
        wall = float(result.get("timing", {}).get("total_s", 0.0))
        found.append(figures(folder.name, params, stats, wall, offset, align, region))
    return sorted(found, key=lambda f: (f.vcpus, f.variant))


def table(points: list[PointFigures]) -> str:
    rows = ["| variant | vCPUs | fn coh.msgs | fn invalidations | fn share of region msgs "
            "| fn stall cycles | counter line rank | line coh.msgs | line invalidations "
            "| write phase, modelled ms | write GB/s (modelled) | unlink phase, modelled ms "
            "| wall s |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
            "| ---: |"]
    for f in points:
        rank = str(f.line_rank) if f.line_rank is not None else "-"
        rows.append(f"| {f.variant} | {f.vcpus} | {f.fn_msgs:,} | {f.fn_invalidations:,} "
                    f"| {100 * f.fn_share:.2f}% | {f.fn_stall_cycles:,} | {rank} "
                    f"| {f.line_msgs:,} | {f.line_invalidations:,} | {f.write_ns / 1e6:.3f} "
                    f"| {f.write_gbs:.2f} | {f.unlink_ns / 1e6:.3f} | {f.wall_s:.1f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("study", nargs="?", type=Path, default=Path("runs/finerlru-f3"))
    parser.add_argument("--offset", type=lambda s: int(s, 0), default=0x8380,
                        help="the counter line's offset in its block (default 0x8380)")
    parser.add_argument("--align", type=lambda s: int(s, 0), default=0x10000,
                        help="the block's alignment (default 0x10000, order 4)")
    parser.add_argument("--region", default="roi",
                        help="region of the function and line figures: roi (default), "
                             "roi.phase1 (pwriter's writes), roi.phase2 (its unlinks)")
    args = parser.parse_args(argv)
    if not args.study.is_dir():
        print(f"f3_lines: {args.study}: no such study folder: run "
              "`manylab run runs/finerlru-f3.toml -j 1` first", file=sys.stderr)
        return 2
    print(table(load(args.study, args.offset, args.align, args.region)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
