//! Lock waits per call site: which lock a slow path waits for, named by the kernel function
//! that called the lock API (plugin/README.md, stats.json `lock_sites`).
//!
//! At the first instruction of the kernel's out-of-line lock functions (`_raw_spin_lock*`,
//! `down_write*`, `mutex_lock*`, ...; `LockFunctions`) the glue reads the stack pointer and
//! records a *call*: (sp, return address). The return address (x86-64: the 8 bytes at RSP;
//! arm64: X30) names the calling function, the *site*; arm64's is read at the entry (X30 is
//! overwritten later), x86-64's only when a slow path works for the call, from the stack at
//! the entry sp, where it stays while the call is live (most calls take no slow path), and
//! either is symbolized only then. A slow-path function's first instruction is a probe too:
//! when its return address lies in ordinary kernel code (arm64 inlines `spin_lock`, so
//! `queued_spin_lock_slowpath` is called by the lock taker itself), that caller is the site;
//! when it lies in a lock function or another slow path, the outer call already names the
//! site. At every block of a slow path the glue reads the stack pointer again and
//! `CallSites::serving` picks the call it works for; the block's instructions, and the stall,
//! SMT and wait cycles of its accesses, go to (slow path, site) in every open region, besides
//! the leaf function as before.
//!
//! Which call a slow-path block serves, exactly, from stack pointers alone: the calls are kept
//! by their entry sp in one table for all vCPUs (stacks belong to tasks and interrupt
//! contexts, not to vCPUs: a sleeper that wakes on another vCPU finds its call), and the
//! serving call is the most recent one whose entry sp lies at most `MAX_DEPTH` bytes above
//! the block's sp (or at it: a tail call, or arm64, where a call leaves sp alone). Why that is
//! the right one:
//! - The call that led to this slow path is live, on this stack, and its entry sp is above
//!   the block's by the lock function's and slow path's frames: a few hundred bytes.
//! - A call that returned, on this stack, is either older than the serving call (it is then
//!   not the most recent) or was made after it, nested inside it (an interrupt or exception
//!   taken on the same stack while spinning): then its frame was below the interrupted
//!   frame, and once it returned the slow path's sp is above its entry sp again: excluded.
//! - An interrupt taken while spinning that switches stacks (x86-64 and arm64 move hardirqs
//!   and softirqs to the per-CPU IRQ stack) records its calls on that stack. Calls of another
//!   stack are at least the distance between the two stacks away: with `MAX_DEPTH` = 2 KiB an
//!   entry there could only match if that stack's entry were within 2 KiB of its bottom end
//!   (a 14 KiB deep kernel stack) and this block within the top of its own, with nothing
//!   between the stacks (`CONFIG_VMAP_STACK` puts a guard page there, which rules it out).
//! - Calls whose frames were left are dropped when a new call starts at or above them on the
//!   same stack (`enter` removes the entries up to `MAX_DEPTH` below its sp), so the table
//!   stays small; it is also capped (`CAP`, oldest half dropped).
//!
//! A slow-path block no call serves (no probe saw its call) goes to site `unknown`.

use std::collections::{BTreeMap, HashMap};

use crate::params::Params;
use crate::stats::{Slot, Stats};
use crate::symbols::Symbols;

/// The kernel's lock API functions, by name prefix: out-of-line spin, read/write locks,
/// rw-semaphores and mutexes (6.1; `_raw_*` exist where the architecture does not inline
/// them, e.g. x86-64; arm64 inlines the spin and rwlock ones).
const ENTRY_PREFIXES: &[&str] = &[
    "_raw_spin_lock",
    "_raw_spin_trylock",
    "_raw_read_lock",
    "_raw_read_trylock",
    "_raw_write_lock",
    "_raw_write_trylock",
    "down_read",
    "down_write",
    "mutex_lock",
    "ww_mutex_lock",
];

