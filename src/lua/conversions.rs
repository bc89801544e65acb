//! Redis's conversions between replies and Lua values (`redisProtocolToLuaType_*` and
//! `luaReplyToRedisReply` in Redis 7.4's script_lua.c), both ways, RESP2 and RESP3.

use mlua::{Lua, Table, Value};

use super::number_format::{c_double_to_i64, d2string, format_g};
use super::reply_tree::Reply;

/// Redis's `luaPushErrorBuff` text: `-CODE msg` keeps its code, anything else gets `ERR`; the
/// message loses the newlines at its ends.
pub(crate) fn error_text(raw: &[u8]) -> Vec<u8> {
    let (code, msg): (&[u8], &[u8]) = match raw.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(space) => (&rest[..space], &rest[space + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", raw),
    };
    let msg = trim_newlines(msg);
    let mut out = Vec::with_capacity(code.len() + 1 + msg.len());
    out.extend_from_slice(code);
    out.push(b' ');
    out.extend_from_slice(msg);
    out
}

fn trim_newlines(mut s: &[u8]) -> &[u8] {
    while let [b'\r' | b'\n', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b'\r' | b'\n'] = s {
        s = rest;
    }
    s
}

/// An error table `{err = text}` (as `luaPushError` builds it), flagged as already counted in
/// the error statistics when it carries a command's own error reply.
pub(crate) fn error_table(lua: &Lua, raw: &[u8], counted: bool) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(error_text(raw))?)?;
    if counted {
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(t)
}

/// A command's reply as the script sees it, under the protocol the script chose
/// (`redis.setresp`). Replies of RESP3 types under RESP2 are first turned into what a RESP2
/// client would have been sent.
pub(crate) fn reply_to_lua(lua: &Lua, reply: &Reply, resp: u8) -> mlua::Result<Value> {
    let bytes = |b: &[u8]| lua.create_string(b).map(Value::String);
    let single = |key: &str, v: Value| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        t.raw_set(key, v)?;
        Ok(Value::Table(t))
    };
    Ok(match reply {
        Reply::Status(s) => single("ok", bytes(s)?)?,
        Reply::Error(e) => {
            let mut raw = Vec::with_capacity(e.len() + 1);
            raw.push(b'-');
            raw.extend_from_slice(e);
            Value::Table(error_table(lua, &raw, true)?)
        }
        Reply::Integer(i) => Value::Number(*i as f64),
        Reply::Bulk(b) => bytes(b)?,
        Reply::Null if resp == 2 => Value::Boolean(false),
        Reply::Null => Value::Nil,
        Reply::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, reply_to_lua(lua, item, resp)?)?;
            }
            Value::Table(t)
        }
        Reply::Map(pairs) if resp == 2 => {
            let t = lua.create_table_with_capacity(pairs.len() * 2, 0)?;
            for (i, (k, v)) in pairs.iter().enumerate() {
                t.raw_set(2 * i + 1, reply_to_lua(lua, k, resp)?)?;
                t.raw_set(2 * i + 2, reply_to_lua(lua, v, resp)?)?;
            }
            Value::Table(t)
        }
        Reply::Map(pairs) => {
            let inner = lua.create_table_with_capacity(0, pairs.len())?;
            for (k, v) in pairs {
                inner.raw_set(reply_to_lua(lua, k, resp)?, reply_to_lua(lua, v, resp)?)?;
            }
            single("map", Value::Table(inner))?
        }
        Reply::Set(items) if resp == 2 => reply_to_lua(lua, &Reply::Array(items.clone()), resp)?,
        Reply::Set(items) => {
            let inner = lua.create_table_with_capacity(0, items.len())?;
            for item in items {
                inner.raw_set(reply_to_lua(lua, item, resp)?, true)?;
            }
            single("set", Value::Table(inner))?
        }
        Reply::Double(d) if resp == 2 => bytes(d2string(*d).as_bytes())?,
        Reply::Double(d) => single("double", Value::Number(*d))?,
        Reply::Bool(b) if resp == 2 => Value::Number(if *b { 1.0 } else { 0.0 }),
        Reply::Bool(b) => Value::Boolean(*b),
        Reply::BigNumber(n) if resp == 2 => bytes(n)?,
        Reply::BigNumber(n) => single("big_number", bytes(n)?)?,
        Reply::Verbatim { text, .. } if resp == 2 => bytes(text)?,
        Reply::Verbatim { format, text } => {
            let inner = lua.create_table()?;
            inner.raw_set("string", lua.create_string(text)?)?;
            inner.raw_set("format", lua.create_string(format)?)?;
            single("verbatim_string", Value::Table(inner))?
        }
    })
}

