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

/// The model reads doubles as the commands do (`RedisModule_StringToDouble`).
pub(super) use crate::filter::module_double as double;

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
}
