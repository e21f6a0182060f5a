"""gem5 checkpoints in a real gem5 (needs MANYLAB_GEM5; skipped without it): a study of two
falseshare points on 4 cores of knl-64 with machine.snapshot = "auto" boots the guest once on
atomic cores to its ready point, where gem5 saves a checkpoint into the lab's cache; each point
then restores it, reads its own run script through readfile, runs its region of interest on
timing cores through Ruby, and the two restores count the same. A cold boot to the checkpoint
takes minutes here (about 5 at 4 cores on a loaded 2-core host); a later run reuses it."""

import json
import os
from pathlib import Path

import pytest

from tests.e2e.helpers import manylab, point_dirs, result_of, study_spec

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("MANYLAB_GEM5"),
        reason="gem5 not found: set MANYLAB_GEM5 to a gem5 v24 X86_MESI_Two_Level build "
               "(gem5-configs/README.md)"),
    pytest.mark.timeout(3600),
]

SPEC = """
[machine]
backend = "gem5"
vcpus = 4
memory = "512M"
snapshot = "auto"
[plugin]
preset = "knl-64"
[workload]
name = "falseshare"
args = { threads = 4, iters = 500, mode = "shared" }
"""

# Counts of the region that two runs of one system from one state must repeat exactly: the
# timing cores' committed instructions and cycles, the region's length, and (below) every
# Ruby message buffer's count. (gem5's simInsts sums each core's instructions since gem5
# started, not since the statistics reset: in a restored run it counts from the restore.)
EXACT = tuple(f"board.processor.switch{core}.core.{stat}" for core in range(4)
              for stat in ("commitStats0.numInsts", "numCycles")) + ("simTicks",)


def test_two_restores_of_one_checkpoint_run_the_workload_and_count_the_same(tmp_path: Path):
    spec = tmp_path / "cpt.toml"
    spec.write_text(study_spec("cpt", SPEC, repeats=2))
    manylab("run", str(spec), "--results-root", str(tmp_path / "runs"), "-j", "1")
    blocks = []
    for point in point_dirs(tmp_path / "runs" / "cpt"):
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
        blocks.append(stats["gem5_roi_block"])
    assert len(blocks) == 2
    first, second = blocks
    ruby = [k for k in first if "ruby_system" in k and "msg_count" in k.lower()]
    assert ruby, "no Ruby message counts in the region's block"
    for name in (*EXACT, *ruby):
        assert first[name] == second[name], name
