//! Counters, kept per statistics slot ("total", "roi", other regions and phases), and the
//! scalar statistics derived from them (`report.rs` writes them as stats.json). Every event
//! goes to all active slots; slot 0 ("total") is always active.

use crate::directory::LineMap;
use crate::lock_sites::{self, LockContext, SiteTable};
use crate::memory::{DeviceKind, DEVICE_KINDS, N_DEVICES};
use crate::params::{Params, LINE_BYTES};

macro_rules! counters {
    ($($variant:ident => $name:literal,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Ctr { $($variant,)* }
        pub const CTR_NAMES: &[&str] = &[$($name,)*];
    };
}

counters! {
    Insts => "insts",
    Loads => "mem.loads",
    Stores => "mem.stores",
    IoAccesses => "mem.io_accesses",
    Atomics => "mem.atomics",
    L1dHits => "l1d.hits",
    L1dMisses => "l1d.misses",
    L1dMissCold => "l1d.misses.cold",
    L1dMissCapacity => "l1d.misses.capacity",
    L1dMissCoherence => "l1d.misses.coherence",
    L1dUpgrades => "l1d.upgrades",
    L1dWritebacks => "l1d.writebacks",
    L1dSiblingInvalidations => "l1d.sibling_invalidations",
    L2Hits => "l2.hits",
    L2Misses => "l2.misses",
    L2MissCold => "l2.misses.cold",
    L2MissCapacity => "l2.misses.capacity",
    L2MissCoherence => "l2.misses.coherence",
    L2Upgrades => "l2.upgrades",
    L2Evictions => "l2.evictions",
    L2Writebacks => "l2.writebacks",
    L2BackInvalidations => "l2.back_invalidations",
    CohInvalidations => "coh.invalidations",
    QueueLate => "mem.queue.late",
    DowngradesToO => "coh.downgrades_to_o",
    LlcHits => "llc.hits",
    LlcMisses => "llc.misses",
    LlcFills => "llc.fills",
    LlcDirtyFills => "llc.dirty_fills",
    LlcEvictions => "llc.evictions",
    LlcWritebacks => "llc.writebacks",
    Pl2Hits => "l2.private_hits",
    L1dInvalidations => "l1d.invalidations",
    Races => "coh.races",
}

pub const N_CTR: usize = CTR_NAMES.len();

/// Mesh message types. Data-carrying types cost `1 + 64/flit_bytes` flits, the others 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    GetS,
    GetM,
    Upgrade,
    FwdGetS,
    FwdGetM,
    Inv,
    InvAck,
    Data,
    DataCache,
    Ack,
    PutM,
    PutE,
    PutS,
    Wb,
    MemRd,
    MemWr,
    DataLlc,
}

pub const MSG_NAMES: &[&str] = &[
    "gets",
    "getm",
    "upgrade",
    "fwd_gets",
    "fwd_getm",
    "inv",
    "inv_ack",
    "data",
    "data_cache",
    "ack",
    "putm",
    "pute",
    "puts",
    "wb",
    "mem_rd",
    "mem_wr",
    "data_llc",
];
pub const N_MSG: usize = MSG_NAMES.len();

impl Msg {
    /// Traffic that exists only because another tile holds the line (hot-line ranking).
    pub fn is_sharing(self) -> bool {
        matches!(
            self,
            Msg::FwdGetS | Msg::FwdGetM | Msg::Inv | Msg::InvAck | Msg::DataCache | Msg::Upgrade | Msg::Ack | Msg::Wb
        )
    }

    pub fn carries_data(self) -> bool {
        matches!(self, Msg::Data | Msg::DataCache | Msg::PutM | Msg::Wb | Msg::MemWr | Msg::DataLlc)
    }
}

