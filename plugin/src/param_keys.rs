//! The machine parameters as keys: one table, in output order, that `Params::set` and
//! `Params::get` look keys up in, that lists the keys in error messages, and that gives the
//! `machine` object of stats.json and `manylab-machine`. A `set` row is a `set.<key>` argument
//! (its field and how its text is read and checked); a `shown` row is a figure derived from the
//! fields, written to the JSON only. Adding a key is adding a row.

use crate::params::{positions_text, Cluster, Home, Params, Pos, Protocol, VcpuMap, LINE_BYTES};

/// A parameter's value: JSON writes `Int` as an integer, `Real` as a number (`f64`'s
/// `Display`), `Flag` as a boolean and `Text` as a string; `set` reads back `Value::text`.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(u64),
    Real(f64),
    Flag(bool),
    Text(String),
}

impl Value {
    /// The value as `set.<key>=` takes it.
    pub fn text(&self) -> String {
        match self {
            Value::Int(n) => n.to_string(),
            Value::Real(x) => x.to_string(),
            Value::Flag(on) => if *on { "on" } else { "off" }.to_string(),
            Value::Text(s) => s.clone(),
        }
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Int(n) => s.serialize_u64(*n),
            Value::Real(x) => s.serialize_f64(*x),
            Value::Flag(on) => s.serialize_bool(*on),
            Value::Text(text) => s.serialize_str(text),
        }
    }
}

/// How a field's type reads as a `Value`.
trait ToValue {
    fn value(&self) -> Value;
}

impl ToValue for u32 {
    fn value(&self) -> Value {
        Value::Int(*self as u64)
    }
}

impl ToValue for u64 {
    fn value(&self) -> Value {
        Value::Int(*self)
    }
}

impl ToValue for f64 {
    fn value(&self) -> Value {
        Value::Real(*self)
    }
}

impl ToValue for bool {
    fn value(&self) -> Value {
        Value::Flag(*self)
    }
}

impl ToValue for Vec<Pos> {
    fn value(&self) -> Value {
        Value::Text(positions_text(self))
    }
}

macro_rules! named_values {
    ($($t:ty),*) => {
        $(impl ToValue for $t {
            fn value(&self) -> Value {
                Value::Text(self.name().into())
            }
        })*
    };
}
named_values!(Cluster, Protocol, Home, VcpuMap);

/// Reads a key's text into its field, or says why not.
pub type Setter = fn(&mut Params, &str) -> Result<(), String>;

pub struct Key {
    pub name: &'static str,
    pub get: fn(&Params) -> Value,
    /// `None` for a derived figure (JSON only; not a `set.` key).
    pub set: Option<Setter>,
}

macro_rules! key_table {
    ($($name:literal => $how:ident($($spec:tt)*),)*) => {
        pub static TABLE: &[Key] = &[$(key_row!($how $name, $($spec)*),)*];
    };
}

macro_rules! key_row {
    (set $name:literal, $($field:ident).+, $read:expr) => {
        Key {
            name: $name,
            get: |p| p.$($field).+.value(),
            set: Some(|p, text| {
                p.$($field).+ = $read($name, text)?;
                Ok(())
            }),
        }
    };
    (shown $name:literal, $get:expr) => {
        Key { name: $name, get: $get, set: None }
    };
}

