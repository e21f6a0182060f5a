"""Page-request traces from Python, through the simulator, which owns the trace formats.

``manylab-pcmsim`` (``pcmsim/src/trace``; docs/pcm-policy.md specifies both forms) is the one
reader and writer of the binary ``.mlpt`` form and of its CSV form, and the one place that maps
oom values to process states. Python hands it records as CSV (the columns the simulator reads,
filled with what Python knows: a record may leave its state to the simulator and give only its
oom value) and lets ``manylab-pcmsim convert`` write the ``.mlpt``; it reads a trace back through
the simulator's CSV export. So no byte offset or oom range is written down here.
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from manylab.pcm import engine

OOM_ADJ_UNKNOWN = -32768  # the simulator's "not recorded" (an i16's minimum)
STATES = ("foreground", "visible", "service", "background", "empty")


@dataclass(frozen=True)
class Record:
    """One page request. ``dev == ino == 0`` means ``index`` is a physical frame number; an
    empty ``state`` leaves the state to the simulator, which derives it from ``oom_adj``."""

    index: int
    state: str
    write: bool
    time: int = 0
    dev: int = 0
    ino: int = 0
    pid: int = 0
    oom_adj: int = OOM_ADJ_UNKNOWN


@dataclass(frozen=True)
class TraceInfo:
    """What a trace says about itself. ``oom_score_adj``: the records' oom values are Linux
    ``oom_score_adj`` (-1000..1000, what a Linux guest records) instead of Android's
    pre-Lollipop ``oom_adj`` (-17..15); the CSV names the column accordingly."""

    time_ns: bool = False
    physical: bool = False
    page_bytes: int = 4096
    oom_score_adj: bool = False


def _oom_column(info: TraceInfo) -> str:
    return "oom_score_adj" if info.oom_score_adj else "oom_adj"


def write_csv(f: TextIO, records: Iterable[Record], info: TraceInfo | None = None) -> int:
    """Write records in the simulator's CSV form; returns the count."""
    info = info or TraceInfo()
    f.write(
        f"# mlpt time_ns={int(info.time_ns)} physical={int(info.physical)} "
        f"page_bytes={info.page_bytes}\n"
    )
    f.write(f"time,dev,ino,index,pid,state,{_oom_column(info)},op\n")
    n = 0
    for r in records:
        adj = "" if r.oom_adj == OOM_ADJ_UNKNOWN else str(r.oom_adj)
        op = "W" if r.write else "R"
        f.write(f"{r.time},{r.dev},{r.ino},{r.index},{r.pid},{r.state},{adj},{op}\n")
        n += 1
    return n


def write_mlpt(path: Path, records: Iterable[Record], info: TraceInfo | None = None) -> int:
    """Write records as a binary ``.mlpt`` trace at ``path`` (``manylab-pcmsim convert`` of a
    temporary CSV beside it); returns the count."""
    engine.require_binary()
    fd, name = tempfile.mkstemp(prefix=".trace-", suffix=".csv", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            n = write_csv(f, records, info)
        engine.run(["convert", name, str(path)])
    finally:
        os.unlink(name)
    return n


def _parse_meta(line: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in line.lstrip("#").split()[1:] if "=" in p)


def read_csv_export(f: TextIO) -> tuple[TraceInfo, Iterator[Record]]:
    """The records of a CSV the simulator wrote (``manylab-pcmsim convert T.mlpt T.csv``): all
    columns present and valid, so nothing is checked here."""
    meta: dict[str, str] = {}
    header = ""
    for line in f:
        if line.startswith("# mlpt"):
            meta = _parse_meta(line)
        elif line.strip() and not line.startswith("#"):
            header = line.strip()
            break
    names = header.split(",")
    info = TraceInfo(
        time_ns=meta.get("time_ns") == "1",
        physical=meta.get("physical") == "1",
        page_bytes=int(meta.get("page_bytes", "4096")),
        oom_score_adj="oom_score_adj" in names,
    )
    oom = _oom_column(info)

    def records() -> Iterator[Record]:
        for row in csv.DictReader(f, fieldnames=names):
            yield Record(
                index=int(row["index"]),
                state=row["state"],
                write=row["op"] == "W",
                time=int(row["time"]),
                dev=int(row["dev"]),
                ino=int(row["ino"]),
                pid=int(row["pid"]),
                oom_adj=int(row[oom]) if row[oom] else OOM_ADJ_UNKNOWN,
            )

    return info, records()


def read(path: Path) -> tuple[TraceInfo, list[Record]]:
    """A trace file (``.mlpt`` or CSV) as the simulator reads it: its records with their states
    (derived from oom values where the file gives none). Errors are the simulator's."""
    with tempfile.TemporaryDirectory(prefix="manylab-trace-") as tmp:
        export = Path(tmp) / "trace.csv"
        engine.run(["convert", str(path), str(export)])
        with export.open() as f:
            info, records = read_csv_export(f)
            return info, list(records)
