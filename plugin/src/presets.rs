//! The presets: one function per chip whose `Params` literal writes out every field (no preset
//! starts from another's values; `descriptions_are_independent` checks this file). README.md
//! "Presets and their sources" gives the source (or "estimate") of every figure.

use crate::params::{BwParams, CacheGeom, Cluster, DeviceParams, Home, Params, Protocol, Timing, VcpuMap};

pub const PRESETS: &[&str] = &["knl-64", "altra-80", "icelake-32", "epyc2-64", "tiny-4"];

/// The digest's DRAM (Table 1: read 50 ns, write 20-50 ns, the upper bound taken, 0.1 nJ/bit
/// both ways), with one controller's read and write bandwidth (GB/s), which is the chip's.
fn digest_dram(bw_gbs: f64, bw_write_gbs: f64) -> DeviceParams {
    DeviceParams {
        read_ns: 50.0,
        write_ns: 50.0,
        read_nj_per_bit: 0.1,
        write_nj_per_bit: 0.1,
        endurance: 0.0,
        bw_gbs,
        bw_write_gbs,
    }
}

/// The digest's PCM (Table 1: read 50-100 ns, the upper bound taken, write ~1 us, read 0.1 and
/// write 1 nJ/bit, endurance 1e8 writes). Bandwidth per controller: one Optane DC PMM per
/// channel, 6.6 GB/s read and 2.3 GB/s write (Izraelevitz et al. 2019; README.md), an estimate
/// for the digest's PCM, the same on every chip (PCM sits on the DDR controllers).
fn digest_pcm() -> DeviceParams {
    DeviceParams {
        read_ns: 100.0,
        write_ns: 1000.0,
        read_nj_per_bit: 0.1,
        write_nj_per_bit: 1.0,
        endurance: 1e8,
        bw_gbs: 6.6,
        bw_write_gbs: 2.3,
    }
}

/// MCDRAM has no figure in the digest: idle latency ~10% above DDR on KNL, energy assumed equal
/// to DRAM (an assumption, README.md); `bw_gbs` per EDC. Chips without MCDRAM keep the figures
/// for `mem=mcdram:` ranges, which then use the DDR controllers.
fn mcdram(bw_gbs: f64) -> DeviceParams {
    DeviceParams {
        read_ns: 55.0,
        write_ns: 55.0,
        read_nj_per_bit: 0.1,
        write_nj_per_bit: 0.1,
        endurance: 0.0,
        bw_gbs,
        bw_write_gbs: bw_gbs,
    }
}

/// No such cache (`llc.size_kib=0`, `pl2.size_kib=0`).
const NO_LLC: CacheGeom = CacheGeom { size_kib: 0, ways: 1 };

/// Xeon Phi 7210 (Knights Landing). Sources: README.md "Presets and their sources".
/// 64 cores in 32 active tiles of 2 cores, 1 MiB 16-way L2 per tile, 32 KiB 8-way L1D, 4
/// threads per core, 2D mesh with YX routing, MESIF with a distributed tag directory, quadrant
/// mode, 2 DDR4 controllers (3 channels each) on the west and east edges, 8 MCDRAM EDCs (two per
/// corner). The 6x6 grid with one disabled site per quadrant is our layout (the die has 38).
fn knl_64() -> Params {
    Params {
        preset: "knl-64".into(),
        mesh_rows: 6,
        mesh_cols: 6,
        disabled_tiles: vec![(1, 1), (1, 4), (4, 1), (4, 4)],
        tiles_per_site: 1,
        flit_bytes: 32,
        cores_per_tile: 2,
        threads_per_core: 4,
        vcpu_map: VcpuMap::Scatter,
        cluster: Cluster::Quadrant,
        protocol: Protocol::Mesif,
        home: Home::Tile,
        l1d: CacheGeom { size_kib: 32, ways: 8 },
        l2: CacheGeom { size_kib: 1024, ways: 16 },
        llc: NO_LLC,
        pl2: NO_LLC,
        mc_ddr: vec![(2, -1), (3, 6)],
        mc_mcdram: vec![(-1, 0), (-1, 1), (-1, 4), (-1, 5), (6, 0), (6, 1), (6, 4), (6, 5)],
        // 6 channels DDR4-2133, ~90 GB/s STREAM over 2 controllers; MCDRAM ~450 GB/s / 8 EDCs.
        dram: digest_dram(45.0, 45.0),
        mcdram: mcdram(56.0),
        pcm: digest_pcm(),
        storage: digest_dram(45.0, 45.0),
        allow_oversubscribe: false,
        hot_lines: 20,
        hot_functions: 30,
        timing: Timing {
            enabled: true,
            ghz: 1.3,
            cpi: 1.0,
            mlp: 1.0,
            smt_gain: 1.5,
            l1: 4,
            l2: 17,
            dir: 20,
            hop: 5,
            fwd_clean: 20,
            fwd_dirty: 30,
            inv: 20,
            llc: 0,
            pl2: 0,
        },
        bw: BwParams { epoch_ns: 1000.0, queue: true, behind_epochs: 8 },
    }
}

