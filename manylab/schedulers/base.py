"""The interface every scheduler implements.

A scheduler gets a study's points whose artifacts are already built and makes each one run
through `manylab.runner.run_point` (in-process for the local scheduler, as the command
`manylab run-point SPEC POINT_ID` inside a batch task for Slurm). A point counts as done only when
its folder `runs/<study>/<point-id>/` holds `result.json`, which the runner writes last and
atomically; schedulers never write into point folders themselves.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from manylab.plan import Point
from manylab.spec import Spec


class PointState(enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Resources:
    """What one point asks of a batch system."""

    cpus: int
    mem_mb: int
    time_min: int


@dataclass(frozen=True)
class PointJob:
    point_id: str
    resources: Resources
    point: Point | None = None  # the planned point (batch schedulers need only its id)


@dataclass(frozen=True)
class StudyJobs:
    """Everything a scheduler needs to run some points of one study."""

    study: str
    spec_path: Path
    results_dir: Path
    jobs: Sequence[PointJob]
    options: dict[str, str] = field(default_factory=dict)
    spec: Spec | None = None  # the loaded spec the points came from


class Scheduler(ABC):
    name: str

    @abstractmethod
    def submit(self, work: StudyJobs) -> int:
        """Run or submit the points; return 0 when all were accepted (local: all succeeded)."""

    @abstractmethod
    def states(self, results_dir: Path) -> dict[str, PointState]:
        """The scheduler's view of the study's points still known to it (by point id)."""

    def cancel(self, results_dir: Path) -> int:
        """Cancel the study's queued and running points; return how many were cancelled."""
        return 0
