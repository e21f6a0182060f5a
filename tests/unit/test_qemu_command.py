import re
from pathlib import Path

import pytest

from manylab import memory_layout, plan
from manylab import spec as specs
from manylab.backends.qemu import command as qemu
from manylab.backends.qemu import plugin, snapshot
from manylab.errors import LabError
from manylab.memory_layout import MemRange
from manylab.params import NumaNode, PointParams
from manylab.workloads import command_line, run_script

GIB = 1 << 30


def test_small_x86_machine_keeps_ram_below_4g():
    nodes = [NumaNode("1G", None, "dram"), NumaNode("1G", None, "pcm")]
    assert memory_layout.memory_map("x86_64", nodes) == [
        MemRange("dram", 0, GIB), MemRange("pcm", GIB, GIB)]


def test_large_x86_machine_splits_around_the_pci_hole():
    nodes = [NumaNode("1G", None, "dram"), NumaNode("3G", None, "pcm")]
    assert memory_layout.memory_map("x86_64", nodes) == [
        MemRange("dram", 0, GIB),
        MemRange("pcm", GIB, GIB),
        MemRange("pcm", 4 * GIB, 2 * GIB)]


def test_arm64_ram_starts_at_1g():
    nodes = [NumaNode("256M", None, "dram"), NumaNode("768M", None, "pcm")]
    assert memory_layout.memory_map("arm64", nodes) == [
        MemRange("dram", GIB, 256 << 20), MemRange("pcm", GIB + (256 << 20), 768 << 20)]


def point(write_spec, extra: str = "") -> PointParams:
    spec = specs.load(write_spec('[workload]\nname = "pwriter"\nargs = {procs = 2, '
                                 'fsync = true, read = false}\n' + extra))
    return plan.points(spec)[0].config


QEMU_10 = "QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)"


@pytest.fixture
def fake_qemu(monkeypatch):
    monkeypatch.setattr(qemu, "require_tool", lambda name, package: f"/usr/bin/{name}")
    monkeypatch.setattr(qemu, "version", lambda path: QEMU_10)


def test_command_line_has_numa_nodes_and_plugin(write_spec, fake_qemu):
    params = point(write_spec, "[machine]\nvcpus = 4\nmemory = '1G'\n"
                   "numa = [{size='512M', cpus='0-1,3'}, {size='512M', cpus='2', device='pcm'}]\n")
    argv = qemu.command(params, Path("/k/vmlinux"), Path("/i.cpio"), None, "/p.so,out=/s.json")
    text = " ".join(argv)
    assert argv[:5] == ["/usr/bin/qemu-system-x86_64", "-M", "q35", "-bios", "qboot.rom"]
    assert "-smp 4 -m 1024M" in text
    assert "-icount shift=0,sleep=off" in text  # instruction time is the default
    assert "-seed 1" in text  # and the guest's random numbers repeat
    assert "intel-iommu" not in text and "x2apic" not in text
    assert "-numa node,nodeid=0,memdev=mem0,cpus=0-1,cpus=3" in text
    assert "-numa node,nodeid=1,memdev=mem1,cpus=2" in text
    assert "-plugin /p.so,out=/s.json" in text
    assert "console=ttyS0 panic=-1" in argv[argv.index("-append") + 1]
    assert "lpj=1000000" in argv[argv.index("-append") + 1]


def test_free_running_arm64_has_neither_icount_nor_qboot(write_spec, fake_qemu):
    params = point(write_spec, "[machine]\narch = 'arm64'\nvcpus = 2\nreproducible = false\n")
    argv = qemu.command(params, Path("/k/Image"), Path("/i.cpio"), None, None)
    assert "-icount" not in argv and "-bios" not in argv and "-seed" not in argv
    assert "lpj=" not in argv[argv.index("-append") + 1]


@pytest.mark.parametrize(("vcpus", "wide"), [(255, False), (256, True)])
def test_x86_beyond_255_vcpus_gets_x2apic_and_interrupt_remapping(write_spec, fake_qemu,
                                                                  vcpus, wide):
    params = point(write_spec, f"[machine]\nvcpus = {vcpus}\n")
    argv = qemu.command(params, Path("/k/vmlinux"), Path("/i.cpio"), None, None)
    assert argv[argv.index("-cpu") + 1] == ("qemu64,+x2apic" if wide else "qemu64")
    assert ("intel-iommu,intremap=on,eim=on" in argv) is wide
    assert ("qboot.rom" in argv) is not wide  # SeaBIOS switches the CPUs to x2APIC mode


