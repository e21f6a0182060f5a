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
With `--study runs/<study>` it instead reads a finished study that ran the same points on both
tiers (runs/tiers.toml) and prints the region of interest's instructions and host seconds per
tier (gem5: detailed cores and Ruby; QEMU: the plugin's full model), without running anything.
With `--point SPEC ID [--profile P]` it restores that gem5 point's checkpoint (cached, built
when missing) and runs the first `--roi-us` simulated microseconds of its region of interest
(run_point.py --roi-max-ticks): the host cost per instruction of a region too long to run
whole here (256 cores), with the checkpoint's build time, the restore's time to the region
and the sample's counts. Needs MANYLAB_GEM5 (gem5 built for X86_MESI_Two_Level) or, for
arm64 points, MANYLAB_GEM5_ARM and its bootloader (gem5-configs/README.md).
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

from manylab import image, kernel, plan, pointdir, runner  # noqa: E402
from manylab import spec as specs  # noqa: E402
from manylab.backends.gem5 import backend, command, sample, stats  # noqa: E402
from manylab.errors import LabError  # noqa: E402

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
    kern = kernel.build(kernel.request_for(point.config))
    img = image.build("x86_64")
    work = folder / f"gem5-{cores}"
    work.mkdir()
    backend.prepare(point.config, kern, img, work)
    argv = command.argv(command.binary(point.config), work / "out", work / "gem5-system.json")
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
    insts = blocks[-1].get("simInsts", 0.0)  # gem5 never resets this counter
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


def roi_figures(point: pointdir.PointFiles) -> tuple[float, float] | None:
    """(instructions, host seconds) of the point's region of interest, either tier."""
    if point.stats is None or point.result.get("status") != "ok":
        return None
    summary = point.stats.get("summary", {})
    if "roi.host_seconds" in summary:
        return float(summary["roi.insts"]), float(summary["roi.host_seconds"])
    roi = point.stats.get("regions", {}).get("roi")
    if roi is None:
        return None
    return float(summary["roi.insts"]), float(roi["host.wall_s"])


def region_sample(spec_path: Path, point_id: str, profile: str | None, roi_us: float) -> int:
    """Restore the point's checkpoint and run roi_us of its region; print what it cost."""
    try:
        point = plan.find(specs.load(spec_path, profile), point_id).config
    except LabError as error:
        sys.exit(f"bench_gem5: {error}")
    print(f"bench_gem5: {point_id}: restoring, then {roi_us:g} us of the region ...", flush=True)
    try:
        got = sample.run(point, roi_us)
    except LabError as error:
        sys.exit(f"bench_gem5: {point_id}: {error}")
    region, to_region = got.region, got.to_region
    insts, host = region["roi.insts"], region["roi.host_seconds"]
    rows = [
        ("cores", f"{point.machine.vcpus} ({point.machine.arch})"),
        ("checkpoint build s / MiB", f"{got.checkpoint_build_s} / "
         f"{got.checkpoint_bytes / 2**20:.0f}"),
        ("restore to region: host s / insts", f"{to_region['restore.host_seconds']:.1f} / "
         f"{to_region['restore.insts']:.0f}"),
        ("sample: simulated us", f"{region['roi.sim_seconds'] * 1e6:.1f}"),
        ("sample: insts", f"{insts:.0f}"),
        ("sample: network messages", f"{region['roi.coh.msgs']:.0f}"),
        ("sample: L1D misses", f"{region['roi.l1d.misses']:.0f}"),
        ("sample: host s", f"{host:.1f}"),
        ("sample: host us per instruction", f"{host / insts * 1e6:.3f}" if insts else "-"),
        ("gem5 wall s / peak RSS GiB", f"{got.wall_s:.0f} / "
         f"{(got.peak_rss_mib or 0) / 1024:.2f}"),
    ]
    for label, value in rows:
        print(f"{label:<36} {value}")
    return 0


def study_table(study_dir: Path) -> int:
    rows: dict[tuple[int, str], dict[str, tuple[float, float]]] = {}
    for folder in pointdir.list_points(study_dir):
        point = pointdir.read(folder)
        figures = roi_figures(point) if point is not None else None
        if point is None or figures is None:
            continue
        params = point.params
        key = (int(params["machine"]["vcpus"]), str(params["workload"]["args"].get("mode", "")))
        rows.setdefault(key, {})[params["machine"].get("backend", "qemu")] = figures
    print(f"{'cores':>5} {'mode':<8} {'tier':<6} {'ROI insts':>12} {'host s':>9} {'us/inst':>9} "
          f"{'gem5/qemu':>9}")
    for (cores, mode), tiers in sorted(rows.items()):
        per_inst = {t: host / insts * 1e6 for t, (insts, host) in tiers.items() if insts}
        for tier, (insts, host) in sorted(tiers.items(), reverse=True):
            ratio = ""
            if tier == "gem5" and "qemu" in per_inst and tier in per_inst:
                ratio = f"{per_inst['gem5'] / per_inst['qemu']:9.0f}"
            print(f"{cores:>5} {mode:<8} {tier:<6} {insts:>12.0f} {host:>9.2f} "
                  f"{per_inst.get(tier, float('nan')):>9.3f} {ratio}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cores", default="4,64", help="core counts (default 4,64)")
    parser.add_argument("--ticks", type=int, default=2 * 10**10,
                        help="gem5 simulated ticks (ps) per run (default 2e10 = 20 ms; the "
                             "first millisecond runs only a few thousand instructions)")
    parser.add_argument("--cpu", default="timing", choices=("atomic", "timing", "o3"))
    parser.add_argument("--no-qemu", action="store_true", help="skip the QEMU tier")
    parser.add_argument("--study", type=Path,
                        help="print the ROI figures of a finished two-tier study instead")
    parser.add_argument("--point", nargs=2, metavar=("SPEC", "ID"),
                        help="sample the region of this gem5 point, restored (see above)")
    parser.add_argument("--profile", help="the spec profile of --point")
    parser.add_argument("--roi-us", type=float, default=100.0,
                        help="simulated microseconds of the region to run (default 100)")
    args = parser.parse_args()
    if args.study:
        return study_table(args.study)
    if args.point:
        return region_sample(Path(args.point[0]), args.point[1], args.profile, args.roi_us)
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
