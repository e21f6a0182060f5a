import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_results import make_point

from manylab import kstats, results
from manylab.console import ConsoleState

REPO = Path(__file__).resolve().parents[2]


def test_snapshot_line_parses_to_label_group_and_values():
    line = '[ 12.5] MANYLAB-KSTATS after ldu {"push":7,"queued":2}'
    assert kstats.parse_line(line) == ("after", "ldu", {"push": 7, "queued": 2})
    assert kstats.parse_line('MANYLAB-KSTATS roi_end vmstat {"pgfault":3}') == \
        ("roi_end", "vmstat", {"pgfault": 3})
    assert kstats.parse_line("MANYLAB-RESULT {}") is None


@pytest.mark.parametrize("line", ['MANYLAB-KSTATS during ldu {"push":1}',
                                  'MANYLAB-KSTATS before ldu {"push":1',
                                  'MANYLAB-KSTATS before ldu {"push":"x"}',
                                  "MANYLAB-KSTATS before"])
def test_cut_or_garbled_snapshot_lines_are_errors(line):
    with pytest.raises(ValueError):
        kstats.parse_line(line)


def test_differences_count_events_and_keep_gauges_as_read_at_the_end():
    # nr_written is an event count despite its prefix (pages written since boot)
    record = {"before": {"ldu": {"push": 10, "queued": 4},
                         "vmstat": {"pgfault": 100, "nr_free_pages": 900, "nr_written": 40}},
              "roi_begin": {"ldu": {"push": 12, "queued": 3}},
              "roi_end": {"ldu": {"push": 20, "queued": 5}},
              "after": {"ldu": {"push": 25, "queued": 1},
                        "vmstat": {"pgfault": 160, "nr_free_pages": 700, "nr_written": 1480,
                                   "new_counter": 3}},
              "unreadable_lines": 0}
    assert kstats.differences(record) == {
        "run.ldu.push": 15, "run.ldu.queued": 1, "run.vmstat.pgfault": 60,
        "run.vmstat.nr_free_pages": 700, "run.vmstat.nr_written": 1440, "roi.ldu.push": 8,
        "roi.ldu.queued": 5}


def test_console_collects_snapshots_and_counts_a_garbled_one_without_failing_the_run():
    console = ConsoleState()
    for line in ('MANYLAB-KSTATS before vmstat {"pgfault":1}',
                 'MANYLAB-RESULT {"ok": true}',
                 'MANYLAB-KSTATS after vmstat {"pgfault":5}',
                 'MANYLAB-KSTATS after ldu {"push":'):
        console.feed(line)
    assert console.kstats == {"before": {"vmstat": {"pgfault": 1}},
                              "after": {"vmstat": {"pgfault": 5}}}
    assert console.bad_kstats == 1 and console.results == [{"ok": True}]
    assert console.reason is None


def test_table_has_the_workloads_kernel_counter_changes(tmp_path):
    folder = make_point(tmp_path, "a", "ok", [{"ops": 3}])
    (folder / "kstats.json").write_text(json.dumps(
        {"before": {"ldu": {"fence": 2}}, "after": {"ldu": {"fence": 9}},
         "roi_begin": {"ldu": {"fence": 3}}, "roi_end": {"ldu": {"fence": 8}},
         "unreadable_lines": 0}))
    make_point(tmp_path, "b", "ok", [{"ops": 4}])  # a point from before kstats existed
    df = results.load(tmp_path)
    assert list(df["kstat.run.ldu.fence"].fillna(-1)) == [7, -1]
    assert list(df["kstat.roi.ldu.fence"].fillna(-1)) == [5, -1]


def run_snapshot_script(tmp_path: Path, workload: str, files: dict[str, Path] | None = None
                        ) -> tuple[subprocess.CompletedProcess[str], ConsoleState]:
    """The run script's snapshot lines around `workload` in busybox sh, its held file in
    tmp_path and each guest path of `files` replaced by its host file; the output fed to a
    console."""
    lines = "\n".join(kstats.script_lines()).replace(kstats.HELD, str(tmp_path / "held"))
    for guest, host in (files or {}).items():
        lines = lines.replace(guest, str(host))
    script = tmp_path / "run.sh"
    script.write_text(lines + "\n" + workload)
    done = subprocess.run(["busybox", "sh", str(script)], capture_output=True, text=True,
                          check=False)
    console = ConsoleState()
    for line in done.stdout.splitlines():
        console.feed(line)
    return done, console


