//! Model tests: hand-computed message sequences, and property tests with the checker on.

use crate::args::{self, Config, Mode};
use crate::coherence::Machine;
use crate::memory::{DeviceKind, MemRange, MemoryMap};
use crate::nvmain_trace::{NvmainTrace, TraceClock};
use crate::params::{Params, LINE_BYTES};
use crate::presets::preset;
use crate::race::Race;
use crate::report::{self, RunInfo};
use crate::roi::{Marker, MarkerOp, Regions, Sample};
use crate::stats::{Ctr, Msg, Slot, TOTAL};
use crate::symbols::Symbols;
use proptest::prelude::*;

fn machine(p: Params, vcpus: usize, mem: Vec<MemRange>) -> Machine {
    Machine::new(p, vcpus, MemoryMap::new(mem).unwrap(), 0, true)
}

fn tiny() -> Params {
    preset("tiny-4").unwrap()
}

/// A line whose home is `tile` (searched, so the test does not depend on the hash constants).
fn line_homed_at(m: &Machine, tile: u16) -> u64 {
    (1000..).find(|&l| m.topo.route(l, DeviceKind::Dram, 0).home == tile).unwrap()
}

fn write(m: &mut Machine, vcpu: usize, line: u64) {
    m.access(vcpu, line * LINE_BYTES, line * LINE_BYTES, 8, true, 0);
}

fn read(m: &mut Machine, vcpu: usize, line: u64) {
    m.access(vcpu, line * LINE_BYTES, line * LINE_BYTES, 8, false, 0);
}

fn total(m: &mut Machine) -> &Slot {
    m.stats.settle();
    &m.stats.slots[TOTAL]
}

fn hops(s: &Slot, msg: Msg) -> u64 {
    s.msg[msg as usize][2]
}

// tiny-4: tiles 0 (0,0), 1 (0,1), 2 (1,0), 3 (1,1); one core per tile; DDR controller at
// (0,-1); data messages are 1 + 64/32 = 3 flits.

#[test]
fn two_cores_alternately_writing_one_line() {
    let mut m = machine(tiny(), 4, vec![]);
    let line = line_homed_at(&m, 1); // home (0,1)
    for vcpu in [0, 3, 0, 3] {
        write(&mut m, vcpu, line);
    }
    let s = total(&mut m);
    // W0: GetM (0,0)->(0,1) 1 hop, MemRd (0,1)->(0,-1) 2, Data (0,-1)->(0,0) 1.
    // W3, W0, W3: GetM 1 hop, Fwd-GetM home->owner 1 hop, Data-from-cache owner->requester 2.
    assert_eq!((s.msgs(Msg::GetM), hops(s, Msg::GetM)), (4, 4));
    assert_eq!((s.msgs(Msg::FwdGetM), hops(s, Msg::FwdGetM)), (3, 3));
    assert_eq!((s.msgs(Msg::DataCache), hops(s, Msg::DataCache)), (3, 6));
    assert_eq!((s.msgs(Msg::MemRd), hops(s, Msg::MemRd)), (1, 2));
    assert_eq!((s.msgs(Msg::Data), hops(s, Msg::Data)), (1, 1));
    assert_eq!(s.msgs(Msg::Inv), 0);
    assert_eq!(s.total_msgs(), 12);
    assert_eq!(s.total_hops(), 16);
    assert_eq!(s.total_flits(), 8 + 4 * 3);
    assert_eq!(s.get(Ctr::CohInvalidations), 3);
    assert_eq!(s.get(Ctr::L1dMisses), 4);
    assert_eq!(s.get(Ctr::L1dMissCold), 2);
    assert_eq!(s.get(Ctr::L1dMissCoherence), 2);
    assert_eq!(s.get(Ctr::L2MissCoherence), 2);
    assert_eq!(s.dev_reads[DeviceKind::Dram as usize], 1);
    assert_eq!(s.dev_writes[DeviceKind::Dram as usize], 0);
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
}

#[test]
fn read_of_a_dirty_remote_line_writes_it_back() {
    let mut m = machine(tiny(), 4, vec![]);
    let line = line_homed_at(&m, 3); // home (1,1)
    write(&mut m, 0, line);
    read(&mut m, 2, line);
    let s = total(&mut m);
    // GetS (1,0)->(1,1) 1; Fwd-GetS (1,1)->(0,0) 2; Data-from-cache (0,0)->(1,0) 1;
    // Wb (0,0)->(1,1) 2; MemWr (1,1)->(0,-1) 3.
    assert_eq!((s.msgs(Msg::GetS), hops(s, Msg::GetS)), (1, 1));
    assert_eq!((s.msgs(Msg::FwdGetS), hops(s, Msg::FwdGetS)), (1, 2));
    assert_eq!((s.msgs(Msg::Wb), hops(s, Msg::Wb)), (1, 2));
    assert_eq!((s.msgs(Msg::MemWr), hops(s, Msg::MemWr)), (1, 3));
    assert_eq!(s.dev_writes[DeviceKind::Dram as usize], 1);
    // Both now share it: a store by the reader upgrades and invalidates the old owner.
    write(&mut m, 2, line);
    let s = total(&mut m);
    assert_eq!(s.msgs(Msg::Upgrade), 1);
    assert_eq!((s.msgs(Msg::Inv), s.msgs(Msg::InvAck), s.msgs(Msg::Ack)), (1, 1, 1));
    assert_eq!(s.get(Ctr::L1dUpgrades), 1);
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
}

#[test]
fn store_to_a_shared_line_invalidates_sharers_and_takes_data_from_f() {
    let mut m = machine(tiny(), 4, vec![]);
    let line = line_homed_at(&m, 0);
    for vcpu in [1, 2, 3] {
        read(&mut m, vcpu, line);
    }
    write(&mut m, 0, line);
    let s = total(&mut m);
    assert_eq!(s.msgs(Msg::GetS), 3);
    assert_eq!(s.msgs(Msg::FwdGetS), 2); // E owner 1 forwards to 2, F holder 2 forwards to 3
    assert_eq!(s.msgs(Msg::Wb), 0); // the owner was clean (E)
    assert_eq!(s.msgs(Msg::GetM), 1);
    assert_eq!((s.msgs(Msg::Inv), s.msgs(Msg::InvAck)), (2, 2)); // tiles 1 and 2
    assert_eq!(s.msgs(Msg::FwdGetM), 1); // tile 3 holds F
    assert_eq!(s.msgs(Msg::DataCache), 3);
    assert_eq!((s.msgs(Msg::MemRd), s.msgs(Msg::Data)), (1, 1));
    assert_eq!(s.get(Ctr::CohInvalidations), 3);
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
}

#[test]
fn dirty_l1_eviction_is_one_writeback_to_the_l2() {
    let mut m = machine(tiny(), 4, vec![]);
    // L1D: 8 sets x 2 ways, L2: 16 sets x 4 ways. Lines 0, 8, 16 share an L1D set.
    write(&mut m, 0, 0);
    read(&mut m, 0, 8);
    read(&mut m, 0, 16);
    let s = total(&mut m);
    assert_eq!(s.get(Ctr::L1dWritebacks), 1);
    assert_eq!(s.get(Ctr::L2Writebacks), 0);
    assert_eq!(s.msgs(Msg::PutM), 0);
    assert_eq!(s.dev_writes.iter().sum::<u64>(), 0);
    read(&mut m, 0, 0); // back from the L2: a capacity/conflict miss in the L1D only
    let s = total(&mut m);
    assert_eq!(s.get(Ctr::L1dMissCapacity), 1);
    assert_eq!(s.get(Ctr::L2Hits), 1);
}

#[test]
fn storage_lines_are_counted_apart_from_main_memory() {
    // Lines 0-15 (1 KiB) are storage; line 3 is copied to line 100 (DRAM), as a page-cache fill
    // from a RAM disk is, and four other lines of its L2 set evict the copy.
    let storage = MemRange { kind: DeviceKind::Storage, start: 0, size: 1 << 10 };
    let mut m = machine(tiny(), 4, vec![storage]);
    read(&mut m, 0, 3);
    write(&mut m, 0, 100);
    for j in 1..=4 {
        read(&mut m, 0, 100 + 16 * j);
    }
    m.stats.settle();
    let s = &m.stats.slots[TOTAL];
    assert_eq!(s.dev_reads[DeviceKind::Storage as usize], 1);
    assert_eq!(s.dev_writes[DeviceKind::Storage as usize], 0);
    assert_eq!(s.dev_reads[DeviceKind::Dram as usize], 5);
    assert_eq!(s.dev_writes[DeviceKind::Dram as usize], 1);
    let scalars: std::collections::HashMap<String, f64> = s.scalars(&m.params).into_iter().collect();
    assert_eq!(scalars["mem.storage.reads"], 1.0);
    // The totals are main memory's: five DRAM reads and one write, not the storage read.
    assert_eq!(scalars["mem.reads"], 5.0);
    assert_eq!(scalars["mem.writes"], 1.0);
    let bits = 512.0;
    assert!((scalars["mem.storage.energy_nj"] - bits * 0.1).abs() < 1e-9);
    assert!((scalars["mem.energy_nj"] - 6.0 * bits * 0.1).abs() < 1e-9);
}

#[test]
fn pcm_line_written_back_k_times_counts_k_writes() {
    let pcm = MemRange { kind: DeviceKind::Pcm, start: 0, size: 1 << 30 };
    let mut m = machine(tiny(), 4, vec![pcm]);
    let k = 5;
    let hot = 3u64;
    for round in 0..k {
        write(&mut m, 0, hot);
        // Four other lines of the same L2 set push the dirty line out (LRU).
        for j in 1..=4 {
            read(&mut m, 0, hot + 16 * (j + 4 * round));
        }
    }
    m.stats.settle();
    let s = &m.stats.slots[TOTAL];
    assert_eq!(s.dev_writes[DeviceKind::Pcm as usize], k);
    assert_eq!(s.msgs(Msg::PutM), k);
    assert_eq!(s.pcm_line_writes.get(&hot).copied(), Some(k as u32));
    assert_eq!(s.pcm_line_writes.len(), 1);
    let scalars: std::collections::HashMap<String, f64> = s.scalars(&m.params).into_iter().collect();
    assert_eq!(scalars["mem.pcm.max_line_writes"], k as f64);
    assert_eq!(scalars["mem.pcm.lifetime_runs"], 1e8 / k as f64);
    assert_eq!(scalars["mem.pcm.energy_nj"], (k as f64) * 512.0 * 1.0 + s.dev_reads[2] as f64 * 512.0 * 0.1);
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
}

