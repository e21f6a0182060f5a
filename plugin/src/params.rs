//! Machine parameters: the presets and the `set.<key>=<value>` overrides.
//! Every field is reachable through `Params::set`; `KEYS` is the list shown in error messages.

use crate::json::JsonWriter;

pub const LINE_BYTES: u64 = 64;
pub const LINE_SHIFT: u32 = 6;
/// Tile and core masks are `u128`; the L2 keeps the in-tile L1 presence as a `u8`.
pub const MAX_TILES: usize = 128;
pub const MAX_CORES: usize = 128;
pub const MAX_CORES_PER_TILE: u32 = 8;

pub const PRESETS: &[&str] = &["knl-64", "altra-80", "icelake-32", "epyc2-64", "tiny-4"];

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
    pub allow_oversubscribe: bool,
    pub hot_lines: u32,
    pub hot_functions: u32,
    pub timing: Timing,
    pub bw: BwParams,
}

pub const KEYS: &[&str] = &[
    "mesh.rows",
    "mesh.cols",
    "mesh.disabled",
    "mesh.tiles_per_site",
    "mesh.flit_bytes",
    "cores_per_tile",
    "threads_per_core",
    "vcpu_map",
    "cluster",
    "protocol",
    "dir.home",
    "l1d.size_kib",
    "l1d.ways",
    "l2.size_kib",
    "l2.ways",
    "llc.size_kib",
    "llc.ways",
    "pl2.size_kib",
    "pl2.ways",
    "mc.ddr",
    "mc.mcdram",
    "dram.read_ns",
    "dram.write_ns",
    "dram.read_nj_per_bit",
    "dram.write_nj_per_bit",
    "mcdram.read_ns",
    "mcdram.write_ns",
    "mcdram.read_nj_per_bit",
    "mcdram.write_nj_per_bit",
    "pcm.read_ns",
    "pcm.write_ns",
    "pcm.read_nj_per_bit",
    "pcm.write_nj_per_bit",
    "pcm.endurance",
    "allow_oversubscribe",
    "hot_lines",
    "hot_functions",
    "timing",
    "core.ghz",
    "core.cpi",
    "core.mlp",
    "core.smt_gain",
    "lat.l1",
    "lat.l2",
    "lat.dir",
    "lat.hop",
    "lat.fwd_clean",
    "lat.fwd_dirty",
    "lat.inv",
    "lat.llc",
    "lat.pl2",
    "bw.dram_gbs",
    "bw.dram_write_gbs",
    "bw.mcdram_gbs",
    "bw.mcdram_write_gbs",
    "bw.pcm_gbs",
    "bw.pcm_write_gbs",
    "bw.epoch_ns",
    "bw.queue",
    "bw.behind_epochs",
];

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

fn parse_num<T: std::str::FromStr>(key: &str, value: &str, what: &str) -> Result<T, String> {
    value.parse::<T>().map_err(|_| format!("bad value '{value}' for set.{key}: expected {what}"))
}

fn parse_bool(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(format!("bad value '{value}' for {key}: expected on or off")),
    }
}

/// Positions are written `row:col/row:col/...` (no commas: QEMU splits plugin args on them).
fn parse_positions(key: &str, value: &str) -> Result<Vec<Pos>, String> {
    if value.is_empty() || value == "none" {
        return Ok(vec![]);
    }
    value
        .split('/')
        .map(|item| {
            let (r, c) = item.split_once(':').ok_or(())?;
            Ok((r.parse::<i32>().map_err(|_| ())?, c.parse::<i32>().map_err(|_| ())?))
        })
        .collect::<Result<Vec<Pos>, ()>>()
        .map_err(|_| format!("bad value '{value}' for set.{key}: expected row:col/row:col/... or none"))
}

pub fn positions_text(list: &[Pos]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    list.iter().map(|(r, c)| format!("{r}:{c}")).collect::<Vec<_>>().join("/")
}

