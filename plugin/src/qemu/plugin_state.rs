//! The plugin's state: per-vCPU counters, the model behind its lock, and the turn logic.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Instant;

use qemu_plugin_sys::*;

use crate::args::{Config, RoiGate};
use crate::coherence::Machine;
use crate::params::Params;
use crate::quantum::next_turn;
use crate::report::Interleave;
use crate::roi::{Isa, Regions, Sample};
use crate::stats::Stats;
use crate::symbols::Symbols;

use super::lock_probe::LockProbe;
use super::spinlock::{SpinGuard, SpinLock};
use super::vcpu_reader::RunningVcpu;

/// Counters one vCPU writes (only its own thread runs its callbacks) and anyone may read.
#[repr(align(64))]
#[derive(Default)]
pub(super) struct VcpuCounters {
    pub(super) insts: AtomicU64,
    pub(super) loads: AtomicU64,
    pub(super) stores: AtomicU64,
    /// What is left of the vCPU's turn (quantum > 0), in `quantum_unit`'s units.
    pub(super) turn_left: AtomicU64,
    /// The vCPU's stall cycles when its previous block started (`quantum_unit=cycles`).
    pub(super) stall_seen: AtomicU64,
    /// The vCPU's accesses needed another cache during this turn (adaptive quantum).
    pub(super) touched_remote: AtomicBool,
    pub(super) switches: AtomicU64,
    pub(super) switches_outside: AtomicU64,
    pub(super) short_turns: AtomicU64,
}

#[inline]
pub(super) fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed) + n, Relaxed);
}

pub(super) struct Model {
    pub(super) machine: Option<Machine>,
    pub(super) count_stats: Stats,
    pub(super) regions: Regions,
}

impl Model {
    pub(super) fn stats(&mut self) -> &mut Stats {
        match &mut self.machine {
            Some(m) => &mut m.stats,
            None => &mut self.count_stats,
        }
    }
}

pub(super) struct Plugin {
    pub(super) id: qemu_plugin_id_t,
    pub(super) config: Config,
    pub(super) params: Params,
    pub(super) isa: Isa,
    pub(super) target: String,
    pub(super) vcpus: usize,
    pub(super) max_vcpus: usize,
    pub(super) syms: Symbols,
    pub(super) counters: Vec<VcpuCounters>,
    /// Per vCPU, instructions per symbol id (user space and unknown kernel included).
    pub(super) func_insts: Vec<Box<[AtomicU64]>>,
    pub(super) model: SpinLock<Model>,
    /// `qemu_plugin_request_time_control`'s handle (as an address), when quantum > 0.
    pub(super) time_control: usize,
    /// Single-threaded TCG with several vCPUs: who runs, from the guest's registers.
    pub(super) running: Option<RunningVcpu>,
    /// Lock waits per call site (`lock_sites.rs`): None without lock functions in System.map.
    pub(super) locks: Option<LockProbe>,
    pub(super) icount: bool,
    /// Translate memory callbacks now? (roi=flush: only while a region is open)
    pub(super) instrument_memory: AtomicBool,
    /// Is any region open? (roi=on: memory callbacks return at once when not)
    pub(super) region_open: AtomicBool,
    /// Single-threaded TCG (round-robin vCPUs on one host thread): the model needs no lock.
    pub(super) serial_tcg: bool,
    pub(super) reset_pending: AtomicBool,
    /// stats.json is written: at the guest's end-of-run marker, else at QEMU's exit.
    pub(super) reported: AtomicBool,
    pub(super) started: Instant,
    /// Some core hosts two vCPUs (full mode): blocks feed the SMT model (`smt.rs`).
    pub(super) smt: bool,
    /// Per symbol id: a function of the kernel's idle loop (`.cpuidle.text`, `smt::IDLE_LOOP`).
    pub(super) idle_funcs: Box<[bool]>,
}

pub(super) static PLUGIN: OnceLock<Plugin> = OnceLock::new();

/// CPU time of the whole QEMU process (all threads, user + system), in seconds.
fn process_cpu_s() -> f64 {
    unsafe extern "C" {
        fn clock_gettime(clock: c_int, ts: *mut [i64; 2]) -> c_int;
    }
    const CLOCK_PROCESS_CPUTIME_ID: c_int = 2;
    let mut ts = [0i64; 2];
    // SAFETY: clock_gettime writes one struct timespec (two longs on 64-bit Linux).
    if unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut ts) } != 0 {
        return 0.0;
    }
    ts[0] as f64 + ts[1] as f64 * 1e-9
}

/// Instructions executed by one vCPU so far: its modelled clock's base.
pub(super) fn vcpu_insts(vcpu: usize) -> u64 {
    PLUGIN.get().and_then(|p| p.counters.get(vcpu)).map_or(0, |c| c.insts.load(Relaxed))
}

/// Instructions executed by all vCPUs so far: the NVMain trace's clock.
pub(super) fn all_insts() -> u64 {
    PLUGIN.get().map_or(0, |p| p.counters.iter().map(|c| c.insts.load(Relaxed)).sum())
}

#[inline]
pub(super) fn plugin() -> &'static Plugin {
    // SAFETY-free: callbacks are only registered after PLUGIN is set.
    PLUGIN.get().expect("manylab-plugin: callback before install")
}

