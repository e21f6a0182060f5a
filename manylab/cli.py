"""The `manylab` command: plan, build, run, status, table, boot, run-point."""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import sys
from pathlib import Path

from manylab import image, kernel, keys, plan, pointdir, results, runner
from manylab import spec as specs
from manylab.backends.supervise import Interrupted
from manylab.errors import LabError
from manylab.paths import RUNS_DIR
from manylab.schedulers.base import PointJob, PointState, Scheduler, StudyJobs
from manylab.schedulers.resources import resources


def _scheduler(name: str, jobs: int) -> Scheduler:
    if name == "local":
        from manylab.schedulers.local import LocalScheduler

        return LocalScheduler(jobs)
    if name == "slurm":
        try:
            from manylab.schedulers.slurm import SlurmScheduler
        except ImportError:
            raise LabError("the slurm scheduler is not part of this version") from None
        scheduler: Scheduler = SlurmScheduler()
        return scheduler
    raise LabError(f"unknown scheduler '{name}' (local or slurm)")


def cmd_plan(args: argparse.Namespace) -> int:
    spec = specs.load(Path(args.spec), args.profile)
    points = plan.points(spec)
    if args.json:
        print(json.dumps([{"id": p.id, "params": p.params} for p in points], indent=2))
        return 0
    keys = plan.swept_keys(spec)
    for point in points:
        print(f"{point.id}  {plan.describe(point, keys)}")
    print(f"{len(points)} points in study '{spec.name}' -> {runner.results_dir(spec)}/",
          file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    spec = specs.load(Path(args.spec), args.profile)
    points = plan.points(spec)
    root = Path(args.results_root) if args.results_root else RUNS_DIR
    study_dir = runner.results_dir(spec, root)
    chosen = runner.select(points, study_dir, args.force, args.retry_failed)
    skipped = len(points) - len(chosen)
    print(f"manylab: study '{spec.name}': {len(points)} points, {len(chosen)} to run, "
          f"{skipped} already complete", file=sys.stderr)
    status = 0
    batch_options = _scheduler_options(args)
    if batch_options and args.scheduler != "slurm":
        raise LabError("--dry-run, --build-job, --partition, --account, --qos, --time, "
                       "--max-array and --throttle need --scheduler slurm")
    if chosen:
        if not (args.slurm_dry_run or args.slurm_build_job):
            runner.build_for(chosen)
        scheduler = _scheduler(args.scheduler, args.jobs)
        work = StudyJobs(spec.name, Path(args.spec).resolve(), study_dir,
                         [PointJob(p.id, resources(spec, p.config), p) for p in chosen],
                         {"profile": args.profile or "", "force": "yes" if args.force else "",
                          "retry_failed": "yes" if args.retry_failed else "",
                          **batch_options},
                         spec)
        status = scheduler.submit(work)
    if study_dir.is_dir():
        table = results.write_table(study_dir)
        print(f"manylab: results in {study_dir}/ (table: {table})")
    return status


def _scheduler_options(args: argparse.Namespace) -> dict[str, str]:
    return {key: str(value) for key, value in vars(args).items()
            if key.startswith("slurm_") and value is not None}


def cmd_run_point(args: argparse.Namespace) -> int:
    spec = specs.load(Path(args.spec), args.profile)
    point = plan.find(spec, args.point)
    root = Path(args.results_root) if args.results_root else RUNS_DIR
    result = runner.run_point(spec, point, root)
    print(json.dumps(result))
    return 0 if result["status"] == "ok" else 1


def cmd_status(args: argparse.Namespace) -> int:
    study_dir = runner.study_dir(args.study)
    spec_path = Path(args.study) if args.study.endswith(".toml") else \
        RUNS_DIR / f"{study_dir.name}.toml"
    expected = [p.id for p in plan.points(specs.load(spec_path))] if spec_path.is_file() else []
    scheduler_view = _scheduler(args.scheduler, 1).states(study_dir)
    states: dict[str, str] = {}
    recorded = {p.parent.name for p in study_dir.glob(f"*/{pointdir.INPUTS}")}
    for point_id in expected or sorted(recorded | set(scheduler_view)):
        result = pointdir.read_result(study_dir / point_id)
        live = scheduler_view.get(point_id)
        if live in (PointState.PENDING, PointState.RUNNING):
            states[point_id] = live.value  # queued again (retry or --force) over an old result
        elif result is not None:
            states[point_id] = "done" if result["status"] == "ok" else "failed"
            if result["status"] != "ok":
                states[point_id] += f" ({result['reason']})"
        else:
            states[point_id] = scheduler_view.get(point_id, PointState.PENDING).value
    counts: dict[str, int] = {}
    for point_id, state in states.items():
        print(f"{point_id}  {state}")
        word = state.split(" ")[0]
        counts[word] = counts.get(word, 0) + 1
    print(", ".join(f"{n} {word}" for word, n in sorted(counts.items())) or "no points",
          file=sys.stderr)
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    cancelled = _scheduler(args.scheduler, 1).cancel(runner.study_dir(args.study))
    print(f"manylab: cancelled {cancelled} queued or running points", file=sys.stderr)
    return 0


def cmd_table(args: argparse.Namespace) -> int:
    print(results.write_table(runner.study_dir(args.study)))
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    if args.spec:
        points = plan.points(specs.load(Path(args.spec), args.profile))
        runner.build_for(points)
        return 0
    request = kernel.KernelRequest(args.variant, args.arch, tuple(args.fragment))
    built = kernel.build(request, args.jobs or None)
    print(f"kernel: {built.directory}")
    print(f"image: {image.build(args.arch).directory}")
    return 0


def cmd_boot(args: argparse.Namespace) -> int:
    raw = {
        "study": {"name": "boot", "timeout_s": args.timeout},
        "kernel": {"variant": args.variant, "fragments": args.fragment, "cmdline": args.cmdline},
        "machine": {"arch": args.arch, "vcpus": args.vcpus, "memory": args.memory,
                    "quantum": args.quantum, "quantum_shared": args.quantum_shared,
                    "reproducible": not args.free_running,
                    "snapshot": "off"},  # one boot, its whole console: nothing to restore
        "workload": {"name": "shell", "fs": args.fs,
                     "args": {"script": " ".join(args.guest_command) or
                              "echo MANYLAB-RESULT {\\\"cpus\\\": $(nproc)}"}},
    }
    if args.plugin_preset:
        raw["plugin"] = {"enabled": True, "preset": args.plugin_preset, "mode": args.plugin_mode}
    spec = specs.parse(raw, Path("<manylab boot>"))
    point = plan.points(spec)[0]
    runner.build_for([point])
    print(f"manylab: console while the guest runs: "
          f"{runner.staging_dir(spec, point) / pointdir.CONSOLE}", file=sys.stderr)
    result = runner.run_point(spec, point)
    point_dir = runner.results_dir(spec) / point.id
    sys.stdout.write((point_dir / pointdir.CONSOLE).read_text(errors="replace"))
    print(f"manylab: {result['status']}" + (f": {result['reason']}" if result["reason"] else "")
          + f" ({point_dir})", file=sys.stderr)
    return 0 if result["status"] == "ok" else 1


def _add_spec_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", help="study spec, e.g. runs/quickstart.toml")
    parser.add_argument("--profile", help="apply [profiles.NAME] of the spec")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="manylab", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plan", help="print a study's run points with their stable ids")
    _add_spec_args(p)
    p.add_argument("--json", action="store_true", help="every point's parameters as JSON")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("run", help="run a study (builds what it needs first)")
    _add_spec_args(p)
    p.add_argument("-j", "--jobs", type=int, default=1, help="points at once (local scheduler)")
    p.add_argument("--force", action="store_true", help="rerun points that are complete")
    p.add_argument("--retry-failed", action="store_true", help="rerun failed points")
    p.add_argument("--scheduler", default="local", choices=("local", "slurm"))
    p.add_argument("--results-root", help="folder holding <study>/ (default: runs/)")
    slurm = p.add_argument_group("slurm (over the spec's [slurm] table; docs/cluster.md)")
    slurm.add_argument("--partition", dest="slurm_partition")
    slurm.add_argument("--account", dest="slurm_account")
    slurm.add_argument("--qos", dest="slurm_qos")
    slurm.add_argument("--time", dest="slurm_time", type=int, metavar="MINUTES",
                       help="time limit of every task (default: derived per point)")
    slurm.add_argument("--max-array", dest="slurm_max_array", type=int, metavar="N",
                       help="at most N tasks per job array")
    slurm.add_argument("--throttle", dest="slurm_throttle", type=int, metavar="N",
                       help="at most N tasks of an array running at once (%%N)")
    slurm.add_argument("--dry-run", dest="slurm_dry_run", action="store_const", const="yes",
                       help="print the batch scripts instead of building and submitting")
    slurm.add_argument("--build-job", dest="slurm_build_job", type=int, nargs="?", const=8,
                       metavar="CPUS", help="build the artifacts in a batch job (CPUS, "
                       "default 8) that the arrays depend on (afterok)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("run-point", help="run one point (what a batch task executes)")
    _add_spec_args(p)
    p.add_argument("point", help="point id from `manylab plan`")
    p.add_argument("--results-root", help="folder holding <study>/ (default: runs/)")
    p.set_defaults(func=cmd_run_point)

    p = sub.add_parser("status", help="per-point state of a study")
    p.add_argument("study", help="runs/<study> folder or its spec")
    p.add_argument("--scheduler", default="local", choices=("local", "slurm"))
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("cancel", help="cancel a study's queued and running points")
    p.add_argument("study", help="runs/<study> folder or its spec")
    p.add_argument("--scheduler", default="slurm", choices=("local", "slurm"))
    p.set_defaults(func=cmd_cancel)

    p = sub.add_parser("table", help="rebuild runs/<study>/results.csv from the point folders")
    p.add_argument("study", help="runs/<study> folder or its spec")
    p.set_defaults(func=cmd_table)

    p = sub.add_parser("build", help="build a kernel and root image (or all of a study's)")
    p.add_argument("spec", nargs="?", help="build every artifact of this study spec")
    p.add_argument("--profile", help="apply [profiles.NAME] of the spec")
    p.add_argument("--variant", default="stock", help="kernel-patches/<variant>")
    p.add_argument("--arch", default="x86_64", choices=tuple(kernel.ARCHES))
    p.add_argument("--fragment", action="append", default=[], help="extra config fragment")
    p.add_argument("--jobs", type=int, default=0, help="make -j (default: all host CPUs)")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("boot", help="boot a kernel once and run a shell command in the guest")
    p.add_argument("--variant", default="stock")
    p.add_argument("--arch", default="x86_64", choices=tuple(kernel.ARCHES))
    p.add_argument("--vcpus", type=int, default=2)
    p.add_argument("--memory", default="512M")
    p.add_argument("--fragment", action="append", default=[])
    p.add_argument("--cmdline", default="", help="extra kernel parameters")
    p.add_argument("--fs", default="tmpfs", choices=("tmpfs", "ext2"))
    p.add_argument("--timeout", type=int, default=0, help="seconds (0: derived)")
    p.add_argument("--plugin-preset", help="load the machine-model plugin with this preset")
    p.add_argument("--plugin-mode", default="full", choices=("count", "full"))
    p.add_argument("--quantum", type=int, default=keys.DEFAULT_QUANTUM,
                   help="guest instructions per vCPU turn (0: QEMU's own slices)")
    p.add_argument("--quantum-shared", type=int, default=0,
                   help="turn length after touching other vCPUs' lines (full model; 0: quantum)")
    p.add_argument("--free-running", action="store_true",
                   help="no icount: guest time is host time (faster, not reproducible)")
    p.add_argument("guest_command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                   help="shell command run in the guest")
    p.set_defaults(func=cmd_boot)

    _register_extensions(sub)
    return top


EXTENSIONS = ("manylab.pcm.cli", "manylab.report.cli", "manylab.series_check", "manylab.nvmain")


def _register_extensions(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Subcommands of optional parts: each module has register(subparsers)."""
    for name in EXTENSIONS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name and name.startswith(error.name):
                continue
            raise
        module.register(sub)


# Commands that only print a listing to stdout.
LISTING_COMMANDS = {"plan", "status", "compare"}


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    args = parser().parse_args(argv)
    if args.command in LISTING_COMMANDS:
        # `manylab plan ... | head` ends quietly, as a Unix filter does
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if args.command == "boot" and args.guest_command[:1] == ["--"]:
        args.guest_command = args.guest_command[1:]
    try:
        return int(args.func(args))
    except LabError as error:
        print(f"manylab: {error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Interrupted):
        print("manylab: interrupted; finished points are kept, unfinished ones left no result",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
