//! The plugin's JSON text: serde values written with two-space indentation, keys in the order
//! they are serialized (struct field order, or the order of `Fields`), numbers as the lab has
//! always read them: an `f64` in Rust's `Display` form (`1`, `0.1`, `100000000`, never an
//! exponent), non-finite as `null`; strings escape `"`, `\`, newline as `\n` and every other
//! control character as `\u00xx`.

use serde::ser::{Serialize, Serializer};
use serde_json::ser::{CharEscape, Formatter, PrettyFormatter};
use std::io::{self, Write};

/// `value` as JSON text with a final newline.
pub fn to_text<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::with_capacity(1 << 16);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, LabFormatter(PrettyFormatter::new()));
    value.serialize(&mut ser).expect("serializing to memory does not fail");
    out.push(b'\n');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// An object whose keys are known only at run time, in the vector's order.
pub struct Fields<K, V>(pub Vec<(K, V)>);

impl<K: Serialize, V: Serialize> Serialize for Fields<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// serde_json's pretty layout with the lab's numbers and escapes.
struct LabFormatter(PrettyFormatter<'static>);

impl Formatter for LabFormatter {
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        write!(w, "{value}")
    }

    fn write_char_escape<W: ?Sized + Write>(&mut self, w: &mut W, escape: CharEscape) -> io::Result<()> {
        let control = match escape {
            CharEscape::Quote => return w.write_all(b"\\\""),
            CharEscape::ReverseSolidus => return w.write_all(b"\\\\"),
            CharEscape::LineFeed => return w.write_all(b"\\n"),
            CharEscape::Solidus => return w.write_all(b"/"),
            CharEscape::Backspace => 0x08,
            CharEscape::Tab => 0x09,
            CharEscape::FormFeed => 0x0c,
            CharEscape::CarriageReturn => 0x0d,
            CharEscape::AsciiControl(byte) => byte,
        };
        write!(w, "\\u{control:04x}")
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Sample {
        b: &'static str,
        a: u64,
        list: (u64, Inner),
        empty: Fields<&'static str, u64>,
        none: Vec<u64>,
    }

    #[derive(serde::Serialize)]
    struct Inner {
        f: f64,
    }

    #[test]
    fn nested_output_is_indented_and_ordered() {
        let text =
            to_text(&Sample { b: "x\"y", a: 1, list: (2, Inner { f: 0.5 }), empty: Fields(vec![]), none: vec![] });
        let expected =
            "{\n  \"b\": \"x\\\"y\",\n  \"a\": 1,\n  \"list\": [\n    2,\n    {\n      \"f\": 0.5\n    }\n  ],\n  \
                        \"empty\": {},\n  \"none\": []\n}\n";
        assert_eq!(text, expected);
    }

    #[test]
    fn numbers_and_escapes_are_the_labs() {
        let reals = [1.0, 0.1, 1e8, 1e21, 1.5e-7, -0.0, f64::NAN, f64::INFINITY, 2.0f64.powi(70)];
        let text = to_text(&reals[..]);
        let compact: String = text.split_whitespace().collect();
        assert_eq!(compact, "[1,0.1,100000000,1000000000000000000000,0.00000015,-0,null,null,1180591620717411300000]");
        assert_eq!(to_text(&[u64::MAX]).split_whitespace().collect::<String>(), "[18446744073709551615]");
        assert_eq!(to_text("a\tb\nc\\d/\u{1}\r\u{7f}é"), "\"a\\u0009b\\nc\\\\d/\\u0001\\u000d\u{7f}é\"\n");
    }

    #[test]
    fn fields_keep_their_order() {
        let text = to_text(&Fields(vec![("z", 1.5), ("a", 2.0)]));
        assert_eq!(text, "{\n  \"z\": 1.5,\n  \"a\": 2\n}\n");
    }
}