#[test]
fn cores_of_one_tile_share_through_the_l2_without_mesh_traffic() {
    let mut p = tiny();
    p.set("cores_per_tile", "2").unwrap();
    let mut m = machine(p, 8, vec![]);
    // scatter: vCPU 0 -> core 0, vCPU 1 -> core 1, both in tile 0
    for vcpu in [0, 1, 0, 1] {
        write(&mut m, vcpu, 77);
    }
    let s = total(&mut m);
    assert_eq!(s.total_msgs(), 3); // GetM, MemRd, Data for the first store only
    assert_eq!(s.get(Ctr::L1dSiblingInvalidations), 3);
    assert_eq!(s.get(Ctr::L1dMissCoherence), 2);
    assert_eq!(s.get(Ctr::L2Hits), 3);
}

#[test]
fn regions_receive_only_their_events() {
    let mut m = machine(tiny(), 4, vec![]);
    let mut regions = Regions::default();
    let sample = Sample::default;
    write(&mut m, 0, 5);
    regions.apply(&mut m.stats, Marker { op: MarkerOp::Begin, arg: 0 }, &sample);
    write(&mut m, 3, 5);
    regions.apply(&mut m.stats, Marker { op: MarkerOp::End, arg: 0 }, &sample);
    write(&mut m, 0, 5);
    let roi = &m.stats.slots[1];
    assert_eq!(roi.name, "roi");
    assert_eq!(roi.msgs(Msg::GetM), 1);
    assert_eq!(roi.msgs(Msg::FwdGetM), 1);
    assert_eq!(total(&mut m).msgs(Msg::GetM), 3);
    assert!(m.balance_errors(1).is_empty());
}

#[test]
fn stats_json_has_the_contract_fields() {
    let cfg: Config = args::parse(&["out=/dev/null", "preset=tiny-4", "mode=full"]).unwrap();
    assert_eq!(cfg.mode, Mode::Full);
    let (params, mem) = args::machine_params(&cfg, 4).unwrap();
    let mut m = Machine::new(params.clone(), 4, mem, 2, true);
    for vcpu in [0, 1, 2, 3] {
        write(&mut m, vcpu, 9);
    }
    let run = RunInfo {
        config: &cfg,
        interleave: report::Interleave::default(),
        params: &params,
        target: "x86_64",
        vcpus: 4,
        max_vcpus: 4,
        wall_s: 0.5,
        markers: 0,
        directory_lines: m.dir.len(),
        n_symbols: 0,
        model_lock: "none",
        ended_at: "QEMU exit",
    };
    m.stats.settle();
    let text = report::stats_json(&run, &m.stats, &Symbols::default());
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(v["schema"], "manylab-stats/2");
    assert_eq!(v["params"]["vcpus"], 4);
    assert_eq!(v["params"]["machine"]["preset"], "tiny-4");
    assert!(v["regions"]["total"]["stats"]["coh.msgs.getm"].is_number());
    assert!(v["regions"]["roi"].is_object());
    let summary = v["summary"].as_object().unwrap();
    for key in [
        "total.insts",
        "roi.insts",
        "roi.l1d.misses",
        "roi.coh.msgs.inv",
        "roi.coh.hops",
        "roi.mem.pcm.writes",
        "roi.mem.energy_nj",
    ] {
        assert!(summary[key].is_number(), "{key}");
    }
    assert!(summary.values().all(|x| x.is_number()));
    assert_eq!(summary["total.coh.msgs.getm"], 4);
    // deterministic: the same model state gives the same text
    assert_eq!(text, report::stats_json(&run, &m.stats, &Symbols::default()));
}

/// Presets (shrunk caches so a short stream still evicts) used by the property tests.
fn stress_params() -> Vec<(Params, Vec<MemRange>)> {
    let mut out = Vec::new();
    out.push((tiny(), vec![]));
    let mut p = tiny();
    p.set("cores_per_tile", "2").unwrap();
    p.set("threads_per_core", "2").unwrap();
    out.push((p, vec![MemRange { kind: DeviceKind::Pcm, start: 0x2000, size: 0x2000 }]));
    // tiny with an LLC slice and MOESIF (and with the home at the controller)
    let mut p = tiny();
    for (k, v) in [("llc.size_kib", "1"), ("llc.ways", "2"), ("protocol", "moesif"), ("cores_per_tile", "2")] {
        p.set(k, v).unwrap();
    }
    out.push((p.clone(), vec![]));
    p.set("dir.home", "mc").unwrap();
    out.push((p, vec![MemRange { kind: DeviceKind::Pcm, start: 0x2000, size: 0x2000 }]));
    for (name, cluster) in [
        ("knl-64", "quadrant"),
        ("knl-64", "snc4"),
        ("knl-64", "hemisphere"),
        ("knl-64", "snc2"),
        ("icelake-32", "all2all"),
        ("altra-80", "all2all"),
        ("epyc2-64", "all2all"),
        ("epyc2-64", "snc4"),
    ] {
        let mut p = preset(name).unwrap();
        p.set("cluster", cluster).unwrap();
        p.set("l1d.size_kib", "1").unwrap();
        p.set("l1d.ways", "2").unwrap();
        p.set("l2.size_kib", "2").unwrap();
        p.set("l2.ways", "2").unwrap();
        if p.llc.size_kib > 0 {
            p.set("llc.size_kib", "1").unwrap();
            p.set("llc.ways", "2").unwrap();
        }
        out.push((p, vec![MemRange { kind: DeviceKind::Mcdram, start: 0, size: 0x1000 }]));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_streams_keep_invariants_and_balance(
        which in 0usize..12,
        stream in prop::collection::vec((0usize..16, 0u64..96, any::<bool>(), 0u64..64), 1..400),
    ) {
        let (params, mem) = stress_params().swap_remove(which);
        let vcpus = 16usize.min(params.n_threads());
        let mut m = machine(params, vcpus, mem);
        for (vcpu, line, store, offset) in stream {
            // Lines spread over a few sets; some accesses straddle two lines.
            let paddr = line * 61 * LINE_BYTES + offset;
            m.access(vcpu % vcpus, paddr, paddr, 8, store, 0);
        }
        prop_assert_eq!(m.check_all(), Ok(()));
        let errors = m.balance_errors(TOTAL);
        prop_assert!(errors.is_empty(), "{:?}", errors);
    }

    #[test]
    fn random_streams_with_the_race_rule_keep_invariants_and_balance(
        which in 0usize..12,
        lax in any::<bool>(),
        stream in prop::collection::vec((0usize..16, 0u64..24, 0u8..3, 0u64..64, 0u64..400), 1..400),
    ) {
        // Loads, stores and increments (a load then a store of one line by one vCPU) on a few
        // lines, the vCPUs' clocks advancing unevenly, so that the race rule fires, taking
        // copies away as the stores of others would (README "Modelled time").
        let (params, mem) = stress_params().swap_remove(which);
        let vcpus = 16usize.min(params.n_threads());
        let mut m = machine(params, vcpus, mem);
        m.race = if lax { Race::Lax } else { Race::Window };
        m.race_lax_ns = 300.0;
        m.causal_lax_ns = Some(300.0);
        m.test_insts = vec![0; vcpus];
        for (vcpu, line, kind, offset, advance) in stream {
            let v = vcpu % vcpus;
            m.test_insts[v] += advance;
            let paddr = line * 61 * LINE_BYTES + offset;
            if kind == 2 {
                m.access(v, paddr, paddr, 8, false, 0);
                m.access(v, paddr, paddr, 8, true, 0);
            } else {
                m.access(v, paddr, paddr, 8, kind == 1, 0);
            }
        }
        prop_assert_eq!(m.check_all(), Ok(()));
        let errors = m.balance_errors(TOTAL);
        prop_assert!(errors.is_empty(), "{:?}", errors);
    }

    #[test]
    fn repeat_shortcut_changes_nothing(
        which in 0usize..12,
        stream in prop::collection::vec((0usize..4, 0u64..24, any::<bool>(), 0u64..64), 1..300),
    ) {
        let run = |shortcut: bool| {
            let (params, mem) = stress_params().swap_remove(which);
            let vcpus = 4usize.min(params.n_threads());
            let mut m = Machine::new(params, vcpus, MemoryMap::new(mem).unwrap(), 0, false);
            m.repeat_filter = shortcut;
            // Each access repeated a few times, as sequential code does.
            for &(vcpu, line, store, offset) in &stream {
                for k in 0..3 {
                    let paddr = line * 61 * LINE_BYTES + (offset + 8 * k) % 64;
                    m.access(vcpu % vcpus, paddr, paddr, 8, store && k > 0, 0);
                }
            }
            m.stats.settle();
            m.stats.slots[TOTAL].scalars(&m.params)
        };
        prop_assert_eq!(run(true), run(false));
    }
}

/// Model speed without QEMU: `cargo test --release -- --ignored --nocapture model_throughput`.
#[test]
#[ignore]
fn model_throughput() {
    let mut m = Machine::new(preset("knl-64").unwrap(), 64, MemoryMap::new(vec![]).unwrap(), 2, false);
    let mut x = 12345u64;
    let n = 4_000_000u64;
    let t0 = std::time::Instant::now();
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // 99% of accesses to a small per-vCPU working set, 1% to a shared 64 MiB region
        let vcpu = (i / 64 % 64) as usize;
        let addr = if x.is_multiple_of(100) { x % (64 << 20) } else { (vcpu as u64) << 20 | (x % 8192) };
        m.access(vcpu, addr & !7, addr, 8, x & 4 == 0, 0);
    }
    let dt = t0.elapsed().as_secs_f64();
    eprintln!("{:.3e} accesses/s, directory {} lines", n as f64 / dt, m.dir.len());
}

