//! A CLOCK-DWF-like baseline (after Lee, Bahn & Noh: CLOCK with dirty bits and write
//! frequency, for hybrid PCM/DRAM). This is our reading of its published idea, not a
//! transcription of the authors' algorithm:
//!   * a write miss places the page in DRAM, a read miss in PCM;
//!   * a write hit on a PCM page migrates it to DRAM (DRAM absorbs writes);
//!   * DRAM replacement is a CLOCK over write history only: each DRAM page has a write bit
//!     (set on every write in DRAM) and a saturating write-frequency counter (incremented on
//!     every write in DRAM, at most `max_freq`). The hand clears a set write bit and moves on;
//!     else decrements a non-zero counter and moves on; else takes the page. The DRAM victim
//!     moves to PCM (evicting the PCM victim first when PCM is full);
//!   * PCM replacement is plain CLOCK over a reference bit (set on every PCM hit); the PCM
//!     victim goes to storage.
//!
//! Reads never affect DRAM replacement (write history alone).

use super::frames::Geometry;
use super::Policy;
use crate::meter::{Dev, Meter};
use crate::pagemap::PageMap;

/// Per-frame state, kept together so one request touches one cache line per frame.
#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
struct Frame {
    key: u64,
    dirty: bool,
    /// The last request for the page was a foreground one.
    fg: bool,
    /// PCM: referenced since the hand last passed.
    refb: bool,
    /// DRAM: written since the hand last passed.
    wbit: bool,
    /// DRAM: saturating write frequency.
    wfreq: u8,
}

pub struct ClockDwf {
    dram: u32,
    frames: u32,
    max_freq: u8,
    map: PageMap,
    fr: Vec<Frame>,
    dram_hand: u32,
    pcm_hand: u32,
    dram_free: Vec<u32>,
    pcm_free: Vec<u32>,
}

impl ClockDwf {
    pub fn new(g: Geometry, max_freq: u8) -> Result<ClockDwf, String> {
        g.check(true)?;
        let n = g.frames();
        Ok(ClockDwf {
            dram: g.dram as u32,
            frames: n as u32,
            max_freq,
            map: PageMap::with_capacity(n),
            fr: crate::mem::filled(n, Frame::default()),
            dram_hand: 0,
            pcm_hand: g.dram as u32,
            dram_free: g.device_free_stack(Dev::Dram),
            pcm_free: g.device_free_stack(Dev::Pcm),
        })
    }

    /// DRAM must be full.
    fn dram_victim(&mut self) -> u32 {
        loop {
            let f = self.dram_hand;
            self.dram_hand = if f + 1 == self.dram { 0 } else { f + 1 };
            let e = &mut self.fr[f as usize];
            if e.wbit {
                e.wbit = false;
            } else if e.wfreq > 0 {
                e.wfreq -= 1;
            } else {
                return f;
            }
        }
    }

    /// PCM must be full.
    fn pcm_victim(&mut self) -> u32 {
        loop {
            let f = self.pcm_hand;
            self.pcm_hand = if f + 1 == self.frames { self.dram } else { f + 1 };
            let e = &mut self.fr[f as usize];
            if e.refb {
                e.refb = false;
            } else {
                return f;
            }
        }
    }

    fn pcm_frame(&mut self, m: &mut Meter) -> u32 {
        if let Some(f) = self.pcm_free.pop() {
            return f;
        }
        let v = self.pcm_victim();
        let e = self.fr[v as usize];
        self.map.remove(e.key);
        m.evict(Dev::Pcm, e.dirty, e.fg);
        v
    }

    fn dram_frame(&mut self, m: &mut Meter) -> u32 {
        if let Some(f) = self.dram_free.pop() {
            return f;
        }
        let v = self.dram_victim();
        let p = self.pcm_frame(m);
        let e = self.fr[v as usize];
        self.fr[p as usize] = Frame { key: e.key, dirty: e.dirty, fg: e.fg, ..Frame::default() };
        self.map.insert(e.key, p);
        m.migrate(Dev::Dram, Dev::Pcm, p);
        v
    }

    fn set_dram_page(&mut self, f: u32, key: u64, dirty: bool) {
        self.fr[f as usize] = Frame { key, dirty, ..Frame::default() };
        self.map.insert(key, f);
    }

    fn note_dram_write(&mut self, f: u32) {
        let e = &mut self.fr[f as usize];
        e.wbit = true;
        e.wfreq = e.wfreq.saturating_add(1).min(self.max_freq);
    }
}

