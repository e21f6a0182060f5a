"""A point's folder, `runs/<study>/<point-id>/`: the names of its files, the one reader of what
a finished point holds, and the listing of a study's points. Every other module names the
files through this one.

A folder is complete when it has result.json: the runner stages a point beside its final place
and renames it in whole (manylab/atomic.py), so a listed folder is never half-written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INPUTS = "inputs.json"
RESULT = "result.json"
WORKLOAD = "workload.json"
STATS = "stats.json"
STATS_SCHEMA = "manylab-stats/2"  # written by the plugin (plugin/src/report.rs) and gem5/stats.py
KSTATS = "kstats.json"
CONSOLE = "console.log"
QEMU_STDERR = "qemu-stderr.log"
GEM5_STDERR = "gem5-stderr.log"
NOT_POINTS = ("report",)


def read_json(path: Path) -> Any:
    """The file's JSON value, or None when it is missing or not JSON."""
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def read_result(point_dir: Path) -> dict[str, Any] | None:
    value = read_json(point_dir / RESULT)
    return value if isinstance(value, dict) else None


def list_points(study_dir: Path) -> list[Path]:
    """The study's point folders (complete or not), sorted by name."""
    return sorted(p for p in study_dir.iterdir()
                  if p.is_dir() and not p.name.startswith(".") and p.name not in NOT_POINTS)


@dataclass(frozen=True)
class PointFiles:
    """What a complete point folder holds, parsed once."""
    directory: Path
    result: dict[str, Any]
    inputs: dict[str, Any]
    outputs: list[Any]
    stats: dict[str, Any] | None
    kstats: dict[str, Any] | None

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.inputs.get("params", {}))


def read(point_dir: Path) -> PointFiles | None:
    """The point's files, or None when it has no result.json (not finished)."""
    result = read_result(point_dir)
    if result is None:
        return None
    inputs = read_json(point_dir / INPUTS)
    outputs = read_json(point_dir / WORKLOAD)
    stats = read_json(point_dir / STATS)
    kernel_counters = read_json(point_dir / KSTATS)
    return PointFiles(point_dir, result, inputs if isinstance(inputs, dict) else {},
                      outputs if isinstance(outputs, list) else [],
                      stats if isinstance(stats, dict) else None,
                      kernel_counters if isinstance(kernel_counters, dict) else None)
