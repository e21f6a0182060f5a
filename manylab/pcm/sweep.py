"""Sweep configuration, running the simulator, and shaping its output into a results table."""

from __future__ import annotations

import csv
import math
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manylab.errors import LabError
from manylab.pcm import engine

POLICIES = ("lru", "2q", "fgbg", "clock-dwf")
DEFAULT_MEM = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

TABLE_COLUMNS = (
    "trace",
    "policy",
    "mem_frac",
    "dram_share",
    "frames",
    "dram_frames",
    "pcm_frames",
    "footprint",
    "requests",
    "fg_requests",
    "hit_ratio",
    "fg_hit_ratio",
    "time",
    "fg_time",
    "fg_storage_share",
    "energy_nj",
    "time_vs_lru",
    "fg_time_vs_lru",
    "energy_vs_lru",
    "dram_hits",
    "pcm_hits",
    "on_dram",
    "fg_on_dram",
    "to_dram",
    "to_pcm",
    "evictions",
    "writebacks",
    "fg_victims",
    "pcm_writes",
    "wear_max",
    "wear_mean",
    "lifetime_s",
    "lifetime_ideal_s",
    "time_model",
    "energy_model",
)


class ConfigError(LabError, ValueError):
    """A sweep configuration is invalid."""


@dataclass
class SweepConfig:
    """One sweep over one trace (a file, or a generated synthetic trace)."""

    trace: Path | None = None
    gen: str | None = None
    gen_set: dict[str, str] = field(default_factory=dict)
    policies: list[str] = field(default_factory=lambda: list(POLICIES))
    mem: list[float] = field(default_factory=lambda: list(DEFAULT_MEM))
    mem_pages: list[int] = field(default_factory=list)
    dram_share: list[float] = field(default_factory=lambda: [0.05])
    time_model: str = "paper"
    energy_model: str = "table1"
    model_file: Path | None = None
    set: list[str] = field(default_factory=list)

    def validate(self) -> None:
        if (self.trace is None) == (self.gen is None):
            raise ConfigError("give exactly one of a trace file or a generator (trace1, trace2)")
        if self.gen is not None and self.gen not in ("trace1", "trace2"):
            raise ConfigError(f"unknown generator '{self.gen}' (trace1, trace2)")
        for p in self.policies:
            if p not in POLICIES:
                raise ConfigError(f"unknown policy '{p}' (known: {', '.join(POLICIES)})")
        if not self.policies:
            raise ConfigError("no policies")
        if not self.mem and not self.mem_pages:
            raise ConfigError("no memory sizes")
        for m in self.mem:
            if not m > 0:
                raise ConfigError(f"memory fraction must be > 0 (got {m})")
        for s in self.dram_share:
            if not 0 <= s <= 1:
                raise ConfigError(f"DRAM share must be in [0, 1] (got {s})")

    def label(self) -> str:
        if self.trace is not None:
            return self.trace.name
        seed = self.gen_set.get("seed", "1")
        return f"{self.gen}(seed={seed})"

    def argv(self) -> list[str]:
        """Arguments of ``manylab-pcmsim run`` for this sweep."""
        self.validate()
        a: list[str] = ["run"]
        if self.trace is not None:
            a += ["--trace", str(self.trace)]
        else:
            a += ["--gen", str(self.gen)]
            for k, v in self.gen_set.items():
                a += ["--gen-set", f"{k}={v}"]
        a += ["--policies", ",".join(self.policies)]
        if self.mem:
            a += ["--mem", ",".join(f"{m:g}" for m in self.mem)]
        if self.mem_pages:
            a += ["--mem-pages", ",".join(str(m) for m in self.mem_pages)]
        a += ["--dram-share", ",".join(f"{s:g}" for s in self.dram_share)]
        if self.model_file is not None:
            a += ["--model-file", str(self.model_file)]
        else:
            a += ["--time-model", self.time_model, "--energy-model", self.energy_model]
        for s in self.set:
            a += ["--set", s]
        return a

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any], base: Path | None = None) -> SweepConfig:
        """Build from a TOML table; relative paths resolve against ``base``."""
        known = set(cls.__dataclass_fields__)
        for k in d:
            if k not in known:
                raise ConfigError(f"unknown key '{k}' (known: {', '.join(sorted(known))})")

        def path(v: Any) -> Path | None:
            if v is None:
                return None
            p = Path(str(v))
            return p if p.is_absolute() or base is None else base / p

        c = cls(
            trace=path(d.get("trace")),
            gen=d.get("gen"),
            gen_set={str(k): str(v) for k, v in dict(d.get("gen_set", {})).items()},
            policies=[str(p) for p in d.get("policies", POLICIES)],
            mem=[float(m) for m in d.get("mem", [] if "mem_pages" in d else DEFAULT_MEM)],
            mem_pages=[int(m) for m in d.get("mem_pages", [])],
            dram_share=[float(s) for s in d.get("dram_share", [0.05])],
            time_model=str(d.get("time_model", "paper")),
            energy_model=str(d.get("energy_model", "table1")),
            model_file=path(d.get("model_file")),
            set=[str(s) for s in d.get("set", [])],
        )
        c.validate()
        return c

    @classmethod
    def from_toml(cls, path: Path) -> SweepConfig:
        with path.open("rb") as f:
            data = tomllib.load(f)
        table = data.get("pcm", data)
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [pcm] must be a table")
        return cls.from_mapping(table, base=path.parent)


