//! Hand-computed cases of the causal clock (README "Modelled time"): on tiny-4 (1 GHz, CPI 1)
//! a cycle is a nanosecond, and `test_insts` sets each vCPU's instructions, so its clock.

use crate::coherence::Machine;
use crate::memory::{DeviceKind, MemoryMap};
use crate::params::LINE_BYTES;
use crate::presets::preset;
use crate::stats::{FuncCtr, Slot, TOTAL};

const LAX: f64 = 1000.0;

fn causal_machine(lax_ns: Option<f64>) -> Machine {
    let mut m = Machine::new(preset("tiny-4").unwrap(), 4, MemoryMap::new(vec![]).unwrap(), 4, true);
    m.causal_lax_ns = lax_ns;
    m.test_insts = vec![0; 4];
    m
}

fn line_homed_at(m: &Machine, tile: u16) -> u64 {
    (1000..).find(|&l| m.topo.route(l, DeviceKind::Dram, 0).home == tile).unwrap()
}

fn access(m: &mut Machine, vcpu: usize, line: u64, store: bool, func: u32) {
    m.access(vcpu, line * LINE_BYTES, line * LINE_BYTES, 8, store, func);
}

/// The stall (cycles) that one access adds to `vcpu`'s clock.
fn timed(m: &mut Machine, vcpu: usize, line: u64, store: bool, func: u32) -> f64 {
    let before = m.stall_cycles(vcpu);
    access(m, vcpu, line, store, func);
    (m.stall_cycles(vcpu) - before) as f64
}

fn total(m: &mut Machine) -> &Slot {
    m.stats.settle();
    &m.stats.slots[TOTAL]
}

fn wait_of(m: &mut Machine, vcpu: usize) -> f64 {
    total(m).vcpu_wait.get(vcpu).copied().unwrap_or(0.0)
}

#[test]
fn a_handoff_makes_the_reader_wait_for_the_writers_store() {
    // vCPU 0 at 5000 ns stores the line (a memory read: s0 cycles); vCPU 1, at 100 ns, reads
    // it: the data cannot arrive before the store, so vCPU 1 finishes at the store's time plus
    // its own transfer (the dirty forward's stall s1), and waited store - 100 ns.
    let mut m = causal_machine(Some(LAX));
    let line = line_homed_at(&m, 3);
    m.test_insts = vec![5000, 100, 0, 0];
    let s0 = timed(&mut m, 0, line, true, 0);
    let stored = 5000.0 + s0;
    let s1 = timed(&mut m, 1, line, false, 1);
    assert_eq!(wait_of(&mut m, 1), stored - 100.0);
    assert_eq!(m.clock_ns(1), stored + s1);
    // The writer itself never waits, and a second read (an L1D hit) waits no more.
    access(&mut m, 1, line, false, 1);
    assert_eq!((wait_of(&mut m, 0), wait_of(&mut m, 1)), (0.0, stored - 100.0));
}

#[test]
fn a_chain_of_three_serialises_each_on_the_previous_store() {
    // Lock-like: 0 stores at 9000 ns; 1 (at 0) takes the line with a store (an acquire) and so
    // waits to 0's store, then stamps its own; 2 (at 0) waits to 1's store, not just 0's.
    let mut m = causal_machine(Some(LAX));
    let line = line_homed_at(&m, 2);
    m.test_insts = vec![9000, 0, 0, 0];
    let s0 = timed(&mut m, 0, line, true, 0);
    let s1 = timed(&mut m, 1, line, true, 0);
    let stored1 = 9000.0 + s0 + s1;
    assert_eq!(m.clock_ns(1), stored1);
    let s2 = timed(&mut m, 2, line, false, 0);
    assert_eq!(wait_of(&mut m, 2), stored1);
    assert_eq!(m.clock_ns(2), stored1 + s2);
    let v: std::collections::HashMap<String, f64> = {
        let p = m.params.clone();
        total(&mut m).scalars(&p).into_iter().collect()
    };
    assert_eq!(v["time.wait"], 9000.0 + s0 + stored1);
    assert_eq!(v["time.cycles"], stored1 + s2);
}

