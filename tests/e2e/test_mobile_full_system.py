"""The mobile hybrid DRAM/PCM study in the full system (runs/pcm/full-system.toml, profile
`small`): mobileapps' push scenario on the hybrid-pcm kernel under the machine model, once per
placement policy (tiered, blind, importance), on a small DRAM node and a larger PCM node, with
the apps' files on a storage node (guest RAM served by the pmem driver). The model must count
both devices' energy over the request phase and every fill from storage as a CPU copy; under
the paper's policy, which
keeps the foreground app's page cache (15 of 16 requests) on DRAM, the kernel demotes from the
small DRAM to PCM and the model charges those copies, while the apps' own PCM writes stay
below the device-blind interleave's; and the report must set the policies against the
baseline with the paper's figures.

The kernel is the one tests/e2e/test_hybrid_pcm_policy.py builds (variant hybrid-pcm, no
fragments), so a warm cache serves both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.helpers import REPO, manylab, point_dirs, result_of, table

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]

SPEC = REPO / "runs" / "pcm" / "full-system.toml"
STUDY = "pcm-full-system-small"
POLICIES = ("tiered", "blind", "importance")
REQUESTS = 4000
LINES_PER_PAGE = 4096 // 64


Points = dict[str, dict[str, Any]]  # policy -> {"summary": stats summary, "result": line}


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("full-system")
    manylab("run", str(SPEC), "--profile", "small", "-j", "1", "--results-root", str(root))
    return root / STUDY


@pytest.fixture(scope="module")
def points(study: Path) -> Points:
    found: Points = {}
    for point in point_dirs(study):
        if not (point / "inputs.json").is_file():
            continue  # report/
        inputs = json.loads((point / "inputs.json").read_text())
        cmdline = inputs["params"]["kernel"]["cmdline"]
        policy = cmdline.rsplit("hybrid_pcm.policy=", 1)[1].split()[0]
        console = (point / "console.log").read_text(errors="replace")
        assert result_of(point)["status"] == "ok", (policy, result_of(point), console[-3000:])
        (line,) = json.loads((point / "workload.json").read_text())
        found[policy] = {"summary": json.loads((point / "stats.json").read_text())["summary"],
                         "result": line}
    assert sorted(found) == sorted(POLICIES)
    return found


def test_every_policy_ran_the_push_requests(points: Points) -> None:
    for policy, point in points.items():
        line = point["result"]
        assert line["ok"] is True and line["scenario"] == "push", policy
        assert line["requests"] == REQUESTS and line["fg_requests"] == REQUESTS * 15 // 16
        assert 0.0 < line["hit_ratio"] <= 1.0, (policy, line["hit_ratio"])


def test_the_model_counts_both_devices_over_the_request_phase(points: Points) -> None:
    for policy, point in points.items():
        summary = point["summary"]
        for key in ("roi.mem.dram.energy_nj", "roi.mem.pcm.energy_nj", "roi.mem.dram.writes",
                    "roi.mem.pcm.reads", "roi.time.modelled_ns"):
            assert summary.get(key, 0) > 0, (policy, key, summary.get(key))
        assert summary["roi.mem.energy_nj"] >= summary["roi.mem.dram.energy_nj"] + \
            summary["roi.mem.pcm.energy_nj"] - 1e-6 * summary["roi.mem.energy_nj"]


def test_the_model_sees_every_fill_from_the_storage_node(study: Path, points: Points) -> None:
    """A miss reads the page's 64 lines from storage (the pmem driver's copy) and writes them
    into the folio on DRAM or PCM: storage line reads cover the workload's misses (more with
    readahead), and storage stays out of the memory totals."""
    for policy, point in points.items():
        summary, line = point["summary"], point["result"]
        misses = line["requests"] - line["hits"]
        assert misses > 0, policy
        reads = summary["roi.mem.storage.reads"]
        assert reads >= LINES_PER_PAGE * misses, (policy, reads, misses)
        assert summary["roi.mem.reads"] == summary["roi.mem.dram.reads"] + \
            summary["roi.mem.mcdram.reads"] + summary["roi.mem.pcm.reads"], policy


def test_spans_time_the_requests_per_class(points: Points) -> None:
    """Each request's transfer is a span of its class (0 foreground, 2 service in push): the
    spans account for every request, few are lost to a migration, and their time lies
    within what the vCPUs spent in the ROI."""
    for policy, point in points.items():
        summary, line = point["summary"], point["result"]
        fg = summary["roi.time.span0.count"] + summary["roi.time.span0.lost"]
        service = summary["roi.time.span2.count"] + summary["roi.time.span2.lost"]
        assert (fg, service) == (line["fg_requests"], line["bg_requests"]), policy
        assert summary["roi.time.span0.lost"] <= 0.01 * fg, (policy, summary)
        timed = summary["roi.time.span0.cycles"] + summary["roi.time.span2.cycles"]
        assert 0 < timed <= summary["roi.time.cycles.sum"], (policy, timed)
        # a foreground request moves a 4 KiB page at least: 64 lines' worth of cycles
        assert summary["roi.time.span0.cycles"] > LINES_PER_PAGE * summary["roi.time.span0.count"]


def test_importance_demotes_and_the_model_charges_the_copies(study: Path,
                                                           points: Points) -> None:
    """Under importance the small DRAM fills with the foreground app's pages and the kernel
    demotes to PCM: every demoted page is a CPU copy whose 64 lines the model counts as PCM
    writes. Blind leaves demotion off."""
    rows = {row["kernel.cmdline"].rsplit("=", 1)[1]: row for row in table(study)}
    demoted = {p: sum(int(rows[p].get(f"kstat.roi.vmstat.pgdemote_{k}") or 0)
                      for k in ("kswapd", "direct")) for p in POLICIES}
    writes = {p: points[p]["summary"]["roi.mem.pcm.writes"] for p in POLICIES}
    assert demoted["blind"] == 0, demoted
    assert demoted["importance"] > 0, demoted
    assert writes["importance"] >= 0.9 * LINES_PER_PAGE * demoted["importance"], \
        (writes, demoted)
    # the rest of importance's PCM writes (the apps' own, beside the copies) stay below
    # blind's, which sends half of every app's pages to PCM
    rest = writes["importance"] - LINES_PER_PAGE * demoted["importance"]
    assert rest < writes["blind"], (writes, demoted)
    # the model prices them: PCM energy grows with its writes (10x DRAM's per bit)
    energy = {p: points[p]["summary"]["roi.mem.pcm.energy_nj"] for p in POLICIES}
    assert energy["blind"] > energy["tiered"], energy


def test_the_report_sets_the_policies_beside_the_paper(study: Path, points: Points) -> None:
    manylab("report", str(study))
    markdown = (study / "report" / "report.md").read_text()
    assert "mobileapps: placement policies against the LRU-like baseline" in markdown
    assert (study / "report" / "mobileapps-vs-baseline.png").is_file()
    rows = [line for line in markdown.splitlines() if line.startswith("| push |")]
    assert any("| importance |" in r and "memory energy cut" in r and "22%" in r
               and r.rstrip(" |").endswith("one run") for r in rows), rows
    assert any("| blind |" in r for r in rows) and any("| tiered |" in r for r in rows)
