//! The memory-system model: private L1Ds, a shared inclusive L2 per tile, and a MESIF
//! directory protocol between tiles over the mesh. `Machine::access` models one guest access.
//!
//! Protocol summary (README.md has the message table):
//! - Inside a tile the L2 keeps its L1Ds coherent with presence bits; no mesh messages.
//! - An L2 miss sends GetS/GetM to the home tile; an L2 hit on S/F with a store sends Upgrade.
//! - Uncached lines come from memory (MemRd home->MC, Data MC->requester); a GetS to a shared
//!   line is served by the F holder (Fwd-GetS, Data-from-cache), and the requester becomes F.
//! - An owner (E/M) hit by Fwd-GetS sends the data and drops to S; if dirty it also writes the
//!   line back (Wb owner->home, MemWr home->MC). Fwd-GetM moves the line, dirty or not.
//! - Invalidations go home->sharer, acks sharer->requester; an upgrade ends with an Ack.
//! - Every L2 eviction is announced: PutM (dirty, then MemWr), PutE or PutS.

use crate::bandwidth::{Controller, Frontier};
use crate::cache::SetAssoc;
use crate::directory::{bit, DirEntry, DirState, Directory, MissKind, NO_TILE};
use crate::memory::MemoryMap;
use crate::memory::{DEVICE_KINDS, N_DEVICES};
use crate::nvmain_trace::{NvmainTrace, TraceClock};
use crate::params::{Params, Pos, Protocol, LINE_BYTES, LINE_SHIFT};
use crate::race::Race;
use crate::smt::SmtCores;
use crate::spans::OpenSpans;
use crate::stats::{add_at, Cause, Ctr, FuncCtr, Msg, Stats, HOT_L1D_HITS, HOT_LOADS, HOT_STORES};
use crate::topology::{hops, LineRoute, Topology};

mod checker;

const L1_S: u8 = 1;
const L1_E: u8 = 2;
const L1_M: u8 = 3;

const T_S: u8 = 1;
const T_F: u8 = 2;
const T_E: u8 = 3;
const T_M: u8 = 4;
/// MOESIF only: dirty and shared; the holder forwards the line and writes it back on eviction.
const T_O: u8 = 5;

/// LLC line states (the LLC keeps no coherence state: it is memory-side, below the directory).
const LLC_CLEAN: u8 = 1;
const LLC_DIRTY: u8 = 2;

pub struct Machine {
    pub params: Params,
    pub topo: Topology,
    l1: Vec<SetAssoc>,
    l2: Vec<SetAssoc>,
    /// One LLC slice per home (empty without an LLC).
    llc: Vec<SetAssoc>,
    /// Per core, the tags of its private L2 (`pl2`; empty without one): latency only.
    pl2: Vec<SetAssoc>,
    moesif: bool,
    pub dir: Directory,
    pub mem: MemoryMap,
    pub stats: Stats,
    checker: bool,
    data_flits: u64,
    /// Attribution context of the access being modelled.
    func: u32,
    vaddr_line: u64,
    current_line: u64,
    /// Lines whose state changed during this access (for the checker).
    touched: Vec<u64>,
    /// Per core and L1D set, the set's most recently used line as `line << 1 | dirty`
    /// (`NO_MRU` once that copy changed). An access to it is an exact L1D hit with no LRU
    /// change (touching the most recent way keeps the set's order), so it takes a short path
    /// that reads one word: no tag scan, no LRU stamp.
    mru: Vec<u64>,
    l1_sets: usize,
    /// `l1_sets - 1` if a power of two, else 0 (then `%`).
    l1_set_mask: u64,
    pub repeat_filter: bool,
    /// Per line, the sharing messages and invalidations of the line access being modelled;
    /// added to the hot-line maps once per line access instead of once per message.
    hot_pending: Vec<(u64, u64, u64)>,
    /// Coherence messages and invalidations of the access, added to its function once.
    func_msgs: u64,
    func_invalidations: u64,
    /// Set when a request needed another cache (a forward or an invalidation); the plugin's
    /// adaptive quantum reads and clears it.
    pub remote_seen: bool,
    /// The NVMain trace of memory-side requests (`nvmain_trace=`), if asked for.
    pub nvmain: Option<Box<NvmainTrace>>,
    /// The core whose access is being modelled (the trace's thread id).
    core: usize,
    /// The vCPU whose access is being modelled (stall cycles are kept per vCPU).
    vcpu: usize,
    /// Latency (core cycles) of the line access being modelled, and what it waited for. Set by
    /// every access that takes the slow path (always with the checker on); the L1D-hit
    /// shortcuts leave it alone.
    pub lat: u64,
    pub cause: Cause,
    /// Per device, a line read's latency in core cycles.
    mem_read_cycles: [u64; N_DEVICES],
    /// Per device, a line's service time (ns) at one controller, read and write.
    svc_read_ns: [f64; N_DEVICES],
    svc_write_ns: [f64; N_DEVICES],
    /// Per memory controller (`topo.mc_pos`), its bookings by epoch.
    ctrls: Vec<Controller>,
    /// Queueing cycles in the latency of the line access being modelled.
    queue_cycles: u64,
    /// Per vCPU: stall cycles so far (before the `core.mlp` division), and the instructions
    /// and stall cycles at the clocks' origin (`restart_clocks`). A vCPU's modelled clock is
    /// (insts - origin) x CPI + (stall - origin) / MLP cycles.
    clock_stall: Vec<u64>,
    clock_origin: Vec<(u64, u64)>,
    /// Per vCPU, how far its clock was moved up (ns) since the last restart: a vCPU that was
    /// idle (no cycles) rejoins the others (`bandwidth.rs`, `Frontier`).
    idle_ns: Vec<f64>,
    /// Per vCPU, how far the causal rule moved its clock up (ns) since the last restart.
    wait_ns: Vec<f64>,
    /// The causal clock's lax window (ns), `None` = off: a vCPU that obtains a line whose
    /// last store lies more than this ahead of its clock waits for it (README "Modelled time").
    pub causal_lax_ns: Option<f64>,
    /// The race rule (`race.rs`, README "Modelled time"): which stores that follow their own
    /// load of a shared line find it taken away in between. Needs the stores' stamps, which
    /// are kept whenever the causal clock or this rule is on.
    pub race: Race,
    /// The lax window (ns) the race rule uses (the causal clock's, also with the clock off).
    pub race_lax_ns: f64,
    /// Per vCPU, the line its last load brought into its L1D (a miss), the modelled time of
    /// that load and the clock generation: where the race rule's window starts.
    last_load: Vec<(u64, f64, u32)>,
    /// Per vCPU, the base cycles its SMT siblings took from it (`smt.rs`) since the last restart.
    smt_cycles: Vec<f64>,
    /// Which hardware threads are busy per core (`None`: no core hosts two vCPUs).
    pub smt: Option<SmtCores>,
    /// Bumped at every clock restart: write times of older generations are void.
    clock_gen: u32,
    /// The directory slot of the line access being modelled (`NO_ENTRY` for an L1D hit).
    entry_slot: usize,
    frontier: Frontier,
    spans: OpenSpans,
    /// Where the vCPUs' instruction counts come from (the plugin's counters); without it,
    /// `test_insts`.
    pub insts_of: Option<fn(usize) -> u64>,
    pub test_insts: Vec<u64>,
}