@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox (busybox-static) missing")
def test_guest_snapshot_runs_in_busybox_sh_and_keeps_the_scripts_exit_status(tmp_path):
    done, console = run_snapshot_script(tmp_path, "echo work\nexit 3\n")
    assert done.returncode == 3
    assert console.bad_kstats == 0
    assert set(console.kstats) == {"before", "after"}
    assert "pgfault" in console.kstats["after"]["vmstat"]  # the host's /proc/vmstat
    # the snapshot before the workload is held in a file and printed after it
    assert done.stdout.splitlines()[0] == "work"
    assert (tmp_path / "held").read_text().startswith("MANYLAB-KSTATS before vmstat")



@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox (busybox-static) missing")
def test_guest_snapshot_reads_ldus_debugfs_stats_lines(tmp_path):
    stats = tmp_path / "ldu-stats"
    stats.write_text("push 41\nfence 0\ndequeue 43\nqueued -2\nresched 3\n")
    done, console = run_snapshot_script(tmp_path, "exit 0\n", {kstats.LDU_STATS: stats})
    assert done.returncode == 0
    assert console.bad_kstats == 0
    for label in ("before", "after"):
        assert console.kstats[label]["ldu"] == {"push": 41, "fence": 0, "dequeue": 43,
                                                "queued": -2, "resched": 3}


@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox (busybox-static) missing")
def test_guest_snapshot_reads_hybrid_pcms_debugfs_stats_lines(tmp_path):
    stats = tmp_path / "hybrid-pcm-stats"
    stats.write_text("placed 900\nfallback 12\nforeground 300\nbackground 612\n"
                     "promote_success 7\npromote_fail 1\n")
    done, console = run_snapshot_script(tmp_path, "exit 0\n",
                                        {kstats.HYBRID_PCM_STATS: stats})
    assert done.returncode == 0
    assert console.bad_kstats == 0
    assert console.kstats["after"]["hybrid_pcm"]["promote_success"] == 7
    assert "ldu" not in console.kstats["after"]  # no LDU kernel: no ldu group


HARNESS = r"""
#include "manylab_kstats.h"
int main(int argc, char **argv)
{
	static const char *const columns[] = { "batches", "locks", "folios", NULL };
	char table[] = "kind batches locks folios\nlru_add 5 6 70\nother 1 2\n";
	char vmstat[] = "pgfault 12\nnr_free_pages 99\nbad x1\n\nlonely\n";
	char ldu[] = "push 41\nfence 0\ndequeue 43\nqueued -2\nbad -\nworse 1-\n";
	struct manylab_kstats_line line;

	manylab_kstats_start(&line, "roi_begin", "ldu");
	manylab_kstats_table(&line, ldu, NULL);
	manylab_kstats_finish(&line, 1);
	manylab_kstats_start(&line, "roi_begin", "finer_lru");
	manylab_kstats_table(&line, table, columns);
	manylab_kstats_finish(&line, 0);
	manylab_kstats_start(&line, "roi_end", "vmstat");
	manylab_kstats_table(&line, vmstat, NULL);
	manylab_kstats_finish(&line, 0);
	return argc != 1 || !argv[0];
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc missing")
def test_workload_side_snapshot_reads_name_value_and_column_tables(tmp_path):
    source = tmp_path / "harness.c"
    source.write_text(HARNESS)
    binary = tmp_path / "harness"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror",
                    f"-I{REPO / 'workloads/include'}", str(source), "-o", str(binary)],
                   check=True)
    done = subprocess.run([str(binary)], capture_output=True, text=True, check=True)
    # the first line was held (as roi_begin's are) and comes out before the next one
    parsed = [kstats.parse_line(line) for line in done.stdout.splitlines()]
    assert parsed == [("roi_begin", "ldu", {"push": 41, "fence": 0, "dequeue": 43,
                                            "queued": -2}),
                      ("roi_begin", "finer_lru", {"lru_add.batches": 5, "lru_add.locks": 6,
                                                  "lru_add.folios": 70,
                                                  "other.batches": 1, "other.locks": 2}),
                      ("roi_end", "vmstat", {"pgfault": 12, "nr_free_pages": 99})]
