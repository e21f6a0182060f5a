"""The default scheduler: a pool of local worker threads, each driving one QEMU at a time."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from manylab import plan, runner
from manylab.backends import supervise
from manylab.errors import LabError
from manylab.progress import Progress
from manylab.schedulers.base import PointState, Scheduler, StudyJobs


class LocalScheduler(Scheduler):
    name = "local"

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = max(1, jobs)

    def submit(self, work: StudyJobs) -> int:
        """Runs the planned points (StudyJobs built with the spec and each job's point)."""
        spec = work.spec
        points = [job.point for job in work.jobs]
        if spec is None or any(point is None for point in points):
            raise LabError("the local scheduler needs the planned points (StudyJobs.spec and "
                           "PointJob.point)")
        chosen = plan.interleaved([p for p in points if p is not None])
        progress = Progress(len(chosen), f"{spec.name}")
        root = work.results_dir.parent

        def one(point: plan.Point) -> bool:
            progress.start(point.id)
            try:
                result = runner.run_point(spec, point, root)
            except LabError as error:
                progress.finish(point.id, False, str(error))
                raise
            ok = bool(result["status"] == "ok")
            progress.finish(point.id, ok, "" if ok else str(result["reason"]))
            return ok

        pool = ThreadPoolExecutor(max_workers=self.jobs)
        futures = [pool.submit(one, point) for point in chosen]
        try:
            outcomes = [future.result() for future in futures]
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            supervise.stop_all()
            pool.shutdown(wait=True)
            progress.close()
            raise
        pool.shutdown()
        progress.close()
        return 0 if all(outcomes) else 1

    def states(self, results_dir: Path) -> dict[str, PointState]:
        return {}
