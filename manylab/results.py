"""The study table: one row per point folder, rebuilt from the folders (never edited in place)."""

from __future__ import annotations

import csv
import fnmatch
import io
import json
from pathlib import Path
from typing import Any

from manylab import atomic, pointdir

TABLE_FILE = "results.csv"
FIRST_COLUMNS = ["point", "status", "reason", "timing.total_s", "timing.boot_s"]


def flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested dicts become dotted keys; lists of numbers stay as JSON text in one cell."""
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list):
        out[prefix] = json.dumps(value, separators=(",", ":"))
    else:
        out[prefix] = value


def point_row(point_dir: Path) -> dict[str, Any] | None:
    found = pointdir.read(point_dir)
    if found is None:
        return None
    result = found.result
    row: dict[str, Any] = {"point": result["point"], "status": result["status"],
                           "reason": result["reason"] or ""}
    flatten({"timing": result["timing"]}, "", row)
    params = found.params
    flatten(params, "", row)
    if len(found.outputs) == 1:
        flatten(found.outputs[0], "result", row)
    else:
        for index, output in enumerate(found.outputs):
            flatten(output, f"result{index}", row)
    if found.stats is not None:
        patterns = params.get("plugin", {}).get("functions", [])
        row.update(stats_columns(found.stats, patterns))
    return row


def stats_columns(stats: dict[str, Any], patterns: list[str]) -> dict[str, Any]:
    """The plugin's figures for the table: its summary and its vCPU interleaving under
    `stats.`, and the per-function columns of the spec's plugin.functions patterns."""
    columns: dict[str, Any] = {}
    if isinstance(stats.get("summary"), dict):
        for name, value in stats["summary"].items():
            columns[f"stats.{name}"] = value
        columns.update(function_columns(stats, patterns))
    if isinstance(stats.get("interleave"), dict):
        flatten(stats["interleave"], "stats.interleave", columns)
    return columns


FUNCTION_METRICS = ("insts", "coh.msgs", "l1d.misses")


def function_columns(stats: dict[str, Any], patterns: list[str],
                     region: str = "roi") -> dict[str, Any]:
    """Per pattern, the region's function figures summed over the functions it matches; under
    `paths.`, the same summed over every function any pattern matches (each counted once); and
    the hottest line's coherence messages (functions outside the plugin's list count 0)."""
    found = stats.get("regions", {}).get(region, {})
    functions = found.get("functions", [])
    columns: dict[str, Any] = {}
    listed: dict[str, dict[str, Any]] = {}
    for pattern in patterns:
        matched = [f for f in functions if fnmatch.fnmatchcase(str(f.get("name", "")), pattern)]
        listed.update((str(f.get("name")), f) for f in matched)
        for metric in FUNCTION_METRICS:
            columns[f"fn.{pattern}.{metric}"] = sum(int(f.get(metric, 0)) for f in matched)
    if patterns:
        for metric in FUNCTION_METRICS:
            columns[f"paths.{metric}"] = sum(int(f.get(metric, 0)) for f in listed.values())
    lines = found.get("hot_lines", [])
    if lines:
        top = max(lines, key=lambda line: int(line.get("coh.msgs", 0)))
        columns[f"hotline.{region}.coh.msgs"] = top.get("coh.msgs", 0)
        columns[f"hotline.{region}.symbol"] = top.get("symbol", "") or top.get("paddr", "")
    return columns


def rows(study_dir: Path) -> list[dict[str, Any]]:
    found = []
    for point_dir in pointdir.list_points(study_dir):
        row = point_row(point_dir)
        if row is not None:
            found.append(row)
    return found


def write_table(study_dir: Path) -> Path:
    table = rows(study_dir)
    columns = list(FIRST_COLUMNS)
    for row in table:
        columns += [key for key in row if key not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, restval="", lineterminator="\n")
    writer.writeheader()
    for row in table:
        writer.writerow(row)
    path = study_dir / TABLE_FILE
    atomic.write_text(path, buffer.getvalue())
    return path
