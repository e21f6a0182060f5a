"""A small ELF reader: what the dynamic loader needs to start a program, read from the file.

`info(data)` returns a 64-bit little-endian ELF file's machine, its program interpreter
(PT_INTERP: the dynamic loader's path) and its dynamic section's DT_NEEDED, DT_SONAME,
DT_RUNPATH and DT_RPATH strings. `resolve()` finds, for a program, every shared library it
loads (DT_NEEDED, recursively, the way the loader searches: RPATH when no RUNPATH, RUNPATH,
then the default directories), in root trees that stand for the guest's file system (unpacked
Debian packages), and the loader itself. Nothing on the host's own /lib is consulted.

Only what x86_64 and arm64 guests use: ELFCLASS64, ELFDATA2LSB, and the multiarch default
directories of Debian's glibc.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from manylab.errors import LabError

EM_NAMES = {62: "x86_64", 183: "arm64"}
TRIPLETS = {"x86_64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}

PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
DT_NULL, DT_NEEDED, DT_STRTAB, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 14, 15, 29
MAX_SYMLINKS = 40


@dataclass(frozen=True)
class ElfInfo:
    machine: str  # "x86_64", "arm64", or "e_machine=N" for others
    interp: str | None  # PT_INTERP, e.g. /lib64/ld-linux-x86-64.so.2; None for a library
    needed: tuple[str, ...]  # DT_NEEDED, in the file's order
    soname: str | None
    runpath: tuple[str, ...]  # DT_RUNPATH, split at ':'
    rpath: tuple[str, ...]  # DT_RPATH (used only when there is no DT_RUNPATH)


def is_elf(data: bytes) -> bool:
    return data[:4] == b"\x7fELF"


def info(data: bytes, where: str = "file") -> ElfInfo:
    """The loading facts of one ELF file's bytes; LabError for a file that is not a 64-bit
    little-endian ELF or whose headers point outside it."""
    if not is_elf(data) or len(data) < 64:
        raise LabError(f"{where}: not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise LabError(f"{where}: only 64-bit little-endian ELF files are read "
                       f"(class {data[4]}, data {data[5]})")
    try:
        return _info(data)
    except (struct.error, ValueError):  # ValueError: no string end; UnicodeDecodeError too
        raise LabError(f"{where}: truncated ELF file (a header points past its end)") from None


def _info(data: bytes) -> ElfInfo:
    e_machine = struct.unpack_from("<H", data, 18)[0]
    e_phoff = struct.unpack_from("<Q", data, 32)[0]
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    interp: str | None = None
    dynamic: tuple[int, int] | None = None
    for index in range(e_phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, e_phoff + index * e_phentsize)
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_INTERP:
            interp = _cstring(data, p_offset)
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    entries: list[tuple[int, int]] = []
    if dynamic is not None:
        offset, size = dynamic
        for at in range(offset, offset + size - 15, 16):
            tag, value = struct.unpack_from("<qQ", data, at)
            if tag == DT_NULL:
                break
            entries.append((tag, value))
    strtab_vaddr = next((value for tag, value in entries if tag == DT_STRTAB), None)
    strtab = _file_offset(loads, strtab_vaddr) if strtab_vaddr is not None else None

    def strings(wanted: int) -> list[str]:
        if strtab is None:
            return []
        return [_cstring(data, strtab + value) for tag, value in entries if tag == wanted]

    def paths(wanted: int) -> tuple[str, ...]:
        return tuple(part for text in strings(wanted) for part in text.split(":") if part)

    sonames = strings(DT_SONAME)
    return ElfInfo(EM_NAMES.get(e_machine, f"e_machine={e_machine}"), interp,
                   tuple(strings(DT_NEEDED)), sonames[0] if sonames else None,
                   paths(DT_RUNPATH), paths(DT_RPATH))


def _file_offset(loads: list[tuple[int, int, int]], vaddr: int) -> int:
    for start, offset, size in loads:
        if start <= vaddr < start + size:
            return offset + (vaddr - start)
    raise struct.error("address outside every PT_LOAD segment")


def _cstring(data: bytes, offset: int) -> str:
    end = data.index(b"\0", offset)
    return data[offset:end].decode()


def default_dirs(arch: str) -> tuple[str, ...]:
    """The directories Debian's glibc loader searches when no ld.so.cache names a library."""
    triplet = TRIPLETS[arch]
    return (f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib", "/usr/lib")


@dataclass(frozen=True)
class Found:
    """A guest path (absolute) and the host file holding its bytes (symlinks followed)."""
    guest: str
    host: Path
    root: Path  # the tree it was found in


def locate(roots: Sequence[Path], guest: str) -> Found | None:
    """The file a guest path names in the first root tree holding it, following symlinks
    (absolute ones relative to that tree's root, never to the host's); None when absent."""
    for root in roots:
        host = _follow(root, PurePosixPath(guest))
        if host is not None:
            return Found(guest, host, root)
    return None


def _follow(root: Path, guest: PurePosixPath) -> Path | None:
    parts = list(guest.parts[1:] if guest.is_absolute() else guest.parts)
    current = PurePosixPath("/")
    hops = 0
    while parts:
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        host = root / candidate.relative_to("/")
        if host.is_symlink():
            hops += 1
            if hops > MAX_SYMLINKS:
                return None
            target = PurePosixPath(str(host.readlink()))
            if target.is_absolute():
                current = PurePosixPath("/")
                parts = list(target.parts[1:]) + parts
            else:
                parts = list(target.parts) + parts
            continue
        if not host.exists():
            return None
        current = candidate
    host = root / current.relative_to("/")
    return host if host.is_file() else None


@dataclass(frozen=True)
class Closure:
    """What a set of programs loads: the loader and every shared library, by guest path."""
    loader: Found
    libraries: tuple[Found, ...]  # sorted by guest path
    needed_by: dict[str, tuple[str, ...]]  # guest path -> the sonames it needs


def resolve(programs: Sequence[Found], roots: Sequence[Path], arch: str) -> Closure:
    """The loader and the shared libraries (DT_NEEDED, recursively) of dynamic programs for
    the guest arch, found in the root trees; LabError naming a program whose arch differs, a
    library found nowhere (and who needs it), or programs that are not dynamic."""
    defaults = default_dirs(arch)
    loader: Found | None = None
    found: dict[str, Found] = {}  # soname -> where
    needed_by: dict[str, tuple[str, ...]] = {}
    queue: list[Found] = list(programs)
    done: set[str] = set()
    while queue:
        item = queue.pop(0)
        if item.guest in done:
            continue
        done.add(item.guest)
        facts = info(item.host.read_bytes(), item.guest)
        if facts.machine != arch:
            raise LabError(f"{item.guest} ({item.host}) is for {facts.machine}, not {arch}")
        if facts.interp is not None and item in programs:  # (glibc's libc.so.6 has one too)
            there = locate(roots, facts.interp)
            if there is None:
                raise LabError(f"{item.guest} needs the loader {facts.interp}, which none of "
                               f"{', '.join(str(r) for r in roots)} holds: add the libc "
                               "package of the arch")
            if loader is not None and loader.guest != there.guest:
                raise LabError(f"{item.guest} asks for the loader {there.guest}, another "
                               f"program for {loader.guest}")
            loader = there
        needed_by[item.guest] = facts.needed
        origin = str(PurePosixPath(item.guest).parent)
        search = [p.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
                  for p in (facts.rpath if not facts.runpath else ())]
        search += [p.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)
                   for p in facts.runpath]
        search += defaults
        for soname in facts.needed:
            if soname in found:
                continue
            if "/" in soname:
                hit = locate(roots, soname)
            else:
                hit = next((h for d in search
                            if (h := locate(roots, f"{d.rstrip('/')}/{soname}")) is not None),
                           None)
            if hit is None:
                raise LabError(f"{item.guest} needs {soname}, found in none of "
                               f"{', '.join(defaults)} of the unpacked packages: the library's "
                               "package is missing from the dependency walk")
            found[soname] = hit
            queue.append(hit)
    if loader is None:
        names = ", ".join(p.guest for p in programs)
        raise LabError(f"{names}: no program interpreter (static programs need no bundle)")
    libraries = sorted({f.guest: f for f in found.values() if f.guest != loader.guest}.values(),
                       key=lambda f: f.guest)
    return Closure(loader, tuple(libraries), needed_by)
