"""Running Slurm's client commands (sbatch, squeue, sacct, scancel, scontrol).

Every command honours SLURM_CONF and the other SLURM_*/SBATCH_* variables of the caller's
environment; nothing here names a configuration file.
"""

from __future__ import annotations

import shutil
import subprocess

from manylab.errors import LabError

MISSING = "{tool} not found: install slurm-wlm or load your site's Slurm module"


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


def run(argv: list[str], check: bool = True,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run a Slurm client; with check, a failure is a one-line LabError quoting Slurm."""
    if not have(argv[0]):
        raise LabError(MISSING.format(tool=argv[0]))
    try:
        result = subprocess.run(argv, capture_output=True, text=True, check=False,
                                timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LabError(f"{argv[0]} did not answer within {timeout:.0f} s: is slurmctld up? "
                       f"(scontrol ping)") from None
    if check and result.returncode != 0:
        raise LabError(f"{' '.join(argv[:2])} failed: {first_line(result.stderr)}")
    return result


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else "no message"


def config() -> dict[str, str]:
    """`scontrol show config` as a dict; empty when Slurm is unreachable."""
    if not have("scontrol"):
        return {}
    result = run(["scontrol", "show", "config"], check=False, timeout=30)
    values: dict[str, str] = {}
    for line in result.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values