/// Where a waiting CPU spins or queues (6.1 names; a compiler suffix such as `.constprop.0`
/// is ignored): queued spin and rw locks, rw-semaphores, mutexes and the optimistic-spin
/// queue they share.
pub const SLOW_PATHS: &[&str] = &[
    "queued_spin_lock_slowpath",
    "native_queued_spin_lock_slowpath",
    "__pv_queued_spin_lock_slowpath",
    "queued_read_lock_slowpath",
    "queued_write_lock_slowpath",
    "rwsem_down_read_slowpath",
    "rwsem_down_write_slowpath",
    "rwsem_optimistic_spin",
    "rwsem_spin_on_owner",
    "__mutex_lock",
    "__mutex_lock_common",
    "__mutex_lock_slowpath",
    "__mutex_lock_killable_slowpath",
    "__mutex_lock_interruptible_slowpath",
    "__ww_mutex_lock",
    "__ww_mutex_lock_slowpath",
    "__ww_mutex_lock_interruptible_slowpath",
    "mutex_spin_on_owner",
    "osq_lock",
];

/// How far (bytes) a serving call's entry sp may lie above a slow-path block's sp.
pub const MAX_DEPTH: u64 = 2048;
/// At most this many calls are kept; beyond it the older half goes.
pub const CAP: usize = 1 << 14;
/// The site of a slow-path block no known call serves, or of a call whose return address is
/// not in a known kernel function.
pub const NO_SITE: u32 = u32::MAX;
/// The site of a call whose return address has not been symbolized yet (`Call::ret`).
pub const UNRESOLVED: u32 = u32::MAX - 1;

/// What a function is for lock-site tracking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Other,
    /// A lock API function: its first instruction records a call.
    Entry,
    /// A slow path (index among the slow-path symbols found, < 64): its blocks are
    /// attributed; its first instruction records a call when called from ordinary code.
    Slow(u8),
}

fn base_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// The lock functions of one kernel, from its System.map.
#[derive(Default)]
pub struct LockFunctions {
    /// Per symbol id (user-space and unknown-kernel ids included: `Other`).
    kinds: Box<[Kind]>,
    /// Probe addresses (function starts of entries and slow paths), sorted.
    probes: Vec<u64>,
}

impl LockFunctions {
    pub fn new(syms: &Symbols) -> LockFunctions {
        let mut kinds = vec![Kind::Other; syms.n_ids()];
        let mut probes = Vec::new();
        let mut n_slow = 0u8;
        for (id, start, name) in syms.functions() {
            let base = base_name(name);
            let kind = if SLOW_PATHS.contains(&base) && n_slow < 64 {
                n_slow += 1;
                Kind::Slow(n_slow - 1)
            } else if ENTRY_PREFIXES.iter().any(|p| base.starts_with(p)) {
                Kind::Entry
            } else {
                continue;
            };
            kinds[id as usize] = kind;
            probes.push(start);
        }
        probes.sort_unstable();
        LockFunctions { kinds: kinds.into_boxed_slice(), probes }
    }

    #[inline]
    pub fn kind(&self, func: u32) -> Kind {
        self.kinds.get(func as usize).copied().unwrap_or(Kind::Other)
    }

    /// Per symbol id: is it a slow path? (the statistics' view)
    pub fn slow_table(&self) -> Box<[bool]> {
        self.kinds.iter().map(|k| matches!(k, Kind::Slow(_))).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.probes.is_empty()
    }

    /// Whether a probe may lie in `[start, start + len)` (one search per translated block).
    pub fn any_probe_in(&self, start: u64, len: u64) -> bool {
        let i = self.probes.partition_point(|&a| a < start);
        self.probes.get(i).is_some_and(|&a| a - start < len)
    }

    pub fn is_probe(&self, addr: u64) -> bool {
        self.probes.binary_search(&addr).is_ok()
    }

    /// At a probe of function `probed`: the site a call from return address `ret` records,
    /// `None` if it records none (a slow path called by a lock function or another slow path:
    /// the outer call names the site). `NO_SITE` when `ret` is in no known kernel function.
    pub fn site_of_call(&self, syms: &Symbols, probed: u32, ret: u64) -> Option<u32> {
        let site = self.site_of(syms, ret);
        if matches!(self.kind(probed), Kind::Slow(_)) && site != NO_SITE && self.kind(site) != Kind::Other {
            return None;
        }
        Some(site)
    }

