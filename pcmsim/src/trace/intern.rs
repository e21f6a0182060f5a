//! Page ids to simulator keys. A file page (dev, ino, index) gets a small file number for its
//! (dev, ino) pair, and the key is `file << 40 | index`; a physical frame (dev 0, ino 0) has
//! file number 0, so its key is the frame number. Memory grows with the number of distinct
//! files, not with the trace.

use crate::request::{PageId, Record, Request};
use std::collections::HashMap;

pub const INDEX_BITS: u32 = 40;
pub const MAX_FILES: u32 = (1 << (63 - INDEX_BITS)) - 1;

#[derive(Default)]
pub struct Interner {
    files: HashMap<(u32, u64), u64>,
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
        let next = self.files.len() as u64 + 1;
        let file = *self.files.entry((p.dev, p.ino)).or_insert(next);
        if file > MAX_FILES as u64 {
            return Err(format!("more than {MAX_FILES} distinct files"));
        }
        Ok(file << INDEX_BITS | p.index)
    }

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
