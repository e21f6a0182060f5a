"""Reading Slurm's view of array tasks: squeue, accounting (sacct) or the jobcomp/filetxt log.

A task is named by (array job id, task index). Sources, freshest first:
  squeue -r -t all   every task the controller still holds (queued, running, and finished ones
                     for MinJobAge seconds);
  sacct -X           accounting (slurmdbd), when the site has it;
  JobCompLoc         the jobcomp/filetxt completion log, read directly where there is no
                     accounting: Slurm 22.05's `sacct -c` cannot read its ArrayJobId/ArrayTaskId
                     fields, so it cannot tell which task of an array a record is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from manylab.errors import LabError
from manylab.schedulers import slurm_cmd
from manylab.schedulers.base import PointState

TaskKey = tuple[str, int]

ACTIVE = {"PENDING": PointState.PENDING, "REQUEUED": PointState.PENDING,
          "REQUEUE_HOLD": PointState.PENDING, "REQUEUE_FED": PointState.PENDING,
          "RESV_DEL_HOLD": PointState.PENDING, "SUSPENDED": PointState.RUNNING,
          "RUNNING": PointState.RUNNING, "CONFIGURING": PointState.RUNNING,
          "COMPLETING": PointState.RUNNING, "RESIZING": PointState.RUNNING,
          "SIGNALING": PointState.RUNNING, "STAGE_OUT": PointState.RUNNING,
          "STOPPED": PointState.RUNNING}
FINAL = {"COMPLETED": PointState.DONE, "FAILED": PointState.FAILED,
         "OUT_OF_MEMORY": PointState.FAILED, "NODE_FAIL": PointState.FAILED,
         "BOOT_FAIL": PointState.FAILED, "SPECIAL_EXIT": PointState.FAILED,
         "TIMEOUT": PointState.TIMEOUT, "DEADLINE": PointState.TIMEOUT,
         "CANCELLED": PointState.CANCELLED, "PREEMPTED": PointState.CANCELLED,
         "REVOKED": PointState.CANCELLED}


def point_state(slurm_state: str) -> PointState:
    word = slurm_state.split()[0].rstrip("+").upper() if slurm_state.strip() else ""
    return ACTIVE.get(word) or FINAL.get(word) or PointState.UNKNOWN


def is_final(slurm_state: str) -> bool:
    word = slurm_state.split()[0].rstrip("+").upper() if slurm_state.strip() else ""
    return word in FINAL


def indices(text: str) -> list[int]:
    """'3', '0-4%2', '[1-3,7]' -> task indices."""
    found: list[int] = []
    for part in text.strip("[]").split("%")[0].split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            continue
        found.extend(range(int(low), int(high or low) + 1))
    return found


def parse_squeue(text: str) -> dict[TaskKey, str]:
    """Lines of `squeue -h -r -t all -o %F|%K|%T` -> state per task."""
    states: dict[TaskKey, str] = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) < 3 or not fields[0].isdigit():
            continue
        for index in indices(fields[1]):
            states[(fields[0], index)] = fields[2]
    return states


def squeue(job_ids: Iterable[str]) -> dict[TaskKey, str]:
    ids = sorted(set(job_ids))
    if not ids:
        return {}
    result = slurm_cmd.run(["squeue", "-h", "-r", "-t", "all", "-j", ",".join(ids),
                            "-o", "%F|%K|%T"], check=False)
    if result.returncode != 0 and "Invalid job id" not in result.stderr:
        raise LabError(f"squeue failed: {slurm_cmd.first_line(result.stderr)}")
    return parse_squeue(result.stdout)


ARRAY_ID = re.compile(r"^(\d+)_(\[?[\d,\-%]+\]?)$")


def parse_sacct(text: str, whole: dict[str, str]) -> dict[TaskKey, str]:
    """Lines of `sacct -X -n -P -o JobID,State` -> state per task; a record for a whole array
    (`123` alone) goes into `whole`."""
    states: dict[TaskKey, str] = {}
    for line in text.splitlines():
        job, _, state = line.strip().partition("|")
        match = ARRAY_ID.match(job)
        if match:
            for index in indices(match.group(2)):
                states[(match.group(1), index)] = state
        elif job.isdigit():
            whole[job] = state
    return states


def sacct(job_ids: Iterable[str], whole: dict[str, str]) -> dict[TaskKey, str] | None:
    """Accounting records; None when the cluster keeps no accounting."""
    ids = sorted(set(job_ids))
    if not ids or not slurm_cmd.have("sacct"):
        return None
    result = slurm_cmd.run(["sacct", "-X", "-n", "-P", "-j", ",".join(ids), "-o", "JobID,State"],
                           check=False)
    if result.returncode != 0:
        return None
    return parse_sacct(result.stdout, whole)


def parse_jobcomp(lines: Iterable[str], job_ids: set[str],
                  whole: dict[str, str]) -> dict[TaskKey, str]:
    """jobcomp/filetxt records (`JobId=5 ... JobState=TIMEOUT ... ArrayJobId=3 ArrayTaskId=1`).
    A record of an array job id without a task index is the never-started rest of that array."""
    states: dict[TaskKey, str] = {}
    for line in lines:
        if "JobState=" not in line:
            continue
        fields = dict(word.split("=", 1) for word in line.split() if "=" in word)
        array_job, task = fields.get("ArrayJobId", ""), fields.get("ArrayTaskId", "")
        if array_job in job_ids and task.isdigit():
            states[(array_job, int(task))] = fields["JobState"]
        elif fields.get("JobId") in job_ids:
            whole[fields["JobId"]] = fields["JobState"]
    return states


def jobcomp(job_ids: Iterable[str], whole: dict[str, str]) -> dict[TaskKey, str] | None:
    config = slurm_cmd.config()
    if config.get("JobCompType") != "jobcomp/filetxt":
        return None
    path = Path(config.get("JobCompLoc", ""))
    try:
        with path.open(errors="replace") as handle:
            return parse_jobcomp(handle, set(job_ids), whole)
    except OSError:
        return None
