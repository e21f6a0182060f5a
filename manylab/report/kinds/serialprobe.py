"""The serialisation probe's plot set: each phase's modelled time / the serial phase's.

serialprobe runs the same critical sections as ROI phase 1 (thread 0 alone), 2 (all threads,
one spin lock), 3 (one mutex) and 4 (no lock). On hardware the locked phases take as long as
the serial one (ratio 1.0) and the unlocked one 1/threads of it; a modelled clock that leaves
lock waiting out shows the locked phases near 1/threads as well.
"""

from __future__ import annotations

from pathlib import Path

from manylab.report import plots
from manylab.report.axes import Layout, series_label, x_positions
from manylab.report.kinds import PlotSet, register
from manylab.report.kinds.common import MODELLED_TIME_NOTE, no_points
from manylab.report.kinds.contention import quantum_layout
from manylab.report.model import Context, Section, Table
from manylab.report.records import Record, is_number, ok_records
from manylab.report.stats import Summary, aggregate, group, sort_key, summarize

SERIAL_PHASE = 1
PHASES = (("spin", 2), ("mutex", 3), ("none", 4))  # name, ROI phase number


def phase_time(phase: int) -> str:
    return f"stats.roi.phase{phase}.time.modelled_ns"


def number(record: Record, key: str) -> float | None:
    """The record's value of key when it is a finite number (not a bool), else None."""
    value = record.get(key)
    return float(value) if isinstance(value, int | float) and is_number(value) else None


def threads_of(record: Record) -> float | None:
    """The probe's thread count: its result line's, else the spec argument's."""
    for key in ("result.threads", "workload.args.threads"):
        threads = number(record, key)
        if threads is not None and threads > 0:
            return threads
    return None


def with_ratios(record: Record) -> Record:
    """The record with, per phase that ran and has a modelled time, modelled.<phase>.ratio =
    its stats.roi.phase<k>.time.modelled_ns / the serial phase's, and beside it
    expected.<phase>.ratio, what hardware gives: 1.0 for spin and mutex (the lock serialises
    the same sections), 1/threads for none."""
    out = dict(record)
    serial = number(record, phase_time(SERIAL_PHASE))
    if serial is None or serial <= 0:
        return out
    threads = threads_of(record)
    for name, phase in PHASES:
        time_ns = number(record, phase_time(phase))
        if time_ns is None:
            continue
        out[f"modelled.{name}.ratio"] = time_ns / serial
        if name != "none":
            out[f"expected.{name}.ratio"] = 1.0
        elif threads is not None:
            out[f"expected.{name}.ratio"] = 1.0 / threads
    return out


def ratio_figure(rated: list[Record], lay: Layout, names: list[str],
                 out_dir: Path) -> plots.Figure:
    """A panel per phase: the measured ratio (mean ± std over repeats) per series against x,
    and the hardware expectation as a dashed black line."""
    fig, axes = plots.subplots(len(names))
    where = x_positions(rated, lay)
    for ax, name in zip(axes, names, strict=True):
        for series_values, members in group(rated, lay.series).items():
            summaries = aggregate(members, [lay.x], f"modelled.{name}.ratio")
            xs = sorted((k[0] for k in summaries if k[0] in where), key=lambda v: where[v])
            if xs:
                plots.errorbar_line(ax, [where[v] for v in xs], [summaries[(v,)] for v in xs],
                                    series_label(lay.series, series_values))
        expected = aggregate(rated, [lay.x], f"expected.{name}.ratio")
        xs = sorted((k[0] for k in expected if k[0] in where), key=lambda v: where[v])
        if xs:
            ax.plot([where[v] for v in xs], [expected[(v,)].mean for v in xs], color="black",
                    linestyle="--", linewidth=1.0, marker="_", zorder=3,
                    label="hardware: 1/threads" if name == "none" else "hardware: 1.0")
        if not lay.numeric_x:
            ax.set_xticks(list(where.values()), [str(v) for v in where], rotation=30,
                          fontsize=7)
        elif min(where.values(), default=0) > 0:
            plots.log2_ticks(ax, list(where.values()))
        ax.set_ylim(bottom=0)
        plots.finish(ax, lay.x, f"{name} / serial", title=f"phase {dict(PHASES)[name]}: {name}")
    return plots.save(fig, out_dir, "serialprobe-ratios",
                      f"serialprobe: modelled time of each phase / the serial phase's vs {lay.x}",
                      "Each phase's stats.roi.phase<k>.time.modelled_ns divided by the serial "
                      "phase's (phase 1: thread 0 runs every section alone), mean ± std over "
                      "repeats; dashed: what hardware gives (spin and mutex 1.0, none "
                      "1/threads).")