def test_an_old_qemu_is_refused_with_the_fix(write_spec, monkeypatch):
    monkeypatch.setattr(qemu, "require_tool", lambda name, package: f"/usr/bin/{name}")
    monkeypatch.setattr(qemu, "version", lambda path: "QEMU emulator version 7.2.22 (Debian)")
    with pytest.raises(qemu.LabError, match=r"older than 10\.0: run scripts/setup\.sh"):
        qemu.command(point(write_spec), Path("/k/vmlinux"), Path("/i.cpio"), None, None)


def test_version_parsing():
    assert qemu.parse_version(QEMU_10) == (10, 0)
    assert qemu.parse_version("QEMU emulator version 7.2.22") == (7, 2)
    assert qemu.parse_version("garbage") is None


def test_plugin_arguments_carry_memory_devices_and_overrides(write_spec):
    params = point(write_spec, "[machine]\nmemory = '1G'\n"
                   "numa = [{size='512M', cpus='0'}, {size='512M', device='pcm'}]\n"
                   "[plugin]\nenabled = true\npreset = 'knl-64'\nset = {'l2.size_kib' = 512}\n")
    args = plugin.arguments(params, Path("/r/stats.json"), Path("/k/System.map"))
    assert args == ["out=/r/stats.json", "preset=knl-64", "mode=full", "roi=on", "checker=off",
                    "sysmap=/k/System.map", "quantum=1000", "quantum_shared=0",
                    "quantum_outside=0", "mem=dram:0x0:0x20000000",
                    "mem=pcm:0x20000000:0x20000000", "set.l2.size_kib=512"]
    assert plugin.qemu_argument(Path("/p.so"), ["a=x,y"]) == "/p.so,a=x,,y"


STORAGE_MACHINE = ("[kernel]\nfragments = ['pmem']\n[machine]\nmemory = '1G'\n"
                   "numa = [{size='256M', cpus='0'}, {size='256M', device='pcm'}, "
                   "{size='512M', device='storage'}]\n")


def storage_point(write_spec, workload: str) -> PointParams:
    spec = specs.load(write_spec('[workload]\nname = "pwriter"\n' + workload + STORAGE_MACHINE))
    return plan.points(spec)[0].config


def test_a_storage_node_is_kept_from_the_kernel_and_shown_to_the_plugin(write_spec, fake_qemu):
    params = storage_point(write_spec, "fs = 'ext2'\n")
    argv = qemu.command(params, Path("/k/vmlinux"), Path("/i.cpio"), None, None)
    cmdline = argv[argv.index("-append") + 1]
    assert "memmap=0x20000000!0x20000000" in cmdline.split()
    assert "-numa node,nodeid=2,memdev=mem2" in " ".join(argv)
    args = plugin.arguments(params, Path("/r/stats.json"), Path("/k/System.map"))
    assert "mem=storage:0x20000000:0x20000000" in args
    # The storage node is the workload's disk: no virtio disk beside it.
    assert not snapshot.wants_disk(params)
    assert snapshot.wants_disk(plan.points(specs.load(write_spec(
        '[workload]\nname = "pwriter"\nfs = "ext2"\n')))[0].config)


@pytest.mark.parametrize("extra, message", [
    ("fs = 'tmpfs'\n", "it is the workload's disk (set [workload] fs = 'ext2')"),
    ("fs = 'ext2'\nmembind = 2\n", "node 2 is the storage node"),
])
def test_a_storage_node_needs_its_disk_use(write_spec, extra, message):
    path = write_spec('[workload]\nname = "pwriter"\n' + extra + STORAGE_MACHINE)
    with pytest.raises(LabError, match=re.escape(message)):
        plan.points(specs.load(path))


@pytest.mark.parametrize("machine, message", [
    ("numa = [{size='256M', cpus='0'}, {size='256M', device='storage', cpus='1'}]\nvcpus = 2\n",
     "a storage node holds no CPUs"),
    ("numa = [{size='256M', cpus='0'}, {size='128M', device='storage'}, "
     "{size='128M', device='storage'}]\n", "one storage node (numa[2] is another)"),
    ("arch = 'arm64'\nnuma = [{size='256M', cpus='0'}, {size='256M', device='storage'}]\n",
     "on x86_64 only"),
])
def test_storage_nodes_refused_with_the_fix(write_spec, machine, message):
    path = write_spec('[workload]\nname = "pwriter"\nfs = "ext2"\n[kernel]\n'
                      "fragments = ['pmem']\n[machine]\nmemory = '512M'\n" + machine)
    with pytest.raises(LabError, match=re.escape(message)):
        plan.points(specs.load(path))


