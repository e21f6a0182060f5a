"""The study table: one row per point folder, rebuilt from the folders (never edited in place),
written as results.csv and results.parquet, and loaded as a pandas DataFrame by `load`."""

from __future__ import annotations

import csv
import fnmatch
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd

from manylab import atomic, kstats, pointdir

TABLE_FILE = "results.csv"
PARQUET_FILE = "results.parquet"
# A point's settings (what a report compares), and with the repeat index its parameters.
SETTING_PREFIXES = ("kernel.", "machine.", "workload.", "plugin.", "gem5.")
PARAM_PREFIXES = (*SETTING_PREFIXES, "repeat")
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
    row.update(measured_columns(found))
    return row


def measured_columns(found: pointdir.PointFiles) -> dict[str, Any]:
    """A point's per-point figures: the plugin's or gem5's (`stats.*`, `fn.*`, `paths.*`,
    `hotline.*`) and the kernel counters' changes (`kstat.*`)."""
    columns: dict[str, Any] = {}
    if found.stats is not None:
        patterns = found.params.get("plugin", {}).get("functions", [])
        columns.update(stats_columns(found.stats, patterns))
    if found.kstats is not None:
        columns.update(kstats.columns(found.kstats))
    return columns


def stats_columns(stats: dict[str, Any], patterns: list[str]) -> dict[str, Any]:
    """The plugin's figures for the table: its summary and its vCPU interleaving under
    `stats.`, and the per-function columns of the spec's plugin.functions patterns."""
    columns: dict[str, Any] = {}
    if isinstance(stats.get("summary"), dict):
        summary = stats["summary"]
        for name, value in summary.items():
            new_name = renamed_summary_key(name)
            if new_name != name and new_name in summary:
                continue
            columns[f"stats.{new_name}"] = value
        columns.update(function_columns(stats, patterns))
    if isinstance(stats.get("interleave"), dict):
        flatten(stats["interleave"], "stats.interleave", columns)
    return columns


def renamed_summary_key(name: str) -> str:
    """The current name of a summary key that older stats files (schema manylab-stats/1)
    wrote under another name: `<region>.mem.time_ns` and `<region>.mem.<dev>.time_ns` are a
    sum of device service times, since schema 2 `mem.service_ns` / `mem.<dev>.service_ns`."""
    head, sep, tail = name.rpartition(".mem.")
    if sep and tail in ("time_ns", "dram.time_ns", "mcdram.time_ns", "pcm.time_ns"):
        return f"{head}.mem.{tail.removesuffix('time_ns')}service_ns"
    return name


FUNCTION_METRICS = ("insts", "coh.msgs", "l1d.misses", "cycles", "wait_cycles")


def function_columns(stats: dict[str, Any], patterns: list[str],
                     region: str = "roi") -> dict[str, Any]:
    """Per pattern, the region's function figures (instructions, messages, misses, modelled
    cycles and the causal clock's wait cycles) summed over the functions it matches; under
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
            columns[f"fn.{pattern}.{metric}"] = sum(round(f.get(metric, 0)) for f in matched)
    if patterns:
        for metric in FUNCTION_METRICS:
            columns[f"paths.{metric}"] = sum(round(f.get(metric, 0)) for f in listed.values())
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


def ordered_columns(table: list[dict[str, Any]]) -> list[str]:
    columns = list(FIRST_COLUMNS)
    for row in table:
        columns += [key for key in row if key not in columns]
    return columns


def frame(table: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as a DataFrame; a column holding both numbers and text (a size given as 4M in
    one point and 4096 in another) becomes text, so Parquet can store it."""
    df = pd.DataFrame(table, columns=ordered_columns(table) if table else FIRST_COLUMNS)
    for name in df.columns:
        column = df[name]
        if column.dtype == object:
            kinds = {type(v) for v in column if v is not None and v == v}
            if len(kinds) > 1:
                df[name] = column.map(lambda v: None if v is None or v != v else str(v))
    df.attrs["swept"] = swept_keys(df)
    return df


def swept_keys(df: pd.DataFrame) -> list[str]:
    """The spec keys whose value differs between points (the study's sweep)."""
    return [name for name in df.columns if name.startswith(PARAM_PREFIXES)
            and df[name].astype(str).nunique(dropna=False) > 1]


def load(study: str | Path) -> pd.DataFrame:
    """A study's finished points, one row each: the point id, status and timings, every spec
    key (dotted, e.g. `machine.vcpus`), the workload's result (`result.*`) and the plugin's or
    gem5's figures (`stats.*`, `fn.*`). `df.attrs["swept"]` lists the keys the study sweeps.
    Reads the point folders, so it is current even when results.csv is not."""
    study_dir = Path(study)
    if not study_dir.is_dir():
        raise FileNotFoundError(f"{study_dir}: no such study folder (run `manylab run SPEC` "
                                "first; results live in runs/<study>/)")
    return frame(rows(study_dir))


def write_table(study_dir: Path) -> Path:
    """results.csv (and results.parquet beside it) from the point folders; returns the CSV."""
    table = rows(study_dir)
    columns = ordered_columns(table)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, restval="", lineterminator="\n")
    writer.writeheader()
    for row in table:
        writer.writerow(row)
    path = study_dir / TABLE_FILE
    atomic.write_text(path, buffer.getvalue())
    staged = study_dir / f".{PARQUET_FILE}.tmp"
    frame(table).to_parquet(staged, index=False)
    staged.replace(study_dir / PARQUET_FILE)
    return path
