"""Python trace readers/writers: CSV errors, round trips, binary layout."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from manylab.pcm.traceio import (
    OOM_ADJ_UNKNOWN,
    STATES,
    BinaryReader,
    CsvReader,
    Record,
    TraceFormatError,
    TraceInfo,
    state_from_oom_adj,
    write_binary,
    write_csv,
)


def read_csv(text: str) -> list[Record]:
    return list(CsvReader(io.StringIO(text)))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty CSV trace: no header row"),
        ("# only a comment\n\n", "empty CSV trace: no header row"),
        ("index,state\n", "line 1: header must name the columns 'index' and 'op'"),
        ("index,op\n", "line 1: header must name 'state' or 'oom_adj'"),
        ("index,op,color\n", "line 1: unknown column 'color'"),
        ("index,op,op,state\n", "line 1: duplicate column 'op'"),
        ("index,op,state\n1,R,foreground\n2,X,foreground\n", "line 3 (record 2): bad op 'X'"),
        ("index,op,state\n1,R\n", "line 2 (record 1): expected 3 fields, got 2"),
        ("index,op,state\n#x\nq,R,empty\n", "line 3 (record 1): bad index 'q'"),
        ("index,op,state\n-1,R,empty\n", "line 2 (record 1): bad index '-1'"),
        ("index,op,state\n,R,empty\n", "line 2 (record 1): missing index"),
        ("index,op,state\n1,R,sleeping\n", "line 2 (record 1): bad state 'sleeping'"),
        ("index,op,state\n1,R,\n", "line 2 (record 1): no state and no oom_adj"),
        ("index,op,oom_adj\n1,R,x\n", "line 2 (record 1): bad oom_adj 'x'"),
        ("index,op,oom_adj\n1,R,40000\n", "line 2 (record 1): bad oom_adj '40000'"),
        ("index,op,state,pid\n1,R,empty,-3\n", "line 2 (record 1): bad pid '-3'"),
        ("index,op,state,dev\n1,R,empty,4294967296\n", "line 2 (record 1): bad dev"),
    ],
)
def test_csv_errors_name_line_and_record(text: str, message: str) -> None:
    with pytest.raises(TraceFormatError) as e:
        read_csv(text)
    assert str(e.value).startswith(message)


def test_csv_error_after_good_records_is_raised_when_reached() -> None:
    it = iter(CsvReader(io.StringIO("index,op,state\n1,R,empty\n2,R,empty\nbad,R,empty\n")))
    assert next(it).index == 1
    assert next(it).index == 2
    with pytest.raises(TraceFormatError, match=r"^line 4 \(record 3\)"):
        next(it)


def test_csv_defaults_and_oom_adj_mapping() -> None:
    recs = read_csv("# c\nindex,op,oom_adj\n7,W,0\n\n8,r,11\n9,read,-12\n")
    assert [r.state for r in recs] == ["foreground", "empty", "service"]
    assert [r.write for r in recs] == [True, False, False]
    assert [r.time for r in recs] == [0, 1, 2]  # default: record number - 1
    assert recs[0].dev == recs[0].ino == 0  # physical frame


def test_state_column_wins_over_oom_adj() -> None:
    (r,) = read_csv("index,op,state,oom_adj\n1,R,background,0\n")
    assert r.state == "background" and r.oom_adj == 0


@pytest.mark.parametrize(
    ("adj", "state"),
    [
        (0, "foreground"),
        (1, "visible"),
        (2, "visible"),
        (5, "service"),
        (7, "background"),
        (9, "empty"),
        (15, "empty"),
        (-17, "service"),
    ],
)
def test_oom_adj_mapping(adj: int, state: str) -> None:
    assert state_from_oom_adj(adj) == state


def test_csv_meta_line_round_trip() -> None:
    buf = io.StringIO()
    info = TraceInfo(time_ns=True, page_bytes=16384)
    write_csv(buf, [Record(3, "service", True, 5, 2049, 77, 42)], info)
    rd = CsvReader(io.StringIO(buf.getvalue()))
    assert rd.info.time_ns and rd.info.page_bytes == 16384
    assert list(rd) == [Record(3, "service", True, 5, 2049, 77, 42)]


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


@given(st.lists(records, max_size=30))
def test_binary_and_csv_round_trip(recs: list[Record]) -> None:
    b = io.BytesIO()
    assert write_binary(b, recs, TraceInfo(time_ns=True)) == len(recs)
    b.seek(0)
    rd = BinaryReader(b)
    assert rd.info.time_ns
    assert rd.info.records == (len(recs) or None)
    assert list(rd) == recs
    s = io.StringIO()
    write_csv(s, recs)
    assert list(CsvReader(io.StringIO(s.getvalue()))) == recs


def test_binary_layout_is_documented_one() -> None:
    b = io.BytesIO()
    write_binary(b, [Record(3, "visible", True, 10, 0x801, 13, 101, 1)])
    raw = b.getvalue()
    assert len(raw) == 32 + 40
    assert raw[:8] == b"MLPAGETR"
    assert raw[8:10] == (1).to_bytes(2, "little")  # version
    assert raw[24:32] == (1).to_bytes(8, "little")  # record count
    r = raw[32:]
    assert int.from_bytes(r[0:8], "little") == 10
    assert int.from_bytes(r[8:16], "little") == 13
    assert int.from_bytes(r[16:24], "little") == 3
    assert int.from_bytes(r[24:28], "little") == 0x801
    assert int.from_bytes(r[28:32], "little") == 101
    assert (r[32], r[33], r[34], r[35]) == (1, 0, 1, 1)


def test_binary_errors() -> None:
    with pytest.raises(TraceFormatError, match="bad magic"):
        BinaryReader(io.BytesIO(b"X" * 40))
    with pytest.raises(TraceFormatError, match="truncated"):
        BinaryReader(io.BytesIO(b"MLPAGETR"))
    b = io.BytesIO()
    write_binary(b, [Record(1, "empty", False), Record(2, "empty", False)])
    raw = bytearray(b.getvalue())
    raw[32 + 40 + 34] = 9
    with pytest.raises(TraceFormatError, match=r"^record 2: invalid state code 9"):
        list(BinaryReader(io.BytesIO(bytes(raw))))
    with pytest.raises(TraceFormatError, match=r"^record 2: truncated record \(35 of 40 bytes\)"):
        list(BinaryReader(io.BytesIO(b.getvalue()[:-5])))
    assert OOM_ADJ_UNKNOWN == -32768
