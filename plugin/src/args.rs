//! The plugin's command-line arguments (`-plugin lib.so,key=value,...`).

use crate::memory::{DeviceKind, MemRange, MemoryMap};
use crate::nvmain_trace::{Select, TraceClock};
use crate::params::Params;
use crate::presets::preset;
use crate::quantum::QuantumUnit;
use crate::race::Race;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No memory callbacks: instructions, regions and the vCPU switch only.
    None,
    /// Count instructions and memory accesses only (the speed baseline).
    Count,
    /// The whole model: caches, coherence, memory devices.
    Full,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Count => "count",
            Mode::Full => "full",
        }
    }
}

/// How memory callbacks follow the regions of interest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoiGate {
    /// Model every access of the run.
    Off,
    /// Callbacks stay translated; outside regions they return at once.
    On,
    /// Callbacks are translated only while a region is open (flushing all translations
    /// with `qemu_plugin_reset` at each change). Faster, but QEMU 7.2 can then abort
    /// (`qemu_plugin_vcpu_mem_cb: code should not be reached`); see README.md.
    Flush,
}

impl RoiGate {
    pub fn name(self) -> &'static str {
        match self {
            RoiGate::Off => "off",
            RoiGate::On => "on",
            RoiGate::Flush => "flush",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub out: String,
    pub preset: String,
    pub sysmap: Option<String>,
    pub mode: Mode,
    pub checker: bool,
    pub roi: RoiGate,
    pub mem: Vec<MemRange>,
    /// The NUMA node of each `mem` range (`mem=kind:start:size:node`), if given.
    pub mem_nodes: Vec<Option<u32>>,
    /// `node_cpus=<node>:<cpus>`: each NUMA node's vCPUs (SNC modes place them in its cluster).
    pub node_cpus: Vec<(u32, Vec<usize>)>,
    pub overrides: Vec<(String, String)>,
    /// Guest instructions per vCPU turn before the vCPU is made to yield (0: QEMU's slices).
    pub quantum: u64,
    /// The turn length of a vCPU that lately touched lines other vCPUs hold (0: `quantum`).
    pub quantum_shared: u64,
    /// What `quantum` and `quantum_shared` count: instructions or modelled cycles.
    pub quantum_unit: QuantumUnit,
    /// The turn length while no region of interest is open (boot, setup, teardown);
    /// `None`: `quantum` everywhere, 0: QEMU's own slices there.
    pub quantum_outside: Option<u64>,
    /// Nonzero: when the first region opens, each vCPU's first turn is cut to a length drawn
    /// from this seed and its index (`quantum::first_turn`), so that repeats of a point sample
    /// different interleavings instead of replaying one.
    pub phase_seed: u64,
    /// The causal clock (README "Modelled time"): on by default.
    pub causal: bool,
    /// Its lax window in core cycles; `None`: one turn (`Config::lax_cycles`).
    pub causal_lax: Option<u64>,
    /// The race rule (`race.rs`): which stores find their line taken away since their load.
    pub race: Race,
    /// Write the memory-side requests of the regions as an NVMain trace to this file.
    pub nvmain_trace: Option<String>,
    /// Whose requests go into the NVMain trace.
    pub nvmain_device: Select,
    /// What the NVMain trace's cycle field counts.
    pub nvmain_clock: TraceClock,
}

pub const ARG_KEYS: &str =
    "out, preset, sysmap, mode, checker, roi, mem, node_cpus, quantum, quantum_shared, quantum_unit, quantum_outside, phase_seed, causal, causal_lax, race, nvmain_trace, nvmain_device, nvmain_clock, set.<key>";

/// `<node>:<first>[-<last>]/<first>[-<last>]/...` (no commas: QEMU splits plugin args on them).
fn parse_node_cpus(value: &str) -> Result<(u32, Vec<usize>), String> {
    let bad = || format!("bad value '{value}' for node_cpus: expected <node>:<cpu>[-<cpu>]/...");
    let (node, list) = value.split_once(':').ok_or_else(bad)?;
    let node = node.parse::<u32>().map_err(|_| bad())?;
    let mut cpus = Vec::new();
    for item in list.split('/') {
        let (a, b) = item.split_once('-').unwrap_or((item, item));
        let (a, b) = (a.parse::<usize>().map_err(|_| bad())?, b.parse::<usize>().map_err(|_| bad())?);
        if a > b || b >= 1 << 16 {
            return Err(bad());
        }
        cpus.extend(a..=b);
    }
    Ok((node, cpus))
}

impl Config {
    /// The turn length in force inside or outside the regions of interest (0: no switch).
    pub fn quantum_at(&self, inside_region: bool) -> u64 {
        if inside_region {
            self.quantum
        } else {
            self.quantum_outside.unwrap_or(self.quantum)
        }
    }