/// CPU time of the calling thread (the replay timing is not disturbed by other processes'
/// time slices, only by their cache footprint).
fn thread_cpu_s() -> f64 {
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut [i64; 2]) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = [0i64; 2];
    // SAFETY: clock_gettime writes one struct timespec (two longs on 64-bit Linux).
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts[0] as f64 + ts[1] as f64 * 1e-9
}

/// Replays an access trace recorded with `--features trace` (`MANYLAB_TRACE_OUT=...`) and
/// writes the resulting stats.json (wall times zeroed) to `MANYLAB_REPLAY_OUT`:
/// `MANYLAB_TRACE=t.bin MANYLAB_SYSMAP=System.map MANYLAB_VCPUS=8 MANYLAB_REPLAY_OUT=s.json
///  cargo test --release -- --ignored --nocapture trace_replay`.
/// Two builds of the model must write identical files for the same trace.
#[test]
#[ignore]
fn trace_replay() {
    use std::io::Read;
    let Ok(path) = std::env::var("MANYLAB_TRACE") else {
        eprintln!("MANYLAB_TRACE not set");
        return;
    };
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let vcpus: usize = env("MANYLAB_VCPUS", "8").parse().unwrap();
    let sysmap = env("MANYLAB_SYSMAP", "");
    let syms = if sysmap.is_empty() { Symbols::default() } else { Symbols::load(&sysmap).unwrap() };
    let preset_name = env("MANYLAB_PRESET", "knl-64");
    let cfg = args::parse(&[format!("preset={preset_name}"), "mode=full".to_string()]).unwrap();
    let (params, mem) = args::machine_params(&cfg, vcpus).unwrap();
    let mut m = Machine::new(params.clone(), vcpus, mem, syms.n_ids(), false);
    let mut regions = Regions::new(false);
    let mut file = std::io::BufReader::with_capacity(1 << 22, std::fs::File::open(&path).unwrap());
    let mut buf = vec![0u8; 24 << 16];
    let mut n = 0u64;
    let mut busy = 0.0f64;
    loop {
        let mut got = 0;
        while got < buf.len() {
            let k = file.read(&mut buf[got..]).unwrap();
            if k == 0 {
                break;
            }
            got += k;
        }
        let t0 = thread_cpu_s();
        for rec in buf[..got - got % 24].chunks_exact(24) {
            let kind = rec[0];
            let size = rec[1] as u32;
            let vcpu = u16::from_le_bytes([rec[2], rec[3]]) as usize;
            let func = u32::from_le_bytes(rec[4..8].try_into().unwrap());
            let paddr = u64::from_le_bytes(rec[8..16].try_into().unwrap());
            let vaddr = u64::from_le_bytes(rec[16..24].try_into().unwrap());
            match kind {
                0 | 1 => m.access(vcpu, paddr, vaddr, size, kind == 1, func),
                5 => m.access_rmw(vcpu, paddr, vaddr, size, func),
                6 => m.rmw_store(),
                2 | 3 => {
                    m.stats.add(Ctr::IoAccesses, 1);
                    m.stats.add(if kind == 3 { Ctr::Stores } else { Ctr::Loads }, 1);
                }
                _ => {
                    let op = MarkerOp::from_code(vcpu as u8).expect("a marker record's op");
                    regions.apply(&mut m.stats, Marker { op, arg: size as u8 }, &Sample::default);
                }
            }
            n += 1;
        }
        busy += thread_cpu_s() - t0;
        if got < buf.len() {
            break;
        }
    }
    regions.finish(&mut m.stats, &Sample::default);
    let dt = busy;
    eprintln!(
        "replayed {n} records in {dt:.3} s CPU: {:.1} ns/record, directory {} lines",
        dt * 1e9 / n as f64,
        m.dir.len()
    );
    if let Ok(out) = std::env::var("MANYLAB_REPLAY_OUT") {
        for s in m.stats.slots.iter_mut() {
            s.host_wall_s = 0.0;
            s.host_cpu_s = 0.0;
        }
        let run = RunInfo {
            config: &cfg,
            interleave: report::Interleave::default(),
            params: &params,
            target: "replay",
            vcpus,
            max_vcpus: vcpus,
            wall_s: 0.0,
            markers: regions.markers_seen,
            directory_lines: m.dir.len(),
            n_symbols: syms.n_ids() - 2,
            model_lock: "none",
            ended_at: "QEMU exit",
        };
        std::fs::write(out, report::stats_json(&run, &m.stats, &syms)).unwrap();
    }
}

// Atomic read-modify-writes: decoding (encodings from GNU as 2.40) and one request each.

#[test]
fn x86_atomics_are_lock_prefixed_ops_and_xchg_with_memory() {
    use crate::atomics::is_atomic;
    use crate::roi::Isa::X86_64;
    let atomic: [&[u8]; 6] = [
        &[0xf0, 0x0f, 0xb1, 0x11],       // lock cmpxchg %edx,(%rcx)
        &[0x87, 0x03],                   // xchg %eax,(%rbx)
        &[0x48, 0x87, 0x07],             // xchg %rax,(%rdi)
        &[0xf0, 0x48, 0x0f, 0xc1, 0x07], // lock xadd %rax,(%rdi)
        &[0xf0, 0x48, 0x0f, 0xc7, 0x0f], // lock cmpxchg16b (%rdi)
        &[0x64, 0xf0, 0xff, 0x00],       // lock incl %fs:(%rax)
    ];
    let plain: [&[u8]; 5] = [
        &[0x87, 0xc3],       // xchg %eax,%ebx (registers only)
        &[0x93],             // xchg %eax,%ebx (short form)
        &[0x01, 0x07],       // add %eax,(%rdi)
        &[0x0f, 0xc7, 0x0f], // cmpxchg8b (%rdi) without lock
        &[0x89, 0x07],       // mov %eax,(%rdi)
    ];
    assert!(atomic.iter().all(|b| is_atomic(X86_64, b)));
    assert!(!plain.iter().any(|b| is_atomic(X86_64, b)));
}

#[test]
fn arm64_atomics_are_exclusives_cas_and_lse_ops_not_acquire_release_accesses() {
    use crate::atomics::is_atomic;
    use crate::roi::Isa::Arm64;
    let word = |w: u32| w.to_le_bytes();
    let atomic = [
        0x885ffc20, // ldaxr w0, [x1]
        0x8802fc20, // stlxr w2, w0, [x1]
        0xc87f0440, // ldxp x0, x1, [x2]
        0x88e0fc41, // casal w0, w1, [x2]
        0x4860fc82, // caspal x0, x1, x2, x3, [x4]
        0xb8e00041, // ldaddal w0, w1, [x2]
        0xb8e08041, // swpal w0, w1, [x2]
        0xf8204041, // ldsmax x0, x1, [x2]
        0x38200041, // ldaddb w0, w1, [x2]
    ];
    let plain = [
        0x88dffc20, // ldar w0, [x1]
        0x889ffc20, // stlr w0, [x1]
        0xb8bfc020, // ldapr w0, [x1]
        0xb9400020, // ldr w0, [x1]
        0xb9000020, // str w0, [x1]
    ];
    assert!(atomic.iter().all(|&w| is_atomic(Arm64, &word(w))));
    assert!(!plain.iter().any(|&w| is_atomic(Arm64, &word(w))));
}

fn rmw(m: &mut Machine, vcpu: usize, line: u64) {
    m.access_rmw(vcpu, line * LINE_BYTES, line * LINE_BYTES, 8, 0);
    m.rmw_store();
}

#[test]
fn an_atomic_handoff_is_one_ownership_request() {
    let mut m = machine(tiny(), 4, vec![]);
    let line = line_homed_at(&m, 1); // home (0,1)
    for vcpu in [0, 3, 0, 3] {
        rmw(&mut m, vcpu, line);
    }
    let s = total(&mut m);
    // As four stores (two_cores_alternately_writing_one_line): the first RMW fetches from
    // memory, each later one is GetM + Fwd-GetM + Data-from-cache; nothing is written back.
    assert_eq!((s.msgs(Msg::GetM), s.msgs(Msg::FwdGetM), s.msgs(Msg::DataCache)), (4, 3, 3));
    assert_eq!((s.msgs(Msg::GetS), s.msgs(Msg::Upgrade), s.msgs(Msg::Wb), s.msgs(Msg::MemWr)), (0, 0, 0, 0));
    assert_eq!(s.total_msgs(), 12);
    assert_eq!((s.get(Ctr::Atomics), s.get(Ctr::Loads), s.get(Ctr::Stores)), (4, 4, 4));
    assert_eq!(s.dev_writes[DeviceKind::Dram as usize], 0);
}

#[test]
fn an_atomic_seen_as_a_load_then_a_store_costs_three_times_the_messages() {
    let mut m = machine(tiny(), 4, vec![]);
    let line = line_homed_at(&m, 1);
    for vcpu in [0, 3, 0, 3] {
        read(&mut m, vcpu, line);
        write(&mut m, vcpu, line);
    }
    let s = total(&mut m);
    // Each later handoff: GetS, Fwd-GetS, Data-from-cache, Wb, MemWr, then Upgrade, Inv,
    // Inv-Ack, Ack: 9 messages and a memory write where the atomic costs 3 and none.
    assert_eq!((s.msgs(Msg::GetS), s.msgs(Msg::FwdGetS), s.msgs(Msg::Wb), s.msgs(Msg::MemWr)), (4, 3, 3, 3));
    assert_eq!((s.msgs(Msg::Upgrade), s.msgs(Msg::Inv)), (3, 3));
    assert_eq!(s.dev_writes[DeviceKind::Dram as usize], 3);
}

