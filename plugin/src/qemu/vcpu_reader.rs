//! Reads the running vCPU from the guest's registers (the rules are in `running_vcpu`).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::OnceLock;

use crate::running_vcpu::{self, BaseTable};

use super::guest_read::{register_handles, ReadBuffer};

/// The running vCPU under single-threaded TCG, from its per-CPU base (running_vcpu.rs says
/// why the index QEMU passes cannot be used). Only the one TCG thread touches it.
pub(super) struct RunningVcpu {
    target: String,
    /// Register handles (as addresses), found at the first vCPU's init.
    regs: OnceLock<Vec<usize>>,
    cpu_number: Option<u64>,
    max_vcpus: usize,
    table: UnsafeCell<BaseTable>,
    buf: ReadBuffer,
    pub(super) current: AtomicU32,
}

// SAFETY: used only where one host thread runs every vCPU (single-threaded TCG).
unsafe impl Sync for RunningVcpu {}

impl RunningVcpu {
    pub(super) fn new(target: &str, sysmap: Option<&str>, max_vcpus: usize) -> RunningVcpu {
        let cpu_number =
            sysmap.and_then(|p| std::fs::read_to_string(p).ok()).and_then(|t| running_vcpu::cpu_number_symbol(&t));
        RunningVcpu {
            target: target.into(),
            regs: OnceLock::new(),
            cpu_number,
            max_vcpus,
            table: UnsafeCell::new(BaseTable::default()),
            buf: ReadBuffer::new(),
            current: AtomicU32::new(0),
        }
    }

    /// Called in a vCPU callback: the handles of the per-CPU base registers.
    pub(super) unsafe fn find_registers(&self) {
        if self.regs.get().is_some() {
            return;
        }
        let wanted = running_vcpu::base_registers(&self.target);
        let found = unsafe { register_handles(wanted) };
        let complete = !wanted.is_empty() && found.iter().all(|&h| h != 0);
        if !complete {
            eprintln!(
                "manylab-plugin: no per-CPU base register ({}): vCPUs are as QEMU numbers them",
                wanted.join(", ")
            );
        }
        let _ = self.regs.set(if complete { found } else { Vec::new() });
    }

    /// Reads the base register(s) at a block's start and sets the running vCPU.
    #[inline]
    pub(super) fn update(&self, kernel_text: bool) -> usize {
        let current = self.current.load(Relaxed) as usize;
        let Some(regs) = self.regs.get().filter(|r| !r.is_empty()) else { return current };
        let buf = &self.buf;
        let mut values = [0u64; 2];
        for (v, &h) in values.iter_mut().zip(regs) {
            *v = buf.register_u64(h).unwrap_or(0);
        }
        let base = running_vcpu::per_cpu_base(&values[..regs.len()], kernel_text);
        if base == 0 {
            return current;
        }
        // SAFETY: single-threaded TCG; nothing else holds the table.
        let table = unsafe { &mut *self.table.get() };
        let by_symbol = self.cpu_number.is_some();
        let Some(vcpu) = table.resolve(base, by_symbol, self.max_vcpus, || self.cpu_number_at(buf, base)) else {
            return current;
        };
        self.current.store(vcpu, Relaxed);
        vcpu as usize
    }

    fn cpu_number_at(&self, buf: &ReadBuffer, base: u64) -> Option<u32> {
        let n = u32::from_le_bytes(buf.memory::<4>(base.wrapping_add(self.cpu_number?))?);
        ((n as usize) < self.max_vcpus).then_some(n)
    }
}
