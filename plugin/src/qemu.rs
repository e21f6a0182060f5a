//! QEMU glue: install, translation-time instrumentation and the run-time callbacks.
//! Only raw `qemu-plugin-sys` calls: no allocation per translated instruction and no
//! closure boxing; userdata pointers carry packed integers, not heap objects.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};
use std::sync::OnceLock;
use std::time::Instant;

use qemu_plugin_sys::*;

use crate::args::{self, Config, Mode, RoiGate};
use crate::coherence::Machine;
use crate::params::Params;
use crate::report::{self, RunInfo};
use crate::roi::{self, Isa, Marker, MarkerOp, Regions, Sample};
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

struct Model {
    machine: Option<Machine>,
    count_stats: Stats,
    regions: Regions,
    phys: PhysCache,
}

/// QEMU 7.2's `struct qemu_plugin_hwaddr` (include/qemu/plugin-memory.h): `bool is_io;
/// bool is_store; union { struct { MemoryRegionSection *section; hwaddr offset; } io;
/// struct { void *hostaddr; } ram; } v;`. Read directly by `PhysCache`.
#[repr(C)]
struct RawHwaddr {
    is_io: bool,
    is_store: bool,
    hostaddr: u64,
}

const PHYS_CACHE_SLOTS: usize = 4096;
const PAGE_MASK: u64 = 0xfff;

/// Skips `qemu_plugin_hwaddr_is_io` and `qemu_plugin_hwaddr_phys_addr` (a RAM-block search
/// under RCU) for RAM accesses: QEMU computes the physical address from the host address of
/// the access, and RAM blocks are page-aligned and never move in these runs, so the value for
/// one host page plus the offset in the page is the API's value for any byte of the page. A
/// direct-mapped cache keeps the value per host page; misses ask the API. The first
/// `VERIFY_ACCESSES` accesses are computed both ways and compared (layout check), and every
/// fill checks the page offsets agree; any disagreement turns the cache off for the run.
struct PhysCache {
    pages: Box<[u64]>,
    bases: Box<[u64]>,
    verify_left: u64,
    enabled: bool,
}

const VERIFY_ACCESSES: u64 = 1 << 16;

impl PhysCache {
    fn new() -> PhysCache {
        PhysCache {
            pages: vec![u64::MAX; PHYS_CACHE_SLOTS].into_boxed_slice(),
            bases: vec![0; PHYS_CACHE_SLOTS].into_boxed_slice(),
            verify_left: VERIFY_ACCESSES,
            enabled: true,
        }
    }

    /// The API's answer: `None` for I/O, else the physical address.
    unsafe fn api(hw: *mut qemu_plugin_hwaddr) -> Option<u64> {
        if unsafe { qemu_plugin_hwaddr_is_io(hw) } {
            None
        } else {
            Some(unsafe { qemu_plugin_hwaddr_phys_addr(hw) })
        }
    }

    /// # Safety
    /// `hw` is the non-null result of `qemu_plugin_get_hwaddr` for the current access.
    #[inline(always)]
    unsafe fn lookup(&mut self, hw: *mut qemu_plugin_hwaddr) -> Option<u64> {
        if !self.enabled || self.verify_left > 0 {
            return unsafe { self.slow(hw) };
        }
        let raw = unsafe { &*(hw as *const RawHwaddr) };
        if raw.is_io {
            return None;
        }
        let host = raw.hostaddr;
        let page = host >> 12;
        let i = page as usize & (PHYS_CACHE_SLOTS - 1);
        if self.pages[i] == page {
            return Some(self.bases[i] + (host & PAGE_MASK));
        }
        unsafe { self.slow(hw) }
    }

