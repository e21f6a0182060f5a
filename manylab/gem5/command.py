"""Where gem5 is, which gem5 it is, and the command line of one point."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from manylab.errors import LabError
from manylab.paths import REPO_ROOT

CONFIGS_DIR = REPO_ROOT / "gem5-configs"
RUN_SCRIPT = CONFIGS_DIR / "run_point.py"
BUILD_TARGET = "X86_MESI_Two_Level"


def binary(point: dict[str, Any]) -> Path:
    """The gem5 binary: [gem5] binary, else $MANYLAB_GEM5; a clear error when neither exists."""
    given = point["gem5"]["binary"] or os.environ.get("MANYLAB_GEM5", "")
    if not given:
        raise LabError(f"gem5 not found: set MANYLAB_GEM5=/path/to/build/{BUILD_TARGET}/gem5.opt "
                       "or [gem5] binary in the spec (build gem5 v24 for "
                       f"{BUILD_TARGET}: gem5-configs/README.md)")
    path = Path(given).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise LabError(f"gem5 binary {path} does not exist or is not executable: fix "
                       "MANYLAB_GEM5 or [gem5] binary (gem5-configs/README.md)")
    return path


@functools.cache
def version(path: Path) -> str:
    """gem5's version line (`gem5 version 24.0.0.1`), recorded in inputs.json like QEMU's."""
    result = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                            check=False, timeout=120)
    found = re.search(r"gem5 version \S+", result.stdout + result.stderr)
    return found.group(0) if found else "unknown"


def argv(gem5: Path, outdir: Path, system_json: Path) -> list[str]:
    return [str(gem5), "--quiet", f"--outdir={outdir}", "--listener-mode=off",
            str(RUN_SCRIPT), str(system_json)]
