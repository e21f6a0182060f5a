//! Where things are on the mesh: vCPU -> hardware thread -> core -> tile, the home tile of
//! each line (distributed tag directory) and its memory controller, and hop distances.

use crate::memory::DeviceKind;
use crate::params::{Cluster, Params, Pos, VcpuMap};

pub struct Topology {
    /// Active tiles in row-major order; the index is the tile id.
    pub tile_pos: Vec<Pos>,
    pub cores_per_tile: usize,
    pub n_cores: usize,
    pub n_threads: usize,
    cluster: Cluster,
    /// Core of each vCPU.
    pub vcpu_core: Vec<u16>,
    /// Tile of each core, and the core's index inside its tile.
    core_tile: Vec<u16>,
    core_local: Vec<u8>,
    /// Tiles of each quadrant (all tiles in quadrant 0 for all-to-all).
    quadrant_tiles: [Vec<u16>; 4],
    all_tiles: Vec<u16>,
    /// Every memory controller: the DDR ones (`mc.ddr`, in order), then the MCDRAM EDCs
    /// (`mc.mcdram`); the index is the controller number (`mem.mc<k>.*`).
    pub mc_pos: Vec<Pos>,
    ddr_mcs: Vec<u16>,
    mcdram_mcs: Vec<u16>,
    /// Controllers of each kind serving each quadrant (quadrant and SNC-4 modes): those
    /// placed in the quadrant, nearest first, or else the single nearest one.
    ddr_mcs_of_quadrant: [Vec<u16>; 4],
    mcdram_mcs_of_quadrant: [Vec<u16>; 4],
}

/// Where a line is managed: its home tile (directory slice) and its memory controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRoute {
    pub home: u16,
    /// Index into `Topology::mc_pos`.
    pub mc: u16,
}

/// A 64-bit mixer (splitmix64 finaliser) standing in for the undocumented KNL address hash.
#[inline]
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Y-then-X dimension-order routing: the hop count is the Manhattan distance whichever
/// dimension goes first; the order only matters for which links a message uses.
#[inline]
pub fn hops(a: Pos, b: Pos) -> u64 {
    (a.0.abs_diff(b.0) + a.1.abs_diff(b.1)) as u64
}

/// The controllers (indices into `pos`) of `ids` that serve a quadrant with `tiles`: those
/// in quadrant `q`, nearest first (sum of hops to the tiles, then list order), or the
/// nearest of all if none is.
fn serving(p: &Params, pos: &[Pos], ids: &[u16], q: usize, tiles: &[Pos]) -> Vec<u16> {
    let cost = |id: &u16| tiles.iter().map(|&t| hops(pos[*id as usize], t)).sum::<u64>();
    let mut own: Vec<u16> = ids.iter().copied().filter(|&id| p.quadrant_of(pos[id as usize]) == q).collect();
    own.sort_by_key(|id| (cost(id), *id));
    if own.is_empty() {
        own.push(*ids.iter().min_by_key(|id| (cost(id), **id)).expect("at least one memory controller"));
    }
    own
}

