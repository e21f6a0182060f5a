"""Opening a report in headless Chromium: the DOM it renders and a screenshot."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    binary = chromium()
    assert binary, "chromium is not installed (scripts/setup.sh installs it)"
    with tempfile.TemporaryDirectory(prefix="manylab-chromium-") as profile:
        return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=180, check=False)


def dump_dom(page: Path) -> str:
    result = _run(["--dump-dom", page.resolve().as_uri()])
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def screenshot(page: Path, png: Path) -> None:
    result = _run([f"--screenshot={png}", "--window-size=1280,2000", page.resolve().as_uri()])
    assert result.returncode == 0 and png.is_file(), result.stderr[-2000:]


def check_page(page: Path) -> tuple[list[str], int]:
    """The image sources and the number of tables the browser rendered; every image exists."""
    dom = dump_dom(page)
    images = re.findall(r'<img src="([^"]+)"', dom)
    tables = len(re.findall(r"<table", dom))
    for source in images:
        assert (page.parent / source).is_file(), f"{source} is missing"
    return images, tables
