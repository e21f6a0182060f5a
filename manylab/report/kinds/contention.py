"""The contention probe's plot set: how finely vCPUs interleave, against the quantum.

x is machine.quantum when it is swept (drawn as categories: 0, QEMU's own slices, sits beside
the instruction counts), else the writers layout; one line per other swept key.
"""

from __future__ import annotations

from manylab.report.axes import Layout, writers_layout
from manylab.report.kinds import PlotSet, register
from manylab.report.kinds.common import metric_figure, no_points
from manylab.report.model import Context, Section
from manylab.report.records import Record, numeric_columns, ok_records

QUANTUM = "machine.quantum"
FIGURES = (
    ("handoffs", "handoffs per 1,000 operations",
     ["result.atomic_handoffs_per_1000", "result.lock_handoffs_per_1000",
      "result.padded_handoffs_per_1000"]),
    ("contended", "share of lock acquisitions that waited",
     ["result.lock_contended_share", "result.padded_contended_share"]),
    ("switches", "vCPU switches forced by the quantum",
     ["stats.interleave.switches", "stats.interleave.short_turns"]),
)


def quantum_layout(records: list[Record], swept: list[str]) -> Layout:
    if QUANTUM in swept:
        return Layout(QUANTUM, [k for k in swept if k != QUANTUM], False)
    return writers_layout(records, swept)


def sections(ctx: Context) -> list[Section]:
    good = ok_records(ctx.records)
    present = set(numeric_columns(good, ""))
    lay = quantum_layout(good, ctx.swept)
    figures = []
    for name, title, columns in FIGURES:
        shown = [c for c in columns if c in present]
        if shown:
            figures.append(metric_figure(
                good, lay, shown, ctx.out_dir, f"{ctx.workload}-{name}",
                f"{ctx.workload}: {title} vs {lay.x}",
                "Mean ± std over repeats. A handoff is an operation whose previous owner of "
                "the word or lock was another thread; the padded loop shares nothing and must "
                "stay at 0. Quantum 0 is QEMU's own round-robin slices.",
                log2_x=lay.numeric_x, log_y=name != "contended"))
    if not figures:
        return no_points(f"{ctx.workload}: interleaving")
    return [Section(f"{ctx.workload}: interleaving", [
        "The probe's handoffs and contended acquisitions tell whether critical sections of "
        "different vCPUs overlap as they would on hardware (a native 2-core host: ~5 handoffs "
        "per 1,000 atomic operations)."], figures)]


def columns(records: list[Record], swept: list[str]) -> list[str]:
    wanted = [c for _, _, group in FIGURES for c in group]
    return swept + [c for c in wanted if c in numeric_columns(records, "")]


CONTENTION = register(PlotSet("contention", sections, columns))
