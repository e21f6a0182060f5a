"""Run points: a spec's matrix with a stable id for each point."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from manylab import keys
from manylab import spec as specs
from manylab.errors import LabError
from manylab.hashing import sha256_json
from manylab.params import SCHEMA, PointParams


@dataclass(frozen=True)
class Point:
    id: str
    params: dict[str, Any]  # as validated: what inputs.json records and the table flattens

    @functools.cached_property
    def config(self) -> PointParams:
        """The parameters typed, for the code that builds and runs the point."""
        return PointParams.from_dict(self.params)


def identity(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters that differ from the schema's defaults: what a point id hashes, so that
    a key added to the schema later (with a default) does not change existing ids."""
    kept: dict[str, Any] = {}
    for section, value in params.items():
        fields = SCHEMA.get(section)
        if fields is None or not isinstance(value, dict):
            kept[section] = value
            continue
        kept[section] = {key: item for key, item in value.items()
                         if key not in fields or item != fields[key].default}
    return kept


def point_id(params: dict[str, Any]) -> str:
    """Readable prefix + a hash of the point's non-default parameters: the same point keeps its
    id across edits of the spec that add or reorder other points."""
    kernel, machine, workload = params["kernel"], params["machine"], params["workload"]
    prefix = (f"{kernel['variant']}-{machine['arch']}-{machine['vcpus']}c-{workload['name']}"
              f"-r{params['repeat']}")
    return f"{prefix}-{sha256_json(identity(params))[:8]}"


def points(spec: specs.Spec) -> list[Point]:
    """Every point of the spec, checked; raises SpecError before anything builds."""
    total = specs.count(spec)
    if total > keys.MAX_POINTS:
        raise specs.SpecError(f"{spec.path}: {total:,} points (sweeps x repeats) is more than "
                              f"{keys.MAX_POINTS:,}: shorten the swept lists or split the study")
    result = []
    seen: set[str] = set()
    for params in specs.expand(spec):
        specs.check_point(spec, params)
        point = Point(point_id(params), params)
        if point.id not in seen:
            seen.add(point.id)
            result.append(point)
    check_machines(spec, result)
    return result


def find(spec: specs.Spec, point_id: str) -> Point:
    """The spec's point with this id (as `manylab plan` prints it)."""
    for point in points(spec):
        if point.id == point_id:
            return point
    raise LabError(f"{spec.path}: no point '{point_id}' (see manylab plan {spec.path})")


def check_machines(spec: specs.Spec, points: list[Point]) -> None:
    """The machine model of every point that uses one (the plugin's, or gem5's built from it):
    its preset, `set` keys and values and vCPU count, checked by the plugin's own parameter
    code (`manylab-machine`), once per distinct machine."""
    from manylab.backends.gem5 import machine  # the describer lives with the gem5 tier

    if not any(p.config.plugin.enabled or p.config.machine.backend == "gem5" for p in points):
        return
    machine.describer()  # a missing or stale build stops here, with its own fix
    checked: set[str] = set()
    for point in points:
        p = point.config
        if not (p.plugin.enabled or p.machine.backend == "gem5"):
            continue
        key = sha256_json([p.plugin.preset, p.machine.vcpus, dict(p.plugin.set)])
        if key in checked:
            continue
        checked.add(key)
        try:
            machine.describe(p.plugin.preset, p.machine.vcpus, dict(p.plugin.set))
        except LabError as error:
            raise specs.SpecError(f"{spec.path}: [plugin] {error}: fix preset or set "
                                  "(plugin/README.md, \"set. keys\")") from error


def swept_keys(spec: specs.Spec) -> list[str]:
    return list(spec.sweeps) + (["repeat"] if spec.repeats > 1 else [])


def describe(point: Point, keys: list[str]) -> str:
    """'machine.vcpus=4 workload.args.pattern=rand' for the swept keys of a point."""
    words = []
    for key in keys:
        value = specs.lookup(point.params, key)
        words.append(f"{key.split('.')[-1]}={value}")
    return " ".join(words)


def interleaved(points: list[Point]) -> list[Point]:
    """The points reordered so that those differing only in kernel settings run one after
    another (plan order otherwise): host-load drift during a study then falls on every kernel
    setting alike instead of on whichever the plan lists first."""
    first_seen: dict[str, int] = {}
    for point in points:
        rest = {k: v for k, v in point.params.items() if k != "kernel"}
        first_seen.setdefault(sha256_json(rest), len(first_seen))

    def group_index(point: Point) -> int:
        return first_seen[sha256_json({k: v for k, v in point.params.items() if k != "kernel"})]

    return sorted(points, key=group_index)
