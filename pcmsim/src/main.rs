//! `manylab-pcmsim`: command-line front of the hybrid-memory policy simulator.

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};
use pcmsim::bench::{self, BenchSpec};
use pcmsim::config::Models;
use pcmsim::gen::{GenParams, Generator};
use pcmsim::policy::{PolicyParams, POLICY_NAMES};
use pcmsim::sim::MemSpec;
use pcmsim::sweep::{self, footprint, Source, SweepSpec};
use pcmsim::trace::{self, binary, csv, TraceInfo};
use serde::Serialize;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage: manylab-pcmsim <command> [options]

commands:
  run      simulate a sweep; one JSON line per point, then a summary line
           source:  --trace FILE (.mlpt binary or CSV) | --gen trace1|trace2 [--gen-set k=v]...
           sweep:   --policies lru,2q,fgbg,clock-dwf  --mem 0.1,0.5,1.0 (fractions of footprint)
                    | --mem-pages 1000,5000   --dram-share 0.05[,0.1...]
           models:  --time-model paper|paper-evict|paper-evict-fg --energy-model table1|table1-static
                    --model-file F.toml
                    --set time.<key>=<v> | energy.<key>=<v> (repeatable)
           policy:  --kin 0.25 --kout 0.5 --dwf-max-freq 3     output: --wear-bins 10 --out FILE
  gen      write a synthetic trace: --gen trace1|trace2 [--gen-set k=v]... --out FILE(.csv|.mlpt)
  convert  IN OUT: binary <-> CSV (OUT format by extension: .csv is CSV, anything else binary)
  info     TRACE: records, foreground share, writes, footprint, duration (JSON)
  presets  print the built-in models as a model file (TOML); --time-model/--energy-model pick
  bench    requests/s and peak RSS per policy: [--requests 10000000] [--policies lru,fgbg,...]
           [--mem 0.3[,...]] | [--mem-pages N[,...]] [--dram-share 0.05] [--gen-set k=v]...
           (default workload: trace2 shape, 16 apps x 65536 pages) [--gen trace1|trace2 for a
           preset] [--stream: no packed trace buffer] [--trace FILE: read a file instead]

generator keys (--gen-set): requests seed apps fg_pages pages shared_pages shared_share zipf
  fg_share switch_every write_pages write_prob rate
";

/// The command line. Every option taking a value takes the next word whatever it starts with
/// (`--kin -0.5`), and a repeated option keeps its last value (`--gen-set` and `--set` keep all).
#[derive(Parser)]
#[command(name = "manylab-pcmsim", override_help = USAGE, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a sweep: one JSON line per point, then a summary line
    #[command(args_override_self = true)]
    Run(RunArgs),
    /// Write a synthetic trace (.csv or binary .mlpt by extension)
    #[command(args_override_self = true)]
    Gen(GenArgs),
    /// Convert a trace between binary and CSV (OUT's format by its extension)
    Convert {
        #[arg(value_name = "IN")]
        input: String,
        #[arg(value_name = "OUT")]
        output: String,
    },
    /// Records, foreground share, writes, footprint and duration of a trace (JSON)
    Info { trace: String },
    /// Print the built-in models as a model file (TOML)
    #[command(args_override_self = true)]
    Presets(ModelArgs),
    /// Requests per second and peak RSS per policy
    #[command(args_override_self = true)]
    Bench(BenchArgs),
}

/// A comma-separated list (blanks around items and empty items dropped).
#[derive(Clone)]
struct List<T>(Vec<T>);

fn items(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty())
}

fn names(s: &str) -> Result<List<String>, String> {
    Ok(List(items(s).map(String::from).collect()))
}

fn numbers(s: &str) -> Result<List<f64>, String> {
    items(s)
        .map(|x| x.parse().map_err(|_| format!("'{x}' is not a number")))
        .collect::<Result<_, _>>()
        .map(List)
}

