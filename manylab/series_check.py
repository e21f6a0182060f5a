"""`manylab check-series VARIANT`: does every patch of a variant's series build on its own?

Applies the series one patch at a time to one tree of the recorded source and, after each
patch, regenerates the lab's configuration and builds vmlinux incrementally (make rebuilds what
the patch touched and everything that includes it; ccache serves the rest). Each patch also goes
through the kernel's scripts/checkpatch.pl --strict. The outcome is printed as a table and kept
as JSON beside the other caches; the exit status is non-zero when a patch fails to apply or
build, or checkpatch reports an error.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from manylab import atomic, kernel
from manylab.errors import LabError
from manylab.hashing import sha256_bytes
from manylab.paths import cache_root

CHECKPATCH_TOTAL = re.compile(r"total: (\d+) errors, (\d+) warnings, (\d+) checks")


@dataclass
class PatchOutcome:
    patch: str
    sha256: str
    built: bool
    build_seconds: float
    options_not_yet_defined: list[str]
    checkpatch_errors: int
    checkpatch_warnings: int
    checkpatch_checks: int
    failure: str = ""


def checkpatch(tree: Path, patch: Path) -> tuple[int, int, int, str]:
    result = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict", str(patch)],
                            cwd=tree, capture_output=True, text=True, check=False)
    text = result.stdout + result.stderr
    match = CHECKPATCH_TOTAL.search(text)
    if not match:
        raise LabError(f"{patch}: checkpatch.pl printed no totals: "
                       f"{text.strip().splitlines()[-1:] or 'no output'}")
    errors, warnings, checks = (int(g) for g in match.groups())
    return errors, warnings, checks, text


def check(request: kernel.KernelRequest, jobs: int) -> list[PatchOutcome]:
    inputs = kernel.resolve(request)
    base = kernel.read_series(kernel.BASE_LAYER)
    own = [p for p in inputs.patches if p not in base]
    label = f"check-series {request.variant}/{request.arch}"
    work = cache_root() / "series-check" / f"{request.variant}-{request.arch}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    tree = work / "src"
    log = work / "build.log"
    subprocess.run(["cp", "-al", str(kernel.pristine_source(inputs.source_version)), str(tree)],
                   check=True)
    for patch in base:
        kernel.apply_patch(tree, patch)
    fragment = work / "lab.config"
    fragment.write_text(inputs.config_text)
    wanted = kernel.requested_options(inputs.config_text)
    outcomes: list[PatchOutcome] = []
    for index, patch in enumerate(own, 1):
        name = patch.path.name
        print(f"manylab: {label}: patch {index}/{len(own)} {name}", file=sys.stderr)
        errors, warnings, checks, report = checkpatch(tree, patch.path)
        (work / f"{name}.checkpatch.txt").write_text(report)
        outcome = PatchOutcome(name, patch.sha256, False, 0.0, [], errors, warnings, checks)
        outcomes.append(outcome)
        try:
            kernel.apply_patch(tree, patch)
            started = time.monotonic()
            kernel.run_logged(kernel.make_command(inputs, ".build", jobs, "allnoconfig")
                              + [f"KCONFIG_ALLCONFIG={fragment}"], tree, log, label)
            config = (tree / ".build" / ".config").read_text()
            outcome.options_not_yet_defined = kernel.dropped_options(wanted, config)
            kernel.run_logged(kernel.make_command(inputs, ".build", jobs, "vmlinux"), tree, log,
                              f"{label}: {name}")
            outcome.build_seconds = round(time.monotonic() - started, 1)
            outcome.built = True
        except LabError as error:
            outcome.failure = str(error)
            break
    atomic.write_json(work.parent / f"{request.variant}-{request.arch}.json",
                      {"variant": request.variant, "arch": request.arch,
                       "source_version": inputs.source_version,
                       "config_sha256": sha256_bytes(inputs.config_text.encode()),
                       "patches": [asdict(o) for o in outcomes]})
    shutil.rmtree(tree, ignore_errors=True)
    return outcomes


def table(outcomes: list[PatchOutcome]) -> str:
    lines = ["| patch | builds | seconds | checkpatch (errors/warnings/checks) | "
             "config options not defined yet |", "| --- | --- | ---: | --- | --- |"]
    for o in outcomes:
        built = "yes" if o.built else f"NO: {o.failure}"
        lines.append(f"| {o.patch} | {built} | {o.build_seconds:g} | {o.checkpatch_errors}/"
                     f"{o.checkpatch_warnings}/{o.checkpatch_checks} | "
                     f"{', '.join(o.options_not_yet_defined) or '-'} |")
    return "\n".join(lines)


def cmd_check_series(args: argparse.Namespace) -> int:
    request = kernel.KernelRequest(args.variant, args.arch, tuple(args.fragment))
    outcomes = check(request, args.jobs or len(os.sched_getaffinity(0)))
    print(table(outcomes))
    broken = [o for o in outcomes if not o.built or o.checkpatch_errors]
    if broken or not outcomes:
        print(f"manylab: check-series: {len(broken)} of {len(outcomes)} patches fail; logs in "
              f"{cache_root() / 'series-check'}", file=sys.stderr)
        return 1
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("check-series",
                              help="build a variant's series one patch at a time, checkpatch "
                                   "each patch")
    p.add_argument("variant", help="kernel-patches/<variant>")
    p.add_argument("--arch", default="x86_64", choices=tuple(kernel.ARCHES))
    p.add_argument("--fragment", action="append", default=[], help="extra config fragment")
    p.add_argument("--jobs", type=int, default=0, help="make -j (default: all host CPUs)")
    p.set_defaults(func=cmd_check_series)
