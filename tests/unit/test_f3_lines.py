import importlib.util
import json
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "f3_lines.py"
spec = importlib.util.spec_from_file_location("f3_lines", SCRIPT)
assert spec is not None and spec.loader is not None
f3_lines = importlib.util.module_from_spec(spec)
sys.modules["f3_lines"] = f3_lines  # dataclasses look their module up
spec.loader.exec_module(f3_lines)


def stats(counter_paddr: str) -> dict:
    def region(msgs: int, ns: float) -> dict:
        return {"stats": {"coh.msgs": msgs, "time.modelled_ns": ns},
                "functions": [{"name": "copy_user_generic_string", "coh.msgs": 900},
                              {"name": "mem_cgroup_update_lru_size", "coh.msgs": 30,
                               "coh.invalidations": 10, "stall_cycles": 500}],
                "hot_lines": [{"paddr": "0x7fff48c0", "coh.msgs": 40, "coh.invalidations": 9},
                              {"paddr": counter_paddr, "coh.msgs": 20,
                               "coh.invalidations": 10}]}
    return {"regions": {"roi": region(1000, 3e6), "roi.phase1": region(800, 2e6),
                        "roi.phase2": region(200, 1e6)}}


PARAMS = {"kernel": {"variant": "finerlru-shared-size"}, "machine": {"vcpus": 2},
          "workload": {"args": {"procs": 2, "size": "4M"}}}


def test_finds_the_counter_line_by_its_offset_in_the_block():
    f = f3_lines.figures("p", PARAMS, stats("0x2578380"), 12.5, 0x8380, 0x10000)
    assert (f.fn_msgs, f.fn_invalidations, f.fn_stall_cycles) == (30, 10, 500)
    assert f.fn_share == 0.03
    assert (f.line_rank, f.line_msgs, f.line_invalidations) == (2, 20, 10)
    assert f.write_bytes == 8 << 20
    assert f.write_gbs == (8 << 20) / 2e6


def test_a_point_without_the_line_and_the_table(tmp_path):
    f = f3_lines.figures("p", PARAMS, stats("0x2578400"), 1.0, 0x8380, 0x10000)
    assert f.line_rank is None and f.line_msgs == 0
    point = tmp_path / "p"
    point.mkdir()
    (point / "inputs.json").write_text(json.dumps({"params": PARAMS}))
    (point / "stats.json").write_text(json.dumps(stats("0x2578380")))
    (point / "result.json").write_text(json.dumps({"timing": {"total_s": 12.5}}))
    text = f3_lines.table(f3_lines.load(tmp_path, 0x8380, 0x10000))
    assert ("| finerlru-shared-size | 2 | 30 | 10 | 3.00% | 500 | 2 | 20 | 10 | 2.000 | 4.19 "
            "| 1.000 | 12.5 |") in text
