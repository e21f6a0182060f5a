"""NVMain, the external memory simulator, on the plugin's traces (`nvmain_trace=`): find its
trace simulator, run it with a config from nvmain-configs/, import its statistics.

NVMain is not part of the lab: it is built by hand from its own sources (nvmain-configs/README.md)
and found through MANYLAB_NVMAIN or `nvmain.fast` on PATH."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

from manylab import atomic, pointdir
from manylab.errors import LabError
from manylab.paths import REPO_ROOT

ENV = "MANYLAB_NVMAIN"
CONFIG_DIR = REPO_ROOT / "nvmain-configs"
NOT_FOUND = (f"NVMain not found: set {ENV}=/path/to/nvmain.fast "
             "(build it from NVMain's sources, see nvmain-configs/README.md)")

# `i0.defaultMemory.channel0.FRFCFS-WQF.mem_reads 2`, `...totalEnergy 115.654nJ`
_STAT = re.compile(r"^i\d+\.(\S+) (\S+)$")
_NUMBER = re.compile(r"^([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)([A-Za-z*/]*)$")
_EXIT = re.compile(r"^Exiting at cycle (\d+) ")
# A word's life before any write, as NVMain prints an untouched sub-array's worst case.
_UNTOUCHED = 2**64 - 1
# A trace timed by the modelled clock (plugin.nvmain_clock = "modelled") counts nanoseconds.
MODELLED_CPU_MHZ = 1000

Stats = dict[str, float]


def binary() -> Path:
    """The trace simulator: MANYLAB_NVMAIN, else `nvmain.fast` on PATH."""
    override = os.environ.get(ENV)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise LabError(f"NVMain not found: {ENV}={override} is not an executable file: "
                           f"set {ENV}=/path/to/nvmain.fast (see nvmain-configs/README.md)")
        return path
    found = shutil.which("nvmain.fast")
    if found is None:
        raise LabError(NOT_FOUND)
    return Path(found)


def config_path(name: str | Path) -> Path:
    """A config file as given, or by name in nvmain-configs/."""
    path = Path(name)
    for candidate in (path, CONFIG_DIR / path.name):
        if candidate.is_file():
            return candidate
    known = ", ".join(sorted(p.name for p in CONFIG_DIR.glob("*.config")))
    raise LabError(f"{name}: no such NVMain config: use one of nvmain-configs/ ({known})")


def read_config(path: Path) -> dict[str, str]:
    """NVMain's `KEY value ; comment` lines (the last value of a key wins, as in NVMain)."""
    keys: dict[str, str] = {}
    for line in path.read_text().splitlines():
        fields = line.split(";", 1)[0].split()
        if len(fields) >= 2:
            keys[fields[0]] = fields[1]
    return keys


def parse_output(text: str) -> tuple[Stats, int | None]:
    """NVMain's statistics lines as {name without `i0.`: number} (units such as nJ, W and MB/s
    dropped; histograms and NaNs left out), and the global cycle it stopped at."""
    stats: Stats = {}
    exit_cycle = None
    for line in text.splitlines():
        found = _EXIT.match(line)
        if found:
            exit_cycle = int(found.group(1))
            continue
        stat = _STAT.match(line.strip())
        if not stat:
            continue
        number = _NUMBER.match(stat.group(2))
        if number:
            value = float(number.group(1))
            if math.isfinite(value):
                stats[stat.group(1)] = value
    return stats, exit_cycle


def _sum(stats: Stats, pattern: str) -> float:
    rx = re.compile(pattern)
    return sum(v for k, v in stats.items() if rx.search(k))


def _weighted(stats: Stats, average: str, count: str) -> float:
    """Mean of the controllers' `average` figures weighted by their `count`s."""
    total = weight = 0.0
    for key, value in stats.items():
        if key.endswith("." + average):
            n = stats.get(key[: -len(average)] + count, 0.0)
            total += value * n
            weight += n
    return total / weight if weight else 0.0


def trace_cpu_mhz(trace: Path) -> int | None:
    """The trace's cycle unit, from the point's inputs.json beside it: MODELLED_CPU_MHZ for a
    trace timed by the modelled clock, None (the config's CPUFreq) otherwise."""
    inputs = pointdir.read_json(trace.parent / pointdir.INPUTS)
    plugin = inputs.get("params", {}).get("plugin", {}) if isinstance(inputs, dict) else {}
    return MODELLED_CPU_MHZ if plugin.get("nvmain_clock") == "modelled" else None


