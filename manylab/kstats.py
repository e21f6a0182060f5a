"""Kernel counters around the workload and its region of interest. The run script snapshots
them before and after the workload (labels `before`, `after`), and the workloads at the edges of
region 0 (`roi_begin`, `roi_end`, workloads/include/manylab_kstats.h). A point keeps the
snapshots (kstats.json) and their differences: the table's `kstat.run.*` and `kstat.roi.*`.

Groups: `vmstat` (/proc/vmstat), `ldu` (debugfs ldu/stats, "name value" lines, LDU kernels),
`hybrid_pcm` (debugfs hybrid_pcm/stats, the same format, hybrid-pcm kernels: pages placed and
promoted) and `finer_lru` (debugfs finer_lru/batches, FinerLRU kernels with CONFIG_DEBUG_FS).
The run script's setup mounts debugfs unless it is mounted already; its snapshot uses shell builtins
only: a forked program would fork, map and exit between the reads, which is rmap and page
traffic the counters would then count.
"""

from __future__ import annotations

import json
from typing import Any

PREFIX = "MANYLAB-KSTATS "
SPANS = {"run": ("before", "after"), "roi": ("roi_begin", "roi_end")}
LABELS = tuple(label for pair in SPANS.values() for label in pair)
FINER_LRU_BATCHES = "/sys/kernel/debug/finer_lru/batches"
LDU_STATS = "/sys/kernel/debug/ldu/stats"
HYBRID_PCM_STATS = "/sys/kernel/debug/hybrid_pcm/stats"

# Values that are levels, not event counts: the table shows them as read after the workload.
# /proc/vmstat's nr_* items are levels except these event counts (Linux 6.1 mm/vmstat.c:
# node items counted "since bootup" and the TLB flush events).
GAUGES = ("ldu.queued",)
GAUGE_PREFIXES = ("vmstat.nr_",)
NR_COUNTS = tuple(f"vmstat.nr_{name}" for name in (
    "vmscan_write", "vmscan_immediate_reclaim", "dirtied", "written", "throttled_written",
    "foll_pin_acquired", "foll_pin_released", "tlb_remote_flush", "tlb_remote_flush_received",
    "tlb_local_flush_all", "tlb_local_flush_one"))

HELD = "/run/manylab-kstats-before"

GUEST_FUNCTIONS = r"""manylab_kstats_setup() {
	while read -r _ks_d _ks_m _ks_t _ks_r; do
		[ "$_ks_m" = /sys/kernel/debug ] && [ "$_ks_t" = debugfs ] && return 0
	done < /proc/mounts
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
}
manylab_kstats_pairs() {
	_ks=""
	[ -r "$3" ] || return 0
	while read -r _ks_k _ks_v; do
		_ks="$_ks,\"$_ks_k\":$_ks_v"
	done < "$3"
	[ -n "$_ks" ] && echo "MANYLAB-KSTATS $1 $2 {${_ks#,}}"
	return 0
}
manylab_kstats() {
	manylab_kstats_pairs "$1" ldu LDU_STATS
	manylab_kstats_pairs "$1" hybrid_pcm HYBRID_PCM_STATS
	_ks=""
	if [ -r FINER_LRU_BATCHES ]; then
		while read -r _ks_k _ks_b _ks_l _ks_n; do
			[ "$_ks_k" = kind ] && continue
			_ks="$_ks,\"$_ks_k.batches\":$_ks_b,\"$_ks_k.locks\":$_ks_l,\"$_ks_k.folios\":$_ks_n"
		done < FINER_LRU_BATCHES
		echo "MANYLAB-KSTATS $1 finer_lru {${_ks#,}}"
	fi
	_ks=""
	while read -r _ks_k _ks_v; do
		_ks="$_ks,\"$_ks_k\":$_ks_v"
	done < /proc/vmstat
	echo "MANYLAB-KSTATS $1 vmstat {${_ks#,}}"
}
manylab_kstats_end() {
	while read -r _ks; do echo "$_ks"; done < HELD
	manylab_kstats after
}
""".replace("FINER_LRU_BATCHES", FINER_LRU_BATCHES).replace("LDU_STATS", LDU_STATS) \
    .replace("HYBRID_PCM_STATS", HYBRID_PCM_STATS) \
    .replace("HELD", HELD)


def script_lines() -> list[str]:
    """Run-script lines that snapshot before the workload into a file and, from an EXIT trap
    (also when the workload's script ends with `exit`), print it and snapshot after it; the
    script's exit status is kept. The first snapshot is not printed at once: a long line still
    leaving the serial port while the workload runs would interleave with any kernel report
    the workload causes, and the report would not be recognised."""
    return [GUEST_FUNCTIONS.rstrip("\n"), "manylab_kstats_setup",
            f"manylab_kstats before > {HELD}", "trap manylab_kstats_end EXIT"]


def parse_line(line: str) -> tuple[str, str, dict[str, int]] | None:
    """(label, group, values) of a console line holding a snapshot, None for other lines;
    ValueError for a snapshot line that is cut or garbled."""
    position = line.find(PREFIX)
    if position < 0:
        return None
    label, group, text = (line[position + len(PREFIX):].split(" ", 2) + ["", ""])[:3]
    if label not in LABELS or not group:
        raise ValueError(f"bad kernel-counter line: {line[position:][:80]!r}")
    values = json.loads(text)
    if not isinstance(values, dict) or not all(isinstance(v, int) for v in values.values()):
        raise ValueError(f"kernel counters of {group} are not integers")
    return label, group, values


def is_gauge(name: str) -> bool:
    """Whether `group.name` is a level (shown as read at the end), not an event count."""
    return name in GAUGES or (name.startswith(GAUGE_PREFIXES) and name not in NR_COUNTS)


def flat(snapshot: dict[str, dict[str, int]]) -> dict[str, int]:
    """`group.name` -> value for one snapshot's groups."""
    return {f"{group}.{name}": value for group, values in snapshot.items()
            for name, value in values.items()}


def differences(record: dict[str, Any]) -> dict[str, int]:
    """What each span changed (`run.<group>.<name>`, `roi.<group>.<name>`), per counter present
    at both its ends: the end's value minus the start's, and for gauges the level at the end."""
    changed = {}
    for span, (start_label, end_label) in SPANS.items():
        start = flat(record.get(start_label, {}))
        for name, value in flat(record.get(end_label, {})).items():
            if name not in start:
                continue
            changed[f"{span}.{name}"] = value if is_gauge(name) else value - start[name]
    return changed


def columns(record: dict[str, Any]) -> dict[str, int]:
    """The table's `kstat.<span>.<group>.<name>` columns of a point's kstats.json."""
    return {f"kstat.{name}": value for name, value in differences(record).items()}
