//! The optimized LRU and FG/BG (open-addressing page map, index-linked lists, prefetching,
//! block-wise `run_block`) against straightforward reference implementations written from
//! the policy descriptions (std `HashMap` + `BTreeMap` ordered by last-use stamp), on random
//! traces of several sizes, one of them large enough for the huge-page arrays. Every counter
//! of both request classes and the per-frame PCM wear must be identical.

mod common;

use common::random_sizes;
use pcmsim::gen::Rng;
use pcmsim::meter::{Dev, Meter};
use pcmsim::policy::{build, Geometry, PolicyParams, POLICY_NAMES};
use pcmsim::request::Request;
use pcmsim::sim::{MemSpec, Point};
use std::collections::{BTreeMap, HashMap};

fn dev_of(frame: u32, dram: usize) -> Dev {
    if (frame as usize) < dram {
        Dev::Dram
    } else {
        Dev::Pcm
    }
}

/// LRU over the whole memory: a map page -> (frame, stamp, dirty, last request foreground)
/// and the pages ordered by the stamp of their last use (smallest = LRU end).
struct RefLru {
    dram: usize,
    pages: HashMap<u64, (u32, u64, bool, bool)>,
    order: BTreeMap<u64, u64>,
    free: Vec<u32>,
    clock: u64,
}

impl RefLru {
    fn new(g: Geometry) -> RefLru {
        RefLru {
            dram: g.dram,
            pages: HashMap::new(),
            order: BTreeMap::new(),
            free: g.interleaved_free_stack(),
            clock: 0,
        }
    }

    fn access(&mut self, key: u64, write: bool, fg: bool, m: &mut Meter) {
        self.clock += 1;
        let frame = if let Some(p) = self.pages.get_mut(&key) {
            m.hit(dev_of(p.0, self.dram));
            self.order.remove(&p.1);
            p.1 = self.clock;
            self.order.insert(p.1, key);
            p.0
        } else {
            let frame = match self.free.pop() {
                Some(f) => f,
                None => {
                    let (_, victim) = self.order.pop_first().expect("memory is full");
                    let (f, _, dirty, was_fg) = self.pages.remove(&victim).expect("victim resident");
                    m.evict(dev_of(f, self.dram), dirty, was_fg);
                    f
                }
            };
            self.pages.insert(key, (frame, self.clock, false, fg));
            self.order.insert(self.clock, key);
            m.fill(dev_of(frame, self.dram), frame);
            frame
        };
        m.access(dev_of(frame, self.dram), frame, write);
        let page = self.pages.get_mut(&key).expect("resident");
        page.2 |= write;
        page.3 = fg;
    }
}

#[derive(Clone, Copy)]
struct Page {
    dev: Dev,
    frame: u32,
    stamp: u64,
    count: u32,
    dirty: bool,
    /// The last request for the page was a foreground one.
    fg: bool,
}

/// FG/BG exactly as the paper's pseudo-code and docs/pcm-policy.md describe it: one LRU
/// order per device (by stamp), a reference count per page, second chance by count.
struct RefFgBg {
    pages: HashMap<u64, Page>,
    lists: [BTreeMap<u64, u64>; 2],
    dram_free: Vec<u32>,
    pcm_free: Vec<u32>,
    clock: u64,
}

impl RefFgBg {
    fn new(g: Geometry) -> RefFgBg {
        RefFgBg {
            pages: HashMap::new(),
            lists: [BTreeMap::new(), BTreeMap::new()],
            dram_free: g.device_free_stack(Dev::Dram),
            pcm_free: g.device_free_stack(Dev::Pcm),
            clock: 0,
        }
    }

    /// Put `key` (already in `pages`, on no list) at the MRU end of `dev`'s list.
    fn push_mru(&mut self, key: u64, dev: Dev) {
        self.clock += 1;
        let p = self.pages.get_mut(&key).expect("resident");
        p.dev = dev;
        p.stamp = self.clock;
        self.lists[dev as usize].insert(self.clock, key);
    }

    /// Victim search from the LRU end; the victim is left on its list.
    fn victim(&mut self, dev: Dev) -> u64 {
        loop {
            let (&stamp, &key) = self.lists[dev as usize].first_key_value().expect("list not empty");
            let p = self.pages.get_mut(&key).expect("resident");
            if p.count == 0 {
                return key;
            }
            p.count -= 1;
            self.lists[dev as usize].remove(&stamp);
            self.push_mru(key, dev);
        }
    }

    fn unlink(&mut self, key: u64) -> Page {
        let p = self.pages[&key];
        self.lists[p.dev as usize].remove(&p.stamp);
        p
    }

    fn evict_pcm(&mut self, m: &mut Meter) {
        let v = self.victim(Dev::Pcm);
        let p = self.unlink(v);
        self.pages.remove(&v);
        m.evict(Dev::Pcm, p.dirty, p.fg);
        self.pcm_free.push(p.frame);
    }

    fn demote_dram(&mut self, m: &mut Meter) {
        let v = self.victim(Dev::Dram);
        let to = self.pcm_free.pop().expect("a free PCM frame");
        let p = self.unlink(v);
        self.dram_free.push(p.frame);
        self.pages.get_mut(&v).expect("resident").frame = to;
        self.push_mru(v, Dev::Pcm);
        m.migrate(Dev::Dram, Dev::Pcm, to);
    }

    fn dram_frame(&mut self, m: &mut Meter) -> u32 {
        if self.dram_free.is_empty() {
            if self.pcm_free.is_empty() {
                self.evict_pcm(m);
            }
            self.demote_dram(m);
        }
        self.dram_free.pop().expect("a free DRAM frame")
    }

