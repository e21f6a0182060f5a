"""Guest page-request traces: what a hybrid-pcm kernel's page cache request recorder kept.

The kernel (kernel-patches/hybrid-pcm, debugfs ``pagecache_record/``) records, per page, the
read and write requests tasks make to the page cache of one file system's files; the guest tool
``pagereq`` (workloads/tools/pagereq.c) starts it before a workload and, after it, prints the
records on the console, which the host keeps as the point's ``console.log``:

    MANYLAB-PAGEREQ <time ns> <cpu> <pid> <oom_score_adj> <R|W> <hit|miss> <io|fault>
                    <major>:<minor> <ino> <index> <nid>
    MANYLAB-RESULT {"tool": "pagereq", "records": N, "dropped": N, "capacity": N}

and, as each recording starts, every memory node's free pages, pages on its file LRU lists
and high watermark:

    MANYLAB-RESULT {"tool": "pagereq-start", "free_pages": {"0": N, ...},
                    "file_pages": {"0": N, ...}, "high_watermark": {"0": N, ...}}

This module reads those lines back, checks that none went missing, and writes the trace in
pcmsim's form (through ``traceio``, so through the simulator: this module knows no byte of
``.mlpt``) with times in ns from the first request and the raw ``oom_score_adj`` (the simulator
maps it to Android's process states), plus ``requests.csv``, the kernel's view of every request
(hit or miss, read()/write() or fault, CPU, NUMA node), which the trace format has no field for.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manylab.errors import LabError
from manylab.pcm import traceio

PREFIX = "MANYLAB-PAGEREQ "
RESULT_PREFIX = "MANYLAB-RESULT "
CONSOLE = "console.log"
TRACE = "trace.mlpt"
REQUESTS = "requests.csv"
REQUEST_COLUMNS = ("time_ns", "cpu", "pid", "oom_score_adj", "op", "cache", "via", "dev",
                   "ino", "index", "nid")


class CaptureError(LabError, ValueError):
    """Record lines that are malformed or missing."""


@dataclass(frozen=True)
class GuestRequest:
    """One recorded request, as the guest kernel printed it."""

    time_ns: int
    cpu: int
    pid: int
    oom_score_adj: int
    write: bool
    hit: bool
    fault: bool
    major: int
    minor: int
    ino: int
    index: int
    nid: int

    @property
    def dev(self) -> int:
        """The device number in Linux ``new_encode_dev`` form (what ``stat`` reports)."""
        return (self.minor & 0xFF) | (self.major << 8) | ((self.minor & ~0xFF) << 12)


@dataclass(frozen=True)
class NodePages:
    """Per NUMA node, the free pages, the page cache on its file LRU lists and the zones'
    summed high watermark as a recording started."""

    free: dict[int, int]
    file: dict[int, int]
    high_watermark: dict[int, int]

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> NodePages:
        def nodes(key: str) -> dict[int, int]:
            value = result.get(key)
            if not isinstance(value, dict):
                raise ValueError(f"pagereq-start: no '{key}' object")
            return {int(node): int(pages) for node, pages in value.items()}
        return cls(nodes("free_pages"), nodes("file_pages"), nodes("high_watermark"))


@dataclass
class Capture:
    """The requests of a console, in time order, and what the dumps said about them."""

    requests: list[GuestRequest] = field(default_factory=list)
    dumps: list[dict[str, int]] = field(default_factory=list)
    starts: list[NodePages] = field(default_factory=list)

    @property
    def dropped(self) -> int:
        return sum(d.get("dropped", 0) for d in self.dumps)


def parse_record(text: str) -> GuestRequest:
    """One record line's fields (after the prefix); ValueError naming what is wrong."""
    fields = text.split()
    if len(fields) != 11:
        raise ValueError(f"expected 11 fields, got {len(fields)}")
    time_ns, cpu, pid, adj, op, cache, via, dev, ino, index, nid = fields
    if op not in ("R", "W"):
        raise ValueError(f"bad op '{op}' (R or W)")
    if cache not in ("hit", "miss"):
        raise ValueError(f"bad cache result '{cache}' (hit or miss)")
    if via not in ("io", "fault"):
        raise ValueError(f"bad path '{via}' (io or fault)")
    major, sep, minor = dev.partition(":")
    if not sep:
        raise ValueError(f"bad device '{dev}' (MAJOR:MINOR)")
    try:
        return GuestRequest(int(time_ns), int(cpu), int(pid), int(adj), op == "W",
                            cache == "hit", via == "fault", int(major), int(minor), int(ino),
                            int(index), int(nid))
    except ValueError:
        raise ValueError(f"a field is not a number: '{text.strip()}'") from None


