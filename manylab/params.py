"""Every spec key, declared once: one frozen dataclass per spec section, each field a `key()`
with its type, default, checks and doc. SCHEMA (what spec.py validates, defaults and sweeps)
is read off these declarations; a planned point's dict (what inputs.json
records and the table flattens) becomes the point sections' dataclasses once, after
validation, and the code that runs a point reads them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from types import MappingProxyType
from typing import Any, TypeVar

from manylab.keys import (
    DEFAULT_QUANTUM,
    Field,
    baseline_check,
    key,
    memory_check,
    not_negative,
    positive,
    power_of_two_line,
    quantum_outside_check,
    repeats_check,
    schema_of,
    size_check,
)

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class StudySettings:
    name: str = key(str, None, sweep=False,
                    doc="results go to runs/<name>/ (default: file stem)")
    description: str = key(str, "", sweep=False)
    repeats: int = key(int, 1, sweep=False, check=repeats_check, doc="boots per point")
    timeout_s: int = key(int, 0, sweep=False,
                         doc="per-run limit; 0 = derived from vCPUs, arch and plugin mode")
    together: list[list[str]] = key(list, [], sweep=False,
                                    doc="groups of swept keys whose lists pair up element by "
                                        "element, e.g. [['plugin.preset', 'machine.arch']]")


@dataclass(frozen=True, kw_only=True)
class KernelParams:
    variant: str = key(str, "stock", doc="a folder of kernel-patches/ with a series")
    fragments: tuple[str, ...] = key(list, [], typed=tuple,
                                     doc="extra config fragments, e.g. ['debug']")
    cmdline: str = key(str, "", doc="extra kernel parameters, appended after the lab's")
    sysctl: Mapping[str, Any] = key(dict, {}, sweep=False, typed=MappingProxyType,
                                    doc="written to /proc/sys before the workload")


@dataclass(frozen=True)
class NumaNode:
    size: str | int
    cpus: str | None  # None: QEMU assigns the node no CPUs of its own
    device: str


def _numa_nodes(nodes: list[dict[str, Any]]) -> tuple[NumaNode, ...]:
    return tuple(NumaNode(node["size"], str(node["cpus"]) if "cpus" in node else None,
                          node.get("device", "dram")) for node in nodes)


@dataclass(frozen=True, kw_only=True)
class MachineParams:
    arch: str = key(str, "x86_64", choices=("x86_64", "arm64"))
    vcpus: int = key(int, 1, check=positive)
    memory: str | int = key((str, int), "512M", check=memory_check)
    # empty: one DRAM node holding all memory and CPUs
    numa: tuple[NumaNode, ...] = key(list, [], sweep=False, typed=_numa_nodes,
                                     doc="nodes: [{size='256M', cpus='0-3', device='dram'}, "
                                         "...]")
    tcg: str = key(str, "single", choices=("single", "multi"))
    cpu: str = key(str, "", doc="QEMU -cpu model (default per arch)")
    reproducible: bool = key(bool, True,
                             doc="instruction time: QEMU icount (guest time counts "
                                 "instructions); false = free-running, guest time is host time")
    quantum: int = key(int, DEFAULT_QUANTUM, check=not_negative,
                       doc="guest instructions per vCPU turn (plugin switch); 0 = QEMU's "
                           "own slices")
    quantum_shared: int = key(int, 0, check=not_negative,
                              doc="adaptive turn length once a vCPU touches lines other "
                                  "vCPUs hold (full plugin mode); 0 = same as quantum")
    quantum_outside: int | str = key((int, str), "auto", check=quantum_outside_check,
                                     stored_default="auto",
                                     doc="turn length while no region of interest is open "
                                         "(boot, setup); 'auto' = 0 (QEMU's own slices) for "
                                         "workloads with region markers, quantum for 'shell'")
    quantum_unit: str = key(str, "instructions", choices=("instructions", "cycles"),
                            stored_default="instructions",
                            doc="what quantum and quantum_shared count: guest instructions, "
                                "or the plugin's modelled cycles (a vCPU that stalls more "
                                "runs fewer instructions per turn)")
    snapshot: str = key(str, "auto", choices=("auto", "off"), stored_default="auto",
                        doc="auto: boot each machine once, save it where the guest waits "
                            "for its run, restore that for every point (a QEMU snapshot; "
                            "under gem5 a checkpoint, with atomic boot cores); "
                            "off: every point boots from power-on")
    backend: str = key(str, "qemu", choices=("qemu", "gem5"),
                       doc="qemu: QEMU + the plugin (default); gem5: the detailed tier, a "
                           "gem5 full-system run on the plugin preset's mesh ([gem5])")

    def turn_outside(self, marks_regions: bool) -> int:
        """The turn length while no region of interest is open: 'auto' runs the boot and
        setup on QEMU's own slices (0) when the workload marks its regions, whose
        interleaving is not measured; a workload without markers is turned everywhere."""
        if self.quantum_outside == "auto":
            return 0 if marks_regions else self.quantum
        return int(self.quantum_outside)


@dataclass(frozen=True, kw_only=True)
class WorkloadParams:
    name: str = key(str, None)
    fs: str = key(str, "tmpfs", choices=("tmpfs", "ext2"))
    disk: str | int = key((str, int), "1G", check=size_check,
                          doc="virtio disk size for fs='ext2'")
    membind: int = key(int, -1, doc="bind the workload's memory to this NUMA node (-1: no)")
    args: Mapping[str, Any] = key(dict, {}, sweep=False, typed=MappingProxyType,
                                  doc="workload arguments; a list value sweeps")


@dataclass(frozen=True, kw_only=True)
class PluginParams:
    enabled: bool = key(bool, False)
    preset: str = key(str, "tiny-4")
    mode: str = key(str, "full", choices=("count", "full"))
    roi: bool = key(bool, True, doc="model memory only inside ROI markers")
    checker: bool = key(bool, False)
    causal: bool = key(bool, True, doc="the causal clock: a vCPU that obtains a line another "
                                       "vCPU stored ahead of its clock waits for that store")
    causal_lax: int = key(int, 0, check=not_negative,
                          doc="the causal clock's lax window in core cycles; 0 = one turn "
                              "(machine.quantum, x core.cpi for instruction turns)")
    race: str = key(str, "off", choices=("off", "window", "lax"), stored_default="off",
                    doc="the race rule: which stores that follow their own load of a shared "
                        "line find it taken by another vCPU's store in between (off: none; "
                        "window: that store's time lies between them on the modelled clock; "
                        "lax: another vCPU stored it within the lax window)")
    nvmain_trace: bool = key(bool, False, doc="write the ROI's PCM requests as an NVMain "
                                              "trace to <point>/nvmain.trace (mode full)")
    nvmain_clock: str = key(str, "instructions", choices=("instructions", "modelled"),
                            stored_default="instructions",
                            doc="the trace's cycle field: all vCPUs' instructions at CPI 1, or "
                                "the requesting vCPU's modelled clock in ns")
    set: Mapping[str, Any] = key(dict, {}, sweep=False, typed=MappingProxyType,
                                 doc="preset overrides, e.g. {'l2.size_kib'=512}")
    functions: tuple[str, ...] = key(list, [], sweep=False, typed=tuple,
                                     doc="kernel function patterns (fnmatch) summed into the "
                                         "table")


@dataclass(frozen=True, kw_only=True)
class Gem5Params:
    binary: str = key(str, "", sweep=False,
                      doc="gem5 built for the point's arch (x86_64: X86_MESI_Two_Level, arm64: "
                          "ARM_CHI); '' = $MANYLAB_GEM5 (x86_64) or $MANYLAB_GEM5_ARM (arm64)")
    bootloader: str = key(str, "", sweep=False, stored_default="",
                          doc="arm64: gem5's boot_foundation.arm64 (built from gem5's "
                              "system/arm/bootloader/arm64); '' = "
                              "$MANYLAB_GEM5_ARM_BOOTLOADER")
    cpu: str = key(str, "timing", choices=("atomic", "timing", "o3"),
                   doc="core type inside the region of interest")
    boot_cpu: str = key(str, "atomic", choices=("atomic", "timing", "o3"),
                        doc="core type before and after the region of interest")
    clock: str = key(str, "2GHz", doc="core and Ruby clock")
    interleave: int = key(int, 256, check=power_of_two_line,
                          doc="bytes per memory channel before the next channel")


@dataclass(frozen=True, kw_only=True)
class SlurmSettings:
    partition: str = key(str, "", sweep=False)
    account: str = key(str, "", sweep=False)
    qos: str = key(str, "", sweep=False)
    time_min: int = key(int, 0, sweep=False, doc="0 = derived from the point")
    mem_mb: int = key(int, 0, sweep=False, doc="0 = derived from the point")
    cpus: int = key(int, 0, sweep=False,
                    doc="0 = 1 (single-threaded TCG) or vCPUs (multi)")
    max_array: int = key(int, 1000, sweep=False, check=positive)
    throttle: int = key(int, 0, sweep=False, doc="%N: tasks running at once; 0 = no limit")
    setup: list[str] = key(list, [], sweep=False, doc="shell lines run before each task")


@dataclass(frozen=True, kw_only=True)
class ReportSettings:
    baseline: str = key(str, "", sweep=False, check=baseline_check,
                        doc="'key=value' the other kernel settings are compared with, e.g. "
                            "'kernel.cmdline=finer_lru.factor=1'")
    lock_wait: list[str] = key(list, [], sweep=False,
                               doc="plugin.functions patterns whose instructions count as "
                                   "lock waiting, e.g. ['*queued_spin_lock_slowpath']")
    paper: str = key(str, "", sweep=False, choices=("", "finerlru", "ldu"),
                     doc="whose claim and published values the report checks")


SECTION_TYPES: dict[str, type] = {
    "study": StudySettings, "kernel": KernelParams, "machine": MachineParams,
    "workload": WorkloadParams, "plugin": PluginParams, "gem5": Gem5Params,
    "slurm": SlurmSettings, "report": ReportSettings,
}
SCHEMA: dict[str, dict[str, Field]] = {section: schema_of(kind)
                                       for section, kind in SECTION_TYPES.items()}


@dataclass(frozen=True)
class PointParams:
    kernel: KernelParams
    machine: MachineParams
    workload: WorkloadParams
    plugin: PluginParams
    gem5: Gem5Params
    repeat: int

    @staticmethod
    def from_dict(params: Mapping[str, Any]) -> PointParams:
        """The typed form of a validated point (spec.expand + spec.check_point)."""
        return PointParams(
            kernel=_section(KernelParams, params["kernel"]),
            machine=_section(MachineParams, params["machine"]),
            workload=_section(WorkloadParams, params["workload"]),
            plugin=_section(PluginParams, params["plugin"]),
            gem5=_section(Gem5Params, params["gem5"]),
            repeat=int(params["repeat"]),
        )


POINT_SECTIONS = tuple(f.name for f in fields(PointParams) if f.name in SECTION_TYPES)


def with_stored_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    """A stored point's parameters with every key it predates set to its stored default, so a
    point run before a key existed reads as the setting it ran."""
    filled = dict(params)
    for section in POINT_SECTIONS:
        values = params.get(section)
        if not isinstance(values, Mapping):
            continue
        missing = {f.name: f.default for f in fields(SECTION_TYPES[section])
                   if f.name not in values and f.default is not MISSING}
        filled[section] = {**values, **missing}
    return filled


def _section(kind: type[T], values: Mapping[str, Any]) -> T:
    declared = fields(kind)  # type: ignore[arg-type]
    unknown = sorted(set(values) - {f.name for f in declared})
    if unknown:
        raise KeyError(f"{kind.__name__}: no field {', '.join(unknown)}")
    typed: dict[str, Any] = {}
    for f in declared:
        if f.name in values:
            convert = f.metadata["spec"].typed
            typed[f.name] = convert(values[f.name]) if convert else values[f.name]
        elif f.default is MISSING:
            raise KeyError(f"{kind.__name__}: {f.name} missing")
    return kind(**typed)
