"""A real mmf study under QEMU, its report, and the page in headless Chromium."""

import json
import re

import pytest

from manylab import results
from tests.e2e.helpers import manylab, point_dirs
from tests.report import browser

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]

SPEC = """
[study]
name = "mmf-e2e"
repeats = 2
[machine]
arch = "x86_64"
vcpus = 2
memory = "512M"
[workload]
name = "mmf"
args = { path = ["pipe", "tcp"], sizes = "1K,1M", transfers = 3, warmup = 1 }
"""


@pytest.mark.skipif(browser.chromium() is None, reason="chromium not installed")
def test_mmf_study_report_opens_in_chromium(tmp_path):
    spec = tmp_path / "mmf-e2e.toml"
    spec.write_text(SPEC)
    root = tmp_path / "results"
    manylab("run", str(spec), "--results-root", str(root), "-j", "2")
    study = root / "mmf-e2e"
    dirs = point_dirs(study)
    assert len(dirs) == 4
    for point in dirs:
        lines = json.loads((point / "workload.json").read_text())
        assert len(lines) == 2 * 2 * 2  # sizes x opens x methods
        assert all(line["ok"] and line["verified"] for line in lines)
    table = results.load(study)
    assert len(table) == 4 and set(table["status"]) == {"ok"}
    assert sorted(table.attrs["swept"]) == ["repeat", "workload.args.path"]
    assert (study / "results.parquet").is_file()
    out = manylab("report", str(study))
    index = study / "report" / "index.html"
    assert out.stdout.strip() == str(index)
    images, tables = browser.check_page(index)
    assert images == ["mmf-throughput.png", "mmf-gain.png", "mmf-setup.png"]
    assert tables >= 5  # failed-free overview has none; kernels, tools, gains, setup, records
    text = index.read_text()
    assert re.search(r"mmf beats normal for large transfers&#x27; (partly )?(does not )?"
                     r"reproduces?: at sizes of 1 MiB and more", text)
    assert "linux-source-6.1" in text and "mmf-e2e.toml" in text
    shot = tmp_path / "report.png"
    browser.screenshot(index, shot)
    assert shot.stat().st_size > 10_000
