//! QEMU glue: install, translation-time instrumentation and the run-time callbacks.
//! Only raw `qemu-plugin-sys` calls: no allocation per translated instruction and no
//! closure boxing; userdata pointers carry packed integers, not heap objects.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};
use std::sync::OnceLock;
use std::time::Instant;

use qemu_plugin_sys::*;

use crate::args::{self, Config, Mode, RoiGate};
use crate::atomics;
use crate::coherence::Machine;
use crate::nvmain_trace::NvmainTrace;
use crate::params::Params;
use crate::quantum::QuantumUnit;
use crate::report::{self, Interleave, RunInfo};
use crate::roi::{self, Isa, Marker, MarkerOp, Regions, Sample};
use crate::running_vcpu::{self, BaseTable};
use crate::stats::{Ctr, Stats};
use crate::symbols::Symbols;

#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static qemu_plugin_version: c_int = QEMU_PLUGIN_VERSION as c_int;

/// Counters one vCPU writes (only its own thread runs its callbacks) and anyone may read.
#[repr(align(64))]
#[derive(Default)]
struct VcpuCounters {
    insts: AtomicU64,
    loads: AtomicU64,
    stores: AtomicU64,
    /// What is left of the vCPU's turn (quantum > 0), in `quantum_unit`'s units.
    turn_left: AtomicU64,
    /// The vCPU's stall cycles when its previous block started (`quantum_unit=cycles`).
    stall_seen: AtomicU64,
    /// The vCPU's accesses needed another cache during this turn (adaptive quantum).
    touched_remote: AtomicBool,
    switches: AtomicU64,
    short_turns: AtomicU64,
}

#[inline]
fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed) + n, Relaxed);
}

/// A test-and-test-and-set lock: one atomic exchange to take it, a plain store to release it
/// (std's Mutex pays a second exchange on unlock, a measurable cost at one lock per access).
struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: `value` is only reached through a `SpinGuard`, which exists while `locked` is held.
unsafe impl<T: Send> Sync for SpinLock<T> {}

struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    fn new(value: T) -> Self {
        SpinLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// # Safety
    /// No other thread may use the value meanwhile (single-threaded TCG).
    #[allow(clippy::mut_from_ref)]
    #[inline]
    unsafe fn get_unsynchronized(&self) -> &mut T {
        unsafe { &mut *self.value.get() }
    }

    #[inline]
    fn lock(&self) -> SpinGuard<'_, T> {
        while self.locked.swap(true, Acquire) {
            let mut spins = 0u32;
            while self.locked.load(Relaxed) {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        SpinGuard { lock: self }
    }
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock exclusively.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Release);
    }
}

unsafe extern "C" {
    fn g_byte_array_new() -> *mut GByteArray;
    fn g_byte_array_set_size(array: *mut GByteArray, length: c_uint) -> *mut GByteArray;
    fn g_array_free(array: *mut GArray, free_segment: c_int) -> *mut c_char;
}

/// The running vCPU under single-threaded TCG, from its per-CPU base (running_vcpu.rs says
/// why the index QEMU passes cannot be used). Only the one TCG thread touches it.
struct RunningVcpu {
    target: String,
    /// Register handles (as addresses), found at the first vCPU's init.
    regs: OnceLock<Vec<usize>>,
    cpu_number: Option<u64>,
    max_vcpus: usize,
    table: UnsafeCell<BaseTable>,
    buf: UnsafeCell<usize>,
    current: AtomicU32,
}

// SAFETY: used only where one host thread runs every vCPU (single-threaded TCG).
unsafe impl Sync for RunningVcpu {}

impl RunningVcpu {
    fn new(target: &str, sysmap: Option<&str>, max_vcpus: usize) -> RunningVcpu {
        let cpu_number =
            sysmap.and_then(|p| std::fs::read_to_string(p).ok()).and_then(|t| running_vcpu::cpu_number_symbol(&t));
        RunningVcpu {
            target: target.into(),
            regs: OnceLock::new(),
            cpu_number,
            max_vcpus,
            table: UnsafeCell::new(BaseTable::default()),
            buf: UnsafeCell::new(0),
            current: AtomicU32::new(0),
        }
    }

