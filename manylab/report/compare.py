"""`manylab compare A B`: two studies' results side by side, matched by their parameters.

Records of A and B are matched on every parameter that varies, except the distinguishing ones
(by default: the parameters whose values differ between A and B as a whole, e.g.
kernel.variant) and the repeat index, plus the result line's index within its point. Per
matched group and metric: mean ± std over repeats in A and in B, and the ratio B/A.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from manylab.errors import LabError
from manylab.report import page, plots, records
from manylab.report.kinds import plot_set
from manylab.report.model import Section, Table, cell
from manylab.report.records import Record, numeric_columns, ok_records, param_keys, varying
from manylab.report.stats import Summary, aggregate, sort_key

PANELS = 6


def distinguishing(a: list[Record], b: list[Record]) -> list[str]:
    """Parameters whose set of values differs between the two studies."""
    out = []
    for key in param_keys(a + b):
        values_a = {json.dumps(r.get(key), sort_keys=True) for r in a}
        values_b = {json.dumps(r.get(key), sort_keys=True) for r in b}
        if values_a != values_b:
            out.append(key)
    return out


def match_keys(a: list[Record], b: list[Record], distinct: list[str]) -> list[str]:
    """Varying parameters but the distinguishing ones, then what names a result line."""
    keys = [k for k in varying(a + b, param_keys(a + b)) if k not in distinct and k != "repeat"]
    case = list(plot_set(str(a[0].get("workload.name", ""))).case)
    return keys + (case or ["line"])


def metrics(a: list[Record], b: list[Record], wanted: list[str]) -> list[str]:
    shared = [c for c in numeric_columns(a, "result.") if c in numeric_columns(b, "result.")]
    if wanted:
        missing = [m for m in wanted if m not in shared]
        if missing:
            raise LabError(f"--metric {missing[0]}: not a numeric result of both studies "
                           f"(shared: {', '.join(shared[:12])}...)")
        return wanted
    workload = str(a[0].get("workload.name", "")) if a else ""
    chosen = plot_set(workload)
    preferred = [c for c in chosen.columns(a, []) if c in shared and c not in chosen.case]
    return preferred or shared


def _cell(s: Summary | None) -> str:
    return "" if s is None else f"{s.mean:.4g} ± {s.std:.2g} ({s.n})"


def ratio_rows(a: list[Record], b: list[Record], keys: list[str],
               metric_list: list[str]) -> list[tuple[tuple[object, ...], str, Summary | None,
                                                    Summary | None, float | None]]:
    rows = []
    for metric in metric_list:
        sa, sb = aggregate(a, keys, metric), aggregate(b, keys, metric)
        for group_key in sorted(set(sa) | set(sb), key=lambda k: [sort_key(v) for v in k]):
            x, y = sa.get(group_key), sb.get(group_key)
            ratio = y.mean / x.mean if x and y and x.mean else None
            rows.append((group_key, metric, x, y, ratio))
    return rows


def make_comparison(a_dir: Path, b_dir: Path, out_dir: Path | None = None,
                    keys: list[str] | None = None, wanted: list[str] | None = None) -> Path:
    a_study, b_study = records.load(a_dir), records.load(b_dir)
    a, b = ok_records(a_study.records), ok_records(b_study.records)
    if not a or not b:
        empty = a_dir if not a else b_dir
        raise LabError(f"{empty}: no successful point to compare")
    distinct = keys if keys else distinguishing(a, b)
    matched = match_keys(a, b, distinct)
    chosen = metrics(a, b, wanted or [])
    rows = ratio_rows(a, b, matched, chosen)
    out = out_dir or a_dir.parent / f"compare-{a_study.name}-vs-{b_study.name}"
    out.mkdir(parents=True, exist_ok=True)
    label_a, label_b = a_study.name, b_study.name
    if label_a == label_b:
        label_a, label_b = str(a_dir), str(b_dir)
    table = Table(f"{label_b} / {label_a}", [*matched, "metric", f"A: {label_a}",
                                             f"B: {label_b}", "B/A"],
                  [[cell(v) for v in k] + [m, _cell(x), _cell(y),
                                           "" if r is None else f"{r:.3f}"]
                   for k, m, x, y, r in rows])
    matched_count = len({k for k, _, x, y, _ in rows if x and y})
    text = [f"A = {a_dir} ({len(a)} records), B = {b_dir} ({len(b)} records). Distinguishing: "
            f"{', '.join(distinct) or 'none (same parameters)'}; matched on: "
            f"{', '.join(matched)}; {matched_count} groups present in both. Values are mean ± "
            "sample std (n repeats); B/A is the ratio of the means."]
    figure = ratio_figure(rows, matched, chosen, out, label_a, label_b)
    section = Section("Comparison", text, [figure], [table])
    title = f"manylab compare: {label_b} vs {label_a}"
    page.write_html(out / "index.html", title, [section])
    page.write_markdown(out / "report.md", title, [section])
    return out / "index.html"


def ratio_figure(rows: list[tuple[tuple[object, ...], str, Summary | None, Summary | None,
                                  float | None]], keys: list[str], metric_list: list[str],
                 out: Path, label_a: str, label_b: str) -> plots.Figure:
    """Per metric: B against A for every matched group, with the y = x diagonal."""
    shown = metric_list[:PANELS]
    fig, axes = plots.subplots(len(shown), width=4.6, height=4.2)
    for ax, metric in zip(axes, shown, strict=True):
        pairs = [(x, y) for _, m, x, y, _ in rows if m == metric and x and y
                 and x.mean > 0 and y.mean > 0]
        if not pairs:
            continue
        ax.errorbar([x.mean for x, _ in pairs], [y.mean for _, y in pairs],
                    xerr=[x.std for x, _ in pairs], yerr=[y.std for _, y in pairs],
                    fmt="o", markersize=3, alpha=0.7, capsize=0, linewidth=0.6)
        low = min(min(x.mean, y.mean) for x, y in pairs)
        high = max(max(x.mean, y.mean) for x, y in pairs)
        ax.plot([low, high], [low, high], color="black", linewidth=0.8, label="B = A")
        geo = math.exp(sum(math.log(y.mean / x.mean) for x, y in pairs) / len(pairs))
        if high / low > 20:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_title(f"{metric}\ngeometric mean B/A = {geo:.3f} ({len(pairs)} groups)",
                     fontsize=8)
        ax.set_xlabel(f"A: {label_a}", fontsize=7)
        ax.set_ylabel(f"B: {label_b}", fontsize=7)
        ax.grid(alpha=0.3)
        plots.legend(ax)
    return plots.save(fig, out, "compare-ratios", f"{label_b} against {label_a}",
                      f"Each dot is one matched group ({', '.join(keys)}): mean ± std over "
                      "repeats in A (x) and B (y); on the diagonal B = A.")
