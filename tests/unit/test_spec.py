import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from manylab import keys, plan, units
from manylab import spec as specs
from manylab.errors import LabError

MINIMAL = """
[workload]
name = "pwriter"
"""


def test_defaults_fill_a_minimal_spec(write_spec):
    spec = specs.load(write_spec(MINIMAL))
    points = plan.points(spec)
    assert len(points) == 1
    params = points[0].params
    assert params["kernel"]["variant"] == "stock"
    assert params["machine"] == {"arch": "x86_64", "vcpus": 1, "memory": "512M", "numa": [],
                                 "tcg": "single", "cpu": "", "reproducible": True,
                                 "quantum": keys.DEFAULT_QUANTUM, "quantum_shared": 0,
                                 "quantum_unit": "instructions", "quantum_outside": "auto",
                                 "snapshot": "auto", "backend": "qemu"}
    assert spec.name == "study"


def test_lists_expand_into_a_matrix_in_spec_order(write_spec):
    spec = specs.load(write_spec("""
[study]
repeats = 2
[kernel]
variant = ["stock", "stock"]
fragments = [[], ["debug"]]
[machine]
vcpus = [1, 4]
[workload]
name = "pwriter"
args = { procs = "{vcpus}", pattern = ["seq", "rand"] }
"""))
    expanded = list(specs.expand(spec))
    assert len(expanded) == 2 * 2 * 2 * 2 * 2
    first = expanded[0]
    assert first["kernel"]["fragments"] == [] and first["machine"]["vcpus"] == 1
    assert first["workload"]["args"] == {"procs": 1, "pattern": "seq"}
    assert [p["repeat"] for p in expanded[:2]] == [0, 1]
    assert expanded[2]["workload"]["args"]["pattern"] == "rand"
    assert expanded[4]["machine"]["vcpus"] == 4 and expanded[4]["workload"]["args"]["procs"] == 4
    # the two identical variants collapse into one set of point ids
    assert len(plan.points(spec)) == 16


def test_a_point_is_found_by_its_id_and_an_unknown_id_names_the_spec(write_spec):
    path = write_spec(MINIMAL)
    spec = specs.load(path)
    only = plan.points(spec)[0]
    assert plan.find(spec, only.id) == only
    wanted = f"{path}: no point 'nosuch' (see manylab plan {path})"
    with pytest.raises(LabError, match=f"^{re.escape(wanted)}$"):
        plan.find(spec, "nosuch")


def test_a_dotted_set_key_sweeps_as_one_key(write_spec):
    spec = specs.load(write_spec("""
[workload]
name = "pwriter"
[plugin]
set = { "bw.behind_epochs" = [2, 8], "core.cpi" = 1 }
"""))
    points = plan.points(spec)
    assert [p.params["plugin"]["set"] for p in points] == [
        {"bw.behind_epochs": 2, "core.cpi": 1}, {"bw.behind_epochs": 8, "core.cpi": 1}]
    assert [plan.describe(p, plan.swept_keys(spec)) for p in points] == [
        "behind_epochs=2", "behind_epochs=8"]


@pytest.mark.parametrize("plugin, message", [
    ('preset = "knl-65"', "unknown preset 'knl-65'"),
    ('set = { "nosuch" = 1 }', "unknown key 'set.nosuch'"),
    ('set = { "l2.size_kib" = ["big", 512] }', "bad value 'big' for set.l2.size_kib"),
])
def test_plan_checks_the_machine_with_the_plugins_own_keys(write_spec, plugin, message):
    path = write_spec(MINIMAL + f"[plugin]\nenabled = true\n{plugin}\n")
    with pytest.raises(LabError) as caught:
        plan.points(specs.load(path))
    text = str(caught.value)
    assert message in text and str(path) in text and "\n" not in text


def test_a_single_list_valued_key_is_not_a_sweep(write_spec):
    spec = specs.load(write_spec(MINIMAL + '[kernel]\nfragments = ["debug", "lockstat"]\n'))
    assert spec.sweeps == {}
    assert spec.base["kernel"]["fragments"] == ["debug", "lockstat"]


