//! One simulation point (a policy on a memory geometry) and its results as a JSON line.

use crate::config::Models;
use crate::meter::{ClassCounts, Meter, Op, FG, OP_NAMES, OTHER};
use crate::model::TimeModel;
use crate::policy::{build, Geometry, Policy, PolicyParams};
use crate::request::Request;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// PCM cell endurance assumed for lifetime projection (Table 1).
pub const PCM_ENDURANCE: f64 = 1e8;

/// How many requests ahead `run_block` prefetches the hash bucket (the slot at half this
/// distance, the slot's list neighbours or the eviction path at a quarter).
pub const PREFETCH_AHEAD: usize = 8;

/// Requests are handed to the points in blocks of this many (one reused buffer).
pub const BLOCK: usize = 4096;

/// How the memory size of a point was asked for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MemSpec {
    /// Fraction of the trace footprint (distinct pages).
    Frac(f64),
    /// Absolute number of page frames.
    Pages(u64),
}

pub struct Point {
    pub policy: Box<dyn Policy>,
    pub meter: Meter,
    pub geom: Geometry,
    pub mem: MemSpec,
    pub dram_share: f64,
}

/// Split `frames` into DRAM and PCM: DRAM = round(share * frames), at least 1 and leaving at
/// least 1 PCM frame whenever 0 < share < 1.
pub fn split(frames: u64, share: f64) -> Geometry {
    let f = frames as usize;
    let d = if share <= 0.0 {
        0
    } else if share >= 1.0 {
        f
    } else {
        ((share * f as f64).round() as usize).clamp(1, f.saturating_sub(1).max(1))
    };
    Geometry::new(d, f - d)
}

impl Point {
    pub fn new(
        policy: &str,
        geom: Geometry,
        mem: MemSpec,
        dram_share: f64,
        p: &PolicyParams,
    ) -> Result<Point, String> {
        Ok(Point {
            policy: build(policy, geom, p)?,
            meter: Meter::new(geom.dram, geom.pcm),
            geom,
            mem,
            dram_share,
        })
    }

    #[inline]
    pub fn step(&mut self, r: &Request) {
        self.meter.begin(r.foreground);
        self.policy.access(r.key, r.write, r.foreground, &mut self.meter);
    }

    /// Serve a block of requests, prefetching the hash bucket a few requests ahead.
    pub fn run_block(&mut self, reqs: &[Request]) {
        for (i, r) in reqs.iter().enumerate() {
            if let Some(next) = reqs.get(i + PREFETCH_AHEAD) {
                self.policy.prefetch(next.key);
            }
            if let Some(next) = reqs.get(i + PREFETCH_AHEAD / 2) {
                self.policy.prefetch_slot(next.key);
            }
            if let Some(next) = reqs.get(i + PREFETCH_AHEAD / 4) {
                self.policy.prefetch_near(next.key, next.foreground);
            }
            self.step(r);
        }
    }
}

/// What the engine saw of the trace.
#[derive(Clone, Debug, Default)]
pub struct TraceStats {
    pub requests: u64,
    pub fg_requests: u64,
    pub writes: u64,
    pub first_time: Option<u64>,
    pub last_time: u64,
    pub time_ns: bool,
    pub footprint: Option<u64>,
}

impl TraceStats {
    #[inline]
    pub fn add(&mut self, r: &Request) {
        self.requests += 1;
        self.fg_requests += u64::from(r.foreground);
        self.writes += u64::from(r.write);
        if self.first_time.is_none() {
            self.first_time = Some(r.time);
        }
        self.last_time = r.time;
    }

    /// Trace duration in seconds if times are nanoseconds.
    pub fn duration_s(&self) -> Option<f64> {
        let first = self.first_time?;
        (self.time_ns && self.last_time > first).then(|| (self.last_time - first) as f64 * 1e-9)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        f64::NAN
    } else {
        a as f64 / b as f64
    }
}

/// The operation counts of one class as a JSON object, keys in `OP_NAMES` order.
struct Ops<'a>(&'a ClassCounts);

impl Serialize for Ops<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(OP_NAMES.len()))?;
        for (k, v) in OP_NAMES.iter().zip(self.0.ops.iter()) {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// Foreground time under every time model preset (one reading each of the paper's
/// accounting), as a JSON object keyed by preset name.
struct FgTimeByModel<'a> {
    fg: &'a ClassCounts,
    other: &'a ClassCounts,
}

impl Serialize for FgTimeByModel<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let presets = TimeModel::presets();
        let mut map = serializer.serialize_map(Some(presets.len()))?;
        for tm in &presets {
            map.serialize_entry(&tm.name, &tm.fg_time(self.fg, self.other))?;
        }
        map.end()
    }
}

/// Wear histogram: `bins` equal-width bins over 0..=max writes per PCM frame.
pub fn wear_histogram(wear: &[u64], bins: usize) -> (Vec<f64>, Vec<u64>) {
    let bins = bins.max(1);
    let max = wear.iter().copied().max().unwrap_or(0);
    let width = (max + 1) as f64 / bins as f64;
    let mut hist = vec![0u64; bins];
    for &w in wear {
        let b = ((w as f64 / width) as usize).min(bins - 1);
        hist[b] += 1;
    }
    let edges = (0..=bins).map(|k| k as f64 * width).collect();
    (edges, hist)
}

/// Only the storage operations of `c` (to split time into memory and storage parts).
fn storage_only(c: &ClassCounts) -> ClassCounts {
    let mut s = ClassCounts::default();
    s.ops[Op::StorageRead as usize] = c.ops[Op::StorageRead as usize];
    s.ops[Op::StorageWrite as usize] = c.ops[Op::StorageWrite as usize];
    s.evictions = c.evictions;
    s
}

