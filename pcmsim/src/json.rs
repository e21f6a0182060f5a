//! A minimal JSON object writer for the JSON-lines output (no dependencies).

use std::fmt::Write;

pub struct Obj {
    buf: String,
    first: bool,
}

pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

pub fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".into()
    }
}

impl Default for Obj {
    fn default() -> Self {
        Obj::new()
    }
}

impl Obj {
    pub fn new() -> Obj {
        Obj { buf: String::from("{"), first: true }
    }

    fn key(&mut self, k: &str) {
        if !self.first {
            self.buf.push(',');
        }
        self.first = false;
        self.buf.push_str(&escape(k));
        self.buf.push(':');
    }

    pub fn raw(&mut self, k: &str, v: &str) -> &mut Obj {
        self.key(k);
        self.buf.push_str(v);
        self
    }

    pub fn str(&mut self, k: &str, v: &str) -> &mut Obj {
        self.raw(k, &escape(v))
    }

    pub fn f(&mut self, k: &str, v: f64) -> &mut Obj {
        self.raw(k, &num(v))
    }

    pub fn opt_f(&mut self, k: &str, v: Option<f64>) -> &mut Obj {
        match v {
            Some(x) => self.f(k, x),
            None => self.raw(k, "null"),
        }
    }

    pub fn u(&mut self, k: &str, v: u64) -> &mut Obj {
        self.raw(k, &v.to_string())
    }

    pub fn b(&mut self, k: &str, v: bool) -> &mut Obj {
        self.raw(k, if v { "true" } else { "false" })
    }

    pub fn u_arr(&mut self, k: &str, v: &[u64]) -> &mut Obj {
        let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
        self.raw(k, &format!("[{}]", items.join(",")))
    }

    pub fn f_arr(&mut self, k: &str, v: &[f64]) -> &mut Obj {
        let items: Vec<String> = v.iter().map(|x| num(*x)).collect();
        self.raw(k, &format!("[{}]", items.join(",")))
    }

    pub fn finish(&mut self) -> String {
        let mut s = std::mem::take(&mut self.buf);
        s.push('}');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object() {
        let s =
            Obj::new().str("a", "x\"y").u("n", 3).f("f", 0.5).f("nan", f64::NAN).u_arr("v", &[1, 2]).finish();
        assert_eq!(s, r#"{"a":"x\"y","n":3,"f":0.5,"nan":null,"v":[1,2]}"#);
    }
}
