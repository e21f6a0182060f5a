"""Plot sets by workload kind: a registry from the workload name to what to draw.

A plot set is a function (Context) -> list[Section] plus the columns its records table shows.
`plot_set(name)` returns the registered one, or the generic set (every numeric result column
against the swept key). The cross-workload sections (kernel lock paths, the plugin's
`stats.*` figures) are in manylab/report/sections/.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from manylab.report.model import Context, Section
from manylab.report.records import Record


@dataclass(frozen=True)
class PlotSet:
    name: str
    sections: Callable[[Context], list[Section]]
    columns: Callable[[list[Record], list[str]], list[str]]  # (records, swept) -> table columns
    case: tuple[str, ...] = ()  # result fields naming a line of a multi-line point (else "line")


REGISTRY: dict[str, PlotSet] = {}


def register(plot_set: PlotSet) -> PlotSet:
    REGISTRY[plot_set.name] = plot_set
    return plot_set


def plot_set(workload: str) -> PlotSet:
    _load_builtin()
    return REGISTRY.get(workload, REGISTRY["generic"])


BUILTIN = ("contention", "forkbench", "generic", "mmf", "mobileapps", "modelled_ops", "pwriter",
           "serialprobe", "stream")


def _load_builtin() -> None:
    """Import the built-in plot sets (each registers itself)."""
    import importlib

    for name in BUILTIN:
        importlib.import_module(f"manylab.report.kinds.{name}")
