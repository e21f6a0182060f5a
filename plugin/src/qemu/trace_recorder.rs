//! Access trace for offline replay (`--features trace`): 24-byte records
//! `kind u8 (0 load, 1 store, 2 io load, 3 io store, 4 marker), size u8, vcpu u16, func u32,
//! paddr u64, vaddr u64`, little-endian; markers carry op in `vcpu` and arg in `size`.

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