#[test]
fn atomics_count_the_same_whether_other_accesses_fall_between_their_halves() {
    let line_of = |m: &Machine| line_homed_at(m, 2);
    let mut serial = machine(tiny(), 4, vec![]);
    let line = line_of(&serial);
    for vcpu in [0, 1, 3, 0, 1, 3] {
        rmw(&mut serial, vcpu, line);
    }
    // Multi-threaded TCG: another vCPU's atomic may run between one's load and store halves.
    let mut threaded = machine(tiny(), 4, vec![]);
    for pair in [[0, 1], [3, 0], [1, 3]] {
        for &vcpu in &pair {
            threaded.access_rmw(vcpu, line * LINE_BYTES, line * LINE_BYTES, 8, 0);
        }
        threaded.rmw_store();
        threaded.rmw_store();
    }
    let (a, b) = (total(&mut serial), total(&mut threaded));
    assert_eq!(a.msg, b.msg);
    assert_eq!((a.get(Ctr::Atomics), a.get(Ctr::Stores)), (b.get(Ctr::Atomics), b.get(Ctr::Stores)));
}

fn zero_clock() -> u64 {
    0
}

/// PCM from 1 GiB (lines below it are DRAM); a machine of `vcpus` writing an open PCM trace
/// timed by `timing` to a temporary file. Returns the machine, the file and PCM's first line.
fn machine_tracing_pcm(vcpus: usize, timing: TraceClock, name: &str) -> (Machine, std::path::PathBuf, u64) {
    let pcm_start = 1u64 << 30;
    let pcm = MemRange { kind: DeviceKind::Pcm, start: pcm_start, size: 1 << 30 };
    let mut m = machine(tiny(), vcpus, vec![pcm]);
    let path = std::env::temp_dir().join(format!("manylab-{name}-{}.nvt", std::process::id()));
    let select = crate::nvmain_trace::Select::Device(DeviceKind::Pcm);
    let mut trace = NvmainTrace::create(path.to_str().unwrap(), select, timing, zero_clock).unwrap();
    trace.set_open(true);
    m.nvmain = Some(Box::new(trace));
    (m, path, pcm_start / LINE_BYTES)
}

/// Takes the machine's trace, flushes it and returns it with the file's text (file removed).
fn finish_trace(m: &mut Machine, path: &std::path::Path) -> (Box<NvmainTrace>, String) {
    let mut trace = m.nvmain.take().unwrap();
    trace.flush();
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::remove_file(path).unwrap();
    (trace, text)
}

#[test]
fn nvmain_trace_has_one_line_per_pcm_request() {
    let (mut m, path, base) = machine_tracing_pcm(4, TraceClock::Instructions, "nvmain");
    let k = 3;
    for round in 0..k {
        write(&mut m, 0, base + 3);
        for j in 1..=4 {
            read(&mut m, 0, base + 3 + 16 * (j + 4 * round));
        }
        read(&mut m, 1, 7 + 16 * round); // a DRAM line
    }
    let (trace, text) = finish_trace(&mut m, &path);
    assert!(trace.error.is_none());
    let s = &m.stats.slots[TOTAL];
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "NVMV0");
    let ops = |op: &str| lines[1..].iter().filter(|l| l.split(' ').nth(1) == Some(op)).count() as u64;
    assert_eq!(ops("W"), s.dev_writes[DeviceKind::Pcm as usize]);
    assert_eq!(ops("W"), k);
    assert_eq!(ops("R"), s.dev_reads[DeviceKind::Pcm as usize]);
    assert!(s.dev_reads[DeviceKind::Dram as usize] >= k);
    assert_eq!(trace.lines, lines.len() as u64 - 1);
    // Every write-back is of line base + 3: offset 3 * 64 = 0xc0 into the PCM range, core 0.
    for l in lines[1..].iter().filter(|l| l.split(' ').nth(1) == Some("W")) {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!((f[0], f[2], f[4]), ("0", "c0", "0"));
    }
}

#[test]
fn a_modelled_nvmain_trace_follows_the_requesting_vcpus_clock() {
    let (mut m, path, base) = machine_tracing_pcm(2, TraceClock::Modelled, "nvmain-modelled");
    read(&mut m, 0, base); // at vCPU 0's clock 0
    let after_first = m.clock_ns(0);
    assert!(after_first > 0.0);
    read(&mut m, 0, base + 16); // at its clock after the first miss
    read(&mut m, 1, base + 32); // vCPU 1 has not stalled yet: at 0
    let phase = m.clock_ns(0).max(m.clock_ns(1));
    m.restart_clocks(&[0, 0]);
    read(&mut m, 1, base + 48); // the next phase starts where the slowest vCPU ended
    let (_, text) = finish_trace(&mut m, &path);
    let cycles: Vec<u64> = text.lines().skip(1).map(|l| l.split(' ').next().unwrap().parse().unwrap()).collect();
    assert_eq!(cycles, [0, after_first.round() as u64, 0, phase.round() as u64]);
}

// ---- Timing: hand-computed latencies on tiny-4 (1 GHz, lat.l1 4, lat.l2 10, lat.dir 5,
// lat.hop 2, lat.fwd_clean 8, lat.fwd_dirty 12, lat.inv 6; DRAM/PCM reads 50/100 ns = cycles,
// MCDRAM 55). An access stalls for its latency minus lat.l1.

use crate::stats::{Cause, N_CAUSE};

/// The stall cycles (all causes) that `f` adds to the total slot, and the cause that got them.
fn stall_of(m: &mut Machine, f: impl FnOnce(&mut Machine)) -> (u64, Option<Cause>) {
    let before = m.stats.slots[TOTAL].stall;
    f(m);
    let after = m.stats.slots[TOTAL].stall;
    let causes = [
        Cause::L2Hit,
        Cause::MemDram,
        Cause::MemMcdram,
        Cause::MemPcm,
        Cause::FwdClean,
        Cause::FwdDirty,
        Cause::Upgrade,
        Cause::Queue,
        Cause::Llc,
    ];
    let mut cause = None;
    for i in 0..N_CAUSE {
        if after[i] != before[i] && causes[i] != Cause::Queue {
            assert!(cause.is_none(), "one access, one cause");
            cause = Some(causes[i]);
        }
    }
    (after.iter().sum::<u64>() - before.iter().sum::<u64>(), cause)
}

#[test]
fn latency_of_an_l1_hit_and_an_own_tile_l2_hit() {
    let mut m = machine(tiny(), 4, vec![]);
    write(&mut m, 0, 0);
    let (stall, cause) = stall_of(&mut m, |m| read(m, 0, 0));
    assert_eq!((m.lat, stall, cause), (4, 0, None));
    // Lines 0, 8, 16 share an L1D set (2 ways): 0 leaves the L1D but stays in the L2.
    read(&mut m, 0, 8);
    read(&mut m, 0, 16);
    let (stall, cause) = stall_of(&mut m, |m| read(m, 0, 0));
    assert_eq!((m.lat, stall, cause), (10, 6, Some(Cause::L2Hit)));
}

/// A line of `kind` (a `mem=` range from 0 covers it) whose home is `tile`.
fn line_of(m: &Machine, tile: u16, kind: DeviceKind) -> u64 {
    (1000..).find(|&l| m.topo.route(l, kind, 0).home == tile).unwrap()
}

#[test]
fn latency_of_a_memory_read_per_device() {
    // Requester tile 0 (0,0), home tile 3 (1,1): 2 hops there, then home -> controller ->
    // requester. DDR controller (0,-1): 3 hops from the home, 1 back. MCDRAM (1,2): 1 and 3.
    // l2 10 + 2x2 + dir 5 = 19 before the home's controller leg.
    for (kind, expect) in [
        (DeviceKind::Dram, 19 + 3 * 2 + 50 + 2),
        (DeviceKind::Mcdram, 19 + 2 + 55 + 3 * 2),
        (DeviceKind::Pcm, 19 + 3 * 2 + 100 + 2),
    ] {
        let range = MemRange { kind, start: 0, size: 1 << 30 };
        let mut m = machine(tiny(), 4, if kind == DeviceKind::Dram { vec![] } else { vec![range] });
        let line = line_of(&m, 3, kind);
        let (stall, cause) = stall_of(&mut m, |m| read(m, 0, line));
        assert_eq!(m.lat, expect, "{kind:?}");
        assert_eq!((stall, cause), (expect - 4, Some(Cause::memory(kind))));
    }
}

#[test]
fn latency_of_a_clean_and_a_dirty_remote_forward() {
    // Home tile 3 (1,1); owner tile 1 (0,1); requester tile 2 (1,0).
    // l2 10 + requester->home 1 hop 2 + dir 5 + home->owner 1 hop 2 + fwd + owner->requester
    // 2 hops 4 = 23 + fwd.
    let mut m = machine(tiny(), 4, vec![]);
    let line = line_homed_at(&m, 3);
    read(&mut m, 1, line); // tile 1 gets E
    let (stall, cause) = stall_of(&mut m, |m| read(m, 2, line));
    assert_eq!((m.lat, stall, cause), (23 + 8, 23 + 8 - 4, Some(Cause::FwdClean)));

    let mut m = machine(tiny(), 4, vec![]);
    write(&mut m, 1, line); // tile 1 gets M
    let (stall, cause) = stall_of(&mut m, |m| read(m, 2, line));
    assert_eq!((m.lat, stall, cause), (23 + 12, 23 + 12 - 4, Some(Cause::FwdDirty)));
    // The write-back (Wb, MemWr) is off the critical path; a store miss to the now shared
    // line from tile 0 (0,0): GetM 2 hops, data from the F holder (tile 2 (1,0)): home->F 1
    // hop, fwd_clean, F->req 1 hop = 2+8+2 = 12; invalidation of tile 1 (0,1): home->1 1 hop,
    // inv 6, 1->req 1 hop = 10. 10 + 4 + 5 + max(12, 10) = 31.
    let (stall, cause) = stall_of(&mut m, |m| write(m, 0, line));
    assert_eq!((m.lat, stall, cause), (31, 27, Some(Cause::FwdClean)));
}

