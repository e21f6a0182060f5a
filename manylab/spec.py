"""Study specs (runs/*.toml): schema, validation and expansion into a matrix of points.

A key given a list where the schema expects one value sweeps over that list; the sweeps of a
spec multiply into its matrix. Every error names the file, the key and what is allowed.
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manylab import kernel
from manylab.errors import LabError
from manylab.keys import Field, size_check
from manylab.memory_layout import DEVICES, STORAGE
from manylab.params import SCHEMA
from manylab.paths import KERNEL_PATCHES
from manylab.units import parse_cpus, parse_size
from manylab.workloads import check_args

MAX_VCPUS = {"x86_64": 256, "arm64": 512}
SECTIONS = tuple(SCHEMA) + ("profiles",)
NODE_KEYS = {"size", "cpus", "device"}


@dataclass(frozen=True)
class Spec:
    path: Path
    name: str
    description: str
    repeats: int
    timeout_s: int
    base: dict[str, dict[str, Any]]
    sweeps: dict[str, list[Any]]  # dotted key -> values, in spec order
    together: list[list[str]]  # groups of swept keys that vary as one (study.together)
    slurm: dict[str, Any]
    raw: dict[str, Any]  # the spec as written (profile applied), recorded with every result
    report: dict[str, Any] = field(default_factory=dict)


class SpecError(LabError):
    pass


def _type_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", bool: "true or false", list: "a list",
             dict: "a table"}
    return " or ".join(names[k] for k in kinds)


def _is_kind(value: Any, kind: type | tuple[type, ...]) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


def _check_value(where: str, value: Any, spec_field: Field) -> None:
    if not _is_kind(value, spec_field.kind):
        raise SpecError(f"{where}: {value!r} is not {_type_name(spec_field.kind)}")
    if spec_field.choices and value not in spec_field.choices:
        allowed = ", ".join(repr(c) for c in spec_field.choices)
        raise SpecError(f"{where}: {value!r} is not allowed (allowed: {allowed})")
    if spec_field.check and (problem := spec_field.check(value)):
        raise SpecError(f"{where}: {problem}")


def _split_sweep(where: str, value: Any, spec_field: Field) -> list[Any] | None:
    """The list of values if `value` sweeps, else None (after checking it as one value)."""
    sweeping = isinstance(value, list) and (
        spec_field.kind is not list
        or (spec_field.sweep and value and all(isinstance(v, list) for v in value)))
    if sweeping:
        if not spec_field.sweep:
            raise SpecError(f"{where}: takes one value, not a list to sweep")
        if not value:
            raise SpecError(f"{where}: an empty list sweeps over nothing")
        for item in value:
            _check_value(where, item, spec_field)
        return list(value)
    _check_value(where, value, spec_field)
    return None


def load(path: Path, profile: str | None = None) -> Spec:
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SpecError(f"{path}: no such study spec") from None
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"{path}: not valid TOML: {error}") from None
    return parse(raw, path, profile)


def _apply_profile(raw: dict[str, Any], path: Path, profile: str) -> None:
    profiles = raw.get("profiles", {})
    if profile not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise SpecError(f"{path}: no profile '{profile}' (profiles: {known})")
    for dotted, value in profiles[profile].items():
        section, _, key = dotted.partition(".")
        if section not in SCHEMA or not key:
            raise SpecError(f"{path}: [profiles.{profile}] '{dotted}' is not section.key")
        target = raw.setdefault(section, {})
        parts = key.split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = value


def parse(raw: dict[str, Any], path: Path, profile: str | None = None) -> Spec:
    for section in raw:
        if section not in SECTIONS:
            raise SpecError(f"{path}: unknown section [{section}] (allowed: {', '.join(SECTIONS)})")
    raw = _deep_copy(raw)
    if profile:
        _apply_profile(raw, path, profile)
    base: dict[str, dict[str, Any]] = {}
    sweeps: dict[str, list[Any]] = {}
    for section, fields in SCHEMA.items():
        given = raw.get(section, {})
        if not isinstance(given, dict):
            raise SpecError(f"{path}: [{section}] must be a table")
        for key in given:
            if key not in fields:
                raise SpecError(f"{path}: [{section}] unknown key '{key}' "
                                f"(allowed: {', '.join(fields)})")
        values: dict[str, Any] = {}
        for key, spec_field in fields.items():
            where = f"{path}: [{section}] {key}"
            if key not in given:
                if spec_field.default is None and section in ("workload",) and key == "name":
                    raise SpecError(f"{where}: required")
                values[key] = spec_field.default
                continue
            swept = _split_sweep(where, given[key], spec_field)
            if swept is not None:
                sweeps[f"{section}.{key}"] = swept
                values[key] = swept[0]
            else:
                values[key] = given[key]
        base[section] = values
    for key, value in base["workload"]["args"].items():
        if isinstance(value, list):
            if not value:
                raise SpecError(f"{path}: [workload] args.{key}: an empty list sweeps over nothing")
            sweeps[f"workload.args.{key}"] = value
    for key, value in base["plugin"]["set"].items():
        if isinstance(value, list):
            sweeps[f"plugin.set.{key}"] = value
    _check_numa(path, base["machine"]["numa"])
    study = base.pop("study")
    slurm = base.pop("slurm")
    report = base.pop("report")
    together = _check_together(path, study["together"], sweeps)
    return Spec(path, study["name"] or path.stem, study["description"], study["repeats"],
                study["timeout_s"], base, sweeps, together, slurm, raw, report)


def _check_together(path: Path, groups: list[Any], sweeps: dict[str, list[Any]]) -> list[list[str]]:
    where = f"{path}: [study] together"
    seen: set[str] = set()
    for group in groups:
        if not isinstance(group, list) or len(group) < 2:
            raise SpecError(f"{where}: each group is a list of two or more swept keys, "
                            "e.g. [['plugin.preset', 'machine.arch']]")
        for key in group:
            if key not in sweeps:
                raise SpecError(f"{where}: '{key}' is not a swept key (give it a list; swept: "
                                f"{', '.join(sweeps) or 'none'})")
            if key in seen:
                raise SpecError(f"{where}: '{key}' is in two groups")
            seen.add(key)
        lengths = {len(sweeps[key]) for key in group}
        if len(lengths) > 1:
            raise SpecError(f"{where}: the lists of {', '.join(group)} have different lengths "
                            f"({', '.join(str(len(sweeps[k])) for k in group)}); they pair up "
                            "element by element")
    return [list(group) for group in groups]


def _check_numa(path: Path, nodes: list[Any]) -> None:
    for index, node in enumerate(nodes):
        where = f"{path}: [machine] numa[{index}]"
        if not isinstance(node, dict):
            raise SpecError(f"{where}: must be a table like {{size='256M', cpus='0-3'}}")
        unknown = set(node) - NODE_KEYS
        if unknown:
            raise SpecError(f"{where}: unknown key '{sorted(unknown)[0]}' "
                            f"(allowed: {', '.join(sorted(NODE_KEYS))})")
        if "size" not in node:
            raise SpecError(f"{where}: size is required")
        if problem := size_check(node["size"]):
            raise SpecError(f"{where}: size {problem}")
        if node.get("device", "dram") not in DEVICES:
            raise SpecError(f"{where}: device '{node['device']}' is not one of "
                            f"{', '.join(DEVICES)}")
        if "cpus" in node:
            try:
                parse_cpus(str(node["cpus"]))
            except ValueError as error:
                raise SpecError(f"{where}: cpus {error}") from None


def _assign(point: dict[str, Any], dotted: str, value: Any) -> None:
    """Sets a swept key; within a free-form table (`plugin.set`, `workload.args`) the rest of
    the dotted name is one key, so `plugin.set.bw.behind_epochs` sets `bw.behind_epochs`."""
    parts = dotted.split(".")
    target = point
    for i, part in enumerate(parts[:-1]):
        if not isinstance(target.get(part), dict):
            target[".".join(parts[i:])] = value
            return
        target = target[part]
    target[parts[-1]] = value


def lookup(point: dict[str, Any], dotted: str) -> Any:
    """A swept key's value in a point, read as `_assign` wrote it."""
    parts = dotted.split(".")
    target = point
    for i, part in enumerate(parts[:-1]):
        if not isinstance(target.get(part), dict):
            return target[".".join(parts[i:])]
        target = target[part]
    return target[parts[-1]]


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _axes(spec: Spec) -> list[list[str]]:
    """The sweep's axes: one per swept key, one per `together` group."""
    grouped = {key for group in spec.together for key in group}
    axes: list[list[str]] = []
    for key in spec.sweeps:
        if key not in grouped:
            axes.append([key])
        elif any(group[0] == key for group in spec.together):
            axes.append(next(group for group in spec.together if group[0] == key))
    return axes


