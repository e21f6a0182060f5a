"""Running the real `manylab` command against specs written by a test."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.toml_text import toml_value

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


def study_spec(name: str, body: str, **study: str | int | float | bool) -> str:
    """A spec: its [study] table (the name, then the other keys given), then body (TOML)."""
    keys = "".join(f"{key} = {toml_value(value)}\n" for key, value in study.items())
    return f"[study]\nname = {toml_value(name)}\n{keys}{body}"


def recorder_spec(name: str, script: str, machine: str = "") -> str:
    """A study of one shell script on the hybrid-pcm kernel, whose page cache request recorder
    sees the work directory on ext2; 2 vCPUs, 512M and quantum 0 (the requests come one process
    after another: no plugin, no vCPU switch), and any more [machine] keys (TOML lines)."""
    return study_spec(name, f"""
[kernel]
variant = "hybrid-pcm"
[machine]
vcpus = 2
memory = "512M"
quantum = 0
{machine}[workload]
name = "shell"
fs = "ext2"
args = {{ script = {json.dumps(script)} }}
""")


@dataclass(frozen=True)
class OnePoint:
    dir: Path
    console: str
    outputs: list[dict[str, Any]]  # workload.json: the result lines


def run_one_point(tmp_path: Path, name: str, spec_text: str) -> OnePoint:
    """Runs the spec of study `name` under tmp_path/results; its only point, which must be ok
    (the result and the console's tail say why not)."""
    spec = tmp_path / f"{name}.toml"
    spec.write_text(spec_text)
    manylab("run", str(spec), "--results-root", str(tmp_path / "results"))
    (point,) = point_dirs(tmp_path / "results" / name)
    console = (point / "console.log").read_text(errors="replace")
    assert result_of(point)["status"] == "ok", (result_of(point), console[-3000:])
    return OnePoint(point, console, json.loads((point / "workload.json").read_text()))