    /// Called in a vCPU callback: the handles of the per-CPU base registers.
    unsafe fn find_registers(&self) {
        if self.regs.get().is_some() {
            return;
        }
        let wanted = running_vcpu::base_registers(&self.target);
        let array = unsafe { qemu_plugin_get_registers() };
        let mut found = vec![0usize; wanted.len()];
        if !array.is_null() {
            let descs = unsafe {
                std::slice::from_raw_parts((*array).data as *const qemu_plugin_reg_descriptor, (*array).len as usize)
            };
            for d in descs {
                let name = unsafe { CStr::from_ptr(d.name) }.to_string_lossy();
                if let Some(i) = wanted.iter().position(|w| *w == name) {
                    found[i] = d.handle as usize;
                }
            }
            unsafe { g_array_free(array, 1) };
        }
        let complete = !wanted.is_empty() && found.iter().all(|&h| h != 0);
        if !complete {
            eprintln!(
                "manylab-plugin: no per-CPU base register ({}): vCPUs are as QEMU numbers them",
                wanted.join(", ")
            );
        }
        let _ = self.regs.set(if complete { found } else { Vec::new() });
        unsafe { *self.buf.get() = g_byte_array_new() as usize };
    }

    fn read(&self, buf: *mut GByteArray, handle: usize) -> u64 {
        unsafe {
            g_byte_array_set_size(buf, 0);
            let n = qemu_plugin_read_register(handle as *mut qemu_plugin_register, buf);
            if n < 8 {
                return 0;
            }
            let bytes = std::slice::from_raw_parts((*buf).data, 8);
            u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]))
        }
    }

    /// Reads the base register(s) at a block's start and sets the running vCPU.
    #[inline]
    fn update(&self, kernel_text: bool) -> usize {
        let current = self.current.load(Relaxed) as usize;
        let Some(regs) = self.regs.get().filter(|r| !r.is_empty()) else { return current };
        let buf = unsafe { *self.buf.get() } as *mut GByteArray;
        let mut values = [0u64; 2];
        for (v, &h) in values.iter_mut().zip(regs) {
            *v = self.read(buf, h);
        }
        let base = running_vcpu::per_cpu_base(&values[..regs.len()], kernel_text);
        if base == 0 {
            return current;
        }
        // SAFETY: single-threaded TCG; nothing else holds the table.
        let table = unsafe { &mut *self.table.get() };
        let vcpu = match table.lookup(base) {
            Some(v) => v,
            None => {
                let v = self.cpu_number_at(buf, base).unwrap_or(table.len() as u32 % self.max_vcpus as u32);
                table.insert(base, v);
                v
            }
        };
        self.current.store(vcpu, Relaxed);
        vcpu as usize
    }

    fn cpu_number_at(&self, buf: *mut GByteArray, base: u64) -> Option<u32> {
        let sym = self.cpu_number?;
        unsafe {
            g_byte_array_set_size(buf, 0);
            if !qemu_plugin_read_memory_vaddr(base.wrapping_add(sym), buf, 4) {
                return None;
            }
            let bytes = std::slice::from_raw_parts((*buf).data, 4);
            let n = u32::from_le_bytes(bytes.try_into().ok()?);
            ((n as usize) < self.max_vcpus).then_some(n)
        }
    }
}

struct Model {
    machine: Option<Machine>,
    count_stats: Stats,
    regions: Regions,
}

impl Model {
    fn stats(&mut self) -> &mut Stats {
        match &mut self.machine {
            Some(m) => &mut m.stats,
            None => &mut self.count_stats,
        }
    }
}

