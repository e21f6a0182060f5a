"""scripts/bench_gem5.py --point: its one-line errors, which need no gem5."""
import subprocess
import sys

from manylab import plan
from manylab import spec as specs
from tests.conftest import REPO


def bench_point(point_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "scripts/bench_gem5.py", "--point", "runs/ldu.toml",
                           point_id, "--profile", "aim7-120"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def test_unknown_point_names_the_spec() -> None:
    done = bench_point("no-such-point")
    assert done.returncode != 0
    assert done.stderr.strip() == ("bench_gem5: runs/ldu.toml: no point 'no-such-point' "
                                   "(see manylab plan runs/ldu.toml)")


def test_failed_sample_names_the_point() -> None:
    qemu_point = plan.points(specs.load(REPO / "runs/ldu.toml", "aim7-120"))[0].id
    done = bench_point(qemu_point)
    assert done.returncode != 0
    assert done.stderr.startswith(f"bench_gem5: {qemu_point}: a region sample needs a gem5 point")