const NO_MRU: u64 = u64::MAX;
const NO_ENTRY: usize = usize::MAX;

fn miss_counters(kind: MissKind, l1: bool) -> Ctr {
    match (kind, l1) {
        (MissKind::Cold, true) => Ctr::L1dMissCold,
        (MissKind::Capacity, true) => Ctr::L1dMissCapacity,
        (MissKind::Coherence, true) => Ctr::L1dMissCoherence,
        (MissKind::Cold, false) => Ctr::L2MissCold,
        (MissKind::Capacity, false) => Ctr::L2MissCapacity,
        (MissKind::Coherence, false) => Ctr::L2MissCoherence,
    }
}

fn bits(mut mask: u128) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        Some(i)
    })
}

impl Machine {
    pub fn new(params: Params, vcpus: usize, mem: MemoryMap, n_funcs: usize, checker: bool) -> Machine {
        let topo = Topology::with_layout(&params, vcpus, &mem);
        let n_cores = topo.n_cores;
        let smt = SmtCores::new(params.threads_per_core, params.timing.smt_gain, &topo.vcpu_core, n_cores);
        let l1 = (0..topo.n_cores).map(|_| SetAssoc::new(&params.l1d)).collect();
        let l2 = (0..topo.tile_pos.len()).map(|_| SetAssoc::new(&params.l2)).collect();
        let data_flits = 1 + LINE_BYTES.div_ceil(params.flit_bytes as u64);
        let l1_sets = params.l1d.sets() as usize;
        let mem_read_cycles = DEVICE_KINDS.map(|k| params.timing.cycles(k.params(&params).read_ns));
        let line = LINE_BYTES as f64;
        let svc_read_ns = DEVICE_KINDS.map(|k| line / k.params(&params).bw_gbs);
        let svc_write_ns = DEVICE_KINDS.map(|k| line / k.params(&params).bw_write_gbs);
        let ctrls = (0..topo.mc_pos.len()).map(|_| Controller::default()).collect();
        let llc = if params.llc.size_kib > 0 {
            (0..topo.n_homes()).map(|_| SetAssoc::new(&params.llc)).collect()
        } else {
            Vec::new()
        };
        let moesif = params.protocol == Protocol::Moesif;
        let pl2 = if params.pl2.size_kib > 0 {
            (0..topo.n_cores).map(|_| SetAssoc::new(&params.pl2)).collect()
        } else {
            Vec::new()
        };
        Machine {
            params,
            topo,
            l1,
            l2,
            llc,
            pl2,
            moesif,
            dir: Directory::default(),
            mem,
            stats: Stats::new(n_funcs),
            checker,
            data_flits,
            func: u32::MAX,
            vaddr_line: 0,
            current_line: u64::MAX,
            touched: Vec::with_capacity(16),
            mru: vec![NO_MRU; n_cores * l1_sets],
            l1_sets,
            l1_set_mask: if l1_sets.is_power_of_two() { l1_sets as u64 - 1 } else { 0 },
            repeat_filter: true,
            hot_pending: Vec::with_capacity(8),
            func_msgs: 0,
            func_invalidations: 0,
            remote_seen: false,
            nvmain: None,
            core: 0,
            vcpu: 0,
            lat: 0,
            cause: Cause::L2Hit,
            mem_read_cycles,
            svc_read_ns,
            svc_write_ns,
            ctrls,
            queue_cycles: 0,
            clock_stall: Vec::new(),
            clock_origin: Vec::new(),
            idle_ns: Vec::new(),
            wait_ns: Vec::new(),
            causal_lax_ns: None,
            race: Race::Off,
            race_lax_ns: 0.0,
            last_load: vec![(u64::MAX, 0.0, 0); vcpus],
            smt_cycles: Vec::new(),
            smt,
            clock_gen: 1,
            entry_slot: NO_ENTRY,
            frontier: Frontier::default(),
            spans: OpenSpans::default(),
            insts_of: None,
            test_insts: Vec::new(),
        }
    }

    /// One guest memory access of `size` bytes at guest-physical `paddr`.
    #[inline(always)]
    pub fn access(&mut self, vcpu: usize, paddr: u64, vaddr: u64, size: u32, store: bool, func: u32) {
        self.stats.hot[if store { HOT_STORES } else { HOT_LOADS }] += 1;
        self.model(vcpu, paddr, vaddr, size, store, func);
    }

    /// The load half of an atomic read-modify-write: counted as a load and an atomic, modelled
    /// as one ownership request for the whole operation (its store half is `rmw_store`).
    pub fn access_rmw(&mut self, vcpu: usize, paddr: u64, vaddr: u64, size: u32, func: u32) {
        self.stats.hot[HOT_LOADS] += 1;
        self.stats.add(Ctr::Atomics, 1);
        self.model(vcpu, paddr, vaddr, size, true, func);
    }

    /// The store half of an atomic read-modify-write: counted only, since `access_rmw` took
    /// ownership for it. Counting it apart keeps the model's result the same whether another
    /// vCPU's access falls between the halves (multi-threaded TCG) or not.
    pub fn rmw_store(&mut self) {
        self.stats.hot[HOT_STORES] += 1;
    }

