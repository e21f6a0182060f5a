"""Optional bundles of the root image: Debian packages' dynamic programs, with their shared
libraries and the dynamic loader, for x86_64 and arm64 guests.

A bundle (buildroot-external/image-contents.txt, kinds `debs`, `programs`, `overlay`) names
Debian packages, the programs of theirs to install, and a folder of the clone copied over the
root. Only the images of points whose workload asks for a bundle (manylab/workloads.py
`bundles`) carry it; every other image is built as before, with the same key.

Fetch (once per arch and bundle, `fetch()`; scripts/setup.sh runs it for every bundle and both
arches): `apt-cache show` gives each package's candidate version, Section, sha256 and
dependencies; the walk follows Pre-Depends and Depends (the first alternative of each) into
packages of Section libs or oldlibs only, so `exim4-daemon-light` brings glibc, gnutls and the
rest of its libraries but not exim4-base, debconf or cron. `apt-get download` fetches the
.debs into `<cache>/debs/<deb arch>/`, each checked against apt's sha256, and
`<cache>/debs/<deb arch>/<bundle>.json` records the set (names, versions, sha256s). That
record, not apt's candidate of the day, keys the image: a Debian update changes no image until
the record is fetched again (`python -m manylab.image_packages fetch --refresh`).

Install (`install()`): each .deb is unpacked once (dpkg-deb -x) into
`<cache>/debs/<deb arch>/unpacked/`; each program's ELF NEEDED entries are resolved
recursively in those trees the way Debian's loader searches (manylab/elf.py), never against
the host's /lib; the programs, every library they load (copied under the soname the loader
asks for) and the loader (PT_INTERP) go into the root tree at their Debian paths, and the
bundle's overlay on top. The image's manifest and each point's inputs.json list the packages
with versions and sha256s and the files each gave.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from manylab import atomic, elf, image_contents
from manylab.atomic import file_lock
from manylab.errors import LabError
from manylab.hashing import sha256_file
from manylab.paths import REPO_ROOT, cache_root, require_tool

IMAGE_PACKAGES_VERSION = 1
DEB_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
LIBRARY_SECTIONS = ("libs", "oldlibs")
RECORD_FIELDS = ("name", "version", "architecture", "section", "sha256", "size", "filename")


def pool(arch: str) -> Path:
    path = cache_root() / "debs" / DEB_ARCH[arch]
    path.mkdir(parents=True, exist_ok=True)
    return path


def record_path(arch: str, bundle: str) -> Path:
    return pool(arch) / f"{bundle}.json"


# ---------------------------------------------------------------- apt: what to fetch


def _apt_env() -> dict[str, str]:
    return {**os.environ, "LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"}


def parse_paragraphs(text: str) -> list[dict[str, str]]:
    """Debian control paragraphs (apt-cache show's output) as field -> value (continuation
    lines joined with a space)."""
    paragraphs: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last = ""
    for line in text.splitlines():
        if not line.strip():
            if current:
                paragraphs.append(current)
            current, last = {}, ""
        elif line[0] in " \t" and last:
            current[last] += " " + line.strip()
        elif ":" in line:
            last, _, value = line.partition(":")
            current[last] = value.strip()
    if current:
        paragraphs.append(current)
    return paragraphs


def dependency_names(field: str) -> list[str]:
    """The package each relation of a Depends field asks for first: `a (>= 1) | b, c:any`
    -> [a, c]."""
    names = []
    for relation in field.split(","):
        first = relation.split("|")[0].strip()
        name = re.split(r"[\s(\[<]", first, maxsplit=1)[0].split(":")[0]
        if name:
            names.append(name)
    return names


def _show(names: Sequence[str], deb_arch: str) -> dict[str, dict[str, str]]:
    """apt-cache show --no-all-versions for the arch: package name -> its paragraph. Names
    apt does not know as real packages (virtual ones) are absent."""
    apt_cache = require_tool("apt-cache", "apt")
    result = subprocess.run([apt_cache, "show", "--no-all-versions",
                             *(f"{n}:{deb_arch}" for n in names)],
                            capture_output=True, text=True, check=False, env=_apt_env())
    found: dict[str, dict[str, str]] = {}
    for paragraph in parse_paragraphs(result.stdout):
        if "Package" in paragraph and "SHA256" in paragraph:
            found.setdefault(paragraph["Package"], paragraph)
    return found


def walk(roots: Sequence[str], deb_arch: str) -> list[dict[str, str]]:
    """The root packages and their library dependencies (Section libs/oldlibs), recursively,
    as apt's candidate paragraphs sorted by name; LabError for a root apt does not know."""
    chosen: dict[str, dict[str, str]] = {}
    asked: set[str] = set()
    frontier = list(dict.fromkeys(roots))
    while frontier:
        asked.update(frontier)
        shown = _show(frontier, deb_arch)
        for name in frontier:
            paragraph = shown.get(name)
            if paragraph is None:
                if name in roots:
                    raise LabError(
                        f"apt knows no package {name}:{deb_arch}: run scripts/setup.sh (it adds "
                        f"the {deb_arch} architecture and updates apt's lists)")
                continue  # a virtual package: only non-library relations name them
            if name in roots or paragraph.get("Section", "").split("/")[-1] in LIBRARY_SECTIONS:
                chosen[name] = paragraph
        following: list[str] = []
        for name in frontier:
            if name not in chosen:
                continue
            relations = ", ".join(chosen[name].get(f, "") for f in ("Pre-Depends", "Depends"))
            following += [d for d in dependency_names(relations) if d not in asked]
        frontier = list(dict.fromkeys(following))
    return [chosen[name] for name in sorted(chosen)]