    fn pcm_frame(&mut self, m: &mut Meter) -> u32 {
        if self.pcm_free.is_empty() {
            self.evict_pcm(m);
        }
        self.pcm_free.pop().expect("a free PCM frame")
    }

    fn access(&mut self, key: u64, write: bool, fg: bool, m: &mut Meter) {
        let (dev, frame) = if let Some(p) = self.pages.get_mut(&key) {
            p.count = p.count.saturating_add(1);
            let p = *p;
            m.hit(p.dev);
            self.unlink(key);
            if p.dev == Dev::Pcm && fg && p.dirty && p.count >= 2 {
                self.pcm_free.push(p.frame);
                let to = self.dram_frame(m);
                self.pages.get_mut(&key).expect("resident").frame = to;
                self.push_mru(key, Dev::Dram);
                m.migrate(Dev::Pcm, Dev::Dram, to);
                (Dev::Dram, to)
            } else {
                self.push_mru(key, p.dev);
                (p.dev, p.frame)
            }
        } else {
            let (dev, frame) =
                if fg { (Dev::Dram, self.dram_frame(m)) } else { (Dev::Pcm, self.pcm_frame(m)) };
            self.pages.insert(key, Page { dev, frame, stamp: 0, count: 0, dirty: false, fg });
            self.push_mru(key, dev);
            m.fill(dev, frame);
            (dev, frame)
        };
        m.access(dev, frame, write);
        let page = self.pages.get_mut(&key).expect("resident");
        page.dirty |= write;
        page.fg = fg;
    }
}

/// A random trace with Zipf-like skew (the min of two uniforms, then a power) over `pages`
/// pages spread over a few "files" (keys with high bits, as the interner makes them).
fn trace(seed: u64, n: usize, pages: u64) -> Vec<Request> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            let a = rng.below(pages).min(rng.below(pages));
            let page = if rng.below(4) == 0 { rng.below(pages) } else { a * a / pages.max(1) };
            let file = page % 5;
            Request {
                time: i as u64,
                key: file << 40 | page,
                foreground: rng.below(4) != 0,
                write: rng.below(3) == 0,
            }
        })
        .collect()
}

fn reference_meter(policy: &str, g: Geometry, reqs: &[Request]) -> Meter {
    let mut m = Meter::new(g.dram, g.pcm);
    match policy {
        "lru" => {
            let mut p = RefLru::new(g);
            for r in reqs {
                m.begin(r.foreground);
                p.access(r.key, r.write, r.foreground, &mut m);
            }
        }
        "fgbg" => {
            let mut p = RefFgBg::new(g);
            for r in reqs {
                m.begin(r.foreground);
                p.access(r.key, r.write, r.foreground, &mut m);
            }
        }
        _ => unreachable!(),
    }
    m
}

/// The optimized policy fed the way the sweep feeds it: blocks, with prefetching.
fn optimized_meter(policy: &str, g: Geometry, reqs: &[Request], block: usize) -> Meter {
    let mut p =
        Point::new(policy, g, MemSpec::Pages(g.frames() as u64), 0.0, &PolicyParams::default()).unwrap();
    for chunk in reqs.chunks(block) {
        p.run_block(chunk);
    }
    p.meter
}

fn assert_same(a: &Meter, b: &Meter, what: &str) {
    assert_eq!(a.class, b.class, "{what}: counters differ");
    assert!(a.pcm_wear == b.pcm_wear, "{what}: per-frame PCM wear differs");
}

#[test]
fn optimized_equals_reference_on_small_random_traces() {
    let mut rng = Rng::new(2024);
    for case in 0..120 {
        let (dram, pcm, pages) = random_sizes(&mut rng, 12, 80, 400);
        let block = 1 + rng.below(64) as usize;
        let g = Geometry::new(dram, pcm);
        let reqs = trace(case, 4000, pages);
        for policy in ["lru", "fgbg"] {
            let want = reference_meter(policy, g, &reqs);
            let got = optimized_meter(policy, g, &reqs, block);
            assert_same(&got, &want, &format!("{policy} case {case} ({dram}+{pcm} frames, {pages} pages)"));
        }
    }
}

#[test]
fn optimized_equals_reference_at_large_sizes() {
    // 150k frames: node and map arrays above the huge-page threshold, the map probing long
    // chains; a footprint ~4x the memory so that evictions, demotions and migrations abound.
    for (seed, dram, pcm, pages, n) in
        [(1, 500, 9_500, 40_000, 200_000), (2, 7_500, 142_500, 600_000, 600_000)]
    {
        let g = Geometry::new(dram, pcm);
        let reqs = trace(seed, n, pages);
        for policy in ["lru", "fgbg"] {
            let want = reference_meter(policy, g, &reqs);
            let got = optimized_meter(policy, g, &reqs, 4096);
            assert_same(&got, &want, &format!("{policy} {dram}+{pcm} frames"));
            assert!(
                got.total().evictions > 0 && got.total().hits > 0,
                "{policy}: trace exercises both paths"
            );
        }
    }
}

/// Block-wise feeding with prefetching gives the same result as one request at a time, for
/// every policy.
#[test]
fn run_block_equals_step() {
    let g = Geometry::new(30, 570);
    let reqs = trace(9, 50_000, 3000);
    for policy in POLICY_NAMES {
        let mut one = build(policy, g, &PolicyParams::default()).unwrap();
        let mut m = Meter::new(g.dram, g.pcm);
        for r in &reqs {
            m.begin(r.foreground);
            one.access(r.key, r.write, r.foreground, &mut m);
        }
        for block in [1, 7, 4096] {
            assert_same(&optimized_meter(policy, g, &reqs, block), &m, &format!("{policy} block {block}"));
        }
    }
}
