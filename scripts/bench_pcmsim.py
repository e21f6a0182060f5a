#!/usr/bin/env python3
"""Simulator benchmark (not a test): requests per CPU-second and peak RSS per policy.

Usage: .venv/bin/python scripts/bench_pcmsim.py [--requests 10000000] [--policies lru,fgbg]
                                                [--no-file] [--no-large]
Same as ``manylab pcm-policy bench``; see manylab/pcm/bench.py for the cases.
Needs the release binary (cd pcmsim && cargo build --release).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from manylab.pcm import bench  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(bench.main())