struct Plugin {
    id: qemu_plugin_id_t,
    config: Config,
    params: Params,
    isa: Isa,
    target: String,
    vcpus: usize,
    max_vcpus: usize,
    syms: Symbols,
    counters: Vec<VcpuCounters>,
    /// Per vCPU, instructions per symbol id (user space and unknown kernel included).
    func_insts: Vec<Box<[AtomicU64]>>,
    model: SpinLock<Model>,
    /// `qemu_plugin_request_time_control`'s handle (as an address), when quantum > 0.
    time_control: usize,
    /// Single-threaded TCG with several vCPUs: who runs, from the guest's registers.
    running: Option<RunningVcpu>,
    icount: bool,
    /// Translate memory callbacks now? (roi=flush: only while a region is open)
    instrument_memory: AtomicBool,
    /// Is any region open? (roi=on: memory callbacks return at once when not)
    region_open: AtomicBool,
    /// Single-threaded TCG (round-robin vCPUs on one host thread): the model needs no lock.
    serial_tcg: bool,
    reset_pending: AtomicBool,
    started: Instant,
}

static PLUGIN: OnceLock<Plugin> = OnceLock::new();

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
fn vcpu_insts(vcpu: usize) -> u64 {
    PLUGIN.get().and_then(|p| p.counters.get(vcpu)).map_or(0, |c| c.insts.load(Relaxed))
}

/// Instructions executed by all vCPUs so far: the NVMain trace's clock.
fn all_insts() -> u64 {
    PLUGIN.get().map_or(0, |p| p.counters.iter().map(|c| c.insts.load(Relaxed)).sum())
}

#[inline]
fn plugin() -> &'static Plugin {
    // SAFETY-free: callbacks are only registered after PLUGIN is set.
    PLUGIN.get().expect("manylab-plugin: callback before install")
}

impl Plugin {
    fn sample(&self) -> Sample {
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
    fn lock_model(&self) -> SpinGuard<'_, Model> {
        self.model.lock()
    }

    /// What a block of `n` instructions costs a turn counted in modelled cycles: n x CPI plus
    /// the stall cycles the vCPU's accesses added since its previous block, / MLP.
    #[inline(never)]
    fn turn_cost(&self, vcpu: usize, c: &VcpuCounters, n: u64) -> u64 {
        let t = &self.params.timing;
        // SAFETY: quantum > 0 needs single-threaded TCG (checked at install), where every
        // callback runs on one thread.
        let model = unsafe { self.model.get_unsynchronized() };
        let stall = model.machine.as_ref().map_or(0, |m| m.stall_cycles(vcpu));
        let seen = c.stall_seen.swap(stall, Relaxed);
        self.config.quantum_unit.cost(n, stall.saturating_sub(seen), t.cpi, t.mlp)
    }

    /// Ends the vCPU's turn once it has run its quantum of instructions (or cycles).
    #[inline]
    fn spend_turn(&self, c: &VcpuCounters, n: u64) {
        let left = c.turn_left.load(Relaxed);
        if left > n {
            c.turn_left.store(left - n, Relaxed);
        } else {
            self.yield_vcpu(c);
        }
    }

    /// Starts the vCPU's next turn (short if it touched other caches' lines in this one) and
    /// makes it yield: `qemu_plugin_update_ns` queues work on the running vCPU and kicks it, so
    /// single-threaded TCG leaves it at the next block and runs the next vCPU. Under TCG the
    /// call cannot move the virtual clock; the kick is what is wanted.
    #[inline(never)]
    fn yield_vcpu(&self, c: &VcpuCounters) {
        let shared = self.config.quantum_shared;
        let short = shared > 0 && c.touched_remote.swap(false, Relaxed);
        let unit = self.config.quantum_unit;
        c.turn_left.store(unit.turn(if short { shared } else { self.config.quantum }), Relaxed);
        bump(&c.switches, 1);
        if short {
            bump(&c.short_turns, 1);
        }
        unsafe { qemu_plugin_update_ns(self.time_control as *const c_void, 0) };
    }

