"""The LDU thesis's workloads (issue #31) on the real stock kernel under QEMU at 2 vCPUs:
aim7 (AIM7-multiuser-like) and lmproc (lmbench-like process creation) run, report what they
did, agree with the kernel's own fork count, and close their region of interest."""

import json

import pytest

from manylab import results
from tests.e2e.helpers import manylab, point_dirs, result_of

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]


def run_study(tmp_path, name: str, body: str) -> list[tuple[dict, dict, dict]]:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(f'[study]\nname = "{name}"\n[machine]\nvcpus = 2\nmemory = "512M"\n'
                    + body)
    root = tmp_path / "results"
    manylab("run", str(spec), "--results-root", str(root), "-j", "2")
    runs = []
    for point_dir in point_dirs(root / name):
        result = result_of(point_dir)
        assert result["status"] == "ok", (result["reason"],
                                          (point_dir / "console.log").read_text()[-3000:])
        params = json.loads((point_dir / "inputs.json").read_text())["params"]
        (output,) = json.loads((point_dir / "workload.json").read_text())
        kstats = json.loads((point_dir / "kstats.json").read_text())
        runs.append((params, output, kstats))
    table = results.load(root / name)
    # the ROI opened and closed: the kernel counters at both of its edges made it to the table
    assert (table["kstat.roi.vmstat.pgfault"] > 0).all()
    return runs


def roi_closed(kstats: dict) -> bool:
    return {"roi_begin", "roi_end"} <= set(kstats) and all(
        kstats[edge]["vmstat"] for edge in ("roi_begin", "roi_end"))


def test_aim7_runs_every_users_jobs_and_counts_forks_as_the_kernel_does(tmp_path):
    users = 6
    ((params, out, kstats),) = run_study(tmp_path, "aim7", f"""
[workload]
name = "aim7"
args = {{ users = {users}, scale = 0.02, seed = 6 }}
""")
    assert params["workload"]["args"] == {"users": users, "scale": 0.02, "seed": 6}
    assert out["workload"] == "aim7" and out["ok"] is True and out["failed"] == 0
    assert out["cpus"] == 2 and out["params"]["dirs"] == 2
    assert out["jobs_per_user"] == 97
    assert out["jobs"] == out["expected_jobs"] == users * 97
    assert sum(c["jobs"] for c in out["categories"].values()) == users * 97
    assert out["categories"]["process"]["jobs"] == users * 7
    elapsed = out["elapsed_s"]
    assert out["jobs_per_min"] == pytest.approx(60 * 97 * users / elapsed, rel=1e-4)
    assert 0 < out["user_s"]["min"] <= out["user_s"]["max"] <= elapsed + 1e-6
    assert 0 <= out["jti"] <= 100 and 0 <= out["idle_share"] <= 1 and out["cpu_s"] > 0
    # the kernel's count of new tasks over the ROI (/proc/stat "processes"): each fork of a
    # job, plus at least system()'s own child per shell job (sh -c and the script's ls -l
    # may add one each), plus the odd kernel thread
    forks, shells = out["forks"], out["shells"]
    assert forks == out["categories"]["process"]["iterations"] > 0
    # seed 6 draws (on any machine) 16 forks, of which 2 exec the "#!/bin/sh" script and 2
    # run the shell script through system()
    assert (forks, out["execs"], shells) == (16, 2, 2)
    assert forks + shells <= out["kernel_forks"] <= forks + 3 * shells + 8, out
    assert roi_closed(kstats)


def test_lmproc_process_creation_modes(tmp_path):
    copies, iterations = 4, 6
    runs = run_study(tmp_path, "lmproc", f"""
[workload]
name = "lmproc"
args = {{ mode = ["fork", "exec", "shell"], parallel = {copies}, iterations = {iterations} }}
""")
    by_mode = {params["workload"]["args"]["mode"]: (out, kstats) for params, out, kstats in runs}
    assert set(by_mode) == {"fork", "exec", "shell"}
    for mode, (out, kstats) in by_mode.items():
        ops = copies * iterations
        assert out["ok"] is True and out["failed"] == 0 and out["copies"] == copies
        assert out["ops"] == ops
        assert out["ops_per_s"] == pytest.approx(ops / out["elapsed_s"], rel=1e-3)
        assert 0 < out["us_per_op_min"] <= out["us_per_op"] <= out["us_per_op_max"]
        # one fork per operation (busybox sh -c execs its one command without forking)
        assert ops <= out["kernel_forks"] <= (2 * ops if mode == "shell" else ops) + 4, out
        assert roi_closed(kstats), mode
    per_op = {mode: out["us_per_op"] for mode, (out, _) in by_mode.items()}
    # an exec costs more than a fork alone, a shell more than a direct exec (guest time)
    assert per_op["fork"] < per_op["exec"] < per_op["shell"], per_op