    #[inline(always)]
    fn model(&mut self, vcpu: usize, paddr: u64, vaddr: u64, size: u32, store: bool, func: u32) {
        let core = match self.topo.vcpu_core.get(vcpu) {
            Some(&core) => core as usize,
            None => self.topo.vcpu_core[vcpu % self.topo.vcpu_core.len()] as usize,
        };
        let first = paddr >> LINE_SHIFT;
        let last = (paddr + size.max(1) as u64 - 1) >> LINE_SHIFT;
        if first == last && !self.checker {
            let m = self.mru_index(core, first);
            let mru = self.mru[m];
            if mru >> 1 == first && (!store || mru & 1 != 0) && self.repeat_filter {
                // Exact L1D hit on the most recent line of its set: nothing changes.
                self.stats.hot[HOT_L1D_HITS] += 1;
                return;
            }
            // L1D hit that needs no permission change: LRU update only, no directory state.
            let l1 = &mut self.l1[core];
            if let Some(s1) = l1.find(first) {
                let state = l1.state(s1);
                if !store || state == L1_M {
                    l1.touch(s1);
                    self.stats.hot[HOT_L1D_HITS] += 1;
                    self.mru[m] = first << 1 | (state == L1_M) as u64;
                    return;
                }
            }
        }
        self.access_slow(vcpu, core, first, last, vaddr, store, func);
    }

    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn access_slow(&mut self, vcpu: usize, core: usize, first: u64, last: u64, vaddr: u64, store: bool, func: u32) {
        self.func = func;
        self.core = core;
        self.vcpu = vcpu;
        for line in first..=last {
            self.current_line = line;
            self.vaddr_line = vaddr.wrapping_add((line - first) << LINE_SHIFT);
            if self.checker {
                self.touched.clear();
                self.touched.push(line);
            }
            let l1 = self.params.timing.l1 as u64;
            self.lat = l1;
            self.cause = Cause::L2Hit;
            self.queue_cycles = 0;
            self.entry_slot = NO_ENTRY;
            let s1 = self.access_line(core, line, store);
            if self.lat > l1 && self.params.timing.enabled {
                // The L1D hit latency is part of the base CPI: the access stalls for the rest;
                // the part spent queueing at a memory controller goes to its own cause.
                let stall = self.lat - l1;
                let queue = self.queue_cycles.min(stall);
                if stall > queue {
                    self.stats.stall(vcpu, self.cause, stall - queue, func);
                }
                if queue > 0 {
                    self.stats.stall(vcpu, Cause::Queue, queue, func);
                }
                add_at(&mut self.clock_stall, vcpu, stall);
            }
            if store && (self.causal_lax_ns.is_some() || self.race != Race::Off) && self.entry_slot != NO_ENTRY {
                self.causal_stamp(self.entry_slot);
            }
            self.flush_pending();
            let m = self.mru_index(core, line);
            self.mru[m] = line << 1 | (self.l1[core].state(s1) == L1_M) as u64;
            if self.checker {
                for i in 0..self.touched.len() {
                    let touched = self.touched[i];
                    if let Err(e) = self.check_line(touched) {
                        panic!(
                            "manylab-plugin checker: {e} (after core {core} {} line {line:#x})",
                            if store { "store" } else { "load" }
                        );
                    }
                }
            }
        }
    }

    /// Models one line of an access; returns the core's L1D slot now holding the line.
    fn access_line(&mut self, core: usize, line: u64, store: bool) -> usize {
        let tile = self.topo.core_tile(core);
        if let Some(s1) = self.l1[core].find(line) {
            self.l1[core].touch(s1);
            let state = self.l1[core].state(s1);
            if !store || state == L1_M {
                self.stats.hot[HOT_L1D_HITS] += 1;
                return s1;
            }
            if state == L1_E {
                self.stats.hot[HOT_L1D_HITS] += 1;
                self.l1[core].set_state(s1, L1_M);
                let s2 = self.l2_slot(tile, line);
                self.l2[tile].set_state(s2, T_M);
                self.entry_slot = self.l2[tile].word(s2) as usize;
                return s1;
            }
            let d = self.l2[tile].word(self.l2_slot(tile, line)) as usize;
            if self.race == Race::Off || !self.lost_since_load(core, d) {
                self.stats.add(Ctr::L1dUpgrades, 1);
                self.lat = self.params.timing.l2 as u64;
                self.entry_slot = d;
                self.causal_wait(d);
                let mut e = self.dir.entries[d];
                self.make_writable(core, line, &mut e);
                self.dir.entries[d] = e;
                self.l1[core].set_state(s1, L1_M);
                return s1;
            }
            // The race rule: another vCPU's store took the line since this vCPU loaded it, so
            // the store misses and asks for the line again (below).
            self.lose_to_writer(core, line, s1, d);
        }

        self.stats.add(Ctr::L1dMisses, 1);
        self.stats.add_func(self.func, FuncCtr::L1dMisses);
        self.lat = self.params.timing.l2 as u64;
        // The line's directory entry is copied out once and written back at the end.
        let l2_hit = self.l2[tile].find(line);
        let d = match l2_hit {
            Some(s2) => self.l2[tile].word(s2) as usize,
            None => self.dir.slot(line),
        };
        self.entry_slot = d;
        let waited = self.causal_wait(d);
        if !store && self.race != Race::Off {
            // A load that waited for the line's last store read it after that store: no race
            // with it can follow (no record).
            let record = if waited { (u64::MAX, 0.0, 0) } else { (line, self.clock_ns(self.vcpu), self.clock_gen) };
            if let Some(slot) = self.last_load.get_mut(self.vcpu) {
                *slot = record;
            }
        }
        let mut e = self.dir.entries[d];
        let kind = DirEntry::classify(e.l1_seen, e.l1_lost_to_coherence, core);
        self.stats.add(miss_counters(kind, true), 1);

        match l2_hit {
            Some(s2) => {
                self.stats.add(Ctr::L2Hits, 1);
                self.l2[tile].touch(s2);
                if let Some(p) = self.pl2.get_mut(core).and_then(|c| c.find(line).map(|s| (c, s))) {
                    p.0.touch(p.1);
                    self.stats.add(Ctr::Pl2Hits, 1);
                    self.lat = self.params.timing.pl2 as u64;
                }
            }
            None => {
                self.stats.add(Ctr::L2Misses, 1);
                self.stats.add_func(self.func, FuncCtr::L2Misses);
                let kind = DirEntry::classify(e.l2_seen, e.l2_lost_to_coherence, tile);
                self.stats.add(miss_counters(kind, false), 1);
                self.l2_fill(tile, line, store, &mut e, d as u32);
            }
        }

        let l1_state = if store {
            self.make_writable(core, line, &mut e);
            L1_M
        } else {
            self.share_in_tile(core, line)
        };
        let s1 = self.l1_fill(core, line, l1_state, &mut e);
        self.dir.entries[d] = e;
        s1
    }

    #[inline]
    fn l2_slot(&self, tile: usize, line: u64) -> usize {
        match self.l2[tile].find(line) {
            Some(slot) => slot,
            None => panic!("manylab-plugin: L2 of tile {tile} lost line {line:#x} held by one of its L1Ds"),
        }
    }

    #[inline(always)]
    fn mru_index(&self, core: usize, line: u64) -> usize {
        let set = if self.l1_set_mask != 0 || self.l1_sets == 1 {
            line & self.l1_set_mask
        } else {
            line % self.l1_sets as u64
        };
        core * self.l1_sets + set as usize
    }