    fn interleave(&self) -> Interleave {
        let sum = |f: fn(&VcpuCounters) -> &AtomicU64| self.counters.iter().map(|c| f(c).load(Relaxed)).sum();
        Interleave {
            quantum: self.config.quantum,
            quantum_shared: self.config.quantum_shared,
            quantum_unit: self.config.quantum_unit.name(),
            switches: sum(|c| &c.switches),
            short_turns: sum(|c| &c.short_turns),
            icount: self.icount,
        }
    }
}

#[unsafe(no_mangle)]
/// # Safety
/// Called by QEMU once, with a valid `info` and `argc` C strings in `argv`.
pub unsafe extern "C" fn qemu_plugin_install(
    id: qemu_plugin_id_t,
    info: *const qemu_info_t,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    let args: Vec<String> = (0..argc.max(0) as usize)
        .map(|i| unsafe { CStr::from_ptr(*argv.add(i)) }.to_string_lossy().into_owned())
        .collect();
    match unsafe { install(id, info, &args) } {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("manylab-plugin: {message}");
            -1
        }
    }
}

unsafe fn install(id: qemu_plugin_id_t, info: *const qemu_info_t, args: &[String]) -> Result<(), String> {
    let info = unsafe { &*info };
    if !info.system_emulation {
        return Err("system emulation only (qemu-system-*), not user mode".into());
    }
    let target = unsafe { CStr::from_ptr(info.target_name) }.to_string_lossy().into_owned();
    let system = unsafe { info.__bindgen_anon_1.system };
    let vcpus = system.smp_vcpus.max(1) as usize;
    let max_vcpus = (system.max_vcpus as usize).max(vcpus);
    let config = args::parse(args)?;
    let (params, mem) = args::machine_params(&config, vcpus)?;
    let syms = match &config.sysmap {
        Some(path) => Symbols::load(path)?,
        None => Symbols::default(),
    };
    let existed = std::path::Path::new(&config.out).exists();
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&config.out)
        .map_err(|e| format!("cannot write out={}: {e}", config.out))?;
    if !existed {
        // Only a finished run leaves a stats.json behind.
        let _ = std::fs::remove_file(&config.out);
    }
    let n_ids = syms.n_ids();
    let qemu_args = qemu_command_line();
    let serial_tcg = vcpus == 1 || tcg_is_single_threaded(&qemu_args);
    if config.quantum > 0 && !serial_tcg {
        return Err("quantum needs single-threaded TCG (-accel tcg,thread=single); use quantum=0 with MTTCG".into());
    }
    let time_control = if config.quantum > 0 { (unsafe { qemu_plugin_request_time_control() }) as usize } else { 0 };
    if config.quantum > 0 && time_control == 0 {
        return Err("quantum: another plugin already controls time; load one plugin with quantum".into());
    }
    let mut machine =
        (config.mode == Mode::Full).then(|| Machine::new(params.clone(), max_vcpus, mem, n_ids, config.checker));
    if let Some(m) = machine.as_mut() {
        m.insts_of = Some(vcpu_insts);
    }
    if let (Some(path), Some(m)) = (&config.nvmain_trace, machine.as_mut()) {
        m.nvmain = Some(Box::new(NvmainTrace::create(path, config.nvmain_device, all_insts)?));
    }
    let regions = Regions::new(config.mode != Mode::Full);
    let counters: Vec<VcpuCounters> = (0..max_vcpus).map(|_| VcpuCounters::default()).collect();
    for c in &counters {
        c.turn_left.store(config.quantum_unit.turn(config.quantum), Relaxed);
    }
    let running = (serial_tcg && max_vcpus > 1).then(|| RunningVcpu::new(&target, config.sysmap.as_deref(), max_vcpus));
    let plugin = Plugin {
        id,
        isa: Isa::from_target(&target),
        target,
        vcpus,
        max_vcpus,
        counters,
        func_insts: (0..max_vcpus).map(|_| (0..n_ids).map(|_| AtomicU64::new(0)).collect()).collect(),
        time_control,
        running,
        icount: has_option(&qemu_args, "icount"),
        syms,
        model: SpinLock::new(Model { machine, count_stats: Stats::new(n_ids), regions }),
        instrument_memory: AtomicBool::new(config.roi != RoiGate::Flush),
        region_open: AtomicBool::new(false),
        reset_pending: AtomicBool::new(false),
        serial_tcg,
        started: Instant::now(),
        config,
        params,
    };
    PLUGIN.set(plugin).map_err(|_| "installed twice".to_string())?;
    #[cfg(feature = "trace")]
    trace::open();
    register_callbacks(id);
    Ok(())
}