/// Per-function event counts (instructions are kept outside the model, see `Slot::func_insts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuncCtr {
    L1dMisses,
    L2Misses,
    CohMsgs,
    Invalidations,
    StallCycles,
    /// Cycles the causal rule moved the clock up at this function's accesses (rounded).
    WaitCycles,
    /// Base cycles SMT siblings took from this function's instructions (rounded).
    SmtCycles,
}
pub const N_FUNC_CTR: usize = 7;

/// What an access stalled on: where its data came from (or the upgrade it needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    L2Hit,
    MemDram,
    MemMcdram,
    MemPcm,
    FwdClean,
    FwdDirty,
    Upgrade,
    /// Waiting at a memory controller (README "Memory bandwidth"): split off the read's cause.
    Queue,
    /// A hit in the home's LLC slice.
    Llc,
    MemStorage,
}
pub const CAUSE_NAMES: &[&str] = &[
    "l2_hit",
    "mem.dram",
    "mem.mcdram",
    "mem.pcm",
    "fwd_clean",
    "fwd_dirty",
    "upgrade",
    "queue",
    "llc",
    "mem.storage",
];
pub const N_CAUSE: usize = CAUSE_NAMES.len();

impl Cause {
    pub fn memory(kind: DeviceKind) -> Cause {
        match kind {
            DeviceKind::Dram => Cause::MemDram,
            DeviceKind::Mcdram => Cause::MemMcdram,
            DeviceKind::Pcm => Cause::MemPcm,
            DeviceKind::Storage => Cause::MemStorage,
        }
    }
}

#[derive(Clone, Copy, Default, Debug)]
pub struct HotLine {
    pub coh_msgs: u64,
    pub invalidations: u64,
    pub last_vaddr: u64,
    /// Cycles vCPUs waited for this line (the causal rule).
    pub wait_cycles: f64,
}

pub struct Slot {
    pub name: String,
    pub entered: u64,
    pub ctr: [u64; N_CTR],
    /// Per message type: messages, flits, hops.
    pub msg: [[u64; 3]; N_MSG],
    pub dev_reads: [u64; N_DEVICES],
    pub dev_writes: [u64; N_DEVICES],
    /// Dirty (M) lines per device still in the caches when this slot last closed.
    pub dirty_at_end: [u64; N_DEVICES],
    /// Per memory controller: lines moved (reads + writes) and the controller time they took
    /// (ns: 64 bytes / the device's bandwidth each).
    pub mc_lines: Vec<u64>,
    pub mc_busy_ns: Vec<f64>,
    /// Stall cycles per cause, summed over vCPUs, before the `core.mlp` division.
    pub stall: [u64; N_CAUSE],
    /// Per vCPU: stall cycles (before the division), instructions, and idle cycles (its clock
    /// moved up to rejoin the others: "Memory bandwidth").
    pub vcpu_stall: Vec<u64>,
    pub vcpu_insts: Vec<u64>,
    pub vcpu_idle: Vec<f64>,
    /// Per vCPU: wait cycles (the causal rule moved its clock up to data another vCPU stored).
    pub vcpu_wait: Vec<f64>,
    /// Per vCPU: base cycles its SMT siblings took from it (`smt.rs`).
    pub vcpu_smt: Vec<f64>,
    pub pcm_line_writes: LineMap<u32>,
    pub hot_lines: LineMap<HotLine>,
    pub funcs: Vec<[u64; N_FUNC_CTR]>,
    pub func_insts: Vec<u64>,
    /// Per (slow path, call site): the lock waits of `lock_sites.rs`.
    pub lock_sites: SiteTable,
    /// Per span number (`spans.rs`): spans timed, their cycles, the idle cycles left out of
    /// them, and spans lost.
    pub spans: Vec<SpanTotals>,
    pub host_wall_s: f64,
    pub host_cpu_s: f64,
}

