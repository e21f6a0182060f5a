//! The distributed tag directory: one full-map entry per line ever cached, kept by the
//! line's home tile. It also remembers, per tile and per core, whether the line was ever
//! cached there and whether the last copy was lost to coherence: that is what classifies a
//! miss as cold, capacity/conflict or coherence.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Directory state of a line across tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirState {
    /// No tile holds the line.
    Uncached,
    /// Tiles in `sharers` hold clean copies; `forwarder` (if any) holds it in F.
    Shared,
    /// One tile holds it in E or M (the directory does not know which: E->M is silent).
    Owned,
}

#[derive(Clone, Copy, Debug)]
pub struct DirEntry {
    pub state: DirState,
    /// `Owned`: the owner tile. `Shared`: the F holder, or `NO_TILE`.
    pub owner: u8,
    pub sharers: u128,
    pub l2_seen: u128,
    pub l2_lost_to_coherence: u128,
    pub l1_seen: u128,
    pub l1_lost_to_coherence: u128,
    /// The causal clock (README "Modelled time"): the modelled time (ns) of the last store to
    /// the line that the model saw, by vCPU `writer`, in clock generation `wgen` (the clocks
    /// restart at every region marker; an older generation's time means nothing).
    pub wtime_ns: f64,
    pub wgen: u32,
    pub writer: u16,
}

pub const NO_TILE: u8 = u8::MAX;

impl Default for DirEntry {
    fn default() -> Self {
        DirEntry {
            state: DirState::Uncached,
            owner: NO_TILE,
            sharers: 0,
            l2_seen: 0,
            l2_lost_to_coherence: 0,
            l1_seen: 0,
            l1_lost_to_coherence: 0,
            wtime_ns: 0.0,
            wgen: 0,
            writer: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissKind {
    Cold = 0,
    Capacity = 1,
    Coherence = 2,
}

#[inline]
pub fn bit(i: usize) -> u128 {
    1u128 << i
}

impl DirEntry {
    #[inline]
    pub fn classify(seen: u128, lost: u128, who: usize) -> MissKind {
        if seen & bit(who) == 0 {
            MissKind::Cold
        } else if lost & bit(who) != 0 {
            MissKind::Coherence
        } else {
            MissKind::Capacity
        }
    }
}

/// Lines are already well mixed by the caller's use; a multiply-shift hash is enough.
#[derive(Default)]
pub struct LineHasher(u64);

impl Hasher for LineHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

pub type LineMap<V> = HashMap<u64, V, BuildHasherDefault<LineHasher>>;

/// Lines per chunk of the direct-indexed slot table (256 KiB of guest-physical memory).
const CHUNK_SHIFT: u32 = 12;
const CHUNK_LINES: usize = 1 << CHUNK_SHIFT;
/// Lines below this (guest-physical addresses below 256 GiB) use the direct table; any line
/// above it falls back to a hash map.
const DIRECT_LINES: u64 = 1 << 32;

/// Entries live in a slab; a line's slot is found in a two-level direct-indexed table
/// (chunks of 4096 lines, 16 KiB, allocated zeroed on first use, so untouched guest memory costs
/// nothing), which stores slot + 1 (0 = no entry yet). The L2 keeps the slot of every line it
/// holds, so only L2 misses look here at all.
#[derive(Default)]
pub struct Directory {
    chunks: Vec<Option<Box<[u32]>>>,
    far: LineMap<u32>,
    pub entries: Vec<DirEntry>,
    lines: Vec<u64>,
}

impl Directory {
    /// The slot of `line`, creating an empty entry the first time.
    #[inline]
    pub fn slot(&mut self, line: u64) -> usize {
        let next = self.entries.len() as u32;
        let cell = if line < DIRECT_LINES {
            let c = (line >> CHUNK_SHIFT) as usize;
            if c >= self.chunks.len() {
                self.chunks.resize_with(c + 1, || None);
            }
            let chunk = self.chunks[c].get_or_insert_with(|| vec![0u32; CHUNK_LINES].into_boxed_slice());
            &mut chunk[line as usize & (CHUNK_LINES - 1)]
        } else {
            self.far.entry(line).or_insert(0)
        };
        if *cell == 0 {
            *cell = next + 1;
            self.entries.push(DirEntry::default());
            self.lines.push(line);
            return next as usize;
        }
        (*cell - 1) as usize
    }

    pub fn find(&self, line: u64) -> Option<usize> {
        let cell = if line < DIRECT_LINES {
            let chunk = self.chunks.get((line >> CHUNK_SHIFT) as usize)?.as_ref()?;
            chunk[line as usize & (CHUNK_LINES - 1)]
        } else {
            *self.far.get(&line)?
        };
        cell.checked_sub(1).map(|s| s as usize)
    }

    pub fn get(&self, line: u64) -> Option<&DirEntry> {
        self.find(line).map(|s| &self.entries[s])
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn lines(&self) -> impl Iterator<Item = u64> + '_ {
        self.lines.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_stable_near_and_far() {
        let mut d = Directory::default();
        let lines = [0u64, 1, CHUNK_LINES as u64, 5 << 30, DIRECT_LINES - 1, DIRECT_LINES, u64::MAX >> 6];
        for (i, &l) in lines.iter().enumerate() {
            assert_eq!(d.find(l), None);
            assert_eq!(d.slot(l), i);
        }
        for (i, &l) in lines.iter().enumerate() {
            assert_eq!(d.slot(l), i);
            assert_eq!(d.find(l), Some(i));
        }
        assert_eq!(d.len(), lines.len());
        assert_eq!(d.find(2), None);
    }
}