fn page_counts(s: &str) -> Result<List<u64>, String> {
    items(s).map(|x| x.parse().map_err(|_| format!("bad '{x}'"))).collect::<Result<_, _>>().map(List)
}

// Where the requests come from: a trace file or the generator.
#[derive(Args)]
struct SourceArgs {
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    trace: Option<String>,
    #[arg(long, value_name = "trace1|trace2", allow_hyphen_values = true)]
    gen: Option<String>,
    #[arg(long = "gen-set", value_name = "K=V", allow_hyphen_values = true)]
    gen_set: Vec<String>,
}

// The time and energy models: presets and `section.key=value` overrides.
#[derive(Args)]
struct ModelArgs {
    #[arg(long = "time-model", value_name = "NAME", allow_hyphen_values = true)]
    time_model: Option<String>,
    #[arg(long = "energy-model", value_name = "NAME", allow_hyphen_values = true)]
    energy_model: Option<String>,
    #[arg(long, value_name = "SECTION.KEY=V", allow_hyphen_values = true)]
    set: Vec<String>,
}

// The policies and memory sizes (fractions of the footprint and/or page counts).
#[derive(Args)]
struct MemArgs {
    #[arg(long, value_name = "LIST", value_parser = names, allow_hyphen_values = true)]
    policies: Option<List<String>>,
    #[arg(long, value_name = "FRACTIONS", value_parser = numbers, allow_hyphen_values = true)]
    mem: Option<List<f64>>,
    #[arg(long = "mem-pages", value_name = "PAGES", value_parser = page_counts, allow_hyphen_values = true)]
    mem_pages: Option<List<u64>>,
}

impl MemArgs {
    fn policies(&self) -> Vec<String> {
        self.policies.clone().map_or_else(|| POLICY_NAMES.iter().map(|p| p.to_string()).collect(), |l| l.0)
    }

    /// The page counts, then the fractions (`default_mem` if neither was given).
    fn mems(&self, default_mem: &[f64]) -> Vec<MemSpec> {
        let mut mems: Vec<MemSpec> =
            self.mem_pages.iter().flat_map(|l| l.0.iter().map(|&n| MemSpec::Pages(n))).collect();
        if self.mem.is_some() || mems.is_empty() {
            let fracs = self.mem.as_ref().map_or(default_mem, |l| &l.0);
            mems.extend(fracs.iter().map(|&f| MemSpec::Frac(f)));
        }
        mems
    }
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    mem: MemArgs,
    #[arg(long = "dram-share", value_name = "SHARES", value_parser = numbers, allow_hyphen_values = true)]
    dram_share: Option<List<f64>>,
    #[command(flatten)]
    models: ModelArgs,
    #[arg(long = "model-file", value_name = "FILE", allow_hyphen_values = true)]
    model_file: Option<String>,
    #[arg(long, default_value_t = 0.25, allow_hyphen_values = true)]
    kin: f64,
    #[arg(long, default_value_t = 0.5, allow_hyphen_values = true)]
    kout: f64,
    #[arg(long = "dwf-max-freq", default_value_t = 3, allow_hyphen_values = true)]
    dwf_max_freq: u8,
    #[arg(long = "wear-bins", default_value_t = 10, allow_hyphen_values = true)]
    wear_bins: usize,
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    out: Option<String>,
    /// Accepted and ignored (the trace length is `--gen-set requests=N`).
    #[arg(long = "requests", hide = true, allow_hyphen_values = true)]
    _requests: Option<String>,
}

#[derive(Args)]
struct GenArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    out: String,
}