def parse(lines: Iterable[str]) -> Capture:
    """The record lines and pagereq summaries of a console, checked against each other: every
    dump announces how many records it printed, and they must all be there."""
    capture = Capture()
    for number, line in enumerate(lines, 1):
        position = line.find(PREFIX)
        if position >= 0:
            try:
                capture.requests.append(parse_record(line[position + len(PREFIX):]))
            except ValueError as error:
                raise CaptureError(f"console line {number}: {error}") from None
            continue
        position = line.find(RESULT_PREFIX)
        if position < 0:
            continue
        try:
            result = json.loads(line[position + len(RESULT_PREFIX):])
        except json.JSONDecodeError:
            continue  # a workload's result line, cut: the point's own check reports it
        if not isinstance(result, dict):
            continue
        if result.get("tool") == "pagereq":
            capture.dumps.append({k: int(v) for k, v in result.items() if k != "tool"})
        elif result.get("tool") == "pagereq-start":
            try:
                capture.starts.append(NodePages.from_result(result))
            except (TypeError, ValueError) as error:
                raise CaptureError(f"console line {number}: {error}") from None
    announced = sum(d.get("records", 0) for d in capture.dumps)
    if not capture.dumps:
        raise CaptureError("no pagereq dump on the console (run 'pagereq dump' after the "
                           "workload)")
    if announced != len(capture.requests):
        raise CaptureError(f"the dumps announced {announced} records, the console holds "
                           f"{len(capture.requests)}: lines were lost")
    capture.requests.sort(key=lambda r: r.time_ns)  # stable: each CPU's records in order
    return capture


def console_of(source: Path) -> Path:
    """The console log of a point folder, of a study folder holding one point, or the file."""
    if source.is_file():
        return source
    if (source / CONSOLE).is_file():
        return source / CONSOLE
    points = sorted(p for p in source.glob(f"*/{CONSOLE}") if not p.parent.name.startswith("."))
    if len(points) == 1:
        return points[0]
    if not points:
        raise CaptureError(f"{source}: no {CONSOLE} here or in a point folder below")
    raise CaptureError(f"{source}: {len(points)} points; name one of "
                       f"{', '.join(p.parent.name for p in points)}")


def load(source: Path) -> Capture:
    console = console_of(source)
    with console.open(errors="replace") as f:
        try:
            return parse(f)
        except CaptureError as error:
            raise CaptureError(f"{console}: {error}") from None


def trace_records(capture: Capture) -> list[traceio.Record]:
    """The requests as trace records: ns from the first request, the raw oom_score_adj and no
    state (the simulator derives it)."""
    start = capture.requests[0].time_ns if capture.requests else 0
    return [traceio.Record(index=r.index, state="", write=r.write, time=r.time_ns - start,
                           dev=r.dev, ino=r.ino, pid=r.pid, oom_adj=r.oom_score_adj)
            for r in capture.requests]


TRACE_INFO = traceio.TraceInfo(time_ns=True, oom_score_adj=True)


def write_requests(capture: Capture, path: Path) -> None:
    start = capture.requests[0].time_ns if capture.requests else 0
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(REQUEST_COLUMNS)
        for r in capture.requests:
            out.writerow([r.time_ns - start, r.cpu, r.pid, r.oom_score_adj,
                          "W" if r.write else "R", "hit" if r.hit else "miss",
                          "fault" if r.fault else "io", f"{r.major}:{r.minor}", r.ino, r.index,
                          r.nid])


def write(capture: Capture, trace: Path, requests: Path | None) -> int:
    """Write the trace (``.mlpt``, or CSV by extension) and the kernel's view of the
    requests; returns the record count."""
    trace.parent.mkdir(parents=True, exist_ok=True)
    records = trace_records(capture)
    if trace.suffix.lower() == ".csv":
        with trace.open("w") as f:
            n = traceio.write_csv(f, records, TRACE_INFO)
    else:
        n = traceio.write_mlpt(trace, records, TRACE_INFO)
    if requests is not None:
        requests.parent.mkdir(parents=True, exist_ok=True)
        write_requests(capture, requests)
    return n


def summary(capture: Capture) -> dict[str, int]:
    reqs = capture.requests
    return {
        "requests": len(reqs),
        "reads": sum(not r.write for r in reqs),
        "writes": sum(r.write for r in reqs),
        "hits": sum(r.hit for r in reqs),
        "misses": sum(not r.hit for r in reqs),
        "faults": sum(r.fault for r in reqs),
        "processes": len({r.pid for r in reqs}),
        "files": len({(r.dev, r.ino) for r in reqs}),
        "pages": len({(r.dev, r.ino, r.index) for r in reqs}),
        "dropped": capture.dropped,
    }
