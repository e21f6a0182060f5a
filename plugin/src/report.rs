//! stats.json (schema manylab-stats/2) and the short summary printed on stderr.

use crate::args::Config;
use crate::json::JsonWriter;
use crate::params::Params;
use crate::stats::{in_summary, Stats};
use crate::symbols::Symbols;

/// 2: `time.*` statistics, `mem.*.service_ns` (was `time_ns`), `mem.*.dirty_at_end`, per-function
/// `stall_cycles`, per-region `time.vcpus`; since the causal clock also `time.wait`, per-vCPU,
/// per-function and per-hot-line `wait_cycles`, per-function `base_cycles` and `cycles`, and
/// `params.clock.*` (fields added, none changed).
pub const SCHEMA: &str = "manylab-stats/2";

/// How the vCPUs took turns: the quantum switch's settings and what it did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Interleave {
    pub quantum: u64,
    pub quantum_shared: u64,
    /// "instructions" or "cycles" (empty in tests = instructions).
    pub quantum_unit: &'static str,
    /// The turn length while no region was open (0: QEMU's own slices there).
    pub quantum_outside: u64,
    /// The seed of the vCPUs' first turns in the regions (0: whole turns).
    pub phase_seed: u64,
    pub switches: u64,
    /// The switches made while no region was open.
    pub switches_outside: u64,
    pub short_turns: u64,
    pub icount: bool,
}

pub struct RunInfo<'a> {
    pub config: &'a Config,
    pub interleave: Interleave,
    pub params: &'a Params,
    pub target: &'a str,
    pub vcpus: usize,
    pub max_vcpus: usize,
    pub wall_s: f64,
    pub markers: u64,
    pub directory_lines: usize,
    pub n_symbols: usize,
    pub model_lock: &'static str,
}

pub fn stats_json(run: &RunInfo, stats: &Stats, syms: &Symbols) -> String {
    let mut w = JsonWriter::new();
    w.begin_object();
    w.field_str("schema", SCHEMA);
    w.field_object("tool");
    w.field_str("name", "manylab-plugin");
    w.field_str("version", env!("CARGO_PKG_VERSION"));
    w.end_object();

    w.field_object("params");
    w.field_str("mode", run.config.mode.name());
    w.field_bool("checker", run.config.checker);
    w.field_str("roi", run.config.roi.name());
    w.field_bool("clock.causal", run.config.causal);
    w.field_f64("clock.lax_cycles", run.config.lax_cycles(run.params.timing.cpi).unwrap_or(0.0));
    w.field_str("target", run.target);
    w.field_u64("vcpus", run.vcpus as u64);
    w.field_u64("max_vcpus", run.max_vcpus as u64);
    w.field_str("sysmap", run.config.sysmap.as_deref().unwrap_or(""));
    w.field_u64("sysmap.functions", run.n_symbols as u64);
    w.field_array("mem");
    for (i, r) in run.config.mem.iter().enumerate() {
        w.element_object();
        w.field_str("kind", r.kind.name());
        w.field_str("start", &format!("{:#x}", r.start));
        w.field_str("size", &format!("{:#x}", r.size));
        if let Some(node) = run.config.mem_nodes.get(i).copied().flatten() {
            w.field_u64("node", node as u64);
        }
        w.end_object();
    }
    w.end_array();
    if !run.config.node_cpus.is_empty() {
        w.field_array("node_cpus");
        for (node, cpus) in &run.config.node_cpus {
            w.element_object();
            w.field_u64("node", *node as u64);
            w.field_array("cpus");
            for &cpu in cpus {
                w.element_u64(cpu as u64);
            }
            w.end_array();
            w.end_object();
        }
        w.end_array();
    }
    w.field_str("mem.default", "dram");
    w.field_key("machine");
    run.params.write_json(&mut w);
    w.end_object();

    w.field_object("run");
    w.field_f64("wall_s", run.wall_s);
    w.field_u64("markers", run.markers);
    w.field_u64("directory.lines", run.directory_lines as u64);
    w.field_str("model.lock", run.model_lock);
    w.field_str(
        "determinism",
        "counts are a function of the guest's access order: repeatable under single-threaded TCG \
         for the same execution; under multi-threaded TCG the model is serialised by one lock and \
         the interleaving (hence the counts) varies from run to run",
    );
    w.end_object();

    w.field_object("interleave");
    w.field_u64("quantum", run.interleave.quantum);
    w.field_u64("quantum_shared", run.interleave.quantum_shared);
    w.field_str(
        "quantum_unit",
        if run.interleave.quantum_unit.is_empty() { "instructions" } else { run.interleave.quantum_unit },
    );
    w.field_u64("quantum_outside", run.interleave.quantum_outside);
    w.field_u64("phase_seed", run.interleave.phase_seed);
    w.field_u64("switches", run.interleave.switches);
    w.field_u64("switches_outside", run.interleave.switches_outside);
    w.field_u64("short_turns", run.interleave.short_turns);
    w.field_bool("icount", run.interleave.icount);
    w.end_object();

    w.field_object("regions");
    for slot in &stats.slots {
        w.field_key(&slot.name);
        slot.write_json(&mut w, run.params, syms);
    }
    w.end_object();

    w.field_object("summary");
    for slot in &stats.slots {
        for (name, value) in slot.scalars(run.params) {
            if in_summary(&name) {
                w.field_f64(&format!("{}.{name}", slot.name), value);
            }
        }
    }
    w.end_object();
    w.end_object();
    w.finish()
}

pub fn human_summary(run: &RunInfo, stats: &Stats) -> String {
    let mut out = format!(
        "manylab-plugin: preset {} mode {} vcpus {} wall {:.1}s, stats in {}\n\
         manylab-plugin: quantum {} (shared {}), {} vCPU switches ({} short turns), icount {}\n",
        run.params.preset,
        run.config.mode.name(),
        run.vcpus,
        run.wall_s,
        run.config.out,
        run.interleave.quantum,
        run.interleave.quantum_shared,
        run.interleave.switches,
        run.interleave.short_turns,
        if run.interleave.icount { "on" } else { "off" },
    );
    for slot in stats.slots.iter().take(2) {
        let v: std::collections::HashMap<String, f64> = slot.scalars(run.params).into_iter().collect();
        let g = |k: &str| v.get(k).copied().unwrap_or(0.0);
        out.push_str(&format!(
            "  {:<6} insts {:.3e} accesses {:.3e} l1d miss {:.2}% l2 miss {:.2}% coh msgs {:.3e} inv {:.3e} hops {:.3e} mem r/w {:.3e}/{:.3e} energy {:.3e} nJ pcm writes {:.0} modelled {:.3e} ns\n",
            slot.name,
            g("insts"),
            g("mem.accesses"),
            100.0 * g("l1d.miss_rate"),
            100.0 * g("l2.miss_rate"),
            g("coh.msgs"),
            g("coh.invalidations"),
            g("coh.hops"),
            g("mem.reads"),
            g("mem.writes"),
            g("mem.energy_nj"),
            g("mem.pcm.writes"),
            g("time.modelled_ns"),
        ));
    }
    out
}
