//! Open-addressing hash map from a page key (`u64`) to a slot (`u32`): linear probing,
//! Fibonacci hashing, backward-shift deletion. Sized once for the cache; it grows only if
//! filled past half, so steady-state requests never allocate.

/// The key value that marks an empty bucket; never a valid page key.
pub const EMPTY_KEY: u64 = u64::MAX;

/// Key and value side by side: one cache line per probe.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Bucket {
    key: u64,
    val: u32,
}

const EMPTY: Bucket = Bucket { key: EMPTY_KEY, val: 0 };

/// Prefetch hint for the cache line holding `p` (a no-op off x86-64).
#[inline]
pub fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

pub struct PageMap {
    b: Vec<Bucket>,
    shift: u32,
    mask: usize,
    len: usize,
}

impl PageMap {
    /// A map that holds `entries` keys without growing.
    pub fn with_capacity(entries: usize) -> PageMap {
        let cap = (entries.max(4) * 2).next_power_of_two();
        PageMap { b: crate::mem::filled(cap, EMPTY), shift: 64 - cap.trailing_zeros(), mask: cap - 1, len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    fn find(&self, key: u64) -> Result<usize, usize> {
        let mut i = self.home(key);
        loop {
            let k = self.b[i].key;
            if k == key {
                return Ok(i);
            }
            if k == EMPTY_KEY {
                return Err(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Hint the CPU to fetch the bucket where `key` would start probing.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        prefetch_ptr(self.b.as_ptr().wrapping_add(self.home(key)));
    }

    #[inline]
    pub fn get(&self, key: u64) -> Option<u32> {
        debug_assert_ne!(key, EMPTY_KEY);
        self.find(key).ok().map(|i| self.b[i].val)
    }

    /// Insert or overwrite. Returns true if the key was new.
    #[inline]
    pub fn insert(&mut self, key: u64, val: u32) -> bool {
        debug_assert_ne!(key, EMPTY_KEY);
        match self.find(key) {
            Ok(i) => {
                self.b[i].val = val;
                false
            }
            Err(i) => {
                self.b[i] = Bucket { key, val };
                self.len += 1;
                if self.len * 2 > self.b.len() {
                    self.grow();
                }
                true
            }
        }
    }

    /// Remove a key; returns its value if it was present.
    #[inline]
    pub fn remove(&mut self, key: u64) -> Option<u32> {
        let mut hole = self.find(key).ok()?;
        let val = self.b[hole].val;
        self.len -= 1;
        let mut j = hole;
        loop {
            j = (j + 1) & self.mask;
            let k = self.b[j].key;
            if k == EMPTY_KEY {
                break;
            }
            let home = self.home(k);
            // Move the entry back if its home is not within (hole, j].
            if (j.wrapping_sub(home) & self.mask) >= (j.wrapping_sub(hole) & self.mask) {
                self.b[hole] = self.b[j];
                hole = j;
            }
        }
        self.b[hole] = EMPTY;
        Some(val)
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.b);
        let mut bigger = PageMap::with_capacity(old.len());
        for e in old {
            if e.key != EMPTY_KEY {
                bigger.insert(e.key, e.val);
            }
        }
        *self = bigger;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn behaves_like_std_hashmap() {
        let mut m = PageMap::with_capacity(8);
        let mut r: HashMap<u64, u32> = HashMap::new();
        let mut x: u64 = 1;
        for step in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = x % 512; // many collisions and reuses
            match x % 3 {
                0 => assert_eq!(m.remove(key), r.remove(&key)),
                _ => assert_eq!(m.insert(key, step), r.insert(key, step).is_none()),
            }
            assert_eq!(m.len(), r.len());
        }
        for (k, v) in &r {
            assert_eq!(m.get(*k), Some(*v));
        }
    }
}
