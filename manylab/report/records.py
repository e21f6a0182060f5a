"""A study's records: one per MANYLAB-RESULT line of every point, with the point's parameters.

A record is a flat dict: `point`, `status`, `reason`, `line` (the result line's index in its
point), every parameter as a dotted key (`machine.vcpus`, `workload.args.path`, `repeat`), the
result line's fields under `result.` (`result.throughput_mib_s`, `result.latency_us.mean`), the
plugin's summary under `stats.`, the kernel counters' changes under `kstat.`, and `timing.*`. A
point that printed no result line still gives one record (its status and reason), so failures
show in every table.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from manylab import pointdir
from manylab.params import SCHEMA, with_stored_defaults
from manylab.results import SETTING_PREFIXES, flatten, measured_columns

Record = dict[str, Any]


@dataclass(frozen=True)
class Study:
    name: str
    directory: Path
    records: list[Record]
    inputs: list[dict[str, Any]]  # every point's inputs.json, in point order
    settings: dict[str, Any]  # the spec's [report] section, defaults filled in


def point_records(point_dir: Path) -> list[Record]:
    """The records of one complete point folder (none if it has no result.json)."""
    found = pointdir.read(point_dir)
    if found is None:
        return []
    result = found.result
    base: Record = {"point": result.get("point", point_dir.name),
                    "status": result.get("status", "failed"),
                    "reason": result.get("reason") or ""}
    flatten({"timing": result.get("timing", {})}, "", base)
    flatten(with_stored_defaults(found.params), "", base)
    base.update(measured_columns(found))
    if not found.outputs:
        return [{**base, "line": 0}]
    records = []
    for index, output in enumerate(found.outputs):
        record = {**base, "line": index}
        flatten(output, "result", record)
        records.append(record)
    return records


def load(study_dir: Path) -> Study:
    records: list[Record] = []
    inputs: list[dict[str, Any]] = []
    for point_dir in pointdir.list_points(study_dir):
        found = point_records(point_dir)
        if found:
            record = pointdir.read_json(point_dir / pointdir.INPUTS)
            if isinstance(record, dict):
                inputs.append(record)
        records.extend(found)
    return Study(study_dir.name, study_dir, records, inputs, report_settings(inputs))


def report_settings(inputs: list[dict[str, Any]]) -> dict[str, Any]:
    """The spec's [report] section over the defaults: from the spec file the points name when
    it still exists (so [report] edits apply without rerunning), else as the points recorded it."""
    settings = {key: field.default for key, field in SCHEMA["report"].items()}
    for record in inputs:
        spec = record.get("spec", {})
        given = spec.get("table", {}).get("report", {})
        path = Path(str(spec.get("path", "")))
        if spec.get("path") and path.is_file():
            try:
                given = tomllib.loads(path.read_text()).get("report", {})
            except tomllib.TOMLDecodeError:
                pass
        if isinstance(given, dict):
            settings.update({k: v for k, v in given.items() if k in settings})
    return settings


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def param_keys(records: list[Record]) -> list[str]:
    """The parameter columns, in first-seen order."""
    keys: list[str] = []
    for record in records:
        keys += [k for k in record if k.startswith(SETTING_PREFIXES) and k not in keys]
    return keys


def varying(records: list[Record], keys: list[str]) -> list[str]:
    """The keys among `keys` that take more than one value across the records."""
    out = []
    for key in keys:
        values = {json.dumps(r.get(key), sort_keys=True) for r in records}
        if len(values) > 1:
            out.append(key)
    return out


def swept_params(records: list[Record]) -> list[str]:
    """Parameters that differ between points (the study's sweeps), the repeat index excluded."""
    return varying(records, param_keys(records))


def numeric_columns(records: list[Record], prefix: str) -> list[str]:
    """Columns under `prefix` that hold a number in at least one record (and never text)."""
    seen: dict[str, bool] = {}
    for record in records:
        for key, value in record.items():
            if not key.startswith(prefix):
                continue
            ok = is_number(value) or value is None
            seen[key] = seen.get(key, True) and ok
    return [k for k, ok in seen.items()
            if ok and any(is_number(r.get(k)) for r in records)]


def ok_records(records: list[Record]) -> list[Record]:
    """Records of points that succeeded and whose line says ok (if it says)."""
    return [r for r in records if r.get("status") == "ok" and r.get("result.ok", True) is True]
