"""Running the real `manylab` command against specs written by a test."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MANYLAB = [sys.executable, "-m", "manylab.cli"]


def manylab(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([*MANYLAB, *args], cwd=REPO, capture_output=True, text=True,
                            check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"manylab {' '.join(args)} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def point_dirs(study_dir: Path) -> list[Path]:
    return sorted(p for p in study_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def result_of(point_dir: Path) -> dict[str, Any]:
    return json.loads((point_dir / "result.json").read_text())


def table(study_dir: Path) -> list[dict[str, str]]:
    with (study_dir / "results.csv").open() as handle:
        return list(csv.DictReader(handle))
