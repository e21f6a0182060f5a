"""The NVMain hook: stats import (on a recorded real output), the plugin's trace option, and a
run of the real NVMain when it is installed."""

import json
from collections import Counter
from pathlib import Path

import pytest

from manylab import nvmain, plan
from manylab import spec as specs
from manylab.backends.qemu import plugin
from manylab.cli import main
from manylab.errors import LabError
from manylab.params import PointParams

DATA = Path(__file__).resolve().parents[1] / "data/nvmain"
PCM = nvmain.CONFIG_DIR / "pcm.config"


def trace_requests(path: Path) -> list[tuple[str, int]]:
    lines = path.read_text().splitlines()
    assert lines[0].startswith("NVMV")
    return [(f[1], int(f[2], 16)) for f in (line.split() for line in lines[1:])]


def check_against_trace(summary: dict, trace: Path, config: dict[str, str]) -> None:
    """What NVMain must report for a trace under a Table-1 config, derived from both files."""
    requests = trace_requests(trace)
    reads = sum(op == "R" for op, _ in requests)
    writes = Counter(addr for op, addr in requests if op == "W")
    assert summary["reads"] == summary["requests.reads"] == reads
    assert summary["writes"] == summary["requests.writes"] == sum(writes.values())
    # Each 64-byte write: 512 bits at Ereset (zero data; Ereset = Eset in the config).
    bits = 64 * 8
    assert float(config["Ereset"]) == float(config["Eset"])
    expected_write = sum(writes.values()) * bits * float(config["Ereset"])
    assert summary["energy.write_nj"] == pytest.approx(expected_write)
    expected = expected_write + reads * float(config["Eopenrd"]) + sum(writes.values()) * float(
        config["Ewr"])
    assert summary["energy_nj"] == pytest.approx(expected)
    assert summary["endurance.max_word_writes"] == max(writes.values())
    assert summary["latency.avg_cycles"] > 0
    ns = 1000.0 / float(config["CLK"])
    assert summary["latency.avg_ns"] == pytest.approx(summary["latency.avg_cycles"] * ns)


def test_importer_on_a_recorded_nvmain_output():
    stats, exit_cycle = nvmain.parse_output((DATA / "pcm.out").read_text())
    assert exit_cycle is not None and exit_cycle > 0
    assert "defaultMemory.channel0.FRFCFS-WQF.mem_writes" in stats
    assert not any(key.startswith("i0.") for key in stats)
    summary = nvmain.summarize(stats, exit_cycle, nvmain.read_config(PCM))
    check_against_trace(summary, DATA / "tiny.nvt", nvmain.read_config(PCM))
    # The global cycle counts the config's CPUFreq (2000 MHz): half a nanosecond each.
    assert summary["time_ns"] == exit_cycle / 2


def test_parse_output_drops_units_histograms_and_nans():
    text = ("i0.a.energy 1.5nJ\ni0.a.power 2e-05W\ni0.a.histo {0: 1}\ni0.a.avg -nan\n"
            "i0.a.bw 12.5MB/s\nnoise 3\nExiting at cycle 42 because simCycles 0 reached.\n")
    stats, exit_cycle = nvmain.parse_output(text)
    assert stats == {"a.energy": 1.5, "a.power": 2e-05, "a.bw": 12.5}
    assert exit_cycle == 42


def test_config_reader_takes_nvmains_comment_syntax():
    keys = nvmain.read_config(PCM)
    # 400 MHz memory clock, tWP 400 cycles = 1000 ns: Table 1's ~1 us PCM write.
    assert int(keys["tWP"]) * 1000 / int(keys["CLK"]) == 1000
    assert keys["EnduranceModel"] == "WordModel"


