//! Synthetic workloads shaped like the paper's two traces. These are NOT the paper's Nexus 7
//! traces: only the structure (who is foreground, the fg:bg request ratio, app switching) is
//! imitated; footprints, locality and write behaviour are parameters.
//!
//! * `trace1`: app 0 is foreground for the whole trace (a browser); apps 1.. are background
//!   services pushing data (mail, messenger); fg:bg requests ~ 15:1.
//! * `trace2`: `apps` apps take turns in the foreground (the foreground app changes every
//!   `switch_every` requests, to a random other app); the others are background;
//!   fg:bg requests ~ 3:1.
//!
//! Each app owns one file of `pages` pages (`fg_pages` for the trace-1 foreground app) accessed
//! with Zipf(`zipf`) popularity (page 0 hottest); with probability `shared_share` a request
//! goes instead to a shared read-only file (libraries) of `shared_pages` pages. A fraction
//! `write_pages` of each app's pages is write-prone (chosen by hash); a request to a
//! write-prone page is a write with probability `write_prob`. Times are ns at `rate`
//! requests per second.

use crate::request::{PageId, ProcState, Record, OOM_ADJ_UNKNOWN};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Trace1,
    Trace2,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GenParams {
    pub kind: Kind,
    pub requests: u64,
    pub seed: u64,
    pub apps: u32,
    pub fg_pages: u64,
    pub pages: u64,
    pub shared_pages: u64,
    pub shared_share: f64,
    pub zipf: f64,
    /// Probability that a request comes from the foreground app.
    pub fg_share: f64,
    pub switch_every: u64,
    pub write_pages: f64,
    pub write_prob: f64,
    pub rate: f64,
}

impl GenParams {
    pub fn preset(name: &str) -> Result<GenParams, String> {
        let base = GenParams {
            kind: Kind::Trace1,
            requests: 2_000_000,
            seed: 1,
            apps: 3,
            fg_pages: 24_576,
            pages: 4_096,
            shared_pages: 4_096,
            shared_share: 0.1,
            zipf: 0.9,
            fg_share: 15.0 / 16.0,
            switch_every: 0,
            write_pages: 0.25,
            write_prob: 0.5,
            rate: 5_000.0,
        };
        match name {
            "trace1" => Ok(base),
            "trace2" => Ok(GenParams {
                kind: Kind::Trace2,
                apps: 8,
                pages: 6_144,
                fg_pages: 6_144,
                fg_share: 0.75,
                switch_every: 50_000,
                ..base
            }),
            _ => Err(format!("unknown generator preset '{name}' (known: trace1, trace2)")),
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            Kind::Trace1 => "trace1",
            Kind::Trace2 => "trace2",
        }
    }

    /// Set one parameter by name (the CLI's `--gen-set key=value`).
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), String> {
        let bad = || format!("bad value '{v}' for generator parameter '{key}'");
        let u = || v.parse::<u64>().map_err(|_| bad());
        let f = || v.parse::<f64>().map_err(|_| bad());
        match key {
            "requests" => self.requests = u()?,
            "seed" => self.seed = u()?,
            "apps" => self.apps = u()? as u32,
            "fg_pages" => self.fg_pages = u()?,
            "pages" => self.pages = u()?,
            "shared_pages" => self.shared_pages = u()?,
            "shared_share" => self.shared_share = f()?,
            "zipf" => self.zipf = f()?,
            "fg_share" => self.fg_share = f()?,
            "switch_every" => self.switch_every = u()?,
            "write_pages" => self.write_pages = f()?,
            "write_prob" => self.write_prob = f()?,
            "rate" => self.rate = f()?,
            _ => return Err(format!("unknown generator parameter '{key}'")),
        }
        self.check()
    }

    pub fn check(&self) -> Result<(), String> {
        if self.apps < 2 {
            return Err("generator: need at least 2 apps".into());
        }
        if self.pages == 0 || self.fg_pages == 0 {
            return Err("generator: app footprints must be > 0".into());
        }
        for (n, x) in [
            ("shared_share", self.shared_share),
            ("fg_share", self.fg_share),
            ("write_pages", self.write_pages),
            ("write_prob", self.write_prob),
        ] {
            if !(0.0..=1.0).contains(&x) {
                return Err(format!("generator: {n} must be in [0, 1]"));
            }
        }
        if self.shared_share > 0.0 && self.shared_pages == 0 {
            return Err("generator: shared_share > 0 needs shared_pages > 0".into());
        }
        if self.rate <= 0.0 || self.zipf < 0.0 {
            return Err("generator: rate must be > 0 and zipf >= 0".into());
        }
        Ok(())
    }

    /// The footprint in pages if every page were touched.
    pub fn max_footprint(&self) -> u64 {
        let apps = match self.kind {
            Kind::Trace1 => self.fg_pages + (self.apps as u64 - 1) * self.pages,
            Kind::Trace2 => self.apps as u64 * self.pages,
        };
        apps + if self.shared_share > 0.0 { self.shared_pages } else { 0 }
    }
}

