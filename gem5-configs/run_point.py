"""gem5 entry point of one manylab point:
`gem5.fast [--outdir DIR] run_point.py SYSTEM.json [--max-ticks N] [--roi-max-ticks N]
[--checkpoint-out DIR | --restore DIR]`.

SYSTEM.json is written by the lab (manylab/backends/gem5/system.py); its "isa" ("x86" or
"arm64") picks the board and cache hierarchy. The guest boots on the boot core type; the
workload's region of interest (gem5 work items from its ROI markers) runs on the detailed
core type. Statistics blocks in stats.txt: 0 = boot, 1 = region of interest, 2 = the
rest up to the guest's exit (on the region's core type: gem5 cannot switch Ruby back to
atomic_noncaching). roi.json records the ticks and the block of the region, and the tick at
which each phase marker inside it ran (work-begin with work id PHASE_WORK_ID + phase).
With --roi-max-ticks the run ends that many ticks into the region (a sample of it, for
benchmarks): block 1 then holds the sample and roi.json says "truncated": true.

Checkpoints: a guest booted with manylab.snapshot=1 asks for one at its ready point (gem5op
checkpoint). With --checkpoint-out the checkpoint is saved there and the run ends; without it
the run goes on. --restore starts from a saved checkpoint of the same system (block 0 then
runs from the restore to the region).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import TYPE_CHECKING

import m5
from gem5.simulate.exit_event import ExitEvent
from gem5.simulate.simulator import Simulator

if TYPE_CHECKING:
    from collections.abc import Generator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The board of each ISA, imported only when used: each needs its protocol's controllers, which
# exist only in a gem5 built for it (X86_MESI_Two_Level, ARM_CHI).
BOARDS = {"x86": "manylab_gem5.board", "arm64": "manylab_gem5.board_arm"}

parser = argparse.ArgumentParser(prog="run_point.py")
parser.add_argument("system", help="the point's system description (JSON)")
parser.add_argument("--max-ticks", type=int, default=None,
                    help="stop after this many ticks (benchmarks), dumping the statistics")
parser.add_argument("--roi-max-ticks", type=int, default=None,
                    help="end the run this many ticks after the region begins (a sample)")
parser.add_argument("--checkpoint-out", default=None,
                    help="save a checkpoint here where the guest asks for one, then end")
parser.add_argument("--restore", default=None, help="start from the checkpoint in this folder")
options = parser.parse_args()
with open(options.system) as handle:
    system = json.load(handle)

make_board = importlib.import_module(BOARDS[system.get("isa", "x86")]).make_board
board = make_board(system, options.restore)
switchable = system["boot_cpu"] != system["roi_cpu"]
roi = {"stats_block": 1, "begin_tick": None, "end_tick": None, "roi_cpu": system["roi_cpu"],
       "phases": []}
PHASE_WORK_ID = 0x100  # workloads/include/manylab_gem5.h MANYLAB_GEM5_PHASE_WORK_ID


def write_roi() -> None:
    with open(os.path.join(m5.options.outdir, "roi.json"), "w") as out:
        json.dump(roi, out, indent=1)


def on_work_begin() -> Generator[bool, None, None]:
    while True:
        work_id = simulator.get_last_exit_event_code()
        if work_id >= PHASE_WORK_ID:
            if roi["begin_tick"] is not None and roi["end_tick"] is None:
                roi["phases"].append({"phase": work_id - PHASE_WORK_ID, "tick": m5.curTick()})
        elif roi["begin_tick"] is None:
            roi["begin_tick"] = m5.curTick()
            m5.stats.dump()
            m5.stats.reset()
            if switchable:
                board.get_processor().switch()
            if options.roi_max_ticks:
                m5.scheduleTickExitFromCurrent(options.roi_max_ticks)
            write_roi()
        yield False


def end_roi(truncated: bool) -> bool:
    """End the region now if it is open; whether it was."""
    if roi["begin_tick"] is None or roi["end_tick"] is not None:
        return False
    roi["end_tick"] = m5.curTick()
    if truncated:
        roi["truncated"] = True
    m5.stats.dump()
    m5.stats.reset()
    write_roi()
    return True


def on_work_end() -> Generator[bool, None, None]:
    while True:
        end_roi(truncated=False)
        yield False


def on_roi_limit() -> Generator[bool, None, None]:
    while True:
        yield end_roi(truncated=True)


def on_checkpoint() -> Generator[bool, None, None]:
    while True:
        if options.checkpoint_out:
            m5.checkpoint(options.checkpoint_out)
            print(f"manylab-gem5: checkpoint at tick {m5.curTick()} in {options.checkpoint_out}")
            yield True
        yield False


simulator = Simulator(
    board=board,
    on_exit_event={
        ExitEvent.WORKBEGIN: on_work_begin(),
        ExitEvent.WORKEND: on_work_end(),
        ExitEvent.CHECKPOINT: on_checkpoint(),
        ExitEvent.SCHEDULED_TICK: on_roi_limit(),
    },
)
if options.max_ticks:
    simulator.run(max_ticks=options.max_ticks)
    m5.stats.dump()
else:
    simulator.run()
write_roi()
print(f"manylab-gem5: exit at tick {m5.curTick()}: {simulator.get_last_exit_event_cause()}")
