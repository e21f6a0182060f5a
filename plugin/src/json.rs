//! A minimal JSON writer: keys come out in the order they are written, so the output order
//! is fixed by the code (deterministic, diff-friendly).

pub struct JsonWriter {
    out: String,
    /// One entry per open container: has it received an element yet?
    open: Vec<bool>,
}

impl Default for JsonWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonWriter {
    pub fn new() -> Self {
        JsonWriter { out: String::with_capacity(1 << 16), open: Vec::new() }
    }

    pub fn finish(mut self) -> String {
        self.out.push('\n');
        self.out
    }

    fn separator(&mut self) {
        if let Some(has_items) = self.open.last_mut() {
            if *has_items {
                self.out.push(',');
            }
            *has_items = true;
            self.out.push('\n');
            for _ in 0..self.open.len() {
                self.out.push_str("  ");
            }
        }
    }

    fn key(&mut self, key: &str) {
        self.separator();
        push_string(&mut self.out, key);
        self.out.push_str(": ");
    }

    fn close(&mut self, bracket: char) {
        let had_items = self.open.pop().unwrap_or(false);
        if had_items {
            self.out.push('\n');
            for _ in 0..self.open.len() {
                self.out.push_str("  ");
            }
        }
        self.out.push(bracket);
    }

    pub fn begin_object(&mut self) {
        self.out.push('{');
        self.open.push(false);
    }

    pub fn end_object(&mut self) {
        self.close('}');
    }

    pub fn begin_array(&mut self) {
        self.out.push('[');
        self.open.push(false);
    }

    pub fn end_array(&mut self) {
        self.close(']');
    }

    /// Writes a key whose value the next `begin_object`/`begin_array` opens.
    pub fn field_key(&mut self, key: &str) {
        self.key(key);
    }

    pub fn field_object(&mut self, key: &str) {
        self.key(key);
        self.begin_object();
    }

    pub fn field_array(&mut self, key: &str) {
        self.key(key);
        self.begin_array();
    }

    pub fn element_object(&mut self) {
        self.separator();
        self.begin_object();
    }

    pub fn element_u64(&mut self, v: u64) {
        self.separator();
        self.out.push_str(&v.to_string());
    }

    pub fn field_u64(&mut self, key: &str, v: u64) {
        self.key(key);
        self.out.push_str(&v.to_string());
    }

    pub fn field_f64(&mut self, key: &str, v: f64) {
        self.key(key);
        push_f64(&mut self.out, v);
    }

    pub fn field_str(&mut self, key: &str, v: &str) {
        self.key(key);
        push_string(&mut self.out, v);
    }

    pub fn field_bool(&mut self, key: &str, v: bool) {
        self.key(key);
        self.out.push_str(if v { "true" } else { "false" });
    }
}

fn push_f64(out: &mut String, v: f64) {
    if v.is_finite() {
        out.push_str(&format!("{v}"));
    } else {
        out.push_str("null");
    }
}

fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_output_is_valid_and_ordered() {
        let mut w = JsonWriter::new();
        w.begin_object();
        w.field_str("b", "x\"y");
        w.field_u64("a", 1);
        w.field_array("list");
        w.element_u64(2);
        w.element_object();
        w.field_f64("f", 0.5);
        w.end_object();
        w.end_array();
        w.field_object("empty");
        w.end_object();
        w.end_object();
        let text = w.finish();
        let compact: String = text.split_whitespace().collect();
        assert_eq!(compact, r#"{"b":"x\"y","a":1,"list":[2,{"f":0.5}],"empty":{}}"#);
    }
}
