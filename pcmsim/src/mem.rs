//! Large arrays for the policies' per-frame state, and memory figures for the benchmark.
//!
//! At hundreds of thousands of frames the page map and the list nodes span tens of MB and
//! every request touches a few random cache lines in them; with 4 KiB pages most of those
//! also miss the TLB. `filled` asks Linux for transparent huge pages on the array before
//! it is first touched (`madvise(MADV_HUGEPAGE)`, honoured when THP is `always` or
//! `madvise`), which removes most of the page walks. Elsewhere it is a plain `vec!`.

/// Arrays at least this large are advised to use huge pages (smaller ones fit in cache).
const HUGE_MIN_BYTES: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

#[cfg(target_os = "linux")]
mod sys {
    extern "C" {
        pub fn madvise(addr: *mut core::ffi::c_void, len: usize, advice: i32) -> i32;
    }
    pub const MADV_HUGEPAGE: i32 = 14;
}

/// Advise huge pages for the whole 2 MiB pages inside `[p, p + bytes)` (a hint; errors are
/// ignored: the memory is usable either way).
#[allow(unused_variables)]
fn advise_huge(p: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        let start = (p as usize).next_multiple_of(HUGE_PAGE);
        let end = (p as usize + bytes) & !(HUGE_PAGE - 1);
        if end > start {
            // SAFETY: the range lies inside one live allocation owned by the caller; madvise
            // with MADV_HUGEPAGE changes no contents and cannot invalidate the mapping.
            unsafe {
                sys::madvise(start as *mut core::ffi::c_void, end - start, sys::MADV_HUGEPAGE);
            }
        }
    }
}

/// `vec![x; n]`, backed by huge pages where the kernel allows it.
pub fn filled<T: Clone>(n: usize, x: T) -> Vec<T> {
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_MIN_BYTES {
        return vec![x; n];
    }
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise_huge(v.as_mut_ptr() as *mut u8, bytes);
    v.resize(n, x);
    v
}

/// Peak resident set size of this process in KiB (`VmHWM`), if known.
pub fn peak_rss_kib() -> Option<u64> {
    status_kib("VmHWM:")
}

/// Current resident set size of this process in KiB (`VmRSS`), if known.
pub fn rss_kib() -> Option<u64> {
    status_kib("VmRSS:")
}

fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn filled_is_vec() {
        assert_eq!(super::filled(3, 7u32), vec![7, 7, 7]);
        let big = super::filled(3 << 20, 1u64);
        assert_eq!(big.len(), 3 << 20);
        assert!(big.iter().all(|&x| x == 1));
    }
}
