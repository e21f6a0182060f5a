//! LRU over the whole memory (DRAM + PCM as one unified cache).
//!
//! Placement is device-blind: a missed page takes a free frame in interleaved DRAM/PCM order
//! (see `Geometry::interleaved_free_stack`) and, once memory is full, the frame of the LRU
//! victim, wherever that frame is. Pages never migrate.

use super::frames::{dev_of, Geometry};
use super::Policy;
use crate::lru_list::{Links, List, EVICT_AHEAD};
use crate::meter::Meter;
use crate::pagemap::PageMap;

pub struct Lru {
    dram: usize,
    map: PageMap,
    links: Links,
    list: List,
    free: Vec<u32>,
}

impl Lru {
    pub fn new(g: Geometry) -> Result<Lru, String> {
        g.check(false)?;
        let n = g.frames();
        Ok(Lru {
            dram: g.dram,
            map: PageMap::with_capacity(n),
            links: Links::new(n),
            list: List::default(),
            free: g.interleaved_free_stack(),
        })
    }
}

impl Policy for Lru {
    fn name(&self) -> &'static str {
        "lru"
    }

    #[inline]
    fn access(&mut self, key: u64, write: bool, _fg: bool, m: &mut Meter) {
        let f = match self.map.get(key) {
            Some(f) => {
                m.hit(dev_of(f, self.dram));
                self.links.move_to_front(&mut self.list, f);
                f
            }
            None => {
                let f = match self.free.pop() {
                    Some(f) => f,
                    None => {
                        let v = self.list.tail;
                        self.links.remove(&mut self.list, v);
                        let node = self.links.node(v);
                        let (k, d) = (node.key, node.dirty);
                        self.map.remove(k);
                        m.evict(dev_of(v, self.dram), d);
                        self.links.prefetch_lru_end(&self.list, EVICT_AHEAD, |i, n| {
                            self.map.prefetch(n.key);
                            m.prefetch_wear(i);
                        });
                        v
                    }
                };
                self.links.set(f, key, false, 0);
                self.map.insert(key, f);
                self.links.push_front(&mut self.list, f);
                m.fill(dev_of(f, self.dram), f);
                f
            }
        };
        m.access(dev_of(f, self.dram), f, write);
        self.links.node_mut(f).dirty |= write;
    }

    #[inline]
    fn prefetch(&self, key: u64) {
        self.map.prefetch(key);
    }

    #[inline]
    fn prefetch_slot(&self, key: u64) {
        self.links.prefetch_slot_of(&self.map, key);
    }

    #[inline]
    fn prefetch_near(&self, key: u64, _foreground: bool) {
        if !self.links.prefetch_neighbors_of(&self.map, key) {
            self.links.prefetch_tail(&self.list, |k| self.map.prefetch(k));
        }
    }

    fn resident(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;

    /// 1 DRAM frame (frame 0) + 2 PCM frames (1, 2). Interleaved free order for d=1, n=3:
    /// k=0: (1*1)/3=0 > 0? no -> PCM 1; k=1: 2/3=0 -> PCM 2; k=2: 3/3=1 > 0 -> DRAM 0.
    ///
    /// trace (all foreground):      frame  event
    ///  1 W A  miss, free -> frame 1 (PCM)   fill: S_R, P_W; access P_W          A dirty
    ///  2 R B  miss, free -> frame 2 (PCM)   fill: S_R, P_W; access P_R
    ///  3 W C  miss, free -> frame 0 (DRAM)  fill: S_R, D_W; access D_W          C dirty
    ///  4 R A  hit in PCM (frame 1)          access P_R;  LRU order now A C B
    ///  5 R D  miss, evict LRU = B (clean, frame 2, PCM): no write-back
    ///                                       fill: S_R, P_W (frame 2); access P_R
    ///  6 W C  hit DRAM frame 0              access D_W;  order C D A
    ///  7 R E  miss, evict LRU = A (dirty, frame 1 PCM): P_R + S_W
    ///                                       fill: S_R, P_W (frame 1); access P_R
    ///
    /// totals: hits 2 (1 DRAM, 1 PCM); evictions 2, write-backs 1
    ///   D_R 0, D_W 1+1+... = fill C 1 + access C 1 + access C(6) 1 = 3
    ///   P_R: access B, access A(4), access D, evict A, access E = 5
    ///   P_W: fill A, access A, fill B, fill D, fill E = 5
    ///   S_R 5 fills, S_W 1
    /// time = 0*1 + 3*1 + 5*2 + 5*50 + 5*1000 + 1*1000 = 3 + 10 + 250 + 6000 = 6263
    /// energy (nJ) = (3 DRAM W + 5 PCM R) * 3276.8 + 5 PCM W * 32768 = 26214.4 + 163840 = 190054.4
    /// PCM wear: frame 1 = fill A, access A, fill E = 3; frame 2 = fill B, fill D = 2.
    #[test]
    fn hand_trace() {
        let trace = [(1, 'W'), (2, 'R'), (3, 'W'), (1, 'R'), (4, 'R'), (3, 'W'), (5, 'R')];
        let r = run("lru", 1, 2, &fg_all(&trace));
        assert_eq!(r.total.hits, 2);
        assert_eq!((r.total.dram_hits, r.total.pcm_hits), (1, 1));
        assert_eq!((r.total.evictions, r.total.writebacks), (2, 1));
        assert_eq!(r.total.ops, [0, 3, 5, 5, 5, 1]);
        assert_eq!((r.total.to_dram, r.total.to_pcm), (0, 0));
        assert_eq!(r.time, 6263.0);
        // paper-evict reading: no storage charge per transfer, 1000 per eviction (2 here):
        // 3 + 10 + 250 + 2 * 1000 = 2263.
        assert_eq!(crate::model::TimeModel::paper_evict().time(&r.total), 2263.0);
        assert_close(r.energy, 190_054.4);
        assert_eq!(r.wear, vec![3, 2]);
    }
}
