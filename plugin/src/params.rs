//! Machine parameters: the `Params` a preset describes (`presets.rs`) and `set.<key>=<value>`
//! overrides change (`param_keys.rs`: every field is a key), and the checks of a combination.

use crate::param_keys::{settable_key, TABLE};

pub const LINE_BYTES: u64 = 64;
pub const LINE_SHIFT: u32 = 6;
/// Tile and core masks are `u128`; the L2 keeps the in-tile L1 presence as a `u8`.
pub const MAX_TILES: usize = 128;
pub const MAX_CORES: usize = 128;
pub const MAX_CORES_PER_TILE: u32 = 8;

/// Cluster modes (KNL's names): where a line's home and memory controller are.
/// `all2all`: anywhere; `hemisphere`/`quadrant`: the address hash picks a half/quadrant and
/// home and controller are both in it; `snc2`/`snc4`: the same, but the half/quadrant is the
/// NUMA node the guest put the address in (README.md "The model").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cluster {
    AllToAll,
    Hemisphere,
    Quadrant,
    Snc2,
    Snc4,
}

impl Cluster {
    pub fn name(self) -> &'static str {
        match self {
            Cluster::AllToAll => "all2all",
            Cluster::Hemisphere => "hemisphere",
            Cluster::Quadrant => "quadrant",
            Cluster::Snc2 => "snc2",
            Cluster::Snc4 => "snc4",
        }
    }

    pub fn from_name(name: &str) -> Option<Cluster> {
        match name {
            "all2all" | "all-to-all" => Some(Cluster::AllToAll),
            "hemisphere" => Some(Cluster::Hemisphere),
            "quadrant" => Some(Cluster::Quadrant),
            "snc2" | "snc-2" => Some(Cluster::Snc2),
            "snc4" | "snc-4" => Some(Cluster::Snc4),
            _ => None,
        }
    }

    /// How many clusters the mesh is cut into (1, 2 or 4).
    pub fn clusters(self) -> usize {
        match self {
            Cluster::AllToAll => 1,
            Cluster::Hemisphere | Cluster::Snc2 => 2,
            Cluster::Quadrant | Cluster::Snc4 => 4,
        }
    }

    /// Sub-NUMA clustering: the guest's NUMA layout, not the hash, picks a line's cluster.
    pub fn numa(self) -> bool {
        matches!(self, Cluster::Snc2 | Cluster::Snc4)
    }
}

/// The tiles' coherence protocol. `moesif` adds an Owned state to MESIF: a dirty line read by
/// another tile stays dirty in its owner (O), which forwards it, instead of being written back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Mesif,
    Moesif,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Mesif => "mesif",
            Protocol::Moesif => "moesif",
        }
    }

    pub fn from_name(name: &str) -> Option<Protocol> {
        match name {
            "mesif" => Some(Protocol::Mesif),
            "moesif" | "moesi" => Some(Protocol::Moesif),
            _ => None,
        }
    }
}

/// Where a line's directory entry (and LLC slice, if any) lives: at a tile chosen by the
/// address hash (a distributed tag directory), or at the line's memory controller (a probe
/// filter beside the channel, as on EPYC's I/O die).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    Tile,
    Mc,
}

impl Home {
    pub fn name(self) -> &'static str {
        match self {
            Home::Tile => "tile",
            Home::Mc => "mc",
        }
    }

    pub fn from_name(name: &str) -> Option<Home> {
        match name {
            "tile" => Some(Home::Tile),
            "mc" => Some(Home::Mc),
            _ => None,
        }
    }
}

/// How vCPU numbers map to hardware threads. `scatter` is Linux's numbering on Intel parts
/// (cpu i = core i mod cores, SMT sibling i div cores); `compact` puts SMT siblings adjacent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VcpuMap {
    Scatter,
    Compact,
}

