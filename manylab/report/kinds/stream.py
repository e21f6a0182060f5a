"""stream: each kernel's bandwidth in guest time and in modelled time, against threads."""

from __future__ import annotations

import json
from pathlib import Path

from manylab.report import plots
from manylab.report.axes import Layout, layout
from manylab.report.kinds import PlotSet, register
from manylab.report.kinds.common import (
    MODELLED_TIME_NOTE,
    guest_time_caveat,
    metric_figure,
    no_points,
)
from manylab.report.model import Context, Section
from manylab.report.records import Record, is_number, ok_records

KERNELS = ("copy", "scale", "add", "triad")  # ROI phases 1-4


def with_rates(record: Record) -> Record:
    """The record with guest.<kernel>.mib_s (the workload's own figure, guest time) and
    modelled.<kernel>.gb_s (the plugin's memory bytes of ROI phase k / its modelled ns)."""
    out = dict(record)
    try:
        kernels = json.loads(str(record.get("result.kernels", "[]")))
    except json.JSONDecodeError:
        kernels = []
    for kernel in kernels if isinstance(kernels, list) else []:
        if isinstance(kernel, dict) and is_number(kernel.get("mib_s")):
            out[f"guest.{kernel.get('name')}.mib_s"] = float(kernel["mib_s"])
    for phase, name in enumerate(KERNELS, start=1):
        moved = record.get(f"stats.roi.phase{phase}.mem.bytes")
        time_ns = record.get(f"stats.roi.phase{phase}.time.modelled_ns")
        if is_number(moved) and is_number(time_ns) and float(str(time_ns)) > 0:
            out[f"modelled.{name}.gb_s"] = float(str(moved)) / float(str(time_ns))
    return out


def rate_figures(rated: list[Record], lay: Layout, out_dir: Path) -> list[plots.Figure]:
    figures = []
    guest = [f"guest.{k}.mib_s" for k in KERNELS if any(f"guest.{k}.mib_s" in r for r in rated)]
    if guest:
        figures.append(metric_figure(
            rated, lay, guest, out_dir, "stream-bandwidth-guest",
            f"Kernel bandwidth in guest time vs {lay.x}",
            "MiB per guest second, bytes counted as STREAM counts them (the workload's own "
            "figure); mean ± std over repeats.", log2_x=lay.numeric_x))
    modelled = [f"modelled.{k}.gb_s" for k in KERNELS
                if any(f"modelled.{k}.gb_s" in r for r in rated)]
    if modelled:
        figures.append(metric_figure(
            rated, lay, modelled, out_dir, "stream-bandwidth-modelled",
            f"Kernel bandwidth in modelled time vs {lay.x}",
            "GB per modelled second (= bytes per modelled ns): the memory traffic the machine "
            "model moved in ROI phase k (stats.roi.phase<k>.mem.bytes: line reads and "
            "write-backs, 64 bytes each) / the phase's stats.roi.phase<k>.time.modelled_ns. "
            + MODELLED_TIME_NOTE, log2_x=lay.numeric_x))
    return figures


def sections(ctx: Context) -> list[Section]:
    good = ok_records(ctx.records)
    if not good:
        return no_points("stream")
    rated = [with_rates(r) for r in good]
    lay = layout(rated, ctx.swept)
    return [Section("stream: memory bandwidth", guest_time_caveat(good),
                    rate_figures(rated, lay, ctx.out_dir))]


def columns(records: list[Record], swept: list[str]) -> list[str]:
    return swept + ["repeat", "result.threads", "result.elements", "result.reps",
                    "result.verified",
                    *[f"stats.roi.phase{p}.time.modelled_ns" for p in range(1, 5)]]


STREAM = register(PlotSet("stream", sections, columns))
