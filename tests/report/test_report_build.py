import csv
import json
import re

import pytest

from manylab.errors import LabError
from manylab.report.build import make_report
from manylab.report.compare import distinguishing, make_comparison
from manylab.report.sections.plugin_stats import key_columns, stats_group
from tests.report import browser
from tests.report.fakes import mmf_study, params, write_point


def images_of(index):
    text = index.read_text()
    sources = re.findall(r'<img src="([^"]+)"', text)
    for source in sources:
        assert (index.parent / source).is_file()
        assert (index.parent / source.replace(".png", ".svg")).is_file()
    return sources, text


def test_mmf_report_has_the_paper_plots_and_the_verdicts(tmp_path):
    study = mmf_study(tmp_path)
    write_point(study, "p-broken", params("mmf", {"path": "unix"}), None, status="failed",
                reason="kernel panic: Oops")
    index = make_report(study)
    sources, text = images_of(index)
    assert sources == ["mmf-throughput.png", "mmf-gain.png", "mmf-setup.png"]
    assert "reproduces: at sizes of 1 MiB and more, mmf is faster in 4 of 4 cases" in text
    assert "the mean gain is +40.0%" in text
    assert "kernel panic: Oops" in text and 'class="failed"' in text
    assert "linux-source-6.1 6.1.999-1" in text
    markdown = (index.parent / "report.md").read_text()
    assert "![Transfer throughput vs file size per path](mmf-throughput.png)" in markdown
    assert (study / "results.csv").is_file()


def test_pwriter_report_draws_gain_over_stock_per_factor(tmp_path):
    study = tmp_path / "pw"
    for procs in (1, 2, 4):
        for repeat in (0, 1):
            for variant, cmdline, speed in (("stock", "", 100.0),
                                            ("finerlru", "finer_lru.factor=8", 150.0),
                                            ("finerlru", "finer_lru.factor=32", 200.0)):
                value = speed * procs + repeat
                write_point(study, f"{variant}{cmdline[-2:]}-{procs}-{repeat}",
                            params("pwriter", {"procs": procs}, repeat, procs, variant, cmdline),
                            [{"workload": "pwriter", "procs": procs,
                              "write": {"aggregate_mib_s": value}, "ok": True}])
    index = make_report(study)
    sources, text = images_of(index)
    assert sources == ["pwriter-throughput.png", "pwriter-gain-write.png"]
    # at 4 writers: factor=8 (600,601)/(400,401) -> +50%, +49.88%
    assert "variant=finerlru, cmdline=finer_lru.factor=8 +49.9%" in text
    assert "variant=finerlru, cmdline=finer_lru.factor=32 +99.9%" in text


def test_unknown_workload_gets_generic_plots_and_plugin_stats(tmp_path):
    study = tmp_path / "g"
    for vcpus in (1, 2, 4):
        write_point(study, f"p{vcpus}", params("falseshare", {"threads": vcpus}, 0, vcpus),
                    [{"workload": "falseshare", "ns_per_op": 10.0 * vcpus, "ok": True}],
                    stats={"coherence.inv": 5 * vcpus, "coherence.fwd": vcpus,
                           "l2_misses": 100, "cycles": 1e6})
    index = make_report(study)
    sources, text = images_of(index)
    assert "falseshare-results-1.png" in sources
    assert {"falseshare-stats-coherence-0.png", "falseshare-stats-l2-0.png",
            "falseshare-stats-stats-0.png"} <= set(sources)
    assert "plotted against machine.vcpus" in text


def test_stats_groups():
    assert stats_group("stats.coherence.inv") == "coherence"
    assert stats_group("stats.l2_misses") == "l2"
    assert stats_group("stats.cycles") == "stats"


def test_report_of_an_empty_study_is_a_lab_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(LabError, match="no complete point"):
        make_report(tmp_path / "empty")


def test_compare_matches_points_and_computes_ratios(tmp_path):
    a = mmf_study(tmp_path / "a", "base")
    b = mmf_study(tmp_path / "b", "twice", scale=2.0)
    index = make_comparison(a, b, tmp_path / "cmp")
    sources, text = images_of(index)
    assert sources == ["compare-ratios.png"]
    assert ("matched on: workload.args.path, result.path, result.method, result.open, "
            "result.size") in text
    assert text.count("<td>2.000</td>") >= 16  # throughput doubled in every matched group
    assert distinguishing([{"kernel.variant": "stock"}], [{"kernel.variant": "ldu"}]) == \
        ["kernel.variant"]