#[test]
fn latency_of_an_upgrade_is_the_round_trip_to_the_farthest_sharer() {
    // 2x4 mesh: tiles 0-3 on row 0, 4-7 on row 1. Home tile 0 (0,0), requester tile 4 (1,0).
    let mut p = tiny();
    p.set("mesh.cols", "4").unwrap();
    let setup = |sharers: &[usize]| {
        let mut m = machine(p.clone(), 8, vec![]);
        let line = line_homed_at(&m, 0);
        for &v in sharers {
            read(&mut m, v, line);
        }
        read(&mut m, 4, line);
        (m, line)
    };
    // Upgrade (1,0)->(0,0) 1 hop 2 + dir 5 = 7 after the own L2's 10; the ack home->req 2.
    // One sharer, tile 1 (0,1): home->1 2 + inv 6 + 1->req 2 hops 4 = 12.
    let (mut m, line) = setup(&[1]);
    let (stall, cause) = stall_of(&mut m, |m| write(m, 4, line));
    assert_eq!((m.lat, stall, cause), (10 + 7 + 12, 10 + 7 + 12 - 4, Some(Cause::Upgrade)));
    // Two sharers, tiles 1 and 7 (1,3): the farther one is home->7 4 hops 8 + inv 6 +
    // 7->req 3 hops 6 = 20.
    let (mut m, line) = setup(&[1, 7]);
    let (stall, cause) = stall_of(&mut m, |m| write(m, 4, line));
    assert_eq!((m.lat, stall, cause), (10 + 7 + 20, 10 + 7 + 20 - 4, Some(Cause::Upgrade)));
    assert_eq!(total(&mut m).msgs(Msg::Inv), 2);
}

#[test]
fn cycles_are_insts_times_cpi_plus_stalls_over_mlp() {
    let mut p = tiny();
    p.set("core.ghz", "2").unwrap();
    p.set("core.cpi", "1.5").unwrap();
    p.set("core.mlp", "2").unwrap();
    let mut s = Slot::new("roi", 0);
    s.ctr[Ctr::Insts as usize] = 1100;
    s.vcpu_insts = vec![1000, 100];
    s.vcpu_stall = vec![400, 3000];
    s.stall[Cause::MemPcm as usize] = 3400;
    let v: std::collections::HashMap<String, f64> = s.scalars(&p).into_iter().collect();
    // vCPU 0: 1000 x 1.5 + 400 / 2 = 1700; vCPU 1: 100 x 1.5 + 3000 / 2 = 1650.
    assert_eq!(v["time.cycles"], 1700.0);
    assert_eq!(v["time.critical_vcpu"], 0.0);
    assert_eq!(v["time.modelled_ns"], 850.0);
    assert_eq!(v["time.cycles.sum"], 3350.0);
    assert_eq!(v["time.base_cycles"], 1650.0);
    assert_eq!(v["time.stall"], 3400.0);
    assert_eq!(v["time.stall.effective"], 1700.0);
    assert_eq!(v["time.stall.mem.pcm"], 3400.0);
    assert_eq!(v["time.cpi"], 3350.0 / 1100.0);
}

#[test]
fn a_region_gets_its_vcpus_stalls_and_the_dirty_lines_left_at_its_end() {
    let pcm = MemRange { kind: DeviceKind::Pcm, start: 0, size: 1 << 20 };
    let mut m = Machine::new(tiny(), 4, MemoryMap::new(vec![pcm]).unwrap(), 3, true);
    let mut regions = Regions::default();
    let at = |insts: Vec<u64>, dirty: [u64; crate::memory::N_DEVICES]| Sample {
        insts: insts.iter().sum(),
        vcpu_insts: insts,
        dirty,
        ..Default::default()
    };
    regions
        .apply(&mut m.stats, Marker { op: MarkerOp::Begin, arg: 0 }, &|| at(vec![0; 4], [0; crate::memory::N_DEVICES]));
    let pcm_line = 7;
    let dram_line = (1 << 20) / LINE_BYTES + 7;
    m.access(2, pcm_line * LINE_BYTES, 0, 8, true, 1);
    m.access(2, dram_line * LINE_BYTES, 0, 8, true, 1);
    let lat_pcm_and_dram = m.stats.slots[1].vcpu_stall[2];
    assert!(lat_pcm_and_dram > 0);
    let dirty = m.dirty_lines();
    assert_eq!(dirty, [1, 0, 1, 0]);
    regions.apply(&mut m.stats, Marker { op: MarkerOp::End, arg: 0 }, &|| at(vec![10, 0, 20, 0], dirty));
    m.stats.settle();
    let roi = &m.stats.slots[1];
    let v: std::collections::HashMap<String, f64> = roi.scalars(&m.params).into_iter().collect();
    assert_eq!(v["mem.pcm.dirty_at_end"], 1.0);
    assert_eq!(v["mem.dram.dirty_at_end"], 1.0);
    assert_eq!(v["mem.pcm.writes"], 0.0);
    assert_eq!(v["time.cycles"], 20.0 + lat_pcm_and_dram as f64);
    assert_eq!(v["time.critical_vcpu"], 2.0);
    assert_eq!(roi.funcs[1][crate::stats::FuncCtr::StallCycles as usize], lat_pcm_and_dram);
}

#[test]
fn timing_off_counts_no_stall_and_changes_no_other_statistic() {
    let run = |timing: &str| {
        let mut p = tiny();
        p.set("timing", timing).unwrap();
        let mut m = machine(p, 4, vec![]);
        for (i, v) in [0usize, 1, 2, 3, 0, 2].into_iter().enumerate() {
            write(&mut m, v, 1000 + i as u64 % 3);
            read(&mut m, (v + 1) % 4, 1000 + i as u64 % 2);
        }
        m.stats.settle();
        let s = &m.stats.slots[TOTAL];
        (s.stall.iter().sum::<u64>(), s.total_msgs(), s.get(Ctr::L1dMisses))
    };
    let (on, off) = (run("on"), run("off"));
    assert!(on.0 > 0);
    assert_eq!(off.0, 0);
    assert_eq!((on.1, on.2), (off.1, off.2));
}

/// Mean modelled latencies of each preset (idle machine, uniform lines and core pairs), for
/// comparing with published figures: `cargo test --release -- --ignored --nocapture
/// preset_latencies`.
#[test]
#[ignore]
fn preset_latencies() {
    for name in crate::presets::PRESETS {
        let p = preset(name).unwrap();
        let cores = p.n_cores();
        let cpt = p.cores_per_tile as usize;
        let (ghz, n) = (p.timing.ghz, 400u64);
        let mut m = machine(p.clone(), cores, vec![]);
        let (mut mem, mut clean, mut dirty, mut pairs) = (0u64, 0u64, 0u64, 0u64);
        for i in 0..n {
            let line = 1_000_000 + 3 * i;
            let (a, b) = ((i * 7 % cores as u64) as usize, ((i * 13 + 5) % cores as u64) as usize);
            read(&mut m, a, line);
            mem += m.lat;
            if a / cpt == b / cpt {
                continue;
            }
            pairs += 1;
            read(&mut m, b, line);
            clean += m.lat;
            let line = 2_000_000 + 3 * i;
            write(&mut m, a, line);
            read(&mut m, b, line);
            dirty += m.lat;
        }
        let ns = |sum: u64, k: u64| sum as f64 / k as f64 / ghz;
        // LLC hits: a direct-mapped 1 KiB L2 (same latencies) pushes a line out to its home's
        // slice by reading the next line of its set; another core then reads it from there.
        let mut llc = String::new();
        if p.llc.size_kib > 0 {
            let mut q = p.clone();
            for (k, v) in [("l1d.size_kib", "1"), ("l1d.ways", "1"), ("l2.size_kib", "1"), ("l2.ways", "1")] {
                q.set(k, v).unwrap();
            }
            let mut m = machine(q, cores, vec![]);
            let (mut sum, mut k) = (0u64, 0u64);
            for i in 0..n {
                let line = 3_000_000 + 64 * i;
                let (a, b) = ((i * 7 % cores as u64) as usize, ((i * 13 + 5) % cores as u64) as usize);
                read(&mut m, a, line);
                read(&mut m, a, line + 16);
                read(&mut m, b, line);
                if m.cause == crate::stats::Cause::Llc {
                    sum += m.lat;
                    k += 1;
                }
            }
            llc = format!("  LLC hit {:.0} ns ({k} of {n})", ns(sum, k.max(1)));
        }
        println!(
            "{name:<11} {ghz} GHz  l1 {} l2 {}  memory read (DRAM) {:.0} ns  remote clean fwd {:.0} ns  dirty fwd {:.0} ns{llc}",
            p.timing.l1,
            p.timing.l2,
            ns(mem, n),
            ns(clean, pairs),
            ns(dirty, pairs)
        );
    }
}

// ---- Memory bandwidth: hand-computed queueing on tiny-4 (one DDR controller at (0,-1), 1 GHz
// so ns = cycles). A DRAM read from tile 0 or tile 1 of a line homed at tile 3 costs 77 cycles
// unloaded (tile 0: 10 + 2 hops x 2 + 5 + 3 x 2 + 50 + 1 x 2; tile 1: 10 + 2 + 5 + 6 + 50 + 2 x 2).

fn bw_machine(read_gbs: &str) -> Machine {
    let mut p = tiny();
    p.set("bw.dram_gbs", read_gbs).unwrap();
    p.set("bw.epoch_ns", "100").unwrap();
    machine(p, 4, vec![])
}

fn lines_homed_at(m: &Machine, tile: u16, n: usize) -> Vec<u64> {
    (1000..).filter(|&l| m.topo.route(l, DeviceKind::Dram, 0).home == tile).take(n).collect()
}

