"""The LDU thesis's workloads in modelled time (digest section 5): Exim messages (`smtpload`),
process creations (`lmproc`) and AIM7 jobs (`aim7`) per modelled second of the ROI, per
kernel setting and vCPU count, mean and 95% interval over the repeats, against the baseline
setting, with the causal clock's wait and idle shares; the thesis's speed-up at 120 cores
judged where the study ran 120 vCPUs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from manylab import pointdir
from manylab.errors import LabError
from manylab.report import smt_gain
from manylab.report.kinds import PlotSet, generic, register
from manylab.report.kinds.common import (
    MODELLED_TIME_NOTE,
    baseline,
    first_lines,
    modelled_rate,
    no_points,
)
from manylab.report.model import Context, Section, Table
from manylab.report.published import LDU_SPEEDUP, Published
from manylab.report.records import Record, is_number, numeric_columns, ok_records
from manylab.report.stats import Summary, aggregate, gains, group, sort_key, summarize
from manylab.report.verdicts import gain_verdict, interval

X = "machine.vcpus"
TIME = "stats.roi.time.modelled_ns"
RATE = "modelled.ops_per_s"
PUBLISHED_CORES = 120
CYCLES, WAIT, IDLE, INSTS = ("stats.roi.time.cycles.sum", "stats.roi.time.wait",
                             "stats.roi.time.idle", "stats.roi.insts")
SMT = "stats.roi.time.smt"
SET = "plugin.set."


@dataclass(frozen=True)
class Operations:
    """What one workload counts as an operation, and the thesis's figure for it."""
    workload: str
    amount: str    # the result column counting the ROI's operations
    noun: str
    metric: str    # the LDU_SPEEDUP metric, "" when the thesis has none
    mode: str = ""  # only points whose result.params.mode is this get the thesis's figure


WORKLOADS = (
    Operations("smtpload", "result.delivered", "messages", "exim_speedup"),
    Operations("lmproc", "result.ops", "process creations", "lmbench_fork_speedup", "fork"),
    Operations("aim7", "result.jobs", "jobs", "aim7_speedup"),
)


def published(ops: Operations, records: list[Record]) -> Published | None:
    if ops.mode and any(r.get("result.params.mode") != ops.mode for r in records):
        return None
    return next((p for p in LDU_SPEEDUP if p.metric == ops.metric), None)


def shares(records: list[Record], amount: str) -> dict[str, Summary]:
    """Per-point wait and idle shares of all vCPUs' ROI cycles, instructions per operation."""
    out: dict[str, list[float]] = {"wait": [], "idle": [], "insts": []}
    for r in records:
        cycles = float(r[CYCLES]) if is_number(r.get(CYCLES)) else 0.0
        if cycles > 0:
            out["wait"].append(float(r.get(WAIT) or 0) / cycles)
            out["idle"].append(float(r.get(IDLE) or 0) / cycles)
        if is_number(r.get(INSTS)) and float(r[amount]) > 0:
            out["insts"].append(float(r[INSTS]) / float(r[amount]))
    return {k: summarize(v) for k, v in out.items()}


def apart(a: Summary, b: Summary) -> str:
    ia, ib = interval(a), interval(b)
    if ia is None or ib is None:
        return "one run"
    return "apart" if ia[1] < ib[0] or ib[1] < ia[0] else "overlapping"


def percent(s: Summary) -> str:
    return f"{100 * s.mean:.1f}%" if s.n else ""


