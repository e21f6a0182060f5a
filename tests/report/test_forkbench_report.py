"""The forkbench plot set: rates per setting and the speed-up over the [report] baseline."""

import json

from manylab.report.build import make_report
from tests.report.fakes import params, write_point

SPEC = """[study]
name = "fb"
[kernel]
variant = "ldu"
[workload]
name = "forkbench"
[report]
baseline = "kernel.cmdline=ldu=off"
paper = "ldu"
"""
# cmdline -> vcpus -> ops/s per repeat
RATES = {"ldu=off": {8: (1000.0, 1100.0), 16: (1500.0, 1500.0)},
         "ldu=global": {8: (1100.0, 1100.0), 16: (2250.0, 1800.0)}}


def test_speedup_over_ldu_off_at_the_most_cores_beside_the_thesis(tmp_path):
    spec = tmp_path / "fb.toml"
    spec.write_text(SPEC)
    study = tmp_path / "fb"
    for cmdline, by_vcpus in RATES.items():
        for vcpus, rates in by_vcpus.items():
            for repeat, rate in enumerate(rates):
                write_point(study, f"{cmdline[4:]}-{vcpus}-{repeat}",
                            params("forkbench", {"mode": "aim7", "workers": vcpus}, repeat,
                                   vcpus, "ldu", cmdline),
                            [{"workload": "forkbench", "params": {"mode": "aim7",
                                                                   "workers": vcpus},
                              "ops": int(rate * 3), "ops_per_s": rate,
                              "ops_per_s_per_worker": rate / vcpus, "ok": True}], spec=spec)
    index = make_report(study)
    text = index.read_text()
    for name in ("forkbench-rate", "forkbench-speedup"):
        assert f'src="{name}.png"' in text and (index.parent / f"{name}.png").is_file()
    # 16 vCPUs, paired by repeat: 2250/1500 = 1.5, 1800/1500 = 1.2 -> mean 1.35
    assert ("At machine.vcpus=16, cmdline=ldu=global: speed-up 1.350x (std 0.212, n=2); "
            "published at 120 cores: 1.5x.") in text


def test_kernel_counters_over_the_roi_per_setting_and_per_operation(tmp_path):
    spec = tmp_path / "fb.toml"
    spec.write_text(SPEC)
    study = tmp_path / "fb"
    # cmdline -> (free_wait, pgfault) over the ROI per repeat; 100 operations per point
    counters = {"ldu=off": ((0, 1000), (0, 1200)), "ldu=global": ((300, 900), (500, 1100))}
    for cmdline, repeats in counters.items():
        for repeat, (free_wait, pgfault) in enumerate(repeats):
            folder = write_point(study, f"{cmdline[4:]}-{repeat}",
                                 params("forkbench", {"mode": "fork", "workers": 8}, repeat, 8,
                                        "ldu", cmdline),
                                 [{"workload": "forkbench", "ops": 100, "ops_per_s": 10.0,
                                   "ok": True}], spec=spec)
            (folder / "kstats.json").write_text(json.dumps({
                "roi_begin": {"ldu": {"free_wait": 7, "fence_skip": 3},
                              "vmstat": {"pgfault": 50, "nr_free_pages": 10}},
                "roi_end": {"ldu": {"free_wait": 7 + free_wait, "fence_skip": 3},
                            "vmstat": {"pgfault": 50 + pgfault, "nr_free_pages": 9}},
                "unreadable_lines": 0}))
    text = make_report(study).read_text()
    assert "forkbench: kernel counters" in text
    assert "400 (4.00)" in text and "0 (0.00)" in text  # free_wait: global, off
    assert "1,100 (11.00)" in text and "1,000 (10.00)" in text  # pgfault: off, global
    assert "fence_skip" not in text  # 0 over the ROI everywhere