/// How deep a returned table may nest before the reply says so instead of recursing further:
/// Redis runs out of Lua stack (`reached lua stack limit`) near this depth.
const MAX_REPLY_DEPTH: usize = 2700;

/// A script's return value as the reply to its caller (`luaReplyToRedisReply`). `resp` is the
/// protocol the script last chose: it decides how booleans are answered.
pub(crate) fn lua_to_reply(value: &Value, resp: u8) -> Reply {
    to_reply(value, resp, 0)
}

fn to_reply(value: &Value, resp: u8, depth: usize) -> Reply {
    if depth >= MAX_REPLY_DEPTH {
        return Reply::err_msg("reached lua stack limit");
    }
    match value {
        Value::String(s) => Reply::Bulk(s.as_bytes().to_vec()),
        Value::Boolean(b) if resp == 2 => {
            if *b {
                Reply::Integer(1)
            } else {
                Reply::Null
            }
        }
        Value::Boolean(b) => Reply::Bool(*b),
        Value::Integer(i) => Reply::Integer(*i),
        Value::Number(n) => Reply::Integer(c_double_to_i64(*n)),
        Value::Table(t) => table_to_reply(t, resp, depth),
        _ => Reply::Null,
    }
}

fn string_field(t: &Table, key: &str) -> Option<Vec<u8>> {
    match t.raw_get::<Value>(key).ok()? {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        // lua_type is LUA_TSTRING only for strings: numbers do not count here.
        _ => None,
    }
}

/// Redis's `sdsmapchars(s, "\r\n", "  ")`: a status or big number stays on one line.
fn one_line(mut s: Vec<u8>) -> Vec<u8> {
    for b in &mut s {
        if *b == b'\r' || *b == b'\n' {
            *b = b' ';
        }
    }
    s
}

fn table_to_reply(t: &Table, resp: u8, depth: usize) -> Reply {
    if let Some(err) = string_field(t, "err") {
        return Reply::Error(error_reply_line(&err));
    }
    if let Some(ok) = string_field(t, "ok") {
        return Reply::Status(one_line(ok));
    }
    match t.raw_get::<Value>("double") {
        Ok(Value::Number(d)) => return Reply::Double(d),
        Ok(Value::Integer(i)) => return Reply::Double(i as f64),
        _ => {}
    }
    if let Some(n) = string_field(t, "big_number") {
        return Reply::BigNumber(one_line(n));
    }
    if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") {
        if let (Some(format), Some(text)) = (string_field(&v, "format"), string_field(&v, "string"))
        {
            let mut f = [b' '; 3];
            for (slot, b) in f.iter_mut().zip(format.iter()) {
                *slot = *b;
            }
            return Reply::Verbatim { format: f, text };
        }
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let pairs = m
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, v)| (to_reply(&k, resp, depth + 1), to_reply(&v, resp, depth + 1)))
            .collect();
        return Reply::Map(pairs);
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let items = s
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, _)| to_reply(&k, resp, depth + 1))
            .collect();
        return Reply::Set(items);
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(to_reply(&v, resp, depth + 1)),
        }
    }
    Reply::Array(items)
}

/// An error table's text as the error reply Redis writes for it (`addReplyErrorFormat("-%s")`):
/// the text is the whole line, code included, trimmed and on one line.
pub(crate) fn error_reply_line(err: &[u8]) -> Vec<u8> {
    one_line(trim_newlines(err).to_vec())
}

/// A field of an error table as `lua_tostring` reads it (`line` is a number).
pub(crate) fn field_text(t: &Table, key: &str) -> Option<String> {
    match t.raw_get::<Value>(key).ok()? {
        Value::String(s) => Some(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
        Value::Integer(i) => Some(i.to_string()),
        Value::Number(n) => Some(format_g(n, 14)),
        _ => None,
    }
}
