"""A deterministic cpio 'newc' writer (the initramfs format), with device nodes, as non-root."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


@dataclass(frozen=True)
class Entry:
    name: str  # path inside the archive, without a leading slash
    mode: int  # full st_mode, file type included
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)


def _pad(length: int) -> bytes:
    return b"\0" * (-length % 4)


def _header(ino: int, entry: Entry) -> bytes:
    name = entry.name.encode() + b"\0"
    fields = [ino, entry.mode, 0, 0, 1, 0, len(entry.data), 0, 0,
              entry.rdev[0], entry.rdev[1], len(name), 0]
    head = b"070701" + b"".join(f"{value:08x}".encode() for value in fields) + name
    return head + _pad(len(head))


def write(out: BinaryIO, entries: list[Entry]) -> None:
    for ino, entry in enumerate(entries, 1):
        out.write(_header(ino, entry))
        out.write(entry.data)
        out.write(_pad(len(entry.data)))
    trailer = _header(0, Entry("TRAILER!!!", 0))
    out.write(trailer)


def entries_from_tree(root: Path) -> list[Entry]:
    """Every file, folder and symlink below root, sorted, owned by root, mtime 0."""
    entries = []
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            entries.append(Entry(name, stat.S_IFLNK | 0o777, str(path.readlink()).encode()))
        elif stat.S_ISDIR(info.st_mode):
            entries.append(Entry(name, stat.S_IFDIR | stat.S_IMODE(info.st_mode)))
        elif stat.S_ISREG(info.st_mode):
            entries.append(Entry(name, stat.S_IFREG | stat.S_IMODE(info.st_mode),
                                 path.read_bytes()))
    return entries


def console_node() -> Entry:
    """/dev/console, which the kernel opens before init runs (devtmpfs is not mounted yet)."""
    return Entry("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1))
