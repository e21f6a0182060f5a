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
    fn access(&mut self, key: u64, write: bool, fg: bool, m: &mut Meter) {
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
                        let (k, d, was_fg) = (node.key, node.dirty, node.fg);
                        self.map.remove(k);
                        m.evict(dev_of(v, self.dram), d, was_fg);
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
        self.links.access(m, f, dev_of(f, self.dram), f, write, fg);
    }

    linked_lookups!(list);
    resident_pages_are_mapped!();
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
        let r = run("lru", 1, 2, &trace("W1 R2 W3 R1 R4 W3 R5"));
        r.check([2, 1, 1], [2, 1], [0, 0], [0, 3, 5, 5, 5, 1], [6263.0, 190_054.4], &[3, 2]);
        // paper-evict reading: no storage charge per transfer, 1000 per eviction (2 here):
        // 3 + 10 + 250 + 2 * 1000 = 2263.
        assert_eq!(crate::model::TimeModel::paper_evict().time(&r.total), 2263.0);
    }

    /// Foreground pages evicted by background requests (frames as in `hand_trace`):
    ///  1 F R A  miss -> frame 1 (PCM)   S_R P_W P_R
    ///  2 F R B  miss -> frame 2 (PCM)   S_R P_W P_R
    ///  3 B R C  miss -> frame 0 (DRAM)
    ///  4 B R D  miss, evicts A: a foreground page, by a background request -> frame 1
    ///  5 F R E  miss, evicts B: a foreground page, by a foreground request -> frame 2
    ///                                   S_R P_W P_R
    ///  6 B R C  hit; LRU order C E D
    ///  7 B R F  miss, evicts D: a background page
    /// Foreground: ops S_R 3, P_W 3, P_R 3, 1 eviction; background evicted 1 foreground page.
    ///   paper:          3*2 + 3*50 + 3*1000         = 3156
    ///   paper-evict:    3*2 + 3*50 + 1*1000         = 1156
    ///   paper-evict-fg: 1156 + 1 foreground victim of the background * 1000 = 2156
    #[test]
    fn foreground_victims_of_background_requests() {
        let r = run("lru", 1, 2, &trace("R1 R2 r3 r4 R5 r3 r6"));
        assert_eq!((r.fg.evictions, r.fg.fg_victims), (1, 1));
        assert_eq!((r.other.evictions, r.other.fg_victims), (2, 1));
        assert_eq!(r.fg.ops, [0, 0, 3, 3, 3, 0]);
        use crate::model::TimeModel;
        let fg_time = |tm: TimeModel| tm.fg_time(&r.fg, &r.other);
        assert_eq!(r.fg_time, 3156.0);
        assert_eq!(fg_time(TimeModel::paper()), 3156.0);
        assert_eq!(fg_time(TimeModel::paper_evict()), 1156.0);
        assert_eq!(fg_time(TimeModel::paper_evict_fg()), 2156.0);
        // the run's total time is the same under both eviction readings
        assert_eq!(TimeModel::paper_evict().time(&r.total), TimeModel::paper_evict_fg().time(&r.total));
    }
}
