"""The emulator supervisor stops its process however the watching ends."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from manylab.backends import supervise

CHILD = ("import os, sys, time\n"
         "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
         "print('first line', flush=True)\n"
         "time.sleep(120)\n")


class Stop(Exception):
    pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_interrupt_while_watching_stops_the_emulator(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    def interrupt(line: str) -> None:
        raise Stop(line)

    with pytest.raises(Stop):
        supervise.run([sys.executable, "-c", CHILD, str(pid_file)], tmp_path / "console.log",
                      tmp_path / "stderr.log", timeout_s=60, program="child", on_line=interrupt)
    assert not _alive(int(pid_file.read_text()))
    assert not supervise._live


def test_an_emulator_without_progress_is_stopped_by_the_wall_backstop(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    outcome = supervise.run([sys.executable, "-c", CHILD, str(pid_file)],
                            tmp_path / "console.log", tmp_path / "stderr.log", timeout_s=0.5,
                            program="child")
    assert outcome.timed_out
    assert outcome.seconds >= supervise.WALL_LIMIT_FACTOR * 0.5
    assert outcome.cpu_seconds is not None and outcome.cpu_seconds < 0.5
    assert not _alive(int(pid_file.read_text()))
    assert (tmp_path / "console.log").read_text() == "first line\n"
    assert outcome.failure is not None and outcome.failure.startswith("hang: no exit within")


QUIET_CHILD = ("print('booted', flush=True)\n"
               "import time\n"
               "time.sleep(2.5)\n"
               "print('done', flush=True)\n")


def test_a_quiet_console_is_reported_as_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(supervise, "QUIET_REPORT_EVERY_S", 0.5)
    outcome = supervise.run([sys.executable, "-c", QUIET_CHILD], tmp_path / "console.log",
                            tmp_path / "stderr.log", timeout_s=60, program="child",
                            label="point p1")
    assert not outcome.timed_out
    reports = [line for line in capfd.readouterr().err.splitlines()
               if line.startswith("manylab: point p1: running for ")]
    # Quiet for 2.5 s after 'booted': reported at most every 0.5 s of silence.
    assert 1 <= len(reports) <= 5
    assert reports[-1].endswith("of its 60 s limit of child CPU time used; "
                                "last console line 'booted'")


def test_a_console_quiet_for_less_than_the_period_is_not_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(supervise, "QUIET_REPORT_EVERY_S", 30.0)
    supervise.run([sys.executable, "-c", QUIET_CHILD], tmp_path / "console.log",
                  tmp_path / "stderr.log", timeout_s=60, program="child")
    assert "running for" not in capfd.readouterr().err


BUSY_CHILD = ("print('first line', flush=True)\n"
              "while True:\n"
              "    pass\n")


def test_the_limit_counts_the_emulators_cpu_time(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # With the wall backstop out of reach, only the child's own CPU time can end the run.
    monkeypatch.setattr(supervise, "WALL_LIMIT_FACTOR", 100.0)
    outcome = supervise.run([sys.executable, "-c", BUSY_CHILD], tmp_path / "console.log",
                            tmp_path / "stderr.log", timeout_s=1, program="child")
    assert outcome.timed_out
    assert outcome.cpu_seconds is not None and outcome.cpu_seconds >= 1
    assert outcome.failure is not None and "s of child CPU time" in outcome.failure


def test_the_reason_of_an_early_exit_is_the_error_above_a_traceback():
    gem5 = ["warn: something harmless",
            "AttributeError: 'SimObjectVector' object has no attribute '_parent'",
            "",
            "At:",
            "  src/python/m5/SimObject.py(972): add_child",
            "  src/python/m5/main.py(669): main"]
    assert supervise.reason_line(gem5).startswith("AttributeError: 'SimObjectVector'")
    fatal = ["info: Entering event queue", "fatal: Could not open the disk image",
             "Memory Usage: 1234 KBytes"]
    assert supervise.reason_line(fatal) == "fatal: Could not open the disk image"
    assert supervise.reason_line(["qemu: could not load kernel", ""]) == \
        "qemu: could not load kernel"
    assert supervise.reason_line([]) == ""