    /// The kernel function a return address returns into (`NO_SITE` if none is known). A
    /// call as a function's last instruction returns to the next one's start: the call's own
    /// last byte decides.
    pub fn site_of(&self, syms: &Symbols, ret: u64) -> u32 {
        let caller = if ret >> 63 == 1 { syms.function_of(ret - 1) } else { syms.user_id() };
        if caller < syms.user_id() {
            caller
        } else {
            NO_SITE
        }
    }
}

/// One lock call in progress (or returned and not yet dropped).
#[derive(Clone, Copy, Debug)]
pub struct Call {
    seq: u64,
    /// The return address, where it was read at the entry (arm64's X30; 0 on x86-64, where
    /// it stays on the stack at the entry sp while the call is live and is read from there
    /// only if a slow path works for the call: most calls take no slow path).
    pub ret: u64,
    /// `UNRESOLVED` until `ret` is symbolized (again only for calls a slow path serves).
    pub site: u32,
    /// Slow paths (by index) already counted as entered for this call.
    seen: u64,
}

impl Call {
    /// Marks slow path `slow` as entered by this call; true the first time.
    pub fn first_entry(&mut self, slow: u8) -> bool {
        let bit = 1u64 << (slow & 63);
        let first = self.seen & bit == 0;
        self.seen |= bit;
        first
    }
}

/// The lock calls seen, by entry stack pointer, for all vCPUs.
#[derive(Default)]
pub struct CallSites {
    by_sp: BTreeMap<u64, Call>,
    seq: u64,
}

impl CallSites {
    /// A lock call starts with stack pointer `sp` (at the function's first instruction).
    pub fn enter(&mut self, sp: u64, site: u32, ret: u64) {
        // Entries at or below sp on this stack belong to frames that were left.
        let low = sp.saturating_sub(MAX_DEPTH);
        while let Some((&k, _)) = self.by_sp.range(low..=sp).next() {
            self.by_sp.remove(&k);
        }
        self.seq += 1;
        self.by_sp.insert(sp, Call { seq: self.seq, ret, site, seen: 0 });
        if self.by_sp.len() > CAP {
            let keep_after = self.seq - (CAP / 2) as u64;
            self.by_sp.retain(|_, c| c.seq > keep_after);
        }
    }

    /// The call a slow-path block at stack pointer `sp` works for: the most recent with its
    /// entry sp in `[sp, sp + MAX_DEPTH]`; with its entry sp.
    pub fn serving(&mut self, sp: u64) -> Option<(u64, &mut Call)> {
        self.by_sp.range_mut(sp..=sp.saturating_add(MAX_DEPTH)).map(|(&k, c)| (k, c)).max_by_key(|(_, c)| c.seq)
    }

    pub fn len(&self) -> usize {
        self.by_sp.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_sp.is_empty()
    }
}

/// A (slow path, site) pair as one key: slow path's symbol id high, site low.
#[inline]
pub fn key(slow: u32, site: u32) -> u64 {
    (slow as u64) << 32 | site as u64
}

/// One (slow path, site)'s counts in a statistics slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteCounts {
    pub insts: u64,
    pub stall: u64,
    /// Rounded per event, as the function table's `wait_cycles`.
    pub wait: u64,
    /// Rounded per event, as the function table's SMT cycles.
    pub smt: u64,
    pub entries: u64,
}

pub type SiteTable = HashMap<u64, SiteCounts>;

/// What the statistics need: which functions are slow paths, and per vCPU the site of the
/// slow-path block it runs (set by `block`, read by the access-time hooks).
#[derive(Default)]
pub struct LockContext {
    slow: Box<[bool]>,
    current: Vec<u32>,
}

impl LockContext {
    pub fn new(slow: Box<[bool]>) -> LockContext {
        LockContext { slow, current: Vec::new() }
    }