    #[inline(never)]
    unsafe fn slow(&mut self, hw: *mut qemu_plugin_hwaddr) -> Option<u64> {
        let real = unsafe { Self::api(hw) };
        if !self.enabled {
            return real;
        }
        let raw = unsafe { &*(hw as *const RawHwaddr) };
        if self.verify_left > 0 {
            self.verify_left -= 1;
            let cached = if raw.is_io { None } else { self.cached(raw.hostaddr) };
            if raw.is_io != real.is_none() || cached.is_some_and(|c| Some(c) != real) {
                self.enabled = false;
                return real;
            }
        }
        if let Some(paddr) = real {
            let host = raw.hostaddr;
            if (paddr ^ host) & PAGE_MASK != 0 {
                self.enabled = false;
                return real;
            }
            let page = host >> 12;
            let i = page as usize & (PHYS_CACHE_SLOTS - 1);
            self.pages[i] = page;
            self.bases[i] = paddr - (host & PAGE_MASK);
        }
        real
    }

    fn cached(&self, host: u64) -> Option<u64> {
        let page = host >> 12;
        let i = page as usize & (PHYS_CACHE_SLOTS - 1);
        (self.pages[i] == page).then(|| self.bases[i] + (host & PAGE_MASK))
    }
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
    /// Per vCPU, instructions per symbol id (user space and unknown kernel included);
    /// multi-threaded TCG only (execution callbacks).
    func_insts: Vec<Box<[AtomicU64]>>,
    /// Instructions per symbol id for all vCPUs, added by inline TCG ops (no callback) at the
    /// start of each translation block; single-threaded TCG only, where nothing races.
    func_insts_inline: Box<[AtomicU64]>,
    model: SpinLock<Model>,
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
            s.insts += c.insts.load(Relaxed);
            s.loads += c.loads.load(Relaxed);
            s.stores += c.stores.load(Relaxed);
        }
        s.func_insts = self.func_insts_inline.iter().map(|n| n.load(Relaxed)).collect();
        s.insts += s.func_insts.iter().sum::<u64>();
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
    let machine =
        (config.mode == Mode::Full).then(|| Machine::new(params.clone(), max_vcpus, mem, n_ids, config.checker));
    let regions = Regions::new(config.mode == Mode::Count);
    let plugin = Plugin {
        id,
        isa: Isa::from_target(&target),
        target,
        vcpus,
        max_vcpus,
        counters: (0..max_vcpus).map(|_| VcpuCounters::default()).collect(),
        func_insts: (0..max_vcpus).map(|_| (0..n_ids).map(|_| AtomicU64::new(0)).collect()).collect(),
        func_insts_inline: (0..n_ids).map(|_| AtomicU64::new(0)).collect(),
        syms,
        model: SpinLock::new(Model { machine, count_stats: Stats::new(n_ids), regions, phys: PhysCache::new() }),
        instrument_memory: AtomicBool::new(config.roi != RoiGate::Flush),
        region_open: AtomicBool::new(false),
        reset_pending: AtomicBool::new(false),
        serial_tcg: vcpus == 1 || tcg_is_single_threaded(),
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

/// QEMU's own command line says whether TCG is single-threaded: `-accel tcg,thread=single`
/// (or `-machine accel=tcg,thread=single`), or `-icount`, which 7.2 only runs single-threaded.
/// Anything else (including the default, multi-threaded for x86 and arm64 guests) locks.
fn tcg_is_single_threaded() -> bool {
    let Ok(raw) = std::fs::read("/proc/self/cmdline") else { return false };
    let args: Vec<String> = raw.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    args.windows(2).any(|w| {
        let option = w[0].trim_start_matches('-');
        (option == "accel" || option == "machine" || option == "M") && w[1].split(',').any(|kv| kv == "thread=single")
            || option == "icount"
    })
}

fn register_callbacks(id: qemu_plugin_id_t) {
    unsafe {
        qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_translate));
        qemu_plugin_register_atexit_cb(id, Some(on_exit), std::ptr::null_mut());
    }
}

const MARKER_TAG: u64 = 1 << 16;