impl Slot {
    pub fn new(name: &str, n_funcs: usize) -> Slot {
        Slot {
            name: name.to_string(),
            entered: 0,
            ctr: [0; N_CTR],
            msg: [[0; 3]; N_MSG],
            dev_reads: [0; N_DEVICES],
            dev_writes: [0; N_DEVICES],
            dirty_at_end: [0; N_DEVICES],
            mc_lines: Vec::new(),
            mc_busy_ns: Vec::new(),
            stall: [0; N_CAUSE],
            vcpu_stall: Vec::new(),
            vcpu_insts: Vec::new(),
            vcpu_idle: Vec::new(),
            vcpu_wait: Vec::new(),
            vcpu_smt: Vec::new(),
            pcm_line_writes: LineMap::default(),
            hot_lines: LineMap::default(),
            funcs: vec![[0; N_FUNC_CTR]; n_funcs],
            func_insts: vec![0; n_funcs],
            lock_sites: SiteTable::default(),
            spans: Vec::new(),
            host_wall_s: 0.0,
            host_cpu_s: 0.0,
        }
    }

    pub fn get(&self, c: Ctr) -> u64 {
        self.ctr[c as usize]
    }

    pub fn msgs(&self, m: Msg) -> u64 {
        self.msg[m as usize][0]
    }

    pub fn total_msgs(&self) -> u64 {
        self.msg.iter().map(|m| m[0]).sum()
    }

    pub fn total_hops(&self) -> u64 {
        self.msg.iter().map(|m| m[2]).sum()
    }

    pub fn total_flits(&self) -> u64 {
        self.msg.iter().map(|m| m[1]).sum()
    }

    fn pcm_max_line_writes(&self) -> u64 {
        self.pcm_line_writes.values().copied().max().unwrap_or(0) as u64
    }

