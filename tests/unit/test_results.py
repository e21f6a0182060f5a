import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from manylab import atomic, results, runner
from manylab.backends import qemu as qemu_backend
from manylab.backends.qemu import command as qemu
from manylab.params import SCHEMA
from manylab.plan import Point
from manylab.runner import select as _selected

QEMU_NOW = "QEMU emulator version 10.0.2"


KERNEL_NOW, IMAGE_NOW, PLUGIN_NOW = "k" * 20, "i" * 20, "p" * 64


def make_point(study: Path, name: str, status: str | None, outputs=None, stats=None,
               emulator: str = QEMU_NOW, kernel: str = KERNEL_NOW, image: str = IMAGE_NOW,
               plugin: str = PLUGIN_NOW, restored: bool = True) -> Path:
    folder = study / name
    folder.mkdir(parents=True)
    (folder / "inputs.json").write_text(json.dumps(
        {"params": {"machine": {"vcpus": 2}, "workload": {"name": "pwriter", "args": {}}},
         "qemu": {"version": emulator}, "kernel": {"key": kernel}, "image": {"key": image},
         "plugin": {"sha256": plugin}, **({"snapshot": {"key": "s" * 20}} if restored else {})}))
    (folder / "workload.json").write_text(json.dumps(outputs or []))
    if stats is not None:
        (folder / "stats.json").write_text(json.dumps(stats))
    if status is not None:
        atomic.write_json(folder / "result.json", {
            "point": name, "status": status, "reason": None if status == "ok" else "boom",
            "timing": {"total_s": 1.5, "boot_s": 0.5}})
    return folder


def test_table_rows_flatten_params_results_and_plugin_summary(tmp_path):
    make_point(tmp_path, "a", "ok", [{"write": {"mib_s": 10.0}, "per": [1, 2]}],
               {"summary": {"roi.coh.msgs.inv": 7}})
    make_point(tmp_path, "b", "failed")
    make_point(tmp_path, "c", None)  # no result.json: incomplete, not in the table
    (tmp_path / ".d.staging-1").mkdir()  # a run in progress
    with (results.write_table(tmp_path)).open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["point"] for r in rows] == ["a", "b"]
    a, b = rows
    assert a["status"] == "ok" and a["machine.vcpus"] == "2"
    assert a["result.write.mib_s"] == "10.0" and a["result.per"] == "[1,2]"
    assert a["stats.roi.coh.msgs.inv"] == "7" and a["timing.boot_s"] == "0.5"
    assert b["status"] == "failed" and b["reason"] == "boom" and b["result.write.mib_s"] == ""


def test_old_stats_files_mem_time_ns_reads_as_service_ns():
    old = {"summary": {"roi.mem.time_ns": 5.0, "roi.mem.pcm.time_ns": 3.0, "roi.insts": 9,
                       "region1.phase2.mem.dram.time_ns": 2.0}}
    assert results.stats_columns(old, []) == {
        "stats.roi.mem.service_ns": 5.0, "stats.roi.mem.pcm.service_ns": 3.0,
        "stats.roi.insts": 9, "stats.region1.phase2.mem.dram.service_ns": 2.0}
    new = {"summary": {"roi.mem.service_ns": 5.0, "roi.time.modelled_ns": 1.5}}
    assert results.stats_columns(new, []) == {"stats.roi.mem.service_ns": 5.0,
                                              "stats.roi.time.modelled_ns": 1.5}
    assert results.renamed_summary_key("roi.time.modelled_ns") == "roi.time.modelled_ns"