def test_a_storage_node_needs_the_pmem_fragment(write_spec):
    path = write_spec('[workload]\nname = "pwriter"\nfs = "ext2"\n[machine]\nmemory = "512M"\n'
                      "numa = [{size='256M', cpus='0'}, {size='256M', device='storage'}]\n")
    with pytest.raises(LabError, match=re.escape('add "pmem" to [kernel] fragments')):
        plan.points(specs.load(path))
    # The hybrid-pcm variant's own config has the driver.
    plan.points(specs.load(write_spec('[workload]\nname = "pwriter"\nfs = "ext2"\n[kernel]\n'
                                      'variant = "hybrid-pcm"\n[machine]\nmemory = "512M"\n'
                                      "numa = [{size='256M', cpus='0'}, "
                                      "{size='256M', device='storage'}]\n")))


def test_snc_modes_give_the_plugin_each_ranges_node_and_each_nodes_cpus(write_spec):
    # KNL flat SNC-2: nodes 0-1 DDR with the CPUs, nodes 2-3 MCDRAM (QEMU's nodeid order).
    params = point(write_spec, "[machine]\nvcpus = 4\nmemory = '2G'\n"
                   "numa = [{size='512M', cpus='0-1'}, {size='512M', cpus='2,3'}, "
                   "{size='512M', device='mcdram'}, {size='512M', device='mcdram'}]\n"
                   "[plugin]\nenabled = true\npreset = 'knl-64'\nset = {cluster = 'snc2'}\n")
    args = plugin.arguments(params, Path("/r/stats.json"), Path("/k/System.map"))
    assert [a for a in args if a.startswith(("mem=", "node_cpus="))] == [
        "mem=dram:0x0:0x20000000:0", "mem=dram:0x20000000:0x20000000:1",
        "mem=mcdram:0x40000000:0x20000000:2", "mem=mcdram:0x60000000:0x20000000:3",
        "node_cpus=0:0-1", "node_cpus=1:2-3"]
    assert "set.cluster=snc2" in args


def test_the_plugin_loads_for_the_quantum_alone_in_mode_none(write_spec):
    params = point(write_spec, "[machine]\nquantum = 500\n")
    assert plugin.wanted(params)
    args = plugin.arguments(params, Path("/r/stats.json"), Path("/k/System.map"))
    assert "mode=none" in args and "quantum=500" in args
    assert not any(a.startswith("quantum_unit=") for a in args)
    assert not plugin.wanted(point(write_spec, "[machine]\nquantum = 0\n"))


def test_quantum_outside_the_regions(write_spec):
    """'auto': QEMU's own slices outside the regions of a workload that marks them, the
    quantum everywhere for 'shell' (its whole script is the experiment); a number is taken
    as given, and the plugin loads for it alone."""
    def outside(params: PointParams) -> list[str]:
        args = plugin.arguments(params, Path("/r/s.json"), Path("/k/S.map"))
        return [a for a in args if a.startswith("quantum_outside=")]

    assert outside(point(write_spec, "[machine]\nquantum = 500\n")) == ["quantum_outside=0"]
    shell = specs.load(write_spec("[workload]\nname = 'shell'\nargs = { script = 'true' }\n"
                                  "[machine]\nquantum = 500\n"))
    assert outside(plan.points(shell)[0].config) == []
    assert outside(point(write_spec, "[machine]\nquantum = 500\nquantum_outside = 500\n")) == []
    assert outside(point(write_spec, "[machine]\nquantum = 500\nquantum_outside = 20000\n")) \
        == ["quantum_outside=20000"]
    boot_only = point(write_spec, "[machine]\nquantum = 0\nquantum_outside = 5000\n")
    assert plugin.wanted(boot_only)
    with pytest.raises(specs.SpecError, match="quantum_outside"):
        point(write_spec, "[machine]\nquantum_outside = 'sometimes'\n")


def test_quantum_unit_cycles_goes_to_the_plugin(write_spec):
    params = point(write_spec, "[machine]\nquantum = 2000\nquantum_unit = 'cycles'\n")
    args = plugin.arguments(params, Path("/r/stats.json"), Path("/k/System.map"))
    assert "quantum=2000" in args and "quantum_unit=cycles" in args


def test_the_race_rule_goes_to_the_plugin_only_when_asked(write_spec):
    def race(extra: str) -> list[str]:
        params = point(write_spec, f"[plugin]\nenabled = true\npreset = 'knl-64'\n{extra}")
        args = plugin.arguments(params, Path("/r/s.json"), Path("/k/S.map"))
        return [a for a in args if a.startswith("race=")]

    assert race("") == [] and race("race = 'off'\n") == []
    assert race("race = 'lax'\n") == ["race=lax"]
    assert race("race = 'window'\n") == ["race=window"]
    with pytest.raises(specs.SpecError, match="race"):
        point(write_spec, "[plugin]\nrace = 'always'\n")