    /// The scalar statistics of this slot, in their fixed output order.
    pub fn scalars(&self, p: &Params) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = Vec::with_capacity(128);
        let c = |x: Ctr| self.get(x) as f64;
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        out.push(("insts".into(), c(Ctr::Insts)));
        out.push(("mem.accesses".into(), c(Ctr::Loads) + c(Ctr::Stores)));
        for (i, name) in CTR_NAMES.iter().enumerate().skip(1) {
            out.push((name.to_string(), self.ctr[i] as f64));
        }
        let l1_accesses = c(Ctr::L1dHits) + c(Ctr::L1dMisses) + c(Ctr::L1dUpgrades);
        out.push(("l1d.accesses".into(), l1_accesses));
        out.push(("l1d.miss_rate".into(), ratio(c(Ctr::L1dMisses), l1_accesses)));
        let l2_accesses = c(Ctr::L2Hits) + c(Ctr::L2Misses);
        out.push(("l2.accesses".into(), l2_accesses));
        out.push(("l2.miss_rate".into(), ratio(c(Ctr::L2Misses), l2_accesses)));
        out.push(("coh.msgs".into(), self.total_msgs() as f64));
        out.push(("coh.flits".into(), self.total_flits() as f64));
        out.push(("coh.hops".into(), self.total_hops() as f64));
        for (i, name) in MSG_NAMES.iter().enumerate() {
            out.push((format!("coh.msgs.{name}"), self.msg[i][0] as f64));
        }
        for (i, name) in MSG_NAMES.iter().enumerate() {
            out.push((format!("coh.flits.{name}"), self.msg[i][1] as f64));
        }
        for (i, name) in MSG_NAMES.iter().enumerate() {
            out.push((format!("coh.hops.{name}"), self.msg[i][2] as f64));
        }
        let bits = (LINE_BYTES * 8) as f64;
        let (mut reads, mut writes, mut energy, mut time, mut dirty) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for kind in DEVICE_KINDS {
            let dev = kind.params(p);
            let r = self.dev_reads[kind as usize] as f64;
            let w = self.dev_writes[kind as usize] as f64;
            let e = r * bits * dev.read_nj_per_bit + w * bits * dev.write_nj_per_bit;
            let t = r * dev.read_ns + w * dev.write_ns;
            let d = self.dirty_at_end[kind as usize] as f64;
            out.push((format!("mem.{}.reads", kind.name()), r));
            out.push((format!("mem.{}.writes", kind.name()), w));
            out.push((format!("mem.{}.energy_nj", kind.name()), e));
            out.push((format!("mem.{}.service_ns", kind.name()), t));
            out.push((format!("mem.{}.dirty_at_end", kind.name()), d));
            out.push((format!("mem.{}.bytes", kind.name()), (r + w) * LINE_BYTES as f64));
            if kind == DeviceKind::Storage {
                continue; // the totals are main memory's
            }
            reads += r;
            writes += w;
            energy += e;
            time += t;
            dirty += d;
        }
        out.push(("mem.reads".into(), reads));
        out.push(("mem.writes".into(), writes));
        out.push(("mem.energy_nj".into(), energy));
        out.push(("mem.service_ns".into(), time));
        out.push(("mem.dirty_at_end".into(), dirty));
        out.push(("mem.bytes".into(), (reads + writes) * LINE_BYTES as f64));
        // Per controller (DDR ones first, then the EDCs; README "Memory bandwidth").
        let modelled_ns = self.vcpu_cycles(p).iter().map(|v| v.cycles).fold(0.0, f64::max) / p.timing.ghz;
        let n_mc = p.mc_ddr.len() + p.mc_mcdram.len();
        for k in 0..n_mc {
            let lines = self.mc_lines.get(k).copied().unwrap_or(0) as f64;
            let busy = self.mc_busy_ns.get(k).copied().unwrap_or(0.0);
            out.push((format!("mem.mc{k}.bytes"), lines * LINE_BYTES as f64));
            out.push((format!("mem.mc{k}.utilisation"), if modelled_ns > 0.0 { busy / modelled_ns } else { 0.0 }));
        }
        let max_writes = self.pcm_max_line_writes() as f64;
        out.push(("mem.pcm.lines_written".into(), self.pcm_line_writes.len() as f64));
        out.push(("mem.pcm.max_line_writes".into(), max_writes));
        // How many repetitions of this slot's execution until the hottest line wears out.
        let lifetime = if max_writes > 0.0 && p.pcm.endurance > 0.0 { p.pcm.endurance / max_writes } else { 0.0 };
        out.push(("mem.pcm.lifetime_runs".into(), lifetime));
        self.time_scalars(p, &mut out);
        out
    }

    /// Per vCPU: its instructions, stall cycles (before the division), SMT, idle and wait
    /// cycles and modelled cycles = instructions x CPI + SMT + stall / MLP + idle + wait.
    pub fn vcpu_cycles(&self, p: &Params) -> Vec<VcpuCycles> {
        let t = &p.timing;
        let n = [&self.vcpu_idle, &self.vcpu_wait, &self.vcpu_smt]
            .iter()
            .map(|v| v.len())
            .fold(self.vcpu_insts.len().max(self.vcpu_stall.len()), usize::max);
        (0..n)
            .map(|v| {
                let insts = self.vcpu_insts.get(v).copied().unwrap_or(0);
                let stall = self.vcpu_stall.get(v).copied().unwrap_or(0);
                let idle = self.vcpu_idle.get(v).copied().unwrap_or(0.0);
                let wait = self.vcpu_wait.get(v).copied().unwrap_or(0.0);
                let smt = self.vcpu_smt.get(v).copied().unwrap_or(0.0);
                let cycles = insts as f64 * t.cpi + smt + stall as f64 / t.mlp + idle + wait;
                VcpuCycles { insts, stall, smt, idle, wait, cycles }
            })
            .collect()
    }

    /// The `time.*` statistics (README "Modelled time").
    fn time_scalars(&self, p: &Params, out: &mut Vec<(String, f64)>) {
        let t = &p.timing;
        let per_vcpu = self.vcpu_cycles(p);
        let (mut critical, mut max_cycles, mut sum_cycles) = (0usize, 0.0f64, 0.0f64);
        let (mut idle, mut wait, mut smt) = (0.0f64, 0.0f64, 0.0f64);
        for (v, c) in per_vcpu.iter().enumerate() {
            sum_cycles += c.cycles;
            idle += c.idle;
            wait += c.wait;
            smt += c.smt;
            if c.cycles > max_cycles {
                (critical, max_cycles) = (v, c.cycles);
            }
        }
        let insts = self.get(Ctr::Insts) as f64;
        let stall: u64 = self.stall.iter().sum();
        out.push(("time.modelled_ns".into(), max_cycles / t.ghz));
        out.push(("time.cycles".into(), max_cycles));
        out.push(("time.critical_vcpu".into(), critical as f64));
        out.push(("time.cycles.sum".into(), sum_cycles));
        out.push(("time.base_cycles".into(), insts * t.cpi));
        out.push(("time.cpi".into(), if insts > 0.0 { (sum_cycles - idle - wait) / insts } else { 0.0 }));
        out.push(("time.idle".into(), idle));
        out.push(("time.wait".into(), wait));
        out.push(("time.smt".into(), smt));
        out.push(("time.stall".into(), stall as f64));
        out.push(("time.stall.effective".into(), stall as f64 / t.mlp));
        for (i, name) in CAUSE_NAMES.iter().enumerate() {
            out.push((format!("time.stall.{name}"), self.stall[i] as f64));
        }
        for (n, s) in self.spans.iter().enumerate() {
            if s.count + s.lost == 0 {
                continue;
            }
            out.push((format!("time.span{n}.count"), s.count as f64));
            out.push((format!("time.span{n}.cycles"), s.cycles));
            out.push((format!("time.span{n}.modelled_ns"), s.cycles / t.ghz));
            out.push((format!("time.span{n}.idle_cycles"), s.idle_cycles));
            out.push((format!("time.span{n}.lost"), s.lost as f64));
        }
    }
}

