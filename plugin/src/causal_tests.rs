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

// The race rule (`race.rs`, README "Modelled time"), hand-computed on tiny-4 (hop 2, dir 5,
// L2 10, L1 4, dirty forward 12, clean forward 8, invalidation 6 cycles; 1 GHz, CPI 1). The
// line is homed at tile 3 (1,1): from tile 0 (0,0) 2 hops, from tile 1 (0,1) 1 hop, and
// tiles 0 and 1 are 1 hop apart. vCPU v runs alone on tile v.

use crate::race::Race;
use crate::stats::{Ctr, Msg};

/// vCPU 1 stores the line at 5000 ns (a memory read), then vCPU 0, whose clock reads `d` ns
/// before that store's time, loads the line and stores it: the increment of falseshare.
/// Returns the machine and the stalls of vCPU 0's load and store.
fn increment_after_a_store(race: Race, d: i64) -> (Machine, u64, u64) {
    let mut m = causal_machine(Some(LAX));
    m.race = race;
    m.race_lax_ns = LAX;
    let line = line_homed_at(&m, 3);
    m.test_insts = vec![0, 5000, 0, 0];
    access(&mut m, 1, line, true, 0);
    let stored = m.clock_ns(1) as i64;
    m.test_insts[0] = (stored - d) as u64;
    let load = timed(&mut m, 0, line, false, 0) as u64;
    let store = timed(&mut m, 0, line, true, 0) as u64;
    assert_eq!(m.check_all(), Ok(()));
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
    (m, load, store)
}

fn count(m: &mut Machine, c: Ctr) -> u64 {
    total(m).get(c)
}

fn msgs(m: &mut Machine, msg: Msg) -> u64 {
    total(m).msgs(msg)
}

#[test]
fn a_store_between_a_load_and_its_store_takes_the_line_away() {
    // vCPU 0's load: GetS 0->3 (4) + dir 5 + Fwd-GetS 3->1 (2) + dirty forward 12 + data 1->0
    // (2) + L2 10 = 35 cycles, a stall of 31: its store comes 31 ns after its load. vCPU 1's
    // store, 10 ns after the load, lies between them: the store finds the line gone (an Inv
    // from the home to tile 0, its Inv-Ack to tile 1, as vCPU 1's store would have sent) and
    // asks again: GetM 0->3 (4) + dir 5 + Fwd-GetM 3->1 (2) + clean forward from tile 1, now
    // F, 8 + data 1->0 (2) + L2 10 = 31, a stall of 27. Two copies removed instead of one.
    let (mut m, load, store) = increment_after_a_store(Race::Window, 10);
    assert_eq!((load, store), (31, 27));
    assert_eq!(count(&mut m, Ctr::Races), 1);
    assert_eq!((msgs(&mut m, Msg::GetS), msgs(&mut m, Msg::GetM), msgs(&mut m, Msg::Upgrade)), (1, 2, 0));
    assert_eq!((msgs(&mut m, Msg::Inv), msgs(&mut m, Msg::InvAck), msgs(&mut m, Msg::FwdGetM)), (1, 1, 1));
    assert_eq!((count(&mut m, Ctr::CohInvalidations), count(&mut m, Ctr::L1dInvalidations)), (2, 2));
    assert_eq!((count(&mut m, Ctr::L1dMisses), count(&mut m, Ctr::L1dUpgrades)), (3, 0));
    assert_eq!(count(&mut m, Ctr::L1dMissCoherence), 1);
    // The Inv travels home -> tile 0 (2 hops), its ack tile 0 -> tile 1 (1 hop).
    assert_eq!((hops_of(&mut m, Msg::Inv), hops_of(&mut m, Msg::InvAck)), (2, 1));
    // The store then stamps the line with vCPU 0's clock, so a third vCPU reads it from 0.
    assert_eq!(m.clock_ns(0), (m.clock_ns(1) as i64 - 10) as f64 + 31.0 + 27.0);

    // The same store exactly at vCPU 0's store (31 ns after the load) is still between.
    let (mut m, _, store) = increment_after_a_store(Race::Window, 31);
    assert_eq!((count(&mut m, Ctr::Races), store), (1, 27));
}

