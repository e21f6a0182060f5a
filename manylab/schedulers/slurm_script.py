"""What gets submitted: points grouped into job arrays, and each array's sbatch script.

Tasks of one array share one resource request, so points are grouped by identical resources
(one array per group: a 1-CPU point never holds a 64-CPU allocation) and each group is cut into
chunks of at most `max_array` tasks. Task i of an array runs line i+1 of its points file.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from manylab.errors import LabError
from manylab.schedulers.base import PointJob, Resources


@dataclass(frozen=True)
class Settings:
    """Batch options for one submission: CLI options over the spec's [slurm] table."""

    partition: str = ""
    account: str = ""
    qos: str = ""
    time_min: int = 0          # overrides every point's derived limit when > 0
    max_array: int = 1000
    throttle: int = 0
    setup: tuple[str, ...] = ()
    profile: str = ""


@dataclass(frozen=True)
class Array:
    """One job array: points sharing one resource request."""

    points: tuple[str, ...]
    resources: Resources

    def spec(self, throttle: int) -> str:
        text = f"0-{len(self.points) - 1}"
        return f"{text}%{throttle}" if throttle > 0 else text


@dataclass(frozen=True)
class Task:
    """Everything the script of one array needs to know."""

    study: str
    spec_path: Path
    results_root: Path
    folder: Path                      # runs/<study>/.slurm/<submission>/
    manylab: Path                     # <repo>/.venv/bin/manylab
    cache: Path
    repo: Path
    array: Array
    settings: Settings
    dependency: str = ""

    @property
    def points_file(self) -> Path:
        return self.folder / "points.txt"

    @property
    def script_file(self) -> Path:
        return self.folder / "job.sh"


def plan_arrays(jobs: Sequence[PointJob], max_array: int, max_array_size: int = 0,
                time_min: int = 0) -> list[Array]:
    """Group points by resources (first-seen order), then cut groups into chunks."""
    limit = max(1, max_array)
    if max_array_size > 0:
        limit = min(limit, max_array_size)  # indices run 0..n-1 and must stay < MaxArraySize
    groups: dict[Resources, list[str]] = {}
    for job in jobs:
        resources = job.resources
        if time_min > 0:
            resources = Resources(resources.cpus, resources.mem_mb, time_min)
        groups.setdefault(resources, []).append(job.point_id)
    arrays = []
    for resources, points in groups.items():
        for start in range(0, len(points), limit):
            arrays.append(Array(tuple(points[start:start + limit]), resources))
    return arrays


def slurm_time(minutes: int) -> str:
    """Minutes as Slurm's [D-]H:MM:SS."""
    days, rest = divmod(max(1, minutes), 1440)
    hours, mins = divmod(rest, 60)
    clock = f"{hours}:{mins:02d}:00"
    return f"{days}-{hours:02d}:{mins:02d}:00" if days else clock


def _directive_safe(what: str, value: str) -> str:
    if any(ch.isspace() for ch in value) or "%" in value:
        raise LabError(f"{what} '{value}' holds a space or '%', which #SBATCH lines cannot "
                       f"carry: use a path without them (e.g. --results-root)")
    return value


def header(task: Task) -> list[str]:
    res = task.array.resources
    lines = [f"--job-name=manylab-{task.study}",
             f"--array={task.array.spec(task.settings.throttle)}"]
    for option, value in (("partition", task.settings.partition),
                          ("account", task.settings.account), ("qos", task.settings.qos)):
        if value:
            lines.append(f"--{option}={_directive_safe(option, value)}")
    lines += [f"--time={slurm_time(res.time_min)}", "--nodes=1", "--ntasks=1",
              f"--cpus-per-task={res.cpus}", f"--mem={res.mem_mb}M",
              f"--output={_directive_safe('log folder', str(task.folder))}/%A_%a.out",
              "--open-mode=append",
              f"--chdir={_directive_safe('repository', str(task.repo))}"]
    if task.dependency:
        lines += [f"--dependency={task.dependency}", "--kill-on-invalid-dep=yes"]
    return [f"#SBATCH {line}" for line in lines]


def render(task: Task) -> str:
    """The batch script of one array; task i runs `manylab run-point SPEC <line i+1>`."""
    q = shlex.quote
    res = task.array.resources
    run_point = [str(task.manylab), "run-point", str(task.spec_path), '"$point"',
                 "--results-root", str(task.results_root)]
    if task.settings.profile:
        run_point += ["--profile", task.settings.profile]
    command = " ".join(word if word == '"$point"' else q(word) for word in run_point)
    body = [
        "#!/bin/bash",
        *header(task),
        f"# manylab study '{task.study}': {len(task.array.points)} points, each "
        f"{res.cpus} CPU(s), {res.mem_mb} MiB, {res.time_min} min",
        "set -e",
        *(["# [slurm] setup", *task.settings.setup] if task.settings.setup else []),
        "set -u",
        f"export MANYLAB_CACHE={q(str(task.cache))}",
        f"points={q(str(task.points_file))}",
        'point=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$points")',
        'if [ -z "$point" ]; then',
        '  echo "manylab: no line $((SLURM_ARRAY_TASK_ID + 1)) in $points" >&2; exit 2',
        "fi",
        'echo "manylab: task ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID} (job ${SLURM_JOB_ID})'
        ' on $(hostname): point $point"',
        f"exec {command}",
    ]
    return "\n".join(body) + "\n"


def build_script(study: str, spec_path: Path, folder: Path, manylab: Path, cache: Path,
                 repo: Path, settings: Settings, cpus: int) -> str:
    """A job that builds every artifact of the study on a compute node (--build-job)."""
    q = shlex.quote
    lines = [f"--job-name=manylab-{study}-build", f"--time={slurm_time(180)}", "--nodes=1",
             "--ntasks=1", f"--cpus-per-task={cpus}", "--mem=8G",
             f"--output={_directive_safe('log folder', str(folder))}/build_%j.out",
             f"--chdir={_directive_safe('repository', str(repo))}"]
    for option, value in (("partition", settings.partition), ("account", settings.account),
                          ("qos", settings.qos)):
        if value:
            lines.append(f"--{option}={value}")
    build = [str(manylab), "build", str(spec_path)]
    if settings.profile:
        build += ["--profile", settings.profile]
    return "\n".join(["#!/bin/bash", *(f"#SBATCH {line}" for line in lines),
                      f"# manylab study '{study}': build kernels, images, snapshots once",
                      "set -e", *settings.setup, "set -u", f"export MANYLAB_CACHE={q(str(cache))}",
                      "exec " + " ".join(q(word) for word in build)]) + "\n"