@pytest.mark.skipif(browser.chromium() is None, reason="chromium not installed")
def test_report_opens_in_headless_chromium(tmp_path):
    index = make_report(mmf_study(tmp_path))
    images, tables = browser.check_page(index)
    assert len(images) == 3 and tables >= 4
    browser.screenshot(index, tmp_path / "shot.png")


def test_results_csv_is_rebuilt(tmp_path):
    study = mmf_study(tmp_path)
    make_report(study)
    with (study / "results.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 4


def test_mmf_extra_sweep_gets_one_section_per_value(tmp_path):
    study = mmf_study(tmp_path)
    for point in list(study.iterdir()):
        inputs = point / "inputs.json"
        data = json.loads(inputs.read_text())
        data["params"]["machine"]["vcpus"] = 1 if point.name.startswith("p-pipe") else 2
        inputs.write_text(json.dumps(data))
    sources, text = images_of(make_report(study))
    assert "mmf-throughput-vcpus-1.png" in sources and "mmf-setup-vcpus-2.png" in sources
    assert "MMF transfer (vcpus=1)" in text


def test_plugin_region_summary_draws_the_roi_key_figures_only():
    columns = ["stats.total.insts", "stats.roi.insts", "stats.roi.coh.msgs",
               "stats.roi.coh.msgs.gets", "stats.roi.phase1.insts", "stats.roi.mem.pcm.writes"]
    assert key_columns(columns) == ["stats.roi.insts", "stats.roi.coh.msgs",
                                    "stats.roi.mem.pcm.writes"]
    assert key_columns(["stats.total.insts", "stats.total.l2.miss_rate"]) == [
        "stats.total.insts", "stats.total.l2.miss_rate"]
    assert key_columns(["stats.cycles"]) == []
    # each span number's modelled time, in numeric order; not the phase's copies
    spans = ["stats.roi.time.span10.modelled_ns", "stats.roi.time.span2.modelled_ns",
             "stats.roi.time.span2.count", "stats.roi.phase1.time.span2.modelled_ns"]
    assert key_columns(["stats.roi.insts", *spans]) == [
        "stats.roi.insts", "stats.roi.time.span2.modelled_ns",
        "stats.roi.time.span10.modelled_ns"]


def test_keys_moving_in_lockstep_with_the_x_axis_are_not_series():
    from manylab.report.axes import lockstep, writers_layout
    records = [{"machine.vcpus": v, "workload.args.workers": v, "kernel.cmdline": c}
               for v in (8, 16) for c in ("ldu=off", "ldu=global")]
    assert lockstep(records, "machine.vcpus", "workload.args.workers")
    assert not lockstep(records, "machine.vcpus", "kernel.cmdline")
    lay = writers_layout(records, ["kernel.cmdline", "machine.vcpus", "workload.args.workers"])
    assert (lay.x, lay.series) == ("machine.vcpus", ["kernel.cmdline"])


def test_contention_report_draws_handoffs_against_the_quantum(tmp_path):
    study = tmp_path / "interleave"
    for quantum, handoffs in ((0, 0.01), (100, 400.0), (1000, 30.0)):
        for repeat in (0, 1):
            point_params = params("contention", {"threads": 4}, repeat, 4)
            point_params["machine"]["quantum"] = quantum
            folder = write_point(
                study, f"q{quantum}-{repeat}", point_params,
                [{"workload": "contention", "atomic_handoffs_per_1000": handoffs + repeat,
                  "lock_handoffs_per_1000": handoffs / 2, "padded_handoffs_per_1000": 0.0,
                  "lock_contended_share": 0.1, "padded_contended_share": 0.0,
                  "verified": True}],
                stats={"insts": 1000})
            stats = json.loads((folder / "stats.json").read_text())
            stats["interleave"] = {"quantum": quantum, "switches": 10 * quantum,
                                   "short_turns": 0, "icount": True}
            (folder / "stats.json").write_text(json.dumps(stats))
    index = make_report(study)
    sources, text = images_of(index)
    assert ["contention-handoffs.png", "contention-contended.png",
            "contention-switches.png"] == sources[:3]
    assert "contention: handoffs per 1,000 operations vs machine.quantum" in text
    with (study / "results.csv").open() as handle:
        rows = {r["point"]: r for r in csv.DictReader(handle)}
    assert rows["q1000-1"]["stats.interleave.switches"] == "10000"
    assert rows["q1000-1"]["stats.interleave.icount"] == "True"


def test_rate_notes_follow_the_clock():
    from manylab.report.kinds.common import guest_time_caveat

    lockstep = guest_time_caveat([{"machine.reproducible": True}])
    free = guest_time_caveat([{"machine.reproducible": False}])
    assert len(lockstep) == 1 and "do not grow with cores" in lockstep[0]
    assert len(free) == 1 and "host's pace" in free[0]
    assert len(guest_time_caveat([{"machine.reproducible": True},
                                  {"machine.reproducible": False}])) == 2


def test_pwriter_report_adds_throughput_in_modelled_time(tmp_path):
    study = tmp_path / "pwm"
    for procs in (1, 2):
        # 2 MiB written in 1 ms of modelled time -> 2000 MiB/s; read 1 MiB in 0.5 ms -> 2000
        write_point(study, f"p{procs}", params("pwriter", {"procs": procs}, 0, procs),
                    [{"workload": "pwriter", "procs": procs, "ok": True,
                      "write": {"aggregate_mib_s": 10.0 * procs, "bytes": procs << 21},
                      "read": {"aggregate_mib_s": 20.0, "bytes": 1 << 20}}],
                    stats={"roi.phase1.time.modelled_ns": 1e6,
                           "roi.phase2.time.modelled_ns": 5e5})
    index = make_report(study)
    sources, text = images_of(index)
    assert sources[:2] == ["pwriter-throughput.png", "pwriter-throughput-modelled.png"]
    assert "MiB per modelled second" in text and "not guest time" in text
    from manylab.report.kinds.common import modelled_rate
    rows = modelled_rate([{"b": 3 << 20, "t": 1.5e9}, {"b": 1, "t": 0}, {"t": 5}], "b", "t",
                         "r", 1 << 20)
    assert rows == [{"b": 3 << 20, "t": 1.5e9, "r": 2.0}]


def test_stream_report_draws_guest_and_modelled_bandwidth_per_kernel(tmp_path):
    from manylab.report.kinds.stream import with_rates
    study = tmp_path / "st"
    kernels = [{"phase": k, "name": n, "bytes": 1 << 20, "seconds": 0.1, "mib_s": 10.0 * k}
               for k, n in enumerate(("copy", "scale", "add", "triad"), start=1)]
    for threads in (1, 4):
        stats = {f"roi.phase{k}.mem.bytes": 9e6 * threads for k in range(1, 5)}
        stats |= {f"roi.phase{k}.time.modelled_ns": 1e6 for k in range(1, 5)}
        write_point(study, f"t{threads}", params("stream", {"threads": threads}, 0, threads),
                    [{"workload": "stream", "threads": threads, "kernels": kernels,
                      "verified": True}], stats=stats)
    index = make_report(study)
    sources, text = images_of(index)
    assert {"stream-bandwidth-guest.png", "stream-bandwidth-modelled.png"} <= set(sources)
    assert "GB per modelled second" in text
    row = with_rates({"result.kernels": json.dumps(kernels), "stats.roi.phase4.mem.bytes": 36e6,
                      "stats.roi.phase4.time.modelled_ns": 1e6})
    assert row["modelled.triad.gb_s"] == 36.0
    assert row["guest.add.mib_s"] == 30.0
    assert "modelled.copy.gb_s" not in row


def test_modelled_write_gains_are_checked_against_the_papers_direction_per_chip():
    # Three repeats each, gain - 1, gain, gain + 1: a 95% interval of ±2.484 around the mean.
    # knl-64 gains 17.5..22.5% at its largest writer count, 32: "gain" reproduced; epyc2-64
    # -0.5..4.5% at 32, inside ±5%: "none" reproduced; at 16 writers (not the largest) epyc's
    # 50% gain is not judged. icelake-32 gains 4.5..9.5%: above 0, below 10%: direction only.
    from manylab.report.kinds.pwriter import chip_verdicts
    from manylab.report.stats import aggregate

    keys = ["kernel.cmdline", "plugin.preset"]
    rows = [{"kernel.cmdline": "finer_lru.factor=64", "plugin.preset": preset,
             "machine.vcpus": vcpus, "gain_pct": gain + delta}
            for preset, vcpus, gain in (("knl-64", 32, 20.0), ("epyc2-64", 16, 50.0),
                                        ("epyc2-64", 32, 2.0), ("icelake-32", 32, 7.0),
                                        ("tiny-4", 32, 1.0))
            for delta in (-1.0, 0.0, 1.0)]
    lines = chip_verdicts(aggregate(rows, [*keys, "machine.vcpus"], "gain_pct"), keys,
                          "machine.vcpus")
    assert lines[0].startswith("Against Finer-LRU on other many-cores, KIPS 2025")
    verdicts = {line.split("preset=")[1].split(",")[0]: line.rsplit(": ", 1)[1]
                for line in lines[1:]}
    assert verdicts == {"knl-64": "reproduced.", "epyc2-64": "reproduced.",
                        "icelake-32": "direction only (a gain below the paper's)."}
    assert "+20.0% ± 2.5 (95% CI), n=3" in lines[1] + lines[2] + lines[3]
    assert sum("machine.vcpus=32" in line for line in lines[1:]) == 3
    assert chip_verdicts(aggregate(rows, ["kernel.cmdline", "machine.vcpus"], "gain_pct"),
                         ["kernel.cmdline"], "machine.vcpus") == []


def test_modelled_write_gains_are_checked_against_the_knl_range_at_64_to_256_writers():
    # factor 256 over factor 1, three repeats each (gain - 1, gain, gain + 1: ±2.484): 32
    # writers is outside the paper's thread counts; 64: 97.5..102.5% inside +70-140%; 256:
    # 37.5..42.5%: direction only. Points of another preset: no KNL verdict at all.
    from manylab.report.kinds.pwriter import knl_verdicts
    from manylab.report.stats import aggregate

    keys = ["kernel.cmdline"]
    rows = [{"kernel.cmdline": "finer_lru.factor=256", "machine.vcpus": vcpus,
             "gain_pct": gain + delta}
            for vcpus, gain in ((32, 5.0), (64, 100.0), (256, 40.0)) for delta in (-1.0, 0, 1.0)]
    summary = aggregate(rows, [*keys, "machine.vcpus"], "gain_pct")
    rated = [{"plugin.preset": "knl-64"}]
    lines = knl_verdicts(summary, keys, "machine.vcpus", rated)
    assert lines[0].startswith("Against 70-140% (FinerLRU, KIPS 2023")
    assert [line.rsplit(": ", 1)[1] for line in lines[1:]] == [
        "reproduced.", "direction only (a gain below the paper's)."]
    assert "machine.vcpus=64" in lines[1] and "machine.vcpus=256" in lines[2]
    assert knl_verdicts(summary, keys, "machine.vcpus", [{"plugin.preset": "epyc2-64"}]) == []


def test_tools_table_names_the_emulator_each_point_ran_on(tmp_path):
    from manylab.report import inputs, records
    study = tmp_path / "tiers"
    write_point(study, "qemu-point", params("falseshare", {}), [{"workload": "falseshare"}])
    gem5_point = write_point(study, "gem5-point", params("falseshare", {}),
                             [{"workload": "falseshare"}])
    recorded = json.loads((gem5_point / "inputs.json").read_text())
    del recorded["qemu"]
    recorded["gem5"] = {"version": "gem5 version 24.0.0.1", "binary_sha256": "12" * 32}
    (gem5_point / "inputs.json").write_text(json.dumps(recorded))
    rows = inputs.tools_table(records.load(study)).rows
    assert ["QEMU", "QEMU emulator version 7.2.0"] in rows
    assert ["gem5", "gem5 version 24.0.0.1, binary sha256 1212121212121212"] in rows