    /// Drops `core`'s shortcut for `line` (whose copy is changing or leaving).
    #[inline]
    fn forget(&mut self, core: usize, line: u64) {
        let m = self.mru_index(core, line);
        if self.mru[m] >> 1 == line {
            self.mru[m] = NO_MRU;
        }
    }

    #[inline]
    fn local(&self, core: usize) -> usize {
        self.topo.core_local(core)
    }

    #[inline]
    fn tile_core(&self, tile: usize, local: usize) -> usize {
        tile * self.topo.cores_per_tile + local
    }

    /// Gives `core`'s tile write permission (upgrading over the mesh if the tile only shares the
    /// line) and removes the line from the other L1Ds of the tile.
    fn make_writable(&mut self, core: usize, line: u64, e: &mut DirEntry) {
        let tile = self.topo.core_tile(core);
        let s2 = self.l2_slot(tile, line);
        if matches!(self.l2[tile].state(s2), T_S | T_F | T_O) {
            self.stats.add(Ctr::L2Upgrades, 1);
            self.upgrade(tile, line, e);
        }
        self.l2[tile].set_state(s2, T_M);
        let me = self.local(core);
        let siblings = self.l2[tile].aux(s2) & !(1u8 << me);
        for local in bits(siblings as u128) {
            let sibling = self.tile_core(tile, local);
            if let Some(s1) = self.l1[sibling].find(line) {
                self.l1[sibling].remove(s1);
            }
            self.forget(sibling, line);
            self.stats.add(Ctr::L1dSiblingInvalidations, 1);
            self.stats.add(Ctr::L1dInvalidations, 1);
            e.l1_lost_to_coherence |= bit(sibling);
        }
        let aux = self.l2[tile].aux(s2) & !siblings;
        self.l2[tile].set_aux(s2, aux);
        self.drop_private(tile, line, core);
    }

    /// Removes `line` from the private L2s of tile `tile`'s cores except `keep`: the line left
    /// the tile, or a sibling's store took it from them.
    fn drop_private(&mut self, tile: usize, line: u64, keep: usize) {
        if self.pl2.is_empty() {
            return;
        }
        for local in 0..self.topo.cores_per_tile {
            let core = self.tile_core(tile, local);
            if core != keep {
                if let Some(s) = self.pl2[core].find(line) {
                    self.pl2[core].remove(s);
                }
            }
        }
    }

    /// For a load: demotes sibling writers to S; returns the state the new L1D copy gets.
    fn share_in_tile(&mut self, core: usize, line: u64) -> u8 {
        let tile = self.topo.core_tile(core);
        let s2 = self.l2_slot(tile, line);
        let siblings = self.l2[tile].aux(s2) & !(1u8 << self.local(core));
        for local in bits(siblings as u128) {
            let sibling = self.tile_core(tile, local);
            if let Some(s1) = self.l1[sibling].find(line) {
                self.l1[sibling].set_state(s1, L1_S);
            }
            self.forget(sibling, line);
        }
        let tile_exclusive = matches!(self.l2[tile].state(s2), T_E | T_M);
        if tile_exclusive && siblings == 0 {
            L1_E
        } else {
            L1_S
        }
    }

    fn l1_fill(&mut self, core: usize, line: u64, state: u8, e: &mut DirEntry) -> usize {
        let tile = self.topo.core_tile(core);
        let me = 1u8 << self.local(core);
        let (slot, victim) = self.l1[core].victim(line);
        if let Some(old) = victim {
            self.forget(core, old);
            if self.l1[core].state(slot) == L1_M {
                self.stats.add(Ctr::L1dWritebacks, 1);
            }
            let s2 = self.l2_slot(tile, old);
            let aux = self.l2[tile].aux(s2) & !me;
            self.l2[tile].set_aux(s2, aux);
            if self.checker {
                self.touched.push(old);
            }
        }
        self.l1[core].fill(slot, line, state);
        if let Some(p) = self.pl2.get_mut(core) {
            if p.find(line).is_none() {
                let (s, _) = p.victim(line);
                p.fill(s, line, 1);
            }
        }
        let s2 = self.l2_slot(tile, line);
        let aux = self.l2[tile].aux(s2) | me;
        self.l2[tile].set_aux(s2, aux);
        e.l1_seen |= bit(core);
        e.l1_lost_to_coherence &= !bit(core);
        slot
    }

    fn l2_fill(&mut self, tile: usize, line: u64, store: bool, e: &mut DirEntry, dir_slot: u32) {
        let (slot, victim) = self.l2[tile].victim(line);
        if let Some(old) = victim {
            self.l2_evict(tile, slot, old);
        }
        let state = if store {
            self.request_getm(tile, line, e);
            T_M
        } else {
            self.request_gets(tile, line, e)
        };
        self.l2[tile].fill(slot, line, state);
        self.l2[tile].set_word(slot, dir_slot);
        e.l2_seen |= bit(tile);
        e.l2_lost_to_coherence &= !bit(tile);
    }

    fn pos(&self, tile: usize) -> Pos {
        self.topo.tile_pos[tile]
    }

    /// Home position and memory controller (index into `topo.mc_pos`) of a line.
    fn route(&self, line: u64) -> (Pos, usize) {
        let r = self.line_route(line);
        (r.home_pos, r.mc as usize)
    }

    fn line_route(&self, line: u64) -> LineRoute {
        let place = self.mem.place(line);
        self.topo.route(line, place.kind, place.cluster(self.topo.clusters()))
    }

    /// Stall cycles of `vcpu` so far (before the MLP division), whatever region is open.
    pub fn stall_cycles(&self, vcpu: usize) -> u64 {
        self.clock_stall.get(vcpu).copied().unwrap_or(0)
    }

    /// The modelled clock of `vcpu` (ns since the clocks' origin): its instructions x CPI plus
    /// its stall cycles / MLP, as in "Modelled time", plus the idle time it was moved up by.
    pub fn clock_ns(&self, vcpu: usize) -> f64 {
        let t = &self.params.timing;
        let insts = match self.insts_of {
            Some(f) => f(vcpu),
            None => self.test_insts.get(vcpu).copied().unwrap_or(0),
        };
        let (insts0, stall0) = self.clock_origin.get(vcpu).copied().unwrap_or((0, 0));
        let stall = self.clock_stall.get(vcpu).copied().unwrap_or(0);
        let cycles = insts.saturating_sub(insts0) as f64 * t.cpi + stall.saturating_sub(stall0) as f64 / t.mlp;
        let smt = self.smt_cycles.get(vcpu).copied().unwrap_or(0.0);
        (cycles + smt) / t.ghz
            + self.idle_ns.get(vcpu).copied().unwrap_or(0.0)
            + self.wait_ns.get(vcpu).copied().unwrap_or(0.0)
    }

