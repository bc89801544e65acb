//! `cjson`, lua-cjson 2.1 as Redis compiles it in, with its default settings: numbers as
//! `%.14g`, an empty table as `{}`, excessively sparse arrays refused, 1000 levels of nesting,
//! `cjson.null` as the null light userdata, and lua-cjson's error texts.

use mlua::{Lua, MultiValue, Table, Value};

use super::native::{native, one, Args, NativeResult, Raise};
use super::number_format::format_g;

const MAX_DEPTH: usize = 1000;
const SPARSE_RATIO: f64 = 2.0;
const SPARSE_SAFE: f64 = 10.0;
const PRECISION: usize = 14;

pub(crate) fn open(lua: &Lua) -> mlua::Result<Table> {
    let cjson = lua.create_table()?;
    cjson.raw_set("encode", native(lua, encode)?)?;
    cjson.raw_set("decode", native(lua, decode)?)?;
    cjson.raw_set("null", Value::NULL)?;
    Ok(cjson)
}

fn encode(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    if args.len() != 1 {
        return Err(super::native::arg_error(lua, 1, "expected 1 argument"));
    }
    let mut out = Vec::new();
    append(&mut out, &args.values[0], 0)?;
    one(Value::String(lua.create_string(out)?))
}

fn type_name(v: &Value) -> &'static str {
    super::native::type_name(Some(v))
}

fn cannot(v: &Value, reason: &str) -> Raise {
    Raise::Located(format!("Cannot serialise {}: {reason}", type_name(v)))
}

fn append(out: &mut Vec<u8>, v: &Value, depth: usize) -> Result<(), Raise> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => append_number(out, v, *i as f64)?,
        Value::Number(n) => append_number(out, v, *n)?,
        Value::String(s) => append_string(out, &s.as_bytes()),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Table(t) => {
            let depth = depth + 1;
            if depth > MAX_DEPTH {
                return Err(Raise::Located(format!(
                    "Cannot serialise, excessive nesting ({depth})"
                )));
            }
            match array_length(t, v)? {
                Some(len) if len > 0 => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        let item: Value = t.raw_get(i)?;
                        append(out, &item, depth)?;
                    }
                    out.push(b']');
                }
                _ => {
                    out.push(b'{');
                    let mut first = true;
                    for pair in t.pairs::<Value, Value>() {
                        let (key, value) = pair?;
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &key {
                            Value::Integer(_) | Value::Number(_) => {
                                out.push(b'"');
                                let n = match key {
                                    Value::Integer(i) => i as f64,
                                    Value::Number(n) => n,
                                    _ => 0.0,
                                };
                                append_number(out, &key, n)?;
                                out.push(b'"');
                            }
                            Value::String(s) => append_string(out, &s.as_bytes()),
                            _ => return Err(cannot(&key, "table key must be a number or string")),
                        }
                        out.push(b':');
                        append(out, &value, depth)?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => return Err(cannot(other, "type not supported")),
    }
    Ok(())
}

fn append_number(out: &mut Vec<u8>, v: &Value, n: f64) -> Result<(), Raise> {
    if !n.is_finite() {
        return Err(cannot(v, "must not be NaN or Inf"));
    }
    out.extend_from_slice(format_g(n, PRECISION).as_bytes());
    Ok(())
}

/// lua-cjson's `lua_array_length`: the largest key when every key is a positive integer,
/// `None` for an object; a refusal for an excessively sparse array.
fn array_length(t: &Table, v: &Value) -> Result<Option<usize>, Raise> {
    let (mut max, mut items) = (0.0f64, 0.0f64);
    for pair in t.pairs::<Value, Value>() {
        let (key, _) = pair?;
        let k = match key {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return Ok(None),
        };
        if k.floor() != k || k < 1.0 {
            return Ok(None);
        }
        max = max.max(k);
        items += 1.0;
    }
    if max > items * SPARSE_RATIO && max > SPARSE_SAFE {
        return Err(cannot(v, "excessively sparse array"));
    }
    Ok(Some(max as usize))
}

fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            8 => out.extend_from_slice(b"\\b"),
            9 => out.extend_from_slice(b"\\t"),
            10 => out.extend_from_slice(b"\\n"),
            12 => out.extend_from_slice(b"\\f"),
            13 => out.extend_from_slice(b"\\r"),
            0..=31 | 127 => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

#[derive(Clone, Copy, PartialEq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Number,
    Boolean,
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Number => "T_NUMBER",
            Tok::Boolean => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(what) => what,
        }
    }
}

struct Token {
    tok: Tok,
    index: usize,
    value: Value,
}

struct Parser<'a> {
    lua: &'a Lua,
    data: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn byte(&self) -> u8 {
        // lua-cjson reads a NUL-terminated buffer: a NUL ends the document.
        self.data.get(self.pos).copied().unwrap_or(0)
    }

    fn next(&mut self) -> Result<Token, Raise> {
        while matches!(self.byte(), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let index = self.pos;
        let simple = |tok| Token {
            tok,
            index,
            value: Value::Nil,
        };
        let ch = self.byte();
        let tok = match ch {
            0 => return Ok(simple(Tok::End)),
            b'{' => Tok::ObjBegin,
            b'}' => Tok::ObjEnd,
            b'[' => Tok::ArrBegin,
            b']' => Tok::ArrEnd,
            b':' => Tok::Colon,
            b',' => Tok::Comma,
            b'"' => return self.string(index),
            b'-' | b'0'..=b'9' => return Ok(self.number(index)),
            _ => {
                let rest = &self.data[self.pos..];
                for (word, tok, value) in [
                    (&b"true"[..], Tok::Boolean, Value::Boolean(true)),
                    (b"false", Tok::Boolean, Value::Boolean(false)),
                    (b"null", Tok::Null, Value::NULL),
                ] {
                    if rest.starts_with(word) {
                        self.pos += word.len();
                        return Ok(Token { tok, index, value });
                    }
                }
                return Ok(simple(Tok::Error("invalid token")));
            }
        };
        self.pos += 1;
        Ok(simple(tok))
    }

    fn number(&mut self, index: usize) -> Token {
        let rest = &self.data[self.pos..];
        let mut end = 0;
        if rest.first() == Some(&b'-') {
            end += 1;
        }
        let digits = |from: usize| {
            rest[from..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count()
        };
        let int = digits(end);
        end += int;
        let mut frac = 0;
        if rest.get(end) == Some(&b'.') {
            frac = digits(end + 1);
            if int + frac > 0 {
                end += 1 + frac;
            }
        }
        if int + frac > 0 && matches!(rest.get(end), Some(b'e' | b'E')) {
            let mut e = end + 1;
            if matches!(rest.get(e), Some(b'+' | b'-')) {
                e += 1;
            }
            let exp = digits(e);
            if exp > 0 {
                end = e + exp;
            }
        }
        let parsed = std::str::from_utf8(&rest[..end])
            .ok()
            .filter(|_| int + frac > 0)
            .and_then(|s| s.parse::<f64>().ok());
        match parsed {
            Some(n) => {
                self.pos += end;
                Token {
                    tok: Tok::Number,
                    index,
                    value: Value::Number(n),
                }
            }
            None => Token {
                tok: Tok::Error("invalid number"),
                index,
                value: Value::Nil,
            },
        }
    }

    fn string(&mut self, index: usize) -> Result<Token, Raise> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let ch = self.byte();
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return Ok(self.error_at("unexpected end of string"));
            }
            if ch != b'\\' {
                out.push(ch);
                self.pos += 1;
                continue;
            }
            let escaped = self.data.get(self.pos + 1).copied().unwrap_or(0);
            let plain = match escaped {
                b'"' => Some(b'"'),
                b'\\' => Some(b'\\'),
                b'/' => Some(b'/'),
                b'b' => Some(8),
                b'f' => Some(12),
                b'n' => Some(b'\n'),
                b'r' => Some(b'\r'),
                b't' => Some(b'\t'),
                _ => None,
            };
            if let Some(b) = plain {
                out.push(b);
                self.pos += 2;
                continue;
            }
            if escaped != b'u' {
                return Ok(self.error_at("invalid escape code"));
            }
            match self.unicode_escape() {
                Some((c, len)) => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    self.pos += len;
                }
                None => return Ok(self.error_at("invalid escape code")),
            }
        }
        self.pos += 1;
        let value = Value::String(self.lua.create_string(out)?);
        Ok(Token {
            tok: Tok::Str,
            index,
            value,
        })
    }

    fn error_at(&self, what: &'static str) -> Token {
        Token {
            tok: Tok::Error(what),
            index: self.pos,
            value: Value::Nil,
        }
    }

    /// `\uXXXX` (and a following low surrogate): the character and the bytes it took.
    fn unicode_escape(&self) -> Option<(char, usize)> {
        let hex = |at: usize| -> Option<u32> {
            let digits = self.data.get(at..at + 4)?;
            u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
        };
        let first = hex(self.pos + 2)?;
        if (0xDC00..0xE000).contains(&first) {
            return None;
        }
        if (0xD800..0xDC00).contains(&first) {
            if self.data.get(self.pos + 6..self.pos + 8)? != b"\\u" {
                return None;
            }
            let second = hex(self.pos + 8)?;
            if !(0xDC00..0xE000).contains(&second) {
                return None;
            }
            let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            return Some((char::from_u32(c)?, 12));
        }
        Some((char::from_u32(first)?, 6))
    }

    fn parse_error(&self, expected: &str, token: &Token) -> Raise {
        Raise::Located(format!(
            "Expected {expected} but found {} at character {}",
            token.tok.name(),
            token.index + 1
        ))
    }

    fn descend(&mut self) -> Result<(), Raise> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Raise::Located(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth, self.pos
            )));
        }
        Ok(())
    }

    fn value(&mut self, token: Token) -> Result<Value, Raise> {
        match token.tok {
            Tok::Str | Tok::Number | Tok::Boolean | Tok::Null => Ok(token.value),
            Tok::ObjBegin => self.object(),
            Tok::ArrBegin => self.array(),
            _ => Err(self.parse_error("value", &token)),
        }
    }

    fn object(&mut self) -> Result<Value, Raise> {
        self.descend()?;
        let t = self.lua.create_table()?;
        let mut token = self.next()?;
        if token.tok == Tok::ObjEnd {
            self.depth -= 1;
            return Ok(Value::Table(t));
        }
        loop {
            if token.tok != Tok::Str {
                return Err(self.parse_error("object key string", &token));
            }
            let key = token.value;
            let colon = self.next()?;
            if colon.tok != Tok::Colon {
                return Err(self.parse_error("colon", &colon));
            }
            let next = self.next()?;
            let value = self.value(next)?;
            t.raw_set(key, value)?;
            let sep = self.next()?;
            match sep.tok {
                Tok::ObjEnd => break,
                Tok::Comma => token = self.next()?,
                _ => return Err(self.parse_error("comma or object end", &sep)),
            }
        }
        self.depth -= 1;
        Ok(Value::Table(t))
    }

    fn array(&mut self) -> Result<Value, Raise> {
        self.descend()?;
        let t = self.lua.create_table()?;
        let mut token = self.next()?;
        if token.tok == Tok::ArrEnd {
            self.depth -= 1;
            return Ok(Value::Table(t));
        }
        for i in 1.. {
            let value = self.value(token)?;
            t.raw_set(i, value)?;
            let sep = self.next()?;
            match sep.tok {
                Tok::ArrEnd => break,
                Tok::Comma => token = self.next()?,
                _ => return Err(self.parse_error("comma or array end", &sep)),
            }
        }
        self.depth -= 1;
        Ok(Value::Table(t))
    }
}

fn decode(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    if args.len() != 1 {
        return Err(super::native::arg_error(lua, 1, "expected 1 argument"));
    }
    let data = args.check_bytes(1)?;
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err(Raise::Located(
            "JSON parser does not support UTF-16 or UTF-32".to_string(),
        ));
    }
    let mut parser = Parser {
        lua,
        data: &data,
        pos: 0,
        depth: 0,
    };
    let first = parser.next()?;
    let value = parser.value(first)?;
    let end = parser.next()?;
    if end.tok != Tok::End {
        return Err(parser.parse_error("the end", &end));
    }
    one(value)
}
