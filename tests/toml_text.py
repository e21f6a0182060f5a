"""TOML text of Python values, for tests that write specs."""

from __future__ import annotations

import json
from typing import Any


def toml_value(value: Any) -> str:
    """A bool, number, string, list or table (dict) as a TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