def test_workload_command_and_run_script(write_spec):
    params = point(write_spec, "[kernel]\nsysctl = {'vm.dirty_ratio' = 5}\n")
    assert command_line("pwriter", dict(params.workload.args)) == \
        'pwriter --procs 2 --fsync --dir "$MANYLAB_WORKDIR"'
    script = run_script(params)
    assert "manylab_workdir tmpfs" in script
    assert "echo 5 > /proc/sys/vm/dirty_ratio" in script


def test_plugin_view_is_the_guest_physical_map(write_spec):
    three = point(write_spec, "[machine]\nmemory = '1G'\nnuma = [{size='256M', cpus='0'}, "
                  "{size='256M', device='pcm'}, {size='512M', device='mcdram'}]\n")
    assert memory_layout.plugin_view(three) == [
        MemRange("dram", 0, 256 << 20), MemRange("pcm", 256 << 20, 256 << 20),
        MemRange("mcdram", 512 << 20, 512 << 20)]
    plain = point(write_spec, "[machine]\narch = 'arm64'\nmemory = '2G'\n")
    assert memory_layout.plugin_view(plain) == [MemRange("dram", GIB, 2 * GIB)]


def test_nodes_splitting_the_cpus_get_a_socket_each(write_spec):
    # SNC-style layout: node k holds CPUs 2k..2k+1, so each node is its own socket and the x86
    # guest's LLC does not span two nodes (a boot warning otherwise).
    split = point(write_spec, "[machine]\nvcpus = 4\nmemory = '1G'\n"
                  "numa = [{size='512M', cpus='0-1'}, {size='512M', cpus='2-3'}]\n")
    argv = qemu.command(split, Path("/k/vmlinux"), Path("/i.cpio"), None, None)
    assert argv[argv.index("-smp") + 1] == "4,sockets=2"
    # One node with every CPU (plus a memory-only node), or an irregular split: as before.
    one = point(write_spec, "[machine]\nvcpus = 4\nmemory = '1G'\n"
                "numa = [{size='512M', cpus='0-3'}, {size='512M', device='pcm'}]\n")
    argv = qemu.command(one, Path("/k/vmlinux"), Path("/i.cpio"), None, None)
    assert argv[argv.index("-smp") + 1] == "4"
    odd = point(write_spec, "[machine]\nvcpus = 4\nmemory = '1G'\n"
                "numa = [{size='512M', cpus='0,2'}, {size='512M', cpus='1,3'}]\n")
    argv = qemu.command(odd, Path("/k/vmlinux"), Path("/i.cpio"), None, None)
    assert argv[argv.index("-smp") + 1] == "4"


def test_repeats_in_lockstep_seed_the_first_turns_and_repeat_0_replays(write_spec):
    spec = specs.load(write_spec('[study]\nrepeats = 3\n[workload]\nname = "pwriter"\n'
                                 "[machine]\nquantum = 1000\n"))
    seeds = [[a for a in plugin.arguments(p.config, Path("/r/s.json"), Path("/k/S.map"))
              if a.startswith("phase_seed=")] for p in plan.points(spec)]
    assert seeds == [[], ["phase_seed=1"], ["phase_seed=2"]]
    free = specs.load(write_spec('[study]\nrepeats = 2\n[workload]\nname = "pwriter"\n'
                                 "[machine]\nquantum = 0\n"))
    last = plan.points(free)[1].config
    assert not any(a.startswith("phase_seed=") for a in
                   plugin.arguments(last, Path("/r/s.json"), Path("/k/S.map")))


def test_a_repeat_argument_gives_each_repeat_its_own_value_in_one_setting(write_spec):
    spec = specs.load(write_spec('[study]\nrepeats = 3\n[workload]\nname = "mobileapps"\n'
                                 'args = {scenario = "push", seed = "{repeat}"}\n'))
    points = plan.points(spec)
    assert [p.config.repeat for p in points] == [0, 1, 2]
    assert {p.params["workload"]["args"]["seed"] for p in points} == {"{repeat}"}
    assert len({p.id for p in points}) == 3
    scripts = [run_script(p.config) for p in points]
    assert [s.splitlines()[-1].split("--seed ")[1].split()[0] for s in scripts] == ["0", "1", "2"]


@pytest.mark.parametrize(("args", "message"), [
    ('seed = "{repeats}"', "wrong type"), ('scenario = "{repeat}"', "does not take"),
    ('replay = "{repeat}"', "does not take")])
def test_a_repeat_argument_must_be_spelled_exactly_and_be_a_number(write_spec, args, message):
    with pytest.raises(LabError, match=message):
        plan.points(specs.load(write_spec(f'[workload]\nname = "mobileapps"\nargs = {{{args}}}\n')))