def sections_for(ops: Operations, ctx: Context) -> list[Section]:
    title = f"{ops.workload}: {ops.noun} per modelled second"
    good = [r for r in first_lines(ok_records(ctx.records)) if is_number(r.get(ops.amount))]
    rated = modelled_rate(good, ops.amount, TIME, RATE, 1.0)
    if not rated:
        return no_points(title) if not good else [Section(title, [
            f"No point has the machine model's ROI time ({TIME}): run with [plugin] enabled "
            "= true and machine.quantum_unit = \"cycles\"."])]
    base = baseline(ctx, rated)
    setting = [k for k in ctx.swept if k.startswith("kernel.")]
    others = [k for k in ctx.swept if not k.startswith("kernel.") and k != X]
    keys = [*setting, *others, X]
    rates = aggregate(rated, keys, RATE)
    by_key = group(rated, keys)
    rows = []
    for combo in sorted(rates, key=lambda c: [sort_key(v) for v in c]):
        s = rates[combo]
        found = shares(by_key[combo], ops.amount)
        reference = baseline_combo(base, keys, combo)
        ref = rates.get(reference) if reference is not None else None
        times = [float(r[TIME]) / 1e6 for r in by_key[combo]]
        rows.append([*map(str, combo), str(s.n), f"{s.mean:,.0f}",
                     f"±{s.ci95:,.0f}" if s.n > 1 else "one run",
                     f"{s.mean / ref.mean:.3f}" if ref is not None else "",
                     apart(s, ref) if ref is not None and ref is not s else "",
                     f"{min(times):,.1f}-{max(times):,.1f}", percent(found["wait"]),
                     percent(found["idle"]),
                     f"{found['insts'].mean / 1e6:.2f} M" if found["insts"].n else ""])
    paragraphs = [
        f"{ops.noun.capitalize()} ({ops.amount}) over the ROI's modelled time ({TIME}), per "
        "point; mean and 95% interval over the repeats. \"vs baseline\" is the ratio of the "
        "means at the same vCPUs; \"intervals\" whether the two 95% intervals are apart. Wait "
        "and idle: the causal clock's wait and idle cycles as shares of all vCPUs' ROI "
        "cycles.", MODELLED_TIME_NOTE]
    if any(r.get("machine.quantum_unit") != "cycles" for r in rated):
        paragraphs.append("Caution: some points switched vCPUs by instructions "
                          "(machine.quantum_unit), so their modelled time under-charges "
                          "waiting.")
    paragraphs += verdicts(ops, rated, base, keys)
    columns = [*keys, "n", f"{ops.noun} per modelled s", "95% CI", "vs baseline",
               "intervals", "ROI modelled ms", "wait", "idle", "instructions per op"]
    return [Section(title, paragraphs, [], [Table(title, columns, rows)]),
            *smt_sections(ops, ctx, rated, base, keys)]


def smt_sections(ops: Operations, ctx: Context, rated: list[Record],
                 base: tuple[str, str] | None, keys: list[str]) -> list[Section]:
    """The rates across core.smt_gain's range, where SMT siblings shared a core in the ROI."""
    shared = [r for r in rated if is_number(r.get(SMT)) and float(r[SMT]) > 0]
    if not shared or ctx.study_dir is None:
        return []
    title = f"{ops.workload}: {ops.noun} per modelled second across core.smt_gain"
    machines: dict[str, list[int] | LabError] = {}
    estimated: list[Record] = []
    skipped: list[str] = []
    shown: set[float] = set()
    for r in shared:
        try:
            factors = point_factors(r, ctx.study_dir / str(r["point"]), machines)
        except LabError as error:
            skipped.append(f"{r['point']}: {error}")
            continue
        shown |= set(factors)
        estimated.append({**r, **{gain_column(g): float(r[RATE]) / f
                                  for g, f in factors.items()}})
    paragraphs = [
        f"{len(shared)} point(s) ran with SMT siblings sharing a core (stats.roi.time.smt > "
        "0): their rates depend on core.smt_gain (G), which no source pins for the presets' "
        "chips (plugin README, \"Timing figures\"), so they are shown across G = "
        "1..threads_per_core, to first order (manylab/report/smt_gain.py): each vCPU's SMT "
        "cycles rescaled from the run's gain to G, and the ROI's time scaled as the sum of "
        "the vCPUs' own work (base, SMT and stall cycles), wait and idle in proportion; the "
        "measured rate scales by that ratio, so at the run's own gain it is the measured one. "
        "Valid where no core hosts more than two vCPUs; against direct runs at other gains "
        "(docs/results, \"The SMT gain checked against direct runs\", AIM7-like) it "
        "under-stated the rate by 3% at G = 1 and by 6-10% at G = 4 at 64 vCPUs (every core "
        "shared), and at 120 vCPUs (56 of 64 cores shared) by 3% at G = 1 while over-stating "
        "it by 9% at G = 4."]
    paragraphs += [f"Not estimated: {why}." for why in skipped]
    if not estimated:
        return [Section(title, paragraphs)]
    gains = sorted(shown)
    columns = [*keys, "n", *(f"G = {g:g}" for g in gains)]
    rates = {g: aggregate(estimated, keys, gain_column(g)) for g in gains}
    by_key = group(estimated, keys)
    rows = []
    for combo in sorted(by_key, key=lambda c: [sort_key(v) for v in c]):
        ref = baseline_combo(base, keys, combo)
        cells = []
        for g in gains:
            s = rates[g].get(combo)
            if s is None:
                cells.append("")
                continue
            against = rates[g].get(ref) if ref is not None else None
            ratio = f" ({s.mean / against.mean:.2f}x)" if against is not None else ""
            cells.append(f"{s.mean:,.0f}{ratio}")
        rows.append([*map(str, combo), str(len(by_key[combo])), *cells])
    paragraphs.append("Each cell: the mean rate at that gain and, in brackets, its ratio to "
                      "the baseline's at the same gain and vCPUs.")
    return [Section(title, paragraphs, [], [Table(title, columns, rows)])]