def cell(summary: Summary | None, digits: int = 3) -> str:
    if summary is None:
        return ""
    if summary.n < 2:
        return f"{summary.mean:.{digits}f}"
    return f"{summary.mean:.{digits}f} ± {summary.std:.{digits}f}"


def ratio_table(rated: list[Record], keys: list[str], names: list[str]) -> Table:
    """One row per point (repeats pooled): the serial phase's modelled time and each phase's
    ratio to it, with the hardware expectation beside it."""
    columns = [*keys, "threads", "n", "serial (modelled ms)"]
    for name in names:
        columns += [f"{name} / serial", f"{name}: hardware"]
    rows = []
    for combo, members in sorted(group(rated, keys).items(),
                                 key=lambda item: [sort_key(v) for v in item[0]]):
        threads = sorted({t for t in map(threads_of, members) if t is not None})
        serial_ms = summarize(float(r[phase_time(SERIAL_PHASE)]) / 1e6 for r in members)
        row = [*map(str, combo), ", ".join(f"{t:g}" for t in threads), str(len(members)),
               cell(serial_ms, 4)]
        for name in names:
            measured = aggregate(members, [], f"modelled.{name}.ratio").get(())
            expected = aggregate(members, [], f"expected.{name}.ratio").get(())
            row += [cell(measured), "" if expected is None else f"{expected.mean:.3f}"]
        rows.append(row)
    return Table("serialprobe: modelled time / serial phase, with the hardware expectation",
                 columns, rows)


def sections(ctx: Context) -> list[Section]:
    good = ok_records(ctx.records)
    if not good:
        return no_points("serialprobe")
    rated = [with_ratios(r) for r in good]
    names = [name for name, _ in PHASES if any(f"modelled.{name}.ratio" in r for r in rated)]
    title = "serialprobe: does the modelled clock charge lock waiting?"
    if not names:
        return [Section(title, [
            "No point has the serial phase's and a locked phase's modelled time "
            "(stats.roi.phase<k>.time.modelled_ns): run the probe with [plugin] enabled = true "
            "and mode = \"full\"."])]
    rated = [r for r in rated if any(f"modelled.{n}.ratio" in r for n in names)]
    paragraphs = [
        "Each phase runs the same threads x sections critical sections: phase 1 by thread 0 "
        "alone, phase 2 by all threads under one spin lock, phase 3 under one mutex, phase 4 "
        "with no lock. Hardware: a lock that serialises the sections makes phases 2 and 3 "
        "last as long as phase 1 (ratio 1.0, a little more for the handoffs) and phase 4 "
        "about 1/threads of it. Locked ratios below 1.0 mean the model does not charge "
        "the waiters for their waiting (plugin/README.md, \"Modelled time\": the causal "
        "clock, plugin.causal).",
        MODELLED_TIME_NOTE]
    if not ctx.swept:  # one point (its repeats pooled): the table says it all
        return [Section(title, paragraphs, [], [ratio_table(rated, [], names)])]
    # x: the quantum when swept, else vCPUs; keys moving in lockstep with x are no series
    lay = quantum_layout(rated, ctx.swept)
    return [Section(title, paragraphs, [ratio_figure(rated, lay, names, ctx.out_dir)],
                    [ratio_table(rated, [*lay.series, lay.x], names)])]


def columns(records: list[Record], swept: list[str]) -> list[str]:
    return swept + ["repeat", "result.threads", "result.sections", "result.work",
                    "result.lock", "result.spin_contended_share",
                    "result.mutex_contended_share", "result.verified",
                    *[phase_time(p) for p in range(1, 5)]]


SERIALPROBE = register(PlotSet("serialprobe", sections, columns))