impl Params {
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        const COUNT: &str = "a positive integer";
        const REAL: &str = "a non-negative number";
        let real = |v: &str| -> Result<f64, String> {
            let x: f64 = parse_num(key, v, REAL)?;
            if x.is_finite() && x >= 0.0 {
                Ok(x)
            } else {
                Err(format!("bad value '{v}' for set.{key}: expected {REAL}"))
            }
        };
        let count = |v: &str| -> Result<u32, String> {
            match parse_num::<u32>(key, v, COUNT)? {
                0 => Err(format!("bad value '{v}' for set.{key}: expected {COUNT}")),
                n => Ok(n),
            }
        };
        let (dev_name, field) = key.split_once('.').unwrap_or((key, ""));
        let device = match dev_name {
            "dram" => Some(&mut self.dram),
            "mcdram" => Some(&mut self.mcdram),
            "pcm" => Some(&mut self.pcm),
            _ => None,
        };
        if let Some(dev) = device {
            let slot = match field {
                "read_ns" => &mut dev.read_ns,
                "write_ns" => &mut dev.write_ns,
                "read_nj_per_bit" => &mut dev.read_nj_per_bit,
                "write_nj_per_bit" => &mut dev.write_nj_per_bit,
                "endurance" if dev_name == "pcm" => &mut dev.endurance,
                _ => return Err(unknown_key(key)),
            };
            *slot = real(value)?;
            return Ok(());
        }
        if let Some(rest) = key.strip_prefix("bw.") {
            let dev = match rest.split_once('_').map(|(d, _)| d) {
                Some("dram") => &mut self.dram,
                Some("mcdram") => &mut self.mcdram,
                Some("pcm") => &mut self.pcm,
                _ => match rest {
                    "epoch_ns" => match real(value)? {
                        x if x > 0.0 => {
                            self.bw.epoch_ns = x;
                            return Ok(());
                        }
                        _ => return Err(format!("bad value '{value}' for set.{key}: expected a positive number")),
                    },
                    "queue" => {
                        self.bw.queue = parse_bool("set.bw.queue", value)?;
                        return Ok(());
                    }
                    "behind_epochs" => match value.parse::<u64>() {
                        Ok(n) if n >= 1 => {
                            self.bw.behind_epochs = n;
                            return Ok(());
                        }
                        _ => return Err(format!("bad value '{value}' for set.{key}: expected a whole number >= 1")),
                    },
                    _ => return Err(unknown_key(key)),
                },
            };
            let slot = if rest.ends_with("_write_gbs") {
                &mut dev.bw_write_gbs
            } else if rest.ends_with("_gbs") && rest.matches('_').count() == 1 {
                &mut dev.bw_gbs
            } else {
                return Err(unknown_key(key));
            };
            match real(value)? {
                x if x > 0.0 => *slot = x,
                _ => return Err(format!("bad value '{value}' for set.{key}: expected a positive number (GB/s)")),
            }
            return Ok(());
        }
        match key {
            "mesh.rows" => self.mesh_rows = count(value)?,
            "mesh.cols" => self.mesh_cols = count(value)?,
            "mesh.disabled" => self.disabled_tiles = parse_positions(key, value)?,
            "mesh.flit_bytes" => self.flit_bytes = count(value)?,
            "cores_per_tile" => self.cores_per_tile = count(value)?,
            "threads_per_core" => self.threads_per_core = count(value)?,
            "vcpu_map" => {
                self.vcpu_map = match value {
                    "scatter" => VcpuMap::Scatter,
                    "compact" => VcpuMap::Compact,
                    _ => return Err(format!("bad value '{value}' for set.vcpu_map: expected scatter or compact")),
                }
            }
            "cluster" => {
                self.cluster = match value {
                    "all2all" | "all-to-all" => Cluster::AllToAll,
                    "hemisphere" => Cluster::Hemisphere,
                    "quadrant" => Cluster::Quadrant,
                    "snc2" | "snc-2" => Cluster::Snc2,
                    "snc4" | "snc-4" => Cluster::Snc4,
                    _ => {
                        return Err(format!(
                            "bad value '{value}' for set.cluster: expected all2all, hemisphere, quadrant, snc2 or snc4"
                        ))
                    }
                }
            }
            "protocol" => {
                self.protocol = match value {
                    "mesif" => Protocol::Mesif,
                    "moesif" | "moesi" => Protocol::Moesif,
                    _ => return Err(format!("bad value '{value}' for set.protocol: expected mesif or moesif")),
                }
            }
            "dir.home" => {
                self.home = match value {
                    "tile" => Home::Tile,
                    "mc" => Home::Mc,
                    _ => return Err(format!("bad value '{value}' for set.dir.home: expected tile or mc")),
                }
            }
            "mesh.tiles_per_site" => self.tiles_per_site = count(value)?,
            "llc.size_kib" => self.llc.size_kib = parse_num(key, value, "an integer (0 = no LLC)")?,
            "llc.ways" => self.llc.ways = count(value)?,
            "lat.llc" => self.timing.llc = parse_num(key, value, "an integer")?,
            "pl2.size_kib" => self.pl2.size_kib = parse_num(key, value, "an integer (0 = no private L2)")?,
            "pl2.ways" => self.pl2.ways = count(value)?,
            "lat.pl2" => self.timing.pl2 = parse_num(key, value, "an integer")?,
            "l1d.size_kib" => self.l1d.size_kib = count(value)?,
            "l1d.ways" => self.l1d.ways = count(value)?,
            "l2.size_kib" => self.l2.size_kib = count(value)?,
            "l2.ways" => self.l2.ways = count(value)?,
            "mc.ddr" => self.mc_ddr = parse_positions(key, value)?,
            "mc.mcdram" => self.mc_mcdram = parse_positions(key, value)?,
            "allow_oversubscribe" => self.allow_oversubscribe = parse_bool("set.allow_oversubscribe", value)?,
            "hot_lines" => self.hot_lines = parse_num(key, value, "an integer")?,
            "hot_functions" => self.hot_functions = parse_num(key, value, "an integer")?,
            "timing" => self.timing.enabled = parse_bool("set.timing", value)?,
            "core.ghz" => match real(value)? {
                x if x > 0.0 => self.timing.ghz = x,
                _ => return Err(format!("bad value '{value}' for set.core.ghz: expected a positive number")),
            },
            "core.mlp" => match real(value)? {
                x if x >= 1.0 => self.timing.mlp = x,
                _ => return Err(format!("bad value '{value}' for set.core.mlp: expected a number >= 1")),
            },
            "core.cpi" => self.timing.cpi = real(value)?,
            "core.smt_gain" => match real(value)? {
                x if x >= 1.0 => self.timing.smt_gain = x,
                _ => return Err(format!("bad value '{value}' for set.core.smt_gain: expected a number >= 1")),
            },
            "lat.l1" => self.timing.l1 = parse_num(key, value, "an integer")?,
            "lat.l2" => self.timing.l2 = parse_num(key, value, "an integer")?,
            "lat.dir" => self.timing.dir = parse_num(key, value, "an integer")?,
            "lat.hop" => self.timing.hop = parse_num(key, value, "an integer")?,
            "lat.fwd_clean" => self.timing.fwd_clean = parse_num(key, value, "an integer")?,
            "lat.fwd_dirty" => self.timing.fwd_dirty = parse_num(key, value, "an integer")?,
            "lat.inv" => self.timing.inv = parse_num(key, value, "an integer")?,
            _ => return Err(unknown_key(key)),
        }
        Ok(())
    }

    /// The value of `set.<key>` as text that `set` reads back (every key of `KEYS`).
    pub fn get(&self, key: &str) -> Result<String, String> {
        let onoff = |b: bool| if b { "on" } else { "off" }.to_string();
        let t = &self.timing;
        let dev = |name: &str| match name {
            "dram" => Some(&self.dram),
            "mcdram" => Some(&self.mcdram),
            "pcm" => Some(&self.pcm),
            _ => None,
        };
        let (head, field) = key.split_once('.').unwrap_or((key, ""));
        if let Some(d) = dev(head) {
            return match field {
                "read_ns" => Ok(d.read_ns.to_string()),
                "write_ns" => Ok(d.write_ns.to_string()),
                "read_nj_per_bit" => Ok(d.read_nj_per_bit.to_string()),
                "write_nj_per_bit" => Ok(d.write_nj_per_bit.to_string()),
                "endurance" if head == "pcm" => Ok(d.endurance.to_string()),
                _ => Err(unknown_key(key)),
            };
        }
        if let Some((name, what)) = key.strip_prefix("bw.").and_then(|r| r.split_once('_')) {
            if let Some(d) = dev(name) {
                return match what {
                    "gbs" => Ok(d.bw_gbs.to_string()),
                    "write_gbs" => Ok(d.bw_write_gbs.to_string()),
                    _ => Err(unknown_key(key)),
                };
            }
        }
        Ok(match key {
            "mesh.rows" => self.mesh_rows.to_string(),
            "mesh.cols" => self.mesh_cols.to_string(),
            "mesh.disabled" => positions_text(&self.disabled_tiles),
            "mesh.tiles_per_site" => self.tiles_per_site.to_string(),
            "mesh.flit_bytes" => self.flit_bytes.to_string(),
            "cores_per_tile" => self.cores_per_tile.to_string(),
            "threads_per_core" => self.threads_per_core.to_string(),
            "vcpu_map" => self.vcpu_map.name().into(),
            "cluster" => self.cluster.name().into(),
            "protocol" => self.protocol.name().into(),
            "dir.home" => self.home.name().into(),
            "l1d.size_kib" => self.l1d.size_kib.to_string(),
            "l1d.ways" => self.l1d.ways.to_string(),
            "l2.size_kib" => self.l2.size_kib.to_string(),
            "l2.ways" => self.l2.ways.to_string(),
            "llc.size_kib" => self.llc.size_kib.to_string(),
            "llc.ways" => self.llc.ways.to_string(),
            "pl2.size_kib" => self.pl2.size_kib.to_string(),
            "pl2.ways" => self.pl2.ways.to_string(),
            "mc.ddr" => positions_text(&self.mc_ddr),
            "mc.mcdram" => positions_text(&self.mc_mcdram),
            "allow_oversubscribe" => onoff(self.allow_oversubscribe),
            "hot_lines" => self.hot_lines.to_string(),
            "hot_functions" => self.hot_functions.to_string(),
            "timing" => onoff(t.enabled),
            "core.ghz" => t.ghz.to_string(),
            "core.cpi" => t.cpi.to_string(),
            "core.mlp" => t.mlp.to_string(),
            "core.smt_gain" => t.smt_gain.to_string(),
            "lat.l1" => t.l1.to_string(),
            "lat.l2" => t.l2.to_string(),
            "lat.dir" => t.dir.to_string(),
            "lat.hop" => t.hop.to_string(),
            "lat.fwd_clean" => t.fwd_clean.to_string(),
            "lat.fwd_dirty" => t.fwd_dirty.to_string(),
            "lat.inv" => t.inv.to_string(),
            "lat.llc" => t.llc.to_string(),
            "lat.pl2" => t.pl2.to_string(),
            "bw.epoch_ns" => self.bw.epoch_ns.to_string(),
            "bw.queue" => onoff(self.bw.queue),
            "bw.behind_epochs" => self.bw.behind_epochs.to_string(),
            _ => return Err(unknown_key(key)),
        })
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

    pub fn write_json(&self, w: &mut JsonWriter) {
        w.begin_object();
        w.field_str("preset", &self.preset);
        w.field_u64("mesh.rows", self.mesh_rows as u64);
        w.field_u64("mesh.cols", self.mesh_cols as u64);
        w.field_str("mesh.disabled", &positions_text(&self.disabled_tiles));
        w.field_u64("mesh.tiles_per_site", self.tiles_per_site as u64);
        w.field_u64("mesh.active_tiles", self.active_tiles().len() as u64);
        w.field_u64("mesh.flit_bytes", self.flit_bytes as u64);
        w.field_str("mesh.routing", "YX");
        w.field_u64("cores_per_tile", self.cores_per_tile as u64);
        w.field_u64("threads_per_core", self.threads_per_core as u64);
        w.field_u64("cores", self.n_cores() as u64);
        w.field_u64("hw_threads", self.n_threads() as u64);
        w.field_str("vcpu_map", self.vcpu_map.name());
        w.field_str("cluster", self.cluster.name());
        w.field_str("protocol", self.protocol.name());
        w.field_str("dir.home", self.home.name());
        w.field_u64("line_bytes", LINE_BYTES);
        for (name, geom) in [("l1d", &self.l1d), ("l2", &self.l2)] {
            w.field_u64(&format!("{name}.size_kib"), geom.size_kib as u64);
            w.field_u64(&format!("{name}.ways"), geom.ways as u64);
            w.field_u64(&format!("{name}.sets"), geom.sets() as u64);
        }
        w.field_u64("llc.size_kib", self.llc.size_kib as u64);
        w.field_u64("llc.ways", self.llc.ways as u64);
        w.field_u64("llc.sets", self.llc.sets() as u64);
        w.field_u64("pl2.size_kib", self.pl2.size_kib as u64);
        w.field_u64("pl2.ways", self.pl2.ways as u64);
        w.field_str("l1d.policy", "LRU, write-back, private per core");
        w.field_str("l2.policy", "LRU, write-back, shared per tile, inclusive of L1D");
        w.field_str(
            "llc.policy",
            if self.llc.size_kib > 0 {
                "LRU, write-back, one slice per home, non-inclusive, filled by L2 evictions"
            } else {
                "none"
            },
        );
        w.field_str(
            "coherence",
            match (self.protocol, self.home) {
                (Protocol::Mesif, Home::Tile) => "MESIF, full-map directory at the home tile",
                (Protocol::Moesif, Home::Tile) => "MOESIF, full-map directory at the home tile",
                (Protocol::Mesif, Home::Mc) => "MESIF, full-map directory beside the memory controller",
                (Protocol::Moesif, Home::Mc) => "MOESIF, full-map directory beside the memory controller",
            },
        );
        w.field_str("mc.ddr", &positions_text(&self.mc_ddr));
        w.field_str("mc.mcdram", &positions_text(&self.mc_mcdram));
        for (name, dev) in [("dram", &self.dram), ("mcdram", &self.mcdram), ("pcm", &self.pcm)] {
            w.field_f64(&format!("{name}.read_ns"), dev.read_ns);
            w.field_f64(&format!("{name}.write_ns"), dev.write_ns);
            w.field_f64(&format!("{name}.read_nj_per_bit"), dev.read_nj_per_bit);
            w.field_f64(&format!("{name}.write_nj_per_bit"), dev.write_nj_per_bit);
            if name == "pcm" {
                w.field_f64("pcm.endurance", dev.endurance);
            }
        }
        w.field_bool("allow_oversubscribe", self.allow_oversubscribe);
        w.field_u64("hot_lines", self.hot_lines as u64);
        w.field_u64("hot_functions", self.hot_functions as u64);
        let t = &self.timing;
        w.field_bool("timing", t.enabled);
        w.field_f64("core.ghz", t.ghz);
        w.field_f64("core.cpi", t.cpi);
        w.field_f64("core.mlp", t.mlp);
        w.field_f64("core.smt_gain", t.smt_gain);
        for (name, v) in [
            ("lat.l1", t.l1),
            ("lat.l2", t.l2),
            ("lat.dir", t.dir),
            ("lat.hop", t.hop),
            ("lat.fwd_clean", t.fwd_clean),
            ("lat.fwd_dirty", t.fwd_dirty),
            ("lat.inv", t.inv),
            ("lat.llc", t.llc),
            ("lat.pl2", t.pl2),
        ] {
            w.field_u64(name, v as u64);
        }
        for (name, dev) in [("dram", &self.dram), ("mcdram", &self.mcdram), ("pcm", &self.pcm)] {
            w.field_u64(&format!("lat.{name}.read"), t.cycles(dev.read_ns));
            w.field_u64(&format!("lat.{name}.write"), t.cycles(dev.write_ns));
        }
        for (name, dev) in [("dram", &self.dram), ("mcdram", &self.mcdram), ("pcm", &self.pcm)] {
            w.field_f64(&format!("bw.{name}_gbs"), dev.bw_gbs);
            w.field_f64(&format!("bw.{name}_write_gbs"), dev.bw_write_gbs);
        }
        w.field_f64("bw.epoch_ns", self.bw.epoch_ns);
        w.field_bool("bw.queue", self.bw.queue);
        w.field_u64("bw.behind_epochs", self.bw.behind_epochs);
        w.end_object();
    }
}

