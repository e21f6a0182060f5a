"""The gem5 importer on a real stats.txt: falseshare (shared line, 4 threads x 20,000) on the
knl-64 mesh, recorded from `manylab run runs/tiers.toml` with gem5 v24.0.0.1 X86_MESI_Two_Level
gem5.fast (tests/data/gem5/README.md). Expected values are read off the file by hand."""

import json
from pathlib import Path

import pytest

from manylab import pointdir
from manylab.backends.gem5 import stats
from manylab.errors import LabError
from manylab.paths import REPO_ROOT

DATA = Path(__file__).resolve().parents[1] / "data" / "gem5"


@pytest.fixture(scope="module")
def system() -> dict:
    return json.loads((DATA / "gem5-system.json").read_text())


def test_parser_reads_three_blocks_and_vector_totals():
    blocks = stats.parse((DATA / "stats.txt").read_text())
    assert len(blocks) == 3  # boot, region of interest, rest
    roi = blocks[1]
    assert roi[f"{stats.RUBY}.L1Cache_Controller.Inv::total"] == 30338
    assert roi["board.memory.mem_ctrl1.readReqs"] == 2162
    # simInsts counts from power-on; the blocks' own counts come from the cores.
    assert blocks[1]["simInsts"] > blocks[0]["simInsts"]


def test_region_block_in_the_plugins_summary_keys(system):
    imported = stats.import_run(DATA / "stats.txt", DATA / "roi.json", system)
    s = imported["summary"]
    assert imported["source"] == "gem5"
    assert imported["schema"] == pointdir.STATS_SCHEMA
    assert imported["tool"] == {"name": "gem5", "version": "unknown"}
    assert s["roi.insts"] == 311368 + 283396 + 292117 + 264088
    assert s["roi.coh.msgs.gets"] == 83008
    assert s["roi.coh.msgs.inv"] == 30338 and s["roi.coh.msgs.fwd_getm"] == 30139
    assert s["roi.coh.invalidations"] == 30338 + 30139
    assert s["roi.coh.msgs"] == 347126
    assert s["roi.coh.hops"] == pytest.approx(5.002671 * 347125)  # x packets received
    # knl-64's two DDR channels hold the whole 512 MiB DRAM region.
    assert s["roi.mem.dram.reads"] == 2253 + 2162 and s["roi.mem.reads"] == 4415
    assert s["roi.mem.writes"] == 0 and s["roi.mem.pcm.writes"] == 0
    # Energy from the preset's DRAM read energy: 0.1 nJ/bit x 512 bits per line.
    assert s["roi.mem.dram.energy_nj"] == pytest.approx(4415 * 512 * 0.1)
    assert s["roi.l1d.misses"] >= 16619  # core 0's L1D alone
    assert imported["roi"]["end_tick"] - imported["roi"]["begin_tick"] == 3076031500
    assert s["roi.time.modelled_ns"] == pytest.approx(3076031.5)  # ticks are picoseconds
    assert not any(".phase" in key for key in s)  # this run's roi.json has no phase marks


def test_phase_times_sum_each_phases_intervals_up_to_the_regions_end(system, tmp_path):
    roi = json.loads((DATA / "roi.json").read_text())
    begin = roi["begin_tick"]
    # serialprobe's order: phase 1, barrier (0), phase 2, barrier (0), then the region ends.
    roi["phases"] = [{"phase": 1, "tick": begin + 1000}, {"phase": 0, "tick": begin + 501000},
                     {"phase": 2, "tick": begin + 503000},
                     {"phase": 0, "tick": roi["end_tick"] - 4000}]
    (tmp_path / "roi.json").write_text(json.dumps(roi))
    s = stats.import_run(DATA / "stats.txt", tmp_path / "roi.json", system)["summary"]
    assert s["roi.phase1.time.modelled_ns"] == pytest.approx(500.0)
    assert s["roi.phase0.time.modelled_ns"] == pytest.approx(2.0 + 4.0)
    assert s["roi.phase2.time.modelled_ns"] == pytest.approx(
        (roi["end_tick"] - 4000 - begin - 503000) / 1000)


def test_a_region_that_never_ended_is_an_error(system, tmp_path):
    (tmp_path / "roi.json").write_text(json.dumps({"stats_block": 1, "begin_tick": 5,
                                                   "end_tick": None}))
    with pytest.raises(LabError, match="did not end"):
        stats.import_run(DATA / "stats.txt", tmp_path / "roi.json", system)
    with pytest.raises(LabError, match="no region of interest was recorded"):
        stats.import_run(DATA / "stats.txt", tmp_path / "missing.json", system)
    with pytest.raises(LabError, match="wrote no stats.txt"):
        stats.import_run(tmp_path / "stats.txt", DATA / "roi.json", system)


def test_one_stats_schema_name_on_both_tiers():
    report_rs = (REPO_ROOT / "plugin/src/report.rs").read_text()
    assert f'pub const SCHEMA: &str = "{pointdir.STATS_SCHEMA}";' in report_rs
