//! The JSON-lines output: one `serde_json` line per serializable value.
//!
//! Floats are written as Rust's `Display` writes them (`1`, `0.5`, `0.0000001`), not in
//! `serde_json`'s shortest form (`1.0`, `1e-7`): the Python side writes them into results.csv
//! as it reads them, and an integral value read as `1.0` instead of `1` would change the table.
//! Non-finite floats are `null`, as `serde_json` writes them.

use std::io;

use serde::Serialize;
use serde_json::ser::{Formatter, Serializer};

/// `serde_json`'s compact output with floats in `Display` form.
struct DisplayFloats;

impl Formatter for DisplayFloats {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        write!(writer, "{value}")
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        write!(writer, "{value}")
    }
}

/// `value` as one line of JSON (no trailing newline).
pub fn line<T: Serialize + ?Sized>(value: &T) -> String {
    let mut buf = Vec::with_capacity(256);
    let mut ser = Serializer::with_formatter(&mut buf, DisplayFloats);
    // Serializing these plain structs to a Vec cannot fail: no maps with non-string keys, no I/O.
    value.serialize(&mut ser).expect("JSON line");
    String::from_utf8(buf).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Example<'a> {
        a: &'a str,
        n: u64,
        f: f64,
        nan: f64,
        v: Vec<u64>,
    }

    #[test]
    fn object() {
        let s = line(&Example { a: "x\"y", n: 3, f: 0.5, nan: f64::NAN, v: vec![1, 2] });
        assert_eq!(s, r#"{"a":"x\"y","n":3,"f":0.5,"nan":null,"v":[1,2]}"#);
    }

    #[test]
    fn floats_keep_the_display_form() {
        assert_eq!(line(&[1.0, 1e-7, 1e20, f64::INFINITY]), "[1,0.0000001,100000000000000000000,null]");
        assert_eq!(line(&[Some(2.5), None]), "[2.5,null]");
    }
}