def count(spec: Spec) -> int:
    """How many points `expand` yields (repeats included), without expanding."""
    n = spec.repeats
    for axis in _axes(spec):
        n *= len(spec.sweeps[axis[0]])
    return n


def expand(spec: Spec) -> Iterator[dict[str, Any]]:
    """Every point of the matrix, in spec order, repeats innermost."""
    axes = _axes(spec)
    values = [list(zip(*(spec.sweeps[k] for k in axis), strict=True)) for axis in axes]
    for combo in itertools.product(*values):
        point = _deep_copy(spec.base)
        for axis, chosen in zip(axes, combo, strict=True):
            for key, value in zip(axis, chosen, strict=True):
                _assign(point, key, value)
        _substitute(point)
        for repeat in range(spec.repeats):
            yield {**_deep_copy(point), "repeat": repeat}


def _substitute(point: dict[str, Any]) -> None:
    """'{vcpus}' in a workload argument stands for the point's vCPU count."""
    vcpus = point["machine"]["vcpus"]
    for key, value in point["workload"]["args"].items():
        if isinstance(value, str) and "{vcpus}" in value:
            text = value.replace("{vcpus}", str(vcpus))
            point["workload"]["args"][key] = int(text) if text.isdigit() else text


def check_point(spec: Spec, point: dict[str, Any]) -> None:
    """Checks that depend on several keys at once, made before anything builds."""
    _check_kernel(spec, point["kernel"])
    machine = point["machine"]
    arch, vcpus = machine["arch"], machine["vcpus"]
    where = f"{spec.path}: [machine]"
    if vcpus > MAX_VCPUS[arch]:
        hint = " (use arch = 'arm64' for up to 512)" if arch == "x86_64" else ""
        raise SpecError(f"{where} vcpus: {vcpus} is above the {arch} limit of "
                        f"{MAX_VCPUS[arch]}{hint}")
    if machine["reproducible"] and machine["tcg"] == "multi":
        raise SpecError(f"{where} reproducible: needs tcg = 'single' (or reproducible = false)")
    if machine["quantum"] and machine["tcg"] == "multi":
        raise SpecError(f"{where} quantum: the vCPU switch needs tcg = 'single' "
                        "(or quantum = 0)")
    nodes = machine["numa"]
    if nodes:
        total = sum(parse_size(n["size"]) for n in nodes)
        if total != parse_size(machine["memory"]):
            raise SpecError(f"{where} numa: node sizes add up to {total >> 20} MiB, memory is "
                            f"{parse_size(machine['memory']) >> 20} MiB")
        seen: list[int] = []
        for node in nodes:
            seen.extend(parse_cpus(str(node["cpus"])) if "cpus" in node else [])
        if sorted(seen) != list(range(vcpus)):
            raise SpecError(f"{where} numa: the nodes' cpus must cover 0-{vcpus - 1} exactly once")
        _check_storage(spec, point)
    if machine["backend"] == "gem5":
        _check_gem5(spec, point)
    plugin = point["plugin"]
    if plugin["nvmain_trace"] and not (plugin["enabled"] and plugin["mode"] == "full"):
        raise SpecError(f"{spec.path}: [plugin] nvmain_trace: the trace comes from the cache "
                        "model (set enabled = true and mode = 'full')")
    if plugin["nvmain_clock"] != "instructions" and not plugin["nvmain_trace"]:
        raise SpecError(f"{spec.path}: [plugin] nvmain_clock: times the NVMain trace, which "
                        "is off (set nvmain_trace = true)")
    membind = point["workload"]["membind"]
    if membind >= max(1, len(nodes)):
        raise SpecError(f"{spec.path}: [workload] membind: node {membind} does not exist "
                        f"(the machine has {max(1, len(nodes))} NUMA node(s))")
    check_args(spec.path, point["workload"]["name"], point["workload"]["args"])


