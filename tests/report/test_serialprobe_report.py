"""The serialprobe plot set: each phase's modelled time / the serial phase's, beside what
hardware gives (spin and mutex 1.0, none 1/threads), on fake stats.json files."""

import pytest

from manylab.report.build import make_report
from manylab.report.kinds.serialprobe import with_ratios
from tests.report.fakes import params, write_point

# vcpus (= threads) -> per repeat, the modelled ns of ROI phases 1 (serial), 2 (spin),
# 3 (mutex), 4 (none)
TIMES = {2: ((1.0e6, 0.5e6, 1.0e6, 0.5e6), (1.0e6, 0.5e6, 1.0e6, 0.5e6)),
         4: ((2.0e6, 2.1e6, 1.8e6, 0.52e6), (2.0e6, 1.9e6, 2.2e6, 0.48e6))}


def probe_study(root):
    study = root / "sp"
    for vcpus, repeats in TIMES.items():
        for repeat, times in enumerate(repeats):
            stats = {f"roi.phase{k}.time.modelled_ns": t for k, t in enumerate(times, start=1)}
            write_point(study, f"v{vcpus}-r{repeat}",
                        params("serialprobe", {"threads": vcpus, "sections": 4}, repeat, vcpus),
                        [{"workload": "serialprobe", "threads": vcpus, "sections": 4,
                          "work": 20000, "lock": "all",
                          "phases": ["serial", "spin", "mutex", "none"],
                          "spin_contended": 3, "mutex_contended": 2, "verified": True}],
                        stats=stats)
    return study


def test_ratios_of_one_record_by_hand():
    row = with_ratios({"result.threads": 4,
                       "stats.roi.phase1.time.modelled_ns": 2.0e6,
                       "stats.roi.phase2.time.modelled_ns": 2.1e6,
                       "stats.roi.phase3.time.modelled_ns": 1.8e6,
                       "stats.roi.phase4.time.modelled_ns": 0.52e6})
    assert row["modelled.spin.ratio"] == pytest.approx(1.05)
    assert row["modelled.mutex.ratio"] == pytest.approx(0.9)
    assert row["modelled.none.ratio"] == pytest.approx(0.26)
    assert row["expected.spin.ratio"] == 1.0 and row["expected.mutex.ratio"] == 1.0
    assert row["expected.none.ratio"] == 0.25


def test_ratios_need_the_serial_phase_and_skip_phases_that_did_not_run():
    # --lock spin: phases 1 and 2 only; the thread count from the spec argument
    row = with_ratios({"workload.args.threads": 8,
                       "stats.roi.phase1.time.modelled_ns": 4.0e6,
                       "stats.roi.phase2.time.modelled_ns": 0.5e6})
    assert row["modelled.spin.ratio"] == 0.125 and row["expected.spin.ratio"] == 1.0
    assert not any(k.startswith(("modelled.mutex", "modelled.none", "expected.none"))
                   for k in row)
    for serial in (0.0, None):
        assert "modelled.spin.ratio" not in with_ratios(
            {"stats.roi.phase1.time.modelled_ns": serial,
             "stats.roi.phase2.time.modelled_ns": 1.0})


def test_report_tables_each_phase_over_the_serial_one_beside_hardware(tmp_path):
    index = make_report(probe_study(tmp_path))
    text = index.read_text()
    assert 'src="serialprobe-ratios.png"' in text
    assert (index.parent / "serialprobe-ratios.png").is_file()
    markdown = (index.parent / "report.md").read_text()
    assert "serialprobe: does the modelled clock charge lock waiting?" in markdown
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")
            for line in markdown.splitlines() if line.startswith("| 2 |")
            or line.startswith("| 4 |")}
    # columns: vcpus, threads, n, serial ms, spin/serial, hardware, mutex/serial, hardware,
    # none/serial, hardware
    # 2 threads: spin 0.5e6/1e6 = 0.5 (waiting not charged), mutex 1.0, none 0.5 = 1/2
    assert rows["2"][1:] == ["2", "2", "1.0000 ± 0.0000", "0.500 ± 0.000", "1.000",
                             "1.000 ± 0.000", "1.000", "0.500 ± 0.000", "0.500 |"]
    # 4 threads: spin 1.05 and 0.95 -> 1.000 ± 0.071 (sample std of ±0.05); mutex 0.9 and
    # 1.1 -> 1.000 ± 0.141; none 0.26 and 0.24 -> 0.250 ± 0.014 beside 1/4
    assert rows["4"][1:] == ["4", "2", "2.0000 ± 0.0000", "1.000 ± 0.071", "1.000",
                             "1.000 ± 0.141", "1.000", "0.250 ± 0.014", "0.250 |"]


def test_one_point_gets_the_table_alone_and_phases_that_ran_only(tmp_path):
    # --lock spin at 8 threads, nothing swept: spin 0.25e6 / 2e6 = 0.125 (waiting not charged)
    study = tmp_path / "one"
    write_point(study, "p0", params("serialprobe", {"threads": 8, "lock": "spin"}, 0, 8),
                [{"workload": "serialprobe", "threads": 8, "lock": "spin",
                  "phases": ["serial", "spin"], "verified": True}],
                stats={"roi.phase1.time.modelled_ns": 2.0e6,
                       "roi.phase2.time.modelled_ns": 0.25e6})
    index = make_report(study)
    assert "serialprobe-ratios" not in index.read_text()
    markdown = (index.parent / "report.md").read_text()
    assert ("| threads | n | serial (modelled ms) | spin / serial | spin: hardware |"
            in markdown)
    assert "| 8 | 1 | 2.0000 | 0.125 | 1.000 |" in markdown
    assert "mutex / serial" not in markdown