def run_sweep(cfg: SweepConfig, jsonl_path: Path | None = None) -> list[dict[str, Any]]:
    """Run the simulator for ``cfg``; return all JSON objects it printed."""
    args = cfg.argv()
    if jsonl_path is not None:
        engine.run(args, stdout_path=jsonl_path)
        return engine.parse_jsonl(jsonl_path.read_text())
    return engine.parse_jsonl(engine.run(args))


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) else math.nan


def _ratio_or_nan(a: float, b: float) -> float:
    return a / b if b and not math.isnan(b) else math.nan


def _mean(values: Iterable[Any]) -> float:
    """The mean of the numbers among `values` (NaN and non-numbers left out), NaN if none."""
    vals = [_num(v) for v in values if not math.isnan(_num(v))]
    return sum(vals) / len(vals) if vals else math.nan


def shape(objs: Iterable[Mapping[str, Any]], trace: str | None = None) -> list[dict[str, Any]]:
    """Point objects -> table rows with the columns of ``TABLE_COLUMNS``.

    ``*_vs_lru`` columns divide by the LRU point of the same trace, memory size and DRAM share
    (NaN when the sweep has no LRU point there). ``trace`` overrides the trace label.
    """
    rows: list[dict[str, Any]] = []
    for o in objs:
        if o.get("type") != "point":
            continue
        row = {c: o.get(c) for c in TABLE_COLUMNS}
        by_model = o.get("fg_time_by_model")
        row["fg_time_by_model"] = dict(by_model) if isinstance(by_model, Mapping) else {}
        fg_time = _num(o.get("fg_time"))
        row["fg_storage_share"] = (
            _num(o.get("fg_storage_time")) / fg_time if fg_time > 0 else math.nan
        )
        if trace is not None:
            row["trace"] = trace
        rows.append(row)

    def key(r: Mapping[str, Any]) -> tuple[Any, ...]:
        return (r["trace"], r["frames"], r["dram_share"])

    lru = {key(r): r for r in rows if r["policy"] == "lru"}
    for r in rows:
        base = lru.get(key(r))
        for col, src in (
            ("time_vs_lru", "time"),
            ("fg_time_vs_lru", "fg_time"),
            ("energy_vs_lru", "energy_nj"),
        ):
            r[col] = _ratio_or_nan(_num(r[src]), _num(base[src]) if base is not None else math.nan)
        base_by_model = base["fg_time_by_model"] if base is not None else {}
        r["fg_time_vs_lru_by_model"] = {
            name: _ratio_or_nan(_num(t), _num(base_by_model.get(name)))
            for name, t in r["fg_time_by_model"].items()
        }
    order = {p: i for i, p in enumerate(POLICIES)}
    rows.sort(
        key=lambda r: (
            str(r["trace"]),
            _num(r["dram_share"]),
            _num(r["frames"]),
            order.get(str(r["policy"]), 99),
        )
    )
    return rows