# The lab fragment that carries the pmem driver; its options are what a storage node needs.
PMEM_FRAGMENT = "pmem"


def _check_storage(spec: Spec, point: dict[str, Any]) -> None:
    """A storage node (memory_layout.STORAGE) is guest RAM that the kernel's pmem driver makes
    the workload's disk."""
    machine = point["machine"]
    storage = [i for i, node in enumerate(machine["numa"]) if node.get("device") == STORAGE]
    if not storage:
        return
    where = f"{spec.path}: [machine] numa[{storage[0]}] device = '{STORAGE}':"
    if len(storage) > 1:
        raise SpecError(f"{where} the machine may have one storage node (numa[{storage[1]}] is "
                        "another)")
    if "cpus" in machine["numa"][storage[0]]:
        raise SpecError(f"{where} a storage node holds no CPUs (remove its cpus)")
    if machine["arch"] != "x86_64":
        raise SpecError(f"{where} the kernel takes legacy persistent memory (memmap=!) on "
                        "x86_64 only (set arch = 'x86_64')")
    request = kernel.KernelRequest(point["kernel"]["variant"], machine["arch"],
                                   tuple(point["kernel"]["fragments"]))
    options = kernel.requested_config(request)
    fragment = KERNEL_PATCHES / kernel.BASE_LAYER / "config" / f"{PMEM_FRAGMENT}.config"
    needed = kernel.requested_options(fragment.read_text())
    if any(options.get(name) != value for name, value in needed.items()):
        raise SpecError(f"{where} the kernel needs the pmem driver ({', '.join(needed)}): "
                        f"add \"{PMEM_FRAGMENT}\" to [kernel] fragments")
    if point["workload"]["fs"] != "ext2":
        raise SpecError(f"{where} it is the workload's disk (set [workload] fs = 'ext2')")
    if point["workload"]["membind"] == storage[0]:
        raise SpecError(f"{spec.path}: [workload] membind: node {storage[0]} is the storage "
                        "node, which has no memory of its own")