fn qemu_command_line() -> Vec<String> {
    let Ok(raw) = std::fs::read("/proc/self/cmdline") else { return Vec::new() };
    raw.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
}

fn has_option(args: &[String], name: &str) -> bool {
    args.iter().any(|a| a.trim_start_matches('-') == name && a.starts_with('-'))
}

/// QEMU's own command line says whether TCG is single-threaded: `-accel tcg,thread=single`
/// (or `-machine accel=tcg,thread=single`), or `-icount`, which runs single-threaded.
/// Anything else (including the default, multi-threaded for x86 and arm64 guests) locks.
fn tcg_is_single_threaded(args: &[String]) -> bool {
    has_option(args, "icount")
        || args.windows(2).any(|w| {
            let option = w[0].trim_start_matches('-');
            (option == "accel" || option == "machine" || option == "M")
                && w[1].split(',').any(|kv| kv == "thread=single")
        })
}

fn register_callbacks(id: qemu_plugin_id_t) {
    unsafe {
        qemu_plugin_register_vcpu_init_cb(id, Some(on_vcpu_init));
        qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_translate));
        qemu_plugin_register_atexit_cb(id, Some(on_exit), std::ptr::null_mut());
    }
}

unsafe extern "C" fn on_vcpu_init(_id: qemu_plugin_id_t, _vcpu: c_uint) {
    if let Some(running) = &plugin().running {
        unsafe { running.find_registers() };
    }
}

/// Kernel text starts here on x86-64 and arm64 (the upper half of the address space).
const KERNEL_TEXT: u64 = 0xffff_0000_0000_0000;
/// Block-callback userdata: instruction count in bits 0-15, kernel text in bit 16, the
/// function id from bit 17.
const TB_KERNEL: u64 = 1 << 16;
const TB_FUNC_SHIFT: u32 = 17;

const MARKER_TAG: u64 = 1 << 16;
/// Memory-callback userdata: the function id in the low 32 bits, this bit for atomics.
const ATOMIC_TAG: u64 = 1 << 32;

unsafe extern "C" fn on_translate(_id: qemu_plugin_id_t, tb: *mut qemu_plugin_tb) {
    let p = plugin();
    let n = unsafe { qemu_plugin_tb_n_insns(tb) };
    if n == 0 {
        return;
    }
    let tb_vaddr = unsafe { qemu_plugin_tb_vaddr(tb) };
    let tb_func = p.syms.function_of(tb_vaddr) as u64;
    let kernel = if tb_vaddr >= KERNEL_TEXT { TB_KERNEL } else { 0 };
    let flags = if p.running.is_some() {
        qemu_plugin_cb_flags::QEMU_PLUGIN_CB_R_REGS
    } else {
        qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS
    };
    // A plain execution callback, not inline scoreboard ops plus a conditional callback (that
    // pair crashed QEMU 10.0.2 at x86 SMP bring-up); it also runs the quantum switch.
    unsafe {
        qemu_plugin_register_vcpu_tb_exec_cb(
            tb,
            Some(on_tb_exec),
            flags,
            ((tb_func << TB_FUNC_SHIFT) | kernel | n as u64) as *mut c_void,
        );
    }
    let memory = p.config.mode != Mode::None && p.instrument_memory.load(Relaxed);
    let mut bytes = [0u8; 16];
    for i in 0..n {
        let insn = unsafe { qemu_plugin_tb_get_insn(tb, i) };
        let size = unsafe { qemu_plugin_insn_data(insn, bytes.as_mut_ptr() as *mut c_void, bytes.len()) };
        let bytes = &bytes[..size];
        if size == 8 || size == 4 {
            if let Some(m) = roi::decode(p.isa, bytes) {
                let code = MARKER_TAG | ((m.op as u64) << 8) | m.arg as u64;
                unsafe {
                    qemu_plugin_register_vcpu_insn_exec_cb(
                        insn,
                        Some(on_marker),
                        qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                        code as *mut c_void,
                    );
                }
                continue;
            }
        }
        if !memory {
            continue;
        }
        let (callback, data): (qemu_plugin_vcpu_mem_cb_t, u64) = match p.config.mode {
            Mode::None => continue,
            Mode::Count => (Some(on_mem_count), 0),
            Mode::Full => {
                let func = p.syms.function_of(unsafe { qemu_plugin_insn_vaddr(insn) }) as u64;
                let atomic = if atomics::is_atomic(p.isa, bytes) { ATOMIC_TAG } else { 0 };
                (Some(on_mem_full), func | atomic)
            }
        };
        unsafe {
            qemu_plugin_register_vcpu_mem_cb(
                insn,
                callback,
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                data as *mut c_void,
            );
        }
    }
}

