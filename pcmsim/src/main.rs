//! `manylab-pcmsim`: command-line front of the hybrid-memory policy simulator.

use pcmsim::args::Args;
use pcmsim::bench::{self, BenchSpec};
use pcmsim::config::Models;
use pcmsim::gen::{GenParams, Generator};
use pcmsim::policy::{PolicyParams, POLICY_NAMES};
use pcmsim::sim::MemSpec;
use pcmsim::sweep::{self, footprint, Source, SweepSpec};
use pcmsim::trace::{self, binary, csv, TraceInfo};
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
           models:  --time-model paper|paper-evict --energy-model table1|table1-static
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

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = argv.first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest = &argv[1..];
    let r = match cmd.as_str() {
        "run" => cmd_run(rest),
        "gen" => cmd_gen(rest),
        "convert" => cmd_convert(rest),
        "info" => cmd_info(rest),
        "presets" => cmd_presets(rest),
        "bench" => cmd_bench(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command '{other}'\n{USAGE}")),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("manylab-pcmsim: {e}");
            ExitCode::FAILURE
        }
    }
}

fn gen_params(a: &Args) -> Result<GenParams, String> {
    let mut g = GenParams::preset(a.one("gen").unwrap_or("trace1"))?;
    for kv in a.all("gen-set") {
        let (k, v) = kv.split_once('=').ok_or_else(|| format!("--gen-set '{kv}': expected key=value"))?;
        g.set(k.trim(), v.trim())?;
    }
    Ok(g)
}

fn source(a: &Args) -> Result<Source, String> {
    match (a.one("trace"), a.has("gen")) {
        (Some(t), false) => Ok(Source::File(PathBuf::from(t))),
        (None, true) => Ok(Source::Gen(gen_params(a)?)),
        _ => Err("give exactly one of --trace FILE or --gen trace1|trace2".into()),
    }
}

fn models(a: &Args) -> Result<Models, String> {
    let mut m = match a.one("model-file") {
        Some(f) => {
            let text = std::fs::read_to_string(f).map_err(|e| format!("cannot read {f}: {e}"))?;
            Models::from_toml(&text)?
        }
        None => Models::from_presets(
            a.one("time-model").unwrap_or("paper"),
            a.one("energy-model").unwrap_or("table1"),
        )?,
    };
    if a.has("model-file") && (a.has("time-model") || a.has("energy-model")) {
        return Err("--model-file names its presets; do not combine with --time-model/--energy-model".into());
    }
    for s in a.all("set") {
        m.set(&s)?;
    }
    Ok(m)
}

fn out_writer(a: &Args) -> Result<Box<dyn Write>, String> {
    Ok(match a.one("out") {
        Some(p) => Box::new(BufWriter::new(File::create(p).map_err(|e| format!("cannot create {p}: {e}"))?)),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    })
}

const RUN_OPTS: [&str; 17] = [
    "trace",
    "gen",
    "gen-set",
    "policies",
    "mem",
    "mem-pages",
    "dram-share",
    "time-model",
    "energy-model",
    "model-file",
    "set",
    "kin",
    "kout",
    "dwf-max-freq",
    "wear-bins",
    "out",
    "requests",
];

