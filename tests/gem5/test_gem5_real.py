"""The generated system in a real gem5 (needs MANYLAB_GEM5; skipped without it): gem5's own
Python builds the knl-64 system, and a tiny-4 system with a DRAM node and a PCM node, from the
lab's description, boots the lab's kernel for 20 ms of simulated time on timing cores through
Ruby, and the importer reads its statistics."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from manylab import image, kernel, plan
from manylab import spec as specs
from manylab.backends.gem5 import backend, command, stats

pytestmark = pytest.mark.skipif(
    not os.environ.get("MANYLAB_GEM5"),
    reason="gem5 not found: set MANYLAB_GEM5 to a gem5 v24 X86_MESI_Two_Level build "
           "(gem5-configs/README.md)")

TICKS = 2 * 10**10


def boot(params: dict, tmp_path: Path) -> tuple[Path, str]:
    """The point's system in gem5 for TICKS; returns its folder and gem5's stdout."""
    command.check_build(command.binary(params))
    work = tmp_path / "point"
    work.mkdir()
    backend.prepare(params, kernel.build(kernel.request_for(params)), image.build("x86_64"),
                    work)
    argv = command.argv(command.binary(params), work / "out", work / "gem5-system.json")
    done = subprocess.run(argv + ["--max-ticks", str(TICKS)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    return work, done.stdout


def test_knl_64_system_boots_linux_in_gem5(write_spec, tmp_path: Path):
    spec = specs.load(write_spec("""
[machine]
backend = "gem5"
vcpus = 4
[gem5]
cpu = "timing"
boot_cpu = "timing"
[plugin]
preset = "knl-64"
[workload]
name = "falseshare"
args = { threads = 4 }
"""))
    params = plan.points(spec)[0].config
    work, stdout = boot(params, tmp_path)
    assert "Linux version 6.1" in stdout
    assert "simulate() limit reached" in stdout
    (block,) = stats.parse((work / "out" / "stats.txt").read_text())
    assert block["simTicks"] == TICKS
    assert block["simInsts"] > 10**6
    config = (work / "out" / "config.ini").read_text()
    routers = re.findall(r"^\[board\.cache_hierarchy\.ruby_system\.network\.routers\d+\]$",
                         config, re.MULTILINE)
    described = json.loads((work / "gem5-system.json").read_text())["mesh"]["routers"]
    assert len(routers) == len(described) == 46  # knl-64: 38 tile stops, 8 outside MC stops


def test_a_pcm_node_is_an_nvm_interface_with_the_presets_latencies(write_spec, tmp_path: Path):
    # Node 1 (384 MiB from 128 MiB) is PCM: its controller drives gem5's NVM DIMM with
    # tiny-4's PCM read and write latencies (100 and 1,000 ns, in ps), and the boot uses it.
    spec = specs.load(write_spec("""
[machine]
backend = "gem5"
vcpus = 2
memory = "512M"
numa = [{ size = "128M", cpus = "0-1", device = "dram" }, { size = "384M", device = "pcm" }]
[gem5]
cpu = "timing"
boot_cpu = "timing"
[plugin]
preset = "tiny-4"
[workload]
name = "falseshare"
args = { threads = 2 }
"""))
    work, stdout = boot(plan.points(spec)[0].config, tmp_path)
    assert "Linux version 6.1" in stdout
    config = (work / "out" / "config.ini").read_text()
    section = config.split("[board.memory.mem_ctrl1.dram]", 1)[1].split("\n[", 1)[0]
    fields = dict(line.split("=", 1) for line in section.strip().splitlines())
    assert (fields["type"], fields["tREAD"], fields["tWRITE"]) == ("NVMInterface", "100000",
                                                                   "1000000")
    assert fields["range"] == f"{128 << 20}:{512 << 20}"
    (block,) = stats.parse((work / "out" / "stats.txt").read_text())
    assert block["board.memory.mem_ctrl1.readReqs"] + block["board.memory.mem_ctrl1.writeReqs"] > 0