#[test]
fn a_read_finding_its_epoch_full_waits_for_the_next_with_room() {
    // 0.64 GB/s: a line takes 100 ns of the controller, a whole 100 ns epoch.
    let mut m = bw_machine("0.64");
    let l = lines_homed_at(&m, 3, 3);
    read(&mut m, 0, l[0]); // clock 0, epoch 0: booked there, no wait
    assert_eq!(m.lat, 77);
    read(&mut m, 1, l[1]); // vCPU 1's clock is 0 too: epoch 0 is full -> epoch 1, 100 ns later
    assert_eq!(m.lat, 177);
    // vCPU 0's clock is now its stall, 73 ns: epochs 0 and 1 are full -> epoch 2 (200 - 73),
    // and the M/D/1 part reads epoch -1 (none): 0.
    read(&mut m, 0, l[2]);
    assert_eq!(m.lat, 77 + 127);
    m.stats.settle();
    let s = &m.stats.slots[TOTAL];
    assert_eq!(s.stall[Cause::Queue as usize], 100 + 127);
    assert_eq!(s.stall[Cause::MemDram as usize], 3 * 73);
    let v: std::collections::HashMap<String, f64> = s.scalars(&m.params).into_iter().collect();
    assert_eq!(v["time.stall.queue"], 227.0);
    assert_eq!(v["mem.dram.bytes"], 192.0);
    assert_eq!(v["mem.mc0.bytes"], 192.0);
    assert_eq!(v["mem.mc1.bytes"], 0.0); // the MCDRAM controller
                                         // vCPU 0: 73 + 200 = 273 ns; busy 3 x 100 ns (booked up to epoch 2, past that time)
    assert_eq!(v["time.modelled_ns"], 273.0);
    assert_eq!(v["mem.mc0.utilisation"], 300.0 / 273.0);
}

#[test]
fn the_previous_epochs_utilisation_gives_the_md1_wait() {
    // 1.28 GB/s: 50 ns per line. One read in epoch 0 (rho 0.5); vCPU 1 at 150 ns (150
    // instructions at CPI 1) reads in epoch 1: 0.5 / (2 x 0.5) x 50 = 25 ns of queueing.
    let mut m = bw_machine("1.28");
    let l = lines_homed_at(&m, 3, 2);
    read(&mut m, 0, l[0]);
    m.test_insts = vec![0, 150];
    assert_eq!(m.clock_ns(1), 150.0);
    read(&mut m, 1, l[1]);
    assert_eq!(m.lat, 77 + 25);
    assert_eq!(total(&mut m).stall[Cause::Queue as usize], 25);
}

#[test]
fn queue_off_counts_bytes_but_adds_no_wait_and_restart_zeroes_the_clocks() {
    let mut m = bw_machine("0.64");
    m.params.bw.queue = false;
    let l = lines_homed_at(&m, 3, 2);
    read(&mut m, 0, l[0]);
    read(&mut m, 1, l[1]);
    assert_eq!(m.lat, 77);
    let s = total(&mut m);
    assert_eq!((s.stall[Cause::Queue as usize], s.mc_lines[0]), (0, 2));
    m.test_insts = vec![1000, 0];
    assert_eq!(m.clock_ns(0), 1000.0 + 73.0);
    m.restart_clocks(&[1000, 0]);
    assert_eq!((m.clock_ns(0), m.clock_ns(1)), (0.0, 0.0));
    m.test_insts = vec![1010, 0];
    assert_eq!(m.clock_ns(0), 10.0);
}

#[test]
fn a_write_back_takes_controller_time_but_does_not_wait() {
    // A dirty line read by another tile: the owner's write-back (Wb + MemWr) books 100 ns
    // in epoch 0 after the first read's 100 ns has filled it; the reader waits only for the
    // forward. A later read by vCPU 2 at clock 0 is pushed past both: to epoch 2.
    let mut m = bw_machine("0.64");
    m.params.dram.bw_write_gbs = 0.64;
    let line = line_homed_at(&m, 3);
    write(&mut m, 0, line); // memory read, epoch 0
    read(&mut m, 2, line); // forward from tile 0, write-back booked in epoch 1 (0 full)
    assert_eq!(total(&mut m).dev_writes[DeviceKind::Dram as usize], 1);
    assert_eq!(total(&mut m).stall[Cause::Queue as usize], 0);
    let other = lines_homed_at(&m, 3, 2)[1];
    read(&mut m, 3, other);
    assert_eq!(total(&mut m).stall[Cause::Queue as usize], 200);
}

#[test]
fn a_vcpu_far_behind_rejoins_the_others_idle_not_stalled() {
    // vCPU 0 at 2000 ns books epoch 20 and sets the frontier to 2000 ns; vCPU 1 (clock 0, idle
    // so far) is more than 8 epochs behind it: its clock moves up to 2000 - 800 = 1200 ns
    // (1200 idle cycles at 1 GHz) and its read, in the empty epoch 12, costs no queueing. Its
    // next read, at 1200 + 73 ns, is not late but finds epoch 12 full (one 100 ns line) and
    // waits for epoch 13: 27 ns. Its cycles: 0 instructions + 73 + 73 + 27 stall + 1200 idle.
    let mut m = bw_machine("0.64");
    let l = lines_homed_at(&m, 3, 3);
    m.test_insts = vec![2000, 0];
    read(&mut m, 0, l[0]);
    read(&mut m, 1, l[1]);
    assert_eq!(m.lat, 77);
    assert_eq!(m.clock_ns(1), 1200.0 + 73.0);
    read(&mut m, 1, l[2]);
    let p = m.params.clone();
    let s = total(&mut m);
    assert_eq!((s.get(Ctr::QueueLate), s.stall[Cause::Queue as usize]), (1, 27));
    let v: std::collections::HashMap<String, f64> = s.scalars(&p).into_iter().collect();
    assert_eq!(v["time.idle"], 1200.0);
    let c = s.vcpu_cycles(&p)[1];
    assert_eq!((c.insts, c.stall, c.idle, c.wait, c.cycles), (0, 73 + 100, 1200.0, 0.0, 1373.0));
}

#[test]
fn a_backlog_is_waited_for_by_every_vcpu_not_forgiven() {
    // 0.64 GB/s: one line per 100 ns epoch; core.mlp 10000, so vCPU 0's clock stays below
    // 1 ns while it reads 12 lines back to back: they fill epochs 0..11 (the backlog). vCPU 1,
    // at clock 0, then reads: the frontier is the vCPUs' clocks (< 1 ns), not the backlog's
    // epochs, so it is not late, and it waits for epoch 12: 1200 ns.
    let mut m = bw_machine("0.64");
    m.params.timing.mlp = 10000.0;
    let l = lines_homed_at(&m, 3, 13);
    for &line in &l[..12] {
        read(&mut m, 0, line);
    }
    assert!(m.clock_ns(0) < 1.0, "{}", m.clock_ns(0));
    read(&mut m, 1, l[12]);
    assert_eq!(m.lat, 77 + 1200);
    assert_eq!(total(&mut m).get(Ctr::QueueLate), 0);
}

// ---- Presets that match their chips: the LLC slice at the home, MOESIF's O state, the home
// beside the memory controller, and the NUMA-following cluster modes. Hand-computed on tiny-4
// (tiles 0 (0,0), 1 (0,1), 2 (1,0), 3 (1,1), DDR controller (0,-1); L2 4 KiB 4-way = 16 sets,
// so lines with equal `line % 16` share a set; lat.llc 7).

fn tiny_llc() -> Params {
    let mut p = tiny();
    p.set("llc.size_kib", "4").unwrap(); // 4 KiB 4-way per home: 16 sets
    p.set("llc.ways", "4").unwrap();
    p
}

/// `n` lines homed at `tile` in the same L2 (and LLC) set as `like`, other than it.
fn same_set_homed_at(m: &Machine, tile: u16, like: u64, n: usize) -> Vec<u64> {
    (1..).map(|k| like + 16 * k).filter(|&l| m.topo.route(l, DeviceKind::Dram, 0).home == tile).take(n).collect()
}

#[test]
fn llc_miss_goes_to_memory_and_an_evicted_line_comes_back_from_the_llc() {
    let mut m = machine(tiny_llc(), 4, vec![]);
    let line = line_homed_at(&m, 3);
    // Miss everywhere: the LLC lookup is part of the directory's; the memory path as without an
    // LLC: l2 10 + 2 hops x 2 + dir 5 + home->MC 3 x 2 + 50 + MC->req 1 x 2 = 77.
    let (stall, cause) = stall_of(&mut m, |m| read(m, 0, line));
    assert_eq!((m.lat, stall, cause), (77, 73, Some(Cause::MemDram)));
    // Four more lines of the set push it out of tile 0's L2: the last clean copy goes to the
    // LLC slice of its home with a data-carrying PutE (3 flits), no memory write.
    for l in same_set_homed_at(&m, 3, line, 4) {
        read(&mut m, 0, l);
    }
    let s = total(&mut m);
    assert_eq!((s.get(Ctr::LlcMisses), s.get(Ctr::LlcFills), s.get(Ctr::LlcHits)), (5, 1, 0));
    assert_eq!((s.msgs(Msg::PutE), s.msg[Msg::PutE as usize][1]), (1, 3));
    assert_eq!(s.dev_writes.iter().sum::<u64>(), 0);
    // Back from the LLC: l2 10 + 2 x 2 + dir 5 + llc 7 + home->req 2 x 2 = 30.
    let (stall, cause) = stall_of(&mut m, |m| read(m, 0, line));
    assert_eq!((m.lat, stall, cause), (30, 26, Some(Cause::Llc)));
    let s = total(&mut m);
    assert_eq!((s.get(Ctr::LlcHits), s.msgs(Msg::DataLlc), s.msg[Msg::DataLlc as usize][2]), (1, 1, 2));
    assert_eq!(s.dev_reads[DeviceKind::Dram as usize], 5);
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
}

#[test]
fn a_dirty_line_is_written_to_memory_only_when_the_llc_evicts_it() {
    let mut m = machine(tiny_llc(), 4, vec![]);
    let dirty = line_homed_at(&m, 3);
    let others = same_set_homed_at(&m, 3, dirty, 8);
    write(&mut m, 0, dirty);
    // A1..A4 push the M line out of the L2: PutM into the LLC (dirty), no MemWr.
    for &l in &others[..4] {
        read(&mut m, 0, l);
    }
    let s = total(&mut m);
    assert_eq!((s.msgs(Msg::PutM), s.msgs(Msg::MemWr), s.get(Ctr::LlcDirtyFills)), (1, 0, 1));
    assert_eq!(m.dirty_lines()[DeviceKind::Dram as usize], 1); // still owed to memory
                                                               // A5..A7 fill the LLC set behind it (A1..A3 evicted clean); A8 evicts A4 into a full set
                                                               // whose least recently used line is the dirty one: one memory write.
    for &l in &others[4..7] {
        read(&mut m, 0, l);
    }
    assert_eq!(total(&mut m).msgs(Msg::MemWr), 0);
    read(&mut m, 0, others[7]);
    let s = total(&mut m);
    assert_eq!((s.msgs(Msg::MemWr), s.get(Ctr::LlcWritebacks), s.get(Ctr::LlcEvictions)), (1, 1, 1));
    assert_eq!(s.dev_writes[DeviceKind::Dram as usize], 1);
    assert_eq!(s.get(Ctr::LlcFills), 5);
    assert_eq!(m.dirty_lines()[DeviceKind::Dram as usize], 0);
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
}

