"""The causal clock on the real kernel (plugin/README.md "Modelled time"): the serialisation
probe's locked phases last as long as its serial phase, with a spin lock and with a mutex,
and its unlocked phase about 1/threads of it; the waiting is charged where it happens (the
spinner's own code, the sleeper's kernel paths)."""

import json

import pytest

from tests.e2e.helpers import manylab, point_dirs

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

PROBE = """
[study]
name = "causal"
[machine]
vcpus = 4
quantum = 1000
quantum_unit = "cycles"
[workload]
name = "serialprobe"
args = { threads = "{vcpus}", sections = 4, work = 20000 }
[plugin]
enabled = true
preset = "knl-64"
causal = [true, false]
"""


def phase(stats: dict, k: int) -> dict:
    return stats["regions"][f"roi.phase{k}"]


def test_locked_phases_take_the_serial_time_and_waits_land_in_the_waiting_code(tmp_path):
    spec = tmp_path / "causal.toml"
    spec.write_text(PROBE)
    manylab("run", str(spec), "--results-root", str(tmp_path), "-j", "2")
    runs = {}
    for point in point_dirs(tmp_path / "causal"):
        stats = json.loads((point / "stats.json").read_text())
        runs[stats["params"]["clock.causal"]] = stats
    assert set(runs) == {True, False}

    on = runs[True]
    serial = phase(on, 1)["stats"]["time.modelled_ns"]
    ratio = {k: phase(on, k)["stats"]["time.modelled_ns"] / serial for k in (2, 3, 4)}
    assert 0.9 <= ratio[2] <= 1.15, ratio
    assert 0.9 <= ratio[3] <= 1.15, ratio
    assert ratio[4] <= 0.35, ratio
    # The spinners wait in their own (user) code, the mutex's sleepers in the kernel.
    spin_waits = {f["name"]: f["wait_cycles"] for f in phase(on, 2)["functions"]}
    mutex_waits = {f["name"]: f["wait_cycles"] for f in phase(on, 3)["functions"]}
    assert spin_waits.get("[user]", 0) > 0.5 * phase(on, 2)["stats"]["time.wait"], spin_waits
    kernel = sum(w for name, w in mutex_waits.items() if name != "[user]")
    assert kernel > 0.5 * phase(on, 3)["stats"]["time.wait"], mutex_waits
    assert phase(on, 4)["stats"]["time.wait"] < 0.05 * phase(on, 4)["stats"]["time.cycles.sum"]

    off = runs[False]
    assert off["params"]["clock.lax_cycles"] == 0
    assert phase(off, 2)["stats"]["time.wait"] == 0
