"""The cores: one gem5 core per vCPU, booting on a fast core type and switching to the
detailed one for the region of interest (or one type throughout)."""

from __future__ import annotations

from typing import Any

from gem5.components.processors.cpu_types import CPUTypes
from gem5.components.processors.simple_processor import SimpleProcessor
from gem5.components.processors.simple_switchable_processor import (
    SimpleSwitchableProcessor,
)
from gem5.isas import ISA

CPU_TYPES = {"atomic": CPUTypes.ATOMIC, "timing": CPUTypes.TIMING, "o3": CPUTypes.O3}
ISAS = {"x86": ISA.X86, "arm64": ISA.ARM}


def make_processor(system: dict[str, Any]) -> SimpleProcessor | SimpleSwitchableProcessor:
    boot = CPU_TYPES[system["boot_cpu"]]
    roi = CPU_TYPES[system["roi_cpu"]]
    isa = ISAS[system.get("isa", "x86")]
    if boot == roi:
        return SimpleProcessor(cpu_type=boot, num_cores=system["cpus"], isa=isa)
    return SimpleSwitchableProcessor(
        starting_core_type=boot,
        switch_core_type=roi,
        num_cores=system["cpus"],
        isa=isa,
    )