fn cmd_run(argv: &[String]) -> Result<(), String> {
    let a = Args::parse(argv, &RUN_OPTS, &[])?;
    let src = source(&a)?;
    let mut mems: Vec<MemSpec> = Vec::new();
    if a.has("mem-pages") {
        for s in a.list("mem-pages", "") {
            mems.push(MemSpec::Pages(s.parse().map_err(|_| format!("--mem-pages: bad '{s}'"))?));
        }
    }
    if a.has("mem") || mems.is_empty() {
        mems.extend(
            a.f64_list("mem", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0")?.into_iter().map(MemSpec::Frac),
        );
    }
    let spec = SweepSpec {
        policies: a.list("policies", &POLICY_NAMES.join(",")),
        mems,
        dram_shares: a.f64_list("dram-share", "0.05")?,
        params: PolicyParams {
            kin: a.parse_or("kin", 0.25)?,
            kout: a.parse_or("kout", 0.5)?,
            dwf_max_freq: a.parse_or("dwf-max-freq", 3)?,
        },
        models: models(&a)?,
        wear_bins: a.parse_or("wear-bins", 10)?,
    };
    let mut out = out_writer(&a)?;
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

fn cmd_gen(argv: &[String]) -> Result<(), String> {
    let a = Args::parse(argv, &["gen", "gen-set", "out"], &[])?;
    let out = a.one("out").ok_or("gen needs --out FILE")?;
    let g = gen_params(&a)?;
    let info = TraceInfo { time_ns: true, ..TraceInfo::default() };
    let n = write_trace(Path::new(out), &info, Generator::new(g)?.map(Ok))?;
    eprintln!("wrote {n} records to {out}");
    Ok(())
}

fn cmd_convert(argv: &[String]) -> Result<(), String> {
    let a = Args::parse(argv, &[], &[])?;
    let [inp, out] = a.positional.as_slice() else {
        return Err("convert needs IN OUT".into());
    };
    let (info, it) = trace::open(Path::new(inp)).map_err(|e| format!("{inp}: {e}"))?;
    let inp2 = inp.clone();
    let n = write_trace(Path::new(out), &info, it.map(move |r| r.map_err(|e| format!("{inp2}: {e}"))))?;
    eprintln!("wrote {n} records to {out}");
    Ok(())
}

fn cmd_info(argv: &[String]) -> Result<(), String> {
    let a = Args::parse(argv, &[], &[])?;
    let [inp] = a.positional.as_slice() else {
        return Err("info needs TRACE".into());
    };
    let src = Source::File(PathBuf::from(inp));
    let fp = footprint(&src)?;
    let mut st = pcmsim::sim::TraceStats::default();
    let info = src.for_each(|r| st.add(r))?;
    st.time_ns = info.time_ns;
    let mut o = pcmsim::json::Obj::new();
    o.str("trace", inp)
        .u("requests", st.requests)
        .u("fg_requests", st.fg_requests)
        .u("writes", st.writes)
        .u("footprint", fp)
        .b("time_ns", info.time_ns)
        .b("physical", info.physical)
        .u("page_bytes", info.page_bytes as u64)
        .opt_f("duration_s", st.duration_s());
    println!("{}", o.finish());
    Ok(())
}

fn cmd_presets(argv: &[String]) -> Result<(), String> {
    let a = Args::parse(argv, &["time-model", "energy-model", "set"], &[])?;
    print!("{}", models(&a)?.to_toml());
    Ok(())
}

fn cmd_bench(argv: &[String]) -> Result<(), String> {
    let a = Args::parse(
        argv,
        &["requests", "policies", "mem", "mem-pages", "dram-share", "trace", "gen", "gen-set"],
        &["stream"],
    )?;
    let source = match a.one("trace") {
        Some(t) => Source::File(PathBuf::from(t)),
        None if a.has("gen") => {
            let mut g = gen_params(&a)?;
            if let Some(r) = a.one("requests") {
                g.requests = r.parse().map_err(|_| format!("--requests: bad value '{r}'"))?;
            }
            Source::Gen(g)
        }
        None => {
            let mut g = bench::default_gen(a.parse_or("requests", 10_000_000u64)?);
            for kv in a.all("gen-set") {
                let (k, v) =
                    kv.split_once('=').ok_or_else(|| format!("--gen-set '{kv}': expected key=value"))?;
                g.set(k.trim(), v.trim())?;
            }
            Source::Gen(g)
        }
    };
    let mut mems: Vec<MemSpec> = Vec::new();
    for s in a.list("mem-pages", "") {
        mems.push(MemSpec::Pages(s.parse().map_err(|_| format!("--mem-pages: bad '{s}'"))?));
    }
    if a.has("mem") || mems.is_empty() {
        mems.extend(a.f64_list("mem", "0.3")?.into_iter().map(MemSpec::Frac));
    }
    let spec = BenchSpec {
        source,
        policies: a.list("policies", &POLICY_NAMES.join(",")),
        mems,
        dram_share: a.parse_or("dram-share", 0.05)?,
        stream: a.has("stream"),
    };
    println!("policy,frames,requests,requests_per_wall_s,requests_per_cpu_s,peak_rss_kib");
    for r in bench::run(&spec)? {
        let cpu = r.cpu_per_s.map_or(String::new(), |c| format!("{c:.0}"));
        let rss = r.peak_rss_kib.map_or(String::new(), |k| k.to_string());
        println!("{},{},{},{:.0},{cpu},{rss}", r.policy, r.frames, r.requests, r.wall_per_s);
    }
    Ok(())
}