def _check_kernel(spec: Spec, kernel_section: dict[str, Any]) -> None:
    """The variant names a series under kernel-patches/ and each fragment a file the kernel
    builder finds (by name: no paths)."""
    where = f"{spec.path}: [kernel]"
    variant = kernel_section["variant"]
    try:
        kernel.variant_layers(variant)
    except LabError as error:
        raise SpecError(f"{where} variant: {error}") from error
    for name in kernel_section["fragments"]:
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise SpecError(f"{where} fragments: {name!r} is not a fragment name (a file "
                            "<name>.config of kernel-patches/<variant>/ or kernel-patches/lab/"
                            "config/, given without a path)")
        try:
            kernel.fragment_path(name, variant)
        except LabError as error:
            raise SpecError(f"{where} fragments: {error}") from error


GEM5_MAX_MEMORY = 3 << 30
# gem5's X86Board describes its cores in Intel MP tables with 8-bit local APIC ids 0..n-1 and
# gives the I/O APIC id n; 255 is the broadcast id and gem5's x86 APIC has no x2APIC mode.
GEM5_MAX_CORES = 254
# gem5's Arm board on VExpress_GEM5_Foundation: its GICv3 serves at most 256 CPUs (Gicv3
# cpu_max, 256 redistributors in its 32 MiB window) and a CPU's MPIDR Aff0 is its id (< 256).
GEM5_ARM_MAX_CORES = 256


def _check_gem5(spec: Spec, point: dict[str, Any]) -> None:
    """What the gem5 tier's boards can run (gem5-configs/README.md says why)."""
    machine, workload = point["machine"], point["workload"]
    where = f"{spec.path}: [machine] backend = 'gem5':"
    if machine["arch"] == "x86_64":
        if parse_size(machine["memory"]) > GEM5_MAX_MEMORY:
            raise SpecError(f"{where} gem5's x86 board maps at most 3 GiB (set memory <= '3G')")
        if machine["vcpus"] > GEM5_MAX_CORES:
            raise SpecError(f"{where} gem5's x86 board numbers its APICs with 8-bit ids (Intel "
                            f"MP tables, no x2APIC): at most {GEM5_MAX_CORES} cores (set vcpus "
                            f"<= {GEM5_MAX_CORES})")
    elif machine["vcpus"] > GEM5_ARM_MAX_CORES:
        raise SpecError(f"{where} gem5's Arm board (VExpress_GEM5_Foundation, GICv3) serves at "
                        f"most {GEM5_ARM_MAX_CORES} cores (set vcpus <= {GEM5_ARM_MAX_CORES})")
    if workload["fs"] != "tmpfs":
        raise SpecError(f"{where} the root disk is the only disk under gem5 (set [workload] "
                        "fs = 'tmpfs')")
    if workload["membind"] >= 0:
        raise SpecError(f"{where} the guest sees no NUMA nodes under gem5 (set [workload] "
                        "membind = -1)")
