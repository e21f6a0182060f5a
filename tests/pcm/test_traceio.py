"""Traces from Python: the CSV handed to the simulator, and round trips through it (the
simulator owns both trace forms; its own tests pin the .mlpt bytes)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from manylab.pcm import engine
from manylab.pcm.traceio import (
    OOM_ADJ_UNKNOWN,
    STATES,
    Record,
    TraceInfo,
    read,
    read_csv_export,
    write_csv,
    write_mlpt,
)

needs_binary = pytest.mark.skipif(not engine.binary_path().is_file(),
                                  reason="manylab-pcmsim not built (cargo build --release)")


def test_csv_text_is_the_simulators_input_form() -> None:
    buf = io.StringIO()
    n = write_csv(buf, [Record(3, "service", True, 5, 2049, 77, 42),
                        Record(9, "", False, 6, 0, 0, 0, 0)], TraceInfo(time_ns=True))
    assert n == 2
    assert buf.getvalue() == (
        "# mlpt time_ns=1 physical=0 page_bytes=4096\n"
        "time,dev,ino,index,pid,state,oom_adj,op\n"
        "5,2049,77,3,42,service,,W\n"
        "6,0,0,9,0,,0,R\n"
    )


def test_oom_score_adj_names_the_column() -> None:
    buf = io.StringIO()
    write_csv(buf, [Record(1, "", False, oom_adj=-900)], TraceInfo(oom_score_adj=True))
    assert buf.getvalue().splitlines()[1:] == [
        "time,dev,ino,index,pid,state,oom_score_adj,op",
        "0,0,0,1,0,,-900,R",
    ]


def test_csv_export_reader() -> None:
    text = ("# mlpt time_ns=1 physical=0 page_bytes=16384\n"
            "time,dev,ino,index,pid,state,oom_score_adj,op\n"
            "0,65024,12,3,101,background,700,W\n"
            "9,65024,12,4,101,foreground,,R\n")
    info, records = read_csv_export(io.StringIO(text))
    assert info == TraceInfo(time_ns=True, page_bytes=16384, oom_score_adj=True)
    assert list(records) == [Record(3, "background", True, 0, 65024, 12, 101, 700),
                             Record(4, "foreground", False, 9, 65024, 12, 101, OOM_ADJ_UNKNOWN)]


@needs_binary
def test_simulator_maps_oom_score_adj_to_android_states(tmp_path: Path) -> None:
    """Android 7+ writes oom_score_adj = its oom_adj classes x 100: 0 foreground, 100-299
    visible/perceptible, 300-599 backup/heavy/service, 600-899 home/previous/B-services,
    900+ cached; negative values are system services."""
    adjs = [0, 100, 250, 300, 500, 600, 700, 899, 900, 1000, -1000]
    want = ["foreground", "visible", "visible", "service", "service", "background",
            "background", "background", "empty", "empty", "service"]
    trace = tmp_path / "t.mlpt"
    assert write_mlpt(trace, [Record(i, "", i % 2 == 1, i, 1, 1, 7, adj)
                              for i, adj in enumerate(adjs)],
                      TraceInfo(time_ns=True, oom_score_adj=True)) == len(adjs)
    info, back = read(trace)
    assert info == TraceInfo(time_ns=True, oom_score_adj=True)
    assert [r.state for r in back] == want
    assert [r.oom_adj for r in back] == adjs
    assert [r.write for r in back] == [i % 2 == 1 for i in range(len(adjs))]


@needs_binary
def test_android_oom_adj_scale_is_the_default(tmp_path: Path) -> None:
    trace = tmp_path / "t.mlpt"
    write_mlpt(trace, [Record(i, "", False, oom_adj=adj) for i, adj in
                       enumerate([0, 1, 2, 5, 7, 9, 15, -17])])
    info, back = read(trace)
    assert not info.oom_score_adj
    assert [r.state for r in back] == ["foreground", "visible", "visible", "service",
                                       "background", "empty", "empty", "service"]


@needs_binary
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty CSV trace: no header row"),
        ("index,op\n", "line 1: header must name 'state', 'oom_adj' or 'oom_score_adj'"),
        ("index,op,state,oom_adj,oom_score_adj\n", "line 1: 'oom_adj' and 'oom_score_adj' are "
         "two scales of one field"),
        ("index,op,state\n1,R,foreground\n2,X,foreground\n", "line 3 (record 2): bad op 'X'"),
        ("index,op,oom_score_adj\n1,R,\n", "line 2 (record 1): no state and no oom_score_adj"),
        ("index,op,state,pid\n1,R,empty,-3\n", "line 2 (record 1): bad pid '-3'"),
    ],
)
def test_simulator_errors_name_line_and_record(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    with pytest.raises(engine.EngineError) as e:
        read(bad)
    assert message in str(e.value)


records = st.builds(
    Record,
    index=st.integers(0, 2**40 - 1),
    state=st.sampled_from(STATES),
    write=st.booleans(),
    time=st.integers(0, 2**64 - 1),
    dev=st.integers(0, 2**32 - 1),
    ino=st.integers(0, 2**64 - 1),
    pid=st.integers(0, 2**32 - 1),
    oom_adj=st.integers(-(2**15), 2**15 - 1),
)


@needs_binary
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(records, max_size=30), st.booleans())
def test_round_trip_through_the_simulator(tmp_path: Path, recs: list[Record],
                                          score: bool) -> None:
    info = TraceInfo(time_ns=True, oom_score_adj=score)
    trace = tmp_path / "rt.mlpt"
    assert write_mlpt(trace, recs, info) == len(recs)
    assert read(trace) == (info, recs)
