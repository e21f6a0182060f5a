"""The arm64 full-system board of one point: gem5's ArmBoard on VExpress_GEM5_Foundation (a
GICv3 without ITS, the only gem5 v24 Arm platform that serves 256 cores), gem5's arm64
bootloader, the lab's arm64 kernel (the vmlinux ELF) and root image (virtio-blk over PCI,
/dev/vda), the run's script through gem5's readfile, CHI caches on the preset's mesh, the
point's memory regions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gem5.components.boards.arm_board import ArmBoard
from gem5.resources.resource import (
    BootloaderResource,
    DiskImageResource,
    KernelResource,
)
from m5.objects import ArmDefaultRelease, ArmExtension, VExpress_GEM5_Foundation

from .cache_hierarchy_chi import MeshCHI
from .memory import RegionMemory
from .processor import make_processor

# Registers gem5 traps to EL3 unless SCR_EL3 enables them (FGTEn, HXEn), which gem5 v24's
# bootloader does not: without the features the guest's EL2 setup leaves them alone.
# (Linux 6.1 reaches neither on gem5 v24, but later kernels write HCRX_EL2: gem5 issue 2116.)
TRAPPED_FEATURES = ("FEAT_FGT", "FEAT_HCX")


def release() -> ArmDefaultRelease:
    """gem5's default Armv8 feature set without the features whose registers trap."""
    features = ArmDefaultRelease()
    for name in TRAPPED_FEATURES:
        features.remove(ArmExtension(name))
    return features


def make_board(system: dict[str, Any], checkpoint: str | None = None) -> ArmBoard:
    board = ArmBoard(
        clk_freq=system["clock"],
        processor=make_processor(system),
        memory=RegionMemory(system["memory"]),
        cache_hierarchy=MeshCHI(system),
        platform=VExpress_GEM5_Foundation(),
        release=release(),
    )
    board.set_kernel_disk_workload(
        kernel=KernelResource(local_path=system["kernel"]),
        disk_image=DiskImageResource(local_path=system["disk"]),
        bootloader=BootloaderResource(local_path=system["bootloader"]),
        readfile=system["readfile"],
        kernel_args=system["kernel_args"],
        checkpoint=Path(checkpoint) if checkpoint else None,
    )
    # 16-bit ASIDs (ID_AA64MMFR0_EL1.ASIDBits): with gem5's default 8 bits a 256-core guest has
    # no more ASIDs than CPUs, which Linux warns about at boot (asids_update_limit).
    board.have_large_asid_64 = True
    # The guest's console (the first PL011, ttyAMA0) on gem5's stdout, where the lab reads it.
    board.terminal.outfile = "stdoutput"
    return board
