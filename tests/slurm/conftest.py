"""A one-node Slurm cluster on localhost for the whole session (tests marked `slurm`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
import slurmlab as cluster


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[cluster.Cluster]:
    missing = cluster.missing_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not found: install slurm-wlm and munge "
                    f"(scripts/setup.sh)")
    if os.geteuid() != 0:
        pytest.skip("slurmd must run as root to start jobs")
    started = cluster.start()
    before = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(started.conf)
    try:
        yield started
    finally:
        started.stop()
        if not os.environ.get("MANYLAB_KEEP_SLURM"):  # keep the daemons' logs when asked
            shutil.rmtree(started.root, ignore_errors=True)
        if before is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = before