def test_load_gives_a_dataframe_with_the_swept_keys_and_a_parquet_copy(tmp_path):
    make_point(tmp_path, "a", "ok", [{"size": "4M", "mib_s": 10.0}],
               {"summary": {"roi.coh.msgs.inv": 7}})
    b = make_point(tmp_path, "b", "ok", [{"size": 4096, "mib_s": 12.5}])
    inputs = json.loads((b / "inputs.json").read_text())
    inputs["params"]["machine"]["vcpus"] = 8
    (b / "inputs.json").write_text(json.dumps(inputs))
    make_point(tmp_path, "c", "failed")
    make_point(tmp_path, "d", None)  # unfinished: not a row
    df = results.load(tmp_path)
    assert list(df["status"]) == ["ok", "ok", "failed"] and df["reason"].iloc[2] == "boom"
    df = df[df["status"] == "ok"]
    assert list(df["point"]) == ["a", "b"]
    assert list(df["machine.vcpus"]) == [2, 8]
    assert df.attrs["swept"] == ["machine.vcpus"]
    assert list(df["result.mib_s"]) == [10.0, 12.5]
    assert list(df["result.size"]) == ["4M", "4096"]  # mixed number/text: stored as text
    assert df["stats.roi.coh.msgs.inv"].iloc[0] == 7
    results.write_table(tmp_path)
    parquet = pd.read_parquet(tmp_path / results.PARQUET_FILE)
    assert list(parquet["point"]) == ["a", "b", "c"]
    assert list(parquet["machine.vcpus"]) == [2, 8, 2]


def test_load_names_a_missing_study(tmp_path):
    with pytest.raises(FileNotFoundError, match="manylab run"):
        results.load(tmp_path / "nothing")


def test_several_result_lines_get_indexed_prefixes(tmp_path):
    make_point(tmp_path, "a", "ok", [{"size": 1}, {"size": 2}])
    (row,) = results.rows(tmp_path)
    assert row["result0.size"] == 1 and row["result1.size"] == 2


@pytest.fixture
def qemu_now(monkeypatch):
    monkeypatch.setattr(qemu, "binary", lambda arch: f"/usr/bin/qemu-{arch}")
    monkeypatch.setattr(qemu, "version", lambda path: QEMU_NOW)
    monkeypatch.setattr(runner, "_kernel_key_now", lambda request: KERNEL_NOW)
    monkeypatch.setattr(runner, "_image_key_now", lambda arch, bundles=(): IMAGE_NOW)
    monkeypatch.setattr(qemu_backend, "plugin_sha_now", lambda: PLUGIN_NOW)


def full_params(quantum: int = 1000) -> dict:
    """A complete validated point (the schema's defaults), as the planner makes them."""
    params = {section: {key: field.default for key, field in fields.items()}
              for section, fields in SCHEMA.items()
              if section in ("kernel", "machine", "workload", "plugin", "gem5")}
    params["workload"]["name"] = "pwriter"
    params["machine"]["quantum"] = quantum
    params["repeat"] = 0
    return params


X86 = full_params()


def test_rerun_selection(tmp_path, qemu_now):
    make_point(tmp_path, "ok", "ok")
    make_point(tmp_path, "bad", "failed")
    make_point(tmp_path, "half", None)
    points = [Point(name, X86) for name in ("ok", "bad", "half", "new")]

    def chosen(force=False, retry=False):
        return [p.id for p in _selected(points, tmp_path, force, retry)]

    assert chosen() == ["half", "new"]
    assert chosen(retry=True) == ["bad", "half", "new"]
    assert chosen(force=True) == ["ok", "bad", "half", "new"]


def test_points_of_another_emulator_run_again(tmp_path, qemu_now, capsys):
    make_point(tmp_path, "old-ok", "ok", emulator="QEMU emulator version 7.2.22")
    make_point(tmp_path, "old-failed", "failed", emulator="QEMU emulator version 7.2.22")
    make_point(tmp_path, "new-ok", "ok")
    points = [Point(name, X86) for name in ("old-ok", "old-failed", "new-ok")]
    assert [p.id for p in _selected(points, tmp_path, False, False)] == ["old-ok", "old-failed"]
    assert "2 stored points were made from other inputs (2 by another QEMU version)" in \
        capsys.readouterr().err