    /// The causal clock's lax window in core cycles: `causal_lax` if given, else one turn
    /// inside the regions (instructions x `cpi` when turns count instructions), else
    /// `LAX_WITHOUT_TURNS`; `None` with the causal clock off.
    pub fn lax_cycles(&self, cpi: f64) -> Option<f64> {
        self.causal.then(|| self.window_cycles(cpi))
    }

    /// The lax window in core cycles whether the causal clock is on or not (the race rule
    /// uses it too): `causal_lax`, else one turn.
    pub fn window_cycles(&self, cpi: f64) -> f64 {
        match (self.causal_lax, self.quantum, self.quantum_unit) {
            (Some(lax), _, _) => lax as f64,
            (None, 0, _) => LAX_WITHOUT_TURNS,
            (None, q, QuantumUnit::Cycles) => q as f64,
            (None, q, QuantumUnit::Instructions) => q as f64 * cpi,
        }
    }

    /// Whether the plugin ever makes a vCPU yield (and so needs the time-control handle).
    pub fn switches_vcpus(&self) -> bool {
        self.quantum_at(true) > 0 || self.quantum_at(false) > 0
    }
}

/// The lax window (cycles) when QEMU's own slices set the turns (`quantum=0`).
pub const LAX_WITHOUT_TURNS: f64 = 1000.0;

fn count(key: &str, value: &str) -> Result<u64, String> {
    value.parse().map_err(|_| format!("bad value '{value}' for {key}: expected a whole number"))
}

fn on_off(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "on" | "yes" | "true" => Ok(true),
        "off" | "no" | "false" => Ok(false),
        _ => Err(format!("bad value '{value}' for {key}: expected on or off")),
    }
}

pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Config, String> {
    let mut cfg = Config {
        out: "manylab-stats.json".into(),
        preset: "knl-64".into(),
        sysmap: None,
        mode: Mode::Full,
        checker: false,
        roi: RoiGate::Off,
        mem: Vec::new(),
        mem_nodes: Vec::new(),
        node_cpus: Vec::new(),
        overrides: Vec::new(),
        quantum: 0,
        quantum_shared: 0,
        quantum_unit: QuantumUnit::Instructions,
        quantum_outside: None,
        phase_seed: 0,
        causal: true,
        causal_lax: None,
        race: Race::Off,
        nvmain_trace: None,
        nvmain_device: Select::Device(DeviceKind::Pcm),
        nvmain_clock: TraceClock::Instructions,
    };
    for arg in args {
        let arg = arg.as_ref();
        let Some((key, value)) = arg.split_once('=') else {
            return Err(format!("argument '{arg}' is not key=value; allowed keys: {ARG_KEYS}"));
        };
        match key {
            "out" if !value.is_empty() => cfg.out = value.into(),
            "preset" => cfg.preset = value.into(),
            "sysmap" if value.is_empty() => cfg.sysmap = None,
            "sysmap" => cfg.sysmap = Some(value.into()),
            "mode" => {
                cfg.mode = match value {
                    "none" => Mode::None,
                    "count" => Mode::Count,
                    "full" => Mode::Full,
                    _ => return Err(format!("bad value '{value}' for mode: expected none, count or full")),
                }
            }
            "checker" => cfg.checker = on_off(key, value)?,
            "roi" => {
                cfg.roi = match value {
                    "flush" => RoiGate::Flush,
                    "on" | "yes" | "true" => RoiGate::On,
                    "off" | "no" | "false" => RoiGate::Off,
                    _ => return Err(format!("bad value '{value}' for roi: expected on, off or flush")),
                }
            }
            "mem" => {
                let (range, node) = MemRange::parse_with_node(value)?;
                cfg.mem.push(range);
                cfg.mem_nodes.push(node);
            }
            "node_cpus" => cfg.node_cpus.push(parse_node_cpus(value)?),
            "quantum" => cfg.quantum = count(key, value)?,
            "quantum_shared" => cfg.quantum_shared = count(key, value)?,
            "quantum_unit" => cfg.quantum_unit = QuantumUnit::parse(value)?,
            "quantum_outside" => cfg.quantum_outside = Some(count(key, value)?),
            "phase_seed" => cfg.phase_seed = count(key, value)?,
            "causal" => cfg.causal = on_off(key, value)?,
            "causal_lax" => cfg.causal_lax = Some(count(key, value)?),
            "race" => cfg.race = Race::parse(value)?,
            "nvmain_trace" if value.is_empty() => cfg.nvmain_trace = None,
            "nvmain_trace" => cfg.nvmain_trace = Some(value.into()),
            "nvmain_device" => cfg.nvmain_device = Select::parse(value)?,
            "nvmain_clock" => cfg.nvmain_clock = TraceClock::parse(value)?,
            _ if key.starts_with("set.") => cfg.overrides.push((key[4..].into(), value.into())),
            "out" => return Err("bad value '' for out: expected a file path".into()),
            _ => return Err(format!("unknown key '{key}'; allowed keys: {ARG_KEYS}")),
        }
    }
    if cfg.nvmain_trace.is_some() && cfg.mode != Mode::Full {
        return Err(format!(
            "nvmain_trace needs mode=full (the memory requests come from the cache model), not mode={}",
            cfg.mode.name()
        ));
    }
    Ok(cfg)
}

