#!/usr/bin/env python3
"""Benchmark of the manylab QEMU plugin (a benchmark, not a test).

Boots the same guest three ways (no model, plugin mode=count, plugin mode=full) at each vCPU
count, in each run mode (`--clocks`: lockstep = icount + the plugin's vCPU switch every 1000
instructions inside the region of interest, the studies' default; lockstep-all = the switch
during boot too; free = QEMU's own slices without icount), and prints guest
instructions/s, memory accesses/s and QEMU's peak RSS, with the full model's lockstep/free and
full/count speed ratios per CPU second.

The guest is self-contained: busybox-static plus workloads/falseshare.c, packed into an
initramfs here, so only a kernel is needed (default: the newest one in the lab's cache).
Instruction and access counts come from each plugin run's own stats.json (the plain run is
credited with the count run's work). Rates are counts over each configuration's wall time and
over the QEMU process's CPU time (user+sys, from wait4) for the whole boot+workload+poweroff.
The speed ratio full/count is taken per CPU second: under load from other processes the CPU
time is the fairer clock, and the guest's own amount of work varies with speed (idle vCPUs
run until timer ticks), so each run is divided by its own instruction count.

`--plugin label=path` (repeatable) benchmarks several builds of the plugin side by side in one
run (for example the previous build against the current one): the runs of one vCPU count are
interleaved (none, then count and full of each build) so that background load hits them alike.

Whole runs are a poor clock for the model: boot work varies from run to run (a slower guest
sees more timer ticks and, at 64 vCPUs under host load, RCU stall warnings), and it includes
QEMU's start. So the ratio is also given for the workload's region of interest alone: the
plugin records the QEMU process's CPU time at the ROI markers (`regions.roi["host.cpu_s"]`),
and ROI instructions per ROI CPU second is the steadiest figure. `--roi on` models only the
ROI (the boot runs at count-mode cost), which keeps 64-vCPU runs short.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "plugin" / "target" / "release" / "libmanylab_plugin.so"


def _is_stock_x86(kernel: Path) -> bool:
    """A cached x86_64 stock kernel (the lab layer only) without extra config fragments."""
    try:
        manifest = json.loads((kernel.parent / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(manifest.get("arch") == "x86_64" and manifest.get("variant") == "stock"
                and not manifest.get("fragments"))


def find_kernel() -> Path | None:
    """The newest stock x86_64 kernel of the lab cache (else the newest cached kernel); an
    uncompressed PVH `vmlinux` is preferred to the `bzImage` of the same build (no
    decompressor to trace)."""
    cands: list[Path] = []
    for build in glob.glob(os.path.expanduser("~/.cache/manylab/kernels/*/")):
        for name in ("vmlinux", "bzImage"):
            if (Path(build) / name).exists():
                cands.append(Path(build) / name)
                break
    cands.sort(key=lambda c: os.path.getmtime(c.parent / "manifest.json")
               if (c.parent / "manifest.json").exists() else 0.0, reverse=True)
    stock = [c for c in cands if _is_stock_x86(c)]
    best = stock or cands
    return best[0] if best else None


def build_initramfs(work: Path, threads_arg: str, iters: int,
                    pause_every: int | None = None) -> Path:
    tree = work / "root"
    for d in ("bin", "proc", "sys", "dev", "tmp"):
        (tree / d).mkdir(parents=True, exist_ok=True)
    busybox = shutil.which("busybox")
    if not busybox:
        sys.exit("bench_plugin: busybox (busybox-static) not found")
    shutil.copy(busybox, tree / "bin" / "busybox")
    subprocess.run(
        ["gcc", "-static", "-O2", "-pthread", f"-I{ROOT / 'workloads' / 'include'}",
         str(ROOT / "workloads" / "falseshare.c"), "-o", str(tree / "falseshare")],
        check=True)
    init = tree / "init"
    init.write_text(
        "#!/bin/busybox sh\n"
        "/bin/busybox mount -t proc proc /proc\n"
        f"/falseshare --threads {threads_arg} --iters {iters}"
        + ("" if pause_every is None else f" --pause-every {pause_every}") + "\n"
        "/bin/busybox poweroff -f\n")
    init.chmod(0o755)
    out = work / "initramfs.cpio"
    files = subprocess.run(["find", "."], cwd=tree, check=True, capture_output=True,
                           text=True).stdout
    with open(out, "wb") as f:
        subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=tree, input=files.encode(),
                       stdout=f, check=True)
    return out


# The lab's run modes (README "How vCPUs take turns"): lockstep = instruction time and the
# plugin's vCPU switch every QUANTUM instructions inside the regions of interest, QEMU's own
# slices outside them (the default of studies); lockstep-all = the switch everywhere, boot
# included (machine.quantum_outside = quantum); free = QEMU's own slices, guest time is host time.
QUANTUM = 1000
CLOCKS = ("lockstep", "lockstep-all", "free")
LOCKSTEP = ("lockstep", "lockstep-all")


def run_qemu(kernel: Path, initrd: Path, vcpus: int, plugin: Path | None, plugin_args: str,
             timeout: int, log: Path, clock: str) -> tuple[float | None, str, float, float]:
    """Returns (wall seconds or None on timeout, console text, peak RSS in MiB, CPU seconds)."""
    cmd = ["qemu-system-x86_64", "-M", "q35", "-accel", "tcg,thread=single", "-m", "2G",
           "-smp", str(vcpus), "-nographic", "-no-reboot", "-kernel", str(kernel),
           "-initrd", str(initrd), "-bios", "qboot.rom",
           "-append", "console=ttyS0 quiet panic=-1 rdinit=/init nokaslr lpj=1000000 "
                      "lapic_timer_period=10000000"]
    if clock in LOCKSTEP:
        cmd += ["-icount", "shift=0,sleep=off"]
    if plugin:
        cmd += ["-plugin", f"{plugin},{plugin_args}"]
    t0 = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    wall = time.monotonic() - t0
    proc.returncode = status
    text = log.read_text(errors="replace")
    timed_out = os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
    cpu = usage.ru_utime + usage.ru_stime
    return (None if timed_out else wall), text, usage.ru_maxrss / 1024, cpu


def _sci(x: float | None) -> str:
    return f"{x:.3e}" if x else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", type=Path, default=None, help="bzImage or PVH vmlinux (x86_64)")
    ap.add_argument("--vcpus", default="8,64", help="comma-separated vCPU counts (default 8,64)")
    ap.add_argument("--preset", default="knl-64")
    ap.add_argument("--iters", type=int, default=200000, help="falseshare increments per thread")
    ap.add_argument("--threads", default="4", help="falseshare threads (default 4)")
    ap.add_argument("--pause-every", type=int, default=None,
                    help="falseshare --pause-every (default: the workload's, 1; 0 = never: each "
                         "vCPU runs whole time slices, so the ROI measures the model rather "
                         "than QEMU's vCPU switching)")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--roi", default="off", choices=("on", "off"),
                    help="plugin roi= (default off: whole run)")
    ap.add_argument("--json", type=Path, help="also write the table as JSON here")
    ap.add_argument("--plugin", action="append", default=[], metavar="LABEL=PATH",
                    help="plugin build to benchmark (repeatable; default: "
                         "current=plugin/target/release/libmanylab_plugin.so)")
    ap.add_argument("--modes", default="none,count,full",
                    help="which of none,count,full,full-notiming to run (default the first "
                         "three); full-notiming is mode=full with set.timing=off (no stall "
                         "accounting), for the cost of the timing model")
    ap.add_argument("--clocks", default="lockstep,free",
                    help="lockstep (icount + quantum switch inside the regions, the study "
                         "default), lockstep-all (the switch during boot too) and/or free "
                         "(QEMU's slices, no icount); default lockstep,free, side by side")
    args = ap.parse_args()
    kernel = args.kernel or find_kernel()
    if not kernel or not kernel.exists():
        sys.exit("bench_plugin: no kernel; pass --kernel "
                 "(lab cache ~/.cache/manylab/kernels/*/ is empty)")
    plugins: list[tuple[str, Path]] = []
    for item in args.plugin or [f"current={PLUGIN}"]:
        label, sep, path = item.partition("=")
        if not sep or not label:
            sys.exit(f"bench_plugin: --plugin expects LABEL=PATH, got {item!r}")
        if not Path(path).exists():
            sys.exit(f"bench_plugin: {path} missing; run cargo build --release in plugin/")
        plugins.append((label, Path(path)))
    wanted = args.modes.split(",")
    clocks = [c for c in CLOCKS if c in args.clocks.split(",")]
    several = len(plugins) > 1
    configs: list[tuple[str, str, Path | None, str]] = []  # (name, mode, plugin, clock)
    for clock in clocks:
        if "none" in wanted:
            # lockstep needs the plugin for the switch even without a model (mode=none)
            configs.append((f"none@{clock}", "none",
                            plugins[0][1] if clock in LOCKSTEP else None, clock))
        for mode in ("count", "full", "full-notiming"):
            if mode in wanted:
                configs += [(f"{label}:{mode}@{clock}" if several else f"{mode}@{clock}",
                             mode, path, clock) for label, path in plugins]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="manylab-bench-") as tmp:
        work = Path(tmp)
        initrd = build_initramfs(work, args.threads, args.iters, args.pause_every)
        for vcpus in [int(v) for v in args.vcpus.split(",")]:
            results: dict[str, dict[str, Any] | None] = {}
            for name, mode, plugin, clock in configs:
                tag = name.replace(":", "-").replace("@", "-")
                stats = work / f"stats-{vcpus}-{tag}.json"
                quantum = QUANTUM if clock in LOCKSTEP else 0
                plugin_mode, extra = ((mode, "") if mode != "full-notiming"
                                      else ("full", ",set.timing=off"))
                if clock == "lockstep":
                    extra += ",quantum_outside=0"
                pargs = (f"out={stats},preset={args.preset},mode={plugin_mode},roi={args.roi},"
                         f"quantum={quantum}{extra}")
                wall, out, rss, cpu = run_qemu(kernel, initrd, vcpus, plugin, pargs, args.timeout,
                                               work / f"console-{vcpus}-{tag}.log", clock)
                if wall is None:
                    print(f"vcpus={vcpus} {name}: timed out after {args.timeout}s",
                          file=sys.stderr)
                    results[name] = None
                    continue
                if "MANYLAB-RESULT" not in out:
                    print(f"vcpus={vcpus} {name}: workload did not report; console tail:\n"
                          f"{out[-2000:]}", file=sys.stderr)
                total: dict[str, Any] = {}
                roi: dict[str, Any] = {}
                if plugin is not None:
                    doc = json.loads(stats.read_text())
                    total = doc["summary"]
                    roi = doc.get("regions", {}).get("roi", {})
                results[name] = {"wall_s": wall, "cpu_s": cpu, "rss_mib": rss,
                                 "insts": total.get("total.insts"),
                                 "accesses": total.get("total.mem.accesses"),
                                 "roi_insts": roi.get("stats", {}).get("insts"),
                                 "roi_accesses": roi.get("stats", {}).get("mem.accesses"),
                                 "roi_cpu_s": roi.get("host.cpu_s")}
                print(f"vcpus={vcpus} {name}: wall {wall:.1f} s, cpu {cpu:.1f} s, "
                      f"RSS {rss:.0f} MiB", file=sys.stderr, flush=True)
            for name, mode, _, clock in configs:
                r = results.get(name)
                if not r:
                    continue
                # A plugin run counts its own guest work; the plain run borrows a count run's.
                count_runs = [found for n, m, _, c in configs
                              if m == "count" and c == clock and (found := results.get(n))]
                count: dict[str, Any] = count_runs[0] if count_runs else {}
                source = count if mode == "none" and not r.get("insts") else r
                insts, accesses = source.get("insts"), source.get("accesses")
                roi_cpu = r.get("roi_cpu_s")
                rows.append({"vcpus": vcpus, "mode": name, "wall_s": round(r["wall_s"], 2),
                             "cpu_s": round(r["cpu_s"], 2),
                             "insn_per_s": insts / r["wall_s"] if insts else None,
                             "acc_per_s": accesses / r["wall_s"] if accesses else None,
                             "insn_per_cpu_s": insts / r["cpu_s"] if insts else None,
                             "roi_cpu_s": round(roi_cpu, 3) if roi_cpu else None,
                             "roi_insn_per_cpu_s": r["roi_insts"] / roi_cpu
                             if roi_cpu and r.get("roi_insts") else None,
                             "peak_rss_mib": round(r["rss_mib"], 1) if r["rss_mib"] else None})
            for label, _ in plugins:
                prefix = f"{label}:" if several else ""
                free = results.get(f"{prefix}full@free")
                for clock in LOCKSTEP:
                    lock = results.get(f"{prefix}full@{clock}")
                    if not (lock and free and lock["insts"] and free["insts"]):
                        continue
                    ratio = (lock["insts"] / lock["cpu_s"]) / (free["insts"] / free["cpu_s"])
                    rows.append({"vcpus": vcpus,
                                 "mode": f"{prefix}full {clock}/free insn/cpu-s",
                                 "ratio": round(ratio, 3)})
                    if lock.get("roi_cpu_s") and free.get("roi_cpu_s") and free["roi_insts"]:
                        ratio = ((lock["roi_insts"] / lock["roi_cpu_s"])
                                 / (free["roi_insts"] / free["roi_cpu_s"]))
                        rows.append({"vcpus": vcpus,
                                     "mode": f"{prefix}full {clock}/free ROI insn/cpu-s",
                                     "ratio": round(ratio, 3)})
            for label, clock in ((label, clock) for label, _ in plugins for clock in clocks):
                prefix = f"{label}:" if several else ""
                c, f = results.get(f"{prefix}count@{clock}"), results.get(f"{prefix}full@{clock}")
                prefix = f"{prefix}{clock} "
                if c and f and c["insts"] and f["insts"]:
                    # speed = guest instructions per host CPU second (the guest's own amount of
                    # work varies with speed: idle vCPUs run until timer ticks)
                    ratio = (f["insts"] / f["cpu_s"]) / (c["insts"] / c["cpu_s"])
                    rows.append({"vcpus": vcpus, "mode": f"{prefix}full/count insn/cpu-s",
                                 "ratio": round(ratio, 3)})
                    ratio = (f["accesses"] / f["cpu_s"]) / (c["accesses"] / c["cpu_s"])
                    rows.append({"vcpus": vcpus, "mode": f"{prefix}full/count acc/cpu-s",
                                 "ratio": round(ratio, 3)})
                if c and f and c.get("roi_cpu_s") and f.get("roi_cpu_s") and c["roi_insts"]:
                    ratio = ((f["roi_insts"] / f["roi_cpu_s"])
                             / (c["roi_insts"] / c["roi_cpu_s"]))
                    rows.append({"vcpus": vcpus, "mode": f"{prefix}full/count ROI insn/cpu-s",
                                 "ratio": round(ratio, 3)})
            for label, clock in ((label, clock) for label, _ in plugins for clock in clocks):
                prefix = f"{label}:" if several else ""
                on = results.get(f"{prefix}full@{clock}")
                off = results.get(f"{prefix}full-notiming@{clock}")
                prefix = f"{prefix}{clock} "
                if on and off and on["insts"] and off["insts"]:
                    ratio = (on["insts"] / on["cpu_s"]) / (off["insts"] / off["cpu_s"])
                    rows.append({"vcpus": vcpus, "mode": f"{prefix}timing on/off insn/cpu-s",
                                 "ratio": round(ratio, 3)})
                if on and off and on.get("roi_cpu_s") and off.get("roi_cpu_s") \
                        and off["roi_insts"]:
                    ratio = ((on["roi_insts"] / on["roi_cpu_s"])
                             / (off["roi_insts"] / off["roi_cpu_s"]))
                    rows.append({"vcpus": vcpus, "mode": f"{prefix}timing on/off ROI insn/cpu-s",
                                 "ratio": round(ratio, 3)})
    pause = "" if args.pause_every is None else f" --pause-every {args.pause_every}"
    print(f"kernel {kernel}, preset {args.preset}, roi={args.roi}, "
          f"falseshare --threads {args.threads} --iters {args.iters}{pause}")
    print("rates: each plugin run's own guest instructions/accesses over its time; the plain run "
          "(no plugin) is credited with the count run's work (approximate: guest work varies)")
    print(f"{'vcpus':>5} {'mode':<28} {'wall s':>8} {'cpu s':>8} {'insn/s':>10} {'acc/s':>10} "
          f"{'insn/cpu-s':>10} {'ROI cpu s':>9} {'ROI insn/cpu-s':>14} {'peak RSS MiB':>12}")
    for r in rows:
        if "ratio" in r:
            print(f"{r['vcpus']:>5} {r['mode']:<28} {r['ratio']:>8}")
            continue
        print(f"{r['vcpus']:>5} {r['mode']:<28} {r['wall_s']:>8} {r['cpu_s']:>8} "
              f"{_sci(r['insn_per_s']):>10} {_sci(r['acc_per_s']):>10} "
              f"{_sci(r['insn_per_cpu_s']):>10} {r['roi_cpu_s'] or '-':>9} "
              f"{_sci(r['roi_insn_per_cpu_s']):>14} {r['peak_rss_mib'] or '-':>12}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