def time_readings(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The time model presets the simulator reported foreground time under, in its order."""
    names: dict[str, None] = {}
    for r in rows:
        names.update(dict.fromkeys(r.get("fg_time_by_model") or {}))
    return list(names)


def write_table(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """``TABLE_COLUMNS``, then ``fg_time_vs_lru.<preset>`` for every time model preset."""
    readings = time_readings(rows)
    columns = list(TABLE_COLUMNS) + [f"fg_time_vs_lru.{name}" for name in readings]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            out = {c: "" if r.get(c) is None else r.get(c) for c in TABLE_COLUMNS}
            by_model = r.get("fg_time_vs_lru_by_model") or {}
            out.update({f"fg_time_vs_lru.{n}": by_model.get(n, "") for n in readings})
            w.writerow(out)


@dataclass(frozen=True)
class PolicySummary:
    """One policy on one trace, averaged over the memory sizes of the sweep."""

    trace: str
    policy: str
    points: int
    mean_fg_time_vs_lru: float
    mean_energy_vs_lru: float
    mean_hit_ratio: float
    mean_fg_hit_ratio: float
    below_lru_hits: int  # points whose hit ratio is below LRU's
    below_2q_hits: int
    mean_fg_storage_share: float  # share of this policy's foreground time spent on storage
    # foreground time / LRU's under each time model preset (each a reading of the paper)
    mean_fg_time_vs_lru_by_model: dict[str, float]


def summarise(
    rows: Sequence[Mapping[str, Any]], dram_share: float | None = None
) -> list[PolicySummary]:
    """Average per (trace, policy) over memory sizes (at one DRAM share, default the first)."""
    if not rows:
        return []
    share = _num(rows[0]["dram_share"]) if dram_share is None else dram_share
    sel = [r for r in rows if math.isclose(_num(r["dram_share"]), share)]
    by_point: dict[tuple[Any, ...], dict[str, Mapping[str, Any]]] = {}
    for r in sel:
        by_point.setdefault((r["trace"], r["frames"]), {})[str(r["policy"])] = r
    out: list[PolicySummary] = []
    traces = sorted({str(r["trace"]) for r in sel})
    for t in traces:
        for p in POLICIES:
            pts = [r for r in sel if r["trace"] == t and r["policy"] == p]
            if not pts:
                continue

            def mean(col: str, pts: list[Mapping[str, Any]] = pts) -> float:
                return _mean([r[col] for r in pts])

            def below(other: str, p: str = p, t: str = t) -> int:
                n = 0
                for (tt, _), grp in by_point.items():
                    if tt == t and p in grp and other in grp:
                        if _num(grp[p]["hit_ratio"]) < _num(grp[other]["hit_ratio"]) - 1e-12:
                            n += 1
                return n

            out.append(
                PolicySummary(
                    t,
                    p,
                    len(pts),
                    mean("fg_time_vs_lru"),
                    mean("energy_vs_lru"),
                    mean("hit_ratio"),
                    mean("fg_hit_ratio"),
                    below("lru"),
                    below("2q"),
                    mean("fg_storage_share"),
                    {
                        name: _mean([(r.get("fg_time_vs_lru_by_model") or {}).get(name)
                                     for r in pts])
                        for name in time_readings(pts)
                    },
                )
            )
    return out
