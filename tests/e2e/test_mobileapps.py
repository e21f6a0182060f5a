"""The mobile-like workload (workloads/mobileapps.c) under the hybrid-pcm kernel's page cache
request recorder, in one boot: (a) the push and switch scenarios, whose captured traces must
hold exactly the requests per oom_score_adj that the workload counted, with the scenario's
foreground share (15:1, 3:1); (b) issue 28 item 6: a trace written from Python through the
simulator, replayed in the guest and captured again gives the same request stream back (op,
file, page, process, oom_score_adj)."""

import csv
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from manylab.pcm import engine
from manylab.pcm.traceio import Record, TraceInfo, read, write_mlpt
from tests.e2e.helpers import manylab, recorder_spec, run_one_point

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(3600),
    pytest.mark.skipif(not engine.binary_path().is_file(),
                       reason="manylab-pcmsim not built (cargo build --release in pcmsim/)"),
]

PUSH = "--scenario push --pages 256 --files 2"
PUSH_REQUESTS = 3200
SWITCH = "--scenario switch --pages 128 --files 2 --switch-every 2"
SWITCH_REQUESTS = 3200


def replay_input(tmp_path: Path) -> tuple[str, list[Record]]:
    """A small trace of four processes over three files, one process changing importance midway
    and one of negative importance (a system process), written as .mlpt by the simulator and
    exported back to its CSV form: the text the guest replays, and its records."""
    rng = random.Random(28)
    procs = [(4100, 0), (4101, 500), (4102, 900), (4103, -200)]
    records = []
    for t in range(240):
        pid, adj = rng.choice(procs)
        if pid == 4100 and t >= 120:
            adj = 700  # the foreground app went to the background (previous app)
        records.append(Record(index=rng.randrange(48), state="", write=rng.random() < 0.3,
                              time=t * 1000, dev=2049, ino=rng.choice([501, 502, 777]),
                              pid=pid, oom_adj=adj))
    mlpt = tmp_path / "input.mlpt"
    write_mlpt(mlpt, records, TraceInfo(time_ns=True, oom_score_adj=True))
    exported = tmp_path / "input.csv"
    engine.run(["convert", str(mlpt), str(exported)])
    return exported.read_text(), records


def stream(rows: list[tuple[str, int, int, int, int]]) -> list[tuple[str, int, int, int, int]]:
    """(op, file, index, process, oom_score_adj) with files and processes numbered in order of
    first appearance, from (op, file key, index, pid, adj)."""
    files: dict[int, int] = {}
    procs: dict[int, int] = {}
    return [(op, files.setdefault(f, len(files)), index, procs.setdefault(p, len(procs)), adj)
            for op, f, index, p, adj in rows]


def capture(part: str, where: Path) -> tuple[dict[str, int], list[dict[str, str]]]:
    """`manylab pcm-policy capture` of one recording's console lines."""
    where.mkdir()
    (where / "console.log").write_text(part)
    summary = json.loads(manylab("pcm-policy", "capture", str(where / "console.log")).stdout)
    with (where / "requests.csv").open() as f:
        return summary, list(csv.DictReader(f))


