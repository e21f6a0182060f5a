"""The gem5 tier's arm64 systems (CHI on the preset's mesh, gem5-configs/README.md "arm64
(CHI)"), checked by hand-counted values without gem5: the description, the core limit, the
binary and bootloader lookups, the build check, the checkpoint key and the CHI statistics'
names. The machine comes from the plugin's own `manylab-machine`."""

import dataclasses
from pathlib import Path

import pytest

from manylab import plan
from manylab import spec as specs
from manylab.backends import ready_state
from manylab.backends.gem5 import backend, checkpoint, command, machine, stats, system
from manylab.errors import LabError
from manylab.image import ImageArtifacts
from manylab.kernel import KernelArtifacts
from manylab.params import PointParams
from manylab.spec import SpecError
from tests.gem5 import points

BOOT = Path("/b/boot_foundation.arm64")
INPUTS = dataclasses.replace(points.INPUTS, bootloader=BOOT)
ARM_CHI = {"PROTOCOL": "CHI", "USE_ARM_ISA": "True", "NUMBER_BITS_PER_SET": "1024"}


@pytest.fixture(scope="module")
def describer_built():
    try:
        machine.describer()
    except LabError as error:
        pytest.skip(str(error))


def arm_point(write_spec, preset: str, vcpus: int, extra: str = "") -> dict:
    return points.gem5_point(write_spec, preset, vcpus, extra, arch="arm64")


def describe(point: dict) -> dict:
    return points.describe(point, INPUTS)


@pytest.mark.parametrize("vcpus,l1,total", [
    # knl-64: 32 active tiles, 32 (2^5) L2 banks -> 32 home nodes; 2 DMA (PL111, virtio-blk)
    (4, 8, 8 + 32 + 2),
    (256, 512, 512 + 32 + 2),
])
def test_knl_64_arm64_system_counts_its_chi_controllers(write_spec, describer_built, vcpus,
                                                         l1, total):
    desc = describe(arm_point(write_spec, "knl-64", vcpus))
    assert desc["isa"] == "arm64" and desc["cpus"] == vcpus
    assert desc["bootloader"] == str(BOOT)
    assert desc["chi"] == {"l1_controllers": l1, "home_nodes": 32, "dma_controllers": 2,
                           "cache_controllers": total}
    assert len(desc["l2"]["banks"]) == 32 and len(desc["cores"]) == vcpus
    # The mesh and memory are the x86 tier's: 46 routers, DDR channels at routers 36 and 37.
    assert len(desc["mesh"]["routers"]) == 46 and desc["dma_router"] == 36
    assert desc["memory"]["regions"][0]["channels"] == [36, 37]
    assert desc["differences"] == system.ARM_DIFFERENCES


def test_arm64_kernel_arguments(write_spec, describer_built):
    point = arm_point(write_spec, "tiny-4", 2)
    point["kernel"]["cmdline"] = "quiet"
    args = describe(point)["kernel_args"]
    assert args[:2] == ["console=ttyAMA0", "earlycon=pl011,0x1c090000"]
    assert "root=/dev/vda" in args and "manylab.backend=gem5" in args
    assert "manylab.snapshot=1" in args and args[-1] == "quiet"
    # x86's console, disk and delay-loop settings stay out: arm64 takes lpj from its timer.
    assert not [a for a in args if a.startswith(("lpj=", "earlyprintk", "console=ttyS"))]
    assert "root=/dev/sda" not in args


def test_the_x86_description_has_no_arm_keys(write_spec, describer_built):
    x86 = PointParams.from_dict(plan.points(specs.load(write_spec("""
[machine]
backend = "gem5"
vcpus = 2
[workload]
name = "falseshare"
args = { threads = 2 }
""", "x86.toml")))[0].params)
    desc = system.describe(x86, backend.describe_machine(x86), INPUTS)
    assert desc["isa"] == "x86" and "bootloader" not in desc and "chi" not in desc
    assert "root=/dev/sda" in desc["kernel_args"]
    arm = PointParams.from_dict(arm_point(write_spec, "tiny-4", 2))
    with pytest.raises(ValueError, match="bootloader"):
        system.describe(arm, backend.describe_machine(arm),
                        system.Gem5Inputs(Path("/k"), Path("/d"), Path("/r")))


