//! The paper's foreground/background placement policy (hybrid DRAM/PCM buffer cache, KIISE 2015).
//!
//! Two LRU lists, one per device, each page with a reference count:
//!   * the count is 0 when a page enters memory and is incremented on every re-reference (hit);
//!   * victim selection on a list: look at the LRU end; a page with count 0 is the victim;
//!     otherwise decrement its count, move it to the MRU end and look at the next one;
//!   * hit in DRAM: move to DRAM MRU;
//!   * hit in PCM: if the request is foreground, the page is dirty (written before this request)
//!     and its count (after the increment) is >= 2, migrate it to DRAM MRU (making room in DRAM
//!     as on a foreground miss, the DRAM victim going to the PCM frame just freed); else move it
//!     to PCM MRU;
//!   * foreground miss: if DRAM is full (if PCM is full, evict the PCM victim to storage; move
//!     the DRAM victim to PCM MRU); place the page at DRAM MRU;
//!   * other miss: if PCM is full, evict the PCM victim to storage; place the page at PCM MRU.
//!
//! A page moved between devices keeps its dirty bit and count.

use super::frames::Geometry;
use super::Policy;
use crate::lru_list::{Links, List, EVICT_AHEAD};
use crate::meter::{Dev, Meter};
use crate::pagemap::PageMap;

/// Implementation note: the hash map points to a node that stays with the page while it
/// moves between DRAM and PCM (`Node::frame` says where it is), so a migration never touches
/// the map.
pub struct FgBg {
    dram: u32,
    map: PageMap,
    /// Nodes hold the page key, dirty bit, frame, and `aux` = reference count.
    links: Links,
    dram_list: List,
    pcm_list: List,
    dram_free: Vec<u32>,
    pcm_free: Vec<u32>,
    free_nodes: Vec<u32>,
}

impl FgBg {
    pub fn new(g: Geometry) -> Result<FgBg, String> {
        g.check(true)?;
        let n = g.frames();
        Ok(FgBg {
            dram: g.dram as u32,
            map: PageMap::with_capacity(n),
            links: Links::new(n),
            dram_list: List::default(),
            pcm_list: List::default(),
            dram_free: g.device_free_stack(Dev::Dram),
            pcm_free: g.device_free_stack(Dev::Pcm),
            free_nodes: (0..n as u32).rev().collect(),
        })
    }

    /// Second-chance-by-count victim search on one list.
    #[inline]
    fn victim(links: &mut Links, list: &mut List) -> u32 {
        loop {
            let t = list.tail;
            let c = &mut links.node_mut(t).aux;
            if *c == 0 {
                return t;
            }
            *c -= 1;
            links.move_to_front(list, t);
        }
    }

    /// Evict the PCM victim to storage; its frame and node become free.
    fn evict_pcm(&mut self, m: &mut Meter) {
        let v = Self::victim(&mut self.links, &mut self.pcm_list);
        self.links.remove(&mut self.pcm_list, v);
        let n = *self.links.node(v);
        self.map.remove(n.key);
        m.evict(Dev::Pcm, n.dirty, n.fg);
        self.pcm_free.push(n.frame);
        self.free_nodes.push(v);
        self.links.prefetch_lru_end(&self.pcm_list, EVICT_AHEAD, |_, n| {
            self.map.prefetch(n.key);
            m.prefetch_wear(n.frame);
        });
    }

    /// Move the DRAM victim to PCM MRU (a PCM frame must be free); its DRAM frame becomes free.
    fn demote_dram(&mut self, m: &mut Meter) {
        let v = Self::victim(&mut self.links, &mut self.dram_list);
        let p = self.pcm_free.pop().expect("demote_dram needs a free PCM frame");
        self.links.remove(&mut self.dram_list, v);
        let node = self.links.node_mut(v);
        self.dram_free.push(node.frame);
        node.frame = p;
        self.links.push_front(&mut self.pcm_list, v);
        m.migrate(Dev::Dram, Dev::Pcm, p);
        self.links.prefetch_lru_end(&self.dram_list, EVICT_AHEAD, |_, _| {});
    }

