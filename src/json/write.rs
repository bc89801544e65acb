//! JSON text out, byte for byte as RedisJSON prints it: `serde_json`'s compact form (strings
//! escaped by its table, floats by `ryu` through `serde_json`), or RedisJSON's own formatter
//! when `INDENT`, `NEWLINE` or `SPACE` is given.

use super::value::{Number, Value};

/// `JSON.GET`'s formatting options; all `None` is the compact form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout<'a> {
    pub indent: Option<&'a str>,
    pub newline: Option<&'a str>,
    pub space: Option<&'a str>,
}

impl Layout<'_> {
    pub fn is_compact(&self) -> bool {
        self.indent.is_none() && self.newline.is_none() && self.space.is_none()
    }
}

/// The compact text of a value.
pub fn to_text(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    Writer::new(Layout::default(), &mut out).value(value);
    out
}

/// The text of a value with a layout.
pub fn to_text_with(value: &Value, layout: Layout<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    Writer::new(layout, &mut out).value(value);
    out
}

/// Appends a number as RedisJSON prints it (through `serde_json` 1.0.146 and `ryu` 1.0):
/// floats keep a `.0`, and exponents have no `+` (`1e-7`, `1e300`).
pub(crate) fn write_number(n: Number, out: &mut Vec<u8>) {
    match n {
        Number::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes()),
        Number::UInt(u) => out.extend_from_slice(itoa::Buffer::new().format(u).as_bytes()),
        Number::Float(f) => write_float(f, out),
    }
}

/// `ryu`'s layout of the shortest digits that read back as `f` (which Rust's own formatting
/// finds too): plain up to 16 integer digits or 5 leading zeros, else `d.ddde-x`.
fn write_float(f: f64, out: &mut Vec<u8>) {
    if f.is_sign_negative() {
        out.push(b'-');
    }
    if f == 0.0 {
        out.extend_from_slice(b"0.0");
        return;
    }
    let scientific = format!("{:e}", f.abs());
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always writes an exponent");
    let digits: Vec<u8> = mantissa.bytes().filter(|&b| b != b'.').collect();
    let exponent: isize = exponent.parse().expect("a decimal exponent");
    let length = digits.len() as isize;
    // The value is 0.DIGITS x 10^kk.
    let kk = exponent + 1;
    let k = kk - length;
    if 0 <= k && kk <= 16 {
        out.extend_from_slice(&digits);
        out.extend(std::iter::repeat_n(b'0', k as usize));
        out.extend_from_slice(b".0");
    } else if 0 < kk && kk <= 16 {
        out.extend_from_slice(&digits[..kk as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[kk as usize..]);
    } else if -5 < kk && kk <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-kk) as usize));
        out.extend_from_slice(&digits);
    } else {
        out.push(digits[0]);
        if length > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.extend_from_slice(itoa::Buffer::new().format(kk - 1).as_bytes());
    }
}

/// Appends a string quoted and escaped as `serde_json` does: `"`, `\`, and control
/// characters (`\b \f \n \r \t`, the rest as `\u00xx`); nothing else, not even `/` or DEL.
pub(crate) fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 0xf)],
                ]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Writes values, lists of values and path-keyed objects with one layout. RedisJSON's
/// formatter keeps one indentation level across everything it writes in a reply.
pub(crate) struct Writer<'a, 'o> {
    layout: Layout<'a>,
    out: &'o mut Vec<u8>,
    depth: usize,
}

impl<'a, 'o> Writer<'a, 'o> {
    pub(crate) fn new(layout: Layout<'a>, out: &'o mut Vec<u8>) -> Self {
        Writer {
            layout,
            out,
            depth: 0,
        }
    }

    /// A line break and the indentation of the current depth, where the layout asks for them.
    fn new_line(&mut self) {
        if let Some(newline) = self.layout.newline {
            self.out.extend_from_slice(newline.as_bytes());
        }
        if let Some(indent) = self.layout.indent {
            for _ in 0..self.depth {
                self.out.extend_from_slice(indent.as_bytes());
            }
        }
    }

    fn begin(&mut self, bracket: u8) {
        self.depth += 1;
        self.out.push(bracket);
    }

