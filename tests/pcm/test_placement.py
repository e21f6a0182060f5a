"""The kernel's placement against pcmsim's on the same recorded requests (hand-computed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from manylab.pcm import capture, cli, engine, placement
from manylab.pcm.capture import CaptureError

needs_binary = pytest.mark.skipif(not engine.binary_path().is_file(),
                                  reason="manylab-pcmsim not built (cargo build --release)")

# DRAM node 0 (1 usable page: 2 free and 1 file page less a high watermark of 2), PCM node 1
# (2 usable pages: 5 free less 3).
# The foreground app (pid 80, oom_score_adj 0) writes A, reads it back, reads C: the kernel
# demotes A to PCM to place C; the background one (81, 700) reads B twice from PCM; then the
# foreground rewrites A, which stays on PCM.
START = ('MANYLAB-RESULT {"tool": "pagereq-start", "free_pages": {"0": 2, "1": 5}, '
         '"file_pages": {"0": 1, "1": 0}, "high_watermark": {"0": 2, "1": 3}}\n')
CONSOLE = START + """\
MANYLAB-PAGEREQ 1000 0 80 0 W miss io 254:0 12 0 0
MANYLAB-PAGEREQ 1100 1 81 700 R miss io 254:0 13 0 1
MANYLAB-PAGEREQ 1200 0 80 0 R hit io 254:0 12 0 0
MANYLAB-PAGEREQ 1300 0 80 0 R miss io 254:0 12 1 0
MANYLAB-PAGEREQ 1400 1 81 700 R hit io 254:0 13 0 1
MANYLAB-PAGEREQ 1500 0 80 0 W hit io 254:0 12 0 1
MANYLAB-RESULT {"tool": "pagereq", "records": 6, "dropped": 0, "capacity": 64}
"""
NUMA = [{"size": "44M", "cpus": "0-1", "device": "dram"}, {"size": "96M", "device": "pcm"},
        {"size": "512M", "device": "storage"}]
KSTATS = {
    "roi_begin": {"vmstat": {"pgdemote_kswapd": 10, "pgdemote_direct": 0, "pgsteal_file": 7,
                             "nr_active_file": 9, "nr_inactive_file": 0},
                  "hybrid_pcm": {"promote_success": 4}},
    "roi_end": {"vmstat": {"pgdemote_kswapd": 11, "pgdemote_direct": 0, "pgsteal_file": 8,
                           "nr_active_file": 1, "nr_inactive_file": 2},
                "hybrid_pcm": {"promote_success": 4}},
}


def point(tmp_path: Path, console: str = CONSOLE, numa: list[dict[str, str]] = NUMA) -> Path:
    d = tmp_path / "hybrid-pcm-x86_64-2c-shell-r0-0"
    d.mkdir()
    (d / "result.json").write_text(json.dumps({"status": "ok"}))
    (d / "inputs.json").write_text(json.dumps({"params": {
        "machine": {"numa": numa},
        "kernel": {"cmdline": "memtier_slow_nodes=1 hybrid_pcm.policy=importance"}}}))
    (d / "kstats.json").write_text(json.dumps(KSTATS))
    (d / "console.log").write_text(console)
    return d


def test_node_pages_of_the_start_line() -> None:
    taken = capture.parse(CONSOLE.splitlines())
    assert taken.starts == [capture.NodePages({0: 2, 1: 5}, {0: 1, 1: 0}, {0: 2, 1: 3})]
    nodes = placement.usable_nodes(taken, 0, 1)
    assert (nodes.dram_pages, nodes.pcm_pages) == (1, 2)


def test_kernel_figures_by_hand() -> None:
    taken = capture.parse(CONSOLE.splitlines())
    nodes = placement.usable_nodes(taken, 0, 1)
    roi = {"vmstat.pgdemote_kswapd": 1, "vmstat.pgdemote_direct": 0, "vmstat.pgsteal_file": 1,
           "hybrid_pcm.promote_success": 0}  # no nr_ levels: no page cache figure
    k = placement.kernel_figures(taken.requests, nodes, roi)
    assert k["requests"] == 6 and k["foreground requests"] == 4
    assert k["hit ratio"] == 0.5 and k["foreground hit ratio"] == 0.5
    assert k["foreground served from DRAM"] == 0.75  # the write, the re-read, C
    assert k["background served from DRAM"] == 0.0
    assert k["hits in DRAM"] == pytest.approx(1 / 3)
    assert (k["pages moved to PCM (demoted)"], k["pages moved to DRAM (promoted)"],
            k["pages evicted to storage"]) == (1, 0, 0)  # pgsteal counts the demotion too
    assert k["page cache at the end (pages)"] is None


@needs_binary
def test_the_papers_policy_places_this_trace_as_the_kernel_did(tmp_path: Path) -> None:
    """fgbg on 1 DRAM + 2 PCM frames: A to DRAM, B to PCM, A hit (count 1), C's miss finds
    DRAM full: A's count falls to 0 and A moves to PCM; B hit on PCM; A's rewrite hits PCM with
    count 1, below the 2 that migrates it. Every figure equals the kernel's. LRU keeps all three
    pages in its three frames: the same hits, nothing moved or evicted."""
    d = point(tmp_path)
    c = placement.compare(d, tmp_path / "out" / capture.TRACE)
    assert c.policy == "importance"
    assert (tmp_path / "out" / capture.REQUESTS).is_file()
    assert c.figures["fgbg"] == c.figures["kernel"]
    lru = c.figures["lru"]
    assert c.figures["kernel"]["page cache at the end (pages)"] == 3  # levels at the end
    assert (lru["hit ratio"], lru["pages moved to PCM (demoted)"],
            lru["pages moved to DRAM (promoted)"], lru["pages evicted to storage"]) == (0.5, 0,
                                                                                       0, 0)
    table = placement.render(c)
    assert "| foreground served from DRAM | 0.750 | 0.750 |" in table


@needs_binary
def test_cli_writes_the_comparison_beside_the_point(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    d = point(tmp_path)
    assert cli.main(["pcm-policy", "placement", str(d)]) == 0
    assert "| hit ratio | 0.500 | 0.500 |" in capsys.readouterr().out
    saved = json.loads((d / placement.JSON).read_text())
    assert saved["nodes"]["dram_pages"] == 1 and saved["kernel_policy"] == "importance"
    assert (d / capture.TRACE).is_file()


def test_a_console_without_the_start_line_says_to_rebuild_the_image(tmp_path: Path) -> None:
    d = point(tmp_path, console=CONSOLE.split("\n", 1)[1])
    with pytest.raises(CaptureError, match="rebuild the image"):
        placement.compare(d, tmp_path / "t.mlpt")


def test_a_machine_without_a_pcm_node_is_refused(tmp_path: Path) -> None:
    d = point(tmp_path, numa=[{"size": "1G", "device": "dram"}])
    with pytest.raises(CaptureError, match="one dram and one pcm node"):
        placement.compare(d, tmp_path / "t.mlpt")


def test_a_bad_start_line_names_its_console_line() -> None:
    bad = 'MANYLAB-RESULT {"tool": "pagereq-start", "free_pages": 3}\n' + CONSOLE
    with pytest.raises(CaptureError, match="console line 1: pagereq-start: no 'free_pages'"):
        capture.parse(bad.splitlines())
