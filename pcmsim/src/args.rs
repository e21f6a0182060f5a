//! A tiny command-line parser: `--key value` options (repeatable), `--flag`s and positionals.

use std::collections::HashMap;

pub struct Args {
    opts: HashMap<String, Vec<String>>,
    pub positional: Vec<String>,
}

impl Args {
    /// `flags` take no value; every other `--name` takes one. Unknown names are errors.
    pub fn parse(argv: &[String], valued: &[&str], flags: &[&str]) -> Result<Args, String> {
        let mut opts: HashMap<String, Vec<String>> = HashMap::new();
        let mut positional = Vec::new();
        let mut i = 0;
        while i < argv.len() {
            let a = &argv[i];
            if let Some(name) = a.strip_prefix("--") {
                let (name, inline) = match name.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (name, None),
                };
                if flags.contains(&name) {
                    opts.entry(name.into()).or_default().push(String::new());
                } else if valued.contains(&name) {
                    let v = match inline {
                        Some(v) => v,
                        None => {
                            i += 1;
                            argv.get(i).cloned().ok_or_else(|| format!("--{name} needs a value"))?
                        }
                    };
                    opts.entry(name.into()).or_default().push(v);
                } else {
                    return Err(format!("unknown option --{name}"));
                }
            } else {
                positional.push(a.clone());
            }
            i += 1;
        }
        Ok(Args { opts, positional })
    }

    pub fn has(&self, k: &str) -> bool {
        self.opts.contains_key(k)
    }

    pub fn one(&self, k: &str) -> Option<&str> {
        self.opts.get(k).and_then(|v| v.last()).map(|s| s.as_str())
    }

    pub fn all(&self, k: &str) -> Vec<String> {
        self.opts.get(k).cloned().unwrap_or_default()
    }

    /// Comma-separated list, default if absent.
    pub fn list(&self, k: &str, default: &str) -> Vec<String> {
        self.one(k)
            .unwrap_or(default)
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    pub fn f64_list(&self, k: &str, default: &str) -> Result<Vec<f64>, String> {
        self.list(k, default)
            .iter()
            .map(|s| s.parse::<f64>().map_err(|_| format!("--{k}: '{s}' is not a number")))
            .collect()
    }

    pub fn parse_or<T: std::str::FromStr>(&self, k: &str, default: T) -> Result<T, String> {
        match self.one(k) {
            None => Ok(default),
            Some(s) => s.parse().map_err(|_| format!("--{k}: bad value '{s}'")),
        }
    }
}