/// The effective machine for `vcpus` vCPUs: the preset plus overrides, validated.
pub fn machine_params(cfg: &Config, vcpus: usize) -> Result<(Params, MemoryMap), String> {
    let mut params = preset(&cfg.preset)?;
    for (key, value) in &cfg.overrides {
        params.set(key, value)?;
    }
    if cfg.mode != Mode::None {
        params.validate(vcpus)?; // mode none models no machine: any vCPU count runs
    }
    let map = MemoryMap::with_numa(cfg.mem.clone(), &cfg.mem_nodes, &cfg.node_cpus)?;
    Ok((params, map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_arguments_parse() {
        let cfg = parse(&[
            "out=/tmp/s.json",
            "preset=tiny-4",
            "sysmap=",
            "mode=count",
            "checker=on",
            "roi=on",
            "mem=dram:0:40000000",
            "mem=pcm:40000000:40000000",
            "set.l2.size_kib=8",
            "set.cluster=quadrant",
            "quantum=1000",
            "quantum_shared=100",
            "quantum_unit=cycles",
        ])
        .unwrap();
        assert_eq!((cfg.nvmain_trace.as_deref(), cfg.nvmain_device), (None, Select::Device(DeviceKind::Pcm)));
        let cfg2 = parse(&["nvmain_trace=/tmp/t.nvt", "nvmain_device=all"]).unwrap();
        assert_eq!((cfg2.nvmain_trace.as_deref(), cfg2.nvmain_device), (Some("/tmp/t.nvt"), Select::All));
        assert_eq!((cfg.nvmain_clock, cfg2.nvmain_clock), (TraceClock::Instructions, TraceClock::Instructions));
        assert_eq!(parse(&["nvmain_clock=modelled"]).unwrap().nvmain_clock, TraceClock::Modelled);
        assert_eq!((cfg.quantum, cfg.quantum_shared), (1000, 100));
        assert_eq!(cfg.quantum_unit, QuantumUnit::Cycles);
        assert!(parse(&["quantum_unit=ns"]).unwrap_err().contains("quantum_unit"));
        // quantum_outside: unset = quantum everywhere; 0 = QEMU's slices outside the regions
        assert_eq!((cfg.quantum_at(true), cfg.quantum_at(false)), (1000, 1000));
        let boot_free = parse(&["quantum=1000", "quantum_outside=0"]).unwrap();
        assert_eq!((boot_free.quantum_at(true), boot_free.quantum_at(false)), (1000, 0));
        assert!(boot_free.switches_vcpus());
        let boot_only = parse(&["quantum=0", "quantum_outside=5000"]).unwrap();
        assert_eq!((boot_only.quantum_at(true), boot_only.quantum_at(false)), (0, 5000));
        assert!(boot_only.switches_vcpus() && !parse(&["quantum=0"]).unwrap().switches_vcpus());
        assert!(parse(&["quantum_outside=x"]).unwrap_err().contains("quantum_outside"));
        assert_eq!((cfg.phase_seed, parse(&["phase_seed=3"]).unwrap().phase_seed), (0, 3));
        assert!(parse(&["phase_seed=-1"]).unwrap_err().contains("phase_seed"));
        assert_eq!(cfg.mode, Mode::Count);
        assert!(cfg.checker && cfg.roi == RoiGate::On && cfg.sysmap.is_none());
        assert_eq!(cfg.mem.len(), 2);
        let (p, _) = machine_params(&cfg, 4).unwrap();
        assert_eq!(p.l2.size_kib, 8);
    }

    #[test]
    fn the_race_rule_is_off_unless_asked_and_has_the_lax_window_even_without_the_clock() {
        assert_eq!(parse::<&str>(&[]).unwrap().race, Race::Off);
        let cfg = parse(&["race=lax", "causal=off", "quantum=500", "quantum_unit=cycles"]).unwrap();
        assert_eq!((cfg.race, cfg.lax_cycles(1.0), cfg.window_cycles(1.0)), (Race::Lax, None, 500.0));
        let cfg = parse(&["race=window", "quantum=1000", "causal_lax=300"]).unwrap();
        assert_eq!((cfg.race, cfg.lax_cycles(2.0), cfg.window_cycles(2.0)), (Race::Window, Some(300.0), 300.0));
        assert_eq!(parse(&["quantum=1000"]).unwrap().window_cycles(2.0), 2000.0);
        assert!(parse(&["race=on"]).unwrap_err().contains("for race: expected off, window or lax"));
    }

    #[test]
    fn errors_name_the_key() {
        assert!(parse(&["bogus=1"]).unwrap_err().contains("'bogus'"));
        assert!(parse(&["mode=fast"]).unwrap_err().contains("mode"));
        assert!(parse(&["roi=maybe"]).unwrap_err().contains("roi"));
        assert!(parse(&["mem=dram:zz:1"]).unwrap_err().contains("mem"));
        assert!(parse(&["quantum=-5"]).unwrap_err().contains("quantum"));
        assert!(parse(&["nvmain_device=flash"]).unwrap_err().contains("nvmain_device"));
        assert!(parse(&["nvmain_trace=t.nvt", "mode=count"]).unwrap_err().contains("mode=full"));
        let cfg = parse(&["set.l9.size=1"]).unwrap();
        assert!(machine_params(&cfg, 4).unwrap_err().contains("set.l9.size"));
        let cfg = parse(&["preset=knl-9"]).unwrap();
        assert!(machine_params(&cfg, 4).unwrap_err().contains("knl-64"));
        let cfg = parse(&["preset=tiny-4"]).unwrap();
        assert!(machine_params(&cfg, 16).unwrap_err().contains("allow_oversubscribe"));
        let cfg = parse(&["preset=tiny-4", "mode=none"]).unwrap();
        assert!(machine_params(&cfg, 16).is_ok());
    }
}