    /// A free DRAM frame, demoting (and evicting from PCM) as the miss path does.
    fn dram_frame(&mut self, m: &mut Meter) -> u32 {
        if self.dram_free.is_empty() {
            if self.pcm_free.is_empty() {
                self.evict_pcm(m);
            }
            self.demote_dram(m);
        }
        self.dram_free.pop().expect("a DRAM frame was just freed")
    }

    fn pcm_frame(&mut self, m: &mut Meter) -> u32 {
        if self.pcm_free.is_empty() {
            self.evict_pcm(m);
        }
        self.pcm_free.pop().expect("a PCM frame was just freed")
    }
}

impl Policy for FgBg {
    fn name(&self) -> &'static str {
        "fgbg"
    }

    #[inline]
    fn access(&mut self, key: u64, write: bool, fg: bool, m: &mut Meter) {
        let (id, frame, dev) = match self.map.get(key) {
            Some(id) => {
                let node = self.links.node_mut(id);
                node.aux = node.aux.saturating_add(1);
                let frame = node.frame;
                if frame < self.dram {
                    m.hit(Dev::Dram);
                    self.links.move_to_front(&mut self.dram_list, id);
                    (id, frame, Dev::Dram)
                } else {
                    m.hit(Dev::Pcm);
                    if fg && node.dirty && node.aux >= 2 {
                        // Free the PCM frame first: the DRAM victim may land in it.
                        self.links.remove(&mut self.pcm_list, id);
                        self.pcm_free.push(frame);
                        let to = self.dram_frame(m);
                        self.links.node_mut(id).frame = to;
                        self.links.push_front(&mut self.dram_list, id);
                        m.migrate(Dev::Pcm, Dev::Dram, to);
                        (id, to, Dev::Dram)
                    } else {
                        self.links.move_to_front(&mut self.pcm_list, id);
                        (id, frame, Dev::Pcm)
                    }
                }
            }
            None => {
                let (frame, dev) =
                    if fg { (self.dram_frame(m), Dev::Dram) } else { (self.pcm_frame(m), Dev::Pcm) };
                let id = self.free_nodes.pop().expect("a node per frame");
                self.links.set(id, key, false, 0);
                self.links.node_mut(id).frame = frame;
                self.map.insert(key, id);
                if dev == Dev::Dram {
                    self.links.push_front(&mut self.dram_list, id);
                } else {
                    self.links.push_front(&mut self.pcm_list, id);
                }
                m.fill(dev, frame);
                (id, frame, dev)
            }
        };
        self.links.access(m, id, dev, frame, write, fg);
    }

    linked_lookups!();

    #[inline]
    fn prefetch_near(&self, key: u64, foreground: bool) {
        if !self.links.prefetch_neighbors_of(&self.map, key) {
            if foreground {
                self.links.prefetch_tail(&self.dram_list, |_| {});
            }
            self.links.prefetch_tail(&self.pcm_list, |k| self.map.prefetch(k));
        }
    }

    resident_pages_are_mapped!();
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;

    /// 1 DRAM frame (0) + 2 PCM frames (1, 2). F = foreground, B = background.
    /// Free stacks give the lowest frame first.
    ///
    ///  # req    what happens                                               ops
    ///  1 B W A  bg miss -> PCM frame 1, cnt 0                              S_R P_W | P_W
    ///  2 F R X  fg miss -> DRAM frame 0, cnt 0                             S_R D_W | D_R
    ///  3 F R A  PCM hit, cnt 1; dirty but cnt < 2 -> PCM MRU               P_R
    ///  4 F W A  PCM hit, cnt 2, dirty (from #1), fg -> migrate to DRAM:
    ///           PCM frame 1 freed; DRAM full: PCM has a free frame (1), so no PCM
    ///           eviction; DRAM victim X (cnt 0) -> PCM frame 1 (D_R P_W);
    ///           A -> DRAM frame 0 (P_R D_W); then the write hits DRAM      D_W
    ///  5 B R C  bg miss -> PCM frame 2 (free)                              S_R P_W | P_R
    ///           PCM list (MRU..LRU): C X
    ///  6 B R D  bg miss, PCM full: victim search from the LRU end: X cnt 0 -> evict X
    ///           (clean); D -> PCM frame 1                                  S_R P_W | P_R
    ///           PCM list: D C
    ///  7 B R C  PCM hit, cnt 1, background -> PCM MRU; list C D          P_R
    ///  8 F R E  fg miss; DRAM full; PCM full: PCM victim search: D cnt 0 -> evict D
    ///           (clean, frame 1); DRAM victim A (cnt 2): decrement to 1, MRU; A again (only
    ///           page): cnt 1 -> 0, MRU; A again: cnt 0 -> victim. A (dirty) -> PCM frame 1
    ///           (D_R P_W); E -> DRAM frame 0                               S_R D_W | D_R
    ///  9 F W A  PCM hit, cnt 1 (0 + 1): not >= 2 -> PCM MRU, write on PCM  P_W
    ///
    /// hits: #3 #4 #7 #9 = 4 (DRAM 0, PCM 4). Evictions X, D = 2, no write-backs.
    /// to_dram 1 (#4), to_pcm 2 (#4 X, #8 A).
    /// Page in DRAM once served: fg #2 #4 #8 (3 of 5), background none.
    /// D_R: #2 access, #4 demote X, #8 demote A, #8 access = 4.
    /// D_W: #2 fill, #4 migrate A, #4 access, #8 fill = 4.
    /// P_R: #3, #4 migrate A, #5, #6, #7 = 5.
    /// P_W: #1 fill+access, #4 demote X, #5 fill, #6 fill, #8 demote A, #9 = 7.
    /// S_R 5 (#1 2 5 6 8), S_W 0.
    /// time = 4 + 4 + 5*2 + 7*50 + 5*1000 = 5368
    /// fg requests #2 #3 #4 #8 #9: D_R 2+... count per fg request:
    ///   #2: S_R D_W D_R = 1002; #3: P_R = 2; #4: D_R P_W P_R D_W D_W = 1+50+2+1+1 = 55;
    ///   #8: S_R (evict D clean: 0) D_R P_W D_W D_R = 1000+1+50+1+1 = 1053; #9: P_W = 50
    ///   fg time = 1002 + 2 + 55 + 1053 + 50 = 2162
    /// energy = (4 + 4 + 5) * 3276.8 + 7 * 32768 = 42598.4 + 229376 = 271974.4
    /// wear: frame 1: #1 fill, #1 write, #4 X in, #6 fill, #8 A in, #9 write = 6;
    ///       frame 2: #5 fill = 1.
    #[test]
    fn hand_trace() {
        let r = run("fgbg", 1, 2, &trace("w1 R9 R1 W1 r3 r4 r3 R5 W1"));
        r.check([4, 0, 4], [2, 0], [1, 2], [4, 4, 5, 7, 5, 0], [5368.0, 271_974.4], &[6, 1]);
        assert_eq!(r.fg_time, 2162.0);
        assert_eq!(r.fg.requests, 5);
        assert_eq!((r.fg.on_dram, r.other.on_dram), (3, 0));
    }

    /// A page written by a background process, then re-read twice by the foreground app, then
    /// evicted dirty from PCM. 1 DRAM + 1 PCM frame.
    ///  1 B W A  -> PCM frame 1                         S_R P_W | P_W
    ///  2 B R B  PCM full: victim A (cnt 0, dirty) -> P_R S_W; B -> frame 1   S_R P_W | P_R
    ///  3 F R A  fg miss -> DRAM frame 0                S_R D_W | D_R
    /// hits 0, evictions 1, write-backs 1.
    /// time = S_R*3 (3000) + S_W (1000) + P_W*3 (150) + P_R*2 (4) + D_W + D_R (2) = 4156
    #[test]
    fn dirty_eviction_from_pcm() {
        let t = [(1, 'W', false), (2, 'R', false), (1, 'R', true)];
        let r = run("fgbg", 1, 1, &t);
        assert_eq!((r.total.evictions, r.total.writebacks), (1, 1));
        assert_eq!(r.total.ops, [1, 1, 2, 3, 3, 1]);
        assert_eq!(r.time, 4156.0);
    }
}
