//! A set-associative cache array with true LRU, stored flat (one slot per way).
//! It only holds tags and per-way state; the protocol decides what the states mean.

use crate::params::CacheGeom;

const EMPTY: u64 = u64::MAX;

pub struct SetAssoc {
    sets: u64,
    /// `sets - 1` when `sets` is a power of two (every preset), else 0 and `%` is used.
    set_mask: u64,
    ways: usize,
    tags: Vec<u64>,
    state: Vec<u8>,
    /// Free per-way byte for the owner (the L2 keeps the in-tile L1 presence mask here).
    aux: Vec<u8>,
    last_use: Vec<u64>,
    /// Free per-way word for the owner (the L2 keeps the line's directory slot here).
    word: Vec<u32>,
    clock: u64,
}

impl SetAssoc {
    pub fn new(geom: &CacheGeom) -> SetAssoc {
        let sets = geom.sets() as u64;
        let ways = geom.ways as usize;
        let slots = sets as usize * ways;
        SetAssoc {
            sets,
            set_mask: if sets.is_power_of_two() { sets - 1 } else { 0 },
            ways,
            tags: vec![EMPTY; slots],
            state: vec![0; slots],
            aux: vec![0; slots],
            last_use: vec![0; slots],
            word: vec![0; slots],
            clock: 0,
        }
    }

    #[inline(always)]
    fn first_slot(&self, line: u64) -> usize {
        let set = if self.set_mask != 0 || self.sets == 1 { line & self.set_mask } else { line % self.sets };
        set as usize * self.ways
    }

    /// The slot holding `line`, if present.
    #[inline(always)]
    pub fn find(&self, line: u64) -> Option<usize> {
        let base = self.first_slot(line);
        let set = &self.tags[base..base + self.ways];
        for (w, &t) in set.iter().enumerate() {
            if t == line {
                return Some(base + w);
            }
        }
        None
    }

    #[inline(always)]
    pub fn touch(&mut self, slot: usize) {
        self.clock += 1;
        self.last_use[slot] = self.clock;
    }

    /// The slot `line` would go to: an empty way, else the least recently used one.
    /// Returns the slot and the line it currently holds.
    #[inline]
    pub fn victim(&self, line: u64) -> (usize, Option<u64>) {
        let base = self.first_slot(line);
        let mut best = base;
        for slot in base..base + self.ways {
            if self.tags[slot] == EMPTY {
                return (slot, None);
            }
            if self.last_use[slot] < self.last_use[best] {
                best = slot;
            }
        }
        (best, Some(self.tags[best]))
    }

    #[inline]
    pub fn fill(&mut self, slot: usize, line: u64, state: u8) {
        self.tags[slot] = line;
        self.state[slot] = state;
        self.aux[slot] = 0;
        self.touch(slot);
    }

    #[inline]
    pub fn remove(&mut self, slot: usize) {
        self.tags[slot] = EMPTY;
        self.state[slot] = 0;
        self.aux[slot] = 0;
    }

    #[inline]
    pub fn line(&self, slot: usize) -> u64 {
        self.tags[slot]
    }

    #[inline(always)]
    pub fn state(&self, slot: usize) -> u8 {
        self.state[slot]
    }

    #[inline]
    pub fn set_state(&mut self, slot: usize, state: u8) {
        self.state[slot] = state;
    }

    #[inline]
    pub fn word(&self, slot: usize) -> u32 {
        self.word[slot]
    }

    #[inline]
    pub fn set_word(&mut self, slot: usize, word: u32) {
        self.word[slot] = word;
    }

    #[inline]
    pub fn aux(&self, slot: usize) -> u8 {
        self.aux[slot]
    }

    #[inline]
    pub fn set_aux(&mut self, slot: usize, aux: u8) {
        self.aux[slot] = aux;
    }

    /// Every (slot, line) present; for the full checker sweep.
    pub fn lines(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.tags.iter().enumerate().filter(|(_, &t)| t != EMPTY).map(|(s, &t)| (s, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_victim_is_least_recently_touched() {
        // 2 sets x 2 ways
        let mut c = SetAssoc::new(&CacheGeom { size_kib: 1, ways: 8 });
        assert_eq!(c.sets, 2);
        let mut c2 = SetAssoc::new(&CacheGeom { size_kib: 1, ways: 2 });
        for line in [0u64, 16] {
            let (slot, old) = c2.victim(line);
            assert_eq!(old, None);
            c2.fill(slot, line, 1);
        }
        let s0 = c2.find(0).unwrap();
        c2.touch(s0);
        assert_eq!(c2.victim(32).1, Some(16));
        let (slot, _) = c.victim(3);
        c.fill(slot, 3, 2);
        assert_eq!(c.find(3), Some(slot));
        c.remove(slot);
        assert_eq!(c.find(3), None);
    }
}