    /// The key an access of `func` by `vcpu` counts under, if `func` is a slow path.
    #[inline]
    pub fn key_of(&self, vcpu: usize, func: u32) -> Option<u64> {
        if !self.slow.get(func as usize).copied().unwrap_or(false) {
            return None;
        }
        Some(key(func, self.current.get(vcpu).copied().unwrap_or(NO_SITE)))
    }
}

/// A block of `n` instructions of slow path `slow` ran on `vcpu` for `site`, to every open
/// slot; `entered`: the first block of this call in this slow path.
pub fn block(stats: &mut Stats, vcpu: usize, slow: u32, site: u32, n: u64, entered: bool) {
    let Stats { locks, slots, active, .. } = stats;
    if vcpu >= locks.current.len() {
        locks.current.resize(vcpu + 1, NO_SITE);
    }
    locks.current[vcpu] = site;
    add(slots, active, key(slow, site), |c| {
        c.insts += n;
        c.entries += entered as u64;
    });
}

#[inline]
pub fn add(slots: &mut [Slot], active: &[usize], key: u64, f: impl Fn(&mut SiteCounts)) {
    for &s in active {
        f(slots[s].lock_sites.entry(key).or_default());
    }
}

/// One row of a region's `lock_sites`.
#[derive(Debug, PartialEq, serde::Serialize)]
pub struct LockSiteReport<'a> {
    pub site: &'a str,
    pub slow_path: &'a str,
    pub instructions: u64,
    pub cycles: f64,
    pub wait_cycles: u64,
    pub entries: u64,
}

