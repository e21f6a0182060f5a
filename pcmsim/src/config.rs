//! Model configuration: built-in presets, a small TOML subset file, and `section.key=value`
//! overrides. The file form:
//!
//! ```toml
//! [time]
//! preset = "paper"      # optional, default "paper"
//! pcm_write = 50
//! [energy]
//! preset = "table1"     # optional, default "table1"
//! pcm_write_nj_per_bit = 1.0
//! ```

use crate::model::{EnergyModel, TimeModel};

#[derive(Clone, Debug, PartialEq)]
pub struct Models {
    pub time: TimeModel,
    pub energy: EnergyModel,
}

impl Default for Models {
    fn default() -> Self {
        Models { time: TimeModel::paper(), energy: EnergyModel::table1() }
    }
}

fn parse_num(v: &str, what: &str) -> Result<f64, String> {
    v.trim().parse::<f64>().map_err(|_| format!("{what}: '{}' is not a number", v.trim()))
}

impl Models {
    pub fn from_presets(time: &str, energy: &str) -> Result<Models, String> {
        Ok(Models { time: TimeModel::preset(time)?, energy: EnergyModel::preset(energy)? })
    }

    /// Apply `time.<key>=<v>` or `energy.<key>=<v>`.
    pub fn set(&mut self, assignment: &str) -> Result<(), String> {
        let (k, v) = assignment
            .split_once('=')
            .ok_or_else(|| format!("--set '{assignment}': expected section.key=value"))?;
        let (section, key) = k
            .trim()
            .split_once('.')
            .ok_or_else(|| format!("--set '{assignment}': key must be time.<key> or energy.<key>"))?;
        let x = parse_num(v, assignment)?;
        match section {
            "time" => self.time.set(key, x),
            "energy" => self.energy.set(key, x),
            _ => Err(format!("--set '{assignment}': unknown section '{section}' (time, energy)")),
        }
    }

    /// Parse the TOML subset described in the module docs.
    pub fn from_toml(text: &str) -> Result<Models, String> {
        let mut m = Models::default();
        let mut section = String::new();
        let mut pending: Vec<(String, String, usize)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let lineno = i + 1;
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if let Some(s) = line.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                section = s.trim().to_string();
                if section != "time" && section != "energy" {
                    return Err(format!("model file line {lineno}: unknown section [{section}]"));
                }
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("model file line {lineno}: expected key = value"))?;
            let (k, v) = (k.trim(), v.trim());
            if section.is_empty() {
                return Err(format!("model file line {lineno}: key outside [time] / [energy]"));
            }
            if k == "preset" {
                let name = v.trim_matches('"');
                match section.as_str() {
                    "time" => m.time = TimeModel::preset(name)?,
                    _ => m.energy = EnergyModel::preset(name)?,
                }
            } else {
                pending.push((section.clone(), format!("{k}={v}"), lineno));
            }
        }
        // Presets first, then keys, whatever their order in the file.
        for (section, kv, lineno) in pending {
            m.set(&format!("{section}.{kv}")).map_err(|e| format!("model file line {lineno}: {e}"))?;
        }
        Ok(m)
    }

    pub fn to_toml(&self) -> String {
        let mut s = format!("[time]\npreset = \"{}\"\n", self.time.name);
        for k in TimeModel::keys() {
            s.push_str(&format!("{k} = {}\n", self.time.get(k).unwrap_or(f64::NAN)));
        }
        s.push_str(&format!("\n[energy]\npreset = \"{}\"\n", self.energy.name));
        for k in EnergyModel::keys() {
            s.push_str(&format!("{k} = {}\n", self.energy.get(k).unwrap_or(f64::NAN)));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_round_trip_and_overrides() {
        let mut m = Models::default();
        m.set("time.pcm_write=60").unwrap();
        m.set("energy.pcm_write_nj_per_bit=0.5").unwrap();
        let back = Models::from_toml(&m.to_toml()).unwrap();
        assert_eq!(back, m);
        assert!(m.set("time.nope=1").is_err());
        assert!(m.set("cpu.x=1").is_err());
        let e = Models::from_toml("[time]\npcm_write = fast\n").unwrap_err();
        assert!(e.starts_with("model file line 2:"), "{e}");
    }
}
