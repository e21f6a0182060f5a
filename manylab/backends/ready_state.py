"""A guest booted to its ready point and saved (a QEMU snapshot, a gem5 checkpoint), cached
like a kernel: keyed by everything the saved state depends on, built once under a lock into a
staging folder that is renamed into the cache whole, every file checked by size and digest
before each use, and rebuilt when a check fails. What a state is and how it is made belong to
its backend; this module owns the cache and the manifest."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manylab import atomic, pointdir
from manylab.errors import LabError
from manylab.hashing import sha256_file, sha256_file_cached, sha256_json

MANIFEST = "manifest.json"


class StateFailed(LabError):
    """The machine could not be booted to its ready point and saved (the reason says why);
    a point then boots from power-on instead."""


@dataclass(frozen=True)
class ReadyState:
    key: str
    directory: Path
    manifest: dict[str, Any]

    def file(self, name: str) -> Path:
        return self.directory / name


def key_of(inputs: dict[str, Any]) -> str:
    return sha256_json(inputs)[:20]


@dataclass(frozen=True)
class Built:
    """What a builder saved: the state's files (paths relative to the staging folder, checked
    before every use) and more fields for the manifest."""
    files: list[str]
    fields: dict[str, Any]


# build(staging) boots the guest, saves its state into staging and says what it saved
Builder = Callable[[Path], Built]

_failed: dict[tuple[Path, str], str] = {}  # states whose build failed in this process


def ensure(root: Path, inputs: dict[str, Any], build: Builder) -> ReadyState:
    """The state of these inputs from the cache under root, checked; built (or rebuilt) when
    missing or damaged. Raises StateFailed when the build fails (once per process and key)."""
    key = key_of(inputs)
    if (root, key) in _failed:
        raise StateFailed(_failed[root, key])
    root.mkdir(parents=True, exist_ok=True)
    directory = root / key
    found = checked(directory, key)
    if found is not None:
        return found
    with atomic.file_lock(root / f"{key}.lock"):
        found = checked(directory, key)
        if found is not None:
            return found
        for leftover in root.glob(f".{key}.build-*"):
            shutil.rmtree(leftover, ignore_errors=True)  # a builder killed outright
        try:
            _build(directory, key, inputs, build)
        except StateFailed as error:
            _failed[root, key] = str(error)
            raise
    found = checked(directory, key)
    if found is None:
        raise LabError(f"{directory}: the build left no usable state")
    return found


def checked(directory: Path, key: str) -> ReadyState | None:
    """The cached state when its manifest names this key and every file it lists has the
    recorded size and digest; a bad one is removed (and then rebuilt) with a note."""
    manifest = pointdir.read_json(directory / MANIFEST)
    if manifest is None:
        return None
    reason = _damage(directory, key, manifest)
    if reason is not None:
        print(f"manylab: {directory}: {reason}: rebuilding it", flush=True)
        trash = directory.with_name(f".{directory.name}.bad-{os.getpid()}")
        os.replace(directory, trash)
        shutil.rmtree(trash, ignore_errors=True)
        return None
    return ReadyState(key, directory, manifest)


def _damage(directory: Path, key: str, manifest: Any) -> str | None:
    if not isinstance(manifest, dict) or manifest.get("key") != key:
        return "its manifest names another key"
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        return "its manifest lists no files"
    for name, recorded in sorted(files.items()):
        path = directory / name
        if not path.is_file() or path.stat().st_size != recorded.get("bytes"):
            return f"its file {name} is missing or of another size"
        if sha256_file_cached(path) != recorded.get("sha256"):
            return f"its file {name} has another digest than the manifest's"
    return None


def _build(directory: Path, key: str, inputs: dict[str, Any], build: Builder) -> None:
    staging = directory.with_name(f".{directory.name}.build-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    kept = directory.with_name(f"{directory.name}.failed")
    try:
        built = build(staging)
        files = {name: {"bytes": (staging / name).stat().st_size,
                        "sha256": sha256_file(staging / name)} for name in built.files}
        atomic.write_json(staging / MANIFEST, {"key": key, "inputs": inputs, "files": files,
                                               **built.fields})
        atomic.replace_dir(staging, directory)
    except BaseException as error:
        shutil.rmtree(kept, ignore_errors=True)
        if staging.exists():
            # keep the build's logs for the reason, not a half-saved state
            for path in staging.rglob("*"):
                if path.is_file() and path.suffix != ".log":
                    path.unlink()
            os.replace(staging, kept)
        if isinstance(error, StateFailed):
            raise StateFailed(f"{error} (logs: {kept})") from error
        raise