/// The JSON line of one point, keys in this order.
#[derive(Serialize)]
struct PointLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    trace: &'a str,
    policy: &'a str,
    mem_frac: Option<f64>,
    frames: u64,
    dram_share: f64,
    dram_frames: u64,
    pcm_frames: u64,
    footprint: Option<f64>,
    requests: u64,
    fg_requests: u64,
    hits: u64,
    fg_hits: u64,
    hit_ratio: f64,
    fg_hit_ratio: f64,
    dram_hits: u64,
    pcm_hits: u64,
    on_dram: u64,
    fg_on_dram: u64,
    to_dram: u64,
    to_pcm: u64,
    evictions: u64,
    writebacks: u64,
    ops: Ops<'a>,
    fg_ops: Ops<'a>,
    time: f64,
    fg_time: f64,
    fg_storage_time: f64,
    fg_victims: u64,
    fg_time_by_model: FgTimeByModel<'a>,
    energy_nj: f64,
    dynamic_energy_nj: f64,
    static_energy_nj: f64,
    fg_energy_nj: f64,
    pcm_writes: u64,
    wear_max: u64,
    wear_mean: f64,
    wear_hist_edges: Vec<f64>,
    wear_hist: Vec<u64>,
    duration_s: Option<f64>,
    lifetime_traces: f64,
    lifetime_s: Option<f64>,
    lifetime_ideal_s: Option<f64>,
    time_model: &'a str,
    energy_model: &'a str,
}

/// The JSON line of one finished point.
pub fn point_json(p: &Point, stats: &TraceStats, models: &Models, wear_bins: usize, label: &str) -> String {
    let total = p.meter.total();
    let (fg, other) = (&p.meter.class[FG], &p.meter.class[OTHER]);
    let (tm, em) = (&models.time, &models.energy);
    let time = tm.time(&total);
    let dynamic = em.dynamic_nj(&total);
    let statik = em.static_nj(p.geom.dram, p.geom.pcm, time);
    let wear = &p.meter.pcm_wear;
    let wear_max = wear.iter().copied().max().unwrap_or(0);
    let pcm_writes: u64 = wear.iter().sum();
    let wear_mean = if wear.is_empty() { 0.0 } else { pcm_writes as f64 / wear.len() as f64 };
    let (edges, hist) = wear_histogram(wear, wear_bins);
    let dur = stats.duration_s();
    let mem_frac = match p.mem {
        MemSpec::Frac(f) => Some(f),
        MemSpec::Pages(_) => stats.footprint.map(|fp| ratio(p.geom.frames() as u64, fp)),
    };
    crate::json::line(&PointLine {
        kind: "point",
        trace: label,
        policy: p.policy.name(),
        mem_frac,
        frames: p.geom.frames() as u64,
        dram_share: p.dram_share,
        dram_frames: p.geom.dram as u64,
        pcm_frames: p.geom.pcm as u64,
        footprint: stats.footprint.map(|f| f as f64),
        requests: total.requests,
        fg_requests: fg.requests,
        hits: total.hits,
        fg_hits: fg.hits,
        hit_ratio: ratio(total.hits, total.requests),
        fg_hit_ratio: ratio(fg.hits, fg.requests),
        dram_hits: total.dram_hits,
        pcm_hits: total.pcm_hits,
        on_dram: total.on_dram,
        fg_on_dram: fg.on_dram,
        to_dram: total.to_dram,
        to_pcm: total.to_pcm,
        evictions: total.evictions,
        writebacks: total.writebacks,
        ops: Ops(&total),
        fg_ops: Ops(fg),
        time,
        fg_time: tm.fg_time(fg, other),
        fg_storage_time: tm.fg_time(&storage_only(fg), other),
        fg_victims: other.fg_victims,
        fg_time_by_model: FgTimeByModel { fg, other },
        energy_nj: dynamic + statik,
        dynamic_energy_nj: dynamic,
        static_energy_nj: statik,
        fg_energy_nj: em.dynamic_nj(fg),
        pcm_writes,
        wear_max,
        wear_mean,
        wear_hist_edges: edges,
        wear_hist: hist,
        duration_s: dur,
        lifetime_traces: if wear_max == 0 { f64::INFINITY } else { PCM_ENDURANCE / wear_max as f64 },
        lifetime_s: dur.filter(|_| wear_max > 0).map(|d| d * PCM_ENDURANCE / wear_max as f64),
        lifetime_ideal_s: dur.filter(|_| wear_mean > 0.0).map(|d| d * PCM_ENDURANCE / wear_mean),
        time_model: &tm.name,
        energy_model: &em.name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_rules() {
        assert_eq!(split(100, 0.05), Geometry::new(5, 95));
        assert_eq!(split(10, 0.05), Geometry::new(1, 9)); // 0.5 rounds to 1 (at least 1)
        assert_eq!(split(2, 0.9), Geometry::new(1, 1)); // leaves one PCM frame
        assert_eq!(split(10, 0.0), Geometry::new(0, 10));
        assert_eq!(split(10, 1.0), Geometry::new(10, 0));
    }

    #[test]
    fn histogram() {
        let (edges, hist) = wear_histogram(&[0, 1, 2, 3, 9], 2);
        assert_eq!(edges, vec![0.0, 5.0, 10.0]);
        assert_eq!(hist, vec![4, 1]);
    }
}
