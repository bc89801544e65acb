//! A script's replies both ways: the command encoder's bytes read back into the reply tree the
//! Lua runtime converts, and a script's result written in the caller's protocol.

use crate::lua;
use crate::protocol::Reply;

/// One RESP2/RESP3 reply read back from `bytes` at `at` (the encoder's own output, so well
/// formed); None at its end.
pub(super) fn parse_reply(bytes: &[u8], at: &mut usize) -> Option<lua::Reply> {
    let kind = *bytes.get(*at)?;
    let end = *at + bytes[*at..].windows(2).position(|w| w == b"\r\n")?;
    let line = &bytes[*at + 1..end];
    *at = end + 2;
    let number = || std::str::from_utf8(line).ok()?.parse::<i64>().ok();
    let blob = |len: i64, at: &mut usize| {
        let len = usize::try_from(len).ok()?;
        let data = bytes.get(*at..*at + len)?.to_vec();
        *at += len + 2;
        Some(data)
    };
    let items = |n: usize, at: &mut usize| -> Option<Vec<lua::Reply>> {
        let mut out = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            out.push(parse_reply(bytes, at)?);
        }
        Some(out)
    };
    Some(match kind {
        b'+' => lua::Reply::Status(line.to_vec()),
        b'-' => lua::Reply::Error(line.to_vec()),
        b':' => lua::Reply::Integer(number()?),
        b'$' => match number()? {
            n if n < 0 => lua::Reply::Null,
            n => lua::Reply::Bulk(blob(n, at)?),
        },
        b'=' => {
            let text = blob(number()?, at)?;
            let (format, text) = text.split_at(4.min(text.len()));
            let mut f = [b' '; 3];
            f.iter_mut().zip(format).for_each(|(slot, b)| *slot = *b);
            lua::Reply::Verbatim {
                format: f,
                text: text.to_vec(),
            }
        }
        b'*' | b'>' => match number()? {
            n if n < 0 => lua::Reply::Null,
            n => lua::Reply::Array(items(n as usize, at)?),
        },
        b'~' => lua::Reply::Set(items(number()? as usize, at)?),
        b'%' => {
            let flat = items(number()? as usize * 2, at)?;
            let mut pairs = Vec::with_capacity(flat.len() / 2);
            let mut flat = flat.into_iter();
            while let (Some(k), Some(v)) = (flat.next(), flat.next()) {
                pairs.push((k, v));
            }
            lua::Reply::Map(pairs)
        }
        b',' => lua::Reply::Double(match line {
            b"inf" => f64::INFINITY,
            b"-inf" => f64::NEG_INFINITY,
            _ => std::str::from_utf8(line).ok()?.parse().ok()?,
        }),
        b'#' => lua::Reply::Bool(line == b"t"),
        b'_' => lua::Reply::Null,
        b'(' => lua::Reply::BigNumber(line.to_vec()),
        _ => return None,
    })
}

/// A script's reply, written in the caller's protocol.
pub(super) fn write_reply(out: &mut Reply, reply: &lua::Reply) {
    match reply {
        lua::Reply::Status(text) => out.simple(&String::from_utf8_lossy(text)),
        lua::Reply::Error(line) => out.error(&String::from_utf8_lossy(line)),
        lua::Reply::Integer(n) => out.int(*n),
        lua::Reply::Bulk(data) => out.bulk(data),
        lua::Reply::Null => out.null(),
        lua::Reply::Array(items) => {
            out.array(items.len());
            items.iter().for_each(|item| write_reply(out, item));
        }
        lua::Reply::Set(items) => {
            out.set(items.len());
            items.iter().for_each(|item| write_reply(out, item));
        }
        lua::Reply::Map(pairs) => {
            out.map(pairs.len());
            for (k, v) in pairs {
                write_reply(out, k);
                write_reply(out, v);
            }
        }
        lua::Reply::Double(d) => out.double(*d),
        lua::Reply::Bool(b) => out.boolean(*b),
        lua::Reply::BigNumber(digits) => out.big_number(digits),
        lua::Reply::Verbatim { text, .. } => out.verbatim(&String::from_utf8_lossy(text)),
    }
}
