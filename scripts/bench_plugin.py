#!/usr/bin/env python3
"""Benchmark of the manylab QEMU plugin (a benchmark, not a test).

Boots the same guest three ways (no plugin, plugin mode=count, plugin mode=full) at each vCPU
count and prints guest instructions/s, memory accesses/s and QEMU's peak RSS.

The guest is self-contained: busybox-static plus workloads/falseshare.c, packed into an
initramfs here, so only a kernel is needed (default: the newest one in the lab's cache).
Instruction and access counts come from the count-mode run (the same guest work), rates are
counts divided by each configuration's wall time for the whole boot+workload+poweroff.
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

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "plugin" / "target" / "release" / "libmanylab_plugin.so"


def find_kernel() -> Path | None:
    cands = []
    for pat in ("vmlinux", "bzImage"):
        cands += glob.glob(os.path.expanduser(f"~/.cache/manylab/kernels/*/{pat}"))
    cands.sort(key=os.path.getmtime, reverse=True)
    return Path(cands[0]) if cands else None


def build_initramfs(work: Path, threads_arg: str, iters: int) -> Path:
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
        f"/falseshare --threads {threads_arg} --iters {iters}\n"
        "/bin/busybox poweroff -f\n")
    init.chmod(0o755)
    out = work / "initramfs.cpio"
    files = subprocess.run(["find", "."], cwd=tree, check=True, capture_output=True, text=True).stdout
    with open(out, "wb") as f:
        subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=tree, input=files.encode(),
                       stdout=f, check=True)
    return out


def run_qemu(kernel: Path, initrd: Path, vcpus: int, plugin_args: str | None, timeout: int, log: Path):
    """Returns (wall seconds or None on timeout, console text, peak RSS in MiB, CPU seconds)."""
    cmd = ["qemu-system-x86_64", "-M", "q35", "-accel", "tcg,thread=single", "-m", "2G", "-smp", str(vcpus), "-nographic",
           "-no-reboot", "-kernel", str(kernel), "-initrd", str(initrd),
           "-append", "console=ttyS0 quiet panic=-1 rdinit=/init nokaslr"]
    if plugin_args:
        cmd += ["-plugin", f"{PLUGIN},{plugin_args}"]
    t0 = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    wall = time.monotonic() - t0
    proc.returncode = status
    text = log.read_text(errors="replace")
    timed_out = os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
    return (None if timed_out else wall), text, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernel", type=Path, default=None, help="bzImage or PVH vmlinux (x86_64)")
    ap.add_argument("--vcpus", default="8,64", help="comma-separated vCPU counts (default 8,64)")
    ap.add_argument("--preset", default="knl-64")
    ap.add_argument("--iters", type=int, default=200000, help="falseshare increments per thread")
    ap.add_argument("--threads", default="4", help="falseshare threads (default 4)")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--roi", default="off", choices=("on", "off"), help="plugin roi= (default off: whole run)")
    ap.add_argument("--json", type=Path, help="also write the table as JSON here")
    args = ap.parse_args()
    kernel = args.kernel or find_kernel()
    if not kernel or not kernel.exists():
        sys.exit("bench_plugin: no kernel; pass --kernel (lab cache ~/.cache/manylab/kernels/*/ is empty)")
    if not PLUGIN.exists():
        sys.exit(f"bench_plugin: {PLUGIN} missing; run cargo build --release in plugin/")
    rows = []
    with tempfile.TemporaryDirectory(prefix="manylab-bench-") as tmp:
        work = Path(tmp)
        initrd = build_initramfs(work, args.threads, args.iters)
        for vcpus in [int(v) for v in args.vcpus.split(",")]:
            results = {}
            for mode in ("none", "count", "full"):
                stats = work / f"stats-{vcpus}-{mode}.json"
                pargs = None if mode == "none" else f"out={stats},preset={args.preset},mode={mode},roi={args.roi}"
                wall, out, rss, cpu = run_qemu(kernel, initrd, vcpus, pargs, args.timeout, work / f"console-{vcpus}-{mode}.log")
                if wall is None:
                    print(f"vcpus={vcpus} mode={mode}: timed out after {args.timeout}s", file=sys.stderr)
                    results[mode] = None
                    continue
                if "MANYLAB-RESULT" not in out:
                    print(f"vcpus={vcpus} mode={mode}: workload did not report; console tail:\n{out[-2000:]}",
                          file=sys.stderr)
                total = {}
                if mode != "none":
                    total = json.loads(stats.read_text())["summary"]
                results[mode] = {"wall_s": wall, "cpu_s": cpu, "rss_mib": rss,
                                 "insts": total.get("total.insts"), "accesses": total.get("total.mem.accesses")}
            count = results.get("count") or {}
            for mode in ("none", "count", "full"):
                r = results.get(mode)
                if not r:
                    continue
                # A plugin run counts its own guest work; the plain run borrows the count run's.
                source = count if mode == "none" else r
                insts, accesses = source.get("insts"), source.get("accesses")
                row = {"vcpus": vcpus, "mode": mode, "wall_s": round(r["wall_s"], 2),
                       "cpu_s": round(r["cpu_s"], 2),
                       "insn_per_s": insts / r["wall_s"] if insts else None,
                       "acc_per_s": accesses / r["wall_s"] if accesses else None,
                       "insn_per_cpu_s": insts / r["cpu_s"] if insts else None,
                       "peak_rss_mib": round(r["rss_mib"], 1) if r["rss_mib"] else None}
                rows.append(row)
            c, f = results.get("count"), results.get("full")
            if c and f and c["insts"] and f["insts"]:
                # speed = guest instructions per host CPU second (the guest's own amount of work
                # varies with speed: idle vCPUs spin until timer ticks)
                ratio = (f["insts"] / f["cpu_s"]) / (c["insts"] / c["cpu_s"])
                rows.append({"vcpus": vcpus, "mode": "full/count insn/cpu-s", "ratio": round(ratio, 3)})
                ratio = (f["accesses"] / f["cpu_s"]) / (c["accesses"] / c["cpu_s"])
                rows.append({"vcpus": vcpus, "mode": "full/count acc/cpu-s", "ratio": round(ratio, 3)})
    print(f"kernel {kernel}, preset {args.preset}, falseshare --threads {args.threads} --iters {args.iters}")
    print("rates: each plugin run's own guest instructions/accesses over its time; the plain run "
          "(no plugin) is credited with the count run's work (approximate: guest work varies)")
    print(f"{'vcpus':>5} {'mode':<17} {'wall s':>8} {'cpu s':>8} {'insn/s':>10} {'acc/s':>10} {'insn/cpu-s':>10} "
          f"{'peak RSS MiB':>12}")
    for r in rows:
        if "ratio" in r:
            print(f"{r['vcpus']:>5} {r['mode']:<17} {r['ratio']:>8}")
            continue
        f = lambda x: f"{x:.3e}" if x else "-"
        print(f"{r['vcpus']:>5} {r['mode']:<17} {r['wall_s']:>8} {r['cpu_s']:>8} {f(r['insn_per_s']):>10} "
              f"{f(r['acc_per_s']):>10} {f(r['insn_per_cpu_s']):>10} {r['peak_rss_mib'] or '-':>12}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