key_table! {
    "preset" => shown(|p| Value::Text(p.preset.clone())),
    "mesh.rows" => set(mesh_rows, count),
    "mesh.cols" => set(mesh_cols, count),
    "mesh.disabled" => set(disabled_tiles, positions),
    "mesh.tiles_per_site" => set(tiles_per_site, count),
    "mesh.active_tiles" => shown(|p| Value::Int(p.active_tiles().len() as u64)),
    "mesh.flit_bytes" => set(flit_bytes, count),
    "mesh.routing" => shown(|_| Value::Text("YX".into())),
    "cores_per_tile" => set(cores_per_tile, count),
    "threads_per_core" => set(threads_per_core, count),
    "cores" => shown(|p| Value::Int(p.n_cores() as u64)),
    "hw_threads" => shown(|p| Value::Int(p.n_threads() as u64)),
    "vcpu_map" => set(vcpu_map, choice(VcpuMap::from_name, "scatter or compact")),
    "cluster" => set(cluster, choice(Cluster::from_name, "all2all, hemisphere, quadrant, snc2 or snc4")),
    "protocol" => set(protocol, choice(Protocol::from_name, "mesif or moesif")),
    "dir.home" => set(home, choice(Home::from_name, "tile or mc")),
    "line_bytes" => shown(|_| Value::Int(LINE_BYTES)),
    "l1d.size_kib" => set(l1d.size_kib, count),
    "l1d.ways" => set(l1d.ways, count),
    "l1d.sets" => shown(|p| Value::Int(p.l1d.sets() as u64)),
    "l2.size_kib" => set(l2.size_kib, count),
    "l2.ways" => set(l2.ways, count),
    "l2.sets" => shown(|p| Value::Int(p.l2.sets() as u64)),
    "llc.size_kib" => set(llc.size_kib, integer("an integer (0 = no LLC)")),
    "llc.ways" => set(llc.ways, count),
    "llc.sets" => shown(|p| Value::Int(p.llc.sets() as u64)),
    "pl2.size_kib" => set(pl2.size_kib, integer("an integer (0 = no private L2)")),
    "pl2.ways" => set(pl2.ways, count),
    "l1d.policy" => shown(|_| Value::Text("LRU, write-back, private per core".into())),
    "l2.policy" => shown(|_| Value::Text("LRU, write-back, shared per tile, inclusive of L1D".into())),
    "llc.policy" => shown(|p| Value::Text(llc_policy(p).into())),
    "coherence" => shown(|p| Value::Text(coherence(p).into())),
    "mc.ddr" => set(mc_ddr, positions),
    "mc.mcdram" => set(mc_mcdram, positions),
    "dram.read_ns" => set(dram.read_ns, real),
    "dram.write_ns" => set(dram.write_ns, real),
    "dram.read_nj_per_bit" => set(dram.read_nj_per_bit, real),
    "dram.write_nj_per_bit" => set(dram.write_nj_per_bit, real),
    "mcdram.read_ns" => set(mcdram.read_ns, real),
    "mcdram.write_ns" => set(mcdram.write_ns, real),
    "mcdram.read_nj_per_bit" => set(mcdram.read_nj_per_bit, real),
    "mcdram.write_nj_per_bit" => set(mcdram.write_nj_per_bit, real),
    "pcm.read_ns" => set(pcm.read_ns, real),
    "pcm.write_ns" => set(pcm.write_ns, real),
    "pcm.read_nj_per_bit" => set(pcm.read_nj_per_bit, real),
    "pcm.write_nj_per_bit" => set(pcm.write_nj_per_bit, real),
    "pcm.endurance" => set(pcm.endurance, real),
    "storage.read_ns" => set(storage.read_ns, real),
    "storage.write_ns" => set(storage.write_ns, real),
    "storage.read_nj_per_bit" => set(storage.read_nj_per_bit, real),
    "storage.write_nj_per_bit" => set(storage.write_nj_per_bit, real),
    "allow_oversubscribe" => set(allow_oversubscribe, flag),
    "hot_lines" => set(hot_lines, integer("an integer")),
    "hot_functions" => set(hot_functions, integer("an integer")),
    "timing" => set(timing.enabled, flag),
    "core.ghz" => set(timing.ghz, positive("a positive number")),
    "core.cpi" => set(timing.cpi, real),
    "core.mlp" => set(timing.mlp, at_least_one),
    "core.smt_gain" => set(timing.smt_gain, at_least_one),
    "lat.l1" => set(timing.l1, integer("an integer")),
    "lat.l2" => set(timing.l2, integer("an integer")),
    "lat.dir" => set(timing.dir, integer("an integer")),
    "lat.hop" => set(timing.hop, integer("an integer")),
    "lat.fwd_clean" => set(timing.fwd_clean, integer("an integer")),
    "lat.fwd_dirty" => set(timing.fwd_dirty, integer("an integer")),
    "lat.inv" => set(timing.inv, integer("an integer")),
    "lat.llc" => set(timing.llc, integer("an integer")),
    "lat.pl2" => set(timing.pl2, integer("an integer")),
    "lat.dram.read" => shown(|p| Value::Int(p.timing.cycles(p.dram.read_ns))),
    "lat.dram.write" => shown(|p| Value::Int(p.timing.cycles(p.dram.write_ns))),
    "lat.mcdram.read" => shown(|p| Value::Int(p.timing.cycles(p.mcdram.read_ns))),
    "lat.mcdram.write" => shown(|p| Value::Int(p.timing.cycles(p.mcdram.write_ns))),
    "lat.pcm.read" => shown(|p| Value::Int(p.timing.cycles(p.pcm.read_ns))),
    "lat.pcm.write" => shown(|p| Value::Int(p.timing.cycles(p.pcm.write_ns))),
    "lat.storage.read" => shown(|p| Value::Int(p.timing.cycles(p.storage.read_ns))),
    "lat.storage.write" => shown(|p| Value::Int(p.timing.cycles(p.storage.write_ns))),
    "bw.dram_gbs" => set(dram.bw_gbs, positive("a positive number (GB/s)")),
    "bw.dram_write_gbs" => set(dram.bw_write_gbs, positive("a positive number (GB/s)")),
    "bw.mcdram_gbs" => set(mcdram.bw_gbs, positive("a positive number (GB/s)")),
    "bw.mcdram_write_gbs" => set(mcdram.bw_write_gbs, positive("a positive number (GB/s)")),
    "bw.pcm_gbs" => set(pcm.bw_gbs, positive("a positive number (GB/s)")),
    "bw.pcm_write_gbs" => set(pcm.bw_write_gbs, positive("a positive number (GB/s)")),
    "bw.storage_gbs" => set(storage.bw_gbs, positive("a positive number (GB/s)")),
    "bw.storage_write_gbs" => set(storage.bw_write_gbs, positive("a positive number (GB/s)")),
    "bw.epoch_ns" => set(bw.epoch_ns, positive("a positive number")),
    "bw.queue" => set(bw.queue, flag),
    "bw.behind_epochs" => set(bw.behind_epochs, whole_at_least_one),
}