#[test]
fn moesif_keeps_a_read_dirty_line_in_o_and_writes_it_back_on_eviction() {
    let mut p = tiny();
    p.set("protocol", "moesif").unwrap();
    let mut m = machine(p, 4, vec![]);
    let line = line_homed_at(&m, 3); // home (1,1)
    write(&mut m, 0, line); // tile 0 (0,0) M
                            // Tile 2 (1,0) reads: GetS 1 hop, Fwd-GetS (1,1)->(0,0) 2, Data-from-cache (0,0)->(1,0) 1;
                            // the owner keeps the dirty line in O: no Wb, no MemWr. Latency: l2 10 + 1 x 2 + dir 5 +
                            // 2 x 2 + fwd_dirty 12 + 1 x 2 = 35.
    let (stall, cause) = stall_of(&mut m, |m| read(m, 2, line));
    assert_eq!((m.lat, stall, cause), (35, 31, Some(Cause::FwdDirty)));
    let s = total(&mut m);
    assert_eq!((s.msgs(Msg::Wb), s.msgs(Msg::MemWr), s.get(Ctr::DowngradesToO)), (0, 0, 1));
    assert_eq!(s.dev_writes.iter().sum::<u64>(), 0);
    // Tile 3 (1,1) reads: the O holder forwards again (GetS 0 hops, Fwd 2, data 2):
    // 10 + 0 + 5 + 4 + 12 + 4 = 35, still no write.
    let (stall, cause) = stall_of(&mut m, |m| read(m, 3, line));
    assert_eq!((m.lat, stall, cause), (35, 31, Some(Cause::FwdDirty)));
    let s = total(&mut m);
    assert_eq!((s.msgs(Msg::FwdGetS), s.msgs(Msg::MemWr), s.msgs(Msg::MemRd)), (2, 0, 1));
    assert_eq!(m.dirty_lines()[DeviceKind::Dram as usize], 1);
    // The O holder evicts it (four lines of its L2 set): PutM + MemWr, the write MESIF would
    // have made at the first read.
    for l in same_set_homed_at(&m, 3, line, 4) {
        read(&mut m, 0, l);
    }
    let s = total(&mut m);
    assert_eq!((s.msgs(Msg::PutM), s.msgs(Msg::MemWr), s.get(Ctr::L2Writebacks)), (1, 1, 1));
    assert_eq!(s.dev_writes[DeviceKind::Dram as usize], 1);
    assert_eq!(m.dirty_lines()[DeviceKind::Dram as usize], 0);
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
}

#[test]
fn moesif_upgrade_by_a_sharer_drops_the_o_copy_without_a_write() {
    let mut p = tiny();
    p.set("protocol", "moesif").unwrap();
    let mut m = machine(p, 4, vec![]);
    let line = line_homed_at(&m, 3);
    write(&mut m, 0, line);
    read(&mut m, 2, line); // tile 0 O, tile 2 S
    write(&mut m, 2, line); // upgrade: invalidates the O copy, tile 2 now M
    let s = total(&mut m);
    assert_eq!((s.msgs(Msg::Upgrade), s.msgs(Msg::Inv), s.msgs(Msg::MemWr)), (1, 1, 0));
    assert_eq!(m.dirty_lines()[DeviceKind::Dram as usize], 1);
    // The O holder can also write its own line: an upgrade that invalidates the S copy.
    let line2 = line + 1;
    write(&mut m, 0, line2);
    read(&mut m, 1, line2);
    write(&mut m, 0, line2);
    let s = total(&mut m);
    assert_eq!((s.msgs(Msg::Upgrade), s.get(Ctr::DowngradesToO), s.msgs(Msg::MemWr)), (2, 2, 0));
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
}

#[test]
fn moesif_with_an_llc_puts_the_o_line_into_the_llc() {
    let mut p = tiny_llc();
    p.set("protocol", "moesif").unwrap();
    let mut m = machine(p, 4, vec![]);
    let line = line_homed_at(&m, 3);
    write(&mut m, 0, line);
    read(&mut m, 2, line);
    for l in same_set_homed_at(&m, 3, line, 4) {
        read(&mut m, 0, l);
    }
    let s = total(&mut m);
    assert_eq!((s.msgs(Msg::PutM), s.msgs(Msg::MemWr), s.get(Ctr::LlcDirtyFills)), (1, 0, 1));
    // Tile 2 still shares it (S); no F/O holder is left, so tile 1's read is served by the
    // LLC: l2 10 + (0,1)->(1,1) 1 x 2 + dir 5 + llc 7 + 1 x 2 = 26.
    let (_, cause) = stall_of(&mut m, |m| read(m, 1, line));
    assert_eq!((m.lat, cause), (26, Some(Cause::Llc)));
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
}

#[test]
fn home_at_the_memory_controller() {
    // dir.home=mc: the directory sits at the line's controller (0,-1). Tile 0 (0,0) reads:
    // GetS 1 hop to the controller, MemRd 0 hops, Data 1 hop back: 10 + 1 x 2 + dir 5 + 0 +
    // 50 + 1 x 2 = 69. Tile 3 (1,1) reads it then from tile 0 (E): GetS (1,1)->(0,-1) 3 hops,
    // Fwd-GetS (0,-1)->(0,0) 1, data (0,0)->(1,1) 2: 10 + 6 + 5 + 2 + 8 + 4 = 35.
    let mut p = tiny();
    p.set("dir.home", "mc").unwrap();
    let mut m = machine(p, 4, vec![]);
    let line = 1000;
    let (_, cause) = stall_of(&mut m, |m| read(m, 0, line));
    assert_eq!((m.lat, cause), (69, Some(Cause::MemDram)));
    let s = total(&mut m);
    assert_eq!((hops(s, Msg::GetS), hops(s, Msg::MemRd), hops(s, Msg::Data)), (1, 0, 1));
    let (_, cause) = stall_of(&mut m, |m| read(m, 3, line));
    assert_eq!((m.lat, cause), (35, Some(Cause::FwdClean)));
    let s = total(&mut m);
    assert_eq!((hops(s, Msg::GetS), hops(s, Msg::FwdGetS), hops(s, Msg::DataCache)), (4, 1, 2));
    assert!(m.balance_errors(TOTAL).is_empty(), "{:?}", m.balance_errors(TOTAL));
}

/// KNL in an SNC mode with the guest's nodes: DRAM nodes of 1 GiB each from 0, then (for
/// `mcdram`) as many MCDRAM nodes; node k's vCPUs are `cpus[k]`.
fn knl_numa(cluster: &str, dram_nodes: u32, mcdram: bool, cpus: &[&[usize]]) -> Machine {
    let mut p = preset("knl-64").unwrap();
    p.set("cluster", cluster).unwrap();
    let gib = 1u64 << 30;
    let mut ranges = Vec::new();
    let mut nodes = Vec::new();
    for k in 0..dram_nodes {
        ranges.push(MemRange { kind: DeviceKind::Dram, start: k as u64 * gib, size: gib });
        nodes.push(Some(k));
        if mcdram {
            let start = (dram_nodes + k) as u64 * gib;
            ranges.push(MemRange { kind: DeviceKind::Mcdram, start, size: gib });
            nodes.push(Some(dram_nodes + k));
        }
    }
    let node_cpus: Vec<(u32, Vec<usize>)> = cpus.iter().enumerate().map(|(k, c)| (k as u32, c.to_vec())).collect();
    let vcpus = cpus.iter().map(|c| c.len()).sum();
    Machine::new(p, vcpus, MemoryMap::with_numa(ranges, &nodes, &node_cpus).unwrap(), 0, true)
}

#[test]
fn snc2_homes_node_k_in_half_k_and_runs_its_vcpus_there() {
    // knl-64 halves: columns 0-2 west (cluster 0, DDR (2,-1), EDCs in columns 0-1), 3-5 east.
    let mut m = knl_numa("snc2", 2, false, &[&[0, 1], &[2, 3]]);
    let gib_line = (1u64 << 30) / LINE_BYTES;
    for (node, west) in [(0u64, true), (1, false)] {
        for i in 0..200 {
            let line = node * gib_line + 977 * i;
            let place = m.mem.place(line);
            assert_eq!(place.cluster(2), node as usize);
            let r = m.topo.route(line, place.kind, place.cluster(2));
            assert_eq!(r.home_pos.1 < 3, west, "node {node} line {line}");
            assert_eq!(m.topo.mc_pos[r.mc as usize], if west { (2, -1) } else { (3, 6) });
        }
    }
    // Scatter numbering restricted to each half: node 0's vCPUs 0, 1 on cores 0, 1 (tile 0,
    // (0,0)); node 1's vCPUs 2, 3 on the first east cores, 6 and 7 (tile 3, (0,3)).
    assert_eq!(m.topo.vcpu_core, vec![0, 1, 6, 7]);
    // A DRAM read of vCPU 2 (tile (0,3)) from its own node: home in the east half, controller
    // (3,6): no west tile is on the path.
    let line = gib_line + 5;
    read(&mut m, 2, line);
    let r = m.topo.route(line, DeviceKind::Dram, 1);
    let me = (0, 3);
    let t = &m.params.timing;
    let expect = t.l2 as u64
        + crate::topology::hops(me, r.home_pos) * t.hop as u64
        + t.dir as u64
        + crate::topology::hops(r.home_pos, (3, 6)) * t.hop as u64
        + t.cycles(50.0)
        + crate::topology::hops((3, 6), me) * t.hop as u64;
    assert_eq!(m.lat, expect);
}