/// Ampere Altra Q80-30: 80 single-thread Neoverse N1 cores, 64 KiB 4-way L1D, 1 MiB 8-way
/// private L2 per core, 32 MiB system-level cache (SLC) in the CMN-600's home nodes, 8 DDR4-3200
/// channels. Four cores share one CMN-600 crosspoint (two DSUs of two cores on one CAL;
/// AnandTech's Altra Max review): a tile is one core with its private L2, four tiles per site,
/// on a 4x5 grid of 20 crosspoints (our layout: the grid's shape is not published), 4 channels
/// on each side. The SLC is a slice beside each home: 80 x 410 KiB = 32.03 MiB.
fn altra_80() -> Params {
    Params {
        preset: "altra-80".into(),
        mesh_rows: 4,
        mesh_cols: 5,
        disabled_tiles: vec![],
        tiles_per_site: 4,
        flit_bytes: 32,
        cores_per_tile: 1,
        threads_per_core: 1,
        vcpu_map: VcpuMap::Scatter,
        cluster: Cluster::AllToAll,
        protocol: Protocol::Mesif,
        home: Home::Tile,
        l1d: CacheGeom { size_kib: 64, ways: 4 },
        l2: CacheGeom { size_kib: 1024, ways: 8 },
        llc: CacheGeom { size_kib: 410, ways: 16 },
        pl2: NO_LLC,
        mc_ddr: vec![(0, -1), (1, -1), (2, -1), (3, -1), (0, 5), (1, 5), (2, 5), (3, 5)],
        mc_mcdram: vec![],
        // One DDR4-3200 channel per controller: 25.6 GB/s peak, ~80% sustained (est.).
        dram: digest_dram(20.5, 20.5),
        mcdram: mcdram(20.5),
        pcm: digest_pcm(),
        storage: digest_dram(20.5, 20.5),
        allow_oversubscribe: false,
        hot_lines: 20,
        hot_functions: 30,
        timing: Timing {
            enabled: true,
            ghz: 3.0,
            cpi: 0.5,
            mlp: 1.0,
            smt_gain: 1.0,
            l1: 4,
            l2: 11,
            dir: 25,
            hop: 3,
            fwd_clean: 25,
            fwd_dirty: 35,
            inv: 25,
            llc: 30,
            pl2: 0,
        },
        bw: BwParams { epoch_ns: 1000.0, queue: true, behind_epochs: 8 },
    }
}

