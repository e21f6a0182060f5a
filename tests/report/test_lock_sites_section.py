"""The report's "Lock waits by call site" table, from stats.json's regions.roi.lock_sites."""

from manylab.report import records
from manylab.report.sections import lock_sites
from tests.report.fakes import params, write_point

SITES = [
    {"site": "unknown", "slow_path": "osq_lock",
     "instructions": 45, "cycles": 2000, "wait_cycles": 0, "entries": 0},
    {"site": "folio_lruvec_lock_irqsave", "slow_path": "queued_spin_lock_slowpath",
     "instructions": 4543, "cycles": 299784, "wait_cycles": 270612, "entries": 131},
    {"site": "free_pcppages_bulk", "slow_path": "queued_spin_lock_slowpath",
     "instructions": 1529, "cycles": 386686, "wait_cycles": 382817, "entries": 8},
]


def test_lock_sites_table_lists_the_roi_sites_by_wait(tmp_path):
    study = tmp_path / "locks"
    for procs in (1, 4):
        regions = {"roi": {"stats": {"time.wait": 1_000_000.0},
                           "lock_sites": SITES if procs == 4 else []}}
        write_point(study, f"p{procs}", params("pwriter", {"procs": procs}),
                    [{"workload": "pwriter"}], stats={"roi.insts": 1000}, regions=regions)
    (section,) = lock_sites.sections(records.load(study))
    (table,) = section.tables
    assert table.columns == ["workload.args.procs", "site", "slow path", "wait cycles",
                             "% of ROI wait", "instructions", "cycles", "entries"]
    assert table.rows == [
        ["4", "free_pcppages_bulk", "queued_spin_lock_slowpath", "382,817", "38.3", "1,529",
         "386,686", "8"],
        ["4", "folio_lruvec_lock_irqsave", "queued_spin_lock_slowpath", "270,612", "27.1",
         "4,543", "299,784", "131"],
        ["4", "unknown", "osq_lock", "0", "0.0", "45", "2,000", "0"]]


def test_no_lock_sites_no_section(tmp_path):
    study = tmp_path / "plain"
    write_point(study, "p1", params("pwriter", {"procs": 1}), [{"workload": "pwriter"}],
                stats={"roi.insts": 1000}, regions={"roi": {"stats": {}}})
    assert lock_sites.sections(records.load(study)) == []
