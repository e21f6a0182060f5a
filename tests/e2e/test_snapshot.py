"""Post-boot snapshots on the real kernel (manylab/backends/qemu/snapshot.py, README
"Snapshots"): restores of one snapshot count the same (x86_64 and arm64), a restored point's
coherence traffic lies within the spread of seeded cold boots, and a damaged snapshot is
rebuilt instead of restored."""

import json
from pathlib import Path

import pytest

from tests.e2e.helpers import manylab, point_dirs, result_of, run_one_point, study_spec

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

FALSESHARE = """
[machine]
vcpus = 4
snapshot = {snapshot}
[workload]
name = "falseshare"
args = {{ threads = "{{vcpus}}", iters = 20000, mode = "shared" }}
[plugin]
enabled = true
preset = "knl-64"
"""


def run(tmp_path: Path, name: str, snapshot: str, root: Path) -> dict[str, dict]:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(study_spec(name, FALSESHARE.format(snapshot=snapshot), repeats=3))
    manylab("run", str(spec), "--results-root", str(root), "-j", "2")
    points = {}
    for point in point_dirs(root / name):
        assert result_of(point)["status"] == "ok", result_of(point)
        regions = json.loads((point / "stats.json").read_text())["regions"]
        roi = regions["roi"]
        assert every_vcpu_ran(roi), (point.name, roi["time.vcpus"])
        points[point.name] = {
            "stats": roi["stats"],
            "total_insts": regions["total"]["stats"]["insts"],
            "hot_line": roi["hot_lines"][0],
            "inputs": json.loads((point / "inputs.json").read_text()),
            "console": (point / "console.log").read_text(),
        }
    return points


def every_vcpu_ran(roi: dict) -> bool:
    """Whether each vCPU executed in the region (its threads: one per vCPU): the plugin
    attributed each block to the CPU that ran it, from the first block after a restore on."""
    return all(vcpu["insts"] > 0 for vcpu in roi["time.vcpus"])


def test_restores_repeat_exactly_and_agree_with_cold_boots(tmp_path):
    first = run(tmp_path, "restored", '"auto"', tmp_path / "a")
    second = run(tmp_path, "restored", '"auto"', tmp_path / "b")
    cold = run(tmp_path, "cold", '"off"', tmp_path / "c")
    assert first.keys() == second.keys() and len(first) == 3
    for name, point in first.items():
        assert point["stats"] == second[name]["stats"], name
        # from the restore to the end-of-run marker: the whole run repeats too
        assert point["total_insts"] == second[name]["total_insts"], name
        snap = point["inputs"]["snapshot"]
        assert snap["key"] and snap["sha256"] and snap["bytes"] > 0
        assert "-incoming" in point["inputs"]["qemu"]["argv"]
        assert "restored=1" in point["console"]
        assert "Linux version" not in point["console"]  # no boot: the snapshot's console has it
    for point in cold.values():
        assert "snapshot" not in point["inputs"]
        assert "-incoming" not in point["inputs"]["qemu"]["argv"]
    # The seeds move the interleaving; the shared line's traffic stays within the cold boots'
    # spread (widened by 1%). Hops and time do not: the restored guest's pages, so the line's
    # home tile, are others (README "Snapshots", Residuals).
    seeds_differ = {json.dumps(p["stats"], sort_keys=True) for p in first.values()}
    assert len(seeds_differ) == 3
    for metric in ("coh.msgs", "coh.invalidations"):
        spread = [p["hot_line"][metric] for p in cold.values()]
        low, high = min(spread) * 0.99, max(spread) * 1.01
        for name, point in first.items():
            assert low <= point["hot_line"][metric] <= high, (metric, name, spread)


def test_a_damaged_snapshot_is_rebuilt_not_restored(tmp_path):
    spec = tmp_path / "one.toml"
    spec.write_text(study_spec("one", FALSESHARE.format(snapshot='"auto"')))
    manylab("run", str(spec), "--results-root", str(tmp_path))
    (point,) = point_dirs(tmp_path / "one")
    snap = json.loads((point / "inputs.json").read_text())["snapshot"]
    state = Path(snap["directory"]) / "state.mig"
    with state.open("r+b") as handle:
        handle.truncate(snap["bytes"] // 2)
    again = manylab("run", str(spec), "--results-root", str(tmp_path), "--force")
    assert "its file state.mig is missing or of another size: rebuilding it" in again.stdout
    assert result_of(point)["status"] == "ok"
    rebuilt = json.loads((point / "inputs.json").read_text())["snapshot"]
    assert rebuilt["key"] == snap["key"] and state.stat().st_size == rebuilt["bytes"]


CLOCKSOURCE = """
[machine]
vcpus = 4
[workload]
name = "shell"
args = { script = '''
cd /sys/devices/system/clocksource/clocksource0
echo "MANYLAB-RESULT {\\"clocksource\\": \\"$(cat current_clocksource)\\"}"
''' }
"""


def test_a_restored_x86_guest_starts_on_the_calibrated_tsc(tmp_path):
    # The boot replaces tsc-early by tsc (a stop_machine on every CPU) about a second after
    # boot; the init waits for it, so a restored run never sees the switch.
    point = run_one_point(tmp_path, "clocksource", study_spec("clocksource", CLOCKSOURCE))
    assert "restored=1" in point.console
    assert point.outputs[0]["clocksource"] == "tsc", point.outputs


ARM64_CONTENTION = """
[machine]
arch = "arm64"
vcpus = 4
memory = "512M"
[workload]
name = "contention"
args = { threads = 4, iters = 20000 }
[plugin]
enabled = true
preset = "knl-64"
"""


def test_arm64_restores_repeat_exactly(tmp_path):
    spec = tmp_path / "arm.toml"
    spec.write_text(study_spec("arm", ARM64_CONTENTION))
    counts = []
    for root in ("a", "b", "c"):
        manylab("run", str(spec), "--results-root", str(tmp_path / root))
        (point,) = point_dirs(tmp_path / root / "arm")
        assert "restored=1" in (point / "console.log").read_text()
        stats = json.loads((point / "stats.json").read_text())
        # the counts stop at the init's end-of-run marker, before the host-timed power-off
        assert stats["run"]["ended_at"] == "run-end marker", stats["run"]
        regions = stats["regions"]
        # A CPU the restored guest first ran in user mode, where arm64's cpu_number cannot be
        # read, was once numbered by the order bases appeared: CPU 3's work went to CPU 0.
        assert every_vcpu_ran(regions["roi"]), regions["roi"]["time.vcpus"]
        counts.append((regions["roi"]["stats"], regions["total"]["stats"]["insts"]))
    assert counts[0] == counts[1] == counts[2]
