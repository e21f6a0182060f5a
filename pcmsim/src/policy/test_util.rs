//! Helpers for the hand-computed policy tests.

use super::{build, Geometry, PolicyParams};
use crate::meter::{ClassCounts, Meter, N_OPS};
use crate::model::{EnergyModel, TimeModel};

pub struct Outcome {
    pub total: ClassCounts,
    pub fg: ClassCounts,
    pub other: ClassCounts,
    pub time: f64,
    pub fg_time: f64,
    pub energy: f64,
    pub wear: Vec<u64>,
}

/// A trace written as requests separated by spaces, each the operation (R or W) then the page;
/// a lowercase operation is a background request ("W1 r2": page 1 written by the foreground,
/// then page 2 read by the background).
pub fn trace(s: &str) -> Vec<(u64, char, bool)> {
    s.split_whitespace()
        .map(|r| {
            let (op, page) = r.split_at(1);
            let op = op.chars().next().unwrap();
            (page.parse().unwrap(), op.to_ascii_uppercase(), op.is_ascii_uppercase())
        })
        .collect()
}

/// (page, 'R'|'W') pairs, all foreground.
pub fn fg_all(t: &[(u64, char)]) -> Vec<(u64, char, bool)> {
    t.iter().map(|&(p, op)| (p, op, true)).collect()
}

pub fn run(policy: &str, dram: usize, pcm: usize, trace: &[(u64, char, bool)]) -> Outcome {
    run_with(policy, dram, pcm, trace, &PolicyParams::default())
}

pub fn run_with(
    policy: &str,
    dram: usize,
    pcm: usize,
    trace: &[(u64, char, bool)],
    params: &PolicyParams,
) -> Outcome {
    let mut p = build(policy, Geometry::new(dram, pcm), params).unwrap();
    let mut m = Meter::new(dram, pcm);
    for &(page, op, fg) in trace {
        m.begin(fg);
        p.access(page, op == 'W', fg, &mut m);
    }
    let total = m.total();
    let (t, e) = (TimeModel::paper(), EnergyModel::table1());
    Outcome {
        time: t.time(&total),
        fg_time: t.fg_time(&m.class[0], &m.class[1]),
        energy: e.dynamic_nj(&total),
        fg: m.class[0].clone(),
        other: m.class[1].clone(),
        total,
        wear: m.pcm_wear.clone(),
    }
}

impl Outcome {
    /// The figures of a hand-computed trace: hits (all, in DRAM, in PCM), evictions and
    /// write-backs, pages moved to DRAM and to PCM, device operations (`Op` order), the paper
    /// model's time and table 1's dynamic energy, and the wear of each PCM frame.
    pub fn check(
        &self,
        hits: [u64; 3],
        evicted: [u64; 2],
        moved: [u64; 2],
        ops: [u64; N_OPS],
        time_energy: [f64; 2],
        wear: &[u64],
    ) {
        let t = &self.total;
        assert_eq!([t.hits, t.dram_hits, t.pcm_hits], hits);
        assert_eq!([t.evictions, t.writebacks], evicted);
        assert_eq!([t.to_dram, t.to_pcm], moved);
        assert_eq!(t.ops, ops);
        assert_eq!(self.time, time_energy[0]);
        assert_close(self.energy, time_energy[1]);
        assert_eq!(self.wear, wear);
    }
}

pub fn assert_close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-6 * b.abs().max(1.0), "{a} != {b}");
}