unsafe extern "C" fn on_tb_exec(vcpu: c_uint, data: *mut c_void) {
    let p = plugin();
    let data = data as u64;
    let n = data & 0xffff;
    let vcpu = match &p.running {
        Some(running) => running.update(data & TB_KERNEL != 0),
        None => vcpu as usize,
    };
    let c = &p.counters[vcpu];
    bump(&c.insts, n);
    bump(&p.func_insts[vcpu][(data >> TB_FUNC_SHIFT) as usize], n);
    if p.config.quantum > 0 {
        let cost = match p.config.quantum_unit {
            QuantumUnit::Instructions => n,
            QuantumUnit::Cycles => p.turn_cost(vcpu, c, n),
        };
        p.spend_turn(c, cost);
    }
}

#[inline]
fn outside_regions(p: &Plugin) -> bool {
    p.config.roi == RoiGate::On && !p.region_open.load(Relaxed)
}

impl Plugin {
    /// The vCPU a memory callback belongs to: the block's, as its callback found it.
    #[inline]
    fn vcpu_of(&self, passed: c_uint) -> c_uint {
        match &self.running {
            Some(running) => running.current.load(Relaxed),
            None => passed,
        }
    }
}

unsafe extern "C" fn on_mem_count(vcpu: c_uint, info: qemu_plugin_meminfo_t, _vaddr: u64, _data: *mut c_void) {
    let p = plugin();
    if outside_regions(p) {
        return;
    }
    let c = &p.counters[p.vcpu_of(vcpu) as usize];
    if unsafe { qemu_plugin_mem_is_store(info) } {
        bump(&c.stores, 1);
    } else {
        bump(&c.loads, 1);
    }
}

unsafe extern "C" fn on_mem_full(vcpu: c_uint, info: qemu_plugin_meminfo_t, vaddr: u64, data: *mut c_void) {
    let p = plugin();
    if outside_regions(p) {
        return;
    }
    let vcpu = p.vcpu_of(vcpu);
    let store = unsafe { qemu_plugin_mem_is_store(info) };
    let hw = unsafe { qemu_plugin_get_hwaddr(info, vaddr) };
    let remote = if p.serial_tcg {
        // SAFETY: single-threaded TCG runs every vCPU and every callback on one thread.
        let model = unsafe { p.model.get_unsynchronized() };
        model_access(model, vcpu, info, vaddr, hw, store, data as u64)
    } else {
        model_access(&mut p.lock_model(), vcpu, info, vaddr, hw, store, data as u64)
    };
    if remote && p.config.quantum_shared > 0 {
        p.counters[vcpu as usize].touched_remote.store(true, Relaxed);
    }
}

