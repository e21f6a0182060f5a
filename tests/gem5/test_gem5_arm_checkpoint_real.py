"""arm64 gem5 checkpoints in a real gem5 (needs an ARM_CHI gem5 in MANYLAB_GEM5_ARM and gem5's
arm64 bootloader in MANYLAB_GEM5_ARM_BOOTLOADER; skipped without them), the arm64 twin of
test_gem5_checkpoint_real.py: two falseshare points on 4 cores of knl-64, arch = "arm64",
boot the lab's arm64 kernel once on atomic cores on gem5's Arm board (VExpress_GEM5_Foundation)
to the guest's ready point, where gem5 saves a checkpoint; each point then restores it, reads
its own run script through readfile, runs its region of interest on timing cores through the
CHI caches on the mesh, and the two restores count the same (gem5-configs/README.md "arm64
(CHI)": 15 min here). Then a sample of the region (the first 50 us, as
scripts/bench_gem5.py --point takes one) from the same checkpoint."""

import os
from pathlib import Path

import pytest

from manylab import plan
from manylab import spec as specs
from manylab.backends.gem5 import sample
from tests.gem5.points import assert_same_region_counts, restored_points


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


def test_two_restores_of_one_arm64_checkpoint_run_the_workload_and_count_the_same(
        tmp_path: Path):
    points = restored_points(tmp_path, "cpt-arm", "arm64")
    for gem5, stats in points:
        assert "bootloader_sha256" in gem5
        booted = (Path(gem5["checkpoint"]["directory"]) / "console.log").read_text()
        assert "arch=aarch64" in booted and "MANYLAB-READY" in booted
        summary = stats["summary"]
        assert summary["roi.l1d.accesses"] > 0 and summary["roi.coh.msgs"] > 0
    assert_same_region_counts(points)

    point = plan.points(specs.load(tmp_path / "cpt-arm.toml"))[0].config
    got = sample.run(point, 50.0)
    assert got.checkpoint_key == points[0][0]["checkpoint"]["key"]  # restored, not rebuilt
    assert got.region["roi.sim_seconds"] == pytest.approx(50e-6, abs=1e-9)
    assert 0 < got.region["roi.insts"] < points[0][1]["summary"]["roi.insts"]
    assert got.to_region["restore.insts"] > 0
