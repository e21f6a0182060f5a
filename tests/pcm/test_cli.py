"""The ``manylab pcm-policy`` subcommand: wiring, missing binary, end to end on tiny traces."""

from __future__ import annotations

import argparse
import csv
import io
import json
from pathlib import Path

import pytest

from manylab.pcm import cli, engine
from manylab.pcm.traceio import Record, read, read_csv_export, write_csv

HAVE_BINARY = engine.binary_path().is_file()
needs_binary = pytest.mark.skipif(not HAVE_BINARY, reason="manylab-pcmsim not built")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="manylab")
    register_into = p.add_subparsers(dest="command", required=True)
    cli.register(register_into)
    return p


def run_cli(*argv: str) -> int:
    args = parser().parse_args(list(argv))
    rc: int = args.func(args)
    return rc


def test_register_adds_subcommand_with_handler() -> None:
    args = parser().parse_args(["pcm-policy", "run", "--gen", "trace1", "--mem", "0.1,0.5"])
    assert args.func is cli.cmd_run
    assert args.mem == [0.1, 0.5]
    assert parser().parse_args(["pcm-policy"]).func(argparse.Namespace()) == 2


def test_bad_list_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["pcm-policy", "run", "--gen", "trace1", "--mem", "a,b"])
    assert "not a comma-separated list" in capsys.readouterr().err


def test_missing_binary_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(engine.ENV_VAR, str(tmp_path / "nope"))
    assert run_cli("pcm-policy", "run", "--gen", "trace1", "--out", str(tmp_path)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "scripts/setup.sh" in err and "nope" in err


def test_config_errors_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("pcm-policy", "run", "--gen", "trace1", "--policies", "lfu") == 1
    assert "unknown policy 'lfu'" in capsys.readouterr().err


def tiny_trace(path: Path) -> list[Record]:
    recs = [
        Record(
            index=i % 7,
            state="foreground" if i % 4 else "background",
            write=i % 3 == 0,
            time=i * 1000,
            dev=2049,
            ino=10 + (i % 2),
            pid=100 + (i % 4 == 0),
        )
        for i in range(400)
    ]
    with path.open("w") as f:
        write_csv(f, recs)
    return recs


@needs_binary
def test_run_on_csv_trace_writes_table_report_and_figures(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    tiny_trace(trace)
    out = tmp_path / "out"
    rc = run_cli("pcm-policy", "run", "--trace", str(trace), "--mem", "0.5,1.0", "--out", str(out))
    assert rc == 0
    with (out / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 4
    assert {r["policy"] for r in rows} == {"lru", "2q", "fgbg", "clock-dwf"}
    assert all(r["requests"] == "400" for r in rows)
    assert all(r["footprint"] in ("14", "14.0") for r in rows)  # 7 indices x 2 inodes
    full = [r for r in rows if float(r["mem_frac"]) == 1.0]
    assert all(float(r["hit_ratio"]) == pytest.approx(1 - 14 / 400) for r in full)
    assert (out / "report.md").read_text().startswith("# pcm-policy sweep: t.csv")
    assert (out / "fig-fg-time-t.csv.svg").is_file()
    assert (out / "fig-energy-t.csv.png").is_file()


@needs_binary
def test_gen_convert_and_read_agree(tmp_path: Path) -> None:
    b = tmp_path / "g.mlpt"
    c = tmp_path / "g.csv"
    assert run_cli("pcm-policy", "gen", "trace2", str(b), "--gen-set", "requests=500") == 0
    assert run_cli("pcm-policy", "convert", str(b), str(c)) == 0
    info, from_bin = read(b)
    with c.open() as fc:
        csv_info, rows = read_csv_export(fc)
        from_csv = list(rows)
    assert info.time_ns and csv_info == info
    assert len(from_bin) == 500 and from_bin == from_csv
    share = sum(r.state == "foreground" for r in from_bin) / 500
    assert 0.65 < share < 0.85  # trace 2: ~3:1


@needs_binary
def test_info_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    recs = tiny_trace(trace)
    assert run_cli("pcm-policy", "info", str(trace)) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["requests"] == len(recs)
    assert info["writes"] == sum(r.write for r in recs)
    assert info["footprint"] == 14


@needs_binary
def test_malformed_csv_error_names_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text("index,op,state\n1,R,foreground\n2,Q,foreground\n")
    assert run_cli("pcm-policy", "run", "--trace", str(trace), "--out", str(tmp_path / "o")) == 1
    assert "line 3 (record 2): bad op 'Q'" in capsys.readouterr().err


@needs_binary
def test_engine_jsonl_points_and_summary() -> None:
    text = engine.run(
        [
            "run",
            "--gen",
            "trace1",
            "--gen-set",
            "requests=2000",
            "--policies",
            "lru,fgbg",
            "--mem-pages",
            "100",
        ]
    )
    objs = engine.parse_jsonl(text)
    assert [o["type"] for o in objs] == ["point", "point", "summary"]
    assert objs[0]["frames"] == 100 and objs[0]["dram_frames"] == 5


def test_parse_jsonl_names_bad_line() -> None:
    with pytest.raises(engine.EngineError, match="line 2"):
        engine.parse_jsonl('{"a": 1}\nnot json\n')
    assert engine.parse_jsonl(io.StringIO("").getvalue()) == []