/// One span number's tally in a slot (`spans.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SpanTotals {
    pub count: u64,
    pub cycles: f64,
    pub idle_cycles: f64,
    pub lost: u64,
}

/// One vCPU's share of a slot's modelled time (`Slot::vcpu_cycles`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VcpuCycles {
    pub insts: u64,
    pub stall: u64,
    pub smt: f64,
    pub idle: f64,
    pub wait: f64,
    pub cycles: f64,
}

/// Adds `x` to `v[i]`, growing `v` with zeros to reach `i` (per-vCPU and per-controller tallies
/// are sized by the highest index seen).
#[inline]
pub fn add_at<T: Copy + Default + std::ops::AddAssign>(v: &mut Vec<T>, i: usize, x: T) {
    if i >= v.len() {
        v.resize(i + 1, T::default());
    }
    v[i] += x;
}

/// Keys copied to the flat summary (besides every `coh.msgs.<type>` and `mem.<dev>.*`).
pub const SUMMARY_KEYS: &[&str] = &[
    "insts",
    "mem.accesses",
    "mem.loads",
    "mem.stores",
    "l1d.accesses",
    "l1d.hits",
    "l1d.misses",
    "l1d.miss_rate",
    "l1d.misses.cold",
    "l1d.misses.capacity",
    "l1d.misses.coherence",
    "l1d.upgrades",
    "l1d.writebacks",
    "l1d.invalidations",
    "l2.accesses",
    "l2.hits",
    "l2.misses",
    "l2.miss_rate",
    "l2.misses.cold",
    "l2.misses.capacity",
    "l2.misses.coherence",
    "l2.writebacks",
    "l2.private_hits",
    "coh.msgs",
    "coh.flits",
    "coh.hops",
    "coh.invalidations",
    "mem.reads",
    "mem.writes",
    "mem.energy_nj",
    "mem.service_ns",
    "mem.dirty_at_end",
    "mem.bytes",
    "mem.queue.late",
    "coh.downgrades_to_o",
    "coh.races",
    "mem.pcm.max_line_writes",
    "mem.pcm.lifetime_runs",
];