    /// `vcpu` executed a span marker (`spans.rs`): begin or end of span `span`.
    pub fn span_marker(&mut self, vcpu: usize, begin: bool, span: u8) {
        let clock = self.clock_ns(vcpu);
        let idle = self.idle_ns.get(vcpu).copied().unwrap_or(0.0);
        if begin {
            self.spans.begin(vcpu, span, clock, idle, self.clock_gen);
            return;
        }
        let ghz = self.params.timing.ghz;
        let timed = self.spans.end(vcpu, span, clock, idle, self.clock_gen);
        self.stats.span(span, timed.map(|(busy_ns, idle_ns)| (busy_ns * ghz, idle_ns * ghz)));
    }

    /// A block of `insts` instructions of `vcpu` in function `func` ran, in the kernel's idle
    /// loop or not: the cycles its SMT siblings add to its base cycles (0 without sharing),
    /// kept in its clock and charged to the function if `charge` (inside the regions; outside
    /// them only who is busy is followed).
    pub fn smt_block(&mut self, vcpu: usize, insts: u64, func: u32, idle: bool, charge: bool) -> f64 {
        let Some(smt) = self.smt.as_mut() else { return 0.0 };
        let slowdown = smt.block(vcpu, idle);
        if slowdown == 1.0 || !charge {
            return 0.0;
        }
        let extra = insts as f64 * self.params.timing.cpi * (slowdown - 1.0);
        add_at(&mut self.smt_cycles, vcpu, extra);
        self.stats.smt(vcpu, extra, func);
        extra
    }

    /// The causal rule, at the directory lookup of a line access (entry `d`): a line last
    /// stored by another vCPU more than the lax window ahead of this vCPU's clock cannot have
    /// reached it earlier, so the clock moves up to that store's time and the gap is wait time,
    /// charged to the accessing function and to the line. Before the access's own controller
    /// bookings, which then happen at the moved clock.
    /// Returns whether the clock moved.
    fn causal_wait(&mut self, d: usize) -> bool {
        let Some(lax) = self.causal_lax_ns else { return false };
        let e = &self.dir.entries[d];
        if e.wgen != self.clock_gen || e.writer as usize == self.vcpu {
            return false;
        }
        let gap = e.wtime_ns - self.clock_ns(self.vcpu);
        if gap > lax {
            add_at(&mut self.wait_ns, self.vcpu, gap);
            self.stats.wait(self.vcpu, gap * self.params.timing.ghz, self.func, self.current_line);
            return true;
        }
        false
    }

    /// The race rule's test, at a store of `core` (this access's vCPU) to a line its L1D holds
    /// shared (entry `d`): was the line last loaded by this vCPU (a miss, in this clock
    /// generation), and does its last store, by a vCPU on another core, fall where `race`
    /// says the line was taken away between that load and this store? The load's record is
    /// used up either way.
    fn lost_since_load(&mut self, core: usize, d: usize) -> bool {
        let v = self.vcpu;
        let Some(slot) = self.last_load.get_mut(v) else { return false };
        let (line, loaded, gen) = std::mem::replace(slot, (u64::MAX, 0.0, 0));
        let e = &self.dir.entries[d];
        if line != self.current_line || gen != self.clock_gen || e.wgen != self.clock_gen || e.writer as usize == v {
            return false;
        }
        let (stored, writer) = (e.wtime_ns, e.writer as usize);
        if self.topo.vcpu_core.get(writer).is_some_and(|&c| c as usize == core) {
            // An SMT sibling: the same L1D, so its store took nothing from this one.
            return false;
        }
        self.race.lost(loaded, stored, self.clock_ns(v), self.race_lax_ns)
    }

    /// The race rule's consequence: the last writer's store, taken to have come after this
    /// core's load, removed this core's copy of `line` (L1D slot `s1`, directory entry `d`).
    /// A writer in the same tile removes only the L1D copy (a sibling invalidation); one in
    /// another tile removes the tile's copy (an Inv from the home, the Inv-Ack to the writer),
    /// and its tile, if it still shares the line, becomes the forwarder this core's coming
    /// GetM is served by. The store then misses and asks again (`access_line`).
    fn lose_to_writer(&mut self, core: usize, line: u64, s1: usize, d: usize) {
        self.stats.add(Ctr::Races, 1);
        let tile = self.topo.core_tile(core);
        let writer = self.dir.entries[d].writer as usize;
        let wcore = self.topo.vcpu_core[writer % self.topo.vcpu_core.len()] as usize;
        let wtile = self.topo.core_tile(wcore);
        let mut e = self.dir.entries[d];
        if wtile == tile {
            self.l1[core].remove(s1);
            self.forget(core, line);
            let s2 = self.l2_slot(tile, line);
            let aux = self.l2[tile].aux(s2) & !(1u8 << self.local(core));
            self.l2[tile].set_aux(s2, aux);
            self.drop_private(tile, line, wcore);
            self.stats.add(Ctr::L1dSiblingInvalidations, 1);
            self.stats.add(Ctr::L1dInvalidations, 1);
            e.l1_lost_to_coherence |= bit(core);
        } else {
            let r = self.line_route(line);
            let (at, by) = (self.pos(tile), self.pos(wtile));
            let dirty = matches!(self.l2[tile].state(self.l2_slot(tile, line)), T_M | T_O);
            self.send(Msg::Inv, r.home_pos, at, line);
            self.send(Msg::InvAck, at, by, line);
            self.invalidate_tile(tile, line, &mut e);
            e.sharers &= !bit(tile);
            if e.owner == tile as u8 {
                e.owner = NO_TILE;
                // The writer's tile, if it still shares the line, forwards it now (dirty data
                // stays on chip in an O copy under MOESIF); dirty data no tile keeps goes home.
                let heir = (e.state == DirState::Shared && e.sharers & bit(wtile) != 0)
                    .then(|| self.l2_slot(wtile, line))
                    .filter(|&s2| self.l2[wtile].state(s2) == T_S);
                let keep_dirty = dirty && self.moesif && heir.is_some();
                if dirty && !keep_dirty {
                    self.send(Msg::Wb, at, r.home_pos, line);
                    self.absorb_writeback(line, r);
                }
                if let Some(s2) = heir {
                    self.l2[wtile].set_state(s2, if keep_dirty { T_O } else { T_F });
                    e.owner = wtile as u8;
                }
            }
            if e.sharers == 0 {
                e.state = DirState::Uncached;
                e.owner = NO_TILE;
            }
        }
        self.dir.entries[d] = e;
    }