unsafe extern "C" fn on_translate(_id: qemu_plugin_id_t, tb: *mut qemu_plugin_tb) {
    let p = plugin();
    let n = unsafe { qemu_plugin_tb_n_insns(tb) };
    if n == 0 {
        return;
    }
    let tb_func = p.syms.function_of(unsafe { qemu_plugin_tb_vaddr(tb) }) as u64;
    if p.serial_tcg {
        // One inline add per block, no helper call: exact because one host thread runs
        // every vCPU (API v1's inline ops are not per-vCPU).
        unsafe {
            qemu_plugin_register_vcpu_tb_exec_inline(
                tb,
                qemu_plugin_op::QEMU_PLUGIN_INLINE_ADD_U64,
                p.func_insts_inline[tb_func as usize].as_ptr() as *mut c_void,
                n as u64,
            );
        }
    } else {
        unsafe {
            qemu_plugin_register_vcpu_tb_exec_cb(
                tb,
                Some(on_tb_exec),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                ((tb_func << 16) | n as u64) as *mut c_void,
            );
        }
    }
    let memory = p.instrument_memory.load(Relaxed);
    for i in 0..n {
        let insn = unsafe { qemu_plugin_tb_get_insn(tb, i) };
        let size = unsafe { qemu_plugin_insn_size(insn) };
        if size == 8 || size == 4 {
            let bytes = unsafe { std::slice::from_raw_parts(qemu_plugin_insn_data(insn) as *const u8, size) };
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
            Mode::Count => (Some(on_mem_count), 0),
            Mode::Full => (Some(on_mem_full), p.syms.function_of(unsafe { qemu_plugin_insn_vaddr(insn) }) as u64),
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
    let vcpu = vcpu as usize;
    bump(&p.counters[vcpu].insts, n);
    bump(&p.func_insts[vcpu][(data >> 16) as usize], n);
}

#[inline]
fn outside_regions(p: &Plugin) -> bool {
    p.config.roi == RoiGate::On && !p.region_open.load(Relaxed)
}

unsafe extern "C" fn on_mem_count(vcpu: c_uint, info: qemu_plugin_meminfo_t, _vaddr: u64, _data: *mut c_void) {
    let p = plugin();
    if outside_regions(p) {
        return;
    }
    let c = &p.counters[vcpu as usize];
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
    let store = unsafe { qemu_plugin_mem_is_store(info) };
    let hw = unsafe { qemu_plugin_get_hwaddr(info, vaddr) };
    if p.serial_tcg {
        // SAFETY: single-threaded TCG runs every vCPU and every callback on one thread.
        let model = unsafe { p.model.get_unsynchronized() };
        model_access(model, vcpu, info, vaddr, hw, store, data);
    } else {
        model_access(&mut p.lock_model(), vcpu, info, vaddr, hw, store, data);
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

#[inline(always)]
fn model_access(
    model: &mut Model,
    vcpu: c_uint,
    info: qemu_plugin_meminfo_t,
    vaddr: u64,
    hw: *mut qemu_plugin_hwaddr,
    store: bool,
    data: *mut c_void,
) {
    let Some(machine) = model.machine.as_mut() else { return };
    let ram = if hw.is_null() { None } else { unsafe { model.phys.lookup(hw) } };
    let Some(paddr) = ram else {
        #[cfg(feature = "trace")]
        trace::record(2 + store as u8, 0, vcpu as u16, 0, 0, vaddr);
        machine.stats.add(Ctr::IoAccesses, 1);
        machine.stats.add(if store { Ctr::Stores } else { Ctr::Loads }, 1);
        return;
    };
    let size = 1u32 << unsafe { qemu_plugin_mem_size_shift(info) };
    #[cfg(feature = "trace")]
    trace::record(store as u8, size as u8, vcpu as u16, data as u64 as u32, paddr, vaddr);
    machine.access(vcpu as usize, paddr, vaddr, size, store, data as u64 as u32);
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
        let stats = match machine {
            Some(m) => &mut m.stats,
            None => count_stats,
        };
        regions.apply(stats, marker, &|| p.sample());
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
    let sample = p.sample();
    {
        let Model { machine, count_stats, regions, .. } = &mut *model;
        let stats = match machine {
            Some(m) => &mut m.stats,
            None => count_stats,
        };
        regions.finish(stats, &|| sample.clone());
    }
    if model.machine.is_some() && !model.phys.enabled {
        eprintln!("manylab-plugin: physical-address cache was off (hwaddr layout is not QEMU 7.2's)");
    }
    let markers = model.regions.markers_seen;
    let directory_lines = model.machine.as_ref().map_or(0, |m| m.dir.len());
    let run = RunInfo {
        config: &p.config,
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
