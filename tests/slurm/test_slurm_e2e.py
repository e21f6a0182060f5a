"""Studies that boot the real stock kernel in Slurm batch tasks on the one-node cluster."""

import json
import time
from pathlib import Path

import pytest
from slurmlab import ACTIVE, manylab, wait_states

from manylab.schedulers.base import PointState
from manylab.schedulers.slurm import SlurmScheduler
from tests.e2e.helpers import point_dirs, study_spec, table

pytestmark = [pytest.mark.slurm, pytest.mark.e2e, pytest.mark.timeout(1800)]

WRITER = """
[kernel]
cmdline = {cmdline}
[machine]
vcpus = 2
memory = "256M"
[workload]
name = "pwriter"
args = {{ procs = "{{vcpus}}", size = "1M", pattern = {pattern}, read = true }}
"""

SLEEPER = """
[machine]
vcpus = 2
memory = "256M"
reproducible = false  # a guest sleep must take host time (icount skips idle time)
quantum = 0
[workload]
name = "shell"
args = {{ script = "sleep {seconds}; echo MANYLAB-RESULT {{}}" }}
[slurm]
throttle = 1
time_min = {time_min}
"""


def slurm_run(spec: Path, root: Path, *extra: str):
    return manylab("run", str(spec), "--scheduler", "slurm", "--results-root", str(root),
                   *extra)


def submit_sleeper(tmp_path: Path, name: str, repeats: int, seconds: int,
                   time_min: int) -> tuple[Path, Path, Path]:
    """Submits study `name`: `repeats` points that each sleep `seconds` in the guest, with
    [slurm] time_min `time_min`; its spec, results root and study folder."""
    spec = tmp_path / f"{name}.toml"
    spec.write_text(study_spec(name, SLEEPER.format(seconds=seconds, time_min=time_min),
                               repeats=repeats, timeout_s=600))
    root = tmp_path / "results"
    slurm_run(spec, root)
    return spec, root, root / name


def submissions(study: Path) -> list[dict]:
    return json.loads((study / ".slurm" / "submissions.json").read_text())["submissions"]


def leftovers(study: Path) -> list[str]:
    return [p.name for p in study.iterdir() if ".staging-" in p.name or ".old-" in p.name]


def test_slurm_results_have_the_shape_of_a_local_run(slurm_cluster, tmp_path):
    spec = tmp_path / "shape.toml"
    spec.write_text(study_spec("shape", WRITER.format(cmdline='""', pattern='["seq", "rand"]')))
    batch, local = tmp_path / "batch", tmp_path / "local"
    started = time.monotonic()
    slurm_run(spec, batch, "--build-job", "1")  # the artifacts are built in a dependent job
    states = wait_states(batch / "shape")
    print(f"\nslurm: 2 points in {time.monotonic() - started:.1f} s")
    assert set(states.values()) == {PointState.DONE}, states
    manylab("table", str(batch / "shape"))
    started = time.monotonic()
    manylab("run", str(spec), "--results-root", str(local), "-j", "2")
    print(f"local: 2 points in {time.monotonic() - started:.1f} s")

    ids = [p.name for p in point_dirs(batch / "shape")]
    assert ids == [p.name for p in point_dirs(local / "shape")] and len(ids) == 2
    batch_rows, local_rows = table(batch / "shape"), table(local / "shape")
    assert list(batch_rows[0]) == list(local_rows[0])
    assert [r["point"] for r in batch_rows] == [r["point"] for r in local_rows]
    assert all(r["status"] == "ok" for r in batch_rows + local_rows)
    for point in ids:
        outputs = [json.loads((root / "shape" / point / "workload.json").read_text())
                   for root in (batch, local)]
        assert sorted(outputs[0][0]) == sorted(outputs[1][0])
        assert outputs[0][0]["verified"] is True and outputs[0][0]["procs"] == 2
        assert {f.name for f in (batch / "shape" / point).iterdir()} == \
            {f.name for f in (local / "shape" / point).iterdir()}
    (record,) = submissions(batch / "shape")
    logs = list((batch / "shape" / ".slurm" / record["folder"]).glob("*.out"))
    assert len(logs) == 2 and all("manylab: task" in log.read_text() for log in logs)
    status = manylab("status", str(batch / "shape"), "--scheduler", "slurm")
    assert status.stderr.strip() == "2 done"


