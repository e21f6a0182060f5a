"""QEMU's command line for a point: the binary and its version, the machine, the kernel's
command line, the time limit."""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

from manylab.backends.guest import LAB_CMDLINE
from manylab.errors import LabError
from manylab.memory_layout import numa_nodes, storage_cmdline
from manylab.params import MachineParams, PointParams
from manylab.paths import require_tool
from manylab.units import parse_cpus, parse_size

QEMU_BINARY = {"x86_64": "qemu-system-x86_64", "arm64": "qemu-system-aarch64"}
QEMU_PACKAGE = {"x86_64": "qemu-system-x86", "arm64": "qemu-system-arm"}
SERIAL_CONSOLE = {"x86_64": "ttyS0", "arm64": "ttyAMA0"}
DEFAULT_CPU = {"x86_64": "qemu64", "arm64": "max,pauth-impdef=on"}
MIN_VERSION = (10, 0)
# x86 firmware: qboot starts a PVH vmlinux directly (2.4x faster than SeaBIOS at 4 vCPUs).
X86_FIRMWARE = "qboot.rom"
# APIC ID 255 is the xAPIC broadcast ID: from 256 vCPUs on x86 the guest needs x2APIC, which
# Linux enables only with interrupt remapping (QEMU's intel-iommu, intremap=on, eim=on), and
# Linux 6.1 drops MADT entries with IDs >= 255 unless the firmware already switched the CPUs to
# x2APIC mode: SeaBIOS does (it has x2APIC CPUs to start), qboot does not. QEMU's default
# firmware, SeaBIOS, is then used instead of qboot.
X86_XAPIC_MAX_VCPUS = 255

# lpj= skips each x86 CPU's delay-loop calibration (0.6 s of guest time per CPU under icount)
# and lapic_timer_period= (kernel-patches/lab) the boot CPU's APIC timer calibration, a PAUSE
# spin of 0.1-0.25 s of guest time: QEMU's APIC timer counts 1 GHz of virtual time, 10^7 per
# jiffy at the lab's HZ=100. arm64 takes both from the architected timer and never calibrates.
ARCH_CMDLINE = {"x86_64": "tsc=reliable no_timer_check lpj=1000000 lapic_timer_period=10000000",
                "arm64": ""}


def binary(arch: str) -> str:
    """The arch's QEMU binary, checked to be at least MIN_VERSION."""
    path = require_tool(QEMU_BINARY[arch], QEMU_PACKAGE[arch])
    found = parse_version(version(path))
    if found is None or found < MIN_VERSION:
        wanted = ".".join(map(str, MIN_VERSION))
        raise LabError(f"{path}: QEMU {version(path)!r} is older than {wanted}: run "
                       f"scripts/setup.sh (installs QEMU {wanted} from Debian "
                       f"bookworm-backports)")
    return path


@functools.cache
def version(path: str) -> str:
    """The first line of `qemu-system-* --version`, as recorded in inputs.json."""
    result = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return result.stdout.splitlines()[0] if result.stdout else "unknown"


def parse_version(line: str) -> tuple[int, int] | None:
    found = re.search(r"version (\d+)\.(\d+)", line)
    return (int(found.group(1)), int(found.group(2))) if found else None


# arm64's `max` CPU has RNDR and the virt board writes an rng-seed: with -seed both come from
# QEMU's deterministic generator instead of the host's.
GUEST_RANDOM_SEED = 1


def cpu_model(machine: MachineParams) -> str:
    arch = machine.arch
    model = machine.cpu or DEFAULT_CPU[arch]
    if arch == "x86_64" and machine.vcpus > X86_XAPIC_MAX_VCPUS and "x2apic" not in model:
        model += ",+x2apic"
    return model


