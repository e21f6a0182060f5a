//! QEMU glue: install, translation-time instrumentation and the run-time callbacks.
//! Only raw `qemu-plugin-sys` calls: no allocation per translated instruction and no
//! closure boxing; userdata pointers carry packed integers, not heap objects.
//!
//! The parts: `plugin_state` (the per-vCPU counters, the model and the turn logic),
//! `spinlock` (the model's lock under multi-threaded TCG), `vcpu_reader` (the running vCPU
//! from the guest's registers under single-threaded TCG) and `trace_recorder` (the access
//! trace of `--features trace`). This file installs the plugin and holds the callbacks.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use qemu_plugin_sys::*;

use crate::args::{self, Mode, RoiGate};
use crate::atomics;
use crate::coherence::Machine;
use crate::lock_sites::{LockContext, LockFunctions};
use crate::memory::N_DEVICES;
use crate::nvmain_trace::NvmainTrace;
use crate::quantum::{first_turn, QuantumUnit, FIXED_ONE};
use crate::report::{self, RunInfo};
use crate::roi::{self, Isa, Marker, MarkerOp, Regions, Sample};
use crate::smt;
use crate::stats::{Ctr, Stats};
use crate::symbols::Symbols;

mod guest_read;
mod lock_probe;
mod plugin_state;
mod spinlock;
#[cfg(feature = "trace")]
mod trace_recorder;
mod vcpu_reader;

use lock_probe::LockProbe;
use plugin_state::{all_insts, bump, outside_regions, plugin, vcpu_insts, Model, Plugin, VcpuCounters, PLUGIN};
use spinlock::SpinLock;
#[cfg(feature = "trace")]
use trace_recorder as trace;
use vcpu_reader::RunningVcpu;

#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static qemu_plugin_version: c_int = QEMU_PLUGIN_VERSION as c_int;

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
    if config.switches_vcpus() && !serial_tcg {
        return Err("quantum needs single-threaded TCG (-accel tcg,thread=single); use quantum=0 with MTTCG".into());
    }
    let time_control =
        if config.switches_vcpus() { (unsafe { qemu_plugin_request_time_control() }) as usize } else { 0 };
    if config.switches_vcpus() && time_control == 0 {
        return Err("quantum: another plugin already controls time; load one plugin with quantum".into());
    }
    let mut machine =
        (config.mode == Mode::Full).then(|| Machine::new(params.clone(), max_vcpus, mem, n_ids, config.checker));
    if let Some(m) = machine.as_mut() {
        m.insts_of = Some(vcpu_insts);
        m.causal_lax_ns = config.lax_cycles(params.timing.cpi).map(|c| c / params.timing.ghz);
        m.race = config.race;
        m.race_lax_ns = config.window_cycles(params.timing.cpi) / params.timing.ghz;
    }
    if let (Some(path), Some(m)) = (&config.nvmain_trace, machine.as_mut()) {
        m.nvmain = Some(Box::new(NvmainTrace::create(path, config.nvmain_device, config.nvmain_clock, all_insts)?));
    }
    let regions = Regions::new(config.mode != Mode::Full);
    let lock_funcs = LockFunctions::new(&syms);
    let mut count_stats = Stats::new(n_ids);
    count_stats.locks = LockContext::new(lock_funcs.slow_table());
    if let Some(m) = machine.as_mut() {
        m.stats.locks = LockContext::new(lock_funcs.slow_table());
    }
    let locks = LockProbe::new(lock_funcs, Isa::from_target(&target));
    let counters: Vec<VcpuCounters> = (0..max_vcpus).map(|_| VcpuCounters::default()).collect();
    for c in &counters {
        // The run starts outside every region (boot).
        let first = if config.quantum_at(false) > 0 { config.quantum_at(false) } else { config.quantum };
        c.turn_left.store(config.quantum_unit.turn(first), Relaxed);
    }
    let smt = machine.as_ref().is_some_and(|m| m.smt.is_some());
    // Only the SMT model asks which functions idle: no symbol scan at start-up without it.
    let idle_funcs = if smt {
        (0..n_ids as u32).map(|id| syms.is_cpuidle(id) || smt::IDLE_LOOP.contains(&syms.name(id))).collect()
    } else {
        Box::default()
    };
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
        locks,
        icount: has_option(&qemu_args, "icount"),
        syms,
        model: SpinLock::new(Model { machine, count_stats, regions }),
        instrument_memory: AtomicBool::new(config.roi != RoiGate::Flush),
        region_open: AtomicBool::new(false),
        reset_pending: AtomicBool::new(false),
        reported: AtomicBool::new(false),
        serial_tcg,
        started: Instant::now(),
        smt,
        idle_funcs,
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
    if let Some(locks) = &plugin().locks {
        unsafe { locks.find_registers() };
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
    if let Some(locks) = &p.locks {
        unsafe { lock_probe::instrument(locks, tb, n, tb_vaddr, tb_func as u32) };
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
    let func = (data >> TB_FUNC_SHIFT) as u32;
    bump(&c.insts, n);
    bump(&p.func_insts[vcpu][func as usize], n);
    // Who is busy is followed from the start (a sibling may idle before a region opens).
    let smt_cycles = if p.smt { p.smt_block(vcpu, n, func, !outside_regions(p)) } else { 0.0 };
    let inside = p.region_open.load(Relaxed);
    let quantum = p.config.quantum_at(inside);
    if quantum > 0 {
        let cost = match p.config.quantum_unit {
            QuantumUnit::Instructions => n,
            QuantumUnit::Cycles => p.turn_cost(vcpu, c, n) + (smt_cycles * FIXED_ONE as f64).round() as u64,
        };
        p.spend_turn(c, cost, quantum, inside);
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

unsafe extern "C" fn on_marker(vcpu: c_uint, data: *mut c_void) {
    let p = plugin();
    let code = data as u64;
    let Some(op) = MarkerOp::from_code((code >> 8) as u8) else {
        return;
    };
    match op {
        MarkerOp::RunEnd => {
            report_once(p, "run-end marker");
            return;
        }
        MarkerOp::SpanBegin | MarkerOp::SpanEnd => {
            // Spans need the model's clocks; without the model they are not counted.
            if let Some(m) = p.lock_model().machine.as_mut() {
                m.span_marker(vcpu as usize, op == MarkerOp::SpanBegin, code as u8);
            }
            return;
        }
        _ => {}
    }
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
            _ => [0; N_DEVICES],
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
    let was_open = p.region_open.swap(any_open, Relaxed);
    let quantum = p.config.quantum_at(true);
    if any_open && !was_open && p.config.phase_seed != 0 && quantum > 0 {
        let turn = p.config.quantum_unit.turn(quantum);
        for (vcpu, c) in p.counters.iter().enumerate() {
            c.turn_left.store(first_turn(turn, p.config.phase_seed, vcpu), Relaxed);
        }
    }
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
    report_once(plugin(), "QEMU exit");
}

/// Closes every region, fills "total" and writes stats.json, once: what runs after (the
/// guest's power-off) counts nowhere.
fn report_once(p: &Plugin, ended_at: &'static str) {
    if p.reported.swap(true, Relaxed) {
        return;
    }
    p.region_open.store(false, Relaxed);
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
        ended_at,
    };
    let stats = model.stats();
    let text = report::stats_json(&run, stats, &p.syms);
    if let Err(e) = std::fs::write(&p.config.out, text) {
        eprintln!("manylab-plugin: cannot write {}: {e}", p.config.out);
    }
    let summary = report::human_summary(&run, stats);
    eprint!("{summary}");
    if let Some(locks) = &p.locks {
        eprint!("{}", locks.summary());
    }
}
