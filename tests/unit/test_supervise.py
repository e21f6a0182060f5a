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


def test_a_timeout_stops_the_emulator_and_says_so(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    outcome = supervise.run([sys.executable, "-c", CHILD, str(pid_file)],
                            tmp_path / "console.log", tmp_path / "stderr.log", timeout_s=2,
                            program="child")
    assert outcome.timed_out
    assert not _alive(int(pid_file.read_text()))
    assert (tmp_path / "console.log").read_text() == "first line\n"
