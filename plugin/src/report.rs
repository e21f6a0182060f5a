//! stats.json (schema manylab-stats/2) and the short summary printed on stderr.

use crate::args::Config;
use crate::json::{self, Fields};
use crate::lock_sites::{self, LockSiteReport};
use crate::params::{Params, LINE_BYTES};
use crate::stats::{in_summary, FuncCtr, HotLine, Slot, Stats};
use crate::symbols::Symbols;
use serde::Serialize;

/// 2: `time.*` statistics, `mem.*.service_ns` (was `time_ns`), `mem.*.dirty_at_end`, per-function
/// `stall_cycles`, per-region `time.vcpus`; since the causal clock also `time.wait`, per-vCPU,
/// per-function and per-hot-line `wait_cycles`, per-function `base_cycles` and `cycles`, and
/// `params.clock.*`; since the lock sites per region `lock_sites` (fields added, none changed).
pub const SCHEMA: &str = "manylab-stats/2";

/// How the vCPUs took turns: the quantum switch's settings and what it did.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Interleave {
    pub quantum: u64,
    pub quantum_shared: u64,
    /// "instructions" or "cycles" (empty in tests = instructions).
    #[serde(serialize_with = "instructions_if_empty")]
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
    /// Where the counts stop: the guest's end-of-run marker, or QEMU's exit.
    pub ended_at: &'static str,
}

fn instructions_if_empty<S: serde::Serializer>(unit: &&'static str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if unit.is_empty() { "instructions" } else { unit })
}

pub fn stats_json(run: &RunInfo, stats: &Stats, syms: &Symbols) -> String {
    let file = StatsFile {
        schema: SCHEMA,
        tool: Tool { name: "manylab-plugin", version: env!("CARGO_PKG_VERSION") },
        params: RunParams::of(run),
        run: RunSection {
            wall_s: run.wall_s,
            markers: run.markers,
            directory_lines: run.directory_lines,
            model_lock: run.model_lock,
            ended_at: run.ended_at,
            determinism: "counts are a function of the guest's access order: repeatable under single-threaded TCG \
                          for the same execution; under multi-threaded TCG the model is serialised by one lock and \
                          the interleaving (hence the counts) varies from run to run",
        },
        interleave: run.interleave,
        regions: Fields(
            stats.slots.iter().map(|slot| (slot.name.as_str(), SlotReport::of(slot, run.params, syms))).collect(),
        ),
        summary: Fields(
            stats
                .slots
                .iter()
                .flat_map(|slot| {
                    slot.scalars(run.params)
                        .into_iter()
                        .filter(|(name, _)| in_summary(name))
                        .map(|(name, value)| (format!("{}.{name}", slot.name), value))
                })
                .collect(),
        ),
    };
    json::to_text(&file)
}

// The shape of stats.json: field order is output order; README.md "stats.json" describes it.

#[derive(Serialize)]
struct StatsFile<'a> {
    schema: &'static str,
    tool: Tool,
    params: RunParams<'a>,
    run: RunSection,
    interleave: Interleave,
    regions: Fields<&'a str, SlotReport<'a>>,
    summary: Fields<String, f64>,
}

#[derive(Serialize)]
struct Tool {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct RunParams<'a> {
    mode: &'static str,
    checker: bool,
    roi: &'static str,
    #[serde(rename = "clock.causal")]
    clock_causal: bool,
    #[serde(rename = "clock.lax_cycles")]
    clock_lax_cycles: f64,
    #[serde(rename = "clock.race")]
    clock_race: &'static str,
    target: &'a str,
    vcpus: usize,
    max_vcpus: usize,
    sysmap: &'a str,
    #[serde(rename = "sysmap.functions")]
    sysmap_functions: usize,
    mem: Vec<MemRangeReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    node_cpus: Vec<NodeCpus<'a>>,
    #[serde(rename = "mem.default")]
    mem_default: &'static str,
    machine: &'a Params,
}

