#!/usr/bin/env python3
"""Spine benchmark (not a test): kernel build times, boot-to-workload and whole-run times.

Prints, for each arch:
  - cold build: empty artifact cache and empty ccache (a private cache folder),
  - warm build: empty artifact cache, warm ccache (what a patch edit costs at most),
  - cached: a second request for the same kernel (the content-hash hit),
and boot / whole-run seconds for a small pwriter run at the requested vCPU counts, in each
requested run mode side by side (the runs of one vCPU count follow each other):
  lockstep: instruction time (icount) and the plugin's vCPU switch every machine.quantum
            instructions (plugin mode none: no model), booted from power-on;
  restore:  the same, restored from the post-boot snapshot (the lab's default); the
            snapshot's build time and size are printed first, and boot_s is the time from
            QEMU's start to the restored guest's first line (restore-to-workload);
  free:     free-running TCG, guest time is host time, QEMU's own vCPU slices, booted.
The ratios lockstep/free and restore/lockstep of whole-run times are printed per vCPU count.

Usage: .venv/bin/python scripts/bench_spine.py [--arch x86_64 arm64] [--vcpus 1 8 64]
                                               [--modes lockstep restore free] [--big]
                                               [--no-cold] [--no-build]
  --big adds 256 vCPUs on both arches (several minutes each on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from manylab import image, kernel, paths, plan, runner  # noqa: E402
from manylab import spec as specs  # noqa: E402
from manylab.backends import ready_state  # noqa: E402
from manylab.backends.qemu import snapshot  # noqa: E402

BIG = {"x86_64": 256, "arm64": 256}
MODES: dict[str, dict[str, object]] = {
    "lockstep": {"snapshot": "off"},
    "restore": {"snapshot": "auto"},
    "free": {"reproducible": False, "quantum": 0, "snapshot": "off"},
}


def timed_build(arch: str) -> float:
    started = time.monotonic()
    kernel.build(kernel.KernelRequest("stock", arch))
    return time.monotonic() - started


def rebuild_without_artifact(arch: str) -> float:
    """Build again with the artifact moved aside (ccache stays as it is), then restore it."""
    kernel.build(kernel.KernelRequest("stock", arch))
    directory = kernel.kernels_dir() / kernel.resolve(kernel.KernelRequest("stock", arch)).key
    aside = directory.with_name(directory.name + ".bench-aside")
    os.replace(directory, aside)
    try:
        return timed_build(arch)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        os.replace(aside, directory)


def build_times(arch: str, cold: bool) -> dict[str, float]:
    figures: dict[str, float] = {}
    if cold:
        real_src = paths.cache_root() / "src"
        saved = os.environ.get("MANYLAB_CACHE")
        with tempfile.TemporaryDirectory(prefix="manylab-bench-") as scratch:
            os.environ["MANYLAB_CACHE"] = scratch
            os.symlink(real_src, Path(scratch) / "src")  # unpacking is not compiling
            try:
                figures["cold_build_s"] = timed_build(arch)
            finally:
                if saved is None:
                    os.environ.pop("MANYLAB_CACHE")
                else:
                    os.environ["MANYLAB_CACHE"] = saved
    figures["warm_build_s"] = rebuild_without_artifact(arch)
    figures["cached_s"] = timed_build(arch)
    return figures


def bench_spec(arch: str, vcpus: int, mode: str) -> specs.Spec:
    raw = {
        "study": {"name": f"bench-{arch}-{vcpus}-{mode}"},
        "machine": {"arch": arch, "vcpus": vcpus, "memory": "2G" if vcpus > 64 else "1G",
                    **MODES[mode]},
        "workload": {"name": "pwriter", "args": {"procs": min(vcpus, 16), "size": "4M"}},
    }
    return specs.parse(raw, Path(f"<bench {arch} {vcpus}>"))


def snapshot_build(arch: str, vcpus: int) -> dict[str, float]:
    """Build the restore mode's snapshot (timed; an older copy is moved aside first)."""
    point = plan.points(bench_spec(arch, vcpus, "restore"))[0].config
    kernel_art = kernel.build(kernel.request_for(point))
    image_art = image.build(arch)
    key = ready_state.key_of(snapshot.key_inputs(point, kernel_art, image_art))
    shutil.rmtree(snapshot.snapshots_dir() / key, ignore_errors=True)
    started = time.monotonic()
    snap = snapshot.ensure(point, kernel_art, image_art)
    return {"build_s": time.monotonic() - started,
            "mib": snapshot.describe(snap)["bytes"] / 2**20,
            "save_s": float(snap.manifest["save_s"])}


def run_times(arch: str, vcpus: int, mode: str, results_root: Path) -> dict[str, float | str]:
    spec = bench_spec(arch, vcpus, mode)
    point = plan.points(spec)[0]
    result = runner.run_point(spec, point, results_root)
    return {"boot_s": result["timing"]["boot_s"] or float("nan"),
            "total_s": result["timing"]["total_s"], "status": result["status"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", nargs="+", default=["x86_64", "arm64"])
    parser.add_argument("--vcpus", nargs="+", type=int, default=[1, 8, 64])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold (empty ccache) build")
    parser.add_argument("--no-build", action="store_true", help="skip every build timing")
    args = parser.parse_args()
    print(f"host: {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="manylab-bench-runs-") as scratch:
        for arch in args.arch:
            if not args.no_build:
                for name, value in build_times(arch, not args.no_cold).items():
                    print(f"{arch:7} kernel {name:14} {value:8.1f}", flush=True)
            counts = list(args.vcpus) + ([BIG[arch]] if args.big else [])
            for vcpus in counts:
                totals: dict[str, float] = {}
                for mode in args.modes:
                    if mode == "restore":
                        built = snapshot_build(arch, vcpus)
                        print(f"{arch:7} vcpus={vcpus:<4} snapshot build_s={built['build_s']:8.1f} "
                              f"save_s={built['save_s']:6.1f} size_mib={built['mib']:8.1f}",
                              flush=True)
                    figures = run_times(arch, vcpus, mode, Path(scratch))
                    totals[mode] = float(figures["total_s"])
                    print(f"{arch:7} vcpus={vcpus:<4} {mode:8} boot_s={figures['boot_s']:8.1f} "
                          f"total_s={figures['total_s']:8.1f} status={figures['status']}",
                          flush=True)
                if {"lockstep", "free"} <= totals.keys():
                    print(f"{arch:7} vcpus={vcpus:<4} lockstep/free total = "
                          f"{totals['lockstep'] / totals['free']:.2f}", flush=True)
                if {"lockstep", "restore"} <= totals.keys():
                    print(f"{arch:7} vcpus={vcpus:<4} restore/lockstep total = "
                          f"{totals['restore'] / totals['lockstep']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