def summarize(stats: Stats, exit_cycle: int | None, config: dict[str, str]) -> Stats:
    """The figures the lab compares: request counts, energy, latency and wear."""
    summary: Stats = {
        "reads": _sum(stats, r"\.channel\d+\.[^.]+\.mem_reads$"),
        "writes": _sum(stats, r"\.channel\d+\.[^.]+\.mem_writes$"),
        "requests.reads": _sum(stats, r"^defaultMemory\.totalReadRequests$"),
        "requests.writes": _sum(stats, r"^defaultMemory\.totalWriteRequests$"),
        # Sub-arrays' energy (reads, writes, activations, refresh) + the ranks' background.
        # The ranks' own totalEnergy adds their activate/burst/refresh sums to the banks'
        # totals, which already hold them: those parts count twice there (kept for reference).
        "energy_nj": _sum(stats, r"\.subarray\d+\.subArrayEnergy$")
        + _sum(stats, r"\.rank\d+\.backgroundEnergy$"),
        "energy.rank_total_nj": _sum(stats, r"\.rank\d+\.totalEnergy$"),
        "energy.background_nj": _sum(stats, r"\.rank\d+\.backgroundEnergy$"),
        "energy.burst_nj": _sum(stats, r"\.rank\d+\.burstEnergy$"),
        "energy.write_nj": _sum(stats, r"\.subarray\d+\.writeEnergy$"),
        "latency.avg_cycles": _weighted(stats, "averageLatency", "measuredLatencies"),
        "latency.avg_queue_cycles": _weighted(stats, "averageQueueLatency",
                                              "measuredQueueLatencies"),
        "latency.avg_total_cycles": _weighted(stats, "averageTotalLatency",
                                              "measuredTotalLatencies"),
        "cycles.global": float(exit_cycle or 0),
    }
    if "CPUFreq" in config:
        # The global cycle counts the trace's cycles: the time NVMain took to serve it all.
        summary["time_ns"] = summary["cycles.global"] * 1000.0 / float(config["CPUFreq"])
    if "CLK" in config and not any(k.startswith("CONFIG_CHANNEL") for k in config):
        # One memory clock: latencies in ns too (a hybrid's channels run at their own CLKs).
        ns_per_cycle = 1000.0 / float(config["CLK"])
        for key in ("latency.avg_cycles", "latency.avg_queue_cycles", "latency.avg_total_cycles"):
            summary[key.replace("_cycles", "_ns")] = summary[key] * ns_per_cycle
    lives = [v for k, v in stats.items()
             if k.endswith(".worstCaseEndurance") and ".subarray" in k and v < _UNTOUCHED]
    if lives:
        worst = min(lives)
        summary["endurance.worst_life"] = worst
        mean = config.get("EnduranceDistMean")
        if mean is not None and config.get("EnduranceDistVariance", "0") in ("0", "0.0"):
            # Every word starts with the same life, and NVMain's life map takes a word's first
            # write without a decrement: the most-written word's writes = mean - worst + 1.
            writes = float(mean) - worst + 1.0
            summary["endurance.max_word_writes"] = writes
            summary["endurance.lifetime_runs"] = float(mean) / writes
    return summary


def parse_override(text: str) -> tuple[str, str]:
    """`KEY=VALUE`, one of NVMain's command-line config overrides."""
    key, sep, value = text.partition("=")
    if not sep or not key or not value or any(c.isspace() for c in text):
        raise LabError(f"--set {text}: expected KEY=VALUE, a key of the NVMain config "
                       "(e.g. --set BANKS=16)")
    return key, value


def run(trace: Path, config: Path, out_dir: Path, cycles: int = 0,
        cpu_mhz: int | None = None, overrides: tuple[str, ...] = ()) -> dict[str, object]:
    """Runs NVMain's trace simulator; writes out_dir/nvmain.log (its output) and
    out_dir/nvmain.json ({"summary", "stats", "command", "config"}) and returns the latter.
    `cpu_mhz` overrides the config's CPUFreq, the unit of the trace's cycles; `overrides`
    (`KEY=VALUE`) any other config key."""
    if not trace.is_file():
        raise LabError(f"{trace}: no such trace: write one with the plugin's nvmain_trace= "
                       "(spec key plugin.nvmain_trace = true)")
    if cycles < 0:
        raise LabError(f"--cycles {cycles}: expected 0 (the whole trace) or more")
    exe = binary()
    argv = [str(exe), str(config), str(trace), str(cycles)]
    keys = read_config(config)
    settings = [parse_override(text) for text in overrides]
    if cpu_mhz is not None:
        settings.append(("CPUFreq", str(cpu_mhz)))
    for key, value in settings:
        argv.append(f"{key}={value}")
        keys[key] = value
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", check=False)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "nvmain.log"
    log.write_text(done.stdout)
    if done.returncode != 0:
        raise LabError(f"{config}: NVMain exited with status {done.returncode} on {trace}: "
                       f"see {log}")
    stats, exit_cycle = parse_output(done.stdout)
    if not stats:
        raise LabError(f"{log}: no NVMain statistics in the output: check {config} and {trace}")
    result: dict[str, object] = {
        "command": argv,
        "config": str(config),
        "summary": summarize(stats, exit_cycle, keys),
        "stats": stats,
    }
    atomic.write_json(out_dir / "nvmain.json", result)
    return result


def cmd_nvmain(args: argparse.Namespace) -> int:
    trace = Path(args.trace)
    out_dir = Path(args.out) if args.out else trace.resolve().parent
    result = run(trace, config_path(args.config), out_dir, args.cycles, trace_cpu_mhz(trace),
                 tuple(args.set))
    summary = result["summary"]
    assert isinstance(summary, dict)
    print(json.dumps(summary, indent=1, sort_keys=True))
    print(f"wrote {out_dir / 'nvmain.json'} and {out_dir / 'nvmain.log'}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("nvmain", help="run NVMain on a plugin trace (nvmain_trace=) and "
                                             "import its statistics")
    p.add_argument("trace", help="an NVMain trace, e.g. runs/<study>/<point>/nvmain.trace")
    p.add_argument("--config", required=True, help="nvmain-configs/<file>.config")
    p.add_argument("--out", default="", help="where nvmain.json and nvmain.log go "
                                             "(default: the trace's folder)")
    p.add_argument("--cycles", type=int, default=0,
                   help="NVMain's CYCLES argument: stop after this many trace cycles (0: all)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of the config (repeatable), e.g. --set BANKS=16")
    p.set_defaults(func=cmd_nvmain)