def deb_filename(paragraph: dict[str, str]) -> str:
    """The name apt-get download saves a package under (the epoch's ':' as %3a)."""
    version = paragraph["Version"].replace(":", "%3a")
    return f"{paragraph['Package']}_{version}_{paragraph['Architecture']}.deb"


def _download(records: Sequence[dict[str, Any]], folder: Path) -> None:
    """apt-get download each record's exact version into folder, unless a file with its
    sha256 is there; LabError when a download fails or a file's sha256 differs."""
    missing = [r for r in records if not _have(folder / r["filename"], r["sha256"])]
    if not missing:
        return
    apt_get = require_tool("apt-get", "apt")
    wanted = [f"{r['name']}:{r['architecture']}={r['version']}" for r in missing]
    print(f"manylab: downloading {len(wanted)} Debian packages into {folder}", file=sys.stderr)
    result = subprocess.run([apt_get, "download", "-q", *wanted], cwd=folder,
                            capture_output=True, text=True, check=False, env=_apt_env())
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise LabError(f"apt-get download failed in {folder}: {last}: check the network and "
                       "apt's sources, then run scripts/setup.sh")
    for record in missing:
        path = folder / record["filename"]
        if not _have(path, record["sha256"]):
            raise LabError(f"{path}: missing or not the sha256 apt lists ({record['sha256']}): "
                           "delete it and fetch again")


def _have(path: Path, sha256: str) -> bool:
    return path.is_file() and sha256_file(path) == sha256


def fetch(bundle_name: str, arch: str, refresh: bool = False) -> dict[str, Any]:
    """The bundle's package record for the arch, fetching it (apt) when absent or `refresh`;
    its .debs are in pool(arch) and checked against the record."""
    bundle = image_contents.bundle(bundle_name)
    if arch not in DEB_ARCH:
        raise LabError(f"unknown arch '{arch}': choose one of {', '.join(DEB_ARCH)}")
    path = record_path(arch, bundle_name)
    with file_lock(pool(arch) / ".fetch.lock"):
        record = None if refresh else _read_record(path)
        if record is not None and record.get("roots") == list(bundle.debs):
            return record
        paragraphs = walk(bundle.debs, DEB_ARCH[arch])
        packages = [{
            "name": p["Package"], "version": p["Version"], "architecture": p["Architecture"],
            "section": p.get("Section", ""), "sha256": p["SHA256"], "size": int(p["Size"]),
            "filename": deb_filename(p),
        } for p in paragraphs]
        _download(packages, pool(arch))
        record = {"bundle": bundle_name, "arch": arch, "roots": list(bundle.debs),
                  "packages": packages}
        atomic.write_json(path, record)
        return record


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("packages"), list):
        return None
    for package in value["packages"]:
        if not isinstance(package, dict) or set(RECORD_FIELDS) - set(package):
            return None
    return value


# ---------------------------------------------------------------- the image key


def overlay_files(bundle: image_contents.Bundle) -> list[tuple[str, Path]]:
    """(guest path relative to the root, file in the clone) of the bundle's overlay folders."""
    files: list[tuple[str, Path]] = []
    for folder in bundle.overlay:
        base = REPO_ROOT / folder
        files += [(p.relative_to(base).as_posix(), p) for p in sorted(base.rglob("*"))
                  if p.is_file() or p.is_symlink()]
    return files


def key_inputs(arch: str, bundles: Sequence[str]) -> dict[str, Any]:
    """What of the bundles keys an image: per bundle its packages (name, version, sha256), its
    programs and its overlay files' modes and digests. Fetches a bundle not yet fetched."""
    inputs: dict[str, Any] = {"version": IMAGE_PACKAGES_VERSION}
    for name in sorted(set(bundles)):
        bundle = image_contents.bundle(name)
        record = fetch(name, arch)
        inputs[name] = {
            "packages": [[p["name"], p["version"], p["sha256"]] for p in record["packages"]],
            "programs": list(bundle.programs),
            "overlay": [[rel, os.lstat(p).st_mode & 0o7777,
                         sha256_file(p) if not p.is_symlink() else str(p.readlink())]
                        for rel, p in overlay_files(bundle)],
        }
    return inputs


# ---------------------------------------------------------------- install into a root tree


