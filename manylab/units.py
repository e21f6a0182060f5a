"""The lab's units in spec text: sizes ('512M', '2G', a plain number of MiB) and CPU lists
('0-3,6'). Workloads in the guest have their own size rule (workloads/include/manylab_util.h)."""

from __future__ import annotations

import re

SIZE = re.compile(r"^(\d+)([KMGT]?)i?B?$", re.IGNORECASE)
SIZE_UNITS = {"": 1 << 20, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str | int) -> int:
    """Bytes in '512M', '2G', '4096K' or a plain number of MiB."""
    if isinstance(text, int):
        return text << 20
    match = SIZE.match(text.strip())
    if not match:
        raise ValueError(f"'{text}' is not a size like 512M or 2G")
    return int(match.group(1)) * SIZE_UNITS[match.group(2).upper()]


def parse_cpus(text: str) -> list[int]:
    """'0-3,6' -> [0, 1, 2, 3, 6]."""
    cpus: list[int] = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise ValueError(f"'{text}' is not a list like '0-3,6'")
        cpus.extend(range(int(first), int(last if dash else first) + 1))
    return cpus
