#!/usr/bin/env python3
"""Benchmark of the two tiers on one machine (a benchmark, not a test): host time per simulated
instruction of the gem5 tier beside the QEMU tier's, at each core count.

For each core count the same point (falseshare on the knl-64 preset) is
- built into a gem5 system (Ruby MESI_Two_Level on the knl-64 Garnet mesh) and run for
  `--ticks` simulated picoseconds from power-on on `--cpu` cores throughout (timing: Ruby sees
  every access; atomic: caches bypassed), recording the time gem5 needs to build the system
  (until its first simulated tick) and simInsts/hostSeconds of the run;
- run on the QEMU tier (lockstep, the plugin's full model) from boot to power-off, recording
  the plugin's instruction count and the run's host seconds.
Both figures include boot work; the ratio is host seconds per instruction, gem5 over QEMU.
Needs MANYLAB_GEM5 (gem5 built for X86_MESI_Two_Level; gem5-configs/README.md).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from manylab import image, kernel, plan, runner  # noqa: E402
from manylab import spec as specs  # noqa: E402
from manylab.gem5 import backend, command, stats  # noqa: E402

SPEC = """
[study]
name = "bench-gem5"
[machine]
backend = "{backend}"
vcpus = {cores}
memory = "1G"
[gem5]
cpu = "{cpu}"
boot_cpu = "{cpu}"
[plugin]
enabled = true
preset = "knl-64"
[workload]
name = "falseshare"
args = {{ threads = {cores}, iters = 20000, mode = "shared" }}
"""


def point_for(folder: Path, backend_name: str, cores: int, cpu: str) -> tuple[specs.Spec,
                                                                              plan.Point]:
    path = folder / f"{backend_name}-{cores}.toml"
    path.write_text(SPEC.format(backend=backend_name, cores=cores, cpu=cpu))
    spec = specs.load(path)
    return spec, plan.points(spec)[0]


def gem5_run(folder: Path, cores: int, cpu: str, ticks: int) -> dict[str, float]:
    _, point = point_for(folder, "gem5", cores, cpu)
    params = point.params
    kern = kernel.build(runner.kernel_request(params))
    img = image.build("x86_64")
    work = folder / f"gem5-{cores}"
    work.mkdir()
    backend.prepare(params, kern, img, work)
    argv = command.argv(command.binary(params), work / "out", work / "gem5-system.json")
    started = time.monotonic()
    first_tick = None
    with subprocess.Popen(argv + ["--max-ticks", str(ticks)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if first_tick is None and ("Starting simulation" in line or
                                       "Entering event queue" in line):
                first_tick = time.monotonic() - started
    wall = time.monotonic() - started
    blocks = stats.parse((work / "out" / "stats.txt").read_text())
    insts = sum(b.get("simInsts", 0.0) for b in blocks)
    host = sum(b.get("hostSeconds", 0.0) for b in blocks)
    return {"build_s": first_tick or float("nan"), "wall_s": wall, "insts": insts,
            "host_s": host}


def qemu_run(folder: Path, cores: int) -> dict[str, float]:
    spec, point = point_for(folder, "qemu", cores, "timing")
    result = runner.run_point(spec, point, folder / "qemu-results")
    point_dir = folder / "qemu-results" / spec.name / point.id
    summary = json.loads((point_dir / "stats.json").read_text())["summary"]
    return {"insts": float(summary["total.insts"]), "host_s": result["timing"]["total_s"],
            "status": result["status"] == "ok"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cores", default="4,64", help="core counts (default 4,64)")
    parser.add_argument("--ticks", type=int, default=2 * 10**9,
                        help="gem5 simulated ticks (ps) per run (default 2e9 = 2 ms)")
    parser.add_argument("--cpu", default="timing", choices=("atomic", "timing", "o3"))
    parser.add_argument("--no-qemu", action="store_true", help="skip the QEMU tier")
    args = parser.parse_args()
    print(f"{'cores':>5} {'tier':<18} {'build s':>8} {'insts':>12} {'host s':>8} "
          f"{'us/inst':>9} {'gem5/qemu':>9}")
    with tempfile.TemporaryDirectory(prefix="bench-gem5-") as name:
        folder = Path(name)
        for cores in (int(c) for c in args.cores.split(",")):
            g = gem5_run(folder, cores, args.cpu, args.ticks)
            g_us = g["host_s"] / g["insts"] * 1e6 if g["insts"] else float("nan")
            ratio = ""
            if not args.no_qemu:
                q = qemu_run(folder, cores)
                q_us = q["host_s"] / q["insts"] * 1e6
                ratio = f"{g_us / q_us:9.0f}"
                print(f"{cores:>5} {'qemu+plugin full':<18} {'':>8} {q['insts']:>12.0f} "
                      f"{q['host_s']:>8.1f} {q_us:>9.3f}", flush=True)
            print(f"{cores:>5} {'gem5 ' + args.cpu:<18} {g['build_s']:>8.1f} {g['insts']:>12.0f} "
                  f"{g['host_s']:>8.1f} {g_us:>9.3f} {ratio}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
