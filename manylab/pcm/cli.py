"""``manylab pcm-policy``: sweeps of hybrid DRAM/PCM placement policies over page traces.

Sub-actions:
  run        one sweep over a trace file or a generated trace -> table, plots, report
  reproduce  both synthetic paper-shaped traces -> one report against the paper's numbers
  gen        write a synthetic trace (binary .mlpt or .csv)
  convert    binary <-> CSV
  info       trace summary (records, foreground share, footprint, duration)
  capture    a guest's recorded page-cache requests (pagereq dump on a hybrid-pcm kernel's
             console) -> .mlpt trace and requests.csv
  placement  a recorded full-system point: the kernel's placement against pcmsim's on the
             same requests (hit ratios, requests served from DRAM, pages moved)
  bench      requests per CPU-second and peak RSS per policy (figures, see manylab/pcm/bench.py)
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from manylab.errors import LabError
from manylab.pcm import bench, capture, engine, placement, plots, report
from manylab.pcm.sweep import POLICIES, SweepConfig, run_sweep, shape, write_table

SYNTHETIC_NOTE = (
    "The traces are synthetic (manylab-pcmsim's generator, shaped like the paper's two traces: "
    "trace1 = one foreground app with background pushes at ~15:1 foreground:background "
    "requests, trace2 = apps switching foreground/background at ~3:1). They are not the "
    "paper's Nexus 7 traces, so only the direction of the results is comparable."
)


def _floats(s: str) -> list[float]:
    try:
        return [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of numbers: '{s}'") from None


def _ints(s: str) -> list[int]:
    try:
        return [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: '{s}'") from None


def _kv(s: str) -> tuple[str, str]:
    if "=" not in s:
        raise argparse.ArgumentTypeError(f"expected key=value, got '{s}'")
    k, v = s.split("=", 1)
    return k.strip(), v.strip()


def _add_sweep_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policies", help=f"comma list of {','.join(POLICIES)} (default: all)")
    p.add_argument("--mem", type=_floats, help="memory sizes as fractions of the footprint")
    p.add_argument("--mem-pages", type=_ints, help="memory sizes in page frames")
    p.add_argument("--dram-share", type=_floats, help="DRAM share(s) of memory (default 0.05)")
    p.add_argument("--time-model",
                   help="time model preset: paper (default), paper-evict, paper-evict-fg")
    p.add_argument("--energy-model", help="energy model preset: table1 (default), table1-static")
    p.add_argument("--model-file", type=Path, help="model file (TOML [time]/[energy])")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=V",
        help="override a model key, e.g. time.pcm_write=60 (repeatable)",
    )
    p.add_argument(
        "--gen-set",
        action="append",
        type=_kv,
        default=[],
        metavar="KEY=V",
        help="generator parameter, e.g. requests=1000000, seed=2, zipf=0.8 (repeatable)",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the figures")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``pcm-policy`` subcommand to the ``manylab`` CLI."""
    top = subparsers.add_parser(
        "pcm-policy",
        help="hybrid DRAM/PCM page-placement policy sweeps (trace-driven)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.set_defaults(func=lambda args: _usage(top))
    sub = top.add_subparsers(dest="pcm_action", metavar="ACTION")

    run = sub.add_parser("run", help="one sweep -> results.csv, figures, report.md")
    src = run.add_mutually_exclusive_group()
    src.add_argument("--trace", type=Path, help="trace file (.mlpt binary or CSV)")
    src.add_argument("--gen", choices=("trace1", "trace2"), help="generate a synthetic trace")
    src.add_argument("--config", type=Path, help="sweep config TOML (see runs/pcm/*.toml)")
    _add_sweep_options(run)
    run.add_argument("--out", type=Path, default=Path("runs/pcm-policy"), help="output folder")
    run.set_defaults(func=cmd_run)

    rep = sub.add_parser("reproduce", help="both synthetic paper-shaped traces -> one report")
    _add_sweep_options(rep)
    rep.add_argument(
        "--sensitivity",
        action="store_true",
        help="also run write-heavy and 10M-request variants (memory 10%%, 50%%, 100%%)",
    )
    rep.add_argument("--out", type=Path, default=Path("runs/pcm-reproduce"), help="output folder")
    rep.set_defaults(func=cmd_reproduce)

    gen = sub.add_parser("gen", help="write a synthetic trace")
    gen.add_argument("kind", choices=("trace1", "trace2"))
    gen.add_argument("out", type=Path, help="output file (.csv for CSV, else binary .mlpt)")
    gen.add_argument("--gen-set", action="append", type=_kv, default=[], metavar="KEY=V")
    gen.set_defaults(func=cmd_gen)

    conv = sub.add_parser("convert", help="convert a trace between binary and CSV")
    conv.add_argument("input", type=Path)
    conv.add_argument("output", type=Path, help=".csv for CSV, anything else binary")
    conv.set_defaults(func=cmd_convert)

    info = sub.add_parser("info", help="trace summary as JSON")
    info.add_argument("trace", type=Path)
    info.set_defaults(func=cmd_info)

    cap = sub.add_parser("capture", help="a guest-recorded page-request trace -> .mlpt")
    cap.add_argument("source", type=Path,
                     help="a point folder, a study folder with one point, or a console log")
    cap.add_argument("--out", type=Path,
                     help=f"trace file (.mlpt, or .csv for CSV; default: {capture.TRACE} beside "
                          "the console log)")
    cap.add_argument("--requests", type=Path,
                     help=f"the kernel's view of each request (default: {capture.REQUESTS} "
                          "beside the trace)")
    cap.set_defaults(func=cmd_capture)

    pl = sub.add_parser("placement",
                        help="a recorded point's kernel placement against pcmsim's on its trace")
    pl.add_argument("point", type=Path, help="a point folder of a hybrid-pcm run that recorded "
                                             "with pagereq on a machine with a dram and a pcm node")
    pl.add_argument("--out", type=Path,
                    help="folder for trace.mlpt, requests.csv and placement.json (default: "
                         "the point folder)")
    pl.set_defaults(func=cmd_placement)

    b = sub.add_parser("bench", help="simulator requests per CPU-second and peak RSS (figures)")
    bench.add_arguments(b)
    b.set_defaults(func=cmd_bench)


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return 2


def _fail(msg: str) -> int:
    print(f"manylab pcm-policy: {msg}", file=sys.stderr)
    return 1


Command = Callable[[argparse.Namespace], int]


def _reported(command: Command) -> Command:
    """The subcommand's lab errors (bad config, simulator failure, unreadable file) as one
    line on stderr and exit status 1."""
    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except (LabError, OSError) as error:
            return _fail(str(error))
    return run


def _config(args: argparse.Namespace, gen: str | None = None) -> SweepConfig:
    base = SweepConfig()
    cfg_path: Path | None = getattr(args, "config", None)
    if cfg_path is not None:
        base = SweepConfig.from_toml(cfg_path)
    trace: Path | None = getattr(args, "trace", None)
    if gen is not None:
        base.trace, base.gen = None, gen
    elif trace is not None:
        base.trace, base.gen = trace, None
    elif getattr(args, "gen", None) is not None:
        base.trace, base.gen = None, args.gen
    if args.policies:
        base.policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if args.mem is not None:
        base.mem = args.mem
    if args.mem_pages is not None:
        base.mem_pages = args.mem_pages
        if args.mem is None:
            base.mem = []
    if args.dram_share is not None:
        base.dram_share = args.dram_share
    if args.time_model:
        base.time_model = args.time_model
    if args.energy_model:
        base.energy_model = args.energy_model
    if args.model_file is not None:
        base.model_file = args.model_file
    base.set = [*base.set, *args.set]
    base.gen_set = {**base.gen_set, **dict(args.gen_set)}
    base.validate()
    return base


def _sweep_to_rows(cfg: SweepConfig, out: Path, label: str) -> tuple[list[dict[str, Any]], Path]:
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / f"points-{label}.jsonl"
    objs = run_sweep(cfg, jsonl)
    summary = next((o for o in objs if o.get("type") == "summary"), None)
    if summary is not None:
        print(
            f"{label}: {summary.get('requests')} requests, footprint {summary.get('footprint')} "
            f"pages, {summary.get('points')} points in {float(summary.get('elapsed_s', 0)):.1f} s",
            file=sys.stderr,
        )
    return shape(objs, trace=label), jsonl


def _finish(
    rows: list[dict[str, Any]], out: Path, args: argparse.Namespace, title: str, notes: list[str]
) -> None:
    write_table(rows, out / "results.csv")
    figs = [] if args.no_plots else plots.plot_all(rows, out)
    (out / "report.md").write_text(report.render(rows, title, notes, figs))
    print(
        f"wrote {out / 'results.csv'}, {out / 'report.md'} and {len(figs)} figure files",
        file=sys.stderr,
    )


@_reported
def cmd_run(args: argparse.Namespace) -> int:
    cfg = _config(args)
    label = cfg.gen if cfg.gen is not None else cfg.label()
    rows, _ = _sweep_to_rows(cfg, args.out, str(label))
    notes = [SYNTHETIC_NOTE] if cfg.gen is not None else []
    _finish(rows, args.out, args, f"pcm-policy sweep: {label}", notes)
    return 0


# Variants of the synthetic traces for the sensitivity runs: what drives the magnitude.
VARIANTS: dict[str, dict[str, str]] = {
    "write-heavy": {"write_pages": "0.5", "write_prob": "0.8"},
    "long": {"requests": "10000000"},
    "long-write-heavy": {"requests": "10000000", "write_pages": "0.5", "write_prob": "0.8"},
}
SENSITIVITY_MEM = [0.1, 0.5, 1.0]


@_reported
def cmd_reproduce(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = []
    for kind in ("trace1", "trace2"):
        cfg = _config(args, gen=kind)
        r, _ = _sweep_to_rows(cfg, args.out, kind)
        rows += r
    for kind in ("trace1", "trace2") if args.sensitivity else ():
        for name, gen_set in VARIANTS.items():
            cfg = _config(args, gen=kind)
            cfg.gen_set = {**cfg.gen_set, **gen_set}
            if args.mem is None:
                cfg.mem = list(SENSITIVITY_MEM)
            r, _ = _sweep_to_rows(cfg, args.out, f"{kind}-{name}")
            rows += r
    _finish(
        rows,
        args.out,
        args,
        "Hybrid DRAM/PCM placement: paper vs synthetic traces",
        [SYNTHETIC_NOTE],
    )
    return 0


def _gen_args(pairs: list[tuple[str, str]]) -> list[str]:
    out: list[str] = []
    for k, v in pairs:
        out += ["--gen-set", f"{k}={v}"]
    return out


@_reported
def cmd_gen(args: argparse.Namespace) -> int:
    engine.run(["gen", "--gen", args.kind, *_gen_args(args.gen_set), "--out", str(args.out)])
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


@_reported
def cmd_convert(args: argparse.Namespace) -> int:
    engine.run(["convert", str(args.input), str(args.output)])
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


@_reported
def cmd_info(args: argparse.Namespace) -> int:
    objs = engine.parse_jsonl(engine.run(["info", str(args.trace)]))
    for o in objs:
        print(json.dumps(o, indent=2))
    return 0


@_reported
def cmd_capture(args: argparse.Namespace) -> int:
    console = capture.console_of(args.source)
    taken = capture.load(console)
    out = args.out or console.parent / capture.TRACE
    requests = args.requests or out.parent / capture.REQUESTS
    capture.write(taken, out, requests)
    print(json.dumps(capture.summary(taken)))
    print(f"wrote {out} and {requests}", file=sys.stderr)
    if taken.dropped:
        print(f"manylab pcm-policy: the guest's buffer was full: {taken.dropped} requests were "
              "not recorded (pagereq start DIR CAPACITY)", file=sys.stderr)
    return 0


@_reported
def cmd_placement(args: argparse.Namespace) -> int:
    out = args.out or args.point
    comparison = placement.compare(args.point, out / capture.TRACE)
    (out / placement.JSON).write_text(json.dumps(comparison.as_json(), indent=2) + "\n")
    print(placement.render(comparison), end="")
    return 0


@_reported
def cmd_bench(args: argparse.Namespace) -> int:
    bench.run(args.requests, args.policies, not args.no_file, not args.no_large)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m manylab.pcm.cli``); `manylab pcm-policy` is the same."""
    parser = argparse.ArgumentParser(prog="manylab")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register(subparsers)
    args = parser.parse_args(argv)
    rc: int = args.func(args)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
