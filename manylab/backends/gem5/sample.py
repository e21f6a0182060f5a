"""A sample of a gem5 point's region of interest: the point's checkpoint restored (built when
missing), then the first microseconds of its region on the detailed cores, ended by
run_point.py --roi-max-ticks. For figures of a region too long to run whole here (host cost
per instruction at 256 cores): the counts are the sample's, not the region's."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from manylab import image, kernel
from manylab.backends import supervise
from manylab.backends.gem5 import backend, checkpoint, command, stats
from manylab.errors import LabError
from manylab.params import PointParams


@dataclass
class Sample:
    checkpoint_key: str
    checkpoint_build_s: float | None
    checkpoint_bytes: int
    to_region: dict[str, float]  # stats.summary of the restore up to the region, "restore.*"
    region: dict[str, float]  # stats.summary of the sample, "roi.*"
    wall_s: float
    peak_rss_mib: float | None


def run(point: PointParams, roi_us: float, timeout_s: float = backend.DEFAULT_TIMEOUT_S) -> Sample:
    if point.machine.backend != "gem5" or not checkpoint.wanted(point):
        raise LabError("a region sample needs a gem5 point that restores a checkpoint "
                       "(machine.snapshot = \"auto\", gem5.boot_cpu = \"atomic\")")
    gem5 = command.binary(point)
    backend.GEM5.check_tools(point)
    kern = kernel.build(kernel.request_for(point))
    img = image.for_point(point)
    with tempfile.TemporaryDirectory(prefix="manylab-sample-") as name:
        work = Path(name)
        description = backend.prepare(point, kern, img, work)
        state = checkpoint.ensure(description, gem5, kern, img, timeout_s)
        argv = command.argv(gem5, work / "out", work / checkpoint.SYSTEM_JSON)
        argv += checkpoint.restore_args(state) + ["--roi-max-ticks", str(round(roi_us * 1e6))]
        outcome = supervise.run(argv, work / "console.log", work / "gem5-stderr.log",
                                timeout_s, program="gem5")
        roi_json = work / "out" / "roi.json"
        roi = json.loads(roi_json.read_text()) if roi_json.is_file() else {}
        # The sample ends gem5 before the guest's exit, which outcome.failure reports for a
        # whole run: here only a fault, a hang, gem5's error or an early end fail it.
        if outcome.console.failures or outcome.timed_out:
            problem = outcome.failure
        elif outcome.returncode:
            problem = f"gem5 exited {outcome.returncode}: " \
                f"{supervise.reason_line(outcome.stderr_tail)}"
        elif not roi.get("truncated"):
            problem = "the region ended before the sample did"
        else:
            problem = None
        if problem:
            raise LabError(f"no region sample: {problem}")
        blocks = stats.parse((work / "out" / "stats.txt").read_text())
    return Sample(state.key, state.manifest.get("build_s"),
                  sum(f["bytes"] for f in state.manifest["files"].values()),
                  stats.summary(blocks[0], description, "restore"),
                  stats.summary(blocks[1], description, "roi"),
                  outcome.seconds, outcome.peak_rss_mib)
