"""The guest workloads the lab knows: their arguments, and the run script that starts them.

Each workload is a static C program in workloads/<name>.c, installed in the guest as
/manylab/bin/<name>. Spec arguments become long options: `size = "8M"` -> `--size 8M`,
`fsync = true` -> `--fsync` (false: left out). A whole-number argument given as "{repeat}"
receives the point's repeat index in the guest, so a study's repeats can vary a workload's own
seed while staying repeats of one setting (its parameters keep the text).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manylab import kstats
from manylab.errors import LabError
from manylab.params import PointParams
from manylab.units import parse_size


@dataclass(frozen=True)
class Arg:
    kind: type | tuple[type, ...]
    choices: tuple[str, ...] = ()
    doc: str = ""
    size: bool = False  # a byte count: a whole number or a K/M/G size


@dataclass(frozen=True)
class Workload:
    name: str
    doc: str
    args: dict[str, Arg] = field(default_factory=dict)
    dir_option: str | None = "--dir"  # the option that receives the work directory
    marks_regions: bool = True  # opens and closes regions of interest (ROI markers)
    bundles: tuple[str, ...] = ()  # optional image bundles it runs (image-contents.txt)


REPEAT = "{repeat}"
SIZE_ARG = Arg((str, int), doc="bytes, K/M/G suffix allowed", size=True)
WORKERS_ARG = Arg(int, doc="worker threads ('{vcpus}' = one per vCPU)")
NO_PIN_ARG = Arg(bool, doc="do not pin thread i to CPU i")

REGISTRY: dict[str, Workload] = {w.name: w for w in (
    Workload("pwriter", "parallel file writer/reader, file per process (IOR-like)", {
        "procs": Arg(int, doc="processes, one file each ('{vcpus}' = one per vCPU)"),
        "size": SIZE_ARG,
        "block": SIZE_ARG,
        "pattern": Arg(str, ("seq", "rand")),
        "fsync": Arg(bool),
        "read": Arg(bool, doc="read back and verify every byte"),
        "seed": Arg(int),
        "pin": Arg(bool, doc="pin process i to CPU i, as MPI binds IOR's ranks"),
    }),
    Workload("mmf", "file server to a local client: read()+write() vs write() from mmap", {
        "path": Arg(str, ("pipe", "unix", "tcp", "all"), doc="channel; a list sweeps"),
        "method": Arg(str, ("normal", "mmf", "all"), doc="normal = read+write, mmf = mmap"),
        "open": Arg(str, ("n_open", "l_open", "all"), doc="open+map per request, or once"),
        "sizes": Arg((str, int), doc="file sizes measured in one run: '1K,64K,1M' (bytes)"),
        "transfers": Arg(int, doc="timed transfers per measurement"),
        "warmup": Arg(int, doc="untimed transfers before them"),
        "buffer": SIZE_ARG,
        "verify": Arg(str, ("all", "first"), doc="check every transfer's bytes or the first"),
    }),
    Workload("falseshare", "threads incrementing adjacent words of one line vs padded lines", {
        "threads": WORKERS_ARG,
        "iters": Arg(int, doc="increments per thread"),
        "mode": Arg(str, ("shared", "padded", "both")),
        "pause_every": Arg(int, doc="spin-wait hint every N increments (0 = never)"),
        "no_pin": NO_PIN_ARG,
    }, dir_option=None),
    Workload("contention", "interleaving check: threads on one atomic word, a spin lock "
             "around a short critical section, and one padded lock per thread", {
        "threads": WORKERS_ARG,
        "iters": Arg(int, doc="operations per thread and loop"),
        "mode": Arg(str, ("atomic", "lock", "padded", "all")),
        "cs": Arg(int, doc="increments inside each critical section"),
        "think": Arg(int, doc="local loop iterations between two lock acquisitions"),
        "no_pin": NO_PIN_ARG,
    }, dir_option=None),
    Workload("serialprobe", "serialisation probe: the same critical sections run by thread 0 "
             "alone (ROI phase 1), under one spin lock (2), one mutex (3) and no lock (4); "
             "locked / serial modelled time is 1.0 on hardware", {
        "threads": WORKERS_ARG,
        "sections": Arg(int, doc="critical sections per thread and phase"),
        "work": Arg(int, doc="register-only arithmetic iterations per section"),
        "lock": Arg(str, ("spin", "mutex", "none", "all"),
                    doc="which of phases 2-4 run (the serial phase always does)"),
        "no_pin": NO_PIN_ARG,
    }, dir_option=None),
    Workload("memlat", "pointer-chase latency ladder: one rung (ROI phase) per working-set "
             "size, and a rung served from another CPU's cache", {
        "sizes": Arg((str, int), doc="working-set sizes, '16K,256K,4M,256M' (K/M/G)"),
        "steps": Arg(int, doc="timed dependent loads per size"),
        "stride": SIZE_ARG,
        "remote": Arg(bool, doc="add a rung whose lines CPU `owner` wrote just before"),
        "owner": Arg(int, doc="that CPU (default: the last)"),
    }, dir_option=None),
    Workload("stream", "STREAM-like bandwidth: copy, scale, add, triad (ROI phases 1-4) over "
             "threads pinned one per CPU", {
        "threads": Arg(int, doc="threads ('{vcpus}' = one per vCPU)"),
        "size": SIZE_ARG,
        "reps": Arg(int, doc="repetitions of each kernel"),
        "no_pin": NO_PIN_ARG,
    }, dir_option=None),
    Workload("lrustress", "LRU-lock safety stress: verified writers over more data than memory, "
             "mmap+mlock, THP splits, compaction, a memcg", {
        "writers": Arg(int), "size": SIZE_ARG, "mmappers": Arg(int), "mmap_size": SIZE_ARG,
        "thp": Arg(int), "thp_size": SIZE_ARG, "memcg_writers": Arg(int), "memcg_max": SIZE_ARG,
        "compact_interval": Arg(int), "rounds": Arg(int), "duration": Arg(int),
        "seed": Arg(int), "keep": Arg(bool),
    }),
    Workload("forkstress", "rmap safety stress: fork/exec/exit storms, COW and shared file "
             "mappings verified, splits, truncate, swap, compaction", {
        "workers": Arg(int), "duration": Arg(int), "anon": SIZE_ARG, "file_size": SIZE_ARG,
        "fanout": Arg(int), "depth": Arg(int), "exec": Arg(bool), "no_exec": Arg(bool),
        "hog": SIZE_ARG, "zram": SIZE_ARG, "memcg": SIZE_ARG, "compact": Arg(int),
        "shared": Arg((str, int), doc="COW-shared anonymous region every process maps (one "
                      "anon_vma tree that every fork logs into); K/M/G suffix allowed"),
        "shared_pages": Arg(int, doc="pages of the shared region each worker reads per round "
                            "before it forks (its children inherit the mappings)"),
        "shared_holders": Arg(int, doc="idle processes mapping the shared region from the start "
                              "(longer rmap walks of its tree)"),
        "seed": Arg(int),
    }),
    Workload("ldustress", "rmap walk-order stress: fork and mremap page-table copies racing "
             "migration (move_pages/compaction) and truncation walks, checked for missed copies", {
        "duration": Arg(int, doc="seconds"), "forkers": Arg(int), "movers": Arg(int),
        "region": SIZE_ARG, "fork_every": Arg(int, doc="fork a child after every N mremaps"),
        "filers": Arg(int, doc="0 or 1: the file fork/truncate race"), "file_size": SIZE_ARG,
        "hold_us": Arg(int, doc="how long the truncator holds the file at size 0"),
        "hang": Arg(int, doc="seconds a read may take before it counts as a hang"),
        "min_file_checks": Arg(int, doc="run past duration (up to 10x) until N conclusive "
                               "truncation checks"),
    }),
    Workload("umountrace", "file mappings unmapped right before their tmpfs is unmounted: "
             "worker processes loop mount / map MAP_SHARED, write, check / unmap / umount "
             "(the LDU timed drain against umount's inode eviction); fails on a failed call "
             "or a wrong page, the kernel's side shows on the console", {
        "workers": Arg(int, doc="worker processes, one mount point each ('{vcpus}' = one "
                       "per vCPU; default one per CPU)"),
        "duration": Arg(int, doc="seconds"),
        "files": Arg(int, doc="files per mount"), "pages": Arg(int, doc="pages per file"),
        "fork": Arg(bool, doc="a child maps each file too and exits before the unmap"),
    }),
    Workload("forkbench", "fork-intensive rates: AIM7-multiuser-like mix or lmbench-like "
             "process creation", {
        "mode": Arg(str, ("fork", "exec", "aim7")), "workers": Arg(int), "duration": Arg(int),
        "iterations": Arg(int), "warmup": Arg(int), "parent_anon": SIZE_ARG,
        "file_size": SIZE_ARG,
    }),
    Workload("aim7", "AIM7-multiuser-like: users (processes) each running AIM7's shared "
             "multiuser workfile mix (53 tests by weight) once; jobs per minute, JTI", {
        "users": Arg(int, doc="users (AIM7 tasks), one process each ('{vcpus}' = one per "
                     "vCPU; default: users_per_cpu per CPU, else one per CPU)"),
        "users_per_cpu": Arg(int, doc="users per online CPU, when users is not given (the "
                             "thesis grew users with cores)"),
        "jobs": Arg(int, doc="nominal jobs per user, AIM7's LOADNUM (100: 97 jobs after "
                    "AIM7's rounding of the weights)"),
        "scale": Arg((int, float), doc="each job's size relative to AIM7's (loop counts, file "
                     "blocks; 0.01 = a hundredth, rounded up or down at random)"),
        "seed": Arg(int, doc="seed of each user's job order and random choices"),
        "dirs": Arg(int, doc="data directories the users rotate over (default: one per CPU)"),
    }),
    Workload("lmproc", "lmbench-like process creation (lat_proc -P): fork+exit, fork+execve "
             "or fork+/bin/sh -c in parallel copies; microseconds per operation, operations/s", {
        "mode": Arg(str, ("fork", "exec", "shell")),
        "parallel": Arg(int, doc="copies at once, lmbench's -P ('{vcpus}' = one per vCPU; "
                        "default one per CPU)"),
        "iterations": Arg(int, doc="timed iterations per copy"),
        "warmup": Arg(int, doc="untimed iterations per copy before the start"),
    }, dir_option=None),
    Workload("smtpload", "Exim (Debian's exim4-daemon-light, MOSBENCH's configuration) "
             "under SMTP load on the loopback: N clients x M messages, a fork per delivery, "
             "per-user mailboxes checked after the run", {
        "connections": Arg(int, doc="client processes, one SMTP connection each at a time "
                           "('{vcpus}' = one per vCPU)"),
        "messages": Arg(int, doc="messages each client sends"),
        "size": SIZE_ARG,
        "session": Arg(int, doc="messages per SMTP session before QUIT and a new connection "
                       "(default 10, as MOSBENCH; 0 = one session)"),
        "users": Arg(int, doc="recipients; client i mails user<i mod users> (default: one "
                     "per client)"),
        "pin": Arg(bool, doc="pin client i to CPU i mod CPUs"),
        "drain_timeout": Arg(int, doc="seconds without a delivery before the drain gives up"),
    }, bundles=("exim",)),
    Workload("mobileapps", "mobile-like apps (processes) of Android importance "
             "(oom_score_adj) requesting pages of their own files, Zipf-like, one foreground: "
             "push services (fg:bg 15:1) or app switching (3:1), or a pcmsim trace replayed", {
        "scenario": Arg(str, ("push", "switch"), doc="push: one foreground app and push "
                        "services; switch: apps take turns in the foreground"),
        "replay": Arg(str, doc="a pcmsim CSV trace in the guest to issue record by record "
                      "(instead of a scenario)"),
        "requests": Arg(int, doc="requests in the request phase"),
        "apps": Arg(int, doc="apps, one process each (default: push 3, switch 8)"),
        "pages": Arg(int, doc="pages per app, over its files"),
        "files": Arg(int, doc="files per app"),
        "zipf": Arg((int, float), doc="Zipf exponent of page popularity (default 0.9)"),
        "fg_share": Arg((int, float), doc="foreground share of the requests (default: push "
                        "15/16, switch 3/4)"),
        "slice": Arg(int, doc="requests per slice (the foreground switches between slices)"),
        "switch_every": Arg(int, doc="switch: slices between foreground switches"),
        "write_pages": Arg((int, float), doc="share of write-prone pages"),
        "write_prob": Arg((int, float), doc="chance that a request to one is a write"),
        "seed": Arg(int),
        "serial": Arg(bool, doc="apps take turns inside a slice instead of running together"),
        "no_mincore": Arg(bool, doc="do not measure hits with mincore()"),
        "prepare": Arg(bool, doc="only write the files (for a recorder started after)"),
        "reuse": Arg(bool, doc="use the files a prepare run wrote"),
        "keep": Arg(bool, doc="keep the files"),
        "no_pin": Arg(bool, doc="replay: do not pin the processes to one CPU"),
    }),
    Workload("shell", "a shell script run as is (for experiments and tests)", {
        "script": Arg(str, doc="shell text; $MANYLAB_WORKDIR is the work directory"),
    }, dir_option=None, marks_regions=False),
)}


def _type_ok(value: Any, kind: type | tuple[type, ...]) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


def check_args(spec_path: Path, name: str, args: dict[str, Any]) -> None:
    workload = REGISTRY.get(name)
    if workload is None:
        raise LabError(f"{spec_path}: [workload] name: unknown workload '{name}' "
                       f"(known: {', '.join(sorted(REGISTRY))})")
    for key, value in args.items():
        where = f"{spec_path}: [workload] args.{key}"
        arg = workload.args.get(key)
        if arg is None:
            raise LabError(f"{where}: '{name}' has no argument '{key}' "
                           f"(allowed: {', '.join(workload.args) or 'none'})")
        if value == REPEAT:
            if not _type_ok(0, arg.kind) or arg.choices:
                raise LabError(f"{where}: {REPEAT} stands for a whole number, which '{key}' "
                               "does not take")
            continue
        if not _type_ok(value, arg.kind):
            raise LabError(f"{where}: {value!r} has the wrong type for '{name}'")
        if arg.choices and value not in arg.choices:
            raise LabError(f"{where}: {value!r} is not one of {', '.join(arg.choices)}")
        if arg.size and not (isinstance(value, str) and "{vcpus}" in value):
            try:
                if parse_size(value) < 0:
                    raise ValueError(f"{value!r} is negative")
            except ValueError as error:
                raise LabError(f"{where}: {error}") from error


def command_line(name: str, args: dict[str, Any], repeat: int = 0) -> str:
    """The shell command that runs the workload in the guest (work directory in $WORKDIR);
    "{repeat}" arguments become `repeat`."""
    workload = REGISTRY[name]
    if name == "shell":
        return str(args.get("script", "true"))
    words = [name]
    for key, value in args.items():
        option = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                words.append(option)
        elif value == REPEAT:
            words += [option, str(repeat)]
        else:
            words += [option, str(value)]
    text = " ".join(shlex.quote(w) for w in words)
    if workload.dir_option:
        text += f' {workload.dir_option} "$MANYLAB_WORKDIR"'
    return text


def run_script(point: PointParams) -> str:
    """/etc/manylab/run.sh for one point: work directory, sysctls, kernel counters before and
    after (manylab/kstats.py), the workload."""
    workload = point.workload
    lines = [
        "# generated by manylab for one run",
        ". /etc/manylab/functions.sh",
        f"MANYLAB_WORKDIR=$(manylab_workdir {shlex.quote(workload.fs)}) || exit 3",
        "export MANYLAB_WORKDIR",
        'cd "$MANYLAB_WORKDIR" || exit 3',
    ]
    for key, value in point.kernel.sysctl.items():
        path = "/proc/sys/" + key.replace(".", "/")
        lines.append(f"echo {shlex.quote(str(value))} > {path} || "
                     f"{{ echo 'manylab: cannot set sysctl {key}'; exit 4; }}")
    lines += kstats.script_lines()
    command = command_line(workload.name, dict(workload.args), point.repeat)
    if workload.membind >= 0:
        command = f"membind {workload.membind} sh -c {shlex.quote(command)}"
    lines.append(command)
    return "\n".join(lines) + "\n"