def baseline_combo(base: tuple[str, str] | None, keys: list[str],
                   combo: tuple[object, ...]) -> tuple[object, ...] | None:
    """The baseline setting's combination of `keys` beside `combo`; None without a baseline."""
    if base is None or base[0] not in keys:
        return None
    return tuple(base[1] if k == base[0] else v for k, v in zip(keys, combo, strict=True))


def gain_column(gain: float) -> str:
    return f"{RATE}.smt_gain={gain:g}"


def point_factors(record: Record, point_dir: Path,
                  machines: dict[str, list[int] | LabError]) -> dict[float, float]:
    """Gain -> the point's ROI time at that gain over its measured one (smt_gain.py); the
    vCPU -> core map from the plugin's describer for the record's preset, vCPUs and `set`
    keys, once per distinct machine."""
    stats = pointdir.read_json(point_dir / pointdir.STATS)
    try:
        vcpus = stats["regions"]["roi"]["time.vcpus"]
        machine_params = stats["params"]["machine"]
    except (KeyError, TypeError) as error:
        raise LabError(f"stats.json lacks {error}") from error
    preset, count = str(record["plugin.preset"]), int(record["machine.vcpus"])
    overrides = {k.removeprefix(SET): v for k, v in record.items() if k.startswith(SET)}
    key = json.dumps([preset, count, overrides], sort_keys=True)
    if key not in machines:
        try:
            machines[key] = describe(preset, count, overrides)
        except LabError as error:
            machines[key] = error
    found = machines[key]
    if isinstance(found, LabError):
        raise found
    return smt_gain.time_factors(smt_gain.layout(machine_params, found), vcpus)


def describe(preset: str, vcpus: int, overrides: dict[str, object]) -> list[int]:
    from manylab.backends.gem5 import machine  # the describer lives with the gem5 tier

    return machine.describe(preset, vcpus, overrides).vcpu_core


def verdicts(ops: Operations, rated: list[Record], base: tuple[str, str] | None,
             keys: list[str]) -> list[str]:
    """The thesis's speed-up over stock at 120 cores, judged at 120 vCPUs only."""
    item = published(ops, rated)
    if item is None or base is None:
        return []
    at = [r for r in rated if r.get(X) == PUBLISHED_CORES]
    if not at:
        ran = ", ".join(str(v) for v in sorted({r.get(X) for r in rated}, key=sort_key))
        return [f"{item.label}: {item.value:g}x over stock at "
                f"{PUBLISHED_CORES} cores; this study ran {ran} vCPUs: no verdict here."]
    out = []
    match = [X, "repeat", *[k for k in keys if not k.startswith("kernel.") and k != X]]
    reference = [r for r in at if str(r.get(base[0])) == base[1]]
    claimed = 100.0 * (item.value - 1.0)
    for other in sorted({str(r.get(base[0])) for r in at} - {base[1]}):
        found = gains(reference + [r for r in at if str(r.get(base[0])) == other], base[0],
                      base[1], other, RATE, match)
        s = summarize(row["gain_pct"] for row in found)
        out.append(f"{base[0]}={other} at {PUBLISHED_CORES} vCPUs: {s.mean:+.1f}% over "
                   f"{base[1]} (paired by repeat, n={s.n}, 95% ±{s.ci95:.1f}); {item.label}: "
                   f"{item.value:g}x ({claimed:+.0f}%): {gain_verdict(s, claimed, claimed)}.")
    return out


def columns(records: list[Record], swept: list[str]) -> list[str]:
    return swept + ["repeat"] + numeric_columns(records, "result.")


def _plot_set(ops: Operations) -> PlotSet:
    return PlotSet(ops.workload,
                   lambda ctx: [*generic.sections(ctx), *sections_for(ops, ctx)], columns)


for _ops in WORKLOADS:
    register(_plot_set(_ops))
