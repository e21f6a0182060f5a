"""The report's first section when the machine model ran: per kernel and machine setting, what
the model measured over the ROI: modelled time, coherence messages by type and mesh hops, the
kernel functions and cache lines that caused the most traffic, and memory reads, writes and
energy per device (DRAM, MCDRAM, PCM) with PCM wear.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from manylab import pointdir
from manylab.memory_layout import DEVICES
from manylab.report import timeline
from manylab.report.kinds.common import first_lines
from manylab.report.model import Section, Table
from manylab.report.records import Record, Study, is_number, ok_records, swept_params
from manylab.report.stats import aggregate, group, sort_key

ROI = "stats.roi."
MESSAGE_TYPES = ("gets", "getm", "upgrade", "fwd_gets", "fwd_getm", "inv", "inv_ack", "data",
                 "putm", "wb", "mem_rd", "mem_wr")
TOP_FUNCTIONS = 5
TIMELINE_PREFIX = "timeline-"


def sections(study: Study, out_dir: Path) -> list[Section]:
    """[] when no successful point ran the machine model. Writes each such point's ROI
    timeline (manylab.report.timeline) into `out_dir` and links it."""
    points = [p for p in first_lines(ok_records(study.records))
              if p.get("plugin.enabled") is True and is_number(p.get(f"{ROI}coh.msgs"))]
    if not points:
        return []
    swept = [k for k in swept_params(study.records) if k != "repeat"]
    settings = group(points, swept)
    firsts = {combo: str(min(members, key=lambda r: sort_key(r.get("repeat", 0)))["point"])
              for combo, members in settings.items()}
    first_rois: dict[str, dict[str, Any]] = {}
    links = []
    for point in points:  # each stats.json read once: the timeline, and the first repeat's ROI
        name, stats = str(point["point"]), _stats(study.directory / str(point["point"]))
        if name in firsts.values():
            first_rois[name] = _roi(stats)
        if timeline.write(stats, name, out_dir / f"{TIMELINE_PREFIX}{name}.json"):
            links.append((f"ROI timeline of {name}", f"{TIMELINE_PREFIX}{name}.json"))
    tables = [_traffic_table(settings, swept), _memory_table(settings, swept),
              _functions_table(settings, swept, firsts, first_rois)]
    devices = [d for d in DEVICES if any(is_number(p.get(f"{ROI}mem.{d}.bytes"))
                                         and float(p[f"{ROI}mem.{d}.bytes"]) > 0 for p in points)]
    return [Section(
        "What the machine model measured (ROI)",
        [f"{len(points)} points ran the {_presets(points)} model; every figure is over the "
         "workload's region of interest, the mean over a setting's repeats (n in the first "
         f"table). Memory devices in use: {', '.join(devices) or 'none'}. Coherence messages "
         "are counted at the directory protocol's level, hops on the mesh; energy is the "
         "devices' dynamic energy (plugin/README.md), and memory energy sums every device but "
         "storage. Details per workload follow below.",
         "Per point, its ROI on a timeline of modelled time, one track per vCPU with each "
         "phase split into base, stall, SMT, wait and idle time (Chrome trace-event JSON: open "
         "it in https://ui.perfetto.dev or chrome://tracing):"],
        tables=[t for t in tables if t.rows], links=links)]


def _presets(points: list[Record]) -> str:
    return ", ".join(sorted({str(p.get("plugin.preset")) for p in points}))


def _label(swept: list[str], combo: tuple[Any, ...]) -> list[str]:
    return [str(v) for v in combo] if swept else ["(one setting)"]


def _mean(members: list[Record], column: str) -> float | None:
    found = aggregate(members, [], column).get(())
    return found.mean if found is not None else None


def _fmt(value: float | None, scale: float = 1.0, digits: int = 0) -> str:
    return "" if value is None else f"{value / scale:,.{digits}f}"


def _ordered(settings: dict[tuple[Any, ...], list[Record]]) -> list[tuple[Any, ...]]:
    return sorted(settings, key=lambda combo: [sort_key(v) for v in combo])


def _traffic_table(settings: dict[tuple[Any, ...], list[Record]], swept: list[str]) -> Table:
    kinds = [k for k in MESSAGE_TYPES
             if any(is_number(r.get(f"{ROI}coh.msgs.{k}")) and r[f"{ROI}coh.msgs.{k}"]
                    for members in settings.values() for r in members)]
    rows = []
    for combo in _ordered(settings):
        members = settings[combo]
        msgs, hops = _mean(members, f"{ROI}coh.msgs"), _mean(members, f"{ROI}coh.hops")
        per_msg = f"{hops / msgs:.2f}" if msgs and hops is not None else ""
        rows.append([*_label(swept, combo), str(len(members)),
                     _fmt(_mean(members, f"{ROI}time.modelled_ns"), 1e6, 3),
                     _fmt(msgs), per_msg,
                     *[_fmt(_mean(members, f"{ROI}coh.msgs.{k}")) for k in kinds]])
    return Table("Coherence traffic: messages by type and mesh hops",
                 [*(swept or ["setting"]), "n", "modelled ms", "messages", "hops / message",
                  *kinds], rows)


def _memory_table(settings: dict[tuple[Any, ...], list[Record]], swept: list[str]) -> Table:
    devices = [d for d in DEVICES
               if any(_mean(members, f"{ROI}mem.{d}.reads") or
                      _mean(members, f"{ROI}mem.{d}.writes") for members in settings.values())]
    columns = [*(swept or ["setting"])]
    for device in devices:
        columns += [f"{device} reads", f"{device} writes", f"{device} energy µJ"]
    columns += ["memory energy µJ", "PCM max writes / line"]
    rows = []
    for combo in _ordered(settings):
        members = settings[combo]
        row = _label(swept, combo)
        for device in devices:
            row += [_fmt(_mean(members, f"{ROI}mem.{device}.reads")),
                    _fmt(_mean(members, f"{ROI}mem.{device}.writes")),
                    _fmt(_mean(members, f"{ROI}mem.{device}.energy_nj"), 1e3, 1)]
        row += [_fmt(_mean(members, f"{ROI}mem.energy_nj"), 1e3, 1),
                _fmt(_mean(members, f"{ROI}mem.pcm.max_line_writes"))]
        rows.append(row)
    return Table("Memory traffic per device: line reads and writes, dynamic energy, PCM wear",
                 columns, rows)


def _functions_table(settings: dict[tuple[Any, ...], list[Record]], swept: list[str],
                     firsts: dict[tuple[Any, ...], str],
                     rois: dict[str, dict[str, Any]]) -> Table:
    """The first repeat's hottest kernel functions and cache line, by coherence messages
    (`firsts`: each setting's first repeat; `rois`: its stats.json's ROI region)."""
    rows = []
    for combo in _ordered(settings):
        first = next(r for r in settings[combo] if r["point"] == firsts[combo])
        roi = rois[firsts[combo]]
        functions = sorted(roi.get("functions", []), key=lambda f: -float(f.get("coh.msgs", 0)))
        total = float(first.get(f"{ROI}coh.msgs") or 0)
        hot = ", ".join(f"{f.get('name')} {100 * float(f.get('coh.msgs', 0)) / total:.0f}%"
                        for f in functions[:TOP_FUNCTIONS] if total > 0)
        lines = sorted(roi.get("hot_lines", []), key=lambda line: -float(line.get("coh.msgs", 0)))
        line = ""
        if lines:
            top = lines[0]
            line = (f"{top.get('symbol') or top.get('paddr')}: {float(top.get('coh.msgs', 0)):,.0f}"
                    f" messages, {float(top.get('coh.invalidations', 0)):,.0f} invalidations")
        rows.append([*_label(swept, combo), hot, line])
    return Table("Kernel functions with the most coherence messages (share of the ROI's) and "
                 "the hottest line, first repeat", [*(swept or ["setting"]),
                                                     f"top {TOP_FUNCTIONS} functions",
                                                     "hottest line"], rows)


def _stats(point_dir: Path) -> dict[str, Any]:
    stats = pointdir.read_json(point_dir / pointdir.STATS)
    return stats if isinstance(stats, dict) else {}


def _roi(stats: dict[str, Any]) -> dict[str, Any]:
    roi = stats.get("regions", {}).get("roi", {})
    return roi if isinstance(roi, dict) else {}
