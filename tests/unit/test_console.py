from manylab.console import ConsoleState


def feed(*lines: str) -> ConsoleState:
    state = ConsoleState()
    for line in lines:
        state.feed(line)
    return state


def test_results_and_exit_are_parsed():
    state = feed("MANYLAB-BOOTED cpus=2", 'MANYLAB-RESULT {"a": 1, "b": [1, 2]}',
                 "[    1.234567] random kernel chatter", "MANYLAB-EXIT status=0")
    assert state.booted and state.exit_status == 0
    assert state.results == [{"a": 1, "b": [1, 2]}]
    assert state.reason is None


def test_a_result_line_after_kernel_noise_on_the_same_line_still_parses():
    state = feed('garbage MANYLAB-RESULT {"x": 2}')
    assert state.results == [{"x": 2}]


def test_broken_result_json_fails_the_run():
    state = feed("MANYLAB-RESULT {not json", "MANYLAB-EXIT status=0")
    assert state.reason == "1 MANYLAB-RESULT line(s) were not valid JSON"


def test_panic_is_fatal_and_named():
    state = feed("[    0.5] Kernel panic - not syncing: Requested init /nope failed (error -2).")
    assert state.fatal
    assert state.reason == "kernel panic: Requested init /nope failed (error -2)."


def test_reports_are_classified_and_counted():
    state = feed("[ 5.0] watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [kworker:1]",
                 "[ 6.0] WARNING: possible circular locking dependency detected",
                 "[ 7.0] BUG: KFENCE: use-after-free read in foo+0x1/0x2",
                 "[ 8.0] kernel BUG at mm/swap.c:123!",
                 "[ 9.0] Internal error: Oops: 96000005 [#1] SMP",
                 "[10.0] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
                 "MANYLAB-EXIT status=0")
    assert not state.fatal
    assert state.failures == [
        "soft lockup: CPU#3 stuck for 22s! [kworker:1]",
        "kernel warning: possible circular locking dependency detected",
        "kernel BUG: KFENCE: use-after-free read in foo+0x1/0x2",
        "kernel BUG: mm/swap.c:123!",
        "kernel oops: 96000005 [#1] SMP",
        "RCU stall: rcu_sched detected stalls on CPUs/tasks:",
    ]
    assert state.reason == "soft lockup: CPU#3 stuck for 22s! [kworker:1] (+5 more reports)"


def test_nonzero_workload_exit_fails():
    assert feed("MANYLAB-EXIT status=3").reason == "workload exited with status 3"
