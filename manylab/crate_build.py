"""The release builds of the lab's Rust crates (the plugin crate's library and its machine
describer), found and checked to be newer than their sources."""

from __future__ import annotations

import os
from pathlib import Path

from manylab.errors import LabError
from manylab.paths import PLUGIN_DIR


class StaleBuild(LabError):
    """A build older than the crate's sources: it would run code the sources no longer hold."""


def built(env: str, file_name: str, what: str, crate: Path = PLUGIN_DIR) -> Path:
    """A file of the plugin crate's release build ($env overrides), or a LabError naming the
    fix when it is not built or older than the crate's sources."""
    override = os.environ.get(env)
    path = Path(override) if override else crate / "target/release" / file_name
    if not path.is_file():
        raise LabError(f"{what} {path} is not built: run scripts/setup.sh "
                       "(cargo build --release in plugin/)")
    if not override:
        built_at = path.stat().st_mtime
        sources = [crate / "Cargo.toml", crate / "build.rs", *(crate / "src").rglob("*.rs")]
        newer = [s for s in sources if s.is_file() and s.stat().st_mtime > built_at]
        if newer:
            raise StaleBuild(f"{what} {path} is older than {newer[0]}: run cargo build --release "
                           "in plugin/ (or scripts/setup.sh)")
    return path
