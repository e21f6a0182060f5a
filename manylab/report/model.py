"""What a plot set hands to the page writer: sections of text, figures and tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manylab.report.plots import Figure
from manylab.report.records import Record


@dataclass(frozen=True)
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    listings: list[tuple[str, str]] = field(default_factory=list)  # (caption, verbatim text)
    links: list[tuple[str, str]] = field(default_factory=list)  # (text, relative href)


@dataclass(frozen=True)
class Context:
    """One plot set's input: the records of its workload and where to save figures."""
    workload: str
    records: list[Record]       # every record of the workload, failed ones included
    swept: list[str]            # parameters that differ between its points
    out_dir: Path
    settings: dict[str, Any] = field(default_factory=dict)  # the spec's [report] section
    study_dir: Path | None = None  # the points' folders (stats.json, inputs.json)


def cell(value: object) -> str:
    """A table cell: numbers to 4 significant digits, None empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