/// Access trace for offline replay (`--features trace`): 24-byte records
/// `kind u8 (0 load, 1 store, 2 io load, 3 io store, 4 marker), size u8, vcpu u16, func u32,
/// paddr u64, vaddr u64`, little-endian; markers carry op in `vcpu` and arg in `size`.
#[cfg(feature = "trace")]
mod trace {
    use std::io::Write;
    pub struct Trace {
        out: std::io::BufWriter<std::fs::File>,
        left: u64,
    }
    pub static mut TRACE: Option<Trace> = None;
    pub fn open() {
        let Ok(path) = std::env::var("MANYLAB_TRACE_OUT") else { return };
        let left = std::env::var("MANYLAB_TRACE_MAX").ok().and_then(|v| v.parse().ok()).unwrap_or(u64::MAX);
        let file = std::fs::File::create(path).expect("trace file");
        unsafe { TRACE = Some(Trace { out: std::io::BufWriter::with_capacity(1 << 20, file), left }) };
    }
    #[allow(static_mut_refs)]
    pub fn record(kind: u8, size: u8, vcpu: u16, func: u32, paddr: u64, vaddr: u64) {
        let Some(t) = (unsafe { TRACE.as_mut() }) else { return };
        if t.left == 0 {
            return;
        }
        t.left -= 1;
        let mut rec = [0u8; 24];
        rec[0] = kind;
        rec[1] = size;
        rec[2..4].copy_from_slice(&vcpu.to_le_bytes());
        rec[4..8].copy_from_slice(&func.to_le_bytes());
        rec[8..16].copy_from_slice(&paddr.to_le_bytes());
        rec[16..24].copy_from_slice(&vaddr.to_le_bytes());
        t.out.write_all(&rec).expect("trace write");
        if t.left == 0 {
            t.out.flush().expect("trace flush");
        }
    }
    #[allow(static_mut_refs)]
    pub fn flush() {
        if let Some(t) = unsafe { TRACE.as_mut() } {
            t.out.flush().expect("trace flush");
        }
    }
}

/// Models one access; returns whether it needed another cache (a forward or an invalidation).
#[inline(always)]
fn model_access(
    model: &mut Model,
    vcpu: c_uint,
    info: qemu_plugin_meminfo_t,
    vaddr: u64,
    hw: *mut qemu_plugin_hwaddr,
    store: bool,
    data: u64,
) -> bool {
    let Some(machine) = model.machine.as_mut() else { return false };
    // QEMU 10 keeps the physical address in the handle: no RAM-block search behind this call.
    let ram = if hw.is_null() || unsafe { qemu_plugin_hwaddr_is_io(hw) } {
        None
    } else {
        Some(unsafe { qemu_plugin_hwaddr_phys_addr(hw) })
    };
    let Some(paddr) = ram else {
        #[cfg(feature = "trace")]
        trace::record(2 + store as u8, 0, vcpu as u16, 0, 0, vaddr);
        machine.stats.add(Ctr::IoAccesses, 1);
        machine.stats.add(if store { Ctr::Stores } else { Ctr::Loads }, 1);
        return false;
    };
    let size = 1u32 << unsafe { qemu_plugin_mem_size_shift(info) };
    let func = data as u32;
    let atomic = data & ATOMIC_TAG != 0;
    #[cfg(feature = "trace")]
    trace::record(if atomic { 5 + store as u8 } else { store as u8 }, size as u8, vcpu as u16, func, paddr, vaddr);
    match (atomic, store) {
        (false, _) => machine.access(vcpu as usize, paddr, vaddr, size, store, func),
        (true, false) => machine.access_rmw(vcpu as usize, paddr, vaddr, size, func),
        (true, true) => machine.rmw_store(),
    }
    std::mem::take(&mut machine.remote_seen)
}

