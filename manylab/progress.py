"""A one-line progress display for long work: done, running, failed, elapsed."""

from __future__ import annotations

import sys
import threading
import time

CLEAR_LINE = "\r\033[K"


def say(line: str) -> None:
    """One whole line on stderr; on a terminal it first clears a progress line, which the
    progress display's next update redraws."""
    sys.stderr.write((CLEAR_LINE if sys.stderr.isatty() else "") + line + "\n")
    sys.stderr.flush()


class Progress:
    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.failed = 0
        self.running = 0
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._tty = sys.stderr.isatty()

    def _show(self, message: str = "") -> None:
        elapsed = time.monotonic() - self.started
        line = (f"{self.label}: {self.done}/{self.total} done, {self.running} running, "
                f"{self.failed} failed, {elapsed:.0f} s")
        if message:
            line += f"  {message}"
        if self._tty:
            sys.stderr.write(CLEAR_LINE + line)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def start(self, name: str) -> None:
        with self._lock:
            self.running += 1
            self._show(f"started {name}")

    def finish(self, name: str, ok: bool, note: str = "") -> None:
        with self._lock:
            self.running -= 1
            self.done += 1
            self.failed += 0 if ok else 1
            self._show(f"{'ok' if ok else 'FAILED'} {name}{': ' + note if note else ''}")
            if self._tty and not ok:
                sys.stderr.write("\n")

    def close(self) -> None:
        if self._tty:
            sys.stderr.write("\n")