#[test]
fn a_store_outside_the_window_leaves_the_load_and_store_an_upgrade() {
    // vCPU 1's store 32 ns after vCPU 0's load lies after its store (31 ns): the store
    // upgrades, as without the rule: Upgrade 0->3 (4) + dir 5 + the slower of the Ack 3->0
    // (4) and the invalidation round 3->1 (2) + 6 + 1->0 (2) = 10, + L2 10 = 29, a stall of 25;
    // one copy removed. A store before the load (the reader saw it) and no rule likewise.
    for (race, d) in [(Race::Window, 32), (Race::Window, -5), (Race::Off, 10), (Race::Off, -5)] {
        let (mut m, load, store) = increment_after_a_store(race, d);
        assert_eq!((load, store), (31, 25), "{race:?} {d}");
        assert_eq!(count(&mut m, Ctr::Races), 0);
        assert_eq!((msgs(&mut m, Msg::Upgrade), msgs(&mut m, Msg::GetM), msgs(&mut m, Msg::Ack)), (1, 1, 1));
        assert_eq!((msgs(&mut m, Msg::Inv), msgs(&mut m, Msg::FwdGetM)), (1, 0));
        assert_eq!((count(&mut m, Ctr::CohInvalidations), count(&mut m, Ctr::L1dUpgrades)), (1, 1));
    }
}

#[test]
fn lax_takes_any_store_within_the_window_of_the_load_to_come_between() {
    // The lax window is 1000 ns: a store 32 ns after the load (after the store), 5 ns or
    // 1000 ns before it counts; 1001 ns before it does not.
    for d in [32, 10, -5, -1000] {
        let (mut m, _, store) = increment_after_a_store(Race::Lax, d);
        assert_eq!((count(&mut m, Ctr::Races), store), (1, 27), "{d}");
        assert_eq!(count(&mut m, Ctr::CohInvalidations), 2);
    }
    let (mut m, _, store) = increment_after_a_store(Race::Lax, -1001);
    assert_eq!((count(&mut m, Ctr::Races), store), (0, 25));
}

#[test]
fn a_load_that_waited_for_the_store_races_with_it_in_no_mode() {
    // vCPU 1's store 1500 ns ahead of vCPU 0: the load waits for it (1500 ns) and reads it
    // after it, so its store upgrades whatever the rule.
    for race in [Race::Window, Race::Lax] {
        let (mut m, load, store) = increment_after_a_store(race, 1500);
        assert_eq!((load, store), (31, 25));
        assert_eq!((count(&mut m, Ctr::Races), wait_of(&mut m, 0)), (0, 1500.0));
    }
}