/// Xeon Gold 6338 (Ice Lake-SP): 32 cores / 64 threads, 48 KiB 12-way L1D, 1.25 MiB 20-way
/// private L2 per core, 48 MiB shared non-inclusive LLC (1.5 MiB 12-way slice per core), 4
/// memory controllers x 2 DDR4-3200 channels, mesh. The 40-site XCC grid as 5x8 with 8 sites
/// disabled (our layout); the LLC slice of a line sits at its home (CHA) tile.
fn icelake_32() -> Params {
    Params {
        preset: "icelake-32".into(),
        mesh_rows: 5,
        mesh_cols: 8,
        disabled_tiles: vec![(0, 0), (0, 7), (2, 0), (2, 7), (4, 0), (4, 7), (2, 3), (2, 4)],
        tiles_per_site: 1,
        flit_bytes: 32,
        cores_per_tile: 1,
        threads_per_core: 2,
        vcpu_map: VcpuMap::Scatter,
        cluster: Cluster::AllToAll,
        protocol: Protocol::Mesif,
        home: Home::Tile,
        l1d: CacheGeom { size_kib: 48, ways: 12 },
        l2: CacheGeom { size_kib: 1280, ways: 20 },
        llc: CacheGeom { size_kib: 1536, ways: 12 },
        pl2: NO_LLC,
        mc_ddr: vec![(1, -1), (3, -1), (1, 8), (3, 8)],
        mc_mcdram: vec![],
        // Two DDR4-3200 channels per controller: 51.2 GB/s peak, ~80% sustained (est.).
        dram: digest_dram(41.0, 41.0),
        mcdram: mcdram(41.0),
        pcm: digest_pcm(),
        storage: digest_dram(41.0, 41.0),
        allow_oversubscribe: false,
        hot_lines: 20,
        hot_functions: 30,
        timing: Timing {
            enabled: true,
            ghz: 2.0,
            cpi: 0.5,
            mlp: 1.0,
            smt_gain: 1.3,
            l1: 5,
            l2: 14,
            dir: 15,
            hop: 2,
            fwd_clean: 20,
            fwd_dirty: 30,
            inv: 20,
            llc: 20,
            pl2: 0,
        },
        bw: BwParams { epoch_ns: 1000.0, queue: true, behind_epochs: 8 },
    }
}

/// AMD EPYC 7702 (Zen 2 "Rome"): 64 cores / 128 threads in 8 CCDs of 2 CCXs; a CCX is 4 cores
/// sharing a 16 MiB 16-way L3, a victim cache of the cores' 512 KiB 8-way private L2s; 32 KiB
/// 8-way L1D; a central I/O die with the 8 DDR4-3200 channels and the probe filters. A tile is
/// one CCX; its shared level stands for the L2s and the L3 together (exclusive: 16 + 4 x 0.5 =
/// 18 MiB, 18-way), and a per-core private L2 tag array gives the L2's hit latency; the home (probe filter) of a line is on the I/O die beside its channel;
/// dirty shared lines stay on chip in O (MOESIF). 4x4 grid: row r holds CCD 2r (columns 0-1)
/// and CCD 2r+1 (columns 2-3), the grid quadrants are the NPS4 quadrants, 2 channels each.
fn epyc2_64() -> Params {
    Params {
        preset: "epyc2-64".into(),
        mesh_rows: 4,
        mesh_cols: 4,
        disabled_tiles: vec![],
        tiles_per_site: 1,
        flit_bytes: 32,
        cores_per_tile: 4,
        threads_per_core: 2,
        vcpu_map: VcpuMap::Scatter,
        cluster: Cluster::AllToAll,
        protocol: Protocol::Moesif,
        home: Home::Mc,
        l1d: CacheGeom { size_kib: 32, ways: 8 },
        l2: CacheGeom { size_kib: 18 * 1024, ways: 18 },
        llc: NO_LLC,
        pl2: CacheGeom { size_kib: 512, ways: 8 },
        mc_ddr: vec![(0, -1), (1, -1), (0, 4), (1, 4), (2, -1), (3, -1), (2, 4), (3, 4)],
        mc_mcdram: vec![],
        // One DDR4-3200 channel per controller: ~150 GB/s STREAM over 8 channels.
        dram: digest_dram(18.75, 18.75),
        mcdram: mcdram(18.75),
        pcm: digest_pcm(),
        storage: digest_dram(18.75, 18.75),
        allow_oversubscribe: false,
        hot_lines: 20,
        hot_functions: 30,
        timing: Timing {
            enabled: true,
            ghz: 2.0,
            cpi: 0.5,
            mlp: 1.0,
            smt_gain: 1.25,
            l1: 4,
            l2: 34,
            dir: 50,
            hop: 11,
            fwd_clean: 40,
            fwd_dirty: 50,
            inv: 40,
            llc: 0,
            pl2: 12,
        },
        bw: BwParams { epoch_ns: 1000.0, queue: true, behind_epochs: 8 },
    }
}

