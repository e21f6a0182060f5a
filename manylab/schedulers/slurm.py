"""Slurm: one job array per group of points with identical resources, followed and cancelled
through the records in runs/<study>/.slurm/ (see docs/cluster.md).

Task i of an array runs `<repo>/.venv/bin/manylab run-point SPEC <point> --results-root ROOT`
for line i+1 of the array's points file, the same code path as a local run; a point is done only
when its folder holds result.json.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from manylab import atomic, pointdir
from manylab import spec as specs
from manylab.errors import LabError
from manylab.paths import REPO_ROOT, cache_root
from manylab.schedulers import slurm_cmd, slurm_record, slurm_state
from manylab.schedulers.base import PointJob, PointState, Scheduler, StudyJobs
from manylab.schedulers.slurm_script import (
    Array,
    Settings,
    Task,
    build_script,
    plan_arrays,
    render,
)

LOCAL_FILESYSTEMS = {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs"}


def settings(slurm: dict[str, Any], options: dict[str, str]) -> Settings:
    """The spec's [slurm] table with the command line's --partition etc. on top."""
    def pick(key: str) -> str:
        return options.get(f"slurm_{key}") or str(slurm.get(key) or "")

    def number(key: str, option: str) -> int:
        value = options.get(f"slurm_{option}")
        return int(value) if value else int(slurm.get(key) or 0)

    return Settings(partition=pick("partition"), account=pick("account"), qos=pick("qos"),
                    time_min=number("time_min", "time"),
                    max_array=number("max_array", "max_array") or 1000,
                    throttle=number("throttle", "throttle"),
                    setup=tuple(str(line) for line in slurm.get("setup") or ()),
                    profile=options.get("profile", ""))


def _flag(options: dict[str, str], key: str) -> bool:
    return options.get(key, "") not in ("", "False", "0", "no")


def manylab_command() -> Path:
    for candidate in (REPO_ROOT / ".venv" / "bin" / "manylab",
                      Path(sys.executable).parent / "manylab"):
        if candidate.is_file():
            return candidate
    raise LabError(f"no {REPO_ROOT}/.venv/bin/manylab for batch tasks to run: run "
                   f"scripts/setup.sh in the clone")


def filesystem_type(path: Path) -> str:
    """The type of the file system holding path (longest mount point of /proc/mounts)."""
    best, kind = "", ""
    target = str(path.resolve())
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return ""
    for line in mounts:
        fields = line.split()
        if len(fields) >= 3:
            mount = fields[1].replace("\\040", " ")
            inside = target == mount or target.startswith(mount.rstrip("/") + "/")
            if inside and len(mount) >= len(best):
                best, kind = mount, fields[2]
    return kind


def _note_local_paths(paths: dict[str, Path]) -> None:
    result = slurm_cmd.run(["sinfo", "-h", "-N", "-o", "%N"], check=False, timeout=30)
    if len(set(result.stdout.split())) <= 1:
        return
    for what, path in paths.items():
        kind = filesystem_type(path)
        if kind in LOCAL_FILESYSTEMS:
            print(f"manylab: note: the {what} {path} is on a local {kind} file system; every "
                  f"compute node must see it at the same path (docs/cluster.md)", file=sys.stderr)


class SlurmScheduler(Scheduler):
    name = "slurm"

    def submit(self, work: StudyJobs) -> int:
        options = work.options
        spec = specs.load(work.spec_path, options.get("profile") or None)
        chosen = settings(spec.slurm, options)
        retry = _flag(options, "retry_failed") or _flag(options, "force")
        if _flag(options, "slurm_dry_run"):
            jobs = self._still_to_submit(work, retry)
            if jobs:
                self._print_dry_run(work, chosen, self._arrays(jobs, chosen), options)
            return 0
        if not slurm_cmd.have("sbatch"):
            raise LabError(slurm_cmd.MISSING.format(tool="sbatch"))
        with slurm_record.locked(work.results_dir):  # one submission of a study at a time
            jobs = self._still_to_submit(work, retry)
            if jobs:
                self._submit_all(work, chosen, self._arrays(jobs, chosen), options)
        return 0

    def _arrays(self, jobs: list[PointJob], chosen: Settings) -> list[Array]:
        config = slurm_cmd.config() if slurm_cmd.have("scontrol") else {}
        max_size = int(config.get("MaxArraySize", "0") or 0)
        arrays = plan_arrays(jobs, chosen.max_array, max_size, chosen.time_min)
        if chosen.throttle and len(arrays) > 1:
            print(f"manylab: note: the throttle %{chosen.throttle} applies per array: "
                  f"{len(arrays)} arrays may run up to {chosen.throttle * len(arrays)} tasks "
                  f"at once", file=sys.stderr)
        return arrays

    def _submit_all(self, work: StudyJobs, chosen: Settings, arrays: list[Array],
                    options: dict[str, str]) -> None:
        results_dir = work.results_dir.resolve()
        command, cache = manylab_command(), cache_root().resolve()
        _note_local_paths({"cache": cache, "results folder": results_dir, "clone": REPO_ROOT})
        where = slurm_record.folder(results_dir)
        stamp = base = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        while any(where.glob(f"{stamp}-*")):  # two submissions within one second
            stamp = f"{base}.{len(list(where.glob(f'{base}*-0'))) + 1}"
        dependency = build_job = ""
        if options.get("slurm_build_job"):
            build_job = self._submit_build(work, chosen, where / f"{stamp}-build", command,
                                           cache, int(options["slurm_build_job"]))
            dependency = f"afterok:{build_job}"
        submitted = []
        for number, array in enumerate(arrays):
            folder = where / f"{stamp}-{number}"
            task = Task(work.study, work.spec_path.resolve(), results_dir.parent, folder,
                        command, cache, REPO_ROOT, array, chosen, dependency)
            job_id = self._submit_array(task)
            slurm_record.add_submission(results_dir, {
                "id": folder.name, "job_id": job_id, "array": array.spec(chosen.throttle),
                "points": list(array.points), "resources": vars(array.resources),
                "submitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "folder": folder.name, "build_job": build_job or None})
            submitted.append(f"{job_id} ({len(array.points)} points, "
                             f"--array={array.spec(chosen.throttle)})")
        points = sum(len(array.points) for array in arrays)
        print(f"manylab: submitted {points} points as {len(arrays)} job array(s): "
              f"{', '.join(submitted)}" + (f" after build job {build_job}" if build_job else ""),
              file=sys.stderr)
        print(f"manylab: follow with `manylab status {work.results_dir} --scheduler slurm`; "
              f"task logs in {results_dir}/.slurm/<submission>/", file=sys.stderr)

    def _still_to_submit(self, work: StudyJobs, retry: bool) -> list[PointJob]:
        """Drop points queued or running already; failed and timed-out ones unless retrying."""
        if not slurm_record.submissions(work.results_dir):
            return list(work.jobs)
        known = self.states(work.results_dir)
        jobs, active, failed = [], 0, 0
        for job in work.jobs:
            state = known.get(job.point_id)
            if state in (PointState.PENDING, PointState.RUNNING):
                active += 1
            elif state in (PointState.FAILED, PointState.TIMEOUT) and not retry:
                failed += 1
            else:
                jobs.append(job)
        if active:
            print(f"manylab: {active} points are queued or running already (not resubmitted; "
                  f"`manylab cancel` stops them)", file=sys.stderr)
        if failed:
            print(f"manylab: {failed} points failed or timed out in Slurm (kept; "
                  f"--retry-failed resubmits them)", file=sys.stderr)
        return jobs

    def _print_dry_run(self, work: StudyJobs, chosen: Settings, arrays: list[Array],
                       options: dict[str, str]) -> None:
        command, cache = manylab_command(), cache_root().resolve()
        where = slurm_record.folder(work.results_dir.resolve())
        dependency = ""
        if options.get("slurm_build_job"):
            print(build_script(work.study, work.spec_path.resolve(), where / "<stamp>-build",
                               command, cache, REPO_ROOT, chosen,
                               int(options["slurm_build_job"])))
            dependency = "afterok:<build job>"
        for number, array in enumerate(arrays):
            task = Task(work.study, work.spec_path.resolve(), work.results_dir.resolve().parent,
                        where / f"<stamp>-{number}", command, cache, REPO_ROOT, array, chosen,
                        dependency)
            print(render(task))
            print(f"# {task.points_file} would list {len(array.points)} points:")
            print("\n".join(f"#   {point}" for point in array.points[:5]) +
                  ("\n#   ..." if len(array.points) > 5 else ""))
        print(f"manylab: dry run: {sum(len(a.points) for a in arrays)} points in "
              f"{len(arrays)} array(s); nothing submitted", file=sys.stderr)

    def _submit_build(self, work: StudyJobs, chosen: Settings, folder: Path, command: Path,
                      cache: Path, cpus: int) -> str:
        folder.mkdir(parents=True)
        script = folder / "build.sh"
        atomic.write_text(script, build_script(work.study, work.spec_path.resolve(), folder,
                                               command, cache, REPO_ROOT, chosen, cpus))
        return self._sbatch(script)

    def _submit_array(self, task: Task) -> str:
        task.folder.mkdir(parents=True)
        atomic.write_text(task.points_file, "\n".join(task.array.points) + "\n")
        atomic.write_text(task.script_file, render(task))
        return self._sbatch(task.script_file)

    def _sbatch(self, script: Path) -> str:
        result = slurm_cmd.run(["sbatch", "--parsable", str(script)], check=False)
        if result.returncode != 0:
            raise LabError(f"sbatch {script} failed: {slurm_cmd.first_line(result.stderr)}: "
                           f"check [slurm] partition, account, qos and time_min against "
                           f"`sinfo -s` and `sacctmgr show assoc user=$USER`")
        job_id = result.stdout.strip().split(";")[0]
        if not job_id.isdigit():
            raise LabError(f"sbatch {script} printed no job id: {result.stdout.strip()!r}")
        return job_id

    def task_view(self, results_dir: Path) -> dict[str, tuple[str, int, str]]:
        """Point id -> (job id, task index, Slurm state or '') for each point's newest task."""
        latest = slurm_record.latest_tasks(results_dir)
        if not latest:
            return {}
        job_ids = {job for job, _, _ in latest.values()}
        live = slurm_state.squeue(job_ids)
        missing = {job for job, index, _ in latest.values() if (job, index) not in live}
        whole: dict[str, str] = {}
        history: dict[slurm_state.TaskKey, str] = {}
        if missing:
            found = slurm_state.sacct(missing, whole)
            if found is None:
                found = slurm_state.jobcomp(missing, whole)
            history = found or {}
        cached = slurm_record.cached_states(results_dir)
        view: dict[str, tuple[str, int, str]] = {}
        final: dict[str, str] = {}
        for point, (job, index, _) in latest.items():
            name = f"{job}_{index}"
            state = (live.get((job, index)) or history.get((job, index)) or whole.get(job)
                     or cached.get(name, ""))
            view[point] = (job, index, state)
            if slurm_state.is_final(state):
                final[name] = state.split()[0]
        slurm_record.save_states(results_dir, final)
        return view

    def states(self, results_dir: Path) -> dict[str, PointState]:
        states: dict[str, PointState] = {}
        for point, (_, _, slurm) in self.task_view(results_dir).items():
            state = slurm_state.point_state(slurm)
            if state in (PointState.DONE, PointState.UNKNOWN):
                result = pointdir.read_result(results_dir / point)
                if result is not None:
                    state = PointState.DONE if result["status"] == "ok" else PointState.FAILED
                elif state is PointState.DONE:
                    state = PointState.FAILED  # exit 0 yet no result.json: see the task log
            states[point] = state
        return states

    def cancel(self, results_dir: Path) -> int:
        view = self.task_view(results_dir)
        active = {point: job for point, (job, _, slurm) in view.items()
                  if slurm_state.point_state(slurm) in (PointState.PENDING, PointState.RUNNING)}
        jobs = set(active.values())
        for record in slurm_record.submissions(results_dir):
            if str(record["job_id"]) in jobs and record.get("build_job"):
                jobs.add(str(record["build_job"]))
        if jobs:
            slurm_cmd.run(["scancel", *sorted(jobs, key=int)])
        return len(active)