unsafe extern "C" fn on_marker(_vcpu: c_uint, data: *mut c_void) {
    let p = plugin();
    let code = data as u64;
    let op = match (code >> 8) & 0xff {
        x if x == MarkerOp::Begin as u64 => MarkerOp::Begin,
        x if x == MarkerOp::End as u64 => MarkerOp::End,
        _ => MarkerOp::Phase,
    };
    let marker = Marker { op, arg: code as u8 };
    #[cfg(feature = "trace")]
    trace::record(4, marker.arg, op as u16, 0, 0, 0);
    let any_open = {
        let mut model = p.lock_model();
        let Model { machine, count_stats, regions, .. } = &mut *model;
        // Dirty lines at region end (only End and Phase markers close a slot): scanned before
        // the marker, which changes no cache.
        let dirty = match (marker.op, machine.as_ref()) {
            (MarkerOp::End | MarkerOp::Phase, Some(m)) => m.dirty_lines(),
            _ => [0; 3],
        };
        let stats = match machine {
            Some(m) => &mut m.stats,
            None => count_stats,
        };
        regions.apply(stats, marker, &|| Sample { dirty, ..p.sample() });
        // Every region and phase starts at one modelled time for all vCPUs, as its modelled
        // time (max over vCPUs of their cycles in it) assumes (README "Memory bandwidth").
        if let Some(m) = machine.as_mut() {
            m.restart_clocks(&p.sample().vcpu_insts);
        }
        if let Some(trace) = machine.as_mut().and_then(|m| m.nvmain.as_mut()) {
            trace.set_open(regions.any_open());
        }
        regions.any_open()
    };
    p.region_open.store(any_open, Relaxed);
    if p.config.roi == RoiGate::Flush
        && p.instrument_memory.swap(any_open, Relaxed) != any_open
        && !p.reset_pending.swap(true, Relaxed)
    {
        // Retranslate everything so memory callbacks appear (or vanish). The crate's reset
        // wrapper never calls back; the raw call does.
        unsafe { qemu_plugin_reset(p.id, Some(on_reset)) };
    }
}

unsafe extern "C" fn on_reset(id: qemu_plugin_id_t) {
    plugin().reset_pending.store(false, Relaxed);
    register_callbacks(id);
}

unsafe extern "C" fn on_exit(_id: qemu_plugin_id_t, _data: *mut c_void) {
    #[cfg(feature = "trace")]
    trace::flush();
    let p = plugin();
    let mut model = p.lock_model();
    let mut sample = p.sample();
    if let Some(m) = model.machine.as_ref() {
        sample.dirty = m.dirty_lines();
    }
    {
        let Model { machine, count_stats, regions, .. } = &mut *model;
        let stats = match machine {
            Some(m) => &mut m.stats,
            None => count_stats,
        };
        regions.finish(stats, &|| sample.clone());
    }
    if let Some(trace) = model.machine.as_mut().and_then(|m| m.nvmain.as_mut()) {
        trace.set_open(false);
        trace.flush();
        let path = p.config.nvmain_trace.as_deref().unwrap_or("");
        match &trace.error {
            Some(e) => eprintln!("manylab-plugin: cannot write nvmain_trace={path}: {e}"),
            None => eprintln!(
                "manylab-plugin: nvmain_trace: {} {} requests -> {path} ({} cycles clamped to {})",
                trace.lines,
                trace.select.name(),
                trace.clamped,
                crate::nvmain_trace::MAX_CYCLE
            ),
        }
    }
    let markers = model.regions.markers_seen;
    let directory_lines = model.machine.as_ref().map_or(0, |m| m.dir.len());
    let run = RunInfo {
        config: &p.config,
        interleave: p.interleave(),
        params: &p.params,
        target: &p.target,
        vcpus: p.vcpus,
        max_vcpus: p.max_vcpus,
        wall_s: p.started.elapsed().as_secs_f64(),
        markers,
        directory_lines,
        n_symbols: p.syms.n_ids() - 2,
        model_lock: if p.serial_tcg { "none: single-threaded TCG" } else { "spin lock: multi-threaded TCG" },
    };
    let stats = model.stats();
    let text = report::stats_json(&run, stats, &p.syms);
    if let Err(e) = std::fs::write(&p.config.out, text) {
        eprintln!("manylab-plugin: cannot write {}: {e}", p.config.out);
    }
    let summary = report::human_summary(&run, stats);
    eprint!("{summary}");
}