/// SplitMix64: small, fast, good enough for workload synthesis.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Zipf sampler over ranks 0..n by inverse CDF (binary search).
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(n: u64, s: f64) -> Zipf {
        let mut cdf = Vec::with_capacity(n as usize);
        let mut acc = 0.0;
        for r in 0..n {
            acc += 1.0 / ((r + 1) as f64).powf(s);
            cdf.push(acc);
        }
        for c in &mut cdf {
            *c /= acc;
        }
        Zipf { cdf }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.unit();
        (self.cdf.partition_point(|&c| c <= u) as u64).min(self.cdf.len() as u64 - 1)
    }
}

#[inline]
fn mix(a: u64, b: u64) -> u64 {
    let mut z = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    z = (z ^ (z >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 32)
}

/// The generator: an iterator of records, O(footprint) memory for the Zipf tables only.
pub struct Generator {
    p: GenParams,
    rng: Rng,
    fg_zipf: Zipf,
    app_zipf: Zipf,
    shared_zipf: Option<Zipf>,
    fg_app: u32,
    i: u64,
    write_threshold: u64,
}

/// Device number used for generated files (8:1, like /dev/sda1 in `new_encode_dev` form).
pub const GEN_DEV: u32 = 0x801;
const SHARED_INO: u64 = 1000;

impl Generator {
    pub fn new(p: GenParams) -> Result<Generator, String> {
        p.check()?;
        let fg_pages = if p.kind == Kind::Trace1 { p.fg_pages } else { p.pages };
        Ok(Generator {
            rng: Rng::new(p.seed),
            fg_zipf: Zipf::new(fg_pages, p.zipf),
            app_zipf: Zipf::new(p.pages, p.zipf),
            shared_zipf: (p.shared_share > 0.0).then(|| Zipf::new(p.shared_pages, p.zipf)),
            fg_app: 0,
            i: 0,
            write_threshold: (p.write_pages * u64::MAX as f64) as u64,
            p,
        })
    }

    pub fn params(&self) -> &GenParams {
        &self.p
    }

    fn state_of(&self, app: u32) -> ProcState {
        if app == self.fg_app {
            ProcState::Foreground
        } else if self.p.kind == Kind::Trace1 {
            ProcState::Service
        } else {
            ProcState::Background
        }
    }
}

impl Iterator for Generator {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        if self.i >= self.p.requests {
            return None;
        }
        let i = self.i;
        self.i += 1;
        let p = &self.p;
        if p.kind == Kind::Trace2 && p.switch_every > 0 && i > 0 && i.is_multiple_of(p.switch_every) {
            let other = self.rng.below(p.apps as u64 - 1) as u32;
            self.fg_app = if other >= self.fg_app { other + 1 } else { other };
        }
        let app = if self.rng.unit() < p.fg_share {
            self.fg_app
        } else {
            let other = self.rng.below(p.apps as u64 - 1) as u32;
            if other >= self.fg_app {
                other + 1
            } else {
                other
            }
        };
        let state = self.state_of(app);
        let (ino, index, write) = match &self.shared_zipf {
            Some(z) if self.rng.unit() < self.p.shared_share => (SHARED_INO, z.sample(&mut self.rng), false),
            _ => {
                let z = if self.p.kind == Kind::Trace1 && app == 0 { &self.fg_zipf } else { &self.app_zipf };
                let index = z.sample(&mut self.rng);
                let prone = mix(app as u64 + 1, index) < self.write_threshold;
                let write = prone && self.rng.unit() < self.p.write_prob;
                (SHARED_INO + 1 + app as u64, index, write)
            }
        };
        Some(Record {
            time: (i as f64 * 1e9 / self.p.rate) as u64,
            page: PageId { dev: GEN_DEV, ino, index },
            pid: 1000 + app,
            state,
            oom_adj: match state {
                ProcState::Foreground => 0,
                ProcState::Service => 5,
                ProcState::Background => 7,
                _ => OOM_ADJ_UNKNOWN,
            },
            write,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fg_ratio_and_determinism() {
        for (name, want) in [("trace1", 15.0), ("trace2", 3.0)] {
            let mut p = GenParams::preset(name).unwrap();
            p.requests = 200_000;
            let recs: Vec<Record> = Generator::new(p.clone()).unwrap().collect();
            let fg = recs.iter().filter(|r| r.state.is_foreground()).count() as f64;
            let ratio = fg / (recs.len() as f64 - fg);
            assert!((ratio - want).abs() / want < 0.05, "{name}: fg:bg {ratio}");
            let again: Vec<Record> = Generator::new(p).unwrap().collect();
            assert_eq!(recs, again);
        }
    }

    #[test]
    fn trace2_switches_foreground() {
        let mut p = GenParams::preset("trace2").unwrap();
        p.requests = 500_000;
        let fg_pids: std::collections::HashSet<u32> =
            Generator::new(p).unwrap().filter(|r| r.state.is_foreground()).map(|r| r.pid).collect();
        assert!(fg_pids.len() >= 4);
    }

    #[test]
    fn zipf_is_skewed() {
        let z = Zipf::new(1000, 1.0);
        let mut rng = Rng::new(3);
        let hot = (0..100_000).filter(|_| z.sample(&mut rng) < 10).count();
        // P(rank < 10) = H(10)/H(1000) = 2.929/7.485 = 0.391
        assert!((hot as f64 / 100_000.0 - 0.391).abs() < 0.01);
    }
}