/// A small machine for the hand-computed tests, no source: round numbers (1 GHz, so a
/// device's ns are its cycles; a DRAM line takes 1 ns of its controller).
fn tiny_4() -> Params {
    Params {
        preset: "tiny-4".into(),
        mesh_rows: 2,
        mesh_cols: 2,
        disabled_tiles: vec![],
        tiles_per_site: 1,
        flit_bytes: 32,
        cores_per_tile: 1,
        threads_per_core: 1,
        vcpu_map: VcpuMap::Scatter,
        cluster: Cluster::AllToAll,
        protocol: Protocol::Mesif,
        home: Home::Tile,
        l1d: CacheGeom { size_kib: 1, ways: 2 },
        l2: CacheGeom { size_kib: 4, ways: 4 },
        llc: NO_LLC,
        pl2: NO_LLC,
        mc_ddr: vec![(0, -1)],
        mc_mcdram: vec![(1, 2)],
        dram: digest_dram(64.0, 64.0),
        mcdram: mcdram(128.0),
        pcm: digest_pcm(),
        storage: digest_dram(64.0, 64.0),
        allow_oversubscribe: false,
        hot_lines: 20,
        hot_functions: 30,
        timing: Timing {
            enabled: true,
            ghz: 1.0,
            cpi: 1.0,
            mlp: 1.0,
            smt_gain: 1.0,
            l1: 4,
            l2: 10,
            dir: 5,
            hop: 2,
            fwd_clean: 8,
            fwd_dirty: 12,
            inv: 6,
            llc: 7,
            pl2: 0,
        },
        bw: BwParams { epoch_ns: 100.0, queue: true, behind_epochs: 8 },
    }
}

