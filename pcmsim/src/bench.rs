//! Throughput benchmark: requests per second per policy on a 10-million-request trace, and
//! the peak resident memory of each run.
//!
//! Three ways to feed the policies:
//! * default: the generated trace is packed once into an in-memory buffer (8 bytes per
//!   request), so the timing covers the policy and meter only (but the buffer is resident);
//! * `--stream`: requests come straight from the generator (timing includes generating; memory
//!   holds no trace, so the peak RSS is the simulator's own);
//! * `--trace FILE`: the file is read and decoded in bulk each time (reader + interning +
//!   policy), memory again without the trace.
//!
//! Peak RSS is the process's `VmHWM`, reset before each run through `/proc/self/clear_refs`
//! (where the kernel allows it), so each line shows the peak of its own run.

use crate::gen::{GenParams, Generator};
use crate::mem;
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
    /// Memory sizes; every policy runs at each.
    pub mems: Vec<MemSpec>,
    pub dram_share: f64,
    /// Feed a generated trace straight from the generator instead of a packed buffer.
    pub stream: bool,
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

/// Reset the peak RSS (`VmHWM`) to the current RSS; false if the kernel does not allow it.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// One benchmark line.
pub struct BenchResult {
    pub policy: String,
    pub frames: u64,
    pub requests: u64,
    pub wall_per_s: f64,
    pub cpu_per_s: Option<f64>,
    /// Peak resident set size of the process during this run (KiB), if known.
    pub peak_rss_kib: Option<u64>,
    /// Whether the peak was reset before this run (else it is the process-wide peak so far).
    pub rss_reset: bool,
}

pub fn run(spec: &BenchSpec) -> Result<Vec<BenchResult>, String> {
    // The footprint pass (memory ~ distinct pages) only when a size is a fraction of it.
    let fp = if spec.mems.iter().any(|m| matches!(m, MemSpec::Frac(_))) {
        Some(footprint(&spec.source)?)
    } else {
        None
    };
    let packed = match &spec.source {
        Source::Gen(gp) if !spec.stream => Some(pack(gp)?),
        _ => None,
    };
    let mut out = Vec::new();
    for &mem in &spec.mems {
        let frames = match (mem, fp) {
            (MemSpec::Frac(f), Some(fp)) => ((f * fp as f64).round() as u64).max(2),
            (MemSpec::Pages(n), _) => n.max(2),
            (MemSpec::Frac(_), None) => unreachable!("footprint counted above"),
        };
        let g = split(frames, spec.dram_share);
        eprintln!(
            "bench: source {}, footprint {} pages, memory {frames} frames ({} DRAM + {} PCM), {}",
            spec.source.label(),
            fp.map_or("?".into(), |f| f.to_string()),
            g.dram,
            g.pcm,
            match (&packed, &spec.source) {
                (Some(_), _) => "packed in memory",
                (None, Source::Gen(_)) => "streamed from the generator",
                (None, Source::File(_)) => "streamed from the file",
            }
        );
        for name in &spec.policies {
            let rss_reset = reset_peak_rss();
            let mut p = Point::new(name, g, mem, spec.dram_share, &PolicyParams::default())?;
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
                    spec.source.for_each_block(|_| n += 1, |block| p.run_block(block))?;
                    n
                }
            };
            let secs = t0.elapsed().as_secs_f64();
            let cpu = c0.zip(thread_cpu_s()).map(|(a, b)| b - a);
            let peak = mem::peak_rss_kib();
            let hits = p.meter.total().hits;
            eprintln!(
                "bench: {name:10} {n} requests in {secs:.3} s wall, {} s on CPU, hit ratio {:.4}, peak RSS {} KiB",
                cpu.map_or("?".into(), |c| format!("{c:.3}")),
                hits as f64 / n as f64,
                peak.map_or("?".into(), |k| k.to_string())
            );
            out.push(BenchResult {
                policy: name.clone(),
                frames,
                requests: n,
                wall_per_s: n as f64 / secs,
                cpu_per_s: cpu.map(|c| n as f64 / c),
                peak_rss_kib: peak,
                rss_reset,
            });
        }
    }
    Ok(out)
}