@pytest.mark.parametrize("text, message", [
    ("[machine]\nvcpu = 4\n" + MINIMAL, "[machine] unknown key 'vcpu' (allowed: arch, vcpus"),
    ("[machines]\n" + MINIMAL, "unknown section [machines]"),
    ("[machine]\nvcpus = 'four'\n" + MINIMAL, "[machine] vcpus: 'four' is not an integer"),
    ("[machine]\nvcpus = true\n" + MINIMAL, "[machine] vcpus: True is not an integer"),
    ("[machine]\narch = 'riscv'\n" + MINIMAL,
     "'riscv' is not allowed (allowed: 'x86_64', 'arm64')"),
    ("[machine]\nvcpus = 257\n" + MINIMAL, "vcpus: 257 is above the x86_64 limit of 256"),
    ("[machine]\narch='arm64'\nvcpus = 513\n" + MINIMAL, "above the arm64 limit of 512"),
    ("[machine]\nmemory = '12 parsecs'\n" + MINIMAL, "memory: '12 parsecs' is not a size"),
    ("[machine]\nvcpus = []\n" + MINIMAL, "an empty list sweeps over nothing"),
    ("[study]\nrepeats = [1, 2]\n" + MINIMAL, "[study] repeats: takes one value"),
    ("[machine]\ntcg = 'multi'\n" + MINIMAL, "reproducible: needs tcg = 'single'"),
    ("[machine]\ntcg = 'multi'\nreproducible = false\n" + MINIMAL,
     "quantum: the vCPU switch needs tcg = 'single' (or quantum = 0)"),
    ("[machine]\nquantum = -1\n" + MINIMAL, "quantum: must be 0 or more"),
    ("[workload]\nname = 'nope'\n", "unknown workload 'nope'"),
    ("[workload]\nname = 'pwriter'\nargs = { prcs = 2 }\n", "'pwriter' has no argument 'prcs'"),
    ("[workload]\nname = 'pwriter'\nargs = { pattern = 'zigzag' }\n", "'zigzag' is not one of"),
    ("[workload]\n", "[workload] name: required"),
    ("[machine]\nvcpus = 2\nmemory = '512M'\nnuma = [{size='256M', cpus='0'}, {size='128M'}]\n"
     + MINIMAL, "node sizes add up to 384 MiB, memory is 512 MiB"),
    ("[machine]\nvcpus = 2\nmemory = '512M'\nnuma = [{size='256M', cpus='0'}, {size='256M'}]\n"
     + MINIMAL, "cpus must cover 0-1 exactly once"),
    ("[machine]\nnuma = [{size='256M', device='flash'}]\n" + MINIMAL, "device 'flash' is not"),
    ("this is = not toml", "not valid TOML"),
    ("[machine]\nmemory = '0'\n" + MINIMAL, "memory: '0' is below the 64 MiB a guest needs"),
    ("[workload]\nname = 'pwriter'\nargs = { size = '-4M' }\n", "args.size: '-4M' is not a size"),
    ("[workload]\nname = 'pwriter'\nargs = { size = -4 }\n", "args.size: -4 is negative"),
    ("[kernel]\nvariant = '../../etc'\n" + MINIMAL, "variant: '../../etc' is not a kernel variant"),
    ("[kernel]\nvariant = 'finerlru+stock'\n" + MINIMAL,
     "variant: kernel variant stack 'finerlru+stock': a stack names two or more distinct"),
    ("[kernel]\nvariant = 'finerlru+ldu'\nfragments = ['nosuch']\n" + MINIMAL,
     "not found in kernel-patches/finerlru/ or kernel-patches/ldu/ or kernel-patches/lab/"),
    ("[kernel]\nfragments = ['/etc/passwd']\n" + MINIMAL, "'/etc/passwd' is not a fragment name"),
    ("[kernel]\nfragments = ['nosuch']\n" + MINIMAL, "fragment 'nosuch' not found"),
    ("[study]\nrepeats = 100000000\n" + MINIMAL, "[study] repeats: must be 1 to 1000"),
    ("[machine]\nvcpus = " + str(list(range(1, 101))) + "\nquantum = " + str(list(range(101)))
     + "\n" + MINIMAL, "10,100 points (sweeps x repeats) is more than 10,000"),
])
def test_errors_name_file_key_and_what_is_allowed(write_spec, text, message):
    path = write_spec(text)
    with pytest.raises(LabError) as caught:
        plan.points(specs.load(path))
    assert str(path) in str(caught.value)
    assert message in str(caught.value)


