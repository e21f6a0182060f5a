"""The hybrid-pcm kernel's page cache request recorder in a real guest: known requests by
processes of known importance (oom_score_adj) on ext2, captured with `pagereq`, turned into a
.mlpt trace on the host and accepted by the simulator."""

import csv
import json
from itertools import groupby

import pytest

from manylab.pcm import engine
from manylab.pcm.traceio import read
from tests.e2e.helpers import manylab, recorder_spec, run_one_point

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(3600),
    pytest.mark.skipif(not engine.binary_path().is_file(),
                       reason="manylab-pcmsim not built (cargo build --release in pcmsim/)"),
]


def touch(adj, args, *records, prefix=""):
    """The step of a process that runs `pagereq touch -a ADJ ARGS` (after prefix)."""
    return adj, f"{prefix}pagereq touch -a {adj} {args}", list(records)


# Each `pagereq touch` is one process: its oom_score_adj (-a), its command, and its expected
# records as (op, cache, via, file, first page, pages, node). Reads are random-access, so the
# kernel reads nothing ahead: a page not in the page cache is one miss. The first mapped read
# (one page, default fault_around_bytes) is served by fault-around; after it
# fault_around_bytes = 4096 maps one page per fault, so each page touched through a mapping is
# one fault. bg's first pages are allocated on node 1 (membind); all others on node 0, the
# vCPUs' node. `pagereq evict` writes a file back and drops its pages, and requests nothing.
STEPS = [
    touch(0, "-w $W/fg 0 8", ("W", "miss", "io", "fg", 0, 8, 0)),
    touch(700, "-w $W/bg 0 4", ("W", "miss", "io", "bg", 0, 4, 1), prefix="membind 1 "),
    (None, "pagereq evict $W/fg", []),
    touch(0, "$W/fg 0 8", ("R", "miss", "io", "fg", 0, 8, 0)),
    touch(0, "$W/fg 0 8", ("R", "hit", "io", "fg", 0, 8, 0)),
    touch(200, "-m $W/fg 3 1", ("R", "hit", "fault", "fg", 3, 1, 0)),
    (None, "echo 4096 > /sys/kernel/debug/fault_around_bytes", []),
    touch(100, "-m $W/fg 0 8", ("R", "hit", "fault", "fg", 0, 8, 0)),
    touch(700, "$W/bg 0 4", ("R", "hit", "io", "bg", 0, 4, 1)),
    (None, "pagereq evict $W/bg", []),
    touch(900, "-m $W/bg 0 4", ("R", "miss", "fault", "bg", 0, 4, 0)),
    touch(500, "-w -m $W/bg 0 4", ("W", "hit", "fault", "bg", 0, 4, 0)),
    touch(0, "-w $W/fg 2 2", ("W", "hit", "io", "fg", 2, 2, 0)),
    touch(-200, "-w -m $W/new 0 3", ("W", "miss", "fault", "new", 0, 3, 0)),
]
FILES = ("fg", "bg", "new")  # in the order of their first request

SCRIPT = "; ".join([
    "W=$MANYLAB_WORKDIR",
    "pagereq start $W 4096 || exit 6",
    *(f"{action} || exit 7" for _, action, _ in STEPS),
    "pagereq dump",
])


def expected():
    """(process, oom_score_adj, op, cache, via, file, index, node) per record, in order;
    process k is the k-th process that made requests."""
    rows = []
    process = 0
    for adj, _, records in STEPS:
        if not records:
            continue
        for op, cache, via, name, first, pages, node in records:
            rows += [(process, adj, op, cache, via, name, first + i, node) for i in range(pages)]
        process += 1
    return rows


def test_recorded_requests_match_the_known_workload(tmp_path):
    numa = 'numa = [{size = "256M", cpus = "0-1"}, {size = "256M"}]  # node 1: memory only\n'
    run = run_one_point(tmp_path, "pagereq", recorder_spec("pagereq", SCRIPT, machine=numa))
    point = run.dir
    dump = next(o for o in run.outputs if o.get("tool") == "pagereq")
    want = expected()
    assert dump == {"tool": "pagereq", "records": len(want), "dropped": 0, "capacity": 4096}
    # both 256 MiB nodes, with the 4096 x 40-byte buffer already taken from the free pages
    start = next(o for o in run.outputs if o.get("tool") == "pagereq-start")
    assert set(start["free_pages"]) == set(start["file_pages"]) == {"0", "1"}, start
    assert set(start["high_watermark"]) == {"0", "1"}, start
    assert all(0 < start["high_watermark"][n] < start["free_pages"][n] < 65536 for n in "01")

    # the host side: console -> trace.mlpt + requests.csv
    captured = manylab("pcm-policy", "capture", str(point.parent))
    summary = json.loads(captured.stdout)
    assert summary == {"requests": 54, "reads": 33, "writes": 21, "hits": 27, "misses": 27,
                       "faults": 20, "processes": 11, "files": 3, "pages": 15, "dropped": 0}
    assert summary["requests"] == len(want)
    with (point / "requests.csv").open() as f:
        rows = list(csv.DictReader(f))
    pids = [int(r["pid"]) for r in rows]
    groups = [pid for pid, _ in groupby(pids)]
    assert len(groups) == len(set(groups)) == 11, groups  # one process per touch, in turn
    assert groups == sorted(groups)
    inodes = [ino for ino, _ in groupby(r["ino"] for r in rows)]
    names = dict(zip(dict.fromkeys(inodes), FILES, strict=True))
    got = [(groups.index(int(r["pid"])), int(r["oom_score_adj"]), r["op"], r["cache"], r["via"],
            names[r["ino"]], int(r["index"]), int(r["nid"])) for r in rows]
    assert got == want
    assert len({r["dev"] for r in rows}) == 1
    times = [int(r["time_ns"]) for r in rows]
    assert times[0] == 0 and times == sorted(times)

    # the trace: what the simulator reads, states from oom_score_adj by Android's ranges
    info, records = read(point / "trace.mlpt")
    assert info.time_ns and info.oom_score_adj
    assert [r.oom_adj for r in records] == [w[1] for w in want]
    state = {0: "foreground", 100: "visible", 200: "visible", 500: "service", 700: "background",
             900: "empty", -200: "service"}
    assert [r.state for r in records] == [state[w[1]] for w in want]
    assert [r.write for r in records] == [w[2] == "W" for w in want]
    assert [r.index for r in records] == [w[6] for w in want]
    info_line = json.loads(engine.run(["info", str(point / "trace.mlpt")]))
    assert info_line["requests"] == 54 and info_line["footprint"] == 15
    assert info_line["fg_requests"] == sum(w[1] == 0 for w in want) == 26
    sweep = engine.parse_jsonl(engine.run(["run", "--trace", str(point / "trace.mlpt"),
                                           "--policies", "lru,fgbg", "--mem-pages", "8",
                                           "--dram-share", "0.25"]))
    assert [p["requests"] for p in sweep if p["type"] == "point"] == [54, 54]