    /// A store stamps its line (entry `d`) with the storing vCPU's clock after the access.
    fn causal_stamp(&mut self, d: usize) {
        let now = self.clock_ns(self.vcpu);
        let e = &mut self.dir.entries[d];
        e.wtime_ns = now;
        e.wgen = self.clock_gen;
        e.writer = self.vcpu as u16;
    }

    /// Sets every vCPU's clock to 0 (`vcpu_insts` = their instruction counts now) and forgets
    /// the controllers' bookings: done at every region marker, so all vCPUs start a region or
    /// phase at one time.
    pub fn restart_clocks(&mut self, vcpu_insts: &[u64]) {
        let n = vcpu_insts.len().max(self.clock_stall.len());
        if self.nvmain.is_some() {
            let ended = (0..n).map(|v| self.clock_ns(v)).fold(0.0, f64::max);
            if let Some(trace) = self.nvmain.as_mut() {
                trace.phase_ended(ended);
            }
        }
        self.clock_origin = (0..n)
            .map(|v| (vcpu_insts.get(v).copied().unwrap_or(0), self.clock_stall.get(v).copied().unwrap_or(0)))
            .collect();
        self.ctrls.iter_mut().for_each(Controller::clear);
        self.idle_ns.clear();
        self.wait_ns.clear();
        self.smt_cycles.clear();
        self.clock_gen = self.clock_gen.wrapping_add(1).max(1);
        self.frontier.clear();
    }

    /// One line to or from memory controller `mc`: counted, and booked into its epochs (if
    /// queueing is on). Returns the queueing delay in core cycles (0 for writes: they are
    /// posted, off the critical path, but take the controller's time).
    fn controller_access(&mut self, kind: usize, mc: usize, write: bool) -> u64 {
        let svc = if write { self.svc_write_ns[kind] } else { self.svc_read_ns[kind] };
        self.stats.controller_access(mc, svc);
        if !self.params.bw.queue {
            return 0;
        }
        let v = self.vcpu;
        let epoch = self.params.bw.epoch_ns;
        let mut now = self.clock_ns(v);
        let shift = self.frontier.rejoin(now, epoch, self.params.bw.behind_epochs);
        if shift > 0.0 {
            self.stats.add(Ctr::QueueLate, 1);
            self.stats.idle(v, shift * self.params.timing.ghz);
            add_at(&mut self.idle_ns, v, shift);
            now += shift;
        }
        let booking = self.ctrls[mc].book(now, svc, epoch);
        if write {
            0
        } else {
            self.params.timing.cycles(booking.wait_ns())
        }
    }

    fn send(&mut self, m: Msg, from: Pos, to: Pos, line: u64) {
        let flits = if m.carries_data() { self.data_flits } else { 1 };
        self.send_flits(m, from, to, line, flits);
    }

    fn send_flits(&mut self, m: Msg, from: Pos, to: Pos, line: u64, flits: u64) {
        self.stats.msg(m, flits, hops(from, to));
        self.func_msgs += 1;
        self.remote_seen |= matches!(m, Msg::FwdGetS | Msg::FwdGetM | Msg::Inv);
        if m.is_sharing() {
            self.hot(line).1 += 1;
        }
    }

    /// The pending hot-line counts of `line` (few lines per access: a linear search).
    #[inline]
    fn hot(&mut self, line: u64) -> &mut (u64, u64, u64) {
        let i = match self.hot_pending.iter().position(|h| h.0 == line) {
            Some(i) => i,
            None => {
                self.hot_pending.push((line, 0, 0));
                self.hot_pending.len() - 1
            }
        };
        &mut self.hot_pending[i]
    }

    /// Adds the batched per-function and hot-line counts of the line access just modelled.
    /// Only sharing messages about the accessed line record its virtual address, as before.
    fn flush_pending(&mut self) {
        if self.func_msgs > 0 {
            self.stats.add_func_n(self.func, FuncCtr::CohMsgs, self.func_msgs);
            self.func_msgs = 0;
        }
        if self.func_invalidations > 0 {
            self.stats.add_func_n(self.func, FuncCtr::Invalidations, self.func_invalidations);
            self.func_invalidations = 0;
        }
        for i in 0..self.hot_pending.len() {
            let (line, msgs, invalidations) = self.hot_pending[i];
            let vaddr = if line == self.current_line && msgs > 0 { self.vaddr_line } else { 0 };
            self.stats.hot_line(line, vaddr, msgs, invalidations);
        }
        self.hot_pending.clear();
    }

    /// Reads the line from memory for `requester`; returns the latency from the home on
    /// (home -> controller, device read, controller -> requester) and sets the stall cause.
    fn memory_read(&mut self, line: u64, home: Pos, mc_id: usize, requester: Pos) -> u64 {
        let mc = self.topo.mc_pos[mc_id];
        self.send(Msg::MemRd, home, mc, line);
        let kind = self.mem.place(line).kind;
        let queue = self.controller_access(kind as usize, mc_id, false);
        self.queue_cycles += queue;
        self.stats.device_access(kind, line, false);
        self.cause = Cause::memory(kind);
        self.trace_request(line, false);
        self.send(Msg::Data, mc, requester, line);
        self.hop_cycles(home, mc) + queue + self.mem_read_cycles[kind as usize] + self.hop_cycles(mc, requester)
    }

    #[inline]
    fn hop_cycles(&self, a: Pos, b: Pos) -> u64 {
        hops(a, b) * self.params.timing.hop as u64
    }

    /// Latency from the home on of a forward: home -> holder, its L2 read, holder -> requester.
    fn forward_cycles(&mut self, home: Pos, holder: Pos, requester: Pos, dirty: bool) -> u64 {
        let t = &self.params.timing;
        let (work, cause) = if dirty { (t.fwd_dirty, Cause::FwdDirty) } else { (t.fwd_clean, Cause::FwdClean) };
        self.cause = cause;
        self.hop_cycles(home, holder) + work as u64 + self.hop_cycles(holder, requester)
    }

    /// Requester -> home and the directory lookup: the start of every request's path.
    fn request_cycles(&self, requester: Pos, home: Pos) -> u64 {
        self.hop_cycles(requester, home) + self.params.timing.dir as u64
    }

    fn memory_write(&mut self, line: u64, home: Pos, mc_id: usize) {
        self.send(Msg::MemWr, home, self.topo.mc_pos[mc_id], line);
        let kind = self.mem.place(line).kind;
        self.controller_access(kind as usize, mc_id, true);
        self.stats.device_access(kind, line, true);
        self.trace_request(line, true);
    }