impl Topology {
    pub fn new(p: &Params, vcpus: usize) -> Topology {
        let tile_pos = p.active_tiles();
        let cores_per_tile = p.cores_per_tile as usize;
        let n_cores = tile_pos.len() * cores_per_tile;
        let tpc = p.threads_per_core as usize;
        let n_threads = n_cores * tpc;
        let vcpu_core = (0..vcpus)
            .map(|v| {
                let thread = v % n_threads;
                let core = match p.vcpu_map {
                    VcpuMap::Scatter => thread % n_cores,
                    VcpuMap::Compact => thread / tpc,
                };
                core as u16
            })
            .collect();
        let mut quadrant_tiles: [Vec<u16>; 4] = Default::default();
        let mut quadrant_pos: [Vec<Pos>; 4] = Default::default();
        for (id, &pos) in tile_pos.iter().enumerate() {
            let q = if p.cluster == Cluster::AllToAll { 0 } else { p.quadrant_of(pos) };
            quadrant_tiles[q].push(id as u16);
            quadrant_pos[q].push(pos);
        }
        let mut mc_pos = p.mc_ddr.clone();
        let ddr_mcs: Vec<u16> = (0..p.mc_ddr.len() as u16).collect();
        let mcdram_mcs: Vec<u16> = if p.mc_mcdram.is_empty() {
            ddr_mcs.clone()
        } else {
            mc_pos.extend_from_slice(&p.mc_mcdram);
            (p.mc_ddr.len() as u16..mc_pos.len() as u16).collect()
        };
        let pick = |ids: &[u16]| -> [Vec<u16>; 4] {
            std::array::from_fn(|q| {
                if p.cluster == Cluster::AllToAll {
                    ids.to_vec()
                } else if quadrant_pos[q].is_empty() {
                    vec![ids[0]]
                } else {
                    serving(p, &mc_pos, ids, q, &quadrant_pos[q])
                }
            })
        };
        let ddr_mcs_of_quadrant = pick(&ddr_mcs);
        let mcdram_mcs_of_quadrant = pick(&mcdram_mcs);
        Topology {
            core_tile: (0..n_cores).map(|c| (c / cores_per_tile) as u16).collect(),
            core_local: (0..n_cores).map(|c| (c % cores_per_tile) as u8).collect(),
            all_tiles: (0..tile_pos.len() as u16).collect(),
            tile_pos,
            cores_per_tile,
            n_cores,
            n_threads,
            cluster: p.cluster,
            vcpu_core,
            quadrant_tiles,
            mc_pos,
            ddr_mcs,
            mcdram_mcs,
            ddr_mcs_of_quadrant,
            mcdram_mcs_of_quadrant,
        }
    }

    #[inline]
    pub fn core_tile(&self, core: usize) -> usize {
        self.core_tile[core] as usize
    }

    #[inline]
    pub fn core_local(&self, core: usize) -> usize {
        self.core_local[core] as usize
    }

    #[inline]
    pub fn tile_hops(&self, a: usize, b: usize) -> u64 {
        hops(self.tile_pos[a], self.tile_pos[b])
    }

    /// `snc_quadrant` is the quarter of its device range the line falls in (used by SNC-4).
    #[inline]
    pub fn route(&self, line: u64, kind: DeviceKind, snc_quadrant: usize) -> LineRoute {
        let h = mix(line);
        let of_quadrant = match kind {
            DeviceKind::Mcdram => &self.mcdram_mcs_of_quadrant,
            DeviceKind::Dram | DeviceKind::Pcm => &self.ddr_mcs_of_quadrant,
        };
        // Lines are interleaved over the serving controllers by hash bits 32.. (the home uses
        // the low bits, the quadrant bits 60-61).
        let pick = |mcs: &[u16]| mcs[((h >> 32) % mcs.len() as u64) as usize];
        match self.cluster {
            Cluster::AllToAll => LineRoute {
                home: self.all_tiles[(h % self.all_tiles.len() as u64) as usize],
                mc: pick(&of_quadrant[0]),
            },
            Cluster::Quadrant | Cluster::Snc4 => {
                let q = if self.cluster == Cluster::Quadrant { (h >> 60) as usize & 3 } else { snc_quadrant };
                let tiles = &self.quadrant_tiles[q];
                LineRoute { home: tiles[(h % tiles.len() as u64) as usize], mc: pick(&of_quadrant[q]) }
            }
        }
    }

    /// The controllers of `kind` (indices into `mc_pos`) that serve quadrant `q` (all of them
    /// in all-to-all mode), nearest first.
    pub fn mcs_of_quadrant(&self, kind: DeviceKind, q: usize) -> &[u16] {
        match kind {
            DeviceKind::Mcdram => &self.mcdram_mcs_of_quadrant[q],
            DeviceKind::Dram | DeviceKind::Pcm => &self.ddr_mcs_of_quadrant[q],
        }
    }

    /// The nearest controller of `kind` serving quadrant `q` in quadrant and SNC-4 modes.
    pub fn mc_of_quadrant(&self, kind: DeviceKind, q: usize) -> Pos {
        self.mc_pos[self.mcs_of_quadrant(kind, q)[0] as usize]
    }

    /// The controllers of `kind`, all quadrants.
    pub fn mcs(&self, kind: DeviceKind) -> &[u16] {
        match kind {
            DeviceKind::Mcdram => &self.mcdram_mcs,
            DeviceKind::Dram | DeviceKind::Pcm => &self.ddr_mcs,
        }
    }