def test_arm64_takes_256_cores_and_refuses_more(write_spec, describer_built):
    assert arm_point(write_spec, "knl-64", 256)["machine"]["vcpus"] == 256
    with pytest.raises(SpecError, match="Arm board .*GICv3.* at most 256 cores"):
        arm_point(write_spec, "knl-64", 257)


def test_arm64_points_find_their_own_binary_and_the_bootloader(write_spec, describer_built,
                                                               monkeypatch, tmp_path):
    point = PointParams.from_dict(arm_point(write_spec, "tiny-4", 2))
    monkeypatch.delenv("MANYLAB_GEM5_ARM", raising=False)
    monkeypatch.delenv("MANYLAB_GEM5_ARM_BOOTLOADER", raising=False)
    # An x86 binary in MANYLAB_GEM5 is not the arm64 points' binary.
    monkeypatch.setenv("MANYLAB_GEM5", "/bin/true")
    with pytest.raises(LabError, match=r"gem5 not found: set MANYLAB_GEM5_ARM=/path/to/build/"
                                       r"ARM_CHI/gem5.opt or \[gem5\] binary"):
        command.binary(point)
    monkeypatch.setenv("MANYLAB_GEM5_ARM", "/bin/true")
    assert command.binary(point) == Path("/bin/true")
    with pytest.raises(LabError, match=r"set MANYLAB_GEM5_ARM_BOOTLOADER=/path/to/"
                                       r"boot_foundation.arm64 or \[gem5\] bootloader"):
        command.bootloader(point)
    monkeypatch.setenv("MANYLAB_GEM5_ARM_BOOTLOADER", str(tmp_path / "nowhere"))
    with pytest.raises(LabError, match="does not exist: fix MANYLAB_GEM5_ARM_BOOTLOADER or "
                                       r"\[gem5\] bootloader"):
        command.bootloader(point)
    boot = tmp_path / "boot_foundation.arm64"
    boot.write_bytes(b"\0")
    monkeypatch.setenv("MANYLAB_GEM5_ARM_BOOTLOADER", str(boot))
    assert command.bootloader(point) == boot


def fake_build(monkeypatch, build: dict) -> None:
    monkeypatch.setattr(command, "build_info",
                        lambda path: {"version": "24.0.0.1", "build": build})


def test_the_build_check_refuses_an_x86_gem5_for_arm64(monkeypatch, tmp_path):
    fake_build(monkeypatch, {"PROTOCOL": "MESI_Two_Level", "USE_X86_ISA": "True",
                             "USE_ARM_ISA": "False", "NUMBER_BITS_PER_SET": "256"})
    with pytest.raises(LabError, match="ISA arm=False and protocol MESI_Two_Level: .* built "
                                       "for ARM_CHI"):
        command.check_build(tmp_path / "gem5.fast", "arm64", 42)
    command.check_build(tmp_path / "gem5.fast", widest=4)  # which the x86 tier takes
    # and an ARM build without CHI (ARM_MESI_Three_Level) is no better
    fake_build(monkeypatch, {"PROTOCOL": "MESI_Three_Level", "USE_ARM_ISA": "True"})
    with pytest.raises(LabError, match="protocol MESI_Three_Level"):
        command.check_build(tmp_path / "gem5.fast", "arm64", 42)
    # nor does an ARM_CHI build serve x86 points
    fake_build(monkeypatch, ARM_CHI)
    with pytest.raises(LabError, match="ISA x86=None and protocol CHI"):
        command.check_build(tmp_path / "gem5.fast", widest=4)


@pytest.mark.parametrize("bits, controllers, fits", [
    (None, 42, True), (None, 65, False), ("256", 546, False), ("1024", 546, True),
])
def test_ruby_sets_must_hold_every_chi_cache_controller(monkeypatch, tmp_path, bits,
                                                        controllers, fits):
    build = {"PROTOCOL": "CHI", "USE_ARM_ISA": "True"}
    if bits is not None:
        build["NUMBER_BITS_PER_SET"] = bits
    fake_build(monkeypatch, build)
    if fits:
        command.check_build(tmp_path / "gem5.fast", "arm64", controllers)
    else:
        with pytest.raises(LabError, match=f"hold {bits or 64} controllers .* {controllers} "
                                           "CHI cache controllers .* NUMBER_BITS_PER_SET=1024"):
            command.check_build(tmp_path / "gem5.fast", "arm64", controllers)