impl<'a> RunParams<'a> {
    fn of(run: &RunInfo<'a>) -> RunParams<'a> {
        let cfg = run.config;
        RunParams {
            mode: cfg.mode.name(),
            checker: cfg.checker,
            roi: cfg.roi.name(),
            clock_causal: cfg.causal,
            clock_lax_cycles: cfg.lax_cycles(run.params.timing.cpi).unwrap_or(0.0),
            clock_race: cfg.race.name(),
            target: run.target,
            vcpus: run.vcpus,
            max_vcpus: run.max_vcpus,
            sysmap: cfg.sysmap.as_deref().unwrap_or(""),
            sysmap_functions: run.n_symbols,
            mem: cfg
                .mem
                .iter()
                .enumerate()
                .map(|(i, r)| MemRangeReport {
                    kind: r.kind.name(),
                    start: format!("{:#x}", r.start),
                    size: format!("{:#x}", r.size),
                    node: cfg.mem_nodes.get(i).copied().flatten(),
                })
                .collect(),
            node_cpus: cfg.node_cpus.iter().map(|(node, cpus)| NodeCpus { node: *node, cpus }).collect(),
            mem_default: "dram",
            machine: run.params,
        }
    }
}

#[derive(Serialize)]
struct MemRangeReport {
    kind: &'static str,
    start: String,
    size: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<u32>,
}

/// `node_cpus=` as given: a NUMA node and its vCPUs.
#[derive(Serialize)]
struct NodeCpus<'a> {
    node: u32,
    cpus: &'a [usize],
}

#[derive(Serialize)]
struct RunSection {
    wall_s: f64,
    markers: u64,
    #[serde(rename = "directory.lines")]
    directory_lines: usize,
    #[serde(rename = "model.lock")]
    model_lock: &'static str,
    ended_at: &'static str,
    determinism: &'static str,
}

/// One statistics slot ("total", "roi", a region or phase).
#[derive(Serialize)]
struct SlotReport<'a> {
    entered: u64,
    #[serde(rename = "host.wall_s")]
    host_wall_s: f64,
    #[serde(rename = "host.cpu_s")]
    host_cpu_s: f64,
    stats: Fields<String, f64>,
    #[serde(rename = "pcm.wear")]
    pcm_wear: PcmWear,
    hot_lines: Vec<HotLineReport>,
    functions: Vec<FunctionReport<'a>>,
    #[serde(rename = "time.vcpus")]
    time_vcpus: Vec<VcpuReport>,
    lock_sites: Vec<LockSiteReport<'a>>,
}

#[derive(Serialize)]
struct PcmWear {
    histogram_buckets: &'static str,
    histogram: Vec<u64>,
}

#[derive(Serialize)]
struct HotLineReport {
    paddr: String,
    vaddr: String,
    symbol: String,
    #[serde(rename = "coh.msgs")]
    coh_msgs: u64,
    #[serde(rename = "coh.invalidations")]
    coh_invalidations: u64,
    wait_cycles: f64,
}

#[derive(Serialize)]
struct FunctionReport<'a> {
    name: &'a str,
    insts: u64,
    #[serde(rename = "l1d.misses")]
    l1d_misses: u64,
    #[serde(rename = "l2.misses")]
    l2_misses: u64,
    #[serde(rename = "coh.msgs")]
    coh_msgs: u64,
    #[serde(rename = "coh.invalidations")]
    coh_invalidations: u64,
    stall_cycles: u64,
    base_cycles: f64,
    wait_cycles: u64,
    cycles: f64,
}

#[derive(Serialize)]
struct VcpuReport {
    vcpu: usize,
    insts: u64,
    stall_cycles: u64,
    idle_cycles: f64,
    smt_cycles: f64,
    wait_cycles: f64,
    cycles: f64,
}