#[test]
fn false_sharing_within_the_lax_window_does_not_ratchet_the_clocks() {
    // Two vCPUs a few hundred ns apart (one turn) write one line in turn, 40 times: every
    // store of the other lies less than the window ahead, so neither clock moves up, and the
    // clocks end where their instructions and stalls put them.
    let mut m = causal_machine(Some(LAX));
    let line = line_homed_at(&m, 1);
    let mut stalls = [0.0; 2];
    for round in 0..40u64 {
        for (v, stall) in stalls.iter_mut().enumerate() {
            m.test_insts[v] = round * 500 + if v == 0 { 400 } else { 0 };
            *stall += timed(&mut m, v, line, true, 0);
        }
    }
    assert_eq!(total(&mut m).vcpu_wait.iter().sum::<f64>(), 0.0);
    assert_eq!(m.clock_ns(0), 39.0 * 500.0 + 400.0 + stalls[0]);
    assert_eq!(m.clock_ns(1), 39.0 * 500.0 + stalls[1]);
    // Without a window (lax 0) vCPU 1 is pushed up to vCPU 0's first store, 400 ns ahead of
    // it in the same turn, and keeps the shift: its clock no longer follows its work. In a run
    // each such shift comes on top of a whole turn of work, so shifts accumulate turn by turn.
    let mut m = causal_machine(Some(0.0));
    for round in 0..40u64 {
        for v in 0..2 {
            m.test_insts[v] = round * 500 + if v == 0 { 400 } else { 0 };
            access(&mut m, v, line, true, 0);
        }
    }
    let waits = (wait_of(&mut m, 0), wait_of(&mut m, 1));
    assert!(waits.0 == 0.0 && waits.1 > 400.0, "{waits:?}");
    assert!(m.clock_ns(1) > 39.0 * 500.0 + stalls[1] + 400.0);
}

#[test]
fn a_sleeper_woken_by_a_write_waits_for_it_in_its_function_and_line() {
    // vCPU 3 halted at 0 (no instructions since); vCPU 0 at 1 ms sets its wake-up flag (func
    // 2); vCPU 3's read of the flag in func 3 waits the whole gap: per vCPU, per function,
    // per line. The stats.json of the slot shows it per function and per line.
    let mut m = causal_machine(Some(LAX));
    let flag = line_homed_at(&m, 0);
    read_then(&mut m, 3, flag);
    m.test_insts[0] = 1_000_000;
    let s0 = timed(&mut m, 0, flag, true, 2);
    let gap = 1_000_000.0 + s0 - m.stall_cycles(3) as f64;
    access(&mut m, 3, flag, false, 3);
    let s = total(&mut m);
    assert_eq!(s.vcpu_wait[3], gap);
    assert_eq!(s.funcs[3][FuncCtr::WaitCycles as usize], gap.round() as u64);
    assert_eq!(s.funcs[2][FuncCtr::WaitCycles as usize], 0);
    assert_eq!(s.hot_lines[&flag].wait_cycles, gap);
}

fn read_then(m: &mut Machine, vcpu: usize, line: u64) {
    access(m, vcpu, line, false, 3);
}

#[test]
fn a_store_within_the_window_or_from_an_older_generation_costs_no_wait() {
    // 900 ns ahead with a 1000 ns window: no wait; 1100 ns ahead: the whole 1100 ns.
    let mut m = causal_machine(Some(LAX));
    let (a, b) = (line_homed_at(&m, 1), line_homed_at(&m, 3));
    m.test_insts = vec![900, 0, 0, 0];
    let s = timed(&mut m, 0, a, true, 0);
    m.test_insts[1] = s as u64; // vCPU 1's clock: the store's time minus 900
    access(&mut m, 1, a, false, 0);
    assert_eq!(wait_of(&mut m, 1), 0.0);
    let mut m = causal_machine(Some(LAX));
    m.test_insts = vec![1100, 0, 0, 0];
    let s = timed(&mut m, 0, b, true, 0);
    m.test_insts[1] = s as u64;
    access(&mut m, 1, b, false, 0);
    assert_eq!(wait_of(&mut m, 1), 1100.0);
    // A region marker restarts the clocks: stores stamped before it are void after it.
    let mut m = causal_machine(Some(LAX));
    m.test_insts = vec![50_000, 0, 0, 0];
    access(&mut m, 0, b, true, 0);
    m.restart_clocks(&[50_000, 0, 0, 0]);
    access(&mut m, 1, b, false, 0);
    assert_eq!(wait_of(&mut m, 1), 0.0);
    // The causal clock off: no wait whatever the gap.
    let mut m = causal_machine(None);
    m.test_insts = vec![50_000, 0, 0, 0];
    access(&mut m, 0, b, true, 0);
    access(&mut m, 1, b, false, 0);
    assert_eq!(wait_of(&mut m, 1), 0.0);
}
