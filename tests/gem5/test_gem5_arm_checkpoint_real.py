"""arm64 gem5 checkpoints in a real gem5 (needs an ARM_CHI gem5 in MANYLAB_GEM5_ARM and gem5's
arm64 bootloader in MANYLAB_GEM5_ARM_BOOTLOADER; skipped without them), the arm64 twin of
test_gem5_checkpoint_real.py: two falseshare points on 4 cores of knl-64, arch = "arm64",
boot the lab's arm64 kernel once on atomic cores on gem5's Arm board (VExpress_GEM5_Foundation)
to the guest's ready point, where gem5 saves a checkpoint; each point then restores it, reads
its own run script through readfile, runs its region of interest on timing cores through the
CHI caches on the mesh, and the two restores count the same (gem5-configs/README.md "arm64
(CHI)": 15 min here)."""

import json
import os
from pathlib import Path

import pytest

from tests.e2e.helpers import manylab, point_dirs, result_of, study_spec


def missing() -> str:
    gem5 = os.environ.get("MANYLAB_GEM5_ARM", "")
    if not (gem5 and os.access(gem5, os.X_OK)):
        return ("ARM gem5 not found: set MANYLAB_GEM5_ARM to a gem5 v24 ARM_CHI build with "
                "NUMBER_BITS_PER_SET=1024 (gem5-configs/README.md, arm64 (CHI))")
    if not Path(os.environ.get("MANYLAB_GEM5_ARM_BOOTLOADER", "/nonexistent")).is_file():
        return ("gem5's arm64 bootloader not found: set MANYLAB_GEM5_ARM_BOOTLOADER to "
                "boot_foundation.arm64 (gem5-configs/README.md, arm64 (CHI))")
    return ""


pytestmark = [
    pytest.mark.skipif(bool(missing()), reason=missing() or "ready"),
    pytest.mark.timeout(3 * 3600),
]

SPEC = """
[machine]
backend = "gem5"
arch = "arm64"
vcpus = 4
memory = "512M"
snapshot = "auto"
[plugin]
preset = "knl-64"
[workload]
name = "falseshare"
args = { threads = 4, iters = 500, mode = "shared" }
"""

# As on x86: the timing cores' committed instructions and cycles, the region's length, and
# every Ruby message buffer's count must repeat exactly from one state.
EXACT = tuple(f"board.processor.switch{core}.core.{stat}" for core in range(4)
              for stat in ("commitStats0.numInsts", "numCycles")) + ("simTicks",)


def test_two_restores_of_one_arm64_checkpoint_run_the_workload_and_count_the_same(
        tmp_path: Path):
    spec = tmp_path / "cpt-arm.toml"
    spec.write_text(study_spec("cpt-arm", SPEC, repeats=2))
    manylab("run", str(spec), "--results-root", str(tmp_path / "runs"), "-j", "1")
    blocks = []
    for point in point_dirs(tmp_path / "runs" / "cpt-arm"):
        assert result_of(point)["status"] == "ok", result_of(point)
        gem5 = json.loads((point / "inputs.json").read_text())["gem5"]
        assert "checkpoint" in gem5, gem5.get("checkpoint_error")
        assert "--restore" in gem5["argv"] and "bootloader_sha256" in gem5
        console = (point / "console.log").read_text()
        assert "Linux version" not in console  # restored, not booted
        assert "after-ready-point=1" in console
        booted = (Path(gem5["checkpoint"]["directory"]) / "console.log").read_text()
        assert "arch=aarch64" in booted and "MANYLAB-READY" in booted
        stats = json.loads((point / "stats.json").read_text())
        summary = stats["summary"]
        assert summary["roi.insts"] > 10**4
        assert summary["roi.l1d.accesses"] > 0 and summary["roi.coh.msgs"] > 0
        assert [m["phase"] for m in stats["roi"]["phases"]] == [1]
        assert 0 < summary["roi.phase1.time.modelled_ns"] <= summary["roi.time.modelled_ns"]
        blocks.append(stats["gem5_roi_block"])
    assert len(blocks) == 2
    first, second = blocks
    ruby = [k for k in first if "ruby_system" in k and "msg_count" in k.lower()]
    assert ruby, "no Ruby message counts in the region's block"
    for name in (*EXACT, *ruby):
        assert first[name] == second[name], name