    /// Before each item: the comma that separates it, then its line.
    fn item(&mut self, first: bool) {
        if !first {
            self.out.push(b',');
        }
        self.new_line();
    }

    /// A non-empty container closes on a line of its own.
    fn end(&mut self, bracket: u8, had_items: bool) {
        self.depth -= 1;
        if had_items {
            self.new_line();
        }
        self.out.push(bracket);
    }

    fn key(&mut self, key: &str, first: bool) {
        self.item(first);
        write_string(key, self.out);
        self.out.push(b':');
        if let Some(space) = self.layout.space {
            self.out.extend_from_slice(space.as_bytes());
        }
    }

    pub(crate) fn value(&mut self, value: &Value) {
        match value {
            Value::Null => self.out.extend_from_slice(b"null"),
            Value::Bool(true) => self.out.extend_from_slice(b"true"),
            Value::Bool(false) => self.out.extend_from_slice(b"false"),
            Value::Number(n) => write_number(*n, self.out),
            Value::String(s) => write_string(s, self.out),
            Value::Array(a) => self.list(a.iter()),
            Value::Object(o) => {
                self.begin(b'{');
                let mut first = true;
                for (k, v) in o.iter() {
                    self.key(k, first);
                    first = false;
                    self.value(v);
                }
                self.end(b'}', !first);
            }
        }
    }

    /// A JSON array of values (JSONPath results are printed as one).
    pub(crate) fn list<'v>(&mut self, values: impl Iterator<Item = &'v Value>) {
        self.begin(b'[');
        let mut first = true;
        for v in values {
            self.item(first);
            first = false;
            self.value(v);
        }
        self.end(b']', !first);
    }

    /// A JSON object written member by member: `entry` writes each member's value.
    pub(crate) fn object<T>(
        &mut self,
        members: &[(&str, T)],
        mut entry: impl FnMut(&mut Self, &T),
    ) {
        self.begin(b'{');
        for (i, (k, v)) in members.iter().enumerate() {
            self.key(k, i == 0);
            entry(self, v);
        }
        self.end(b'}', !members.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::super::text::{parse, ParseLimits};
    use super::*;

    fn round_trip(text: &str) -> String {
        let v = parse(text, ParseLimits::command(usize::MAX)).unwrap();
        String::from_utf8(to_text(&v)).unwrap()
    }

    #[test]
    fn prints_as_serde_json_prints() {
        assert_eq!(
            round_trip(r#" { "a" : [1, 1.0, -0, 1e-7, 1e300, 25000000000.0, 2.5e-3] } "#),
            r#"{"a":[1,1.0,-0.0,1e-7,1e300,25000000000.0,0.0025]}"#
        );
        assert_eq!(
            round_trip(r#""a\/b \u0001 \u007f \"q\" \\ \t é""#),
            "\"a/b \\u0001 \u{7f} \\\"q\\\" \\\\ \\t é\""
        );
        assert_eq!(round_trip("18446744073709551615"), "18446744073709551615");
        assert_eq!(
            round_trip("[1e16,1.5e16,1.5e20,0.00001,0.000001,-9.223372036854776e18,5e-324]"),
            "[1e16,1.5e16,1.5e20,0.00001,1e-6,-9.223372036854776e18,5e-324]"
        );
    }

    #[test]
    fn lays_out_as_redisjson_formats() {
        let v = parse(
            r#"{"a":[],"b":{"c":[1,{}]}}"#,
            ParseLimits::command(usize::MAX),
        )
        .unwrap();
        let layout = Layout {
            indent: Some("  "),
            newline: Some("\n"),
            space: Some("_"),
        };
        assert_eq!(
            String::from_utf8(to_text_with(&v, layout)).unwrap(),
            "{\n  \"a\":_[],\n  \"b\":_{\n    \"c\":_[\n      1,\n      {}\n    ]\n  }\n}"
        );
        let indent_only = Layout {
            indent: Some("\t"),
            ..Layout::default()
        };
        assert_eq!(
            String::from_utf8(to_text_with(&v, indent_only)).unwrap(),
            "{\t\"a\":[],\t\"b\":{\t\t\"c\":[\t\t\t1,\t\t\t{}\t\t]\t}}"
        );
    }
}
