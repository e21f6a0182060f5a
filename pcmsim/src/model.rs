//! Cost models: a time model (cost units per page operation) and an energy model (nJ per bit
//! per operation times the page size, plus optional static power). Both are named presets whose
//! keys can be overridden one by one, or loaded from a small TOML file (see `config`).

use crate::meter::{ClassCounts, N_OPS};

/// A named preset and the function that builds it.
type Preset<T> = (&'static str, fn() -> T);

/// The `what` model preset called `name`, or an error naming the known ones.
fn pick<T>(what: &str, name: &str, presets: &[Preset<T>]) -> Result<T, String> {
    presets.iter().find(|(n, _)| *n == name).map(|(_, make)| make()).ok_or_else(|| {
        let known: Vec<&str> = presets.iter().map(|(n, _)| *n).collect();
        format!("unknown {what} model preset '{name}' (known: {})", known.join(", "))
    })
}

/// Cost per page operation, in model time units. Indexed like `meter::Op`, plus a cost per
/// page evicted to storage whether clean or dirty (`eviction`, 0 in the `paper` preset, which
/// charges storage per transfer instead: a read per miss, a write per dirty eviction), and a
/// cost added to foreground time per foreground page that a background request evicts
/// (`fg_victim`, 0 except in `paper-evict-fg`).
#[derive(Clone, Debug, PartialEq)]
pub struct TimeModel {
    pub name: String,
    pub cost: [f64; N_OPS],
    pub eviction: f64,
    pub fg_victim: f64,
}

const TIME_KEYS: [&str; N_OPS + 2] = [
    "dram_read",
    "dram_write",
    "pcm_read",
    "pcm_write",
    "storage_read",
    "storage_write",
    "eviction",
    "fg_victim",
];

/// The time model presets, each one reading of the paper's accounting.
const TIME_PRESETS: [Preset<TimeModel>; 3] = [
    ("paper", TimeModel::paper),
    ("paper-evict", TimeModel::paper_evict),
    ("paper-evict-fg", TimeModel::paper_evict_fg),
];

impl TimeModel {
    /// The paper's model: DRAM read/write 1, PCM read 2, PCM write 50, storage access 1000.
    pub fn paper() -> TimeModel {
        TimeModel {
            name: "paper".into(),
            cost: [1.0, 1.0, 2.0, 50.0, 1000.0, 1000.0],
            eviction: 0.0,
            fg_victim: 0.0,
        }
    }

    /// The other reading of the paper's "eviction to storage = 1000": storage costs 1000 per
    /// page evicted (clean or dirty) and nothing per miss read.
    pub fn paper_evict() -> TimeModel {
        TimeModel {
            name: "paper-evict".into(),
            cost: [1.0, 1.0, 2.0, 50.0, 0.0, 0.0],
            eviction: 1000.0,
            fg_victim: 0.0,
        }
    }

    /// `paper-evict`, and the foreground also pays for the foreground pages that background
    /// requests evict (one reading of what the paper's cut text lists under foreground time):
    /// each costs the foreground one eviction, 1000.
    pub fn paper_evict_fg() -> TimeModel {
        TimeModel { name: "paper-evict-fg".into(), fg_victim: 1000.0, ..TimeModel::paper_evict() }
    }

    pub fn preset(name: &str) -> Result<TimeModel, String> {
        pick("time", name, &TIME_PRESETS)
    }

    /// Every preset, in the order of `TIME_PRESETS`.
    pub fn presets() -> Vec<TimeModel> {
        TIME_PRESETS.iter().map(|(_, make)| make()).collect()
    }

    pub fn keys() -> &'static [&'static str] {
        &TIME_KEYS
    }

    pub fn get(&self, key: &str) -> Option<f64> {
        match TIME_KEYS.iter().position(|k| *k == key)? {
            N_OPS => Some(self.eviction),
            i if i == N_OPS + 1 => Some(self.fg_victim),
            i => Some(self.cost[i]),
        }
    }

    pub fn set(&mut self, key: &str, value: f64) -> Result<(), String> {
        let i = TIME_KEYS
            .iter()
            .position(|k| *k == key)
            .ok_or_else(|| format!("unknown time model key '{key}' (known: {})", TIME_KEYS.join(", ")))?;
        match i {
            N_OPS => self.eviction = value,
            i if i == N_OPS + 1 => self.fg_victim = value,
            i => self.cost[i] = value,
        }
        Ok(())
    }

    /// The time of the requests counted in `c` (the whole run's total time with `meter.total()`).
    pub fn time(&self, c: &ClassCounts) -> f64 {
        let ops: f64 = c.ops.iter().zip(self.cost.iter()).map(|(n, w)| *n as f64 * w).sum();
        ops + c.evictions as f64 * self.eviction
    }

    /// Foreground time: the foreground requests' own time plus `fg_victim` per foreground page
    /// evicted by the other requests (`other`).
    pub fn fg_time(&self, fg: &ClassCounts, other: &ClassCounts) -> f64 {
        self.time(fg) + other.fg_victims as f64 * self.fg_victim
    }
}

/// Energy per bit (nJ) for each memory operation, page size, storage energy per page,
/// and optional static power.
#[derive(Clone, Debug, PartialEq)]
pub struct EnergyModel {
    pub name: String,
    pub page_bytes: f64,
    pub dram_read_nj_per_bit: f64,
    pub dram_write_nj_per_bit: f64,
    pub pcm_read_nj_per_bit: f64,
    pub pcm_write_nj_per_bit: f64,
    /// Storage energy per page transfer (not in the paper's Table 1; 0 by default).
    pub storage_nj_per_page: f64,
    /// Static power per GiB of capacity (W). DRAM refresh is excluded by default, as in the paper.
    pub dram_static_w_per_gib: f64,
    pub pcm_static_w_per_gib: f64,
    /// Nanoseconds per model time unit, used only to turn static power into energy.
    pub time_unit_ns: f64,
}