    pub fn quadrant_of_tile(&self, tile: usize) -> usize {
        (0..4).find(|&q| self.quadrant_tiles[q].contains(&(tile as u16))).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::preset;

    #[test]
    fn knl_layout_has_32_tiles_8_per_quadrant() {
        let p = preset("knl-64").unwrap();
        let t = Topology::new(&p, 64);
        assert_eq!(t.tile_pos.len(), 32);
        assert_eq!(t.n_cores, 64);
        for q in 0..4 {
            assert_eq!(t.quadrant_tiles[q].len(), 8);
        }
        // scatter: 64 vCPUs get one core each, vCPUs 0 and 1 share tile 0.
        assert_eq!(t.vcpu_core[63], 63);
        assert_eq!(t.core_tile(t.vcpu_core[1] as usize), 0);
        // west DDR controller serves the west quadrants, east the east ones
        let ddr: Vec<Pos> = (0..4).map(|q| t.mc_of_quadrant(DeviceKind::Dram, q)).collect();
        assert_eq!(ddr, [(2, -1), (3, 6), (2, -1), (3, 6)]);
        // controllers 0-1 are DDR, 2-9 the EDCs; each quadrant interleaves over its two EDCs
        assert_eq!(t.mc_pos.len(), 10);
        for q in 0..4 {
            let edcs = t.mcs_of_quadrant(DeviceKind::Mcdram, q);
            assert_eq!(edcs.len(), 2);
            assert!(edcs.iter().all(|&k| k >= 2 && p.quadrant_of(t.mc_pos[k as usize]) == q));
        }
    }

    #[test]
    fn quadrant_mode_keeps_home_and_controller_in_one_quadrant() {
        let p = preset("knl-64").unwrap();
        let t = Topology::new(&p, 4);
        for line in 0..10_000u64 {
            let r = t.route(line, DeviceKind::Mcdram, 0);
            let q = t.quadrant_of_tile(r.home as usize);
            assert_eq!(p.quadrant_of(t.mc_pos[r.mc as usize]), q, "line {line}");
        }
    }

    #[test]
    fn snc4_uses_the_address_quarter() {
        let mut p = preset("knl-64").unwrap();
        p.set("cluster", "snc4").unwrap();
        let t = Topology::new(&p, 4);
        for q in 0..4 {
            for line in 0..1000u64 {
                let r = t.route(line, DeviceKind::Dram, q);
                assert_eq!(t.quadrant_of_tile(r.home as usize), q);
            }
        }
    }

    #[test]
    fn lines_interleave_over_the_controllers_by_hash_bits_32_up() {
        // all2all epyc2-64: controller = (mix(line) >> 32) mod 8, over all 8 channels;
        // knl-64 quadrant mode: the quadrant's two EDCs, (mix(line) >> 32) mod 2.
        let p = preset("epyc2-64").unwrap();
        let t = Topology::new(&p, 4);
        let mut per_mc = [0u32; 8];
        for line in 0..80_000u64 {
            let mc = t.route(line, DeviceKind::Dram, 0).mc;
            assert_eq!(mc as u64, (mix(line) >> 32) % 8);
            per_mc[mc as usize] += 1;
        }
        assert!(per_mc.iter().all(|&n| (9_500..10_500).contains(&n)), "{per_mc:?}");
        let knl = preset("knl-64").unwrap();
        let t = Topology::new(&knl, 4);
        for line in 0..1000u64 {
            let h = mix(line);
            let q = (h >> 60) as usize & 3;
            let edcs = t.mcs_of_quadrant(DeviceKind::Mcdram, q);
            assert_eq!(t.route(line, DeviceKind::Mcdram, 0).mc, edcs[((h >> 32) % 2) as usize]);
        }
        // snc4 on epyc2 (NPS4-like): each quadrant's two channels
        let mut nps4 = preset("epyc2-64").unwrap();
        nps4.set("cluster", "snc4").unwrap();
        let t = Topology::new(&nps4, 4);
        for q in 0..4 {
            let mcs = t.mcs_of_quadrant(DeviceKind::Dram, q);
            assert_eq!(mcs.len(), 2);
            assert!(mcs.iter().all(|&k| nps4.quadrant_of(t.mc_pos[k as usize]) == q));
        }
    }

    #[test]
    fn hops_are_manhattan() {
        assert_eq!(hops((0, 0), (3, 5)), 8);
        assert_eq!(hops((2, -1), (2, 0)), 1);
    }
}
