"""The gem5 tier's system descriptions for each preset, checked by hand-counted values; gem5's
Python is not needed. The machine comes from the plugin's own `manylab-machine`."""

from pathlib import Path

import pytest

from manylab import spec as specs
from manylab.backends import ready_state
from manylab.backends.gem5 import backend, checkpoint, command, machine, system
from manylab.errors import LabError
from manylab.image import ImageArtifacts
from manylab.kernel import KernelArtifacts
from manylab.params import PointParams
from manylab.spec import SpecError
from tests.gem5.points import describe, gem5_point


@pytest.fixture(scope="module", autouse=True)
def describer_built():
    try:
        machine.describer()
    except LabError as error:
        pytest.skip(str(error))


def test_knl_64_mesh_routers_links_and_placement(write_spec):
    desc = describe(gem5_point(write_spec, "knl-64", 4))
    mesh = desc["mesh"]
    # 6x6 sites, then 2 DDR and 8 MCDRAM controllers outside the grid, one link each.
    assert len(mesh["routers"]) == 36 + 10
    assert len(mesh["links"]) == 6 * 5 * 2 + 10
    assert [r["site"] for r in mesh["routers"]].count("disabled") == 4
    assert mesh["routers"][7]["site"] == "disabled"  # site (1, 1)
    assert mesh["routing"] == "YX" and mesh["flit_bytes"] == 32
    # Scatter numbering: vCPUs 0-1 on tile (0,0), 2-3 on tile (0,1).
    assert desc["cores"] == [0, 0, 1, 1]
    banks = desc["l2"]["banks"]
    assert len(banks) == 32 and 7 not in banks and banks[:3] == [0, 1, 2]
    assert desc["l2"]["size_kib"] == 1024 and desc["l2"]["assoc"] == 16
    assert desc["l1"] == {"size_kib": 32, "assoc": 8}
    (region,) = desc["memory"]["regions"]
    assert region["device"] == "dram" and region["size"] == 512 << 20
    assert region["channels"] == [36, 37] and region["channels_used"] == 2
    assert mesh["routers"][36]["pos"] == [2, -1]
    link = next(link for link in mesh["links"] if link["b"] == 36)
    assert link == {"a": 12, "b": 36, "axis": "x"}  # (2,0) -> (2,-1)
    assert desc["dma_router"] == 36


def test_kernel_arguments_follow_the_clock(write_spec):
    point = gem5_point(write_spec, "tiny-4", 2)
    point["kernel"]["cmdline"] = "quiet"
    args = describe(point)["kernel_args"]
    # 2 GHz: TSC cycles per jiffy at HZ=100; the QEMU tier's timer shortcuts stay out.
    assert "lpj=20000000" in args
    assert not [a for a in args if a.startswith(("lapic_timer_period", "tsc=", "no_timer"))]
    assert "root=/dev/sda" in args and "manylab.backend=gem5" in args
    assert args[-1] == "quiet"
    # snapshot = "auto" (the default): the guest stops at its ready point for a checkpoint
    assert "manylab.snapshot=1" in args
    point["machine"]["snapshot"] = "off"
    assert "manylab.snapshot=1" not in describe(point)["kernel_args"]


def test_only_atomic_boot_cores_take_a_checkpoint(write_spec):
    # Ruby writes its caches back before a checkpoint; MESI_Two_Level cannot (no Flush
    # request), and only atomic cores (atomic_noncaching) leave the caches empty.
    point = gem5_point(write_spec, "tiny-4", 2)
    assert checkpoint.wanted(PointParams.from_dict(point))
    point["gem5"] = {**point.get("gem5", {}), "boot_cpu": "timing"}
    assert not checkpoint.wanted(PointParams.from_dict(point))
    assert "manylab.snapshot=1" not in describe(point)["kernel_args"]
    point["machine"]["backend"] = "qemu"
    assert not checkpoint.wanted(PointParams.from_dict(point))


@pytest.mark.parametrize("preset,sites,banks,channels", [
    ("knl-64", 32, 32, 2),
    # altra-80: 4 cores (tiles) per CMN-600 crosspoint, 20 crosspoints; 64 of the 80 tiles
    # hold an L2 bank, up to four banks on one router
    ("altra-80", 20, 64, 8),
    ("icelake-32", 32, 32, 4),
    ("epyc2-64", 16, 16, 8),
    ("tiny-4", 4, 4, 1),
])
def test_every_preset_describes_a_power_of_two_of_banks_and_channels(
        write_spec, preset, sites, banks, channels):
    desc = describe(gem5_point(write_spec, preset, 4))
    tile_sites = [r for r in desc["mesh"]["routers"] if r["site"] == "tile"]
    assert len(tile_sites) == sites
    assert len(desc["l2"]["banks"]) == banks
    assert desc["memory"]["regions"][0]["channels_used"] == channels
    assert all(0 <= c < len(desc["mesh"]["routers"]) for c in desc["cores"])


