//! The lock-site probes (`lock_sites.rs` has the rules): the stack pointer and return address
//! read at the first instruction of the kernel's lock functions, and the stack pointer at each
//! block of a lock slow path. Only those callbacks ask QEMU for registers
//! (`QEMU_PLUGIN_CB_R_REGS`); every other block and instruction is instrumented as before.

use std::ffi::{c_uint, c_void};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use qemu_plugin_sys::*;

use crate::lock_sites::{self, CallSites, Kind, LockFunctions, NO_SITE, UNRESOLVED};
use crate::roi::Isa;

use super::guest_read::{register_handles, ReadBuffer};
use super::plugin_state::{plugin, Model, Plugin};
use super::spinlock::SpinLock;

thread_local! {
    /// A read buffer per vCPU thread (one thread under single-threaded TCG).
    static BUF: ReadBuffer = ReadBuffer::new();
}

pub(super) struct LockProbe {
    funcs: LockFunctions,
    isa: Isa,
    /// Handles (as addresses) of the stack pointer and, on arm64, the link register (X30).
    regs: OnceLock<[usize; 2]>,
    calls: SpinLock<CallSites>,
    /// Lock-function probes that ran, and slow-path blocks attributed (the cost's measure).
    probes_run: AtomicU64,
    slow_blocks: AtomicU64,
}

impl LockProbe {
    /// None without lock functions in System.map or on another ISA.
    pub(super) fn new(funcs: LockFunctions, isa: Isa) -> Option<LockProbe> {
        (!funcs.is_empty() && isa != Isa::Other).then(|| LockProbe {
            funcs,
            isa,
            regs: OnceLock::new(),
            calls: SpinLock::new(CallSites::default()),
            probes_run: AtomicU64::new(0),
            slow_blocks: AtomicU64::new(0),
        })
    }

    /// Called in a vCPU callback (the first vCPU's init): the register handles.
    pub(super) unsafe fn find_registers(&self) {
        if self.regs.get().is_some() {
            return;
        }
        let wanted: &[&str] = if self.isa == Isa::X86_64 { &["rsp"] } else { &["sp", "x30"] };
        let found = unsafe { register_handles(wanted) };
        if found.contains(&0) {
            eprintln!("manylab-plugin: no {} register: lock sites are all \"unknown\"", wanted.join("/"));
        }
        let mut regs = [0usize; 2];
        regs[..found.len()].copy_from_slice(&found);
        let _ = self.regs.set(regs);
    }

    fn read_register(&self, handle: usize) -> Option<u64> {
        BUF.with(|b| b.register_u64(handle))
    }

    fn sp(&self) -> Option<u64> {
        self.read_register(self.regs.get()?[0])
    }

    /// At a function's first instruction (x86-64: or while its call is live, with the entry's
    /// sp): x86-64 the 8 bytes at RSP, arm64 X30 (0: unread).
    fn return_address(&self, sp: u64) -> u64 {
        match self.isa {
            Isa::X86_64 => BUF.with(|b| b.memory::<8>(sp)).map_or(0, u64::from_le_bytes),
            _ => self.regs.get().and_then(|r| self.read_register(r[1])).unwrap_or(0),
        }
    }

    pub(super) fn summary(&self) -> String {
        format!(
            "manylab-plugin: lock sites: {} lock-function entries read, {} slow-path blocks, {} calls kept\n",
            self.probes_run.load(Relaxed),
            self.slow_blocks.load(Relaxed),
            self.calls.lock().len()
        )
    }
}

/// `on_slow_block`'s userdata: the block starts at its slow path's first instruction.
const AT_ENTRY: u64 = 1 << 24;

