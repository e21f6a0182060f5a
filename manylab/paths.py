"""Where the lab's source tree, caches and tools live."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from manylab.errors import LabError

REPO_ROOT = Path(__file__).resolve().parents[1]
KERNEL_PATCHES = REPO_ROOT / "kernel-patches"
OVERLAY_DIR = REPO_ROOT / "buildroot-overlay"
WORKLOADS_DIR = REPO_ROOT / "workloads"
PLUGIN_DIR = REPO_ROOT / "plugin"
RUNS_DIR = REPO_ROOT / "runs"


def cache_root() -> Path:
    """The user cache (outside the clone, so CI runs on one machine share built kernels)."""
    env = os.environ.get("MANYLAB_CACHE")
    if env:
        root = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "manylab"
    root.mkdir(parents=True, exist_ok=True)
    return root


def require_tool(name: str, package: str) -> str:
    """Absolute path of a host tool, or a LabError telling which package to install."""
    found = shutil.which(name)
    if found is None:
        raise LabError(f"{name} not found: install the Debian package {package} (scripts/setup.sh)")
    return found