pub fn in_summary(name: &str) -> bool {
    SUMMARY_KEYS.contains(&name)
        || name.starts_with("coh.msgs.")
        || name.starts_with("time.")
        || name.starts_with("llc.")
        || name.starts_with("mem.mc")
        || (name.starts_with("mem.")
            && ["dram.", "mcdram.", "pcm.", "storage."].iter().any(|d| name[4..].starts_with(d)))
}

/// `Stats::hot` indices: loads, stores, L1D hits (the per-access counters).
pub const HOT_LOADS: usize = 0;
pub const HOT_STORES: usize = 1;
pub const HOT_L1D_HITS: usize = 2;
const HOT_CTRS: [Ctr; 3] = [Ctr::Loads, Ctr::Stores, Ctr::L1dHits];

pub struct Stats {
    /// The most frequent counters, accumulated here and added to the active slots by
    /// `settle`, which runs before the set of active slots changes and before any output.
    pub hot: [u64; 3],
    pub slots: Vec<Slot>,
    /// Indices of the slots that receive events now; always starts with 0 ("total").
    pub active: Vec<usize>,
    pub n_funcs: usize,
    /// Which functions are lock slow paths and the site each vCPU's slow path serves.
    pub locks: LockContext,
}

pub const TOTAL: usize = 0;
pub const ROI: usize = 1;

impl Stats {
    pub fn new(n_funcs: usize) -> Stats {
        Stats {
            hot: [0; 3],
            slots: vec![Slot::new("total", n_funcs), Slot::new("roi", n_funcs)],
            active: vec![TOTAL],
            n_funcs,
            locks: LockContext::default(),
        }
    }

    pub fn settle(&mut self) {
        for (i, c) in HOT_CTRS.iter().enumerate() {
            let n = std::mem::take(&mut self.hot[i]);
            for &s in &self.active {
                self.slots[s].ctr[*c as usize] += n;
            }
        }
    }

    pub fn slot_named(&mut self, name: &str) -> usize {
        if let Some(i) = self.slots.iter().position(|s| s.name == name) {
            return i;
        }
        self.slots.push(Slot::new(name, self.n_funcs));
        self.slots.len() - 1
    }

    #[inline]
    pub fn add(&mut self, c: Ctr, n: u64) {
        if let [only] = self.active[..] {
            self.slots[only].ctr[c as usize] += n;
            return;
        }
        for &s in &self.active {
            self.slots[s].ctr[c as usize] += n;
        }
    }

    #[inline]
    pub fn add_func(&mut self, func: u32, c: FuncCtr) {
        if (func as usize) < self.n_funcs {
            for &s in &self.active {
                self.slots[s].funcs[func as usize][c as usize] += 1;
            }
        }
    }

    #[inline]
    pub fn add_func_n(&mut self, func: u32, c: FuncCtr, n: u64) {
        if (func as usize) < self.n_funcs {
            for &s in &self.active {
                self.slots[s].funcs[func as usize][c as usize] += n;
            }
        }
    }

    #[inline]
    pub fn msg(&mut self, m: Msg, flits: u64, hops: u64) {
        for &s in &self.active {
            let e = &mut self.slots[s].msg[m as usize];
            e[0] += 1;
            e[1] += flits;
            e[2] += hops;
        }
    }

    pub fn hot_line(&mut self, line: u64, vaddr: u64, msgs: u64, invalidations: u64) {
        for &s in &self.active {
            let h = self.slots[s].hot_lines.entry(line).or_default();
            h.coh_msgs += msgs;
            h.invalidations += invalidations;
            if vaddr != 0 {
                h.last_vaddr = vaddr;
            }
        }
    }

