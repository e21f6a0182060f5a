//! Reads of guest registers and guest memory through QEMU's plugin API (callable only from a
//! vCPU callback registered with `QEMU_PLUGIN_CB_R_REGS`, or a vCPU init callback).

use std::ffi::{c_char, c_int, c_uint, CStr};

use qemu_plugin_sys::*;

unsafe extern "C" {
    fn g_byte_array_new() -> *mut GByteArray;
    fn g_byte_array_set_size(array: *mut GByteArray, length: c_uint) -> *mut GByteArray;
    fn g_array_free(array: *mut GArray, free_segment: c_int) -> *mut c_char;
}

/// The handle (as an address) of each named register, 0 where the target has none.
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

/// The byte buffer QEMU reads into; one per reading thread, never freed (lives as the plugin).
pub(super) struct ReadBuffer(*mut GByteArray);

// SAFETY: a GByteArray belongs to no thread; it may move to another (not be shared: no Sync).
unsafe impl Send for ReadBuffer {}

impl ReadBuffer {
    pub(super) fn new() -> ReadBuffer {
        ReadBuffer(unsafe { g_byte_array_new() })
    }

    /// The low 8 bytes of a register, little-endian; None for handle 0 or a shorter register.
    pub(super) fn register_u64(&self, handle: usize) -> Option<u64> {
        if handle == 0 {
            return None;
        }
        unsafe {
            g_byte_array_set_size(self.0, 0);
            if qemu_plugin_read_register(handle as *mut qemu_plugin_register, self.0) < 8 {
                return None;
            }
        }
        self.first_bytes::<8>().map(u64::from_le_bytes)
    }

    /// N bytes of guest memory at a virtual address, as the running vCPU sees it.
    pub(super) fn memory<const N: usize>(&self, vaddr: u64) -> Option<[u8; N]> {
        unsafe {
            g_byte_array_set_size(self.0, 0);
            if !qemu_plugin_read_memory_vaddr(vaddr, self.0, N) {
                return None;
            }
        }
        self.first_bytes::<N>()
    }

    fn first_bytes<const N: usize>(&self) -> Option<[u8; N]> {
        unsafe {
            if ((*self.0).len as usize) < N {
                return None;
            }
            std::slice::from_raw_parts((*self.0).data, N).try_into().ok()
        }
    }
}
