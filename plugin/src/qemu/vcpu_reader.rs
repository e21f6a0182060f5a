//! Reads the running vCPU from the guest's registers (the rules are in `running_vcpu`).

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_uint, CStr};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::OnceLock;

use qemu_plugin_sys::*;

use crate::running_vcpu::{self, BaseTable};

unsafe extern "C" {
    fn g_byte_array_new() -> *mut GByteArray;
    fn g_byte_array_set_size(array: *mut GByteArray, length: c_uint) -> *mut GByteArray;
    fn g_array_free(array: *mut GArray, free_segment: c_int) -> *mut c_char;
}

/// The running vCPU under single-threaded TCG, from its per-CPU base (running_vcpu.rs says
/// why the index QEMU passes cannot be used). Only the one TCG thread touches it.
pub(super) struct RunningVcpu {
    target: String,
    /// Register handles (as addresses), found at the first vCPU's init.
    regs: OnceLock<Vec<usize>>,
    cpu_number: Option<u64>,
    max_vcpus: usize,
    table: UnsafeCell<BaseTable>,
    buf: UnsafeCell<usize>,
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
            buf: UnsafeCell::new(0),
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
    pub(super) fn update(&self, kernel_text: bool) -> usize {
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

/// Called in a vCPU callback: the handle (as an address) of each named register, 0 where the
/// target has none.
pub(super) unsafe fn register_handles(wanted: &[&str]) -> Vec<usize> {
    let mut found = vec![0usize; wanted.len()];
    let array = unsafe { qemu_plugin_get_registers() };
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
    found
}