#[derive(Args)]
struct BenchArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    mem: MemArgs,
    #[arg(long, allow_hyphen_values = true)]
    requests: Option<u64>,
    #[arg(long = "dram-share", default_value_t = 0.05, allow_hyphen_values = true)]
    dram_share: f64,
    #[arg(long)]
    stream: bool,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(&e),
    };
    let r = match &cli.command {
        Command::Run(a) => cmd_run(a),
        Command::Gen(a) => cmd_gen(a),
        Command::Convert { input, output } => cmd_convert(input, output),
        Command::Info { trace } => cmd_info(trace),
        Command::Presets(a) => cmd_presets(a),
        Command::Bench(a) => cmd_bench(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("manylab-pcmsim: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Help goes to stdout (status 0); no command prints the usage to stderr (status 2); any other
/// error is one line, `manylab-pcmsim: <what>` (status 1), as the Python side reads it.
fn parse_error(e: &clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            let text = e.render().to_string();
            let first: Vec<&str> = text.lines().map(str::trim).take_while(|l| !l.is_empty()).collect();
            let line = first.join(" ");
            eprintln!("manylab-pcmsim: {}", line.strip_prefix("error: ").unwrap_or(&line));
            ExitCode::FAILURE
        }
    }
}

fn gen_params(a: &SourceArgs) -> Result<GenParams, String> {
    let mut g = GenParams::preset(a.gen.as_deref().unwrap_or("trace1"))?;
    set_gen(&mut g, &a.gen_set)?;
    Ok(g)
}

fn set_gen(g: &mut GenParams, assignments: &[String]) -> Result<(), String> {
    for kv in assignments {
        let (k, v) = kv.split_once('=').ok_or_else(|| format!("--gen-set '{kv}': expected key=value"))?;
        g.set(k.trim(), v.trim())?;
    }
    Ok(())
}

fn source(a: &SourceArgs) -> Result<Source, String> {
    match (&a.trace, a.gen.is_some()) {
        (Some(t), false) => Ok(Source::File(PathBuf::from(t))),
        (None, true) => Ok(Source::Gen(gen_params(a)?)),
        _ => Err("give exactly one of --trace FILE or --gen trace1|trace2".into()),
    }
}

fn models(model_file: Option<&str>, a: &ModelArgs) -> Result<Models, String> {
    let mut m = match model_file {
        Some(f) => {
            let text = std::fs::read_to_string(f).map_err(|e| format!("cannot read {f}: {e}"))?;
            Models::from_toml(&text)?
        }
        None => Models::from_presets(
            a.time_model.as_deref().unwrap_or("paper"),
            a.energy_model.as_deref().unwrap_or("table1"),
        )?,
    };
    if model_file.is_some() && (a.time_model.is_some() || a.energy_model.is_some()) {
        return Err("--model-file names its presets; do not combine with --time-model/--energy-model".into());
    }
    for s in &a.set {
        m.set(s)?;
    }
    Ok(m)
}

fn out_writer(out: Option<&str>) -> Result<Box<dyn Write>, String> {
    Ok(match out {
        Some(p) => Box::new(BufWriter::new(File::create(p).map_err(|e| format!("cannot create {p}: {e}"))?)),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    })
}

const RUN_MEM: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

fn cmd_run(a: &RunArgs) -> Result<(), String> {
    let src = source(&a.source)?;
    let spec = SweepSpec {
        policies: a.mem.policies(),
        mems: a.mem.mems(&RUN_MEM),
        dram_shares: a.dram_share.clone().map_or_else(|| vec![0.05], |l| l.0),
        params: PolicyParams { kin: a.kin, kout: a.kout, dwf_max_freq: a.dwf_max_freq },
        models: models(a.model_file.as_deref(), &a.models)?,
        wear_bins: a.wear_bins,
    };
    let mut out = out_writer(a.out.as_deref())?;
    sweep::run(&spec, &src, &mut out)?;
    out.flush().map_err(|e| e.to_string())
}

fn is_csv(p: &Path) -> bool {
    p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// Write records to `out` as CSV or binary (by extension).
fn write_trace(
    out: &Path,
    info: &TraceInfo,
    records: impl Iterator<Item = Result<pcmsim::request::Record, String>>,
) -> Result<u64, String> {
    let f = File::create(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let io = |e: std::io::Error| format!("{}: {e}", out.display());
    let mut n = 0;
    if is_csv(out) {
        let mut w = csv::Writer::new(BufWriter::new(f), info).map_err(io)?;
        for r in records {
            w.write(&r?).map_err(io)?;
            n += 1;
        }
        w.finish().map_err(io)?;
    } else {
        let mut w = binary::Writer::new(BufWriter::new(f), info).map_err(io)?;
        for r in records {
            w.write(&r?).map_err(io)?;
        }
        n = w.count();
        w.finish().map_err(io)?;
    }
    Ok(n)
}

fn cmd_gen(a: &GenArgs) -> Result<(), String> {
    let g = gen_params(&a.source)?;
    let info = TraceInfo { time_ns: true, ..TraceInfo::default() };
    let n = write_trace(Path::new(&a.out), &info, Generator::new(g)?.map(Ok))?;
    eprintln!("wrote {n} records to {}", a.out);
    Ok(())
}

fn cmd_convert(inp: &str, out: &str) -> Result<(), String> {
    let (info, it) = trace::open(Path::new(inp)).map_err(|e| format!("{inp}: {e}"))?;
    let inp2 = inp.to_string();
    let n = write_trace(Path::new(out), &info, it.map(move |r| r.map_err(|e| format!("{inp2}: {e}"))))?;
    eprintln!("wrote {n} records to {out}");
    Ok(())
}

/// What `info` prints, keys in this order.
#[derive(Serialize)]
struct InfoLine<'a> {
    trace: &'a str,
    requests: u64,
    fg_requests: u64,
    writes: u64,
    footprint: u64,
    time_ns: bool,
    physical: bool,
    page_bytes: u64,
    duration_s: Option<f64>,
}

fn cmd_info(inp: &str) -> Result<(), String> {
    let src = Source::File(PathBuf::from(inp));
    let fp = footprint(&src)?;
    let mut st = pcmsim::sim::TraceStats::default();
    let info = src.for_each(|r| st.add(r))?;
    st.time_ns = info.time_ns;
    let line = InfoLine {
        trace: inp,
        requests: st.requests,
        fg_requests: st.fg_requests,
        writes: st.writes,
        footprint: fp,
        time_ns: info.time_ns,
        physical: info.physical,
        page_bytes: info.page_bytes as u64,
        duration_s: st.duration_s(),
    };
    println!("{}", pcmsim::json::line(&line));
    Ok(())
}

fn cmd_presets(a: &ModelArgs) -> Result<(), String> {
    print!("{}", models(None, a)?.to_toml());
    Ok(())
}

fn cmd_bench(a: &BenchArgs) -> Result<(), String> {
    let source = match &a.source.trace {
        Some(t) => Source::File(PathBuf::from(t)),
        None if a.source.gen.is_some() => {
            let mut g = gen_params(&a.source)?;
            if let Some(r) = a.requests {
                g.requests = r;
            }
            Source::Gen(g)
        }
        None => {
            let mut g = bench::default_gen(a.requests.unwrap_or(10_000_000));
            set_gen(&mut g, &a.source.gen_set)?;
            Source::Gen(g)
        }
    };
    let spec = BenchSpec {
        source,
        policies: a.mem.policies(),
        mems: a.mem.mems(&[0.3]),
        dram_share: a.dram_share,
        stream: a.stream,
    };
    println!("policy,frames,requests,requests_per_wall_s,requests_per_cpu_s,peak_rss_kib");
    for r in bench::run(&spec)? {
        let cpu = r.cpu_per_s.map_or(String::new(), |c| format!("{c:.0}"));
        let rss = r.peak_rss_kib.map_or(String::new(), |k| k.to_string());
        println!("{},{},{},{:.0},{cpu},{rss}", r.policy, r.frames, r.requests, r.wall_per_s);
    }
    Ok(())
}
