//! `manylab-machine PRESET [--vcpus N] [--set KEY=VALUE]...`: prints the machine a preset
//! describes (with the plugin's `set.` overrides) as JSON, for the lab's gem5 tier.
//! It compiles the plugin's own parameter and topology modules, without QEMU's API.

#[allow(dead_code)]
#[path = "../json.rs"]
mod json;
#[allow(dead_code)]
#[path = "../memory.rs"]
mod memory;
#[allow(dead_code)]
#[path = "../param_keys.rs"]
mod param_keys;
#[allow(dead_code)]
#[path = "../params.rs"]
mod params;
#[allow(dead_code)]
#[path = "../presets.rs"]
mod presets;
#[allow(dead_code)]
#[path = "../topology.rs"]
mod topology;

#[path = "../describe.rs"]
mod describe;

use std::process::ExitCode;

fn run(args: &[String]) -> Result<String, String> {
    let usage = "usage: manylab-machine PRESET [--vcpus N] [--set KEY=VALUE]...";
    let name = args.first().ok_or(usage)?;
    let mut p = presets::preset(name)?;
    let mut vcpus = 1usize;
    let mut rest = args[1..].iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or(usage)?;
        match flag.as_str() {
            "--vcpus" => vcpus = value.parse().map_err(|_| format!("--vcpus: bad count '{value}'"))?,
            "--set" => {
                let (key, v) = value.split_once('=').ok_or(format!("--set: expected KEY=VALUE, got '{value}'"))?;
                p.set(key, v)?;
            }
            _ => return Err(usage.into()),
        }
    }
    describe::machine_json(&p, vcpus)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("manylab-machine: {e}");
            ExitCode::from(2)
        }
    }
}
