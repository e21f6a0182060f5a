//! Where things are on the mesh: vCPU -> hardware thread -> core -> tile, the home tile of
//! each line (distributed tag directory) and its memory controller, and hop distances.

use crate::memory::{DeviceKind, MemoryMap};
use crate::params::{Cluster, Home, Params, Pos, VcpuMap};

pub struct Topology {
    /// Active tiles in row-major order of their sites (`tiles_per_site` tiles per site); the
    /// index is the tile id.
    pub tile_pos: Vec<Pos>,
    pub cores_per_tile: usize,
    pub n_cores: usize,
    pub n_threads: usize,
    cluster: Cluster,
    home: Home,
    /// Core of each vCPU.
    pub vcpu_core: Vec<u16>,
    /// Tile of each core, and the core's index inside its tile.
    core_tile: Vec<u16>,
    core_local: Vec<u8>,
    /// Tiles of each cluster (all tiles in cluster 0 for all-to-all).
    cluster_tiles: [Vec<u16>; 4],
    /// Every memory controller: the DDR ones (`mc.ddr`, in order), then the MCDRAM EDCs
    /// (`mc.mcdram`); the index is the controller number (`mem.mc<k>.*`).
    pub mc_pos: Vec<Pos>,
    ddr_mcs: Vec<u16>,
    mcdram_mcs: Vec<u16>,
    /// Controllers of each kind serving each cluster: those placed in the cluster, nearest
    /// first, or else the single nearest one (all of them for all-to-all).
    ddr_mcs_of_cluster: [Vec<u16>; 4],
    mcdram_mcs_of_cluster: [Vec<u16>; 4],
}

/// Where a line is managed: its home (directory entry and LLC slice) and memory controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRoute {
    /// The home's index: a tile id (`dir.home=tile`) or a controller number (`dir.home=mc`);
    /// it numbers the LLC slices.
    pub home: u16,
    pub home_pos: Pos,
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

/// The controllers (indices into `pos`) of `ids` that serve cluster `q` with `tiles`: those
/// in the cluster, nearest first (sum of hops to the tiles, then list order), or the nearest
/// of all if none is.
fn serving(p: &Params, pos: &[Pos], ids: &[u16], q: usize, tiles: &[Pos]) -> Vec<u16> {
    let cost = |id: &u16| tiles.iter().map(|&t| hops(pos[*id as usize], t)).sum::<u64>();
    let mut own: Vec<u16> = ids.iter().copied().filter(|&id| p.cluster_of(pos[id as usize]) == q).collect();
    own.sort_by_key(|id| (cost(id), *id));
    if own.is_empty() {
        own.push(*ids.iter().min_by_key(|id| (cost(id), **id)).expect("at least one memory controller"));
    }
    own
}

impl Topology {
    /// The topology without a guest NUMA layout (SNC modes then place vCPUs as all2all does).
    pub fn new(p: &Params, vcpus: usize) -> Topology {
        Topology::with_layout(p, vcpus, &MemoryMap::default())
    }