fn unknown_key(key: &str) -> String {
    format!("unknown key 'set.{key}'; allowed: set.{}", KEYS.join(", set."))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn oversubscription_is_refused_unless_allowed() {
        let mut p = preset("tiny-4").unwrap();
        let err = p.validate(8).unwrap_err();
        assert!(err.contains("allow_oversubscribe"), "{err}");
        p.set("allow_oversubscribe", "on").unwrap();
        p.validate(8).unwrap();
    }

    #[test]
    fn every_key_is_settable_and_bad_ones_are_named() {
        let mut p = preset("knl-64").unwrap();
        for key in KEYS {
            let value = match *key {
                "mesh.disabled" | "mc.mcdram" => "none",
                "mc.ddr" => "0:-1/5:6",
                "vcpu_map" => "compact",
                "cluster" => "snc4",
                "protocol" => "moesif",
                "dir.home" => "mc",
                "allow_oversubscribe" => "on",
                "timing" | "bw.queue" => "off",
                _ => "4",
            };
            p.set(key, value).unwrap_or_else(|e| panic!("{key}: {e}"));
        }
        assert!(p.set("l3.size_kib", "4").unwrap_err().contains("set.l3.size_kib"));
        assert!(p.set("l2.ways", "x").unwrap_err().contains("set.l2.ways"));
        assert!(p.set("cluster", "hemi").unwrap_err().contains("hemisphere"));
        assert!(p.set("protocol", "mosi").unwrap_err().contains("moesif"));
        assert!(p.set("dir.home", "io").unwrap_err().contains("set.dir.home"));
        assert_eq!((p.dram.bw_gbs, p.pcm.bw_write_gbs, p.bw.epoch_ns, p.bw.queue), (4.0, 4.0, 4.0, false));
        assert_eq!(p.bw.behind_epochs, 4);
        assert!(p.set("bw.behind_epochs", "0").unwrap_err().contains(">= 1"));
        assert!(p.set("bw.dram_gbs", "0").unwrap_err().contains("set.bw.dram_gbs"));
        assert!(p.set("bw.dram_read_gbs", "1").unwrap_err().contains("unknown key"));
        assert!(p.set("bw.l2_gbs", "1").unwrap_err().contains("unknown key"));
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
            for key in KEYS {
                let value = p.get(key).unwrap_or_else(|e| panic!("{name} {key}: {e}"));
                copy.set(key, &value).unwrap_or_else(|e| panic!("{name} {key}={value}: {e}"));
            }
            assert_eq!(copy, p, "{name}: the keys do not cover every field");
            let t = &p.timing;
            assert!(t.ghz > 0.0 && t.cpi > 0.0 && t.l1 > 0 && t.l2 > t.l1 && t.dir > 0 && t.hop > 0, "{name}");
            assert!(t.fwd_dirty >= t.fwd_clean && t.inv > 0, "{name}");
            assert!(p.llc.size_kib == 0 || t.llc > 0, "{name}: an LLC needs a hit latency");
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
        let source = include_str!("params.rs");
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
