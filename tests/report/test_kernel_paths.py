"""The kernel lock-path plot set: derived columns, baseline ratios and the paper verdict."""

import pytest

from manylab.errors import LabError
from manylab.report.build import make_report
from manylab.report.sections.kernel_paths import with_derived
from tests.report.fakes import params, write_point

FUNCTIONS = ["*queued_spin_lock_slowpath", "folio_lruvec_lock*"]
# factor -> vcpus -> per repeat: (slow-path insts, slow-path msgs, lruvec-lock msgs, MiB/s)
FIGURES = {
    1: {8: [(500, 50, 10, 100.0), (700, 70, 10, 100.0)],
        16: [(1000, 100, 20, 100.0), (1200, 140, 20, 110.0)]},
    64: {8: [(50, 5, 5, 120.0), (70, 5, 5, 120.0)],
         16: [(100, 10, 2, 150.0), (120, 10, 4, 165.0)]},
    8: {8: [(900, 90, 30, 90.0), (900, 90, 30, 90.0)],
        16: [(2000, 200, 40, 90.0), (2200, 220, 40, 99.0)]},
}
SPEC = """[study]
name = "fl"
[kernel]
variant = "finerlru"
[workload]
name = "pwriter"
[report]
baseline = "{baseline}"
lock_wait = ["*queued_spin_lock_slowpath"]
paper = "finerlru"
"""


def finerlru_study(tmp_path, baseline="kernel.cmdline=finer_lru.factor=1"):
    spec = tmp_path / "fl.toml"
    spec.write_text(SPEC.format(baseline=baseline))
    study = tmp_path / "fl"
    for factor, by_vcpus in FIGURES.items():
        for vcpus, repeats in by_vcpus.items():
            for repeat, (insts, slow_msgs, lock_msgs, mib_s) in enumerate(repeats):
                point_params = params("pwriter", {"procs": vcpus}, repeat, vcpus, "finerlru",
                                      f"finer_lru.factor={factor}")
                point_params["plugin"]["functions"] = FUNCTIONS
                functions = [
                    {"name": "native_queued_spin_lock_slowpath", "insts": insts,
                     "coh.msgs": slow_msgs, "l1d.misses": 1},
                    {"name": "folio_lruvec_lock_irqsave", "insts": 10, "coh.msgs": lock_msgs,
                     "l1d.misses": 1}]
                lines = [{"paddr": "0x1000", "symbol": "lruvec+0x40", "coh.msgs": slow_msgs}]
                write_point(study, f"f{factor}-v{vcpus}-r{repeat}", point_params,
                            [{"workload": "pwriter", "write": {"aggregate_mib_s": mib_s},
                              "ok": True}],
                            stats={"roi.insts": 100_000, "roi.coh.msgs": 10 * lock_msgs,
                                   "roi.coh.msgs.gets": 3, "roi.coh.msgs.inv": lock_msgs},
                            spec=spec,
                            regions={"roi": {"functions": functions, "hot_lines": lines}})
    return study


def test_lock_wait_is_the_sum_of_the_listed_patterns_and_its_share_of_roi_insts():
    rows = with_derived([{"fn.a.insts": 30, "fn.b.insts": 20, "stats.roi.insts": 1000,
                          "paths.insts": 80},
                         {"fn.a.insts": 5}], ["a", "b"])
    assert rows[0]["lock_wait.insts"] == 50
    assert rows[0]["lock_wait.pct_of_roi_insts"] == pytest.approx(5.0)
    assert rows[0]["lock_wait.pct_of_path_insts"] == pytest.approx(62.5)
    assert "lock_wait.insts" not in rows[1]
    assert "lock_wait.pct_of_path_cycles" not in rows[0]


def test_lock_wait_share_of_time_is_the_listed_patterns_cycles_over_the_paths():
    # 50 + 250 of the paths' 400 modelled cycles: 75% of the time, though 62.5% of the insts.
    rows = with_derived([{"fn.a.insts": 30, "fn.b.insts": 20, "paths.insts": 80,
                          "fn.a.cycles": 50, "fn.b.cycles": 250, "paths.cycles": 400}],
                        ["a", "b"])
    assert rows[0]["lock_wait.pct_of_path_cycles"] == pytest.approx(75.0)
    assert rows[0]["lock_wait.pct_of_path_insts"] == pytest.approx(62.5)


def test_report_states_each_factor_against_factor_1_at_the_most_writers(tmp_path):
    index = make_report(finerlru_study(tmp_path))
    text = index.read_text()
    for name in ("pwriter-lock-paths", "pwriter-lock-wait-share", "pwriter-functions-coh",
                 "pwriter-coherence-kinds", "pwriter-paths-ratio", "pwriter-gain-write"):
        assert (index.parent / f"{name}.png").is_file(), name
        assert f'src="{name}.png"' in text
    # at 16 vCPUs, means over two repeats: slow path 1100 -> 110 insts; all listed functions'
    # messages (120 + 20) -> (10 + 3) and for factor 8 (210 + 40)
    assert ("compared at workload.args.procs=16 (the largest), against "
            "kernel.cmdline=finer_lru.factor=1") in text.lower()
    assert ("cmdline=finer_lru.factor=64: lock-wait instructions 1,100 -&gt; 110 (10.00x); "
            "lock-path coherence messages 140 -&gt; 13 (10.77x): reproduces the paper's "
            "direction") in text.replace("&#x27;", "'")
    assert ("cmdline=finer_lru.factor=8: lock-wait instructions 1,100 -&gt; 2,100 (0.52x); "
            "lock-path coherence messages 140 -&gt; 250 (0.56x): does not reproduce") in text
    # the write gain uses the same baseline: (150/100, 165/110) -> +50% both
    assert "finer_lru.factor=64 +50.0%" in text
    assert "lruvec+0x40" in text


def test_a_baseline_no_point_has_is_one_clear_error(tmp_path):
    study = finerlru_study(tmp_path, baseline="kernel.cmdline=finer_lru.factor=2")
    with pytest.raises(LabError, match=r"report.baseline 'kernel.cmdline=finer_lru.factor=2' "
                                       r"matches no point .*finer_lru.factor=1.*\[report\]"):
        make_report(study)
