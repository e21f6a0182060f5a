//! Page ids to simulator keys. A file page (dev, ino, index) gets a small file number for its
//! (dev, ino) pair, and the key is `file << 40 | index`; a physical frame (dev 0, ino 0) has
//! file number 0, so its key is the frame number. Memory grows with the number of distinct
//! files, not with the trace.

use crate::request::{PageId, Record, Request};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hasher for the (dev, ino) table (FxHash-like): the table is tiny and
/// looked up once per request, where SipHash would cost more than the rest of the decoding.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub const INDEX_BITS: u32 = 40;
pub const MAX_FILES: u32 = (1 << (63 - INDEX_BITS)) - 1;

/// Slots of the direct-mapped cache in front of the file table.
const CACHE: usize = 256;

pub struct Interner {
    files: HashMap<(u32, u64), u64, BuildHasherDefault<FxHasher>>,
    /// Direct-mapped cache of recent lookups: (dev, ino, file number); file 0 = empty slot.
    cache: Box<[(u32, u64, u64); CACHE]>,
}

impl Default for Interner {
    fn default() -> Self {
        Interner { files: HashMap::default(), cache: Box::new([(0, 0, 0); CACHE]) }
    }
}

impl Interner {
    pub fn new() -> Interner {
        Interner::default()
    }

    pub fn files(&self) -> usize {
        self.files.len()
    }

    #[inline]
    pub fn key(&mut self, p: &PageId) -> Result<u64, String> {
        if p.index >= 1 << INDEX_BITS {
            return Err(format!("page index {} too large (max 2^40 - 1)", p.index));
        }
        if p.is_physical() {
            return Ok(p.index);
        }
        let h = (p.ino ^ u64::from(p.dev).rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let slot = (h >> 56) as usize % CACHE;
        let c = self.cache[slot];
        if c.2 != 0 && c.0 == p.dev && c.1 == p.ino {
            return Ok(c.2 << INDEX_BITS | p.index);
        }
        let next = self.files.len() as u64 + 1;
        let file = *self.files.entry((p.dev, p.ino)).or_insert(next);
        if file > MAX_FILES as u64 {
            return Err(format!("more than {MAX_FILES} distinct files"));
        }
        self.cache[slot] = (p.dev, p.ino, file);
        Ok(file << INDEX_BITS | p.index)
    }

    #[inline]
    pub fn request(&mut self, r: &Record) -> Result<Request, String> {
        Ok(Request {
            time: r.time,
            key: self.key(&r.page)?,
            foreground: r.state.is_foreground(),
            write: r.write,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        let mut i = Interner::new();
        let phys = PageId { dev: 0, ino: 0, index: 5 };
        let a = PageId { dev: 8, ino: 100, index: 5 };
        let b = PageId { dev: 8, ino: 101, index: 5 };
        assert_eq!(i.key(&phys).unwrap(), 5);
        assert_eq!(i.key(&a).unwrap(), (1 << 40) | 5);
        assert_eq!(i.key(&b).unwrap(), (2 << 40) | 5);
        assert_eq!(i.key(&a).unwrap(), (1 << 40) | 5);
        assert!(i.key(&PageId { index: 1 << 40, ..phys }).is_err());
    }
}