def test_push_scenario_and_replay_under_the_recorder(tmp_path):
    trace_text, records = replay_input(tmp_path)
    script = "\n".join([
        "W=$MANYLAB_WORKDIR",
        "cat > /tmp/replay.csv <<'MANYLAB_TRACE_END'",  # tmpfs: not the recorded disk
        trace_text.rstrip("\n"),
        "MANYLAB_TRACE_END",
        f"mobileapps {PUSH} --prepare --dir $W || exit 5",
        "pagereq start $W 65536 || exit 6",
        f"mobileapps {PUSH} --reuse --requests {PUSH_REQUESTS} --slice 200 --dir $W || exit 7",
        "pagereq dump || exit 8",
        f"mobileapps {SWITCH} --prepare --dir $W || exit 5",
        "pagereq start $W 65536 || exit 6",
        f"mobileapps {SWITCH} --reuse --requests {SWITCH_REQUESTS} --slice 200 --dir $W || exit 7",
        "pagereq dump || exit 8",
        "pagereq start $W 65536 || exit 6",
        "mobileapps --replay /tmp/replay.csv --dir $W || exit 9",
        "pagereq dump || exit 8",
    ])
    run = run_one_point(tmp_path, "mobileapps", recorder_spec("mobileapps", script))
    dumps = [o for o in run.outputs if o.get("tool") == "pagereq"]
    push, switch, replay = [o for o in run.outputs if o.get("workload") == "mobileapps"]
    assert push["ok"] and switch["ok"] and replay["ok"], (push, switch, replay)
    assert [d["dropped"] for d in dumps] == [0, 0, 0]

    # one console per recording: each up to its dump's summary
    lines = run.console.splitlines(keepends=True)
    cuts = [i + 1 for i, line in enumerate(lines)
            if "MANYLAB-RESULT" in line and '"tool": "pagereq"' in line]
    assert len(cuts) == 3
    parts = ["".join(lines[a:b]) for a, b in zip([0, *cuts[:2]], cuts, strict=True)]
    push_summary, push_rows = capture(parts[0], tmp_path / "push")
    switch_summary, switch_rows = capture(parts[1], tmp_path / "switch")
    replay_summary, replay_rows = capture(parts[2], tmp_path / "replay")

    # (a) the scenarios: what the workload counted is what the kernel recorded
    for result, summary, rows, dump, requests, share in (
            (push, push_summary, push_rows, dumps[0], PUSH_REQUESTS, 15 / 16),
            (switch, switch_summary, switch_rows, dumps[1], SWITCH_REQUESTS, 3 / 4)):
        assert result["requests"] == requests == summary["requests"] == dump["records"]
        got = Counter((int(r["oom_score_adj"]), r["op"]) for r in rows)
        want = Counter()
        for adj, count in result["by_oom_score_adj"].items():
            want[(int(adj), "R")] = count["reads"]
            want[(int(adj), "W")] = count["writes"]
        assert +got == +want, (result["scenario"], got, want)
        fg = sum(int(r["oom_score_adj"]) == 0 for r in rows)
        assert fg == result["fg_requests"] == result["by_class"]["foreground"]["requests"]
        assert abs(fg / len(rows) - share) < 0.01, (result["scenario"], fg / len(rows))
        assert abs(result["fg_share"] - fg / len(rows)) < 1e-6
        # hits: mincore counts a page under readahead I/O as absent, the recorder as a hit
        kernel_hits = sum(r["cache"] == "hit" for r in rows)
        assert result["hits"] <= kernel_hits <= result["hits"] + requests // 10, (result,
                                                                                   kernel_hits)
    assert set(push["by_oom_score_adj"]) == {"0", "500"}  # the foreground app, the services
    assert push_summary["processes"] == 3 and push_summary["files"] == 6
    # switch: 8 apps, the foreground moving (the controller's writes to /proc/<pid>/...)
    assert switch_summary["processes"] == 8 and switch["switches"] == 7
    adjs_of: dict[str, set[int]] = {}
    for r in switch_rows:
        adjs_of.setdefault(r["pid"], set()).add(int(r["oom_score_adj"]))
    assert sum(0 in adjs for adjs in adjs_of.values()) >= 3  # several apps were foreground
    assert any(len(adjs) >= 3 for adjs in adjs_of.values())
    assert {int(a) for a in switch["by_oom_score_adj"]} <= {0, 700, *range(900, 1000, 10)}

    # (b) the replay: the same stream back
    assert replay_summary["requests"] == len(records) == replay["requests"]
    want_stream = stream([("W" if r.write else "R", r.ino, r.index, r.pid, r.oom_adj)
                          for r in records])
    got_stream = stream([(r["op"], int(r["ino"]), int(r["index"]), int(r["pid"]),
                          int(r["oom_score_adj"])) for r in replay_rows])
    assert got_stream == want_stream
    assert len({r["dev"] for r in replay_rows}) == 1
    info, traced = read(tmp_path / "replay" / "trace.mlpt")
    assert info.oom_score_adj
    assert [t.oom_adj for t in traced] == [r.oom_adj for r in records]
    assert [t.index for t in traced] == [r.index for r in records]
    assert [t.write for t in traced] == [r.write for r in records]
    states = {0: "foreground", 500: "service", 700: "background", 900: "empty",
              -200: "service"}
    assert [t.state for t in traced] == [states[r.oom_adj] for r in records]
