"""The ROI timeline (Chrome trace-event JSON) of a hand-made stats.json."""

import json

from manylab.report import timeline

STATS = {
    "regions": {
        "roi": {},
        "roi.phase2": {"time.vcpus": [
            {"vcpu": 0, "insts": 10, "cycles": 100, "stall_cycles": 0, "idle_cycles": 0,
             "smt_cycles": 0, "wait_cycles": 0}]},
        "roi.phase1": {"time.vcpus": [
            {"vcpu": 0, "insts": 40, "cycles": 200, "stall_cycles": 60, "idle_cycles": 50,
             "smt_cycles": 0, "wait_cycles": 50},
            {"vcpu": 1, "insts": 20, "cycles": 100, "stall_cycles": 80, "idle_cycles": 0,
             "smt_cycles": 0, "wait_cycles": 0}]},
    },
    # 2 ns per cycle in phase 1 (400 ns over 200 cycles), 1 ns per cycle in phase 2
    "summary": {"roi.phase1.time.cycles": 200, "roi.phase1.time.modelled_ns": 400,
                "roi.phase2.time.cycles": 100, "roi.phase2.time.modelled_ns": 100},
}


def test_phases_in_order_and_without_phases():
    assert timeline.phases(STATS["regions"]) == ["roi.phase1", "roi.phase2"]
    assert timeline.phases({"roi": {}, "total": {}}) == ["roi"]


def test_events_by_hand():
    found = timeline.events(STATS)
    names = {(e["tid"], e["args"]["name"]) for e in found if e["name"] == "thread_name"}
    assert names == {(0, "vCPU 0"), (1, "vCPU 1")}
    slices = [(e["tid"], e["name"], e["ts"], e["dur"]) for e in found if e["ph"] == "X"]
    # vCPU 0, phase 1: 200 cycles = 0.4 us: base 40 (200 - 60 - 50 - 50), stall 60, wait 50,
    # idle 50 cycles, in that order; phase 2 starts after phase 1's 0.4 us, 100 cycles = 0.1 us
    assert slices[:5] == [(0, "phase1", 0.0, 0.4), (0, "base", 0.0, 0.08),
                          (0, "stall", 0.08, 0.12), (0, "wait", 0.2, 0.1),
                          (0, "idle", 0.30000000000000004, 0.1)]
    assert (1, "phase1", 0.0, 0.2) in slices and (1, "stall", 0.04, 0.16) in slices
    assert (0, "phase2", 0.4, 0.1) in slices and (0, "base", 0.4, 0.1) in slices
    json.dumps({"traceEvents": found})  # serialisable as it is written


def test_no_per_vcpu_times_no_timeline(tmp_path):
    assert timeline.events({"regions": {"roi": {}}, "summary": {}}) == []
    assert timeline.write({}, "p", tmp_path / "t.json") is False  # an empty stats.json
    assert not (tmp_path / "t.json").exists()
    assert timeline.write(STATS, "p", tmp_path / "t.json") is True
    written = json.loads((tmp_path / "t.json").read_text())
    assert written["otherData"] == {"point": "p"} and written["traceEvents"] == timeline.events(
        STATS)