def test_points_of_another_kernel_image_or_plugin_run_again(tmp_path, qemu_now, capsys):
    make_point(tmp_path, "kernel", "ok", kernel="x" * 20)
    make_point(tmp_path, "image", "ok", image="x" * 20)
    make_point(tmp_path, "plugin", "ok", plugin="x" * 64)
    make_point(tmp_path, "current", "ok")
    points = [Point(name, X86) for name in ("kernel", "image", "plugin", "current")]
    assert [p.id for p in _selected(points, tmp_path, False, False)] == \
        ["kernel", "image", "plugin"]
    assert ("3 stored points were made from other inputs (1 by another kernel, 1 by another "
            "root image, 1 by another plugin)") in capsys.readouterr().err
    no_plugin = full_params(quantum=0)
    assert _selected([Point("plugin", no_plugin)], tmp_path, False, False) == []


def test_points_booted_where_a_snapshot_is_wanted_run_again(tmp_path, qemu_now, capsys):
    make_point(tmp_path, "booted", "ok", restored=False)
    make_point(tmp_path, "restored", "ok")
    points = [Point(name, X86) for name in ("booted", "restored")]
    assert [p.id for p in _selected(points, tmp_path, False, False)] == ["booted"]
    assert "1 by another snapshot setting" in capsys.readouterr().err
    cold = full_params()
    cold["machine"]["snapshot"] = "off"
    assert [p.id for p in _selected([Point("booted", cold), Point("restored", cold)],
                                     tmp_path, False, False)] == ["restored"]


def test_replace_dir_swaps_whole_folders(tmp_path):
    final = tmp_path / "point"
    final.mkdir()
    (final / "old").write_text("1")
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "new").write_text("2")
    atomic.replace_dir(staging, final)
    assert sorted(p.name for p in final.iterdir()) == ["new"]
    assert not staging.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["point"]


def test_function_patterns_sum_matching_functions_and_name_the_hottest_line():
    stats = {"regions": {"roi": {
        "functions": [
            {"name": "native_queued_spin_lock_slowpath", "insts": 100, "coh.msgs": 40,
             "l1d.misses": 7},
            {"name": "folio_lruvec_lock_irqsave", "insts": 10, "coh.msgs": 5, "l1d.misses": 1},
            {"name": "folio_lruvec_relock_irq", "insts": 3, "coh.msgs": 2, "l1d.misses": 0},
        ],
        "hot_lines": [{"paddr": "0x1000", "symbol": "", "coh.msgs": 9},
                      {"paddr": "0x2000", "symbol": "lru_lock_line", "coh.msgs": 30}]}}}
    columns = results.function_columns(stats, ["*spin_lock_slowpath", "folio_lruvec_*", "nope"])
    assert columns["fn.*spin_lock_slowpath.insts"] == 100
    assert columns["fn.folio_lruvec_*.coh.msgs"] == 7
    assert columns["fn.folio_lruvec_*.l1d.misses"] == 1
    assert columns["fn.nope.insts"] == 0
    assert columns["hotline.roi.coh.msgs"] == 30
    assert columns["hotline.roi.symbol"] == "lru_lock_line"


def test_paths_columns_count_a_function_matched_by_two_patterns_once():
    stats = {"regions": {"roi": {"functions": [
        {"name": "folio_lruvec_lock_irq", "insts": 10, "coh.msgs": 5, "l1d.misses": 1},
        {"name": "release_pages", "insts": 7, "coh.msgs": 3, "l1d.misses": 2}]}}}
    columns = results.function_columns(stats, ["folio_lruvec_*", "*_lock_irq", "release_*"])
    assert columns["fn.folio_lruvec_*.insts"] == 10
    assert columns["fn.*_lock_irq.insts"] == 10
    assert columns["paths.insts"] == 17
    assert columns["paths.coh.msgs"] == 8
    assert columns["paths.l1d.misses"] == 3
    assert "paths.insts" not in results.function_columns(stats, [])
