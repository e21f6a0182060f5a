"""What the host reads off a `hybrid-pcm` kernel's command line (kernel-patches/hybrid-pcm)."""

from __future__ import annotations

import re

_POLICY = re.compile(r"hybrid_pcm\.policy=(\S+)")


def policy_in(text: str) -> str | None:
    """The `hybrid_pcm.policy=` value given in a command line (or a `kernel.cmdline=...`
    setting), None when none is."""
    found = _POLICY.search(text)
    return found.group(1) if found else None
