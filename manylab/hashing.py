"""Content hashes that key the artifact caches and point ids."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


_file_digests: dict[tuple[Path, int, int], str] = {}


def sha256_file_cached(path: Path) -> str:
    """sha256_file, hashed again only when the file's modification time or size changed (for
    artifacts read by every point of a study)."""
    info = path.stat()
    stamp = (path, info.st_mtime_ns, info.st_size)
    if stamp not in _file_digests:
        _file_digests[stamp] = sha256_file(path)
    return _file_digests[stamp]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def sha256_json(value: Any) -> str:
    return sha256_bytes(canonical_json(value).encode())