def command(point: PointParams, boot_image: Path, initrd: Path, disk: Path | None,
            plugin_argument: str | None, cmdline_extra: str = "") -> list[str]:
    machine = point.machine
    arch = machine.arch
    vcpus = machine.vcpus
    argv = [binary(arch)]
    if arch == "x86_64":
        argv += ["-M", "q35"]
        if vcpus <= X86_XAPIC_MAX_VCPUS:
            argv += ["-bios", X86_FIRMWARE]
    else:
        argv += ["-M", "virt,gic-version=3"]
    argv += ["-accel", f"tcg,thread={machine.tcg}", "-cpu", cpu_model(machine),
             "-smp", _smp(machine), "-m", f"{parse_size(machine.memory) >> 20}M"]
    if arch == "x86_64" and vcpus > X86_XAPIC_MAX_VCPUS:
        argv += ["-device", "intel-iommu,intremap=on,eim=on"]
    if machine.numa:
        for index, node in enumerate(numa_nodes(machine)):
            argv += ["-object", f"memory-backend-ram,id=mem{index},size={parse_size(node.size)}"]
            spec = f"node,nodeid={index},memdev=mem{index}"
            if node.cpus is not None:
                for first, last in _cpu_runs(parse_cpus(node.cpus)):
                    spec += f",cpus={first}-{last}"
            argv += ["-numa", spec]
    if machine.reproducible:
        argv += ["-icount", "shift=0,sleep=off", "-rtc", "base=2023-01-01T00:00:00,clock=vm",
                 "-seed", str(GUEST_RANDOM_SEED)]
    argv += ["-kernel", str(boot_image), "-initrd", str(initrd),
             "-append", kernel_cmdline(point, cmdline_extra),
             "-nodefaults", "-display", "none", "-serial", "stdio", "-monitor", "none",
             "-no-reboot"]
    if disk is not None:
        argv += ["-drive", f"file={disk},format=raw,if=none,id=disk0,cache=unsafe",
                 "-device", "virtio-blk-pci,drive=disk0"]
    if plugin_argument:
        argv += ["-plugin", plugin_argument]
    return argv


def _smp(machine: MachineParams) -> str:
    """`-smp`: the vCPU count, and one socket per NUMA node when the nodes holding CPUs split
    them into equal consecutive blocks in node order (the SNC layouts: node k = CPUs k*n to
    k*n+n-1). Otherwise QEMU puts every vCPU in one socket sharing one LLC, and an x86 guest
    whose LLC spans two nodes warns at boot (`topology_sane`: "llc-sibling ... is not on the
    same node"), which fails the run."""
    blocks = [sorted(parse_cpus(n.cpus)) for n in machine.numa if n.cpus is not None]
    if len(blocks) > 1 and machine.vcpus % len(blocks) == 0:
        size = machine.vcpus // len(blocks)
        if all(b == list(range(k * size, (k + 1) * size)) for k, b in enumerate(blocks)):
            return f"{machine.vcpus},sockets={len(blocks)}"
    return str(machine.vcpus)


def _cpu_runs(cpus: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for cpu in sorted(cpus):
        if runs and runs[-1][1] == cpu - 1:
            runs[-1] = (runs[-1][0], cpu)
        else:
            runs.append((cpu, cpu))
    return runs


def kernel_cmdline(point: PointParams, extra: str = "") -> str:
    arch = point.machine.arch
    parts = [f"console={SERIAL_CONSOLE[arch]}", LAB_CMDLINE, ARCH_CMDLINE[arch],
             storage_cmdline(point), point.kernel.cmdline, extra]
    return " ".join(p for p in parts if p)


def boot_allowance(point: PointParams) -> float:
    """Boot time grows with vCPUs under TCG (measured: 255 x86 ~370 s, 256 arm64 ~820 s)."""
    per_vcpu = 2.0 if point.machine.arch == "x86_64" else 4.0
    return 120 + per_vcpu * point.machine.vcpus


def default_timeout(point: PointParams) -> float:
    factor = 1.0
    if point.plugin.enabled:
        factor = 4.0 if point.plugin.mode == "full" else 2.0
    return float(boot_allowance(point) * factor + 600)
