//! 2Q, full version (Johnson & Shasha, VLDB 1994): A1in is a FIFO of pages seen once,
//! A1out a FIFO of ghost entries (page ids only) of pages evicted from A1in, Am an LRU of
//! pages re-referenced after leaving A1in.
//!
//!   hit in Am    -> move to Am MRU
//!   hit in A1in  -> nothing (correlated reference)
//!   ghost in A1out -> miss; reclaim a frame; page goes to Am MRU
//!   otherwise    -> miss; reclaim a frame; page goes to A1in head
//!   reclaim: a free frame if any; else if |A1in| > Kin, evict the A1in tail and remember its
//!            id at the A1out head (dropping the A1out tail beyond Kout); else evict the Am tail.
//!
//! Placement over DRAM+PCM is device-blind as for LRU (interleaved free frames, then the
//! victim's frame). Slots `0..frames` are frames; slots `frames..frames+Kout` hold ghosts.

use super::frames::{dev_of, Geometry};
use super::Policy;
use crate::lru_list::{Links, List};
use crate::meter::Meter;
use crate::pagemap::PageMap;

pub struct TwoQ {
    dram: usize,
    frames: u32,
    kin: usize,
    kout: usize,
    map: PageMap,
    /// Nodes hold the page key (frames and ghosts), dirty bit, and `aux` = 1 if in Am.
    links: Links,
    am: List,
    a1in: List,
    a1out: List,
    free: Vec<u32>,
    ghost_free: Vec<u32>,
}

impl TwoQ {
    pub fn new(g: Geometry, kin_frac: f64, kout_frac: f64) -> Result<TwoQ, String> {
        g.check(false)?;
        if !(0.0..=1.0).contains(&kin_frac) || kout_frac < 0.0 {
            return Err(format!("2Q: need 0 <= kin <= 1 and kout >= 0 (got {kin_frac}, {kout_frac})"));
        }
        let n = g.frames();
        let kin = ((kin_frac * n as f64).round() as usize).max(1);
        let kout = (kout_frac * n as f64).round() as usize;
        let slots = n + kout;
        Ok(TwoQ {
            dram: g.dram,
            frames: n as u32,
            kin,
            kout,
            map: PageMap::with_capacity(slots),
            links: Links::new(slots),
            am: List::default(),
            a1in: List::default(),
            a1out: List::default(),
            free: g.interleaved_free_stack(),
            ghost_free: (n as u32..slots as u32).rev().collect(),
        })
    }

    /// Remember `key` in A1out.
    fn add_ghost(&mut self, key: u64) {
        if self.kout == 0 {
            return;
        }
        let g = match self.ghost_free.pop() {
            Some(g) => g,
            None => {
                let t = self.a1out.tail;
                self.links.remove(&mut self.a1out, t);
                self.map.remove(self.links.node(t).key);
                t
            }
        };
        self.links.set(g, key, false, 0);
        self.map.insert(key, g);
        self.links.push_front(&mut self.a1out, g);
    }

    fn reclaim(&mut self, m: &mut Meter) -> u32 {
        if let Some(f) = self.free.pop() {
            return f;
        }
        let from_a1in = self.a1in.len > self.kin || self.am.is_empty();
        let y = if from_a1in { self.a1in.tail } else { self.am.tail };
        if from_a1in {
            self.links.remove(&mut self.a1in, y);
        } else {
            self.links.remove(&mut self.am, y);
        }
        let node = *self.links.node(y);
        let key = node.key;
        self.map.remove(key);
        m.evict(dev_of(y, self.dram), node.dirty, node.fg);
        if from_a1in {
            self.add_ghost(key);
        }
        y
    }

    fn place(&mut self, key: u64, to_am: bool, m: &mut Meter) -> u32 {
        let f = self.reclaim(m);
        self.links.set(f, key, false, u32::from(to_am));
        self.map.insert(key, f);
        if to_am {
            self.links.push_front(&mut self.am, f);
        } else {
            self.links.push_front(&mut self.a1in, f);
        }
        m.fill(dev_of(f, self.dram), f);
        f
    }
}