/// At translation: a block of a slow path gets `on_slow_block`; a lock function's first
/// instruction (where the block holds one) gets `on_lock_entry`, except a slow path's first
/// block, whose `on_slow_block` records the call before it attributes the block (a block's
/// callback runs before its instructions' callbacks).
pub(super) unsafe fn instrument(probe: &LockProbe, tb: *mut qemu_plugin_tb, n: usize, tb_vaddr: u64, tb_func: u32) {
    let mut first = 0;
    if let Kind::Slow(index) = probe.funcs.kind(tb_func) {
        let mut data = (tb_func as u64) << 32 | (index as u64) << 16 | n as u64;
        if probe.funcs.is_probe(tb_vaddr) {
            data |= AT_ENTRY;
            first = 1;
        }
        unsafe {
            qemu_plugin_register_vcpu_tb_exec_cb(
                tb,
                Some(on_slow_block),
                qemu_plugin_cb_flags::QEMU_PLUGIN_CB_R_REGS,
                data as *mut c_void,
            );
        }
    }
    let last = unsafe { qemu_plugin_tb_get_insn(tb, n - 1) };
    let end = unsafe { qemu_plugin_insn_vaddr(last) + qemu_plugin_insn_size(last) as u64 };
    if !probe.funcs.any_probe_in(tb_vaddr, end.saturating_sub(tb_vaddr)) {
        return;
    }
    let p = plugin();
    for i in first..n {
        let insn = unsafe { qemu_plugin_tb_get_insn(tb, i) };
        let vaddr = unsafe { qemu_plugin_insn_vaddr(insn) };
        if probe.funcs.is_probe(vaddr) {
            let func = p.syms.function_of(vaddr) as u64;
            unsafe {
                qemu_plugin_register_vcpu_insn_exec_cb(
                    insn,
                    Some(on_lock_entry),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_R_REGS,
                    func as *mut c_void,
                );
            }
        }
    }
}

/// A lock function's (or slow path's) first instruction: record the call. A lock function's
/// site is symbolized only if a slow path works for the call (`on_slow_block`); on x86-64 its
/// return address is read only then too, from the stack at the entry sp, where it stays while
/// the call is live. A slow path's entry needs its caller at once (does it start a call?).
unsafe extern "C" fn on_lock_entry(_vcpu: c_uint, data: *mut c_void) {
    let p = plugin();
    let Some(probe) = &p.locks else { return };
    if let Some(sp) = probe.sp() {
        record_call(p, probe, sp, data as u64 as u32);
    }
}

fn record_call(p: &Plugin, probe: &LockProbe, sp: u64, probed: u32) {
    probe.probes_run.fetch_add(1, Relaxed);
    if let Kind::Slow(_) = probe.funcs.kind(probed) {
        let ret = probe.return_address(sp);
        if let Some(site) = probe.funcs.site_of_call(&p.syms, probed, ret) {
            probe.calls.lock().enter(sp, site, ret);
        }
    } else {
        let ret = if probe.isa == Isa::X86_64 { 0 } else { probe.return_address(sp) };
        probe.calls.lock().enter(sp, UNRESOLVED, ret);
    }
}

/// A block of a slow path: its instructions to (slow path, the serving call's site). Runs
/// after `on_tb_exec` (registered after it), which has found the running vCPU.
unsafe extern "C" fn on_slow_block(vcpu: c_uint, data: *mut c_void) {
    let p = plugin();
    let Some(probe) = &p.locks else { return };
    probe.slow_blocks.fetch_add(1, Relaxed);
    let data = data as u64;
    let (n, index, slow) = (data & 0xffff, ((data >> 16) & 0xff) as u8, (data >> 32) as u32);
    let vcpu = p.vcpu_of(vcpu) as usize;
    let sp = probe.sp();
    if let (Some(sp), true) = (sp, data & AT_ENTRY != 0) {
        record_call(p, probe, sp, slow);
    }
    let (site, entered) = match sp {
        Some(sp) => match probe.calls.lock().serving(sp) {
            Some((entry_sp, call)) => {
                if call.site == UNRESOLVED {
                    let ret = if call.ret != 0 { call.ret } else { probe.return_address(entry_sp) };
                    call.site = probe.funcs.site_of(&p.syms, ret);
                }
                (call.site, call.first_entry(index))
            }
            None => (NO_SITE, false),
        },
        None => (NO_SITE, false),
    };
    let apply = |model: &mut Model| lock_sites::block(model.stats(), vcpu, slow, site, n, entered);
    if p.serial_tcg {
        // SAFETY: single-threaded TCG runs every vCPU and every callback on one thread.
        apply(unsafe { p.model.get_unsynchronized() });
    } else {
        apply(&mut p.lock_model());
    }
}
