"""What a spec key is: its type, default, whether a list sweeps it, its allowed values and
check, and its documentation. manylab/params.py declares every key once with `key()`;
spec.SCHEMA and the typed point parameters are both read off that declaration."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from manylab.units import parse_size

# Guest instructions per vCPU turn by default (measured choice: README, "Interleaving").
DEFAULT_QUANTUM = 1000
MAX_REPEATS = 1000
# More points than this in one study is a typo, not a study (the papers' full profiles are
# hundreds; planning 10,000 takes seconds).
MAX_POINTS = 10_000
MIN_MEMORY = 64 << 20
_NO_DEFAULT = object()


@dataclass(frozen=True)
class Field:
    kind: type | tuple[type, ...]
    default: Any
    sweep: bool = True
    choices: tuple[Any, ...] = ()
    check: Callable[[Any], str | None] | None = None
    doc: str = ""
    typed: Callable[[Any], Any] | None = None  # the spec value -> the typed parameter's value


def key(kind: type | tuple[type, ...], default: Any, *, sweep: bool = True,
        choices: tuple[Any, ...] = (), check: Callable[[Any], str | None] | None = None,
        doc: str = "", typed: Callable[[Any], Any] | None = None,
        stored_default: Any = _NO_DEFAULT) -> Any:
    """A dataclass field declaring one spec key. `stored_default` is what a point stored
    before the key existed reads as (its inputs.json lacks the key); without it the key is
    required when a stored point is read."""
    metadata = {"spec": Field(kind, default, sweep, choices, check, doc, typed)}
    if stored_default is _NO_DEFAULT:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=stored_default, metadata=metadata)


def schema_of(kind: type) -> dict[str, Field]:
    """The spec keys a section's dataclass declares, in declaration order."""
    return {f.name: f.metadata["spec"]
            for f in dataclasses.fields(kind)}


def size_check(value: Any) -> str | None:
    try:
        parse_size(value)
    except ValueError as error:
        return str(error)
    return None


def baseline_check(value: Any) -> str | None:
    name, sep, _ = str(value).partition("=")
    if value and (not sep or name.split(".", 1)[0] not in ("kernel", "machine", "workload")):
        return "must be 'section.key=value', e.g. 'kernel.cmdline=finer_lru.factor=1'"
    return None


def positive(value: Any) -> str | None:
    return None if value >= 1 else "must be at least 1"


def repeats_check(value: Any) -> str | None:
    if value < 1 or value > MAX_REPEATS:
        return f"must be 1 to {MAX_REPEATS}"
    return None


def memory_check(value: Any) -> str | None:
    error = size_check(value)
    if error is None and parse_size(value) < MIN_MEMORY:
        return f"{value!r} is below the {MIN_MEMORY >> 20} MiB a guest needs"
    return error


def power_of_two_line(value: Any) -> str | None:
    if value < 64 or value & (value - 1):
        return "must be a power of two of at least 64 (one cache line)"
    return None


def quantum_outside_check(value: Any) -> str | None:
    if value == "auto" or (isinstance(value, int) and value >= 0):
        return None
    return "expected 'auto' or a whole number >= 0"


def not_negative(value: Any) -> str | None:
    return None if value >= 0 else "must be 0 or more"
