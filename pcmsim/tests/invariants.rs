//! Accounting invariants of every policy on random traces (sizes and shares vary):
//! requests = hits + misses, one storage read per miss, PCM writes = sum of per-frame wear,
//! write-backs <= evictions, residency never exceeds memory.

mod common;

use common::random_sizes;
use pcmsim::gen::Rng;
use pcmsim::meter::{Meter, Op};
use pcmsim::policy::{build, Geometry, PolicyParams, POLICY_NAMES};

#[test]
fn accounting_holds_on_random_traces() {
    let mut rng = Rng::new(42);
    for case in 0..60 {
        let (dram, pcm, pages) = random_sizes(&mut rng, 8, 40, 120);
        for name in POLICY_NAMES {
            let mut p = build(name, Geometry::new(dram, pcm), &PolicyParams::default()).unwrap();
            let mut m = Meter::new(dram, pcm);
            let mut rng2 = Rng::new(case);
            for _ in 0..3000 {
                // Skewed page choice so that there are hits.
                let page = rng2.below(pages).min(rng2.below(pages));
                let fg = rng2.below(4) != 0;
                let w = rng2.below(3) == 0;
                m.begin(fg);
                p.access(page, w, fg, &mut m);
                assert!(p.resident() <= dram + pcm, "{name}: resident {} > {}", p.resident(), dram + pcm);
            }
            let t = m.total();
            let misses = t.requests - t.hits;
            assert_eq!(t.requests, 3000);
            assert_eq!(t.ops[Op::StorageRead as usize], misses, "{name} case {case}");
            assert_eq!(t.ops[Op::StorageWrite as usize], t.writebacks, "{name}");
            assert!(t.writebacks <= t.evictions, "{name}");
            assert_eq!(t.ops[Op::PcmWrite as usize], m.pcm_wear.iter().sum::<u64>(), "{name}");
            assert_eq!(t.dram_hits + t.pcm_hits, t.hits, "{name}");
            // A DRAM hit is served from DRAM; no request is served twice.
            assert!(t.dram_hits <= t.on_dram && t.on_dram <= t.requests, "{name}");
            // Everything that entered and did not leave is resident.
            assert_eq!(misses - t.evictions, p.resident() as u64, "{name} case {case}");
            if name == "lru" || name == "2q" {
                assert_eq!(t.to_dram + t.to_pcm, 0, "{name} never migrates");
            }
        }
    }
}

/// With memory at least the footprint, every policy misses exactly once per distinct page.
#[test]
fn only_cold_misses_when_everything_fits() {
    for name in POLICY_NAMES {
        let mut p = build(name, Geometry::new(4, 60), &PolicyParams::default()).unwrap();
        let mut m = Meter::new(4, 60);
        let mut rng = Rng::new(7);
        for i in 0..5000u64 {
            let page = rng.below(64);
            let fg = i % 3 != 0;
            m.begin(fg);
            p.access(page, i % 5 == 0, fg, &mut m);
        }
        let t = m.total();
        assert_eq!(t.requests - t.hits, 64, "{name}");
    }
}
