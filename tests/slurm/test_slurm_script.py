"""What the Slurm scheduler submits and how it reads Slurm's answers (no daemons needed)."""

from pathlib import Path

import pytest

from manylab.schedulers.base import PointJob, PointState, Resources
from manylab.schedulers.slurm import settings
from manylab.schedulers.slurm_script import Settings, Task, plan_arrays, render, slurm_time
from manylab.schedulers.slurm_state import (
    indices,
    parse_jobcomp,
    parse_sacct,
    parse_squeue,
    point_state,
)

pytestmark = pytest.mark.slurm

SMALL, BIG = Resources(1, 1536, 15), Resources(8, 4096, 60)


def test_points_are_grouped_by_resources_then_chunked():
    jobs = [PointJob(f"p{i}", SMALL if i % 3 else BIG) for i in range(10)]
    arrays = plan_arrays(jobs, max_array=3)
    assert [a.resources for a in arrays] == [BIG, BIG, SMALL, SMALL]
    assert [len(a.points) for a in arrays] == [3, 1, 3, 3]
    assert sorted(p for a in arrays for p in a.points) == sorted(j.point_id for j in jobs)
    assert arrays[0].points == ("p0", "p3", "p6")


def test_max_array_size_caps_chunks_and_time_override_merges_groups():
    jobs = [PointJob(f"p{i}", Resources(1, 1536, 10 + i)) for i in range(5)]
    assert len(plan_arrays(jobs, max_array=1000)) == 5
    merged = plan_arrays(jobs, max_array=1000, max_array_size=2, time_min=30)
    assert [len(a.points) for a in merged] == [2, 2, 1]
    assert {a.resources.time_min for a in merged} == {30}
    assert merged[0].spec(0) == "0-1" and merged[2].spec(4) == "0-0%4"


def test_slurm_time():
    assert slurm_time(1) == "0:01:00"
    assert slurm_time(125) == "2:05:00"
    assert slurm_time(1440 * 2 + 61) == "2-01:01:00"


def test_command_line_options_override_the_spec():
    table = {"partition": "cpu", "account": "", "qos": "", "time_min": 20, "mem_mb": 0,
             "cpus": 0, "max_array": 500, "throttle": 0, "setup": ["module load qemu"]}
    chosen = settings(table, {"slurm_account": "lab", "slurm_throttle": "8", "profile": "full"})
    assert chosen == Settings("cpu", "lab", "", 20, 500, 8, ("module load qemu",), "full")


def test_script_header_and_body(tmp_path: Path):
    folder = tmp_path / "runs" / "s" / ".slurm" / "sub-0"
    task = Task("s", tmp_path / "s.toml", tmp_path / "runs", folder, Path("/r/.venv/bin/manylab"),
                Path("/cache"), Path("/r"), plan_arrays([PointJob("a", SMALL),
                                                        PointJob("b", SMALL)], 10)[0],
                Settings(partition="short", qos="normal", throttle=1,
                         setup=("module load qemu",), profile="full"), "afterok:41")
    text = render(task)
    header = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    assert header == [
        "#SBATCH --job-name=manylab-s", "#SBATCH --array=0-1%1", "#SBATCH --partition=short",
        "#SBATCH --qos=normal", "#SBATCH --time=0:15:00", "#SBATCH --nodes=1",
        "#SBATCH --ntasks=1", "#SBATCH --cpus-per-task=1", "#SBATCH --mem=1536M",
        f"#SBATCH --output={folder}/%A_%a.out", "#SBATCH --open-mode=append",
        "#SBATCH --chdir=/r", "#SBATCH --dependency=afterok:41",
        "#SBATCH --kill-on-invalid-dep=yes"]
    assert text.index("module load qemu") < text.index("set -u") < text.index("exec ")
    assert "export MANYLAB_CACHE=/cache" in text
    assert (f'exec /r/.venv/bin/manylab run-point {tmp_path}/s.toml "$point" --results-root '
            f"{tmp_path}/runs --profile full") in text


def test_a_path_with_a_space_is_refused(tmp_path: Path):
    from manylab.errors import LabError

    task = Task("s", tmp_path / "s.toml", tmp_path, tmp_path / "my runs", Path("/m"),
                Path("/c"), Path("/r"), plan_arrays([PointJob("a", SMALL)], 10)[0], Settings())
    with pytest.raises(LabError, match="space"):
        render(task)


def test_reading_squeue_sacct_and_jobcomp():
    assert indices("[1-3,7%2]") == [1, 2, 3, 7] and indices("4") == [4]
    live = parse_squeue("12|0|RUNNING\n12|1|PENDING\n12|2-3|PENDING\nbogus\n")
    assert live == {("12", 0): "RUNNING", ("12", 1): "PENDING", ("12", 2): "PENDING",
                    ("12", 3): "PENDING"}
    whole: dict[str, str] = {}
    acct = parse_sacct("12_0|COMPLETED\n12_1|TIMEOUT\n12_[2-3]|CANCELLED by 0\n13|FAILED\n", whole)
    assert acct[("12", 1)] == "TIMEOUT" and acct[("12", 3)] == "CANCELLED by 0"
    assert whole == {"13": "FAILED"}
    whole = {}
    log = ["JobId=14 Name=x JobState=TIMEOUT ArrayJobId=12 ArrayTaskId=1 ExitCode=0:15",
           "JobId=12 Name=x JobState=CANCELLED Partition=debug",
           "JobId=99 JobState=COMPLETED ArrayJobId=98 ArrayTaskId=0"]
    assert parse_jobcomp(log, {"12"}, whole) == {("12", 1): "TIMEOUT"}
    assert whole == {"12": "CANCELLED"}


@pytest.mark.parametrize(("slurm", "state"), [
    ("PENDING", PointState.PENDING), ("CONFIGURING", PointState.RUNNING),
    ("COMPLETING", PointState.RUNNING), ("COMPLETED", PointState.DONE),
    ("OUT_OF_MEMORY", PointState.FAILED), ("NODE_FAIL", PointState.FAILED),
    ("TIMEOUT", PointState.TIMEOUT), ("DEADLINE", PointState.TIMEOUT),
    ("CANCELLED by 1000", PointState.CANCELLED), ("", PointState.UNKNOWN)])
def test_state_mapping(slurm, state):
    assert point_state(slurm) is state