const ENERGY_KEYS: [&str; 9] = [
    "page_bytes",
    "dram_read_nj_per_bit",
    "dram_write_nj_per_bit",
    "pcm_read_nj_per_bit",
    "pcm_write_nj_per_bit",
    "storage_nj_per_page",
    "dram_static_w_per_gib",
    "pcm_static_w_per_gib",
    "time_unit_ns",
];

impl EnergyModel {
    /// Table 1 of the paper: read 0.1 nJ/bit (both), write 0.1 (DRAM) / 1.0 (PCM) nJ/bit,
    /// 4 KiB pages, no static power.
    pub fn table1() -> EnergyModel {
        EnergyModel {
            name: "table1".into(),
            page_bytes: 4096.0,
            dram_read_nj_per_bit: 0.1,
            dram_write_nj_per_bit: 0.1,
            pcm_read_nj_per_bit: 0.1,
            pcm_write_nj_per_bit: 1.0,
            storage_nj_per_page: 0.0,
            dram_static_w_per_gib: 0.0,
            pcm_static_w_per_gib: 0.0,
            time_unit_ns: 50.0,
        }
    }

    /// Table 1 plus static power: DRAM 1 W/GiB (Table 1 says "~W/GB"), PCM 0; one time unit
    /// = one 50 ns DRAM access.
    pub fn table1_static() -> EnergyModel {
        EnergyModel { name: "table1-static".into(), dram_static_w_per_gib: 1.0, ..EnergyModel::table1() }
    }

    pub fn preset(name: &str) -> Result<EnergyModel, String> {
        pick(
            "energy",
            name,
            &[("table1", EnergyModel::table1), ("table1-static", EnergyModel::table1_static)],
        )
    }

    pub fn keys() -> &'static [&'static str] {
        &ENERGY_KEYS
    }

    fn field(&mut self, key: &str) -> Option<&mut f64> {
        Some(match key {
            "page_bytes" => &mut self.page_bytes,
            "dram_read_nj_per_bit" => &mut self.dram_read_nj_per_bit,
            "dram_write_nj_per_bit" => &mut self.dram_write_nj_per_bit,
            "pcm_read_nj_per_bit" => &mut self.pcm_read_nj_per_bit,
            "pcm_write_nj_per_bit" => &mut self.pcm_write_nj_per_bit,
            "storage_nj_per_page" => &mut self.storage_nj_per_page,
            "dram_static_w_per_gib" => &mut self.dram_static_w_per_gib,
            "pcm_static_w_per_gib" => &mut self.pcm_static_w_per_gib,
            "time_unit_ns" => &mut self.time_unit_ns,
            _ => return None,
        })
    }

    pub fn get(&self, key: &str) -> Option<f64> {
        self.clone().field(key).map(|v| *v)
    }

    pub fn set(&mut self, key: &str, value: f64) -> Result<(), String> {
        let f = self
            .field(key)
            .ok_or_else(|| format!("unknown energy model key '{key}' (known: {})", ENERGY_KEYS.join(", ")))?;
        *f = value;
        Ok(())
    }

    /// Energy per page operation (nJ), indexed like `meter::Op`.
    pub fn per_op_nj(&self) -> [f64; N_OPS] {
        let bits = self.page_bytes * 8.0;
        [
            self.dram_read_nj_per_bit * bits,
            self.dram_write_nj_per_bit * bits,
            self.pcm_read_nj_per_bit * bits,
            self.pcm_write_nj_per_bit * bits,
            self.storage_nj_per_page,
            self.storage_nj_per_page,
        ]
    }

    /// Dynamic energy of a set of counts (nJ).
    pub fn dynamic_nj(&self, c: &ClassCounts) -> f64 {
        c.ops.iter().zip(self.per_op_nj().iter()).map(|(n, e)| *n as f64 * e).sum()
    }

    /// Static energy (nJ) of the given capacities over `time_units` of model time.
    pub fn static_nj(&self, dram_pages: usize, pcm_pages: usize, time_units: f64) -> f64 {
        let gib = |pages: usize| pages as f64 * self.page_bytes / (1u64 << 30) as f64;
        let watts = gib(dram_pages) * self.dram_static_w_per_gib + gib(pcm_pages) * self.pcm_static_w_per_gib;
        // W * ns = nJ
        watts * time_units * self.time_unit_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table1_per_page() {
        let e = EnergyModel::table1().per_op_nj();
        // 4096 B = 32768 bits: 0.1 nJ/bit -> 3276.8 nJ, 1 nJ/bit -> 32768 nJ.
        assert!((e[0] - 3276.8).abs() < 1e-9);
        assert!((e[3] - 32768.0).abs() < 1e-9);
    }

    #[test]
    fn override_by_key() {
        let mut t = TimeModel::paper();
        t.set("pcm_write", 60.0).unwrap();
        assert_eq!(t.cost[3], 60.0);
        assert!(t.set("nope", 1.0).is_err());
        let mut e = EnergyModel::table1();
        e.set("page_bytes", 2048.0).unwrap();
        assert_eq!(e.get("page_bytes"), Some(2048.0));
        assert!(e.set("nope", 1.0).is_err());
    }

    #[test]
    fn static_energy() {
        let e = EnergyModel::table1_static();
        // 262144 pages of 4 KiB = 1 GiB DRAM at 1 W for 1000 units of 50 ns = 50000 nJ.
        assert!((e.static_nj(262_144, 0, 1000.0) - 50_000.0).abs() < 1e-6);
    }
}