def test_profiles_override_dotted_keys(write_spec):
    path = write_spec(MINIMAL + """
[machine]
vcpus = [1, 2]
[profiles.full]
"machine.vcpus" = [8, 16, 32]
"workload.args.size" = "1G"
""")
    spec = specs.load(path, "full")
    assert spec.sweeps["machine.vcpus"] == [8, 16, 32]
    assert spec.base["workload"]["args"]["size"] == "1G"
    with pytest.raises(LabError, match="no profile 'huge' \\(profiles: full\\)"):
        specs.load(path, "huge")


def test_point_ids_are_stable_and_change_with_any_parameter(write_spec):
    a = plan.points(specs.load(write_spec(MINIMAL + "[machine]\nvcpus = [1, 2]\n", "a.toml")))
    b = plan.points(specs.load(write_spec(MINIMAL + "[machine]\nvcpus = [2, 1]\n", "b.toml")))
    assert {p.id for p in a} == {p.id for p in b}
    c = plan.points(specs.load(write_spec(MINIMAL + "[machine]\nvcpus = [1, 2]\nmemory='1G'\n",
                                          "c.toml")))
    assert not {p.id for p in a} & {p.id for p in c}
    assert a[0].id.startswith("stock-x86_64-1c-pwriter-r0-")


@pytest.mark.parametrize("text, expected", [
    ("512M", 512 << 20), ("2G", 2 << 30), ("4096K", 4 << 20), (64, 64 << 20), ("1GiB", 1 << 30),
])
def test_sizes(text, expected):
    assert units.parse_size(text) == expected


def test_cpu_lists():
    assert units.parse_cpus("0-3,6") == [0, 1, 2, 3, 6]
    with pytest.raises(ValueError):
        units.parse_cpus("a-b")


def test_checked_in_specs_are_valid():
    # runs/pcm/ also holds pcm-policy sweep configs (a [pcm] table: tests/pcm/test_sweep.py).
    runs = Path(__file__).resolve().parents[2].joinpath("runs")
    paths = [p for p in sorted([*runs.glob("*.toml"), *runs.glob("pcm/*.toml")])
             if "pcm" not in tomllib.loads(p.read_text())]
    assert runs / "pcm" / "full-system.toml" in paths
    for path in paths:
        assert plan.points(specs.load(path)), path


def test_point_ids_ignore_keys_at_their_default(write_spec):
    (point,) = plan.points(specs.load(write_spec(MINIMAL)))
    without_new_key = {**point.params, "workload": dict(point.params["workload"])}
    del without_new_key["workload"]["membind"]  # as if the schema had no membind yet
    assert plan.point_id(without_new_key) == point.id
    changed = {**point.params, "workload": {**point.params["workload"], "membind": 1}}
    assert plan.point_id(changed) != point.id


def test_together_pairs_swept_lists_element_by_element(write_spec):
    spec = specs.load(write_spec("""
[study]
together = [["plugin.preset", "machine.arch"]]
[machine]
vcpus = [2, 4]
arch = ["x86_64", "arm64", "x86_64"]
[plugin]
enabled = true
preset = ["knl-64", "altra-80", "icelake-32"]
[workload]
name = "pwriter"
"""))
    combos = [(p["plugin"]["preset"], p["machine"]["arch"], p["machine"]["vcpus"])
              for p in specs.expand(spec)]
    assert combos == [("knl-64", "x86_64", 2), ("altra-80", "arm64", 2),
                      ("icelake-32", "x86_64", 2), ("knl-64", "x86_64", 4),
                      ("altra-80", "arm64", 4), ("icelake-32", "x86_64", 4)]
    assert len(plan.points(spec)) == 6


