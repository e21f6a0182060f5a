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
    # (the listed functions are the hottest by instructions; a restored guest's sleepers may
    # take their wake-up in an idle-loop function outside that list)
    mutex_wait = phase(on, 3)["stats"]["time.wait"]
    assert mutex_waits.get("[user]", 0) < 0.5 * mutex_wait, mutex_waits
    assert phase(on, 4)["stats"]["time.wait"] < 0.05 * phase(on, 4)["stats"]["time.cycles.sum"]

    off = runs[False]
    assert off["params"]["clock.lax_cycles"] == 0
    assert phase(off, 2)["stats"]["time.wait"] == 0


SMT = """
[study]
name = "smt"
[machine]
vcpus = 8
quantum = 1000
quantum_unit = "cycles"
[workload]
name = "serialprobe"
args = { threads = "{vcpus}", sections = 2, work = 20000, lock = "none" }
[plugin]
enabled = true
preset = "tiny-4"
set = { threads_per_core = 2, "core.smt_gain" = [1.0, 2.0] }
"""


def test_smt_siblings_busy_together_halve_each_others_speed_at_gain_one(tmp_path):
    # 8 threads on 4 cores of 2 hardware threads: the unlocked phase runs 2 threads per core.
    # Gain 2 (no sharing): 1/8 of the serial time; gain 1 (siblings take turns): twice that.
    spec = tmp_path / "smt.toml"
    spec.write_text(SMT)
    manylab("run", str(spec), "--results-root", str(tmp_path), "-j", "2")
    ratio, smt, insts = {}, {}, {}
    for point in point_dirs(tmp_path / "smt"):
        stats = json.loads((point / "stats.json").read_text())
        gain = stats["params"]["machine"]["core.smt_gain"]
        ratio[gain] = (phase(stats, 4)["stats"]["time.modelled_ns"]
                       / phase(stats, 1)["stats"]["time.modelled_ns"])
        smt[gain] = (phase(stats, 4)["stats"]["time.smt"], phase(stats, 1)["stats"]["time.smt"])
        insts[gain] = phase(stats, 4)["stats"]["insts"]
    assert set(ratio) == {1.0, 2.0}
    assert ratio[2.0] <= 0.2, ratio
    # Nearly every instruction of the unlocked phase ran beside a busy sibling (the last
    # threads to finish run alone), doubling its base cycles; stalls and waits do not double.
    assert smt[1.0][0] >= 0.9 * insts[1.0], (smt, insts)
    assert 1.5 <= ratio[1.0] / ratio[2.0] <= 2.1, ratio
    assert smt[2.0] == (0, 0)
    # Alone in the serial phase, thread 0's sibling idles (in the idle loop since before the
    # region opened): no sharing there.
    assert smt[1.0][1] < 0.01 * smt[1.0][0], smt