/// A slot's `hot_functions` (slow path, site) pairs with the most wait cycles (ties: more
/// instructions, then slow path and site by symbol id). Cycles as the function table's:
/// instructions x CPI + SMT + stall / MLP + wait.
pub fn report<'a>(slot: &Slot, p: &Params, syms: &'a Symbols) -> Vec<LockSiteReport<'a>> {
    let mut rows: Vec<(&u64, &SiteCounts)> = slot.lock_sites.iter().collect();
    rows.sort_by(|a, b| (b.1.wait, b.1.insts, a.0).cmp(&(a.1.wait, a.1.insts, b.0)));
    rows.into_iter()
        .take(p.hot_functions as usize)
        .map(|(&k, c)| {
            let site = k as u32;
            LockSiteReport {
                site: if site == NO_SITE { "unknown" } else { syms.name(site) },
                slow_path: syms.name((k >> 32) as u32),
                instructions: c.insts,
                cycles: c.insts as f64 * p.timing.cpi + c.smt as f64 + c.stall as f64 / p.timing.mlp + c.wait as f64,
                wait_cycles: c.wait,
                entries: c.entries,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;
    use crate::stats::{Cause, TOTAL};

    const MAP: &str = "\
ffffffff81000000 T _text
ffffffff81000100 T folio_lruvec_lock_irqsave
ffffffff81000200 T lru_note_cost
ffffffff81000300 T rmqueue_bulk
ffffffff81000400 T _raw_spin_lock
ffffffff81000440 T _raw_spin_lock_irqsave
ffffffff81000480 T _raw_spin_unlock_irqrestore
ffffffff810004c0 T _raw_spin_trylock
ffffffff81000500 T queued_spin_lock_slowpath
ffffffff81000600 t __mutex_lock.constprop.0
ffffffff81000700 T mutex_lock
ffffffff81000740 T mutex_unlock
ffffffff81000800 t rwsem_down_write_slowpath
ffffffff81000900 T down_write
ffffffff81000a00 T down_read_trylock
ffffffff81000b00 T tick_sched_timer
ffffffff82000000 B _end
";

    fn setup() -> (Symbols, LockFunctions) {
        let syms = Symbols::parse(MAP).unwrap();
        let funcs = LockFunctions::new(&syms);
        (syms, funcs)
    }

    fn id(syms: &Symbols, name: &str) -> u32 {
        (0..syms.n_ids() as u32).find(|&i| syms.name(i) == name).unwrap()
    }

    #[test]
    fn lock_functions_come_from_the_map() {
        let (syms, f) = setup();
        for name in [
            "_raw_spin_lock",
            "_raw_spin_lock_irqsave",
            "_raw_spin_trylock",
            "mutex_lock",
            "down_write",
            "down_read_trylock",
        ] {
            assert_eq!(f.kind(id(&syms, name)), Kind::Entry, "{name}");
        }
        for name in ["_raw_spin_unlock_irqrestore", "mutex_unlock", "folio_lruvec_lock_irqsave", "tick_sched_timer"] {
            assert_eq!(f.kind(id(&syms, name)), Kind::Other, "{name}");
        }
        assert_eq!(f.kind(id(&syms, "queued_spin_lock_slowpath")), Kind::Slow(0));
        assert_eq!(f.kind(id(&syms, "__mutex_lock.constprop.0")), Kind::Slow(1));
        assert_eq!(f.kind(id(&syms, "rwsem_down_write_slowpath")), Kind::Slow(2));
        assert!(f.is_probe(0xffffffff81000400) && f.is_probe(0xffffffff81000500));
        assert!(!f.is_probe(0xffffffff81000404) && !f.is_probe(0xffffffff81000480));
        assert!(f.any_probe_in(0xffffffff810003f0, 0x11));
        assert!(!f.any_probe_in(0xffffffff810003f0, 0x10));
        assert!(!f.any_probe_in(0xffffffff81000b00, 0x100));
        let slow = f.slow_table();
        assert_eq!(slow.iter().filter(|&&s| s).count(), 3);
    }

    #[test]
    fn the_site_is_the_lock_functions_caller() {
        let (syms, f) = setup();
        let spin = id(&syms, "_raw_spin_lock_irqsave");
        let qslow = id(&syms, "queued_spin_lock_slowpath");
        // x86-64: the return address (the call's next instruction) in the LRU lock taker.
        assert_eq!(f.site_of_call(&syms, spin, 0xffffffff81000123), Some(id(&syms, "folio_lruvec_lock_irqsave")));
        // A call as the caller's last instruction returns to the next function's start: the
        // call's own byte decides.
        assert_eq!(f.site_of_call(&syms, spin, 0xffffffff81000200), Some(id(&syms, "folio_lruvec_lock_irqsave")));
        // The slow path called by _raw_spin_lock: the outer call names the site.
        assert_eq!(f.site_of_call(&syms, qslow, 0xffffffff81000410), None);
        // ... or called by the lock taker itself (arm64 inlines spin_lock): a call of its own.
        assert_eq!(f.site_of_call(&syms, qslow, 0xffffffff81000310), Some(id(&syms, "rmqueue_bulk")));
        // Unknown return addresses: a module, user space, nothing read.
        assert_eq!(f.site_of_call(&syms, spin, 0xffffffffc0001000), Some(NO_SITE));
        assert_eq!(f.site_of_call(&syms, spin, 0x401000), Some(NO_SITE));
        assert_eq!(f.site_of_call(&syms, spin, 0), Some(NO_SITE));
        assert_eq!(f.site_of_call(&syms, qslow, 0), Some(NO_SITE));
        // A lock function's call is symbolized once a slow path works for it, from the return
        // address kept (arm64) or read at the entry sp it returns with (x86-64).
        let mut calls = CallSites::default();
        calls.enter(0x8000, UNRESOLVED, 0xffffffff81000123);
        calls.enter(0x9000, UNRESOLVED, 0);
        let (sp, call) = calls.serving(0x7fb8).unwrap();
        assert_eq!(
            (sp, call.site, f.site_of(&syms, call.ret)),
            (0x8000, UNRESOLVED, id(&syms, "folio_lruvec_lock_irqsave"))
        );
        assert_eq!(calls.serving(0x8fb8).map(|(sp, c)| (sp, c.ret)), Some((0x9000, 0)));
    }

    /// A spinner on a task stack takes a timer interrupt on the per-CPU IRQ stack, whose handler
    /// takes (and waits for) another lock, then resumes spinning.
    #[test]
    fn an_interrupt_on_its_own_stack_takes_its_own_lock() {
        let mut calls = CallSites::default();
        let (lru, timer) = (10, 20);
        // Task stack: _raw_spin_lock_irqsave entered with sp 0x...7e58; the slow path runs
        // 0x48 below it.
        calls.enter(0xffff_8880_0400_7e58, lru, 0);
        assert_eq!(calls.serving(0xffff_8880_0400_7e10).unwrap().1.site, lru);
        // IRQ stack (another 16 KiB, 0x10000 higher): the handler's call and its slow path.
        calls.enter(0xffff_8880_0401_3f00, timer, 0);
        assert_eq!(calls.serving(0xffff_8880_0401_3ec0).unwrap().1.site, timer);
        // Back on the task stack: the handler's call is another stack's, more than MAX_DEPTH
        // away, even though it is more recent.
        assert_eq!(calls.serving(0xffff_8880_0400_7e10).unwrap().1.site, lru);
        // The IRQ stack below the task stack works the same way.
        calls.enter(0xffff_8880_0400_0f00, timer, 0);
        assert_eq!(calls.serving(0xffff_8880_0400_7e10).unwrap().1.site, lru);
        assert_eq!(calls.serving(0xffff_8880_0400_0ec8).unwrap().1.site, timer);
    }

    /// An exception or nested interrupt on the same stack: its frames lie below the spinner's.
    #[test]
    fn a_nested_call_on_the_same_stack_ends_with_its_frame() {
        let mut calls = CallSites::default();
        calls.enter(0x8000, 1, 0);
        assert_eq!(calls.serving(0x7fc0).unwrap().1.site, 1);
        // Interrupt frame below 0x7fc0; its lock call and slow path.
        calls.enter(0x7e00, 2, 0);
        assert_eq!(calls.serving(0x7dc0).unwrap().1.site, 2);
        // Returned: the spinner's block at 0x7fc0 is above the nested call's entry.
        assert_eq!(calls.serving(0x7fc0).unwrap().1.site, 1);
        // A tail call (x86 jmp) or arm64 (bl leaves sp) runs the slow path's first block at
        // the entry sp itself.
        assert_eq!(calls.serving(0x8000).unwrap().1.site, 1);
        // Above the call's entry (its frame was left): nothing serves.
        assert!(calls.serving(0x8008).is_none());
        // A later call at the same depth replaces the returned one and drops the nested
        // call's entry below it (its frame was left); so does a shallower call.
        calls.enter(0x8000, 3, 0);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls.serving(0x7fc0).unwrap().1.site, 3);
        calls.enter(0x8100, 4, 0);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls.serving(0x80c0).unwrap().1.site, 4);
    }

    #[test]
    fn a_call_counts_each_slow_path_it_enters_once() {
        let mut calls = CallSites::default();
        calls.enter(0x8000, 1, 0);
        let (_, c) = calls.serving(0x7f80).unwrap();
        assert!(c.first_entry(0));
        assert!(!c.first_entry(0));
        assert!(c.first_entry(3));
        calls.enter(0x8000, 1, 0);
        assert!(calls.serving(0x7f80).unwrap().1.first_entry(0));
    }

    #[test]
    fn the_table_stays_bounded() {
        let mut calls = CallSites::default();
        // Calls on CAP + 1 different stacks, far apart: none drops another.
        for i in 0..=CAP as u64 {
            calls.enter(0x1_0000_0000 + i * 0x4000, i as u32, 0);
        }
        assert_eq!(calls.len(), CAP / 2);
        let newest = 0x1_0000_0000 + CAP as u64 * 0x4000;
        assert_eq!(calls.serving(newest - 0x40).unwrap().1.site, CAP as u32);
    }

    /// The statistics: a spinner's blocks with a nested interrupt's, their accesses' stall and
    /// wait cycles, two slots (the ROI opens between), and the report's rows, by hand.
    #[test]
    fn blocks_and_accesses_add_up_per_site() {
        let (syms, f) = setup();
        let mut stats = Stats::new(syms.n_ids());
        stats.locks = LockContext::new(f.slow_table());
        let q = id(&syms, "queued_spin_lock_slowpath");
        let lru = id(&syms, "folio_lruvec_lock_irqsave");
        let zone = id(&syms, "rmqueue_bulk");
        let mut calls = CallSites::default();
        let run_block = |stats: &mut Stats, calls: &mut CallSites, vcpu: usize, sp: u64, n: u64| {
            let (site, entered) = match calls.serving(sp) {
                Some((_, c)) => (c.site, c.first_entry(0)),
                None => (NO_SITE, false),
            };
            block(stats, vcpu, q, site, n, entered);
        };
        calls.enter(0x8000, lru, 0);
        run_block(&mut stats, &mut calls, 0, 0x7fd0, 5); // total only
        stats.active.push(1); // the ROI opens
        run_block(&mut stats, &mut calls, 0, 0x7fd0, 7);
        stats.wait(0, 100.4, q, 9); // the spinner gets the line: 100 cycles
        stats.stall(0, Cause::FwdDirty, 40, q);
        calls.enter(0x2_0000, zone, 0); // interrupt on the IRQ stack
        run_block(&mut stats, &mut calls, 0, 0x1_ffd0, 3);
        stats.wait(0, 10.0, q, 9);
        run_block(&mut stats, &mut calls, 0, 0x7fd0, 2); // back to the spinner
        stats.wait(0, 1.6, q, 9);
        run_block(&mut stats, &mut calls, 1, 0x5000, 4); // another vCPU, no call seen: unknown
        stats.stall(1, Cause::L2Hit, 8, q);
        stats.stall(1, Cause::L2Hit, 8, lru); // not a slow path: no site
        let roi = &stats.slots[1].lock_sites;
        assert_eq!(roi[&key(q, lru)], SiteCounts { insts: 9, stall: 40, wait: 102, smt: 0, entries: 0 });
        assert_eq!(roi[&key(q, zone)], SiteCounts { insts: 3, stall: 0, wait: 10, smt: 0, entries: 1 });
        assert_eq!(roi[&key(q, NO_SITE)], SiteCounts { insts: 4, stall: 8, wait: 0, smt: 0, entries: 0 });
        let total = &stats.slots[TOTAL].lock_sites;
        assert_eq!(total[&key(q, lru)], SiteCounts { insts: 14, stall: 40, wait: 102, smt: 0, entries: 1 });
        let mut p = preset("tiny-4").unwrap();
        p.timing.cpi = 1.0;
        p.timing.mlp = 2.0;
        let rows = report(&stats.slots[1], &p, &syms);
        assert_eq!(
            rows,
            vec![
                LockSiteReport {
                    site: "folio_lruvec_lock_irqsave",
                    slow_path: "queued_spin_lock_slowpath",
                    instructions: 9,
                    cycles: 9.0 + 20.0 + 102.0,
                    wait_cycles: 102,
                    entries: 0
                },
                LockSiteReport {
                    site: "rmqueue_bulk",
                    slow_path: "queued_spin_lock_slowpath",
                    instructions: 3,
                    cycles: 13.0,
                    wait_cycles: 10,
                    entries: 1
                },
                LockSiteReport {
                    site: "unknown",
                    slow_path: "queued_spin_lock_slowpath",
                    instructions: 4,
                    cycles: 8.0,
                    wait_cycles: 0,
                    entries: 0
                },
            ]
        );
        // The slow path's instructions in the function table's terms: the sum over its sites.
        let insts: u64 =
            rows.iter().filter(|r| r.slow_path == "queued_spin_lock_slowpath").map(|r| r.instructions).sum();
        assert_eq!(insts, 16);
        p.hot_functions = 1;
        assert_eq!(report(&stats.slots[1], &p, &syms).len(), 1);
    }
}