impl Plugin {
    pub(super) fn sample(&self) -> Sample {
        let mut s =
            Sample { host_s: self.started.elapsed().as_secs_f64(), host_cpu_s: process_cpu_s(), ..Default::default() };
        for c in &self.counters {
            s.vcpu_insts.push(c.insts.load(Relaxed));
            s.insts += c.insts.load(Relaxed);
            s.loads += c.loads.load(Relaxed);
            s.stores += c.stores.load(Relaxed);
        }
        s.func_insts = vec![0; self.syms.n_ids()];
        for per_vcpu in &self.func_insts {
            for (sum, n) in s.func_insts.iter_mut().zip(per_vcpu.iter()) {
                *sum += n.load(Relaxed);
            }
        }
        s
    }

    #[inline]
    pub(super) fn lock_model(&self) -> SpinGuard<'_, Model> {
        self.model.lock()
    }

    /// What a block of `n` instructions costs a turn counted in modelled cycles: n x CPI plus
    /// the stall cycles the vCPU's accesses added since its previous block, / MLP.
    #[inline(never)]
    pub(super) fn turn_cost(&self, vcpu: usize, c: &VcpuCounters, n: u64) -> u64 {
        let t = &self.params.timing;
        // SAFETY: quantum > 0 needs single-threaded TCG (checked at install), where every
        // callback runs on one thread.
        let model = unsafe { self.model.get_unsynchronized() };
        let stall = model.machine.as_ref().map_or(0, |m| m.stall_cycles(vcpu));
        let seen = c.stall_seen.swap(stall, Relaxed);
        self.config.quantum_unit.cost(n, stall.saturating_sub(seen), t.cpi, t.mlp)
    }

    /// A block of `n` instructions in function `func` ran on `vcpu`: the base cycles its SMT
    /// siblings added (`Machine::smt_block`; charged only if `charge`).
    #[inline(never)]
    pub(super) fn smt_block(&self, vcpu: usize, n: u64, func: u32, charge: bool) -> f64 {
        let idle = self.idle_funcs.get(func as usize).copied().unwrap_or(false);
        let block =
            |model: &mut Model| model.machine.as_mut().map_or(0.0, |m| m.smt_block(vcpu, n, func, idle, charge));
        if self.serial_tcg {
            // SAFETY: single-threaded TCG runs every vCPU and every callback on one thread.
            block(unsafe { self.model.get_unsynchronized() })
        } else {
            block(&mut self.lock_model())
        }
    }

    /// Ends the vCPU's turn once it has run its quantum of instructions (or cycles).
    #[inline]
    pub(super) fn spend_turn(&self, c: &VcpuCounters, n: u64, quantum: u64, inside: bool) {
        let left = c.turn_left.load(Relaxed);
        if left > n {
            c.turn_left.store(left - n, Relaxed);
        } else {
            self.yield_vcpu(c, quantum, inside, n - left);
        }
    }

    /// Starts the vCPU's next turn (short if it touched other caches' lines in this one; less
    /// the `overrun` of the block that ended this one, `quantum::next_turn`) and makes it
    /// yield: `qemu_plugin_update_ns` queues work on the running vCPU and kicks it, so
    /// single-threaded TCG leaves it at the next block and runs the next vCPU. Under TCG the
    /// call cannot move the virtual clock; the kick is what is wanted.
    #[inline(never)]
    pub(super) fn yield_vcpu(&self, c: &VcpuCounters, quantum: u64, inside: bool, overrun: u64) {
        let shared = self.config.quantum_shared;
        let short = inside && shared > 0 && c.touched_remote.swap(false, Relaxed);
        let unit = self.config.quantum_unit;
        c.turn_left.store(next_turn(unit.turn(if short { shared } else { quantum }), overrun), Relaxed);
        bump(&c.switches, 1);
        if !inside {
            bump(&c.switches_outside, 1);
        }
        if short {
            bump(&c.short_turns, 1);
        }
        unsafe { qemu_plugin_update_ns(self.time_control as *const c_void, 0) };
    }

    pub(super) fn interleave(&self) -> Interleave {
        let sum = |f: fn(&VcpuCounters) -> &AtomicU64| self.counters.iter().map(|c| f(c).load(Relaxed)).sum();
        Interleave {
            quantum: self.config.quantum,
            quantum_shared: self.config.quantum_shared,
            quantum_unit: self.config.quantum_unit.name(),
            quantum_outside: self.config.quantum_at(false),
            phase_seed: self.config.phase_seed,
            switches: sum(|c| &c.switches),
            switches_outside: sum(|c| &c.switches_outside),
            short_turns: sum(|c| &c.short_turns),
            icount: self.icount,
        }
    }

    /// The vCPU a memory callback belongs to: the block's, as its callback found it.
    #[inline]
    pub(super) fn vcpu_of(&self, passed: c_uint) -> c_uint {
        match &self.running {
            Some(running) => running.current.load(Relaxed),
            None => passed,
        }
    }
}

#[inline]
pub(super) fn outside_regions(p: &Plugin) -> bool {
    p.config.roi == RoiGate::On && !p.region_open.load(Relaxed)
}