fn llc_policy(p: &Params) -> &'static str {
    if p.llc.size_kib > 0 {
        "LRU, write-back, one slice per home, non-inclusive, filled by L2 evictions"
    } else {
        "none"
    }
}

fn coherence(p: &Params) -> &'static str {
    match (p.protocol, p.home) {
        (Protocol::Mesif, Home::Tile) => "MESIF, full-map directory at the home tile",
        (Protocol::Moesif, Home::Tile) => "MOESIF, full-map directory at the home tile",
        (Protocol::Mesif, Home::Mc) => "MESIF, full-map directory beside the memory controller",
        (Protocol::Moesif, Home::Mc) => "MOESIF, full-map directory beside the memory controller",
    }
}

/// The keys `set.` takes, in table order.
pub fn settable() -> impl Iterator<Item = &'static Key> {
    TABLE.iter().filter(|k| k.set.is_some())
}

/// The settable key `name`, or the error that lists them all.
pub fn settable_key(name: &str) -> Result<&'static Key, String> {
    settable().find(|k| k.name == name).ok_or_else(|| {
        let names: Vec<&str> = settable().map(|k| k.name).collect();
        format!("unknown key 'set.{name}'; allowed: set.{}", names.join(", set."))
    })
}

// How a key's text is read and checked: each takes the key and the text and returns the
// field's value or the one-line error naming both.

fn bad(key: &str, text: &str, expected: &str) -> String {
    format!("bad value '{text}' for set.{key}: expected {expected}")
}

/// A whole number >= 1.
fn count(key: &str, text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(bad(key, text, "a positive integer")),
    }
}

/// A whole number >= 0; `expected` says what 0 means where it means something.
fn integer(expected: &'static str) -> impl Fn(&str, &str) -> Result<u32, String> {
    move |key, text| text.parse::<u32>().map_err(|_| bad(key, text, expected))
}

