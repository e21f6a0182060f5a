"""The hook to the machine-model QEMU plugin (plugin/): where it is and what it is told."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from manylab.crate_build import built
from manylab.errors import LabError
from manylab.hashing import sha256_file
from manylab.memory_layout import plugin_numa, plugin_view
from manylab.params import PointParams
from manylab.workloads import REGISTRY


def library() -> Path:
    return built("MANYLAB_PLUGIN", "libmanylab_plugin.so", "QEMU plugin")


def marks_regions(point: PointParams) -> bool:
    return REGISTRY[point.workload.name].marks_regions


def wanted(point: PointParams) -> bool:
    """The plugin loads for the model, or only for the vCPU switch every quantum instructions."""
    return bool(point.plugin.enabled or point.machine.quantum
                or point.machine.turn_outside(marks_regions(point)))


def _flag(value: bool) -> str:
    return "on" if value else "off"


def arguments(point: PointParams, stats_out: Path, system_map: Path) -> list[str]:
    """The plugin's key=value arguments for one point (QEMU's -plugin option, after the path)."""
    settings = point.plugin
    mode = settings.mode if settings.enabled else "none"
    args = [f"out={stats_out}", f"preset={settings.preset}", f"mode={mode}",
            f"roi={_flag(settings.roi)}", f"checker={_flag(settings.checker)}",
            f"sysmap={system_map}", f"quantum={point.machine.quantum}",
            f"quantum_shared={point.machine.quantum_shared}"]
    outside = point.machine.turn_outside(marks_regions(point))
    if outside != point.machine.quantum:
        args.append(f"quantum_outside={outside}")
    if point.machine.quantum_unit != "instructions":
        args.append(f"quantum_unit={point.machine.quantum_unit}")
    if not settings.causal:
        args.append("causal=off")
    if settings.causal_lax:
        args.append(f"causal_lax={settings.causal_lax}")
    if settings.race != "off":
        args.append(f"race={settings.race}")
    if point.repeat > 0 and point.machine.quantum > 0:
        # Lockstep replays a point exactly: repeat k starts the ROI's turns at other phases.
        args.append(f"phase_seed={point.repeat}")
    if settings.nvmain_trace:
        if mode != "full":
            raise LabError("plugin.nvmain_trace = true needs plugin.enabled = true and "
                           "plugin.mode = 'full' (the trace comes from the cache model)")
        args.append(f"nvmain_trace={stats_out.parent / 'nvmain.trace'}")
        if settings.nvmain_clock != "instructions":
            args.append(f"nvmain_clock={settings.nvmain_clock}")
    if _snc(settings.set) and len(point.machine.numa) > 1:
        # An SNC cluster mode over several NUMA nodes: each range carries its node and each
        # node's vCPUs are listed, so the plugin homes node k's memory and runs node k's vCPUs
        # in cluster k. (Other modes do not use the layout; their arguments stay as they were.)
        ranges, node_cpus = plugin_numa(point)
        for node, mem in ranges:
            args.append(f"mem={mem.device}:{mem.start:#x}:{mem.size:#x}:{node}")
        for node, cpus in node_cpus:
            args.append(f"node_cpus={node}:{_cpu_list(cpus)}")
    else:
        for mem in plugin_view(point):
            args.append(f"mem={mem.device}:{mem.start:#x}:{mem.size:#x}")
    for key, value in sorted(settings.set.items()):
        text = _flag(value) if isinstance(value, bool) else str(value)
        args.append(f"set.{key}={text}")
    return args


def _snc(overrides: Mapping[str, Any]) -> bool:
    return str(overrides.get("cluster", "")).replace("-", "") in ("snc2", "snc4")


def _cpu_list(cpus: list[int]) -> str:
    """`0-3/8-11`: runs of consecutive CPUs joined by '/' (QEMU splits plugin args on commas)."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and runs[-1][1] == cpu - 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return "/".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def qemu_argument(library_path: Path, args: list[str]) -> str:
    """QEMU's -plugin value; commas inside values are doubled as QEMU's option parser wants."""
    return ",".join([str(library_path)] + [a.replace(",", ",,") for a in args])


def describe(library_path: Path) -> dict[str, str]:
    return {"library": str(library_path), "sha256": sha256_file(library_path)}