def test_a_failed_point_is_reported_and_retried(slurm_cluster, tmp_path):
    spec = tmp_path / "panic.toml"
    spec.write_text(study_spec("panic", WRITER.format(cmdline='["", "rdinit=/nope init=/nope"]',
                                                      pattern='"seq"')))
    root = tmp_path / "results"
    study = root / "panic"
    slurm_run(spec, root)
    states = wait_states(study)
    assert sorted(s.value for s in states.values()) == ["done", "failed"], states
    (failed,) = [p for p, s in states.items() if s is PointState.FAILED]
    status = manylab("status", str(study), "--scheduler", "slurm").stdout
    assert f"{failed}  failed (kernel panic: " in status
    before = (study / failed / "result.json").stat().st_mtime_ns

    plain = slurm_run(spec, root)
    assert "1 to run" not in plain.stderr and "0 to run" in plain.stderr
    retry = slurm_run(spec, root, "--retry-failed")
    assert "submitted 1 points as 1 job array(s)" in retry.stderr
    assert [r["points"] for r in submissions(study)][-1] == [failed]
    # while the retry is queued or running, status shows it rather than the old result
    seen = SlurmScheduler().states(study)[failed]
    assert seen in ACTIVE or (study / failed / "result.json").stat().st_mtime_ns != before
    states = wait_states(study)
    assert states[failed] is PointState.FAILED
    assert (study / failed / "result.json").stat().st_mtime_ns != before
    assert json.loads((study / failed / "result.json").read_text())["reason"].startswith(
        "kernel panic")


def test_cancel_leaves_cancelled_points_and_no_half_results(slurm_cluster, tmp_path):
    _, _, study = submit_sleeper(tmp_path, "cancel", repeats=2, seconds=300, time_min=30)

    def booting(states):  # task 0 runs (throttle 1) and its point folder is being staged
        return PointState.RUNNING in states.values() and any(
            ".staging-" in p.name for p in study.iterdir())

    states = wait_states(study, booting, timeout=300)
    assert sorted(s.value for s in states.values()) == ["pending", "running"]
    time.sleep(3)
    cancel = manylab("cancel", str(study))
    assert "cancelled 2 queued or running points" in cancel.stderr
    states = wait_states(study, timeout=120)
    assert set(states.values()) == {PointState.CANCELLED}
    deadline = time.monotonic() + 30
    while leftovers(study) and time.monotonic() < deadline:
        time.sleep(1)
    assert leftovers(study) == [] and point_dirs(study) == []
    status = manylab("status", str(study), "--scheduler", "slurm")
    assert status.stderr.strip() == "2 cancelled"


def test_a_task_over_its_time_limit_is_recorded_as_timeout(slurm_cluster, tmp_path):
    spec, root, study = submit_sleeper(tmp_path, "slow", repeats=1, seconds=200, time_min=1)
    states = wait_states(study, timeout=400)
    assert list(states.values()) == [PointState.TIMEOUT]
    assert point_dirs(study) == [] and leftovers(study) == []
    assert manylab("status", str(study), "--scheduler", "slurm").stderr.strip() == "1 timeout"
    plain = slurm_run(spec, root, "--dry-run")
    assert "1 points failed or timed out in Slurm (kept" in plain.stderr
    assert "#SBATCH" not in plain.stdout
    retry = slurm_run(spec, root, "--retry-failed", "--dry-run", "--time", "10")
    assert "#SBATCH --time=0:10:00" in retry.stdout
    assert next(iter(states)) in retry.stdout
