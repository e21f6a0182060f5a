"""What the gem5 tests share: a planned point of a gem5 study, its system description, and
the restored-checkpoint study that the real-gem5 tests of both arches run."""

import json
from pathlib import Path
from typing import Any

from manylab import plan
from manylab import spec as specs
from manylab.backends.gem5 import backend, system
from manylab.params import PointParams
from tests.e2e.helpers import manylab, point_dirs, result_of, study_spec

INPUTS = system.Gem5Inputs(Path("/k/vmlinux"), Path("/i/rootfs.ext2"), Path("/p/run.sh"))


def gem5_point(write_spec, preset: str, vcpus: int, extra: str = "",
               arch: str = "x86_64") -> dict:
    spec = specs.load(write_spec(f"""
[machine]
backend = "gem5"
arch = "{arch}"
vcpus = {vcpus}
{extra}
[plugin]
preset = "{preset}"
[workload]
name = "falseshare"
args = {{ threads = {vcpus} }}
"""))
    return plan.points(spec)[0].params


def describe(point: dict, inputs: system.Gem5Inputs = INPUTS) -> dict:
    typed = PointParams.from_dict(point)
    return system.describe(typed, backend.describe_machine(typed), inputs)


RESTORE_SPEC = """
[machine]
backend = "gem5"
arch = "{arch}"
vcpus = 4
memory = "512M"
snapshot = "auto"
[plugin]
preset = "knl-64"
[workload]
name = "falseshare"
args = {{ threads = 4, iters = 500, mode = "shared" }}
"""

# Counts of the region that two runs of one system from one state must repeat exactly: the
# timing cores' committed instructions and cycles, the region's length, and every Ruby
# message buffer's count. (gem5's simInsts sums each core's instructions since gem5 started,
# not since the statistics reset: in a restored run it counts from the restore.)
EXACT = tuple(f"board.processor.switch{core}.core.{stat}" for core in range(4)
              for stat in ("commitStats0.numInsts", "numCycles")) + ("simTicks",)


def restored_points(tmp_path: Path, study: str, arch: str) -> list[tuple[dict[str, Any],
                                                                        dict[str, Any]]]:
    """Run two falseshare points on 4 cores of knl-64 from one checkpoint; check that each
    restored (not booted) and ran its region; return each point's (inputs.json "gem5", stats)."""
    spec = tmp_path / f"{study}.toml"
    spec.write_text(study_spec(study, RESTORE_SPEC.format(arch=arch), repeats=2))
    manylab("run", str(spec), "--results-root", str(tmp_path / "runs"), "-j", "1")
    points = []
    for point in point_dirs(tmp_path / "runs" / study):
        assert result_of(point)["status"] == "ok", result_of(point)
        gem5 = json.loads((point / "inputs.json").read_text())["gem5"]
        assert "checkpoint" in gem5, gem5.get("checkpoint_error")
        assert "--restore" in gem5["argv"]
        console = (point / "console.log").read_text()
        assert "Linux version" not in console  # restored, not booted
        assert "after-ready-point=1" in console
        stats = json.loads((point / "stats.json").read_text())
        summary = stats["summary"]
        assert summary["roi.insts"] > 10**4
        # falseshare marks phase 1 (shared) right after the region opens: it lasts to the end.
        assert [m["phase"] for m in stats["roi"]["phases"]] == [1]
        assert 0 < summary["roi.phase1.time.modelled_ns"] <= summary["roi.time.modelled_ns"]
        points.append((gem5, stats))
    assert len(points) == 2
    return points


def assert_same_region_counts(points: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    first, second = (stats["gem5_roi_block"] for _, stats in points)
    ruby = [k for k in first if "ruby_system" in k and "msg_count" in k.lower()]
    assert ruby, "no Ruby message counts in the region's block"
    for name in (*EXACT, *ruby):
        assert first[name] == second[name], name