def unpacked(arch: str, package: dict[str, Any]) -> Path:
    """The package's files, unpacked once (dpkg-deb -x) below the pool."""
    folder = pool(arch) / "unpacked" / f"{package['name']}_{package['sha256'][:16]}"
    if (folder / ".complete").is_file():
        return folder
    deb = pool(arch) / package["filename"]
    if not _have(deb, package["sha256"]):
        _download([package], pool(arch))
    dpkg_deb = require_tool("dpkg-deb", "dpkg")
    staging = folder.with_name(f".{folder.name}.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    result = subprocess.run([dpkg_deb, "-x", str(deb), str(staging)], capture_output=True,
                            text=True, check=False)
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise LabError(f"dpkg-deb -x {deb} failed: {result.stderr.strip()}")
    (staging / ".complete").write_text(package["sha256"] + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(staging, folder)
    return folder


def _owner(trees: dict[str, Path], found: elf.Found) -> str:
    return next(name for name, tree in trees.items() if tree == found.root)


def _copy(source: Path, tree: Path, guest: str) -> None:
    target = tree / guest.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        target.unlink()
    shutil.copyfile(source, target)
    os.chmod(target, source.stat().st_mode & 0o7777)


def install(tree: Path, arch: str, bundles: Sequence[str]) -> dict[str, Any]:
    """Put the bundles into a root tree; return what went in, per bundle: the packages and the
    guest files each gave (the image manifest's and inputs.json's record)."""
    installed: dict[str, Any] = {}
    for name in sorted(set(bundles)):
        bundle = image_contents.bundle(name)
        record = fetch(name, arch)
        with file_lock(pool(arch) / ".unpack.lock"):  # images of one arch built at once
            trees = {p["name"]: unpacked(arch, p) for p in record["packages"]}
        order = [*(n for n in bundle.debs if n in trees),
                 *(n for n in sorted(trees) if n not in bundle.debs)]
        roots = [trees[n] for n in order]
        programs = []
        for path in bundle.programs:
            hit = elf.locate([trees[n] for n in bundle.debs if n in trees], path)
            if hit is None:
                raise LabError(f"bundle {name}: {path} is in none of the packages "
                               f"{', '.join(bundle.debs)} for {arch}: fix its `programs` line")
            programs.append(hit)
        closure = elf.resolve(programs, roots, arch)
        files: dict[str, list[str]] = {}
        for item in [*programs, *closure.libraries]:
            _copy(item.host, tree, item.guest)
            files.setdefault(_owner(trees, item), []).append(item.guest)
        loader = closure.loader
        twin = next((lib for lib in closure.libraries if lib.host == loader.host), None)
        link = tree / loader.guest.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        if twin is not None:  # the loader is also a library (libc's NEEDED): link, not copy
            relative = os.path.relpath(twin.guest, str(PurePosixPath(loader.guest).parent))
            if link.exists() or link.is_symlink():
                link.unlink()
            link.symlink_to(relative)
        else:
            _copy(loader.host, tree, loader.guest)
        files.setdefault(_owner(trees, loader), []).append(loader.guest)
        for rel, source in overlay_files(bundle):
            target = tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists() or target.is_symlink():
                target.unlink()
            shutil.copy2(source, target, follow_symlinks=False)
        installed[name] = {
            "packages": [{"name": p["name"], "version": p["version"],
                          "architecture": p["architecture"], "sha256": p["sha256"],
                          "files": sorted(files.get(p["name"], []))}
                         for p in record["packages"]],
            "programs": list(bundle.programs),
            "loader": loader.guest,
            "overlay": sorted(rel for rel, _ in overlay_files(bundle)),
        }
    return installed


# ---------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m manylab.image_packages fetch [--arch A]... [--bundle B]... [--refresh]`:
    fetch the bundles' packages (all bundles, both arches by default); `show` prints the
    records."""
    parser = argparse.ArgumentParser(prog="python -m manylab.image_packages")
    parser.add_argument("command", choices=("fetch", "show"))
    parser.add_argument("--arch", action="append", choices=sorted(DEB_ARCH))
    parser.add_argument("--bundle", action="append")
    parser.add_argument("--refresh", action="store_true",
                        help="ask apt again (new versions change the images' keys)")
    args = parser.parse_args(argv)
    try:
        names = args.bundle or list(image_contents.contents().bundles)
        for arch in args.arch or sorted(DEB_ARCH):
            for name in names:
                record = fetch(name, arch, refresh=args.refresh and args.command == "fetch")
                versions = ", ".join(f"{p['name']} {p['version']}" for p in record["packages"]
                                     if p["name"] in record["roots"])
                print(f"{name} {arch}: {len(record['packages'])} packages ({versions}): "
                      f"{record_path(arch, name)}")
                if args.command == "show":
                    for package in record["packages"]:
                        print(f"  {package['name']} {package['version']} "
                              f"{package['sha256'][:16]}")
    except LabError as error:
        print(f"manylab: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
