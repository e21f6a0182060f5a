"""Trace formats in Python: the ``.mlpt`` binary format and the CSV form, streaming both ways.

Mirrors ``pcmsim/src/trace`` (the format is specified byte by byte in docs/pcm-policy.md);
use it to write traces from Python tools or to check small traces. For large conversions use
``manylab pcm-policy convert`` (the Rust binary).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, TextIO

MAGIC = b"MLPAGETR"
VERSION = 1
# magic, version, header_bytes, record_bytes, flags, page_bytes, reserved, record count
HEADER = struct.Struct("<8sHHHHIIQ")
RECORD = struct.Struct("<QQQIIhBB4x")  # time ino index dev pid oom_adj state op reserved
FLAG_TIME_NS = 1
FLAG_PHYSICAL = 2
OOM_ADJ_UNKNOWN = -32768
STATES = ("foreground", "visible", "service", "background", "empty")
COLUMNS = ("time", "dev", "ino", "index", "pid", "state", "oom_adj", "op")

assert HEADER.size == 32 and RECORD.size == 40


class TraceFormatError(ValueError):
    """Malformed trace input; the message names the line and/or record number."""


def state_from_oom_adj(adj: int) -> str:
    """Android oom_adj (pre-Lollipop scale) to a process state, as the Rust reader maps it."""
    if adj == 0:
        return "foreground"
    if 1 <= adj <= 2:
        return "visible"
    if 3 <= adj <= 5:
        return "service"
    if 6 <= adj <= 8:
        return "background"
    if adj >= 9:
        return "empty"
    return "service"


@dataclass(frozen=True)
class Record:
    """One page request. ``dev == ino == 0`` means ``index`` is a physical frame number."""

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
    time_ns: bool = False
    physical: bool = False
    page_bytes: int = 4096
    records: int | None = field(default=None)


# ---------------------------------------------------------------- CSV


def _parse_meta(line: str, info: TraceInfo) -> TraceInfo:
    kv = dict(p.split("=", 1) for p in line.lstrip("#").split()[1:] if "=" in p)
    return TraceInfo(
        time_ns=kv.get("time_ns", "1" if info.time_ns else "0") == "1",
        physical=kv.get("physical", "1" if info.physical else "0") == "1",
        page_bytes=int(kv["page_bytes"]) if kv.get("page_bytes", "").isdigit() else info.page_bytes,
    )


_RANGES = {
    "time": (0, 2**64 - 1),
    "ino": (0, 2**64 - 1),
    "dev": (0, 2**32 - 1),
    "pid": (0, 2**32 - 1),
    "oom_adj": (-(2**15), 2**15 - 1),
}


def _int(fields: list[str], col: int | None, name: str, default: int) -> int:
    if col is None or fields[col] == "":
        return default
    lo, hi = _RANGES[name]
    try:
        v = int(fields[col])
    except ValueError:
        raise ValueError(f"bad {name} '{fields[col]}'") from None
    if not lo <= v <= hi:
        raise ValueError(f"bad {name} '{fields[col]}'")
    return v


class CsvReader:
    """Streaming CSV trace reader; iterate to get :class:`Record` objects."""

    def __init__(self, f: TextIO) -> None:
        self._f = f
        self.info = TraceInfo()
        self._lineno = 0
        self._n = 0
        header: str | None = None
        for raw in f:
            self._lineno += 1
            t = raw.strip()
            if t.startswith("# mlpt"):
                self.info = _parse_meta(t, self.info)
            if t and not t.startswith("#"):
                header = t
                break
        if header is None:
            raise TraceFormatError("empty CSV trace: no header row")
        names = [s.strip() for s in header.split(",")]
        self._cols: dict[str, int] = {}
        for i, name in enumerate(names):
            if name not in COLUMNS:
                raise TraceFormatError(
                    f"line {self._lineno}: unknown column '{name}' (known: {', '.join(COLUMNS)})"
                )
            if name in self._cols:
                raise TraceFormatError(f"line {self._lineno}: duplicate column '{name}'")
            self._cols[name] = i
        if "index" not in self._cols or "op" not in self._cols:
            raise TraceFormatError(
                f"line {self._lineno}: header must name the columns 'index' and 'op'"
            )
        if "state" not in self._cols and "oom_adj" not in self._cols:
            raise TraceFormatError(f"line {self._lineno}: header must name 'state' or 'oom_adj'")
        self._ncols = len(names)

    def _parse(self, line: str, n: int) -> Record:
        f = [s.strip() for s in line.split(",")]
        if len(f) != self._ncols:
            raise ValueError(f"expected {self._ncols} fields, got {len(f)}")
        c = self._cols.get
        idx_col = self._cols["index"]
        if f[idx_col] == "":
            raise ValueError("missing index")
        try:
            index = int(f[idx_col])
        except ValueError:
            raise ValueError(f"bad index '{f[idx_col]}'") from None
        if index < 0:
            raise ValueError(f"bad index '{f[idx_col]}'")
        oom_adj = _int(f, c("oom_adj"), "oom_adj", OOM_ADJ_UNKNOWN)
        scol = c("state")
        state = f[scol] if scol is not None else ""
        if state:
            if state not in STATES:
                raise ValueError(f"bad state '{state}' ({', '.join(STATES)})")
        elif oom_adj != OOM_ADJ_UNKNOWN:
            state = state_from_oom_adj(oom_adj)
        else:
            raise ValueError("no state and no oom_adj")
        op = f[self._cols["op"]]
        if op in ("R", "r", "read"):
            write = False
        elif op in ("W", "w", "write"):
            write = True
        else:
            raise ValueError(f"bad op '{op}' (R or W)")
        return Record(
            index=index,
            state=state,
            write=write,
            time=_int(f, c("time"), "time", n - 1),
            dev=_int(f, c("dev"), "dev", 0),
            ino=_int(f, c("ino"), "ino", 0),
            pid=_int(f, c("pid"), "pid", 0),
            oom_adj=oom_adj,
        )

    def __iter__(self) -> Iterator[Record]:
        for raw in self._f:
            self._lineno += 1
            t = raw.strip()
            if not t or t.startswith("#"):
                continue
            self._n += 1
            try:
                yield self._parse(t, self._n)
            except ValueError as e:
                raise TraceFormatError(f"line {self._lineno} (record {self._n}): {e}") from None


def write_csv(f: TextIO, records: Iterable[Record], info: TraceInfo | None = None) -> int:
    """Write records as CSV with every column; returns the count."""
    info = info or TraceInfo()
    f.write(
        f"# mlpt time_ns={int(info.time_ns)} physical={int(info.physical)} "
        f"page_bytes={info.page_bytes}\n"
    )
    f.write(",".join(COLUMNS) + "\n")
    n = 0
    for r in records:
        adj = "" if r.oom_adj == OOM_ADJ_UNKNOWN else str(r.oom_adj)
        op = "W" if r.write else "R"
        f.write(f"{r.time},{r.dev},{r.ino},{r.index},{r.pid},{r.state},{adj},{op}\n")
        n += 1
    return n


# ---------------------------------------------------------------- binary


def write_binary(f: BinaryIO, records: Iterable[Record], info: TraceInfo | None = None) -> int:
    """Write the ``.mlpt`` format; the count is patched into the header if ``f`` can seek."""
    info = info or TraceInfo()
    flags = (FLAG_TIME_NS if info.time_ns else 0) | (FLAG_PHYSICAL if info.physical else 0)
    f.write(HEADER.pack(MAGIC, VERSION, HEADER.size, RECORD.size, flags, info.page_bytes, 0, 0))
    n = 0
    for r in records:
        state = STATES.index(r.state)
        f.write(RECORD.pack(r.time, r.ino, r.index, r.dev, r.pid, r.oom_adj, state, int(r.write)))
        n += 1
    if f.seekable():
        end = f.tell()
        f.seek(24)
        f.write(struct.pack("<Q", n))
        f.seek(end)
    return n


class BinaryReader:
    """Streaming ``.mlpt`` reader."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        head = f.read(HEADER.size)
        if len(head) < HEADER.size:
            raise TraceFormatError("header: truncated (need 32 bytes)")
        magic, version, hbytes, rbytes, flags, page_bytes, _, count = HEADER.unpack(head)
        if magic != MAGIC:
            raise TraceFormatError("header: bad magic (not an .mlpt trace)")
        if version != VERSION:
            raise TraceFormatError(
                f"header: unsupported version {version} (this reader: {VERSION})"
            )
        if hbytes < HEADER.size or rbytes < RECORD.size:
            raise TraceFormatError(
                f"header: header_bytes {hbytes} / record_bytes {rbytes} below 32 / 40"
            )
        if flags & ~(FLAG_TIME_NS | FLAG_PHYSICAL):
            raise TraceFormatError(f"header: unknown flags 0x{flags:04x}")
        f.read(hbytes - HEADER.size)
        self._rbytes = rbytes
        self.info = TraceInfo(
            time_ns=bool(flags & FLAG_TIME_NS),
            physical=bool(flags & FLAG_PHYSICAL),
            page_bytes=page_bytes,
            records=count or None,
        )

    def __iter__(self) -> Iterator[Record]:
        n = 0
        while True:
            b = self._f.read(self._rbytes)
            if not b:
                if self.info.records is not None and self.info.records != n:
                    raise TraceFormatError(f"header says {self.info.records} records, file has {n}")
                return
            n += 1
            if len(b) < self._rbytes:
                raise TraceFormatError(
                    f"record {n}: truncated record ({len(b)} of {self._rbytes} bytes)"
                )
            time, ino, index, dev, pid, adj, state, op = RECORD.unpack_from(b)
            if state >= len(STATES):
                raise TraceFormatError(f"record {n}: invalid state code {state} (0..4)")
            if op > 1:
                raise TraceFormatError(f"record {n}: invalid op code {op} (0 read, 1 write)")
            yield Record(index, STATES[state], op == 1, time, dev, ino, pid, adj)
