from manylab.report import records
from tests.report.fakes import mmf_line, params, write_point


def test_each_result_line_is_a_record_with_the_point_parameters(tmp_path):
    study = tmp_path / "s"
    lines = [mmf_line("pipe", "normal", "l_open", 1024, 10.0, 5.0),
             mmf_line("pipe", "mmf", "l_open", 1024, 12.0, 4.0)]
    write_point(study, "p1", params("mmf", {"path": "pipe"}), lines, stats={"insns": 7})
    failing = params("mmf", {"path": "tcp"}, repeat=1)
    failing["plugin"]["enabled"] = True  # the same spec as p1; it failed before any stats
    write_point(study, "p2", failing, None, status="failed", reason="kernel panic")
    loaded = records.load(study)
    assert len(loaded.records) == 3 and len(loaded.inputs) == 2
    first, second, failed = loaded.records
    assert first["line"] == 0 and second["line"] == 1
    assert first["result.method"] == "normal" and second["result.latency_us.mean"] == 4.0
    assert first["workload.args.path"] == "pipe" and first["stats.insns"] == 7
    assert failed["status"] == "failed" and failed["reason"] == "kernel panic"
    assert "result.method" not in failed
    assert records.swept_params(loaded.records) == ["workload.args.path"]
    assert "result.throughput_mib_s" in records.numeric_columns(loaded.records, "result.")
    assert "result.method" not in records.numeric_columns(loaded.records, "result.")
    assert len(records.ok_records(loaded.records)) == 2


def test_report_folder_and_staging_folders_are_not_points(tmp_path):
    study = tmp_path / "s"
    write_point(study, "p1", params("pwriter", {}), [{"workload": "pwriter", "ok": True}])
    (study / "report").mkdir()
    (study / ".p2.staging-1").mkdir()
    assert [r["point"] for r in records.load(study).records] == ["p1"]


def test_a_point_stored_before_a_key_existed_reads_as_its_stored_default(tmp_path):
    study = tmp_path / "s"
    older = params("pwriter", {})
    assert "nvmain_clock" not in older["plugin"]  # a point run before the key was added
    newer = params("pwriter", {}, repeat=1)
    newer["plugin"]["nvmain_clock"] = "instructions"
    write_point(study, "p1", older, [{"workload": "pwriter", "ok": True}])
    write_point(study, "p2", newer, [{"workload": "pwriter", "ok": True}])
    loaded = records.load(study)
    assert [r["plugin.nvmain_clock"] for r in loaded.records] == ["instructions"] * 2
    assert records.swept_params(loaded.records) == []