def test_the_checkpoint_key_holds_the_isa_and_the_bootloader(write_spec, describer_built,
                                                             monkeypatch, tmp_path):
    gem5 = tmp_path / "gem5.fast"
    gem5.write_bytes(b"gem5")
    monkeypatch.setattr(command, "version", lambda path: "gem5 version 24.0.0.1")
    files = {name: tmp_path / name for name in ("vmlinux", "rootfs.ext2", "boot")}
    for name, path in files.items():
        path.write_bytes(name.encode())
    kernel_art = KernelArtifacts("k1", tmp_path, files["vmlinux"], files["vmlinux"],
                                 tmp_path / "System.map", tmp_path / "config")
    image_art = ImageArtifacts("i1", tmp_path, tmp_path / "initramfs", files["rootfs.ext2"], ())

    def key_inputs(point: dict) -> dict:
        typed = PointParams.from_dict(point)
        inputs = system.Gem5Inputs(files["vmlinux"], files["rootfs.ext2"], Path("/p/run.sh"),
                                   files["boot"])
        description = system.describe(typed, backend.describe_machine(typed), inputs)
        return checkpoint.key_inputs(description, gem5, kernel_art, image_art)

    def key(point: dict) -> str:
        return ready_state.key_of(key_inputs(point))

    point = arm_point(write_spec, "tiny-4", 2)
    base = key(point)
    x86 = dict(point, machine={**point["machine"], "arch": "x86_64"})
    assert key(x86) != base  # the same machine on the other ISA
    inputs = key_inputs(point)
    assert inputs["system"]["isa"] == "arm64" and inputs["system"]["bootloader"] == "@bootloader"
    files["boot"].write_bytes(b"another bootloader")
    assert key(point) != base


def test_arm64_statistics_are_read_under_chi_names():
    ruby = stats.RUBY
    block = {
        f"{ruby}.l1d_controllers0.cache.m_demand_misses": 3.0,
        f"{ruby}.l1d_controllers1.cache.m_demand_misses": 4.0,
        f"{ruby}.l1i_controllers0.cache.m_demand_misses": 100.0,  # not the L1D
        f"{ruby}.home_nodes05.cache.m_demand_hits": 7.0,
        f"{ruby}.Cache_Controller.ReadShared::total": 10.0,
        f"{ruby}.Cache_Controller.ReadNotSharedDirty::total": 1.0,
        f"{ruby}.Cache_Controller.ReadUnique::total": 5.0,
        f"{ruby}.Cache_Controller.ReadUnique_PoC::total": 3.0,  # the home is the PoC
        f"{ruby}.Cache_Controller.CleanUnique::total": 2.0,
        f"{ruby}.Cache_Controller.CleanUnique_Stale::total": 1.0,
        f"{ruby}.Cache_Controller.SendReadUnique::total": 50.0,  # an action: not an event
        f"{ruby}.Cache_Controller.SnpUniqueFwd::total": 4.0,
        f"{ruby}.Cache_Controller.SnpCleanInvalid::total": 6.0,
        f"{ruby}.Cache_Controller.SnpUnique::total": 1.0,
        f"{ruby}.Cache_Controller.Load::total": 999.0,  # sequencer requests: no message
    }
    memory = {"regions": []}
    arm = stats.summary(block, {"isa": "arm64", "memory": memory}, "roi")
    assert arm["roi.l1d.misses"] == 7 and arm["roi.l2.hits"] == 7
    assert (arm["roi.coh.msgs.gets"], arm["roi.coh.msgs.getm"],
            arm["roi.coh.msgs.upgrade"]) == (11, 8, 3)
    assert arm["roi.coh.msgs.fwd_getm"] == 4 and arm["roi.coh.msgs.inv"] == 7
    assert arm["roi.coh.invalidations"] == 11
    # The same block read as x86 finds none of it.
    x86 = stats.summary(block, {"isa": "x86", "memory": memory}, "roi")
    assert x86["roi.l1d.misses"] == 0 and x86["roi.coh.invalidations"] == 0
