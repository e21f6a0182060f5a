"""Reading a guest's serial console: result lines, the exit line, and kernel failure reports."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from manylab import kstats

RESULT_PREFIX = "MANYLAB-RESULT "
BOOTED_PREFIX = "MANYLAB-BOOTED"
EXIT_LINE = re.compile(r"MANYLAB-EXIT status=(\d+)")

# (pattern, reason prefix, fatal): a fatal report ends the run at once (the guest cannot go on).
FAILURES: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"Kernel panic - not syncing: ?(.*)"), "kernel panic", True),
    (re.compile(r"BUG: soft lockup - (.*)"), "soft lockup", False),
    (re.compile(r"kernel BUG at (\S+)"), "kernel BUG", False),
    (re.compile(r"BUG: (.*)"), "kernel BUG", False),
    (re.compile(r"^(?:Internal error: )?Oops: (.*)"), "kernel oops", False),
    (re.compile(r"general protection fault(.*)"), "general protection fault", False),
    (re.compile(r"Unable to handle kernel (.*)"), "kernel fault", False),
    (re.compile(r"WARNING: (.*)"), "kernel warning", False),
    (re.compile(r"rcu: INFO: (\S+ detected stalls.*)"), "RCU stall", False),
    (re.compile(r"INFO: task (.* blocked for more than .*)"), "hung task", False),
)
TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s*")


@dataclass
class ConsoleState:
    booted: bool = False
    exit_status: int | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    fatal: bool = False
    bad_results: int = 0
    kstats: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    bad_kstats: int = 0
    last_line: str = ""

    @property
    def reason(self) -> str | None:
        """Why the run failed, or None: the first kernel report wins over the exit status."""
        if self.failures:
            more = f" (+{len(self.failures) - 1} more reports)" if len(self.failures) > 1 else ""
            return self.failures[0] + more
        if self.bad_results:
            return f"{self.bad_results} MANYLAB-RESULT line(s) were not valid JSON"
        if self.exit_status not in (None, 0):
            return f"workload exited with status {self.exit_status}"
        return None

    def feed(self, raw_line: str) -> None:
        line = TIMESTAMP.sub("", raw_line.rstrip("\r\n"))
        if line.strip():
            self.last_line = line.strip()
        position = line.find(RESULT_PREFIX)
        if position >= 0:
            try:
                self.results.append(json.loads(line[position + len(RESULT_PREFIX):]))
            except json.JSONDecodeError:
                self.bad_results += 1
            return
        try:
            snapshot = kstats.parse_line(line)
        except ValueError:
            self.bad_kstats += 1
            return
        if snapshot is not None:
            label, group, values = snapshot
            self.kstats.setdefault(label, {})[group] = values
            return
        if BOOTED_PREFIX in line:
            self.booted = True
            return
        if match := EXIT_LINE.search(line):
            self.exit_status = int(match.group(1))
            return
        for pattern, prefix, fatal in FAILURES:
            if match := pattern.search(line):
                detail = match.group(1).strip()
                self.failures.append(f"{prefix}: {detail}" if detail else prefix)
                self.fatal = self.fatal or fatal
                return