    /// Hands a memory request to the NVMain trace, if one is written.
    #[inline]
    fn trace_request(&mut self, line: u64, write: bool) {
        let Some(timing) = self.nvmain.as_ref().map(|t| t.timing) else { return };
        let now = if timing == TraceClock::Modelled { self.clock_ns(self.vcpu) } else { 0.0 };
        if let Some(trace) = self.nvmain.as_mut() {
            trace.request(&self.mem, line, write, self.core, now);
        }
    }

    fn count_invalidation(&mut self, line: u64) {
        self.stats.add(Ctr::CohInvalidations, 1);
        self.func_invalidations += 1;
        self.hot(line).2 += 1;
    }

    /// Removes the line from tile `x` (its L2 and L1Ds) because of coherence.
    fn invalidate_tile(&mut self, x: usize, line: u64, entry: &mut DirEntry) {
        self.drop_private(x, line, usize::MAX);
        let s2 = self.l2_slot(x, line);
        let holders = self.l2[x].aux(s2);
        for local in bits(holders as u128) {
            let core = self.tile_core(x, local);
            self.forget(core, line);
            if let Some(s1) = self.l1[core].find(line) {
                self.l1[core].remove(s1);
            }
            entry.l1_lost_to_coherence |= bit(core);
        }
        self.stats.add(Ctr::L1dInvalidations, holders.count_ones() as u64);
        self.l2[x].remove(s2);
        entry.l2_lost_to_coherence |= bit(x);
        self.count_invalidation(line);
    }

    /// Invalidates every sharer except the requester and `skip`; acks go to the requester.
    /// Returns the latency from the home on of the slowest ack (invalidations go out in
    /// parallel), or `None` without sharers to invalidate.
    fn invalidate_sharers(
        &mut self,
        line: u64,
        entry: &mut DirEntry,
        home: Pos,
        requester: usize,
        skip: u8,
    ) -> Option<u64> {
        let me = self.pos(requester);
        let mut others = entry.sharers & !bit(requester);
        if skip != NO_TILE {
            others &= !bit(skip as usize);
        }
        let mut slowest = None;
        for x in bits(others) {
            let at = self.pos(x);
            self.send(Msg::Inv, home, at, line);
            self.send(Msg::InvAck, at, me, line);
            self.invalidate_tile(x, line, entry);
            let round = self.hop_cycles(home, at) + self.params.timing.inv as u64 + self.hop_cycles(at, me);
            slowest = slowest.max(Some(round));
        }
        slowest
    }

    fn request_gets(&mut self, tile: usize, line: u64, e: &mut DirEntry) -> u8 {
        let r = self.line_route(line);
        let home = r.home_pos;
        let me = self.pos(tile);
        self.send(Msg::GetS, me, home, line);
        let mut lat = self.request_cycles(me, home);
        let (state, owner) = match e.state {
            DirState::Uncached => {
                lat += self.llc_or_memory_read(line, r, me, false);
                e.state = DirState::Owned;
                e.sharers = bit(tile);
                (T_E, tile as u8)
            }
            DirState::Shared => {
                e.sharers |= bit(tile);
                if e.owner != NO_TILE {
                    let f = e.owner as usize;
                    let at = self.pos(f);
                    let s2 = self.l2_slot(f, line);
                    // An O holder forwards its dirty line and stays the forwarder; an F holder
                    // hands the F role to the requester.
                    let dirty = self.l2[f].state(s2) == T_O;
                    self.send(Msg::FwdGetS, home, at, line);
                    self.send(Msg::DataCache, at, me, line);
                    lat += self.forward_cycles(home, at, me, dirty);
                    if dirty {
                        (T_S, f as u8)
                    } else {
                        self.l2[f].set_state(s2, T_S);
                        (T_F, tile as u8)
                    }
                } else {
                    lat += self.llc_or_memory_read(line, r, me, false);
                    (T_F, tile as u8)
                }
            }
            DirState::Owned => {
                let o = e.owner as usize;
                let at = self.pos(o);
                self.send(Msg::FwdGetS, home, at, line);
                self.send(Msg::DataCache, at, me, line);
                let s2 = self.l2_slot(o, line);
                let dirty = self.l2[o].state(s2) == T_M;
                // MOESIF keeps the dirty line in the owner (O); MESIF writes it back (off the
                // requester's critical path), into the home's LLC slice if there is one.
                let keep = dirty && self.moesif;
                lat += self.forward_cycles(home, at, me, dirty);
                if keep {
                    self.stats.add(Ctr::DowngradesToO, 1);
                } else if dirty {
                    self.send(Msg::Wb, at, home, line);
                    self.absorb_writeback(line, r);
                }
                self.l2[o].set_state(s2, if keep { T_O } else { T_S });
                for local in bits(self.l2[o].aux(s2) as u128) {
                    let core = self.tile_core(o, local);
                    self.forget(core, line);
                    if let Some(s1) = self.l1[core].find(line) {
                        self.l1[core].set_state(s1, L1_S);
                    }
                }
                e.state = DirState::Shared;
                e.sharers = bit(o) | bit(tile);
                if keep {
                    (T_S, o as u8)
                } else {
                    (T_F, tile as u8)
                }
            }
        };
        e.owner = owner;
        self.lat += lat;
        state
    }

    fn request_getm(&mut self, tile: usize, line: u64, e: &mut DirEntry) {
        let r = self.line_route(line);
        let home = r.home_pos;
        let me = self.pos(tile);
        self.send(Msg::GetM, me, home, line);
        // From the home on, the data and the invalidation acks travel in parallel.
        let from_home = match e.state {
            DirState::Uncached => self.llc_or_memory_read(line, r, me, true),
            DirState::Shared => {
                let f = e.owner;
                let invs = self.invalidate_sharers(line, e, home, tile, f);
                let data = if f != NO_TILE {
                    let at = self.pos(f as usize);
                    let dirty = self.l2[f as usize].state(self.l2_slot(f as usize, line)) == T_O;
                    self.send(Msg::FwdGetM, home, at, line);
                    self.send(Msg::DataCache, at, me, line);
                    self.invalidate_tile(f as usize, line, e);
                    self.forward_cycles(home, at, me, dirty)
                } else {
                    self.llc_or_memory_read(line, r, me, true)
                };
                data.max(invs.unwrap_or(0))
            }
            DirState::Owned => {
                let o = e.owner as usize;
                let at = self.pos(o);
                let s2 = self.l2_slot(o, line);
                let dirty = self.l2[o].state(s2) == T_M;
                self.send(Msg::FwdGetM, home, at, line);
                self.send(Msg::DataCache, at, me, line);
                self.invalidate_tile(o, line, e);
                self.forward_cycles(home, at, me, dirty)
            }
        };
        self.lat += self.request_cycles(me, home) + from_home;
        e.state = DirState::Owned;
        e.owner = tile as u8;
        e.sharers = bit(tile);
    }

