//! Throughput benchmark: requests per second per policy on a 10-million-request trace.
//! The trace is generated once into a packed in-memory buffer (8 bytes per request) so that
//! the timing covers the policy and meter only; `--trace` instead streams a file each time
//! (reader + interning + policy).

use crate::gen::{GenParams, Generator};
use crate::policy::PolicyParams;
use crate::request::Request;
use crate::sim::{split, MemSpec, Point, BLOCK};
use crate::sweep::{footprint, Source};
use crate::trace::intern::Interner;
use std::time::Instant;

const FG_BIT: u64 = 1 << 63;
const W_BIT: u64 = 1 << 62;

pub struct BenchSpec {
    pub source: Source,
    pub policies: Vec<String>,
    pub mem_frac: f64,
    pub dram_share: f64,
}

/// Default bench workload: trace-2 shape, 16 apps x 65536 pages (~1M-page footprint).
pub fn default_gen(requests: u64) -> GenParams {
    let mut g = GenParams::preset("trace2").expect("preset");
    g.requests = requests;
    g.apps = 16;
    g.pages = 65_536;
    g.shared_pages = 16_384;
    g
}

fn pack(gen: &GenParams) -> Result<Vec<u64>, String> {
    let mut interner = Interner::new();
    let mut v = Vec::with_capacity(gen.requests as usize);
    for rec in Generator::new(gen.clone())? {
        let r = interner.request(&rec)?;
        if r.key >= W_BIT {
            return Err("key too large to pack".into());
        }
        v.push(r.key | if r.foreground { FG_BIT } else { 0 } | if r.write { W_BIT } else { 0 });
    }
    Ok(v)
}

/// On-CPU time of this thread in seconds (Linux schedstat, ns resolution), if available.
/// The machine may be shared, so the rate per on-CPU second is reported beside wall time.
fn thread_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns * 1e-9)
}

/// One benchmark line.
pub struct BenchResult {
    pub policy: String,
    pub requests: u64,
    pub wall_per_s: f64,
    pub cpu_per_s: Option<f64>,
}

pub fn run(spec: &BenchSpec) -> Result<Vec<BenchResult>, String> {
    let fp = footprint(&spec.source)?;
    let frames = ((spec.mem_frac * fp as f64).round() as u64).max(2);
    let g = split(frames, spec.dram_share);
    eprintln!(
        "bench: source {}, footprint {fp} pages, memory {frames} frames ({} DRAM + {} PCM)",
        spec.source.label(),
        g.dram,
        g.pcm
    );
    let packed = match &spec.source {
        Source::Gen(gp) => Some(pack(gp)?),
        Source::File(_) => None,
    };
    let mut out = Vec::new();
    for name in &spec.policies {
        let mut p = Point::new(name, g, MemSpec::Pages(frames), spec.dram_share, &PolicyParams::default())?;
        let (t0, c0) = (Instant::now(), thread_cpu_s());
        let n = match &packed {
            Some(v) => {
                let mut block = Vec::with_capacity(BLOCK);
                for chunk in v.chunks(BLOCK) {
                    block.clear();
                    block.extend(chunk.iter().map(|&x| Request {
                        time: 0,
                        key: x & !(FG_BIT | W_BIT),
                        foreground: x & FG_BIT != 0,
                        write: x & W_BIT != 0,
                    }));
                    p.run_block(&block);
                }
                v.len() as u64
            }
            None => {
                let mut n = 0;
                let mut block = Vec::with_capacity(BLOCK);
                spec.source.for_each(|r| {
                    block.push(*r);
                    if block.len() == BLOCK {
                        p.run_block(&block);
                        block.clear();
                    }
                    n += 1;
                })?;
                p.run_block(&block);
                n
            }
        };
        let secs = t0.elapsed().as_secs_f64();
        let cpu = c0.zip(thread_cpu_s()).map(|(a, b)| b - a);
        let hits = p.meter.total().hits;
        eprintln!(
            "bench: {name:10} {n} requests in {secs:.3} s wall, {} s on CPU, hit ratio {:.4}",
            cpu.map_or("?".into(), |c| format!("{c:.3}")),
            hits as f64 / n as f64
        );
        out.push(BenchResult {
            policy: name.clone(),
            requests: n,
            wall_per_s: n as f64 / secs,
            cpu_per_s: cpu.map(|c| n as f64 / c),
        });
    }
    Ok(out)
}
