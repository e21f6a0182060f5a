"""Find and run the ``manylab-pcmsim`` binary."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from manylab.errors import LabError

ENV_VAR = "MANYLAB_PCMSIM"


class EngineError(LabError, RuntimeError):
    """The simulator binary is missing or failed."""


def binary_path() -> Path:
    """The simulator binary: $MANYLAB_PCMSIM, else pcmsim/target/release/ in the checkout."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "pcmsim/target/release/manylab-pcmsim"


def require_binary() -> Path:
    path = binary_path()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise EngineError(
            f"manylab-pcmsim not found at {path}: run scripts/setup.sh "
            f"(or cargo build --release in pcmsim/, or set {ENV_VAR})"
        )
    return path


def run(args: Sequence[str], stdout_path: Path | None = None) -> str:
    """Run the binary with ``args``; return stdout (or write it to ``stdout_path``)."""
    exe = require_binary()
    if stdout_path is not None:
        with stdout_path.open("w") as out:
            proc = subprocess.run([str(exe), *args], stdout=out, stderr=subprocess.PIPE, text=True)
        text = ""
    else:
        proc = subprocess.run([str(exe), *args], capture_output=True, text=True)
        text = proc.stdout
    if proc.returncode != 0:
        msg = proc.stderr.strip().splitlines()
        raise EngineError(msg[-1] if msg else f"manylab-pcmsim exited with {proc.returncode}")
    return text


def parse_jsonl(text: str) -> list[dict[str, Any]]:
    """Parse JSON lines, naming the line of any malformed one."""
    rows: list[dict[str, Any]] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise EngineError(f"simulator output line {i}: not JSON ({e.msg})") from e
        if not isinstance(obj, dict):
            raise EngineError(f"simulator output line {i}: not a JSON object")
        rows.append(obj)
    return rows
