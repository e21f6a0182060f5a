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

/// Entries live in a slab; a hash map finds a line's slot. The L2 keeps the slot of every
/// line it holds, so only L2 misses pay for a hash lookup.
#[derive(Default)]
pub struct Directory {
    slot_of: LineMap<u32>,
    pub entries: Vec<DirEntry>,
    lines: Vec<u64>,
}

impl Directory {
    /// The slot of `line`, creating an empty entry the first time.
    #[inline]
    pub fn slot(&mut self, line: u64) -> usize {
        let next = self.entries.len() as u32;
        let slot = *self.slot_of.entry(line).or_insert(next);
        if slot == next {
            self.entries.push(DirEntry::default());
            self.lines.push(line);
        }
        slot as usize
    }

    pub fn find(&self, line: u64) -> Option<usize> {
        self.slot_of.get(&line).map(|&s| s as usize)
    }

    pub fn get(&self, line: u64) -> Option<&DirEntry> {
        self.slot_of.get(&line).map(|&s| &self.entries[s as usize])
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