/// Each preset's complete description: one function per chip, every field written out (no
/// preset starts from another's values; `descriptions_are_independent` checks the source).
type Description = (&'static str, fn() -> Params);
const DESCRIPTIONS: &[Description] = &[
    ("knl-64", knl_64),
    ("altra-80", altra_80),
    ("icelake-32", icelake_32),
    ("epyc2-64", epyc2_64),
    ("tiny-4", tiny_4),
];

/// The named preset. README.md "Presets and their sources" gives the source (or "estimate") of
/// every figure; the functions above repeat the chip facts.
pub fn preset(name: &str) -> Result<Params, String> {
    match DESCRIPTIONS.iter().find(|(n, _)| *n == name) {
        Some((_, describe)) => Ok(describe()),
        None => Err(format!("unknown preset '{name}'; allowed: {}", PRESETS.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::param_keys::settable;

    #[test]
    fn presets_validate_at_their_thread_count() {
        for name in PRESETS {
            let p = preset(name).unwrap();
            p.validate(p.n_threads()).unwrap();
        }
        assert_eq!(preset("knl-64").unwrap().n_threads(), 256);
        assert_eq!(preset("knl-64").unwrap().n_cores(), 64);
        assert_eq!(preset("altra-80").unwrap().n_threads(), 80);
        assert_eq!(preset("icelake-32").unwrap().n_threads(), 64);
        assert_eq!(preset("tiny-4").unwrap().n_threads(), 4);
    }

    #[test]
    fn epyc2_64_is_16_ccx_of_4_cores_and_validates_at_128_threads() {
        let p = preset("epyc2-64").unwrap();
        p.validate(128).unwrap();
        assert!(p.validate(129).unwrap_err().contains("128 hardware threads"));
        assert_eq!((p.active_tiles().len(), p.n_cores(), p.n_threads()), (16, 64, 128));
        // 16 MiB 16-way L3 per CCX = 16384 sets; 32 KiB 8-way L1D = 64 sets
        assert_eq!((p.l2.sets(), p.l1d.sets()), (16384, 64));
        assert_eq!(p.mc_ddr.len(), 8);
        // two channels beside each quadrant (NPS4)
        let mut per_quadrant = [0; 4];
        for &(r, c) in &p.mc_ddr {
            per_quadrant[p.quadrant_of((r, c.clamp(0, 3)))] += 1;
        }
        assert_eq!(per_quadrant, [2, 2, 2, 2]);
        // snc4 (NPS4-like) is accepted: every quadrant has tiles
        let mut nps4 = p.clone();
        nps4.set("cluster", "snc4").unwrap();
        nps4.validate(128).unwrap();
    }

    #[test]
    fn every_preset_is_completely_described_and_valid() {
        assert_eq!(DESCRIPTIONS.iter().map(|(n, _)| *n).collect::<Vec<_>>(), PRESETS);
        for name in PRESETS {
            let p = preset(name).unwrap();
            assert_eq!(p.preset, *name);
            p.validate(p.n_threads()).unwrap();
            // Every key reads back: a blank machine given the preset's values key by key is the
            // preset, so the keys cover the description (and `get` and `set` agree).
            let mut copy = preset("tiny-4").unwrap();
            copy.preset = name.to_string();
            for key in settable().map(|k| k.name) {
                let value = p.get(key).unwrap_or_else(|e| panic!("{name} {key}: {e}"));
                copy.set(key, &value).unwrap_or_else(|e| panic!("{name} {key}={value}: {e}"));
            }
            assert_eq!(copy, p, "{name}: the keys do not cover every field");
            let t = &p.timing;
            assert!(t.ghz > 0.0 && t.cpi > 0.0 && t.l1 > 0 && t.l2 > t.l1 && t.dir > 0 && t.hop > 0, "{name}");
            assert!(t.fwd_dirty >= t.fwd_clean && t.inv > 0, "{name}");
            assert!(p.llc.size_kib == 0 || t.llc > 0, "{name}: an LLC needs a hit latency");
            assert_eq!(p.storage, p.dram, "{name}: storage takes DRAM's figures");
            for dev in [&p.dram, &p.mcdram, &p.pcm] {
                assert!(dev.read_ns > 0.0 && dev.bw_gbs > 0.0 && dev.bw_write_gbs > 0.0, "{name}");
            }
        }
        assert!(preset("knl-256").unwrap_err().contains("allowed: knl-64"));
    }

    #[test]
    fn descriptions_are_independent() {
        // No preset is built from another's values: each description function is a literal with
        // every field (the compiler enforces that a literal names all of them) and neither
        // calls another description nor uses struct-update syntax (`..base`). Changing KNL's
        // figures therefore cannot change another chip.
        let source = include_str!("presets.rs");
        let body_of = |f: &str| {
            let start = source.find(&format!("fn {f}() -> Params {{")).unwrap_or_else(|| panic!("{f}"));
            let end = start + source[start..].find("\n}\n").unwrap();
            &source[start..end]
        };
        let fns = ["knl_64", "altra_80", "icelake_32", "epyc2_64", "tiny_4"];
        for f in fns {
            let body = body_of(f);
            assert!(body.contains("Params {"), "{f}");
            assert!(!body.contains(".."), "{f} uses struct-update syntax");
            for other in fns.iter().filter(|&&o| o != f) {
                assert!(!body.contains(&format!("{other}(")), "{f} calls {other}");
            }
        }
        // And at run time: presets share no figure they do not each state. KNL's own values
        // differ from the others' where the chips differ.
        let knl = preset("knl-64").unwrap();
        for name in ["altra-80", "icelake-32", "epyc2-64"] {
            let p = preset(name).unwrap();
            assert_ne!(
                (p.timing.ghz, p.l1d.size_kib, p.mc_ddr.len()),
                (knl.timing.ghz, knl.l1d.size_kib, knl.mc_ddr.len())
            );
        }
    }

    #[test]
    fn chips_have_their_last_level_caches_and_grids() {
        // icelake-32: 32 x 1.5 MiB 12-way slices = 48 MiB; altra-80: 80 x 410 KiB = 32.03 MiB SLC.
        let ice = preset("icelake-32").unwrap();
        assert_eq!((ice.llc.size_kib * ice.active_tiles().len() as u32, ice.llc.sets()), (48 * 1024, 2048));
        let altra = preset("altra-80").unwrap();
        assert_eq!(altra.llc.size_kib * 80, 32_800);
        // 4 cores per CMN-600 crosspoint: 20 crosspoints of 4 tiles (one core + private L2 each).
        let tiles = altra.active_tiles();
        assert_eq!((tiles.len(), altra.n_cores(), altra.n_threads()), (80, 80, 80));
        let mut sites = tiles.clone();
        sites.dedup();
        assert_eq!(sites.len(), 20);
        assert!(tiles.chunks(4).all(|c| c.iter().all(|&t| t == c[0])));
        let epyc = preset("epyc2-64").unwrap();
        assert_eq!((epyc.protocol, epyc.home, epyc.llc.size_kib), (Protocol::Moesif, Home::Mc, 0));
        assert_eq!(preset("knl-64").unwrap().protocol, Protocol::Mesif);
    }
}
