"""Throughput and memory benchmark of the simulator (figures, not a test).

Runs ``manylab-pcmsim bench`` on a plan of cases and prints one table: requests per on-CPU
second and per wall-clock second for each policy, and the peak resident memory of each run.

* ``trace1`` / ``trace2``: the reproduce command's synthetic traces at 10 M requests and its
  memory sizes (10%..100% of the footprint, 5% DRAM); the trace is packed in memory first, so
  the rate is the policy and meter alone.
* ``large``: a 944k-page footprint at 30% memory (283k frames): policy state far beyond the
  CPU caches.
* ``trace2 file``: the same trace2 written to a ``.mlpt`` file and read back each run
  (decoding and interning included).
* ``memory``: requests streamed from the generator (no trace buffer) at two trace lengths and
  two memory sizes: the peak RSS follows the memory size, not the trace length.

The rate per on-CPU second is the figure to compare on a shared machine; compare ratios
within one run.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from manylab.pcm import engine

TARGET_PER_CPU_S = 10e6
REPRODUCE_MEM = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0"


@dataclass(frozen=True)
class BenchRow:
    case: str
    policy: str
    frames: int
    requests: int
    wall_per_s: float
    cpu_per_s: float | None
    peak_rss_kib: int | None


def parse_bench_csv(text: str, case: str) -> list[BenchRow]:
    """Rows of the binary's ``bench`` CSV output, labelled with ``case``."""
    rows: list[BenchRow] = []
    for r in csv.DictReader(io.StringIO(text)):
        cpu, rss = r.get("requests_per_cpu_s") or "", r.get("peak_rss_kib") or ""
        rows.append(
            BenchRow(
                case=case,
                policy=r["policy"],
                frames=int(r["frames"]),
                requests=int(r["requests"]),
                wall_per_s=float(r["requests_per_wall_s"]),
                cpu_per_s=float(cpu) if cpu else None,
                peak_rss_kib=int(rss) if rss else None,
            )
        )
    return rows


def plan(
    requests: int, policies: str, tmp: Path, with_file: bool = True, with_large: bool = True
) -> list[tuple[str, list[str]]]:
    """The benchmark cases: (label, ``manylab-pcmsim bench`` arguments)."""
    common = ["--policies", policies, "--requests", str(requests)]
    cases: list[tuple[str, list[str]]] = [
        (f"{kind} packed", ["--gen", kind, *common, "--mem", REPRODUCE_MEM])
        for kind in ("trace1", "trace2")
    ]
    if with_large:
        cases.append(("large packed", [*common, "--mem", "0.3"]))
    if with_file:
        cases.append(
            (
                "trace2 file",
                [
                    "--trace",
                    str(tmp / "trace2.mlpt"),
                    "--policies",
                    policies,
                    "--mem",
                    "0.1,0.5,1.0",
                ],
            )
        )
    small, big = 20_000, 200_000
    short = max(requests // 10, 1)
    for n, frames in ((short, small), (requests, small), (short, big), (requests, big)):
        cases.append(
            (
                f"memory {n} req",
                [*common[:2], "--requests", str(n), "--stream", "--mem-pages", str(frames)],
            )
        )
    return cases


def _fmt_rate(x: float | None) -> str:
    return "?" if x is None else f"{x / 1e6:.2f}"


def table(rows: Sequence[BenchRow]) -> str:
    head = f"{'case':22} {'policy':10} {'frames':>8} {'requests':>9} {'M req/CPU-s':>12} "
    head += f"{'M req/wall-s':>13} {'peak RSS MiB':>13}"
    lines = [head, "-" * len(head)]
    for r in rows:
        rss = "?" if r.peak_rss_kib is None else f"{r.peak_rss_kib / 1024:.1f}"
        lines.append(
            f"{r.case:22} {r.policy:10} {r.frames:>8} {r.requests:>9} {_fmt_rate(r.cpu_per_s):>12} "
            f"{_fmt_rate(r.wall_per_s):>13} {rss:>13}"
        )
    return "\n".join(lines)


def target_summary(rows: Sequence[BenchRow]) -> list[str]:
    """Which (case, policy, frames) reach the 10 M requests per CPU-second target."""
    out: list[str] = []
    for r in rows:
        if r.case.startswith("memory") or r.cpu_per_s is None:
            continue
        ok = r.cpu_per_s >= TARGET_PER_CPU_S
        out.append(f"{'met    ' if ok else 'NOT met'} {r.case} {r.policy} {r.frames} frames")
    return out


def run(
    requests: int = 10_000_000,
    policies: str = "lru,fgbg",
    with_file: bool = True,
    with_large: bool = True,
    out: TextIO | None = None,
) -> list[BenchRow]:
    """Run the plan, printing each case's rows as they come and the table at the end."""
    stream = out if out is not None else sys.stdout
    rows: list[BenchRow] = []
    with tempfile.TemporaryDirectory(prefix="pcmsim-bench-") as d:
        tmp = Path(d)
        if with_file:
            engine.run(
                [
                    "gen",
                    "--gen",
                    "trace2",
                    "--gen-set",
                    f"requests={requests}",
                    "--out",
                    str(tmp / "trace2.mlpt"),
                ]
            )
        for label, args in plan(requests, policies, tmp, with_file, with_large):
            got = parse_bench_csv(engine.run(["bench", *args]), label)
            for r in got:
                print(
                    f"{label}: {r.policy} {r.frames} frames: {_fmt_rate(r.cpu_per_s)} M req/CPU-s, "
                    f"peak RSS {r.peak_rss_kib} KiB",
                    file=stream,
                    flush=True,
                )
            rows += got
    print(file=stream)
    print(table(rows), file=stream)
    print(file=stream)
    print(f"target {TARGET_PER_CPU_S / 1e6:.0f} M requests per CPU-second:", file=stream)
    for line in target_summary(rows):
        print("  " + line, file=stream)
    return rows


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--requests", type=int, default=10_000_000, help="trace length (default 10 M)")
    p.add_argument("--policies", default="lru,fgbg", help="comma list (default lru,fgbg)")
    p.add_argument(
        "--no-file", action="store_true", help="skip the .mlpt file case (400 MB temp file)"
    )
    p.add_argument("--no-large", action="store_true", help="skip the 944k-page-footprint case")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        run(args.requests, args.policies, not args.no_file, not args.no_large)
    except engine.EngineError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
