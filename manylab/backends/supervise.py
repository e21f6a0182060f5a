"""A watched run of an emulator (QEMU, or gem5 with its terminal on stdout): the serial console
streams to console.log, the guest is stopped on a fatal kernel report or on the time limit, and
the run always returns (never hangs the lab).

The time limit counts the emulator's CPU time (user + system), so that a host loaded by other
runs does not stop a slow run as hung; an emulator that makes no progress at all (asleep, or
starved) is stopped at WALL_LIMIT_FACTOR times the limit in wall time."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from manylab.console import ConsoleState
from manylab.progress import say


@dataclass
class RunOutcome:
    console: ConsoleState
    returncode: int | None
    timed_out: bool
    seconds: float  # wall time
    boot_seconds: float | None
    stderr_tail: list[str] = field(default_factory=list)
    program: str = "QEMU"
    peak_rss_mib: float | None = None  # the emulator's peak resident memory (VmHWM)
    cpu_seconds: float | None = None  # the emulator's CPU time (user + system) when last read

    @property
    def failure(self) -> str | None:
        if self.console.failures:
            return self.console.reason
        if self.timed_out:
            where = "before boot finished" if not self.console.booted else "after boot"
            cpu = f"{self.cpu_seconds:.0f} s of {self.program} CPU time, " \
                if self.cpu_seconds is not None else ""
            return (f"hang: no exit within {cpu}{self.seconds:.0f} s wall ({where}; last "
                    f"console line: {self.console.last_line[:120]!r})")
        if self.console.exit_status is None:
            tail = reason_line(self.stderr_tail) or self.console.last_line[:120]
            return (f"{self.program} exited ({self.returncode}) before the workload finished: "
                    f"{tail}")
        return self.console.reason


REASON = re.compile(r"^(fatal|panic|[A-Za-z_.]*(Error|Exception))\b")


def reason_line(stderr_tail: list[str]) -> str:
    """The line of an emulator's last stderr lines that says why it stopped: the last error
    (gem5's fatal or panic, a Python exception) above a traceback, else the last line."""
    lines = [line.strip() for line in stderr_tail if line.strip()]
    for line in reversed(lines):
        if REASON.match(line):
            return line
    return lines[-1] if lines else ""


GRACE_AFTER_FATAL_S = 10.0
RSS_READ_EVERY_S = 0.5
QUIET_REPORT_EVERY_S = 300.0
WALL_LIMIT_FACTOR = 4.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

_live: set[subprocess.Popen[bytes]] = set()
_live_lock = threading.Lock()
_stopping = threading.Event()


class Interrupted(Exception):
    """The lab is stopping: the run was cut short and must leave no result."""


def stop_all() -> None:
    """Stop every running guest (on Ctrl-C or SIGTERM); their runs raise Interrupted."""
    _stopping.set()
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        _stop(proc)


def run(argv: list[str], console_log: Path, stderr_log: Path, timeout_s: float,
        program: str = "QEMU", on_line: Callable[[str], None] | None = None,
        label: str = "") -> RunOutcome:
    """Run the emulator (QEMU, or gem5 with its terminal on stdout), stream its console to
    console_log, and judge the run. on_line sees each console line as it arrives. While the
    console stays quiet, a line on stderr every QUIET_REPORT_EVERY_S says the run (label) goes
    on and how much of its CPU-time limit it has used."""
    state = ConsoleState()
    started = time.monotonic()
    heard_at = started
    boot_seconds: float | None = None
    wall_deadline = started + WALL_LIMIT_FACTOR * timeout_s
    fatal_deadline: float | None = None
    cpu_seconds: float | None = None
    timed_out = False
    with console_log.open("w") as sink, stderr_log.open("w") as err_sink:
        if _stopping.is_set():
            raise Interrupted
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err_sink, start_new_session=True)
        with _live_lock:
            _live.add(proc)
        try:
            assert proc.stdout is not None
            selector = selectors.DefaultSelector()
            selector.register(proc.stdout, selectors.EVENT_READ)
            pending = b""
            peak_rss_mib: float | None = None
            rss_read_at = 0.0
            while True:
                if time.monotonic() - rss_read_at > RSS_READ_EVERY_S:
                    rss_read_at = time.monotonic()
                    peak_rss_mib = _peak_rss_mib(proc.pid) or peak_rss_mib
                    cpu_seconds = _cpu_seconds(proc.pid) or cpu_seconds
                now = time.monotonic()
                if now - heard_at >= QUIET_REPORT_EVERY_S:
                    _report_quiet(label or program, program, now - started, cpu_seconds,
                                  timeout_s, state.last_line)
                    heard_at = now
                if fatal_deadline is not None:
                    if now >= fatal_deadline:
                        break
                elif now >= wall_deadline or (cpu_seconds or 0.0) >= timeout_s:
                    timed_out = True
                    break
                if not selector.select(timeout=1.0):
                    if proc.poll() is not None:
                        break
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                pending += chunk
                heard_at = time.monotonic()
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    text = raw.decode("utf-8", "replace")
                    sink.write(text + "\n")
                    state.feed(text)
                    if state.booted and boot_seconds is None:
                        boot_seconds = time.monotonic() - started
                    if on_line is not None:
                        sink.flush()
                        on_line(text)
                sink.flush()
                if state.fatal and fatal_deadline is None:
                    fatal_deadline = time.monotonic() + GRACE_AFTER_FATAL_S
            if pending:
                text = pending.decode("utf-8", "replace")
                sink.write(text)
                state.feed(text)
        finally:
            _stop(proc)
            with _live_lock:
                _live.discard(proc)
    if _stopping.is_set():
        raise Interrupted
    stderr_tail = stderr_log.read_text(errors="replace").strip().splitlines()[-40:]
    return RunOutcome(state, proc.returncode, timed_out, time.monotonic() - started,
                      boot_seconds, stderr_tail, program, peak_rss_mib, cpu_seconds)


def _report_quiet(label: str, program: str, wall_s: float, cpu_s: float | None,
                  timeout_s: float, last_line: str) -> None:
    cpu = f"{cpu_s:.0f}" if cpu_s is not None else "?"
    say(f"manylab: {label}: running for {wall_s:.0f} s, {cpu} of its {timeout_s:.0f} s limit of "
        f"{program} CPU time used; last console line {last_line[:80]!r}")


def _peak_rss_mib(pid: int) -> float | None:
    """The process's peak resident set so far (VmHWM), or None once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cpu_seconds(pid: int) -> float | None:
    """The process's CPU time so far, all its threads (utime + stime), or None once it has
    exited."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