/// A finite number >= 0.
fn real(key: &str, text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(bad(key, text, "a non-negative number")),
    }
}

/// A number > 0 (`real`'s message for text that is no number >= 0).
fn positive(expected: &'static str) -> impl Fn(&str, &str) -> Result<f64, String> {
    move |key, text| match real(key, text)? {
        x if x > 0.0 => Ok(x),
        _ => Err(bad(key, text, expected)),
    }
}

/// A number >= 1 (`real`'s message for text that is no number >= 0).
fn at_least_one(key: &str, text: &str) -> Result<f64, String> {
    match real(key, text)? {
        x if x >= 1.0 => Ok(x),
        _ => Err(bad(key, text, "a number >= 1")),
    }
}

fn whole_at_least_one(key: &str, text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(bad(key, text, "a whole number >= 1")),
    }
}

fn flag(key: &str, text: &str) -> Result<bool, String> {
    match text {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(bad(key, text, "on or off")),
    }
}

/// Positions are written `row:col/row:col/...` (no commas: QEMU splits plugin args on them).
fn positions(key: &str, text: &str) -> Result<Vec<Pos>, String> {
    if text.is_empty() || text == "none" {
        return Ok(vec![]);
    }
    text.split('/')
        .map(|item| {
            let (r, c) = item.split_once(':')?;
            Some((r.parse::<i32>().ok()?, c.parse::<i32>().ok()?))
        })
        .collect::<Option<Vec<Pos>>>()
        .ok_or_else(|| bad(key, text, "row:col/row:col/... or none"))
}

/// One of an enum's names (`from_name`); `expected` lists them.
fn choice<T>(from_name: fn(&str) -> Option<T>, expected: &'static str) -> impl Fn(&str, &str) -> Result<T, String> {
    move |key, text| from_name(text).ok_or_else(|| bad(key, text, expected))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    #[test]
    fn every_key_is_settable_and_bad_ones_are_named() {
        let mut p = preset("knl-64").unwrap();
        for key in settable().map(|k| k.name) {
            let value = match key {
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
    fn derived_figures_are_not_keys_and_names_are_unique() {
        let mut p = preset("tiny-4").unwrap();
        for name in ["preset", "cores", "l1d.sets", "lat.dram.read", "coherence"] {
            assert!(p
                .set(name, "1")
                .unwrap_err()
                .starts_with(&format!("unknown key 'set.{name}'; allowed: set.mesh.rows, ")));
            assert!(p.get(name).is_err(), "{name}");
        }
        let mut names: Vec<&str> = TABLE.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len());
    }

    #[test]
    fn messages_name_the_key_the_value_and_what_is_expected() {
        let mut p = preset("tiny-4").unwrap();
        let err = |p: &mut Params, k: &str, v: &str| p.set(k, v).unwrap_err();
        assert_eq!(err(&mut p, "mesh.rows", "0"), "bad value '0' for set.mesh.rows: expected a positive integer");
        assert_eq!(err(&mut p, "core.ghz", "-1"), "bad value '-1' for set.core.ghz: expected a non-negative number");
        assert_eq!(err(&mut p, "core.ghz", "0"), "bad value '0' for set.core.ghz: expected a positive number");
        assert_eq!(err(&mut p, "core.mlp", "0.5"), "bad value '0.5' for set.core.mlp: expected a number >= 1");
        assert_eq!(err(&mut p, "timing", "maybe"), "bad value 'maybe' for set.timing: expected on or off");
        assert_eq!(
            err(&mut p, "mc.ddr", "1-2"),
            "bad value '1-2' for set.mc.ddr: expected row:col/row:col/... or none"
        );
        assert_eq!(
            err(&mut p, "llc.size_kib", "-1"),
            "bad value '-1' for set.llc.size_kib: expected an integer (0 = no LLC)"
        );
        assert_eq!(err(&mut p, "vcpu_map", "x"), "bad value 'x' for set.vcpu_map: expected scatter or compact");
        assert_eq!(err(&mut p, "core.cpi", "inf"), "bad value 'inf' for set.core.cpi: expected a non-negative number");
    }
}