#[test]
fn snc4_flat_follows_eight_nodes_and_hemisphere_hashes_halves() {
    // KNL flat SNC-4: nodes 0-3 DDR with the CPUs, nodes 4-7 MCDRAM; MCDRAM node 4+k is
    // quadrant k's, interleaved over quadrant k's two EDCs.
    let m = knl_numa("snc4", 4, true, &[&[0], &[1], &[2], &[3]]);
    let gib_line = (1u64 << 30) / LINE_BYTES;
    for k in 0..4u64 {
        let mut edcs = std::collections::BTreeSet::new();
        for i in 0..400 {
            let line = (4 + k) * gib_line + 31 * i;
            let place = m.mem.place(line);
            assert_eq!((place.kind, place.cluster(4)), (DeviceKind::Mcdram, k as usize));
            let r = m.topo.route(line, place.kind, place.cluster(4));
            assert_eq!(m.params.quadrant_of(r.home_pos), k as usize);
            assert_eq!(m.params.quadrant_of(m.topo.mc_pos[r.mc as usize]), k as usize);
            edcs.insert(r.mc);
        }
        assert_eq!(edcs.len(), 2, "quadrant {k} interleaves over its two EDCs");
        let tile = m.topo.core_tile(m.topo.vcpu_core[k as usize] as usize);
        assert_eq!(m.params.quadrant_of(m.topo.tile_pos[tile]), k as usize, "vCPU {k}");
    }
    // Hemisphere: the hash picks the half; home and controller always in the same half.
    let mut p = preset("knl-64").unwrap();
    p.set("cluster", "hemisphere").unwrap();
    let m = machine(p, 4, vec![]);
    let mut halves = [0; 2];
    for line in 0..4000u64 {
        let r = m.topo.route(line, DeviceKind::Mcdram, 0);
        let half = m.params.cluster_of(r.home_pos);
        assert_eq!(m.params.cluster_of(m.topo.mc_pos[r.mc as usize]), half);
        halves[half] += 1;
    }
    assert!(halves.iter().all(|&n| n > 1800), "{halves:?}");
}

#[test]
fn numa_arguments_parse() {
    let cfg =
        args::parse(&["mem=dram:0:40000000:0", "mem=dram:40000000:40000000:1", "node_cpus=0:0-1", "node_cpus=1:2/3"])
            .unwrap();
    assert_eq!(cfg.mem_nodes, vec![Some(0), Some(1)]);
    assert_eq!(cfg.node_cpus, vec![(0, vec![0, 1]), (1, vec![2, 3])]);
    assert!(args::parse(&["node_cpus=0:3-1"]).unwrap_err().contains("node_cpus"));
    assert!(args::parse(&["mem=dram:0:1:x"]).unwrap_err().contains("mem"));
}

#[test]
fn private_l2_hit_costs_its_own_latency_until_a_sibling_store_takes_the_line() {
    // tiny-4 with 2 cores per tile (cores 0 and 1 on tile 0) and a 2 KiB 4-way private L2 per
    // core (8 sets: lines 0, 8, 16 share one, as they share an L1D set), lat.pl2 6.
    let mut p = tiny();
    for (k, v) in [("cores_per_tile", "2"), ("pl2.size_kib", "2"), ("pl2.ways", "4"), ("lat.pl2", "6")] {
        p.set(k, v).unwrap();
    }
    let mut m = machine(p, 2, vec![]);
    read(&mut m, 0, 0);
    read(&mut m, 0, 8);
    read(&mut m, 0, 16); // line 0 leaves core 0's L1D, stays in its private L2 and the tile's L2
    let (stall, cause) = stall_of(&mut m, |m| read(m, 0, 0));
    assert_eq!((m.lat, stall, cause), (6, 2, Some(Cause::L2Hit)));
    assert_eq!(total(&mut m).get(Ctr::Pl2Hits), 1);
    // Core 1 writes line 0: the tile keeps it, core 0's L1D and private L2 copies go. Core 0's
    // next read is a tile-level hit again: lat.l2 10.
    write(&mut m, 1, 0);
    let (stall, cause) = stall_of(&mut m, |m| read(m, 0, 0));
    assert_eq!((m.lat, stall, cause), (10, 6, Some(Cause::L2Hit)));
    assert_eq!(total(&mut m).get(Ctr::Pl2Hits), 1);
}

#[test]
fn smt_siblings_busy_together_take_base_cycles_from_each_other() {
    // tiny-4 with 2 threads per core and 8 vCPUs: vCPU v on core v mod 4 (scatter), so 0 and
    // 4 share core 0. Gain 1.6: both busy, each runs 2 / 1.6 = 1.25x its base cycles.
    let mut p = tiny();
    p.set("threads_per_core", "2").unwrap();
    p.set("core.smt_gain", "1.6").unwrap();
    let mut m = Machine::new(p, 8, MemoryMap::new(vec![]).unwrap(), 3, true);
    m.test_insts = vec![0; 8];
    assert_eq!(m.smt_block(0, 100, 1, false, true), 25.0);
    assert_eq!(m.smt_block(4, 100, 2, false, true), 25.0);
    assert_eq!(m.smt_block(1, 100, 1, false, true), 25.0); // vCPU 5 has not idled yet: busy
    assert_eq!(m.smt_block(5, 10, 0, true, true), 0.0); // vCPU 5 in the idle loop
    assert_eq!(m.smt_block(1, 100, 1, false, true), 0.0);
    m.test_insts[0] = 100;
    assert_eq!(m.clock_ns(0), 125.0);
    let params = m.params.clone();
    let s = total(&mut m);
    assert_eq!(s.vcpu_smt[..2], [25.0, 25.0]);
    assert_eq!(s.funcs[1][crate::stats::FuncCtr::SmtCycles as usize], 50);
    let v: std::collections::HashMap<String, f64> = s.scalars(&params).into_iter().collect();
    assert_eq!(v["time.smt"], 75.0);
    // One thread per core (the preset): no sibling, no model.
    let mut m = machine(tiny(), 4, vec![]);
    assert!(m.smt.is_none());
    assert_eq!(m.smt_block(0, 100, 0, false, true), 0.0);
}

#[test]
fn a_sibling_that_idled_before_the_region_leaves_the_core_to_the_other() {
    // Outside the regions blocks are not charged, but who is busy is followed: vCPU 4 idles
    // there, so inside the region vCPU 0 has core 0 to itself.
    let mut p = tiny();
    p.set("threads_per_core", "2").unwrap();
    p.set("core.smt_gain", "1.6").unwrap();
    let mut m = Machine::new(p, 8, MemoryMap::new(vec![]).unwrap(), 3, true);
    assert_eq!(m.smt_block(0, 100, 1, false, false), 0.0);
    assert_eq!(m.smt_block(4, 10, 0, true, false), 0.0);
    assert_eq!(m.smt_block(0, 100, 1, false, true), 0.0);
    assert_eq!(m.smt_block(4, 10, 2, false, true), 2.5);
    assert_eq!(m.smt_block(0, 100, 1, false, true), 25.0);
}

/// What writing stats.json costs for a large stats object (64 vCPUs, 4 slots, 2,000 hot lines
/// and 2,000 functions listed per slot): `cargo test --release -- --ignored --nocapture
/// stats_json_write_time`.
#[test]
#[ignore]
fn stats_json_write_time() {
    let mut map = String::new();
    for i in 0..20_000u64 {
        map.push_str(&format!("{:016x} T function_{i}\n", 0xffff_ffff_8100_0000u64 + i * 64));
        map.push_str(&format!("{:016x} D object_{i}\n", 0xffff_ffff_8200_0000u64 + i * 4096));
    }
    let syms = Symbols::parse(&map).unwrap();
    let mut params = preset("knl-64").unwrap();
    params.set("hot_lines", "2000").unwrap();
    params.set("hot_functions", "2000").unwrap();
    let cfg = args::parse(&["preset=knl-64", "mode=full"]).unwrap();
    let mut m = Machine::new(params.clone(), 64, MemoryMap::new(vec![]).unwrap(), syms.n_ids(), false);
    let mut regions = Regions::new(false);
    let mut x = 12345u64;
    for phase in 0..3u8 {
        if phase > 0 {
            regions.apply(&mut m.stats, Marker { op: MarkerOp::Begin, arg: phase }, &Sample::default);
        }
        for i in 0..400_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let vcpu = (i / 64 % 64) as usize;
            let addr = if x.is_multiple_of(10) { x % (64 << 20) } else { (vcpu as u64) << 20 | (x % 65536) };
            let vaddr = 0xffff_ffff_8200_0000u64 + (x % (20_000 * 4096));
            m.access(vcpu, addr & !7, vaddr, 8, x & 4 == 0, (x % 20_000) as u32);
        }
    }
    regions.finish(&mut m.stats, &Sample::default);
    let run = RunInfo {
        config: &cfg,
        interleave: report::Interleave::default(),
        params: &params,
        target: "bench",
        vcpus: 64,
        max_vcpus: 64,
        wall_s: 1.25,
        markers: regions.markers_seen,
        directory_lines: m.dir.len(),
        n_symbols: syms.n_ids() - 2,
        model_lock: "none",
        ended_at: "QEMU exit",
    };
    let mut times = Vec::new();
    let mut text = String::new();
    for _ in 0..21 {
        let t0 = thread_cpu_s();
        text = report::stats_json(&run, &m.stats, &syms);
        times.push(thread_cpu_s() - t0);
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "stats.json: {} bytes, {} slots; write time (thread CPU) median {:.2} ms (min {:.2}, max {:.2}) over {} writes",
        text.len(),
        m.stats.slots.len(),
        times[times.len() / 2] * 1e3,
        times[0] * 1e3,
        times[times.len() - 1] * 1e3,
        times.len()
    );
    if let Ok(out) = std::env::var("MANYLAB_BENCH_OUT") {
        std::fs::write(out, &text).unwrap();
    }
}