def test_hybrid_nodes_become_dram_and_pcm_regions(write_spec):
    point = gem5_point(write_spec, "tiny-4", 2, """
memory = "512M"
numa = [{ size = "128M", cpus = "0-1", device = "dram" },
        { size = "384M", device = "pcm" }]
""")
    dram, pcm = describe(point)["memory"]["regions"]
    assert (dram["device"], dram["start"], dram["size"]) == ("dram", 0, 128 << 20)
    assert (pcm["device"], pcm["start"], pcm["size"]) == ("pcm", 128 << 20, 384 << 20)
    # Digest Table 1 via the preset: PCM read 100 ns, write 1 us, 1 nJ/bit written.
    assert (pcm["read_ns"], pcm["write_ns"], pcm["write_nj_per_bit"]) == (100.0, 1000.0, 1.0)
    # tiny-4's one DDR controller at (0,-1) is router 4, after the 2x2 sites.
    assert pcm["channels"] == [4]


def test_preset_overrides_reach_gem5(write_spec):
    point = gem5_point(write_spec, "tiny-4", 2)
    point["plugin"]["set"] = {"l2.size_kib": 8, "pcm.write_ns": 500}
    desc = describe(point)
    assert desc["l2"]["size_kib"] == 8


def test_command_line_and_missing_binary(write_spec, monkeypatch, tmp_path):
    point = gem5_point(write_spec, "tiny-4", 2)
    monkeypatch.delenv("MANYLAB_GEM5", raising=False)
    with pytest.raises(LabError, match="gem5 not found: set MANYLAB_GEM5"):
        command.binary(PointParams.from_dict(point))
    monkeypatch.setenv("MANYLAB_GEM5", str(tmp_path / "nowhere"))
    with pytest.raises(LabError, match="does not exist"):
        command.binary(PointParams.from_dict(point))
    argv = command.argv(Path("/opt/gem5.opt"), tmp_path / "out", tmp_path / "s.json")
    assert argv[0] == "/opt/gem5.opt" and argv[-2].endswith("gem5-configs/run_point.py")
    assert f"--outdir={tmp_path / 'out'}" in argv and "--listener-mode=off" in argv


@pytest.mark.parametrize("extra,message", [
    ('memory = "4G"', "at most 3 GiB"),
])
def test_gem5_points_the_board_cannot_run_are_refused(write_spec, extra, message):
    with pytest.raises(SpecError, match=message):
        gem5_point(write_spec, "tiny-4", 2, extra)


def test_unknown_gem5_key_is_refused(write_spec):
    with pytest.raises(SpecError, match="cores"):
        specs.load(write_spec("""
[gem5]
cores = 3
[workload]
name = "falseshare"
"""))


def test_more_cores_than_the_x86_board_numbers_are_refused(write_spec):
    assert gem5_point(write_spec, "knl-64", 254)["machine"]["vcpus"] == 254
    with pytest.raises(SpecError, match="8-bit ids .* at most 254 cores"):
        gem5_point(write_spec, "knl-64", 255)


@pytest.mark.parametrize("bits, cores, fits", [
    (None, 64, True), (None, 65, False), ("256", 128, True), ("256", 254, True),
    ("128", 129, False),
])
def test_ruby_sets_must_hold_one_l1_per_core(monkeypatch, tmp_path, bits, cores, fits):
    build = {"PROTOCOL": "MESI_Two_Level", "USE_X86_ISA": "True"}
    if bits is not None:
        build["NUMBER_BITS_PER_SET"] = bits
    monkeypatch.setattr(command, "build_info",
                        lambda path: {"version": "24.0.0.1", "build": build})
    if fits:
        command.check_build(tmp_path / "gem5.fast", widest=cores)
    else:
        with pytest.raises(LabError, match=f"hold {bits or 64} controllers .* {cores} cores: "
                                           "rebuild gem5 with NUMBER_BITS_PER_SET=256"):
            command.check_build(tmp_path / "gem5.fast", widest=cores)


def test_a_checkpoint_is_keyed_by_the_system_not_by_the_run(write_spec, monkeypatch, tmp_path):
    """Points that differ only in what runs after the ready point (workload, its arguments,
    the script gem5 reads) share one checkpoint; the machine, the kernel and gem5 do not."""
    gem5 = tmp_path / "gem5.fast"
    gem5.write_bytes(b"gem5")
    monkeypatch.setattr(command, "version", lambda path: "gem5 version 24.0.0.1")
    files = {name: tmp_path / name for name in ("vmlinux", "rootfs.ext2")}
    for name, path in files.items():
        path.write_bytes(name.encode())
    kernel_art = KernelArtifacts("k1", tmp_path, files["vmlinux"], files["vmlinux"],
                                 tmp_path / "System.map", tmp_path / "config")
    image_art = ImageArtifacts("i1", tmp_path, tmp_path / "initramfs", files["rootfs.ext2"], ())

    def key(point: dict, readfile: str = "/p/run.sh") -> str:
        typed = PointParams.from_dict(point)
        inputs = system.Gem5Inputs(files["vmlinux"], files["rootfs.ext2"], Path(readfile))
        description = system.describe(typed, backend.describe_machine(typed), inputs)
        return ready_state.key_of(checkpoint.key_inputs(description, gem5, kernel_art,
                                                        image_art))

    point = gem5_point(write_spec, "tiny-4", 2)
    base = key(point)
    other_run = dict(point, workload={**point["workload"], "name": "pwriter"})
    assert key(other_run, "/elsewhere/run.sh") == base
    assert key(gem5_point(write_spec, "tiny-4", 4)) != base
    gem5.write_bytes(b"another gem5")
    assert key(point) != base