impl Policy for TwoQ {
    fn name(&self) -> &'static str {
        "2q"
    }

    fn access(&mut self, key: u64, write: bool, fg: bool, m: &mut Meter) {
        let f = match self.map.get(key) {
            Some(s) if s < self.frames => {
                m.hit(dev_of(s, self.dram));
                if self.links.node(s).aux == 1 {
                    self.links.move_to_front(&mut self.am, s);
                }
                s
            }
            Some(ghost) => {
                self.links.remove(&mut self.a1out, ghost);
                self.map.remove(key);
                self.ghost_free.push(ghost);
                self.place(key, true, m)
            }
            None => self.place(key, false, m),
        };
        self.links.access(m, f, dev_of(f, self.dram), f, write, fg);
    }

    linked_lookups!(a1in);

    fn resident(&self) -> usize {
        self.am.len + self.a1in.len
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::super::PolicyParams;

    /// 1 DRAM (frame 0) + 3 PCM (frames 1..3); n = 4, Kin = round(0.25*4) = 1,
    /// Kout = round(0.5*4) = 2. Interleaved free order for d=1, n=4: PCM 1, 2, 3, then DRAM 0.
    ///
    ///  # req  what happens                                            ops
    ///  1 W A  miss -> A1in [A] frame 1 (PCM)                          S_R P_W | P_W
    ///  2 R B  miss -> A1in [B A] frame 2                              S_R P_W | P_R
    ///  3 R A  hit in A1in: no move                                    P_R
    ///  4 R C  miss -> A1in [C B A] frame 3                            S_R P_W | P_R
    ///  5 W D  miss -> A1in [D C B A] frame 0 (DRAM)                   S_R D_W | D_W
    ///  6 R E  miss, full; |A1in| = 4 > Kin: evict A1in tail A (frame 1, dirty: P_R S_W),
    ///         A1out [A]; E -> A1in, frame 1                           S_R P_W | P_R
    ///  7 R A  ghost hit -> miss; |A1in| = 4 > 1: evict B (frame 2, clean), A1out [B]
    ///         (A left A1out); A -> Am [A], frame 2                    S_R P_W | P_R
    ///  8 R A  hit in Am                                               P_R
    ///  9 W F  miss; |A1in| = 3 > 1: evict C (frame 3, clean); A1out [C B];
    ///         F -> A1in [F E D], frame 3                              S_R P_W | P_W
    /// 10 R B  ghost hit -> miss; |A1in| = 3 > 1: evict D (frame 0, dirty: D_R S_W);
    ///         A1out [D C] (B left); B -> Am [B A], frame 0 (DRAM)     S_R D_W | D_R
    /// 11 R G  miss; |A1in| = 2 > 1: evict E (frame 1, clean); A1out gets E, full at Kout=2
    ///         so the tail C is dropped: [E D]; G -> A1in [G F], frame 1  S_R P_W | P_R
    ///
    /// hits: #3 (PCM), #8 (PCM) = 2. evictions: A, B, C, D, E = 5; write-backs: A, D = 2.
    /// D_R: #10 evict D, #10 access = 2.  D_W: #5 fill+access, #10 fill = 3.
    /// P_R: #2 #3 #4 #6(evict A) #6 #7 #8 #11 = 8.
    /// P_W: #1 fill+access, #2 #4 #6 #7 fills, #9 fill+access, #11 fill = 9.
    /// S_R: 9 misses (#1 2 4 5 6 7 9 10 11). S_W: 2.
    /// time = 2*1 + 3*1 + 8*2 + 9*50 + 9*1000 + 2*1000 = 5 + 16 + 450 + 11000 = 11471
    /// energy = (2 + 3 + 8) * 3276.8 + 9 * 32768 = 42598.4 + 294912 = 337510.4
    /// wear: frame 1: #1 fill, #1 access, #6 fill, #11 fill = 4; frame 2: #2, #7 = 2;
    ///       frame 3: #4, #9 fill, #9 access = 3.
    #[test]
    fn hand_trace() {
        let t = trace("W1 R2 R1 R3 W4 R5 R1 R1 W6 R2 R7");
        let r = run_with("2q", 1, 3, &t, &PolicyParams::default());
        r.check([2, 0, 2], [5, 2], [0, 0], [2, 3, 8, 9, 9, 2], [11471.0, 337_510.4], &[4, 2, 3]);
    }

    /// Am is LRU: with Kin large (1.0 -> Kin = n) A1in is never over its limit, so once full
    /// the victim comes from Am when Am is not empty.
    /// 2 PCM frames only (dram 0), n = 2, Kin = 2, Kout = 1.
    ///  1 R A  A1in [A]          2 R B  A1in [B A]
    ///  3 R C  full, |A1in| = 2 not > 2, Am empty -> evict A1in tail A, A1out [A]; A1in [C B]
    ///  4 R A  ghost -> miss; |A1in| = 2, Am empty -> evict B, A1out [B] (A removed, Kout 1);
    ///         A -> Am [A]
    ///  5 R D  |A1in| = 1 not > 2, Am not empty -> evict Am tail A (no ghost); A1in [D C]
    ///  6 R C  hit (A1in)
    /// hits 1; evictions 3; all clean.
    #[test]
    fn am_victim_when_a1in_small() {
        let p = PolicyParams { kin: 1.0, kout: 0.5, ..PolicyParams::default() };
        let t = [(1, 'R'), (2, 'R'), (3, 'R'), (1, 'R'), (4, 'R'), (3, 'R')];
        let r = run_with("2q", 0, 2, &fg_all(&t), &p);
        assert_eq!(r.total.hits, 1);
        assert_eq!((r.total.evictions, r.total.writebacks), (3, 0));
    }
}
