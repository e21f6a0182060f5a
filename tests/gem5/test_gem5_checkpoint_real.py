"""gem5 checkpoints in a real gem5 (needs MANYLAB_GEM5; skipped without it): a study of two
falseshare points on 4 cores of knl-64 with machine.snapshot = "auto" boots the guest once on
atomic cores to its ready point, where gem5 saves a checkpoint into the lab's cache; each point
then restores it, reads its own run script through readfile, runs its region of interest on
timing cores through Ruby, and the two restores count the same. A cold boot to the checkpoint
takes minutes here (about 5 at 4 cores on a loaded 2-core host); a later run reuses it."""

import os
from pathlib import Path

import pytest

from tests.gem5.points import assert_same_region_counts, restored_points

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("MANYLAB_GEM5"),
        reason="gem5 not found: set MANYLAB_GEM5 to a gem5 v24 X86_MESI_Two_Level build "
               "(gem5-configs/README.md)"),
    pytest.mark.timeout(3600),
]


def test_two_restores_of_one_checkpoint_run_the_workload_and_count_the_same(tmp_path: Path):
    assert_same_region_counts(restored_points(tmp_path, "cpt", "x86_64"))
