"""Submitting, following and cancelling through a real slurmctld/slurmd (no guest boots: the
tasks go to a partition that is down, or fail before they start)."""

import json
import os
import sys
import time
from pathlib import Path

import pytest
from slurmlab import manylab, wait_states

from manylab.schedulers.base import PointState
from manylab.schedulers.slurm import SlurmScheduler
from tests.e2e.helpers import study_spec

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(600)]

SHELL_TRUE = """
[machine]
vcpus = 1
memory = "128M"
[workload]
name = "shell"
args = { script = "true" }
"""


def test_hundred_points_in_chunked_throttled_arrays_then_cancel(slurm_cluster, tmp_path):
    spec = tmp_path / "hundred.toml"
    spec.write_text(study_spec("hundred", SHELL_TRUE, repeats=100))
    root = tmp_path / "results"
    study = root / "hundred"
    # --build-job: the arrays wait on a build job; the partition is down, so nothing starts
    args = ["run", str(spec), "--scheduler", "slurm", "--results-root", str(root),
            "--partition", "parked", "--max-array", "40", "--throttle", "4", "--build-job", "1"]
    started = time.monotonic()
    submitted = manylab(*args)
    seconds = time.monotonic() - started
    print(f"submit 100 points (3 arrays + build job): {seconds:.2f} s", file=sys.stderr)
    assert "submitted 100 points as 3 job array(s)" in submitted.stderr
    records = json.loads((study / ".slurm" / "submissions.json").read_text())["submissions"]
    assert [len(r["points"]) for r in records] == [40, 40, 20]
    assert [r["array"] for r in records] == ["0-39%4", "0-39%4", "0-19%4"]
    assert len({r["build_job"] for r in records}) == 1
    first = Path(study / ".slurm" / records[0]["folder"])
    assert (first / "points.txt").read_text().split() == records[0]["points"]
    script = (first / "job.sh").read_text()
    assert f"--dependency=afterok:{records[0]['build_job']}" in script
    assert "#SBATCH --partition=parked" in script

    states = SlurmScheduler().states(study)
    assert len(states) == 100 and set(states.values()) == {PointState.PENDING}
    status = manylab("status", str(study), "--scheduler", "slurm")
    assert status.stderr.strip() == "100 pending"

    again = manylab(*args)
    assert "100 points are queued or running already" in again.stderr
    assert len(json.loads((study / ".slurm" / "submissions.json").read_text())
               ["submissions"]) == 3

    cancel = manylab("cancel", str(study))
    assert "cancelled 100 queued or running points" in cancel.stderr
    states = wait_states(study, timeout=60)
    assert set(states.values()) == {PointState.CANCELLED}
    assert not [p for p in study.iterdir() if p.name != ".slurm" and p.is_dir()]
    # cancelled points are not complete: a plain run would submit them again
    dry = manylab("run", str(spec), "--scheduler", "slurm", "--results-root", str(root),
                  "--dry-run")
    assert "dry run: 100 points in 1 array(s)" in dry.stderr
    assert "#SBATCH --array=0-99\n" in dry.stdout


def test_an_unknown_partition_is_a_one_line_error(slurm_cluster, tmp_path):
    spec = tmp_path / "hundred.toml"
    spec.write_text(study_spec("hundred", SHELL_TRUE, repeats=1))
    result = manylab("run", str(spec), "--scheduler", "slurm", "--results-root",
                     str(tmp_path / "r"), "--partition", "nosuch", "--build-job", "1",
                     check=False)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert line.startswith("manylab: sbatch ") and "invalid partition" in line.lower()
    assert "check [slurm] partition" in line


def test_missing_sbatch_names_the_fix(tmp_path):
    spec = tmp_path / "one.toml"
    spec.write_text(study_spec("hundred", SHELL_TRUE, repeats=1))
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    result = manylab("run", str(spec), "--scheduler", "slurm", "--results-root",
                     str(tmp_path / "r"), "--build-job", "1", check=False, env=env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "manylab: sbatch not found: install slurm-wlm or load your site's Slurm module")
