"""Lock waits by call site (plugin/README.md, stats.json `lock_sites`): four buffered writers
on the stock 6.1 kernel (x86_64, 4 vCPUs, knl-64 model) wait for the LRU lock, and the plugin
names the lock by the function that called the lock API: folio_lruvec_lock_irqsave
(folio_batch_move_lru's lock taker on 6.1), not only the leaf queued_spin_lock_slowpath. Every
instruction of a slow path goes to some site, so its sites' instructions add up to the
function table's."""

import json

import pytest

from tests.e2e.helpers import run_one_point, study_spec

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]

# 6.1's LRU lock takers (mm/memcontrol.c, mm/swap.c, mm/vmscan.c): where spin_lock*(&lruvec->
# lru_lock) is called.
LRU_SITES = {"folio_lruvec_lock_irqsave", "folio_lruvec_lock_irq", "folio_lruvec_lock",
             "lru_note_cost", "shrink_active_list", "shrink_inactive_list", "move_pages_to_lru"}

SPEC = """
[kernel]
variant = "stock"
[machine]
arch = "x86_64"
vcpus = 4
memory = "1G"
[workload]
name = "pwriter"
fs = "tmpfs"
args = { procs = 4, size = "16M", pattern = "seq", read = false }
[plugin]
enabled = true
preset = "knl-64"
mode = "full"
set = { hot_functions = 5000 }
"""


def test_lru_lock_waits_are_named_by_their_call_site(tmp_path):
    point = run_one_point(tmp_path, "locksites", study_spec("locksites", SPEC))
    stats = json.loads((point.dir / "stats.json").read_text())
    roi = stats["regions"]["roi"]
    sites = roi["lock_sites"]
    print("ROI lock sites:", json.dumps(sites[:15], indent=1))
    lru = [s for s in sites
           if s["slow_path"] == "queued_spin_lock_slowpath" and s["site"] in LRU_SITES]
    assert any(s["wait_cycles"] > 0 and s["entries"] > 0 for s in lru), sites[:20]
    # Every slow path's instructions, summed over its sites (the list is complete: hot_functions
    # is larger than the number of pairs), equal the function table's, exactly.
    assert len(sites) < 5000
    functions = {f["name"]: f for f in roi["functions"]}
    for slow in {s["slow_path"] for s in sites}:
        summed = sum(s["instructions"] for s in sites if s["slow_path"] == slow)
        assert summed == functions[slow]["insts"], (slow, summed, functions[slow])
        waited = sum(s["wait_cycles"] for s in sites if s["slow_path"] == slow)
        assert waited == functions[slow]["wait_cycles"], (slow, waited, functions[slow])
    assert "queued_spin_lock_slowpath" in {s["slow_path"] for s in sites}
    # The sites of the spin lock's waits are kernel functions, not the lock API itself.
    assert not any(s["site"].startswith("_raw_") for s in sites), sites
    total = stats["regions"]["total"]["lock_sites"]
    assert sum(s["instructions"] for s in total) >= sum(s["instructions"] for s in sites)