    /// Data for a request that no tile can forward: from the home's LLC slice if it holds the
    /// line (`take`: a GetM removes it there, the requester's M copy now stands for it), else
    /// from memory. Returns the latency from the home on and sets the stall cause.
    fn llc_or_memory_read(&mut self, line: u64, r: LineRoute, requester: Pos, take: bool) -> u64 {
        if !self.llc.is_empty() {
            let slice = &mut self.llc[r.home as usize];
            if let Some(slot) = slice.find(line) {
                if take {
                    slice.remove(slot);
                } else {
                    slice.touch(slot);
                }
                self.stats.add(Ctr::LlcHits, 1);
                self.send(Msg::DataLlc, r.home_pos, requester, line);
                self.cause = Cause::Llc;
                return self.params.timing.llc as u64 + self.hop_cycles(r.home_pos, requester);
            }
            self.stats.add(Ctr::LlcMisses, 1);
        }
        self.memory_read(line, r.home_pos, r.mc as usize, requester)
    }

    /// A dirty line arriving at its home (a PutM, an O eviction, a MESIF write-back): into the
    /// LLC slice if there is one, else written to memory.
    fn absorb_writeback(&mut self, line: u64, r: LineRoute) {
        if self.llc.is_empty() {
            self.memory_write(line, r.home_pos, r.mc as usize);
        } else {
            self.stats.add(Ctr::LlcDirtyFills, 1);
            self.llc_fill(r, line, true);
        }
    }

    /// Puts `line` into its home's LLC slice (or marks it used, and dirty if `dirty`); a dirty
    /// victim is written to memory, a clean one dropped.
    fn llc_fill(&mut self, r: LineRoute, line: u64, dirty: bool) {
        self.stats.add(Ctr::LlcFills, 1);
        let slice = r.home as usize;
        if let Some(slot) = self.llc[slice].find(line) {
            self.llc[slice].touch(slot);
            if dirty {
                self.llc[slice].set_state(slot, LLC_DIRTY);
            }
            return;
        }
        let (slot, victim) = self.llc[slice].victim(line);
        if let Some(old) = victim {
            self.stats.add(Ctr::LlcEvictions, 1);
            if self.llc[slice].state(slot) == LLC_DIRTY {
                self.stats.add(Ctr::LlcWritebacks, 1);
                let (home, mc) = self.route(old);
                self.memory_write(old, home, mc);
            }
        }
        self.llc[slice].fill(slot, line, if dirty { LLC_DIRTY } else { LLC_CLEAN });
    }

    fn upgrade(&mut self, tile: usize, line: u64, e: &mut DirEntry) {
        let (home, _) = self.route(line);
        let me = self.pos(tile);
        self.send(Msg::Upgrade, me, home, line);
        let invs = self.invalidate_sharers(line, e, home, tile, NO_TILE);
        self.send(Msg::Ack, home, me, line);
        // The requester may write once it has the home's ack and every sharer's ack.
        let ack = self.hop_cycles(home, me);
        self.lat += self.request_cycles(me, home) + ack.max(invs.unwrap_or(0));
        self.cause = Cause::Upgrade;
        e.state = DirState::Owned;
        e.owner = tile as u8;
        e.sharers = bit(tile);
    }

    fn l2_evict(&mut self, tile: usize, slot: usize, line: u64) {
        let state = self.l2[tile].state(slot);
        let d = self.l2[tile].word(slot) as usize;
        for local in bits(self.l2[tile].aux(slot) as u128) {
            let core = self.tile_core(tile, local);
            self.forget(core, line);
            if let Some(s1) = self.l1[core].find(line) {
                self.l1[core].remove(s1);
                self.stats.add(Ctr::L2BackInvalidations, 1);
            }
        }
        self.l2[tile].remove(slot);
        self.drop_private(tile, line, usize::MAX);
        self.stats.add(Ctr::L2Evictions, 1);
        if self.checker {
            self.touched.push(line);
        }
        let r = self.line_route(line);
        let (home, me) = (r.home_pos, self.pos(tile));
        let last_copy = self.dir.entries[d].sharers & !bit(tile) == 0;
        match state {
            T_M | T_O => {
                self.stats.add(Ctr::L2Writebacks, 1);
                self.send(Msg::PutM, me, home, line);
                self.absorb_writeback(line, r);
            }
            _ => {
                let put = if state == T_E { Msg::PutE } else { Msg::PutS };
                if last_copy && !self.llc.is_empty() {
                    // The last clean copy on chip goes to the LLC: the put carries the data.
                    self.send_flits(put, me, home, line, self.data_flits);
                    self.llc_fill(r, line, false);
                } else {
                    self.send(put, me, home, line);
                }
            }
        }
        let e = &mut self.dir.entries[d];
        e.sharers &= !bit(tile);
        e.l2_lost_to_coherence &= !bit(tile);
        if e.owner == tile as u8 {
            e.owner = NO_TILE;
        }
        if e.sharers == 0 {
            e.state = DirState::Uncached;
            e.owner = NO_TILE;
        }
    }

    /// Dirty lines per memory device on the chip: M and O lines in the L2s (an M line in an
    /// L1D is M in its L2) and dirty LLC lines that no L2 holds dirty, each counted once: the
    /// memory writes a region leaves behind. A scan of every L2 and LLC slot.
    pub fn dirty_lines(&self) -> [u64; N_DEVICES] {
        let mut out = [0u64; N_DEVICES];
        for cache in &self.l2 {
            for (slot, line) in cache.lines() {
                if matches!(cache.state(slot), T_M | T_O) {
                    out[self.mem.place(line).kind as usize] += 1;
                }
            }
        }
        for cache in &self.llc {
            for (slot, line) in cache.lines() {
                if cache.state(slot) == LLC_DIRTY && !self.dirty_in_an_l2(line) {
                    out[self.mem.place(line).kind as usize] += 1;
                }
            }
        }
        out
    }

    fn dirty_in_an_l2(&self, line: u64) -> bool {
        let Some(e) = self.dir.get(line) else { return false };
        e.owner != NO_TILE
            && self.l2[e.owner as usize]
                .find(line)
                .is_some_and(|s| matches!(self.l2[e.owner as usize].state(s), T_M | T_O))
    }
}