def test_missing_binary_is_a_one_line_error(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(nvmain.ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LabError) as error:
        nvmain.binary()
    assert str(error.value) == nvmain.NOT_FOUND
    trace = tmp_path / "t.nvt"
    trace.write_text("NVMV0\n")
    assert main(["nvmain", str(trace), "--config", "pcm.config"]) == 2
    err = capsys.readouterr().err
    assert err == f"manylab: {nvmain.NOT_FOUND}\n"
    monkeypatch.setenv(nvmain.ENV, str(tmp_path / "nope"))
    with pytest.raises(LabError, match="MANYLAB_NVMAIN=.*nope is not an executable"):
        nvmain.binary()


def test_a_bad_override_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    assert nvmain.parse_override("BANKS=16") == ("BANKS", "16")
    for bad in ("BANKS", "=16", "BANKS=", "BANKS=1 6"):
        with pytest.raises(LabError, match="expected KEY=VALUE"):
            nvmain.parse_override(bad)
    trace = tmp_path / "t.nvt"
    trace.write_text("NVMV0\n")
    monkeypatch.setenv(nvmain.ENV, "/bin/true")
    assert main(["nvmain", str(trace), "--config", "pcm.config", "--set", "BANKS"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err


def test_unknown_config_names_the_choices():
    with pytest.raises(LabError, match="pcm.config"):
        nvmain.config_path("flash.config")
    assert nvmain.config_path("pcm.config") == PCM


def point(write_spec, extra: str) -> dict:
    spec = specs.load(write_spec('[workload]\nname = "pwriter"\n'
                                 "[machine]\nmemory = '1G'\nnuma = [{size='512M', cpus='0'}, "
                                 "{size='512M', device='pcm'}]\n" + extra))
    return plan.points(spec)[0].params


def test_spec_key_passes_the_trace_path_next_to_stats(write_spec):
    params = point(write_spec, "[plugin]\nenabled = true\nnvmain_trace = true\n")
    args = plugin.arguments(PointParams.from_dict(params), Path("/r/p/stats.json"),
                            Path("/k/System.map"))
    assert "nvmain_trace=/r/p/nvmain.trace" in args
    assert "mem=pcm:0x20000000:0x20000000" in args
    off = point(write_spec, "[plugin]\nenabled = true\n")
    assert not any(a.startswith("nvmain_trace=") for a in
                   plugin.arguments(PointParams.from_dict(off), Path("/r/p/stats.json"),
                                    Path("/k/System.map")))
    # The default keeps existing point ids: the key is not part of the id unless set.
    assert plan.point_id(off) != plan.point_id(params)
    assert "nvmain_trace" not in plan.identity(off).get("plugin", {})


def test_the_modelled_clock_reaches_the_plugin_and_nvmain(write_spec, tmp_path):
    params = point(write_spec, "[plugin]\nenabled = true\nnvmain_trace = true\n"
                               "nvmain_clock = 'modelled'\n")
    args = plugin.arguments(PointParams.from_dict(params), Path("/r/p/stats.json"),
                            Path("/k/System.map"))
    assert "nvmain_clock=modelled" in args
    default = point(write_spec, "[plugin]\nenabled = true\nnvmain_trace = true\n")
    assert not any(a.startswith("nvmain_clock=") for a in
                   plugin.arguments(PointParams.from_dict(default), Path("/r/p/stats.json"),
                                    Path("/k/System.map")))
    assert "nvmain_clock" not in plan.identity(default)["plugin"]
    with pytest.raises(specs.SpecError, match=r"\[plugin\] nvmain_clock: .*nvmain_trace = true"):
        point(write_spec, "[plugin]\nenabled = true\nnvmain_clock = 'modelled'\n")
    # `manylab nvmain` reads the clock from the point's inputs.json beside the trace.
    trace = tmp_path / "nvmain.trace"
    assert nvmain.trace_cpu_mhz(trace) is None
    (tmp_path / "inputs.json").write_text(json.dumps({"params": params}))
    assert nvmain.trace_cpu_mhz(trace) == nvmain.MODELLED_CPU_MHZ
    (tmp_path / "inputs.json").write_text(json.dumps({"params": default}))
    assert nvmain.trace_cpu_mhz(trace) is None


def test_spec_key_needs_the_full_model(write_spec):
    with pytest.raises(specs.SpecError, match=r"\[plugin\] nvmain_trace: .*mode = 'full'"):
        point(write_spec, "[plugin]\nenabled = true\nmode = 'count'\nnvmain_trace = true\n")
    params = point(write_spec, "[plugin]\nenabled = true\nnvmain_trace = true\n")
    params["plugin"]["mode"] = "count"
    with pytest.raises(LabError, match="mode = 'full'"):
        plugin.arguments(PointParams.from_dict(params), Path("/r/stats.json"),
                         Path("/k/System.map"))
    with pytest.raises(specs.SpecError):
        point(write_spec, "[plugin]\nnvmain_trace = 'yes'\n")


def test_real_nvmain_on_a_tiny_trace(tmp_path):
    try:
        nvmain.binary()
    except LabError:
        pytest.skip("NVMain not found: set MANYLAB_NVMAIN=/path/to/nvmain.fast "
                    "(nvmain-configs/README.md)")
    zero = "0" * 128
    lines = ["NVMV0"]
    for i in range(20):
        op = "W" if i % 4 == 3 else "R"
        addr = 0x80 if op == "W" else 0x2000 * i
        lines.append(f"{10 * i} {op} {addr:x} {zero} {i % 2}")
    trace = tmp_path / "t.nvt"
    trace.write_text("\n".join(lines) + "\n")
    result = nvmain.run(trace, PCM, tmp_path / "out")
    assert (tmp_path / "out/nvmain.json").is_file() and (tmp_path / "out/nvmain.log").is_file()
    summary = result["summary"]
    assert isinstance(summary, dict)
    check_against_trace(summary, trace, nvmain.read_config(PCM))
    # A trace in modelled nanoseconds: CPUFreq=1000 on the command line, one global cycle a ns.
    result = nvmain.run(trace, PCM, tmp_path / "ns", cpu_mhz=nvmain.MODELLED_CPU_MHZ)
    assert result["command"][-1] == "CPUFreq=1000"
    summary_ns = result["summary"]
    assert isinstance(summary_ns, dict)
    check_against_trace(summary_ns, trace, nvmain.read_config(PCM))
    assert summary_ns["time_ns"] == summary_ns["cycles.global"] >= 190
    # A config key overridden on NVMain's command line: four times the banks, same counts.
    banks = nvmain.run(trace, PCM, tmp_path / "banks", overrides=("BANKS=16",))
    assert "BANKS=16" in banks["command"]
    assert isinstance(banks["stats"], dict)
    assert any(".bank15." in key for key in banks["stats"])
    assert not any(".bank4." in key for key in result["stats"])  # type: ignore[union-attr]
    assert isinstance(banks["summary"], dict)
    check_against_trace(banks["summary"], trace, nvmain.read_config(PCM))