    /// Stall cycles of one line access by `vcpu`, to every active slot and to `func`.
    #[inline]
    pub fn stall(&mut self, vcpu: usize, cause: Cause, cycles: u64, func: u32) {
        for &s in &self.active {
            let slot = &mut self.slots[s];
            slot.stall[cause as usize] += cycles;
            add_at(&mut slot.vcpu_stall, vcpu, cycles);
            if (func as usize) < self.n_funcs {
                slot.funcs[func as usize][FuncCtr::StallCycles as usize] += cycles;
            }
        }
        if let Some(key) = self.locks.key_of(vcpu, func) {
            lock_sites::add(&mut self.slots, &self.active, key, |c| c.stall += cycles);
        }
    }

    /// `vcpu`'s clock moved up by `cycles` to rejoin the others.
    pub fn idle(&mut self, vcpu: usize, cycles: f64) {
        for &s in &self.active {
            add_at(&mut self.slots[s].vcpu_idle, vcpu, cycles);
        }
    }

    /// A span (`spans.rs`) closed: timed (`Some((cycles, idle cycles))`) or lost.
    pub fn span(&mut self, span: u8, timed: Option<(f64, f64)>) {
        for &s in &self.active {
            let spans = &mut self.slots[s].spans;
            if spans.len() <= span as usize {
                spans.resize(span as usize + 1, SpanTotals::default());
            }
            let t = &mut spans[span as usize];
            match timed {
                Some((cycles, idle)) => {
                    t.count += 1;
                    t.cycles += cycles;
                    t.idle_cycles += idle;
                }
                None => t.lost += 1,
            }
        }
    }

    /// `vcpu` waited `cycles` for `line`, stored by another vCPU, at an access of `func`.
    pub fn wait(&mut self, vcpu: usize, cycles: f64, func: u32, line: u64) {
        for &s in &self.active {
            let slot = &mut self.slots[s];
            add_at(&mut slot.vcpu_wait, vcpu, cycles);
            slot.hot_lines.entry(line).or_default().wait_cycles += cycles;
            if (func as usize) < self.n_funcs {
                slot.funcs[func as usize][FuncCtr::WaitCycles as usize] += cycles.round() as u64;
            }
        }
        if let Some(key) = self.locks.key_of(vcpu, func) {
            lock_sites::add(&mut self.slots, &self.active, key, |c| c.wait += cycles.round() as u64);
        }
    }

    /// SMT siblings took `cycles` base cycles from `vcpu` in a block of `func`.
    pub fn smt(&mut self, vcpu: usize, cycles: f64, func: u32) {
        for &s in &self.active {
            let slot = &mut self.slots[s];
            add_at(&mut slot.vcpu_smt, vcpu, cycles);
            if (func as usize) < self.n_funcs {
                slot.funcs[func as usize][FuncCtr::SmtCycles as usize] += cycles.round() as u64;
            }
        }
        if let Some(key) = self.locks.key_of(vcpu, func) {
            lock_sites::add(&mut self.slots, &self.active, key, |c| c.smt += cycles.round() as u64);
        }
    }

    /// A line moved by memory controller `mc`, taking `busy_ns` of its time.
    pub fn controller_access(&mut self, mc: usize, busy_ns: f64) {
        for &s in &self.active {
            let slot = &mut self.slots[s];
            add_at(&mut slot.mc_lines, mc, 1);
            add_at(&mut slot.mc_busy_ns, mc, busy_ns);
        }
    }

    pub fn device_access(&mut self, kind: DeviceKind, line: u64, write: bool) {
        for &s in &self.active {
            let slot = &mut self.slots[s];
            if write {
                slot.dev_writes[kind as usize] += 1;
                if kind == DeviceKind::Pcm {
                    *slot.pcm_line_writes.entry(line).or_default() += 1;
                }
            } else {
                slot.dev_reads[kind as usize] += 1;
            }
        }
    }
}