#[test]
fn a_sibling_cores_store_takes_only_the_l1d_copy() {
    // tiny-4 with two cores per tile: vCPUs 0 and 1 are cores 0 and 1 of tile 0. vCPU 1
    // stores (the tile gets M); vCPU 0 loads it from the tile's L2 (L2 10: a stall of 6) and
    // stores 6 ns later; vCPU 1's store lay 3 ns after the load. The race takes vCPU 0's L1D
    // copy (a sibling invalidation, no mesh message); the store misses in the L1D, hits the
    // tile's M copy (a stall of 6) and takes vCPU 1's copy: two sibling invalidations, no
    // mesh traffic beyond vCPU 1's first GetM, MemRd and Data.
    let mut p = preset("tiny-4").unwrap();
    p.set("cores_per_tile", "2").unwrap();
    let mut m = Machine::new(p, 8, MemoryMap::new(vec![]).unwrap(), 4, true);
    m.causal_lax_ns = Some(LAX);
    m.race = Race::Window;
    m.race_lax_ns = LAX;
    m.test_insts = vec![0, 1000, 0, 0, 0, 0, 0, 0];
    let line = 77;
    access(&mut m, 1, line, true, 0);
    m.test_insts[0] = m.clock_ns(1) as u64 - 3;
    let load = timed(&mut m, 0, line, false, 0);
    let store = timed(&mut m, 0, line, true, 0);
    assert_eq!((load, store), (6.0, 6.0));
    assert_eq!(count(&mut m, Ctr::Races), 1);
    assert_eq!(count(&mut m, Ctr::L1dSiblingInvalidations), 2);
    assert_eq!((count(&mut m, Ctr::L1dInvalidations), count(&mut m, Ctr::CohInvalidations)), (2, 0));
    assert_eq!(total(&mut m).total_msgs(), 3);
    assert_eq!(m.check_all(), Ok(()));
    // Two SMT threads of one core share its L1D, so a store of one takes nothing from the
    // other (compact: vCPUs 0 and 1 are core 0 in tile 0, vCPU 2 is core 1 in tile 1). vCPU 1
    // stores the line, vCPU 2 reads it (tile 0 keeps an S copy), vCPU 1 pushes it out of the
    // L1D (1 KiB 2-way: lines 8 apart share a set); vCPU 0 loads it again (shared) 10 ns
    // before vCPU 1's store and stores: an upgrade, no race, in either mode.
    for race in [Race::Window, Race::Lax] {
        let mut p = preset("tiny-4").unwrap();
        p.set("threads_per_core", "2").unwrap();
        p.set("vcpu_map", "compact").unwrap();
        let mut m = Machine::new(p, 8, MemoryMap::new(vec![]).unwrap(), 4, true);
        m.causal_lax_ns = Some(LAX);
        m.race = race;
        m.race_lax_ns = LAX;
        m.test_insts = vec![0, 1000, 0, 0, 0, 0, 0, 0];
        access(&mut m, 1, line, true, 0);
        m.test_insts[0] = m.clock_ns(1) as u64 - 10;
        access(&mut m, 2, line, false, 0);
        access(&mut m, 1, line + 8, false, 0);
        access(&mut m, 1, line + 16, false, 0);
        let misses = count(&mut m, Ctr::L1dMisses);
        access(&mut m, 0, line, false, 0);
        assert_eq!(count(&mut m, Ctr::L1dMisses), misses + 1, "the line left the L1D");
        access(&mut m, 0, line, true, 0);
        assert_eq!((count(&mut m, Ctr::Races), msgs(&mut m, Msg::Upgrade)), (0, 1), "{race:?}");
        assert_eq!(m.check_all(), Ok(()));
    }
}

fn hops_of(m: &mut Machine, msg: Msg) -> u64 {
    total(m).msg[msg as usize][2]
}

#[test]
fn a_span_times_its_vcpus_request_with_the_wait_in_it_and_no_other_vcpu() {
    // vCPU 1 begins span 0 at 100 ns, runs 50 instructions, reads a line vCPU 0 stored at
    // 5000 ns (so it waits to the store), runs 20 more and ends the span: the span is 50 + the
    // wait + its stall + 20 cycles. vCPU 0's own work meanwhile is in no span.
    let mut m = causal_machine(Some(LAX));
    let line = line_homed_at(&m, 3);
    m.test_insts = vec![5000, 100, 0, 0];
    let s0 = timed(&mut m, 0, line, true, 0);
    m.span_marker(1, true, 0);
    m.test_insts[1] += 50;
    let s1 = timed(&mut m, 1, line, false, 1);
    m.test_insts[1] += 20;
    m.test_insts[0] += 7000;
    m.span_marker(1, false, 0);
    let stored = 5000.0 + s0;
    let wait = stored - 150.0;
    assert_eq!(wait_of(&mut m, 1), wait);
    let spans = total(&mut m).spans.clone();
    assert_eq!(spans.len(), 1);
    assert_eq!((spans[0].count, spans[0].lost), (1, 0));
    assert_eq!(spans[0].cycles, 50.0 + wait + s1 + 20.0);
    assert_eq!(spans[0].idle_cycles, 0.0);
    // A span that a region marker's clock restart cuts is lost, not timed.
    m.span_marker(0, true, 2);
    m.restart_clocks(&[0, 0, 0, 0]);
    m.span_marker(0, false, 2);
    let spans = total(&mut m).spans.clone();
    assert_eq!((spans[2].count, spans[2].lost), (0, 1));
    let p = m.params.clone();
    let v: std::collections::HashMap<String, f64> = total(&mut m).scalars(&p).into_iter().collect();
    assert_eq!(v["time.span0.cycles"], 50.0 + wait + s1 + 20.0);
    assert_eq!(v["time.span2.lost"], 1.0);
    assert!(!v.contains_key("time.span1.count"));
}