    /// The topology for a guest whose NUMA layout is in `mem`: in SNC modes the vCPUs of the
    /// node of rank r run on cluster r's tiles (README.md "The model").
    pub fn with_layout(p: &Params, vcpus: usize, mem: &MemoryMap) -> Topology {
        let tile_pos = p.active_tiles();
        let cores_per_tile = p.cores_per_tile as usize;
        let n_cores = tile_pos.len() * cores_per_tile;
        let tpc = p.threads_per_core as usize;
        let n_threads = n_cores * tpc;
        let k = p.cluster.clusters();
        let mut cluster_tiles: [Vec<u16>; 4] = Default::default();
        let mut cluster_pos: [Vec<Pos>; 4] = Default::default();
        for (id, &pos) in tile_pos.iter().enumerate() {
            let q = p.cluster_of(pos);
            cluster_tiles[q].push(id as u16);
            cluster_pos[q].push(pos);
        }
        let thread_core = |thread: usize| match p.vcpu_map {
            VcpuMap::Scatter => thread % n_cores,
            VcpuMap::Compact => thread / tpc,
        };
        // Hardware threads of each cluster, in the numbering's order.
        let cluster_threads: Vec<Vec<usize>> = (0..k)
            .map(|q| (0..n_threads).filter(|&t| p.cluster_of(tile_pos[thread_core(t) / cores_per_tile]) == q).collect())
            .collect();
        let mut used = vec![0usize; k];
        let vcpu_core = (0..vcpus)
            .map(|v| {
                let rank = if p.cluster.numa() { mem.vcpu_rank(v) } else { None };
                let thread = match rank {
                    Some(r) => {
                        let list = &cluster_threads[r % k];
                        used[r % k] += 1;
                        list[(used[r % k] - 1) % list.len()]
                    }
                    None => v % n_threads,
                };
                thread_core(thread) as u16
            })
            .collect();
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
                if k == 1 {
                    ids.to_vec()
                } else if cluster_pos[q].is_empty() {
                    vec![ids[0]]
                } else {
                    serving(p, &mc_pos, ids, q, &cluster_pos[q])
                }
            })
        };
        let ddr_mcs_of_cluster = pick(&ddr_mcs);
        let mcdram_mcs_of_cluster = pick(&mcdram_mcs);
        Topology {
            core_tile: (0..n_cores).map(|c| (c / cores_per_tile) as u16).collect(),
            core_local: (0..n_cores).map(|c| (c % cores_per_tile) as u8).collect(),
            tile_pos,
            cores_per_tile,
            n_cores,
            n_threads,
            cluster: p.cluster,
            home: p.home,
            vcpu_core,
            cluster_tiles,
            mc_pos,
            ddr_mcs,
            mcdram_mcs,
            ddr_mcs_of_cluster,
            mcdram_mcs_of_cluster,
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

    /// How many homes (LLC slices) there are: tiles, or controllers with `dir.home=mc`.
    pub fn n_homes(&self) -> usize {
        match self.home {
            Home::Tile => self.tile_pos.len(),
            Home::Mc => self.mc_pos.len(),
        }
    }

    /// The home and controller of `line` of device `kind`. `numa_cluster` is the line's
    /// cluster from the guest's NUMA layout (`Placement::cluster`), used by the SNC modes.
    #[inline]
    pub fn route(&self, line: u64, kind: DeviceKind, numa_cluster: usize) -> LineRoute {
        let h = mix(line);
        let of_cluster = match kind {
            DeviceKind::Mcdram => &self.mcdram_mcs_of_cluster,
            DeviceKind::Dram | DeviceKind::Pcm | DeviceKind::Storage => &self.ddr_mcs_of_cluster,
        };
        // Lines are interleaved over the serving controllers by hash bits 32.. (the home uses
        // the low bits, the cluster bits 60-61).
        let pick = |mcs: &[u16]| mcs[((h >> 32) % mcs.len() as u64) as usize];
        let q = match self.cluster {
            Cluster::AllToAll => 0,
            Cluster::Hemisphere => (h >> 60) as usize & 1,
            Cluster::Quadrant => (h >> 60) as usize & 3,
            Cluster::Snc2 | Cluster::Snc4 => numa_cluster,
        };
        let mc = pick(&of_cluster[q]);
        match self.home {
            Home::Tile => {
                let tiles = &self.cluster_tiles[q];
                let home = tiles[(h % tiles.len() as u64) as usize];
                LineRoute { home, home_pos: self.tile_pos[home as usize], mc }
            }
            Home::Mc => LineRoute { home: mc, home_pos: self.mc_pos[mc as usize], mc },
        }
    }

    /// The controllers of `kind` (indices into `mc_pos`) that serve cluster `q` (all of them
    /// in all-to-all mode), nearest first.
    pub fn mcs_of_quadrant(&self, kind: DeviceKind, q: usize) -> &[u16] {
        match kind {
            DeviceKind::Mcdram => &self.mcdram_mcs_of_cluster[q],
            DeviceKind::Dram | DeviceKind::Pcm | DeviceKind::Storage => &self.ddr_mcs_of_cluster[q],
        }
    }

    /// The nearest controller of `kind` serving cluster `q`.
    pub fn mc_of_quadrant(&self, kind: DeviceKind, q: usize) -> Pos {
        self.mc_pos[self.mcs_of_quadrant(kind, q)[0] as usize]
    }

    /// The controllers of `kind`, all clusters.
    pub fn mcs(&self, kind: DeviceKind) -> &[u16] {
        match kind {
            DeviceKind::Mcdram => &self.mcdram_mcs,
            DeviceKind::Dram | DeviceKind::Pcm | DeviceKind::Storage => &self.ddr_mcs,
        }
    }

    pub fn quadrant_of_tile(&self, tile: usize) -> usize {
        (0..4).find(|&q| self.cluster_tiles[q].contains(&(tile as u16))).unwrap_or(0)
    }

    pub fn clusters(&self) -> usize {
        self.cluster.clusters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    #[test]
    fn knl_layout_has_32_tiles_8_per_quadrant() {
        let p = preset("knl-64").unwrap();
        let t = Topology::new(&p, 64);
        assert_eq!(t.tile_pos.len(), 32);
        assert_eq!(t.n_cores, 64);
        for q in 0..4 {
            assert_eq!(t.cluster_tiles[q].len(), 8);
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
