"""runs/<study>/.slurm/: what was submitted (submissions.json) and the last final state seen
per task (states.json), so a study stays readable after the controller forgets its jobs.

submissions.json: {"submissions": [{"id", "job_id", "array", "points": [...], "resources",
"submitted", "folder", "build_job"}]}; task i of job_id runs points[i]. The newest
submission holding a point is the one that counts for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from manylab import atomic

SLURM_DIR = ".slurm"
SUBMISSIONS = "submissions.json"
STATES = "states.json"


def folder(results_dir: Path) -> Path:
    return results_dir / SLURM_DIR


_held: set[Path] = set()


@contextlib.contextmanager
def locked(results_dir: Path) -> Iterator[Path]:
    """Hold the study's .slurm lock (two `manylab run` of one study do not interleave);
    re-entrant within one process."""
    where = folder(results_dir.resolve())
    where.mkdir(parents=True, exist_ok=True)
    if where in _held:
        yield where
        return
    with (where / ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        _held.add(where)
        try:
            yield where
        finally:
            _held.discard(where)
            fcntl.flock(handle, fcntl.LOCK_UN)


def _load(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return default


def submissions(results_dir: Path) -> list[dict[str, Any]]:
    value = _load(folder(results_dir) / SUBMISSIONS, {})
    found = value.get("submissions", []) if isinstance(value, dict) else []
    return [s for s in found if isinstance(s, dict)]


def add_submission(results_dir: Path, record: dict[str, Any]) -> None:
    """Append one record; call with the lock held."""
    found = submissions(results_dir)
    found.append(record)
    atomic.write_json(folder(results_dir) / SUBMISSIONS, {"submissions": found})


def latest_tasks(results_dir: Path) -> dict[str, tuple[str, int, dict[str, Any]]]:
    """Point id -> (job id, task index, submission) of the newest submission holding it."""
    latest: dict[str, tuple[str, int, dict[str, Any]]] = {}
    for record in submissions(results_dir):
        for index, point in enumerate(record.get("points", [])):
            latest[point] = (str(record["job_id"]), index, record)
    return latest


def cached_states(results_dir: Path) -> dict[str, str]:
    value = _load(folder(results_dir) / STATES, {})
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def save_states(results_dir: Path, states: dict[str, str]) -> None:
    """Merge final task states ("<job>_<index>" -> STATE) into states.json."""
    if not states or states.items() <= cached_states(results_dir).items():
        return
    try:
        with locked(results_dir) as where:
            merged = {**cached_states(results_dir), **states}
            atomic.write_json(where / STATES, merged)
    except OSError:
        pass  # a read-only results folder: the states are only a cache
