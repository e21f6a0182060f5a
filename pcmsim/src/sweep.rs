//! A sweep: policies x memory sizes x DRAM shares over one trace, all points fed in a single
//! streaming pass (plus one counting pass for the footprint when sizes are fractions of it).

use crate::config::Models;
use crate::gen::{GenParams, Generator};
use crate::pagemap::PageMap;
use crate::policy::PolicyParams;
use crate::request::{Record, Request};
use crate::sim::{point_json, split, MemSpec, Point, TraceStats, BLOCK, PREFETCH_AHEAD};
use crate::trace::intern::Interner;
use crate::trace::{self, TraceError, TraceInfo};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// Where requests come from.
#[derive(Clone, Debug)]
pub enum Source {
    File(PathBuf),
    Gen(GenParams),
}

impl Source {
    pub fn label(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Gen(g) => format!("{}(seed={})", g.kind_name(), g.seed),
        }
    }

    pub fn records(&self) -> Result<(TraceInfo, trace::RecordIter), TraceError> {
        match self {
            Source::File(p) => trace::open(p),
            Source::Gen(g) => {
                let info = TraceInfo { time_ns: true, ..TraceInfo::default() };
                let it = Generator::new(g.clone()).map_err(TraceError::new)?.map(Ok::<Record, TraceError>);
                Ok((info, Box::new(it)))
            }
        }
    }

    /// Stream the trace as interned requests.
    pub fn for_each(&self, mut f: impl FnMut(&Request)) -> Result<TraceInfo, String> {
        let mut interner = Interner::new();
        let mut n = 0u64;
        let mut each = |rec: &Record| -> Result<(), String> {
            n += 1;
            f(&interner.request(rec).map_err(|e| format!("record {n}: {e}"))?);
            Ok(())
        };
        match self {
            Source::File(p) => trace::for_each_record(p, each),
            Source::Gen(g) => {
                for rec in Generator::new(g.clone())? {
                    each(&rec)?;
                }
                Ok(TraceInfo { time_ns: true, ..TraceInfo::default() })
            }
        }
    }

    /// Stream the trace as interned requests in blocks of [`BLOCK`] (the last one shorter).
    /// `each` sees every request as it is read, `block` every full block.
    pub fn for_each_block(
        &self,
        mut each: impl FnMut(&Request),
        mut block: impl FnMut(&[Request]),
    ) -> Result<TraceInfo, String> {
        let mut buf: Vec<Request> = Vec::with_capacity(BLOCK);
        let info = self.for_each(|r| {
            each(r);
            buf.push(*r);
            if buf.len() == BLOCK {
                block(&buf);
                buf.clear();
            }
        })?;
        if !buf.is_empty() {
            block(&buf);
        }
        Ok(info)
    }
}

/// Count distinct pages (memory ~ footprint, not trace length).
pub fn footprint(src: &Source) -> Result<u64, String> {
    let mut seen = PageMap::with_capacity(1 << 16);
    src.for_each_block(
        |_| {},
        |block| {
            for (i, r) in block.iter().enumerate() {
                if let Some(next) = block.get(i + PREFETCH_AHEAD) {
                    seen.prefetch(next.key);
                }
                seen.insert(r.key, 0);
            }
        },
    )?;
    Ok(seen.len() as u64)
}

#[derive(Clone, Debug)]
pub struct SweepSpec {
    pub policies: Vec<String>,
    pub mems: Vec<MemSpec>,
    pub dram_shares: Vec<f64>,
    pub params: PolicyParams,
    pub models: Models,
    pub wear_bins: usize,
}

/// The sweep's last JSON line, keys in this order.
#[derive(Serialize)]
struct Summary<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    trace: &'a str,
    requests: u64,
    fg_requests: u64,
    writes: u64,
    footprint: u64,
    duration_s: Option<f64>,
    points: u64,
    elapsed_s: f64,
    point_requests_per_s: f64,
}

/// Run the sweep, writing one JSON line per point, then a summary line. The footprint is
/// always counted first (one extra pass) so that every point reports its memory size as a
/// fraction of it.
pub fn run(spec: &SweepSpec, src: &Source, out: &mut dyn Write) -> Result<(), String> {
    let start = Instant::now();
    let fp = footprint(src)?;
    let mut points = Vec::new();
    for &mem in &spec.mems {
        let frames = match mem {
            MemSpec::Frac(f) => {
                if f.is_nan() || f <= 0.0 {
                    return Err(format!("memory fraction must be > 0 (got {f})"));
                }
                ((f * fp as f64).round() as u64).max(2)
            }
            MemSpec::Pages(n) => n.max(2),
        };
        for &share in &spec.dram_shares {
            if !(0.0..=1.0).contains(&share) {
                return Err(format!("DRAM share must be in [0, 1] (got {share})"));
            }
            for pol in &spec.policies {
                let g = split(frames, share);
                points.push(Point::new(pol, g, mem, share, &spec.params).map_err(|e| format!("{pol}: {e}"))?);
            }
        }
    }
    let mut stats = TraceStats { footprint: Some(fp), ..TraceStats::default() };
    let info = src.for_each_block(
        |r| stats.add(r),
        |block| {
            for p in points.iter_mut() {
                p.run_block(block);
            }
        },
    )?;
    stats.time_ns = info.time_ns;
    let label = src.label();
    for p in &points {
        writeln!(out, "{}", point_json(p, &stats, &spec.models, spec.wear_bins, &label))
            .map_err(|e| e.to_string())?;
    }
    let secs = start.elapsed().as_secs_f64();
    let summary = Summary {
        kind: "summary",
        trace: &label,
        requests: stats.requests,
        fg_requests: stats.fg_requests,
        writes: stats.writes,
        footprint: fp,
        duration_s: stats.duration_s(),
        points: points.len() as u64,
        elapsed_s: secs,
        point_requests_per_s: (stats.requests * points.len() as u64) as f64 / secs,
    };
    writeln!(out, "{}", crate::json::line(&summary)).map_err(|e| e.to_string())?;
    Ok(())
}
