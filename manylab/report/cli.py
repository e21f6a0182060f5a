"""The `report` and `compare` subcommands (registered by manylab.cli's EXTENSIONS)."""

from __future__ import annotations

import argparse
from pathlib import Path

from manylab import runner


def cmd_report(args: argparse.Namespace) -> int:
    from manylab.report.build import make_report

    index = make_report(runner.study_dir(args.study), Path(args.out) if args.out else None)
    print(index)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from manylab.report.compare import make_comparison

    index = make_comparison(runner.study_dir(args.a), runner.study_dir(args.b),
                            Path(args.out) if args.out else None, args.key, args.metric)
    print(index)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("report", help="write runs/<study>/report/ (HTML, Markdown, plots)")
    p.add_argument("study", help="runs/<study> folder or its spec")
    p.add_argument("--out", help="report folder (default: runs/<study>/report)")
    p.set_defaults(func=cmd_report)

    p = subparsers.add_parser("compare", help="two studies' results side by side, with ratios")
    p.add_argument("a", help="runs/<study> folder or spec (the baseline, A)")
    p.add_argument("b", help="runs/<study> folder or spec (B)")
    p.add_argument("--key", action="append", default=[],
                   help="distinguishing parameter, e.g. kernel.variant (default: every "
                        "parameter whose values differ between A and B)")
    p.add_argument("--metric", action="append", default=[],
                   help="result column to compare, e.g. result.throughput_mib_s")
    p.add_argument("--out", help="output folder (default: <A's parent>/compare-A-vs-B)")
    p.set_defaults(func=cmd_compare)
