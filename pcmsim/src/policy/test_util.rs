//! Helpers for the hand-computed policy tests.

use super::{build, Geometry, PolicyParams};
use crate::meter::{ClassCounts, Meter};
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

pub fn assert_close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-6 * b.abs().max(1.0), "{a} != {b}");
}