impl Policy for ClockDwf {
    fn name(&self) -> &'static str {
        "clock-dwf"
    }

    fn access(&mut self, key: u64, write: bool, fg: bool, m: &mut Meter) {
        let (f, dev) = match self.map.get(key) {
            Some(f) if f < self.dram => {
                m.hit(Dev::Dram);
                (f, Dev::Dram)
            }
            Some(f) => {
                m.hit(Dev::Pcm);
                let e = &mut self.fr[f as usize];
                e.refb = true;
                if write {
                    let dirty = e.dirty;
                    self.pcm_free.push(f);
                    let d = self.dram_frame(m);
                    self.set_dram_page(d, key, dirty);
                    m.migrate(Dev::Pcm, Dev::Dram, d);
                    (d, Dev::Dram)
                } else {
                    (f, Dev::Pcm)
                }
            }
            None => {
                if write {
                    let d = self.dram_frame(m);
                    self.set_dram_page(d, key, false);
                    m.fill(Dev::Dram, d);
                    (d, Dev::Dram)
                } else {
                    let p = self.pcm_frame(m);
                    self.fr[p as usize] = Frame { key, ..Frame::default() };
                    self.map.insert(key, p);
                    m.fill(Dev::Pcm, p);
                    (p, Dev::Pcm)
                }
            }
        };
        m.access(dev, f, write);
        self.fr[f as usize].fg = fg;
        if write {
            self.fr[f as usize].dirty = true;
            if dev == Dev::Dram {
                self.note_dram_write(f);
            }
        }
    }

    #[inline]
    fn prefetch(&self, key: u64) {
        self.map.prefetch(key);
    }

    #[inline]
    fn prefetch_slot(&self, key: u64) {
        if let Some(s) = self.map.get(key) {
            crate::pagemap::prefetch_ptr(self.fr.as_ptr().wrapping_add(s as usize));
        }
    }

    resident_pages_are_mapped!();
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;

    /// 1 DRAM frame (0) + 2 PCM frames (1, 2), max_freq 3, all foreground.
    ///
    ///  #  req  what happens                                                ops
    ///  1  R A  read miss -> PCM frame 1                                    S_R P_W | P_R
    ///  2  W B  write miss -> DRAM frame 0; write: wbit 1, freq 1           S_R D_W | D_W
    ///  3  R A  PCM hit, ref bit set                                        P_R
    ///  4  W A  PCM write hit -> migrate to DRAM: frame 1 freed; DRAM full: hand at B:
    ///          wbit 1 -> 0; freq 1 -> 0; victim B. B -> PCM frame 1 (D_R P_W);
    ///          A -> DRAM 0 (P_R D_W); write: wbit 1, freq 1               D_W
    ///  5  R C  read miss -> PCM frame 2                                    S_R P_W | P_R
    ///  6  R D  read miss, PCM full: hand at frame 1: B ref 0 -> victim, dirty (P_R S_W);
    ///          D -> frame 1; hand now at 2                                 S_R P_W | P_R
    ///  7  R C  PCM hit (frame 2), ref bit set                              P_R
    ///  8  R E  read miss, PCM full: hand 2: C ref 1 -> 0; hand 1: D ref 0 -> victim (clean);
    ///          E -> frame 1                                                S_R P_W | P_R
    ///  9  W C  PCM write hit -> migrate; frame 2 freed; DRAM victim: A wbit 1 -> 0,
    ///          freq 1 -> 0, victim A -> PCM frame 2 (D_R P_W); C -> DRAM 0 (P_R D_W)  D_W
    /// 10  R A  PCM hit (frame 2)                                           P_R
    ///
    /// hits #3 #4 #7 #9 #10 = 5 (all found in PCM). Evictions B (dirty), D = 2.
    /// to_dram 2 (#4, #9), to_pcm 2 (B, A).
    /// D_R 2 (#4, #9 demotions). D_W 6 (#2 x2, #4 x2, #9 x2).
    /// P_R 10 (#1 #3 #4 #5 #6 evict B, #6 #7 #8 #9 #10). P_W 6 (#1 #4 #5 #6 #8 #9).
    /// S_R 5 (#1 #2 #5 #6 #8), S_W 1.
    /// time = 2 + 6 + 10*2 + 6*50 + 6*1000 = 6328
    /// energy = (2 + 6 + 10) * 3276.8 + 6 * 32768 = 58982.4 + 196608 = 255590.4
    /// wear: frame 1: #1 #4 #6 #8 = 4; frame 2: #5 #9 = 2.
    #[test]
    fn hand_trace() {
        let r = run("clock-dwf", 1, 2, &trace("R1 W2 R1 W1 R3 R4 R3 R5 W3 R1"));
        r.check([5, 0, 5], [2, 1], [2, 2], [2, 6, 10, 6, 5, 1], [6328.0, 255_590.4], &[4, 2]);
    }

    /// Frequently written DRAM pages survive; a page written once is demoted first.
    /// 2 DRAM frames (0, 1) + 1 PCM frame (2), max_freq 3.
    ///  W A x3 -> A in DRAM 0, freq 3 (saturated), wbit 1.  W B -> DRAM 1, freq 1.
    ///  W C: DRAM victim search from hand 0: A wbit->0; B wbit->0; A freq 3->2; B freq 1->0;
    ///       A freq 2->1; B victim. So B (not A) goes to PCM.
    #[test]
    fn write_frequency_protects() {
        let t = [(1, 'W'), (1, 'W'), (1, 'W'), (2, 'W'), (3, 'W'), (1, 'W')];
        let r = run("clock-dwf", 2, 1, &fg_all(&t));
        // #6 W A hits in DRAM.
        assert_eq!((r.total.hits, r.total.dram_hits), (3, 3));
        assert_eq!(r.total.to_pcm, 1);
        assert_eq!(r.wear, vec![1]);
    }
}
