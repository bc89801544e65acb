//! Replies as Redis encodes them under RESP2 and RESP3, and Redis's strict readings of numeric
//! arguments: just what the transcripts' replies and arguments need.

use crate::filter::reply_double_text;

#[derive(Debug, Clone)]
pub(super) enum Reply {
    Status(&'static str),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Double(f64),
    /// An integer 0/1 under RESP2.
    Bool(bool),
    Array(Vec<Reply>),
    /// A flat array under RESP2.
    Map(Vec<(&'static str, Reply)>),
    Error(String),
}

impl Reply {
    pub(super) fn render(&self, resp3: bool, out: &mut Vec<u8>) {
        match self {
            Reply::Status(text) => out.extend_from_slice(format!("+{text}\r\n").as_bytes()),
            Reply::Int(n) => out.extend_from_slice(format!(":{n}\r\n").as_bytes()),
            Reply::Bulk(bytes) => {
                out.extend_from_slice(format!("${}\r\n", bytes.len()).as_bytes());
                out.extend_from_slice(bytes);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Null if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::Null => out.extend_from_slice(b"$-1\r\n"),
            Reply::Double(value) => {
                let text = reply_double_text(*value);
                if resp3 {
                    out.extend_from_slice(format!(",{text}\r\n").as_bytes());
                } else {
                    Reply::Bulk(text.into_bytes()).render(resp3, out);
                }
            }
            Reply::Bool(value) if resp3 => {
                out.extend_from_slice(if *value { b"#t\r\n" } else { b"#f\r\n" })
            }
            Reply::Bool(value) => Reply::Int(i64::from(*value)).render(resp3, out),
            Reply::Array(items) => {
                out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
                for item in items {
                    item.render(resp3, out);
                }
            }
            Reply::Map(pairs) => {
                if resp3 {
                    out.extend_from_slice(format!("%{}\r\n", pairs.len()).as_bytes());
                } else {
                    out.extend_from_slice(format!("*{}\r\n", pairs.len() * 2).as_bytes());
                }
                for (name, value) in pairs {
                    Reply::Status(name).render(resp3, out);
                    value.render(resp3, out);
                }
            }
            Reply::Error(text) => out.extend_from_slice(format!("-{text}\r\n").as_bytes()),
        }
    }
}

/// Redis's `string2ll`: an optional minus, digits without a leading zero, in range.
pub(super) fn integer(arg: &[u8]) -> Option<i64> {
    if arg == b"0" {
        return Some(0);
    }
    let digits = arg.strip_prefix(b"-").unwrap_or(arg);
    if !matches!(digits.first(), Some(b'1'..=b'9')) || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(arg).ok()?.parse().ok()
}

/// Redis's `string2d` (`strtod` over the whole argument): no leading space, no NaN, nothing
/// that overflows to infinity or underflows to 0. Hexadecimal as `strtod` reads it.
pub(super) fn double(arg: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let (negative, unsigned) = match text.as_bytes()[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = unsigned.to_ascii_lowercase();
    let value = if lower == "inf" || lower == "infinity" {
        f64::INFINITY
    } else if let Some(hex) = lower.strip_prefix("0x") {
        hexadecimal(hex)?
    } else {
        let starts_well = unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.');
        if !starts_well
            || !unsigned
                .bytes()
                .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return None;
        }
        let value: f64 = unsigned.parse().ok()?;
        let mantissa = unsigned.split(['e', 'E']).next().unwrap_or("");
        let nonzero = mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c));
        if value.is_infinite() || (value == 0.0 && nonzero) {
            return None;
        }
        value
    };
    Some(if negative { -value } else { value })
}

/// A hexadecimal number without its `0x`: digits, an optional point and an optional binary
/// exponent.
fn hexadecimal(text: &str) -> Option<f64> {
    let (digits, exponent) = match text.split_once('p') {
        Some((digits, exponent)) => (digits, exponent.parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut value = 0.0;
    for c in whole.chars() {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in fraction.chars() {
        value += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(value * 2f64.powi(exponent))
}

#[test]
fn reads_numbers_as_redis() {
    assert_eq!(integer(b"10"), Some(10));
    assert_eq!(integer(b"-3"), Some(-3));
    for bad in [
        &b"007"[..],
        b"+5",
        b"1e3",
        b"0x10",
        b"-0",
        b"",
        b"9223372036854775808",
    ] {
        assert_eq!(integer(bad), None, "{bad:?}");
    }
    assert_eq!(double(b"0x10"), Some(16.0));
    assert_eq!(double(b"+7"), Some(7.0));
    assert_eq!(double(b"-2.5e-3"), Some(-0.0025));
    assert_eq!(double(b"5e-324"), Some(5e-324));
    assert_eq!(double(b"-inf"), Some(f64::NEG_INFINITY));
    for bad in [
        &b"nan"[..],
        b"1e400",
        b"1e-400",
        b"1,5",
        b"--1",
        b" 1",
        b"x",
    ] {
        assert_eq!(double(bad), None, "{bad:?}");
    }
}