impl VcpuMap {
    pub fn name(self) -> &'static str {
        match self {
            VcpuMap::Scatter => "scatter",
            VcpuMap::Compact => "compact",
        }
    }

    pub fn from_name(name: &str) -> Option<VcpuMap> {
        match name {
            "scatter" => Some(VcpuMap::Scatter),
            "compact" => Some(VcpuMap::Compact),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CacheGeom {
    pub size_kib: u32,
    pub ways: u32,
}

impl CacheGeom {
    pub fn sets(&self) -> u32 {
        (self.size_kib as u64 * 1024 / LINE_BYTES / self.ways as u64) as u32
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct DeviceParams {
    pub read_ns: f64,
    pub write_ns: f64,
    pub read_nj_per_bit: f64,
    pub write_nj_per_bit: f64,
    /// Writes per cell before wear-out; 0 = unlimited.
    pub endurance: f64,
    /// Bandwidth of one memory controller for this device's reads and for its writes (GB/s =
    /// bytes per ns): a line takes 64 / bandwidth ns of the controller's time.
    pub bw_gbs: f64,
    pub bw_write_gbs: f64,
}

/// Memory-controller queueing (README.md "Memory bandwidth").
#[derive(Clone, Debug, PartialEq)]
pub struct BwParams {
    /// Epoch length (modelled ns) over which a controller's utilisation is measured.
    pub epoch_ns: f64,
    /// Add the queueing delay to memory reads (`off`: bytes and utilisation are still counted).
    pub queue: bool,
    /// How many epochs a vCPU's clock may be behind the furthest clock before it is moved up
    /// (the gap counted as idle time).
    pub behind_epochs: u64,
}

/// The timing model's figures: core clock, base CPI, overlap factor and the latencies (core
/// cycles) of each step of an access's critical path. Memory devices keep their `read_ns` /
/// `write_ns`, converted with `ghz`. README.md "Modelled time" defines how they combine.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// Account stall cycles at all (`set.timing=off` skips it, for measuring its cost).
    pub enabled: bool,
    pub ghz: f64,
    /// Cycles per instruction with every access an L1D hit.
    pub cpi: f64,
    /// Memory-level parallelism: stall cycles are divided by it (1 = no overlap).
    pub mlp: f64,
    /// A core's instruction throughput with all its threads busy over one thread's (`smt.rs`).
    pub smt_gain: f64,
    /// Load-to-use latency of an L1D hit (hidden in `cpi`: an access stalls for the part of its
    /// latency beyond this).
    pub l1: u32,
    /// Hit in the own tile's shared L2 (includes the L1D miss).
    pub l2: u32,
    /// Directory (home tile) lookup.
    pub dir: u32,
    /// One mesh hop: router + link.
    pub hop: u32,
    /// A remote tile reading a clean (E/F) line out of its L2 and sending it.
    pub fwd_clean: u32,
    /// The same for a dirty (M) line: "HitM".
    pub fwd_dirty: u32,
    /// A sharer invalidating its copies and sending the ack (hops counted apart).
    pub inv: u32,
    /// A hit in the home's LLC slice, after the directory lookup (0 without an LLC).
    pub llc: u32,
    /// An L1D miss that hits the core's private L2 (`pl2`; 0 without one).
    pub pl2: u32,
}

impl Timing {
    /// Nanoseconds -> core cycles, rounded to the nearest cycle.
    pub fn cycles(&self, ns: f64) -> u64 {
        (ns * self.ghz).round() as u64
    }
}

/// A mesh position: (row, column). Memory controllers may sit just outside the tile grid
/// (row -1 or `rows`, column -1 or `cols`), one hop from the edge tile.
pub type Pos = (i32, i32);

#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub preset: String,
    pub mesh_rows: u32,
    pub mesh_cols: u32,
    pub disabled_tiles: Vec<Pos>,
    /// Tiles sharing one mesh position (crosspoint): hops between them are 0.
    pub tiles_per_site: u32,
    pub flit_bytes: u32,
    pub cores_per_tile: u32,
    pub threads_per_core: u32,
    pub vcpu_map: VcpuMap,
    pub cluster: Cluster,
    pub protocol: Protocol,
    pub home: Home,
    pub l1d: CacheGeom,
    pub l2: CacheGeom,
    /// A private L2 per core in front of the per-tile level, for latency only (`size_kib` 0 =
    /// none): an L1D miss to a line still in the core's private L2 costs `lat.pl2`, not
    /// `lat.l2` (README.md "The model"); the per-tile level's capacity stands for both.
    pub pl2: CacheGeom,
    /// One slice per home of a shared last-level cache (memory side, non-inclusive, filled by
    /// the L2s' evictions); `size_kib` 0 = none.
    pub llc: CacheGeom,
    pub mc_ddr: Vec<Pos>,
    pub mc_mcdram: Vec<Pos>,
    pub dram: DeviceParams,
    pub mcdram: DeviceParams,
    pub pcm: DeviceParams,
    /// The `storage` device (a guest block device in guest RAM, `memory.rs`): DRAM's figures
    /// unless set, so that storage adds no time or energy of its own (README.md "Storage").
    pub storage: DeviceParams,
    pub allow_oversubscribe: bool,
    pub hot_lines: u32,
    pub hot_functions: u32,
    pub timing: Timing,
    pub bw: BwParams,
}

pub fn positions_text(list: &[Pos]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    list.iter().map(|(r, c)| format!("{r}:{c}")).collect::<Vec<_>>().join("/")
}

impl Params {
    /// Sets `set.<key>` from its text (`param_keys::TABLE` says how each key is read).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let set = settable_key(key)?.set.expect("settable keys have a setter");
        set(self, value)
    }

    /// The value of `set.<key>` as text that `set` reads back.
    pub fn get(&self, key: &str) -> Result<String, String> {
        Ok((settable_key(key)?.get)(self).text())
    }

    /// The positions of the active tiles, in tile order: the active sites in row-major order,
    /// each repeated `tiles_per_site` times.
    pub fn active_tiles(&self) -> Vec<Pos> {
        let mut tiles = Vec::new();
        for r in 0..self.mesh_rows as i32 {
            for c in 0..self.mesh_cols as i32 {
                if !self.disabled_tiles.contains(&(r, c)) {
                    tiles.extend(std::iter::repeat_n((r, c), self.tiles_per_site as usize));
                }
            }
        }
        tiles
    }

    pub fn n_cores(&self) -> usize {
        self.active_tiles().len() * self.cores_per_tile as usize
    }

    pub fn n_threads(&self) -> usize {
        self.n_cores() * self.threads_per_core as usize
    }

    /// Checks the combination of values; `vcpus` is the guest's vCPU count.
    pub fn validate(&self, vcpus: usize) -> Result<(), String> {
        let tiles = self.active_tiles();
        if tiles.is_empty() {
            return Err("set.mesh.disabled: no active tile left".into());
        }
        if tiles.len() > MAX_TILES {
            return Err(format!("mesh has {} active tiles; at most {MAX_TILES} are supported", tiles.len()));
        }
        if self.cores_per_tile > MAX_CORES_PER_TILE {
            return Err(format!("set.cores_per_tile={} too large; at most {MAX_CORES_PER_TILE}", self.cores_per_tile));
        }
        if self.n_cores() > MAX_CORES {
            return Err(format!("{} cores; at most {MAX_CORES} are supported", self.n_cores()));
        }
        for (name, geom) in [("l1d", &self.l1d), ("l2", &self.l2)] {
            let lines = geom.size_kib as u64 * 1024 / LINE_BYTES;
            if lines == 0 || !lines.is_multiple_of(geom.ways as u64) {
                return Err(format!(
                    "set.{name}.size_kib={} with {name}.ways={}: size must hold a whole number of 64-byte sets",
                    geom.size_kib, geom.ways
                ));
            }
        }
        for (name, geom) in [("llc", &self.llc), ("pl2", &self.pl2)] {
            let lines = geom.size_kib as u64 * 1024 / LINE_BYTES;
            if geom.size_kib > 0 && !lines.is_multiple_of(geom.ways as u64) {
                return Err(format!(
                    "set.{name}.size_kib={} with {name}.ways={}: size must hold a whole number of 64-byte sets",
                    geom.size_kib, geom.ways
                ));
            }
        }
        if self.l1d.size_kib > self.l2.size_kib {
            return Err("l1d.size_kib larger than l2.size_kib: the L2 is inclusive of the L1Ds".into());
        }
        if self.mc_ddr.is_empty() {
            return Err("set.mc.ddr: at least one DDR memory controller is needed".into());
        }
        let k = self.cluster.clusters();
        if k > 1 {
            if self.mesh_cols < 2 || (k == 4 && self.mesh_rows < 2) {
                return Err(format!(
                    "set.cluster={} needs at least a 2x2 mesh (2 columns for halves)",
                    self.cluster.name()
                ));
            }
            let mut per_cluster = [0usize; 4];
            for &(r, c) in &tiles {
                per_cluster[self.cluster_of((r, c))] += 1;
            }
            if per_cluster[..k].contains(&0) {
                return Err(format!("set.cluster={}: every cluster needs an active tile", self.cluster.name()));
            }
        }
        if vcpus > self.n_threads() && !self.allow_oversubscribe {
            return Err(format!(
                "{vcpus} vCPUs but preset {} has {} hardware threads ({} tiles x {} cores x {} threads); \
                 choose a larger preset or pass set.allow_oversubscribe=on",
                self.preset,
                self.n_threads(),
                tiles.len(),
                self.cores_per_tile,
                self.threads_per_core
            ));
        }
        Ok(())
    }

    /// The cluster of a mesh position in this cluster mode: 0 for all-to-all, the half (0 =
    /// west, 1 = east) for hemisphere/SNC-2, the quadrant for quadrant/SNC-4. Off-grid
    /// positions (controllers) count with the nearest edge.
    pub fn cluster_of(&self, pos: Pos) -> usize {
        match self.cluster.clusters() {
            1 => 0,
            2 => ((pos.1 as i64) * 2 >= self.mesh_cols as i64) as usize,
            _ => self.quadrant_of(pos),
        }
    }

    /// Quadrant 0 = north-west, 1 = north-east, 2 = south-west, 3 = south-east.
    pub fn quadrant_of(&self, (r, c): Pos) -> usize {
        let south = (r as i64) * 2 >= self.mesh_rows as i64;
        let east = (c as i64) * 2 >= self.mesh_cols as i64;
        (south as usize) * 2 + east as usize
    }
}

/// The `machine` object of stats.json: every row of `param_keys::TABLE`, in its order.
impl serde::Serialize for Params {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(TABLE.iter().map(|k| (k.name, (k.get)(self))))
    }
}

#[cfg(test)]
mod tests {
    use crate::presets::preset;

    #[test]
    fn oversubscription_is_refused_unless_allowed() {
        let mut p = preset("tiny-4").unwrap();
        let err = p.validate(8).unwrap_err();
        assert!(err.contains("allow_oversubscribe"), "{err}");
        p.set("allow_oversubscribe", "on").unwrap();
        p.validate(8).unwrap();
    }

    #[test]
    fn hemisphere_and_snc2_cut_the_mesh_into_west_and_east() {
        let mut p = preset("knl-64").unwrap();
        for mode in ["hemisphere", "snc2"] {
            p.set("cluster", mode).unwrap();
            p.validate(256).unwrap();
            assert_eq!(p.cluster.clusters(), 2);
            assert_eq!(
                (p.cluster_of((0, 2)), p.cluster_of((5, 3)), p.cluster_of((2, -1)), p.cluster_of((3, 6))),
                (0, 1, 0, 1)
            );
        }
        assert!(p.cluster.numa());
        p.set("mesh.cols", "1").unwrap();
        assert!(p.validate(4).unwrap_err().contains("snc2"));
    }
}