@pytest.mark.parametrize("together, message", [
    ('[["plugin.preset", "machine.vcpus"]]', "'machine.vcpus' is not a swept key"),
    ('[["plugin.preset", "machine.arch"]]', "have different lengths (3, 2)"),
    ('[["plugin.preset"]]', "two or more swept keys"),
])
def test_together_errors_name_the_key(write_spec, together, message):
    path = write_spec(f"""
[study]
together = {together}
[machine]
vcpus = 2
arch = ["x86_64", "arm64"]
[plugin]
preset = ["knl-64", "altra-80", "icelake-32"]
[workload]
name = "pwriter"
""")
    with pytest.raises(specs.SpecError, match=r"\[study\] together: .*" + message.replace(
            "(", r"\(").replace(")", r"\)")):
        specs.load(path)


def test_local_runs_interleave_kernel_settings(write_spec):
    spec = specs.load(write_spec("""
[kernel]
cmdline = ["a=1", "a=2"]
[machine]
vcpus = [1, 2]
[workload]
name = "pwriter"
"""))
    points = plan.points(spec)
    order = [(p.params["kernel"]["cmdline"], p.params["machine"]["vcpus"]) for p in points]
    assert order == [("a=1", 1), ("a=1", 2), ("a=2", 1), ("a=2", 2)]
    mixed = [(p.params["kernel"]["cmdline"], p.params["machine"]["vcpus"])
             for p in plan.interleaved(points)]
    assert mixed == [("a=1", 1), ("a=2", 1), ("a=1", 2), ("a=2", 2)]


def test_stored_points_read_typed_with_the_declared_stored_defaults(write_spec):
    from manylab import params as typed

    spec = specs.load(write_spec("[workload]\nname = 'pwriter'\n"))
    stored = json.loads(json.dumps(plan.points(spec)[0].params))
    stored["machine"] = {k: v for k, v in stored["machine"].items()
                         if k not in ("quantum_unit", "quantum_outside", "snapshot")}
    machine = typed.PointParams.from_dict(stored).machine
    assert (machine.quantum_unit, machine.quantum_outside, machine.snapshot) == (
        "instructions", "auto", "auto")
    del stored["machine"]["vcpus"]  # declared without a stored default: required
    with pytest.raises(KeyError, match="vcpus"):
        typed.PointParams.from_dict(stored)
    stored["machine"]["vcpus"], stored["machine"]["nosuch"] = 1, 2
    with pytest.raises(KeyError, match="nosuch"):
        typed.PointParams.from_dict(stored)


def test_a_planned_point_reads_typed(write_spec):
    spec = specs.load(write_spec("[machine]\nvcpus = 4\nnuma = [{size='256M', cpus='0-3'}, "
                                 "{size='256M', device='pcm'}]\n[workload]\nname = 'pwriter'\n"
                                 "args = { size = '4M' }\n[plugin]\nset = { 'l2.ways' = 8 }\n"))
    config = plan.points(spec)[0].config
    assert config.machine.vcpus == 4 and config.machine.arch == "x86_64"
    assert [(n.size, n.cpus, n.device) for n in config.machine.numa] == [
        ("256M", "0-3", "dram"), ("256M", None, "pcm")]
    assert config.workload.args["size"] == "4M" and config.plugin.set == {"l2.ways": 8}
    assert config.kernel.fragments == () and config.repeat == 0
    with pytest.raises(TypeError):
        config.workload.args["size"] = "8M"  # type: ignore[index]


def test_a_stacked_variant_plans_beside_a_single_one(write_spec):
    spec = specs.load(write_spec("""
[kernel]
variant = ["finerlru", "finerlru+ldu"]
fragments = ["debug"]
""" + MINIMAL))
    points = plan.points(spec)
    assert [p.config.kernel.variant for p in points] == ["finerlru", "finerlru+ldu"]


def test_plan_into_a_closed_pipe_ends_quietly():
    """`manylab plan spec | head -1`: the listing stops at the closed pipe without a traceback."""
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "manylab", "plan", "runs/ldu.toml"],
                            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the child has imported the lab and printed a line
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