impl<'a> SlotReport<'a> {
    fn of(slot: &Slot, p: &Params, syms: &'a Symbols) -> SlotReport<'a> {
        SlotReport {
            entered: slot.entered,
            host_wall_s: slot.host_wall_s,
            host_cpu_s: slot.host_cpu_s,
            stats: Fields(slot.scalars(p)),
            pcm_wear: pcm_wear(slot),
            hot_lines: hot_lines(slot, p, syms),
            functions: functions(slot, p, syms),
            time_vcpus: slot
                .vcpu_cycles(p)
                .into_iter()
                .enumerate()
                .map(|(vcpu, c)| VcpuReport {
                    vcpu,
                    insts: c.insts,
                    stall_cycles: c.stall,
                    idle_cycles: c.idle,
                    smt_cycles: c.smt,
                    wait_cycles: c.wait,
                    cycles: c.cycles,
                })
                .collect(),
            lock_sites: lock_sites::report(slot, p, syms),
        }
    }
}

fn pcm_wear(slot: &Slot) -> PcmWear {
    let mut histogram = [0u64; 33];
    for &n in slot.pcm_line_writes.values() {
        histogram[(32 - n.leading_zeros()) as usize] += 1;
    }
    let used = histogram.iter().rposition(|&n| n > 0).map_or(0, |i| i + 1);
    PcmWear {
        histogram_buckets: "bucket b counts lines written [2^(b-1), 2^b) times; b=1 is exactly once",
        histogram: histogram[..used].to_vec(),
    }
}

/// The `hot_lines` lines with the most coherence messages (ties: lower address first).
fn hot_lines(slot: &Slot, p: &Params, syms: &Symbols) -> Vec<HotLineReport> {
    let mut lines: Vec<(&u64, &HotLine)> = slot.hot_lines.iter().collect();
    lines.sort_by(|a, b| b.1.coh_msgs.cmp(&a.1.coh_msgs).then(a.0.cmp(b.0)));
    lines
        .into_iter()
        .take(p.hot_lines as usize)
        .map(|(&line, hot)| HotLineReport {
            paddr: format!("{:#x}", line * LINE_BYTES),
            vaddr: format!("{:#x}", hot.last_vaddr & !(LINE_BYTES - 1)),
            symbol: syms.data_name(hot.last_vaddr).unwrap_or_default(),
            coh_msgs: hot.coh_msgs,
            coh_invalidations: hot.invalidations,
            wait_cycles: hot.wait_cycles,
        })
        .collect()
}

/// The `hot_functions` functions with the most L1D misses plus coherence messages (ties: more
/// instructions, then lower id first).
fn functions<'a>(slot: &Slot, p: &Params, syms: &'a Symbols) -> Vec<FunctionReport<'a>> {
    let mut ids: Vec<usize> =
        (0..slot.funcs.len()).filter(|&i| slot.func_insts[i] > 0 || slot.funcs[i].iter().any(|&n| n > 0)).collect();
    ids.sort_by(|&a, &b| {
        let key = |i: usize| {
            (slot.funcs[i][FuncCtr::L1dMisses as usize] + slot.funcs[i][FuncCtr::CohMsgs as usize], slot.func_insts[i])
        };
        key(b).cmp(&key(a)).then(a.cmp(&b))
    });
    ids.into_iter()
        .take(p.hot_functions as usize)
        .map(|i| {
            let f = &slot.funcs[i];
            let stall = f[FuncCtr::StallCycles as usize];
            let wait = f[FuncCtr::WaitCycles as usize];
            let base = slot.func_insts[i] as f64 * p.timing.cpi + f[FuncCtr::SmtCycles as usize] as f64;
            FunctionReport {
                name: syms.name(i as u32),
                insts: slot.func_insts[i],
                l1d_misses: f[FuncCtr::L1dMisses as usize],
                l2_misses: f[FuncCtr::L2Misses as usize],
                coh_msgs: f[FuncCtr::CohMsgs as usize],
                coh_invalidations: f[FuncCtr::Invalidations as usize],
                stall_cycles: stall,
                base_cycles: base,
                wait_cycles: wait,
                cycles: base + stall as f64 / p.timing.mlp + wait as f64,
            }
        })
        .collect()
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
