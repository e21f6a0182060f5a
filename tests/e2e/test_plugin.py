"""The machine-model plugin inside real guests: coherence, PCM placement, reproducibility."""

import json

import pytest

from tests.e2e.helpers import manylab, point_dirs, result_of

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]


def run_study(tmp_path, name: str, body: str, study_extra: str = "") -> list[tuple[dict, dict]]:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(f'[study]\nname = "{name}"\n{study_extra}\n' + body)
    root = tmp_path / "results"
    manylab("run", str(spec), "--results-root", str(root), "-j", "2")
    runs = []
    for point_dir in point_dirs(root / name):
        assert result_of(point_dir)["status"] == "ok", result_of(point_dir)
        params = json.loads((point_dir / "inputs.json").read_text())["params"]
        stats = json.loads((point_dir / "stats.json").read_text())
        assert stats["schema"] == "manylab-stats/2"
        runs.append((params, stats))
    return runs


def test_false_sharing_makes_ten_times_the_invalidations_of_padded_counters(tmp_path):
    runs = run_study(tmp_path, "falseshare", """
[machine]
vcpus = 4
[workload]
name = "falseshare"
args = { threads = "{vcpus}", iters = 20000, mode = ["shared", "padded"] }
[plugin]
enabled = true
preset = "knl-64"
""")
    inv = {p["workload"]["args"]["mode"]: s["summary"]["roi.coh.msgs.inv"] for p, s in runs}
    assert inv["padded"] > 0
    assert inv["shared"] >= 10 * inv["padded"], inv


def test_pcm_sees_writes_only_from_a_workload_bound_to_the_pcm_node(tmp_path):
    runs = run_study(tmp_path, "pcmbind", """
[machine]
vcpus = 2
memory = "1G"
numa = [{size = "512M", cpus = "0-1", device = "dram"}, {size = "512M", device = "pcm"}]
[workload]
name = "pwriter"
membind = [0, 1]
args = { procs = 2, size = "4M" }
[plugin]
enabled = true
preset = "tiny-4"
""")
    writes = {p["workload"]["membind"]: s["summary"]["roi.mem.pcm.writes"] for p, s in runs}
    dram = {p["workload"]["membind"]: s["summary"]["roi.mem.dram.writes"] for p, s in runs}
    assert writes[1] > 1000, writes
    # bound to DRAM, only the kernel's own activity on the PCM node remains (seen: 0 to 2.6%)
    assert writes[0] * 10 < writes[1], writes
    assert dram[0] > 1000 and dram[0] > writes[0], dram


def test_reproducible_mode_repeats_roi_statistics_exactly(tmp_path):
    body = """
[machine]
vcpus = 1
reproducible = true
[workload]
name = "pwriter"
args = { procs = 2, size = "1M", read = true }
[plugin]
enabled = true
preset = "tiny-4"
"""
    runs = run_study(tmp_path, "repro", body, study_extra="repeats = 2")
    assert len(runs) == 2
    (_, first), (_, second) = runs
    roi_first = {k: v for k, v in first["summary"].items() if k.startswith("roi.")}
    roi_second = {k: v for k, v in second["summary"].items() if k.startswith("roi.")}
    assert roi_first["roi.insts"] > 0
    assert roi_first == roi_second
