"""The x86 full-system board of one point: the lab's kernel and root image, the run's script
through gem5's readfile, caches on the preset's mesh, the point's memory regions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gem5.components.boards.x86_board import X86Board
from gem5.resources.resource import DiskImageResource, KernelResource

from .cache_hierarchy import MeshMESITwoLevel
from .memory import RegionMemory
from .processor import make_processor


def make_board(system: dict[str, Any], checkpoint: str | None = None) -> X86Board:
    board = X86Board(
        clk_freq=system["clock"],
        processor=make_processor(system),
        memory=RegionMemory(system["memory"]),
        cache_hierarchy=MeshMESITwoLevel(system),
    )
    board.set_kernel_disk_workload(
        kernel=KernelResource(local_path=system["kernel"]),
        disk_image=DiskImageResource(local_path=system["disk"]),
        readfile=system["readfile"],
        kernel_args=system["kernel_args"],
        checkpoint=Path(checkpoint) if checkpoint else None,
    )
    # The guest's serial console on gem5's stdout, where the lab reads it as it comes.
    board.pc.com_1.device.outfile = "stdoutput"
    return board
