"""The quick start as a new user runs it: runs/quickstart.toml under QEMU with the machine
model, its report in headless Chromium, led by what the model measured."""

import json
import re
from pathlib import Path

import pytest

from manylab import results
from tests.e2e.helpers import REPO, manylab
from tests.report import browser

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]


def cell(dom: str, table: str) -> list[list[str]]:
    """The body rows of the rendered table whose title starts with `table`."""
    found = re.search(r'<table data-title="' + re.escape(table) + r'[^"]*">(.*?)</table>', dom,
                      re.S)
    assert found, f"no table {table!r}"
    return [re.findall(r"<td>(.*?)</td>", row) for row in
            re.findall(r"<tr>(.*?)</tr>", found.group(1).split("</thead>")[1], re.S)]


@pytest.mark.skipif(browser.chromium() is None, reason="chromium not installed")
def test_quickstart_report_leads_with_coherence_and_pcm(tmp_path):
    root = tmp_path / "results"
    manylab("run", str(REPO / "runs" / "quickstart.toml"), "--results-root", str(root))
    study = root / "quickstart"
    table = results.load(study)
    assert len(table) == 4 and set(table["status"]) == {"ok"}
    assert (table["result.verified"] == True).all()  # noqa: E712 (a pandas column)
    out = manylab("report", str(study))
    index = Path(out.stdout.strip())
    images, _ = browser.check_page(index)
    dom = browser.dump_dom(index)
    # every link on the page that points at a file resolves
    for link in re.findall(r'href="([^"#]+)"', dom):
        if not re.match(r"[a-z]+:", link):
            assert (index.parent / link).is_file(), link
    assert len(images) >= 2
    first = re.search(r"<h2>(.*?)</h2>", dom)
    assert first and first.group(1) == "What the machine model measured (ROI)"
    head = dom[first.end():dom.index("<h2>", first.end())]
    assert "Coherence traffic: messages by type and mesh hops" in head
    assert "pcm writes" in head and "pcm energy µJ" in head
    # [procs, membind, dram reads, dram writes, dram µJ, pcm reads, pcm writes, pcm µJ, ...]
    memory = {(row[0], row[1]): row for row in cell(head, "Memory traffic per device")}
    as_number = lambda text: float(text.replace(",", ""))  # noqa: E731
    for procs in ("1", "4"):
        on_dram, on_pcm = memory[(procs, "0")], memory[(procs, "1")]
        # the files' pages on PCM: PCM takes the writes and most of the energy
        assert as_number(on_pcm[6]) > 10 * as_number(on_dram[6]), (on_dram, on_pcm)
        assert as_number(on_pcm[7]) > as_number(on_dram[4]), (on_dram, on_pcm)
    traffic = cell(head, "Coherence traffic")
    assert all(as_number(row[4]) > 0 and float(row[5]) > 1 for row in traffic), traffic
    functions = cell(head, "Kernel functions with the most coherence messages")
    assert all("copy_user" in row[2] for row in functions), functions
    # one ROI timeline per point, linked from the first section, valid trace-event JSON
    timelines = re.findall(r'href="(timeline-[^"]+\.json)"', head)
    assert len(timelines) == 4, timelines
    for name in timelines:
        trace = json.loads((index.parent / name).read_text())
        slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        assert {e["tid"] for e in slices} == {0, 1, 2, 3}
        assert {"phase1", "phase2", "base", "stall"} <= {e["name"] for e in slices}
        assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in slices)
