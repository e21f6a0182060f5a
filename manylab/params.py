"""A planned point's parameters, typed: one frozen dataclass per spec section a point carries
(kernel, machine, workload, plugin, gem5) and the repeat index. spec.py owns the schema,
defaults and validation; a point's dict (what inputs.json records and the table flattens) is
turned into these once, after validation, and the code that runs a point reads them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from types import MappingProxyType
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class KernelParams:
    variant: str
    fragments: tuple[str, ...]
    cmdline: str
    sysctl: Mapping[str, Any]


@dataclass(frozen=True)
class NumaNode:
    size: str | int
    cpus: str | None  # None: QEMU assigns the node no CPUs of its own
    device: str


@dataclass(frozen=True)
class MachineParams:
    arch: str
    vcpus: int
    memory: str | int
    numa: tuple[NumaNode, ...]  # empty: one DRAM node holding all memory and CPUs
    tcg: str
    cpu: str
    reproducible: bool
    quantum: int
    quantum_shared: int
    backend: str
    quantum_unit: str = "instructions"  # what quantum counts: "instructions" or "cycles"
    quantum_outside: int | str = "auto"  # turn length outside the regions of interest
    snapshot: str = "auto"  # "auto": restore a post-boot snapshot; "off": boot every point

    def turn_outside(self, marks_regions: bool) -> int:
        """The turn length while no region of interest is open: 'auto' runs the boot and
        setup on QEMU's own slices (0) when the workload marks its regions, whose
        interleaving is not measured; a workload without markers is turned everywhere."""
        if self.quantum_outside == "auto":
            return 0 if marks_regions else self.quantum
        return int(self.quantum_outside)


@dataclass(frozen=True)
class WorkloadParams:
    name: str
    fs: str
    disk: str | int
    membind: int
    args: Mapping[str, Any]


@dataclass(frozen=True)
class PluginParams:
    enabled: bool
    preset: str
    mode: str
    roi: bool
    checker: bool
    causal: bool
    causal_lax: int
    nvmain_trace: bool
    set: Mapping[str, Any]
    functions: tuple[str, ...]


@dataclass(frozen=True)
class Gem5Params:
    binary: str
    cpu: str
    boot_cpu: str
    clock: str
    interleave: int


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
        machine = dict(params["machine"])
        machine["numa"] = tuple(
            NumaNode(node["size"], str(node["cpus"]) if "cpus" in node else None,
                     node.get("device", "dram")) for node in machine["numa"])
        return PointParams(
            kernel=_section(KernelParams, params["kernel"], fragments=tuple,
                            sysctl=MappingProxyType),
            machine=_section(MachineParams, machine),
            workload=_section(WorkloadParams, params["workload"], args=MappingProxyType),
            plugin=_section(PluginParams, params["plugin"], set=MappingProxyType,
                            functions=tuple),
            gem5=_section(Gem5Params, params["gem5"]),
            repeat=int(params["repeat"]),
        )


def _section(kind: type[T], values: Mapping[str, Any], **convert: Any) -> T:
    names = [f.name for f in fields(kind)]  # type: ignore[arg-type]
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise KeyError(f"{kind.__name__}: no field {', '.join(unknown)} (spec.SCHEMA and "
                       "manylab/params.py must list the same keys)")
    given = {f.name for f in fields(kind) if f.name in values  # type: ignore[arg-type]
             or f.default is MISSING}
    return kind(**{name: convert.get(name, _same)(values[name]) for name in names
                   if name in given})


def _same(value: Any) -> Any:
    return value
