"""Guest-recorded page requests: the console lines of `pagereq dump` -> trace (hand-computed)."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import pytest

from manylab.pcm import capture, cli, engine
from manylab.pcm.capture import CaptureError, GuestRequest
from manylab.pcm.traceio import Record, TraceInfo, read

needs_binary = pytest.mark.skipif(not engine.binary_path().is_file(),
                                  reason="manylab-pcmsim not built (cargo build --release)")

# Two CPUs' chunks as the kernel prints them (buffer order), a kernel message and a workload
# result in between, then the dump's summary.
CONSOLE = """\
MANYLAB-BOOTED cpus=2 restored=1
MANYLAB-PAGEREQ 1000 0 80 0 W miss io 254:0 12 0 0
MANYLAB-PAGEREQ 1300 0 80 0 W hit io 254:0 12 0 0
[    3.141592] random: crng init done
MANYLAB-PAGEREQ 1100 1 81 700 R miss fault 254:0 13 5 1
MANYLAB-RESULT {"workload": "x", "ok": true}
MANYLAB-PAGEREQ 1200 1 81 700 R hit io 254:0 13 5 1
MANYLAB-RESULT {"tool": "pagereq", "records": 4, "dropped": 0, "capacity": 64}
MANYLAB-EXIT status=0
"""


def test_record_line_fields() -> None:
    r = capture.parse_record("1100 1 81 -300 W miss fault 259:300 13 5 -1")
    assert r == GuestRequest(1100, 1, 81, -300, True, False, True, 259, 300, 13, 5, -1)
    # new_encode_dev: minor's low byte | major << 8 | minor's high bits << 12
    assert r.dev == 0x2C | 259 << 8 | 0x100 << 12 == 1114924
    assert capture.parse_record("0 0 1 0 R hit io 254:0 1 0 0").dev == 0xFE00
    assert capture.parse_record("0 0 1 0 R hit io 8:17 1 0 0").dev == 0x811


@pytest.mark.parametrize(("line", "message"), [
    ("1 0 1 0 R hit io 254:0 1 0", "expected 11 fields, got 10"),
    ("1 0 1 0 X hit io 254:0 1 0 0", "bad op 'X'"),
    ("1 0 1 0 R maybe io 254:0 1 0 0", "bad cache result 'maybe'"),
    ("1 0 1 0 R hit dma 254:0 1 0 0", "bad path 'dma'"),
    ("1 0 1 0 R hit io 2540 1 0 0", "bad device '2540'"),
    ("1 0 1 zero R hit io 254:0 1 0 0", "a field is not a number"),
])
def test_bad_record_lines(line: str, message: str) -> None:
    with pytest.raises(CaptureError, match=f"^console line 2: {message}"):
        capture.parse(["MANYLAB-BOOTED", capture.PREFIX + line])


def test_parse_orders_by_time_and_checks_the_count() -> None:
    taken = capture.parse(CONSOLE.splitlines())
    assert [r.time_ns for r in taken.requests] == [1000, 1100, 1200, 1300]
    assert [r.cpu for r in taken.requests] == [0, 1, 1, 0]
    assert taken.dumps == [{"records": 4, "dropped": 0, "capacity": 64}]
    assert capture.summary(taken) == {"requests": 4, "reads": 2, "writes": 2, "hits": 2,
                                      "misses": 2, "faults": 1, "processes": 2, "files": 2,
                                      "pages": 2, "dropped": 0}


def test_lost_lines_and_missing_dump_are_errors() -> None:
    lines = CONSOLE.splitlines()
    with pytest.raises(CaptureError, match="announced 4 records, the console holds 3"):
        capture.parse([line for line in lines if "1300" not in line])
    with pytest.raises(CaptureError, match="no pagereq dump"):
        capture.parse([line for line in lines if '"tool"' not in line])


def test_trace_records_start_at_zero_with_raw_oom_score_adj() -> None:
    records = capture.trace_records(capture.parse(CONSOLE.splitlines()))
    assert records == [
        Record(0, "", True, 0, 0xFE00, 12, 80, 0),
        Record(5, "", False, 100, 0xFE00, 13, 81, 700),
        Record(5, "", False, 200, 0xFE00, 13, 81, 700),
        Record(0, "", True, 300, 0xFE00, 12, 80, 0),
    ]


def test_console_of_point_study_and_file(tmp_path: Path) -> None:
    point = tmp_path / "study" / "p1"
    point.mkdir(parents=True)
    (point / "console.log").write_text(CONSOLE)
    assert capture.console_of(point) == point / "console.log"
    assert capture.console_of(tmp_path / "study") == point / "console.log"
    assert capture.console_of(point / "console.log") == point / "console.log"
    (tmp_path / "study" / "p2").mkdir()
    (tmp_path / "study" / "p2" / "console.log").write_text("")
    with pytest.raises(CaptureError, match="2 points; name one of p1, p2"):
        capture.console_of(tmp_path / "study")
    with pytest.raises(CaptureError, match="no console.log"):
        capture.console_of(tmp_path / "study" / "p2" / "nothing")


@needs_binary
def test_capture_command_writes_trace_and_requests(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    point = tmp_path / "p"
    point.mkdir()
    (point / "console.log").write_text(CONSOLE)
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["pcm-policy", "capture", str(point)])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["requests"] == 4
    info, back = read(point / "trace.mlpt")
    assert info == TraceInfo(time_ns=True, oom_score_adj=True)
    assert [(r.time, r.state, r.oom_adj, r.write) for r in back] == [
        (0, "foreground", 0, True), (100, "background", 700, False),
        (200, "background", 700, False), (300, "foreground", 0, True)]
    with (point / "requests.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows[1] == {"time_ns": "100", "cpu": "1", "pid": "81", "oom_score_adj": "700",
                       "op": "R", "cache": "miss", "via": "fault", "dev": "254:0", "ino": "13",
                       "index": "5", "nid": "1"}
    info_line = json.loads(engine.run(["info", str(point / "trace.mlpt")]))
    assert info_line["requests"] == 4 and info_line["fg_requests"] == 2
    assert info_line["footprint"] == 2 and info_line["writes"] == 2


def test_capture_command_error_is_one_line(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "console.log").write_text("MANYLAB-BOOTED\n")
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["pcm-policy", "capture", str(tmp_path)])
    assert args.func(args) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no pagereq dump" in err
