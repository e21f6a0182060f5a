"""Lock waits by call site: per setting, the first repeat's ROI (slow path, call site) pairs
with the most wait cycles, from stats.json's `regions.roi.lock_sites` (plugin/README.md,
stats.json): which lock a waiting CPU waited for, named by the kernel function that called the
lock API (the leaf alone, `queued_spin_lock_slowpath`, cannot tell the LRU lock from the zone
lock)."""

from __future__ import annotations

from typing import Any

from manylab import pointdir
from manylab.report.kinds.common import first_lines
from manylab.report.model import Section, Table
from manylab.report.records import Record, Study, is_number, ok_records, swept_params
from manylab.report.stats import group, sort_key

TOP = 10


def sections(study: Study) -> list[Section]:
    """[] when no successful point's stats.json has a non-empty ROI `lock_sites`."""
    points = [p for p in first_lines(ok_records(study.records))
              if p.get("plugin.enabled") is True]
    swept = [k for k in swept_params(study.records) if k != "repeat"]
    settings = group(points, swept)
    rows = []
    for combo in sorted(settings, key=lambda c: [sort_key(v) for v in c]):
        first = min(settings[combo], key=lambda r: sort_key(r.get("repeat", 0)))
        label = [str(v) for v in combo] if swept else ["(one setting)"]
        rows += site_rows(label, roi_of(study, first))
    if not rows:
        return []
    return [Section(
        "Lock waits by call site (ROI)",
        [f"Per setting (first repeat), the {TOP} lock slow-path and call-site pairs with the "
         "most wait cycles (the causal clock's time spent waiting for data another vCPU "
         "wrote) inside the ROI. The site is the kernel function that called the lock API "
         "(its return address at the lock function's entry), or the slow path's caller where "
         "the lock is inlined; `unknown` where no call was seen. Instructions and cycles are "
         "the slow path's own (cycles: base + stall + wait, as per function); entries: lock "
         "calls from the site that entered the slow path."],
        tables=[Table("Lock waits by call site (ROI, first repeat)",
                      [*(swept or ["setting"]), "site", "slow path", "wait cycles",
                       "% of ROI wait", "instructions", "cycles", "entries"], rows)])]


def roi_of(study: Study, record: Record) -> dict[str, Any]:
    stats = pointdir.read_json(study.directory / str(record["point"]) / pointdir.STATS)
    roi = stats.get("regions", {}).get("roi", {}) if isinstance(stats, dict) else {}
    return roi if isinstance(roi, dict) else {}


def site_rows(label: list[str], roi: dict[str, Any]) -> list[list[str]]:
    """The region's top sites by wait cycles, as table rows after `label`."""
    sites = [s for s in roi.get("lock_sites", []) if isinstance(s, dict)]
    stats = roi.get("stats", {})
    total_wait: Any = stats.get("time.wait") if isinstance(stats, dict) else None
    whole = float(total_wait) if is_number(total_wait) and float(total_wait) > 0 else None
    ranked = sorted(sites, key=lambda s: (-float(s.get("wait_cycles", 0)),
                                          -float(s.get("instructions", 0))))
    rows = []
    for site in ranked[:TOP]:
        wait = float(site.get("wait_cycles", 0))
        share = f"{100 * wait / whole:.1f}" if whole else ""
        rows.append([*label, str(site.get("site", "")), str(site.get("slow_path", "")),
                     f"{wait:,.0f}", share, f"{float(site.get('instructions', 0)):,.0f}",
                     f"{float(site.get('cycles', 0)):,.0f}",
                     f"{float(site.get('entries', 0)):,.0f}"])
    return rows
