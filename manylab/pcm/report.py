"""The Markdown report: our numbers beside the paper's, and whether the direction reproduces."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from manylab.pcm.paper import PAPER, PAPER_DRAM_SHARE, PAPER_HIT_RATIO_CLAIM, PaperResult
from manylab.pcm.sweep import PolicySummary, summarise


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{(x - 1) * 100:+.1f}%"


def _ratio(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.3f}"


def verdict(s: PolicySummary) -> dict[str, bool]:
    """Direction checks for the FG/BG policy on one trace."""
    return {
        "fg_time": s.mean_fg_time_vs_lru < 1.0,
        "energy": s.mean_energy_vs_lru < 1.0,
        "hits": s.below_lru_hits == 0 and s.below_2q_hits == 0,
    }


def _paper(trace: str) -> PaperResult | None:
    """The paper's figures for a trace label like `trace1` or `trace2-long (write heavy)`."""
    return PAPER.get(trace.split("(")[0].split("-")[0])


def _paper_fg_time(trace: str) -> str:
    paper = _paper(trace)
    return f"{paper.fg_time_change_vs_lru * 100:+.0f}%" if paper else "n/a"


def _readings_table(summ: Sequence[PolicySummary]) -> list[str]:
    """FG/BG's foreground time against LRU's under every time model preset: the paper's text
    is cut where it lists what foreground time sums, so each preset is one reading of it."""
    fgbg = [s for s in summ if s.policy == "fgbg"]
    readings: list[str] = []
    for s in fgbg:
        readings += [n for n in s.mean_fg_time_vs_lru_by_model if n not in readings]
    if not readings:
        return []
    out = [
        "## Foreground time under each reading of the paper's accounting",
        "",
        "FG/BG's foreground time against LRU's, averaged over the memory sizes, under each "
        "time model preset of the simulator: `paper` charges a storage access per miss read "
        "and per write-back; `paper-evict` 1000 per evicted page and nothing per miss read; "
        "`paper-evict-fg` also charges the foreground 1000 for each of its pages that a "
        "background request evicts. These are readings of a cut text, not the paper's rule.",
        "",
        "| trace | " + " | ".join(f"`{n}`" for n in readings) + " | paper |",
        "| --- | " + " | ".join("---:" for _ in readings) + " | ---: |",
    ]
    for s in fgbg:
        cells = [_pct(s.mean_fg_time_vs_lru_by_model.get(n, math.nan)) for n in readings]
        out.append(f"| {s.trace} | " + " | ".join(cells) + f" | {_paper_fg_time(s.trace)} |")
    return out + [""]


def render(
    rows: Sequence[Mapping[str, Any]],
    title: str,
    notes: Sequence[str] = (),
    figures: Sequence[Path] = (),
) -> str:
    summ = summarise(rows)
    share = float(rows[0]["dram_share"]) if rows else PAPER_DRAM_SHARE
    mems = sorted({float(r["mem_frac"]) for r in rows if r.get("mem_frac") is not None})
    out = [f"# {title}", ""]
    out += [
        "Trace-driven simulation of page placement over a hybrid DRAM/PCM memory "
        f"(DRAM = {share * 100:g}% of memory), memory sizes "
        + (f"{mems[0] * 100:.0f}%-{mems[-1] * 100:.0f}%" if mems else "n/a")
        + " of the trace footprint. Averages are over the memory sizes.",
        "",
    ]
    out += list(notes) + ([""] if notes else [])
    out += [
        "## Against the paper",
        "",
        "The paper's columns are the paper's published values on its Nexus 7 traces; "
        "ours are measured here on the traces named in the first column.",
        "",
        "| trace | FG time vs LRU (ours) | FG time vs LRU (paper) | energy vs LRU (ours) "
        "| energy vs LRU (paper) | hit ratio below LRU / 2Q (points) | direction reproduced "
        "| LRU FG time on storage |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    lru_storage = {s.trace: s.mean_fg_storage_share for s in summ if s.policy == "lru"}
    for s in summ:
        if s.policy != "fgbg":
            continue
        paper = _paper(s.trace)
        v = verdict(s)
        dirs = ", ".join(f"{k}: {'yes' if ok else 'no'}" for k, ok in v.items())
        p_time = _paper_fg_time(s.trace)
        p_energy = f"{paper.energy_change_vs_lru * 100:+.0f}%" if paper else "n/a"
        out.append(
            f"| {s.trace} | {_pct(s.mean_fg_time_vs_lru)} | {p_time} | "
            f"{_pct(s.mean_energy_vs_lru)} | {p_energy} | "
            f"{s.below_lru_hits} / {s.below_2q_hits} of {s.points} | {dirs} | "
            f"{lru_storage.get(s.trace, math.nan) * 100:.0f}% |"
        )
    out += [
        "",
        f"Paper's hit-ratio claim: {PAPER_HIT_RATIO_CLAIM}. "
        '"LRU FG time on storage" is the share of LRU\'s foreground time spent on storage '
        "(misses and write-backs): placement can only change the rest, so a large share caps "
        "the possible foreground-time gain of any placement policy that does not also raise "
        "the hit ratio.",
        "",
    ]
    out += _readings_table(summ)
    out += [
        "## All policies (means over memory sizes)",
        "",
        "| trace | policy | hit ratio | FG hit ratio | FG time / LRU | energy / LRU "
        "| points below LRU hits | below 2Q hits |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in summ:
        out.append(
            f"| {s.trace} | {s.policy} | {_ratio(s.mean_hit_ratio)} | "
            f"{_ratio(s.mean_fg_hit_ratio)} | {_ratio(s.mean_fg_time_vs_lru)} | "
            f"{_ratio(s.mean_energy_vs_lru)} | {s.below_lru_hits} | {s.below_2q_hits} |"
        )
    out += ["", "## Per memory size", ""]
    out += [
        "| trace | mem | policy | hit | FG hit | FG time / LRU | energy / LRU | to DRAM "
        "| to PCM | max PCM writes/frame | lifetime (days) |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        if float(r["dram_share"]) != share:
            continue
        life = r.get("lifetime_s")
        life_s = f"{float(life) / 86400:.1f}" if isinstance(life, (int, float)) else "n/a"
        mem = r.get("mem_frac")
        mem_s = f"{float(mem) * 100:.0f}%" if isinstance(mem, (int, float)) else f"{r['frames']} p"
        out.append(
            f"| {r['trace']} | {mem_s} | {r['policy']} | "
            f"{float(r['hit_ratio']):.3f} | {float(r['fg_hit_ratio']):.3f} | "
            f"{_ratio(float(r['fg_time_vs_lru']))} | {_ratio(float(r['energy_vs_lru']))} | "
            f"{r['to_dram']} | {r['to_pcm']} | {r['wear_max']} | {life_s} |"
        )
    if figures:
        out += ["", "## Figures", ""]
        out += [f"![{f.stem}]({f.name})" for f in figures if f.suffix == ".png"]
    out.append("")
    return "\n".join(out)
