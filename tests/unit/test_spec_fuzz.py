"""Generated specs, well-formed and not: `plan` answers each with its points or with one
line naming the file, never a traceback or a hang."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from manylab import keys, params, plan
from manylab import spec as specs
from manylab.errors import LabError
from manylab.workloads import REGISTRY
from tests.toml_text import toml_value

SIZES = ["0", "1K", "4M", "512M", "2G", "-4M", "big", "1.5G", "{vcpus}M"]
WORDS = ["stock", "finerlru", "../../etc", "/etc/passwd", "debug", "knl-64", "knl-65",
         "tiny-4", "x86_64", "arm64", "seq", "rand", "auto", "cycles", "", "{vcpus}"]

scalars = st.one_of(st.integers(-3, 300), st.booleans(), st.sampled_from(SIZES + WORDS))
values = st.one_of(scalars, st.lists(scalars, min_size=1, max_size=3))
set_tables = st.dictionaries(st.sampled_from(["l2.size_kib", "bw.behind_epochs", "nosuch",
                                              "core.cpi", "hot_lines"]),
                             st.one_of(scalars, st.lists(st.integers(1, 64), min_size=1,
                                                         max_size=3)), max_size=2)


@st.composite
def spec_texts(draw: st.DrawFn) -> str:
    workload = draw(st.sampled_from([*sorted(REGISTRY), "nosuch"]))
    sections: dict[str, dict[str, Any]] = {"workload": {"name": workload}}
    for section, fields in params.SCHEMA.items():
        keys = draw(st.lists(st.sampled_from([*fields, "nosuch"]), max_size=3, unique=True))
        for key in keys:
            if key in ("name", "args", "numa", "set", "sysctl", "together", "functions"):
                continue
            sections.setdefault(section, {})[key] = draw(values)
    if draw(st.booleans()):
        sections["plugin"] = {**sections.get("plugin", {}), "set": draw(set_tables)}
    if draw(st.booleans()):
        args = REGISTRY.get(workload)
        names = [*args.args] if args else []
        chosen = draw(st.lists(st.sampled_from([*names, "nosuch"]), max_size=3, unique=True))
        sections["workload"]["args"] = {k: draw(values) for k in chosen}
    lines = []
    for section, fields in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in fields.items()]
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=5000, suppress_health_check=[HealthCheck.too_slow])
@given(spec_texts())
def test_plan_answers_any_spec_with_points_or_one_line(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.toml"
        path.write_text(text)
        try:
            points = plan.points(specs.load(path))
        except LabError as error:
            message = str(error)
            assert "\n" not in message and str(path) in message, (text, message)
        else:
            assert 1 <= len(points) <= keys.MAX_POINTS
