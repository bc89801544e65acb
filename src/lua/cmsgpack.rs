//! `cmsgpack`, lua-cmsgpack 0.4.0 as Redis compiles it in (`deps/lua/src/lua_cmsgpack.c`):
//! `pack`, `unpack`, `unpack_one` and `unpack_limit`, with its encodings (the smallest integer
//! form, a float when the double survives the round trip, a table as an array only when its keys
//! are exactly 1..n), its nesting limit of 16 on packing (deeper tables, circular ones included,
//! pack as nil) and its error texts.
//!
//! Decoding is iterative, not recursive as in C, so that input nested thousands deep cannot
//! exhaust the thread's stack; the Lua stack the C code would use is counted instead, so that
//! the same inputs fail with the same `stack overflow (...)` errors at the same depth (Lua 5.1
//! lets a C function hold 8000 slots, `LUAI_MAXCSTACK`).

use mlua::{Lua, MultiValue, Table, Value};

use super::native::{arg_error, native, spread, Args, NativeResult, Raise};
use super::number_format::c_double_to_i64;

/// Tables nested deeper than this pack as nil (`LUACMSGPACK_MAX_NESTING`).
const MAX_NESTING: usize = 16;
/// The Lua stack slots one C function may use (`LUAI_MAXCSTACK`).
const MAX_C_STACK: usize = 8000;
/// sieved's bound on one packed string: a table referenced many times over from itself packs
/// into a string that grows with the 16th power of its width, which must meet a limit rather
/// than the machine's memory. The Lua heap's own cap (`super::DEFAULT_MEMORY_LIMIT`).
const MAX_PACKED: usize = super::DEFAULT_MEMORY_LIMIT;

pub(crate) fn open(lua: &Lua) -> mlua::Result<Table> {
    let cmsgpack = lua.create_table()?;
    cmsgpack.raw_set("pack", native(lua, pack)?)?;
    cmsgpack.raw_set("unpack", native(lua, unpack)?)?;
    cmsgpack.raw_set("unpack_one", native(lua, unpack_one)?)?;
    cmsgpack.raw_set("unpack_limit", native(lua, unpack_limit)?)?;
    cmsgpack.raw_set("_NAME", "cmsgpack")?;
    cmsgpack.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    cmsgpack.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    cmsgpack.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(cmsgpack)
}

fn pack(lua: &Lua, values: MultiValue) -> NativeResult {
    if values.is_empty() {
        return Err(arg_error(lua, 0, "MessagePack pack needs input."));
    }
    let mut out = Vec::new();
    for value in values.iter() {
        encode(&mut out, value, 0)?;
    }
    Ok(MultiValue::from_vec(vec![Value::String(
        lua.create_string(&out)?,
    )]))
}

fn too_large() -> Raise {
    Raise::Lua(mlua::Error::MemoryError("packed string too large".into()))
}

fn encode(out: &mut Vec<u8>, value: &Value, level: usize) -> Result<(), Raise> {
    if out.len() > MAX_PACKED {
        return Err(too_large());
    }
    match value {
        Value::String(s) => encode_bytes(out, &s.as_bytes()),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => encode_number(out, *i as f64),
        Value::Number(n) => encode_number(out, *n),
        Value::Table(t) if level < MAX_NESTING => encode_table(out, t, level)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

/// `IS_INT64_EQUIVALENT`: an integer if the double cast to int64_t (as x86 casts it) and back
/// is the same number.
fn encode_number(out: &mut Vec<u8>, n: f64) {
    let i = c_double_to_i64(n);
    if !n.is_infinite() && i as f64 == n {
        encode_int(out, i);
    } else {
        let f = n as f32;
        if f as f64 == n {
            out.push(0xca);
            out.extend_from_slice(&f.to_be_bytes());
        } else {
            out.push(0xcb);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        match n {
            0..=127 => out.push(n as u8),
            128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
            0x100..=0xffff => {
                out.push(0xcd);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                out.push(0xce);
                out.extend_from_slice(&(n as u32).to_be_bytes());
            }
            _ => {
                out.push(0xcf);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
    } else {
        match n {
            -32..=-1 => out.push(n as i8 as u8),
            -128..=-33 => out.extend_from_slice(&[0xd0, n as i8 as u8]),
            -32768..=-129 => {
                out.push(0xd1);
                out.extend_from_slice(&(n as i16).to_be_bytes());
            }
            -2_147_483_648..=-32769 => {
                out.push(0xd2);
                out.extend_from_slice(&(n as i32).to_be_bytes());
            }
            _ => {
                out.push(0xd3);
                out.extend_from_slice(&n.to_be_bytes());
            }
        }
    }
}

fn encode_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = bytes.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(bytes);
}

/// An array or map header: the fix form up to 15, then 16 and 32 bits.
fn encode_header(out: &mut Vec<u8>, len: usize, fix: u8, wide: u8) {
    if len <= 15 {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(wide);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(wide + 1);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

/// `table_is_an_array`: every key a positive integral number, and as many keys as the largest.
fn is_array(table: &Table) -> mlua::Result<bool> {
    let (mut count, mut max) = (0f64, 0f64);
    for pair in table.pairs::<Value, Value>() {
        let (key, _) = pair?;
        let n = match key {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => return Ok(false),
        };
        // IS_INT_EQUIVALENT: the number cast to a C int and back.
        let int_equivalent = n < 2_147_483_648.0 && n.trunc() == n;
        if n <= 0.0 || !int_equivalent {
            return Ok(false);
        }
        max = f64::max(max, n);
        count += 1.0;
    }
    Ok(max == count)
}

fn encode_table(out: &mut Vec<u8>, table: &Table, level: usize) -> Result<(), Raise> {
    if is_array(table)? {
        let len = table.raw_len();
        encode_header(out, len, 0x90, 0xdc);
        for j in 1..=len {
            let value: Value = table.get(j)?;
            encode(out, &value, level + 1)?;
        }
    } else {
        // Counted first, then encoded in a second walk, as the C code does.
        let mut len = 0;
        for pair in table.pairs::<Value, Value>() {
            pair?;
            len += 1;
        }
        encode_header(out, len, 0x80, 0xde);
        for pair in table.pairs::<Value, Value>() {
            let (key, value) = pair?;
            encode(out, &key, level + 1)?;
            encode(out, &value, level + 1)?;
        }
    }
    Ok(())
}

fn unpack(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    let data = args.check_bytes(1)?;
    // mp_unpack leaves its arguments on the stack.
    unpack_full(lua, &data, 0, 0, args.len())
}

fn opt_int(args: &Args, narg: usize) -> Result<i32, Raise> {
    match args.get(narg) {
        None | Some(Value::Nil) => Ok(0),
        _ => args.check_int(narg),
    }
}

fn unpack_one(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    let offset = opt_int(&args, 2)?;
    let data = args.check_bytes(1)?;
    unpack_full(lua, &data, 1, offset, 1)
}

fn unpack_limit(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    let limit = args.check_int(2)?;
    let offset = opt_int(&args, 3)?;
    let data = args.check_bytes(1)?;
    unpack_full(lua, &data, limit, offset, 1)
}

/// `mp_unpack_full`: up to `limit` objects from `offset` (all of them when both are 0), and
/// unless all were asked for, first the offset to go on from (-1 at the end). `slots` is what the
/// C function holds on its stack before it decodes (its arguments).
fn unpack_full(lua: &Lua, data: &[u8], limit: i32, offset: i32, slots: usize) -> NativeResult {
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return Err(Raise::Located(format!(
            "Invalid request to unpack with offset of {offset} and limit of {}.",
            data.len()
        )));
    }
    if offset as usize > data.len() {
        return Err(Raise::Located(format!(
            "Start offset {offset} greater than input length {}.",
            data.len()
        )));
    }
    let limit = if decode_all { i32::MAX } else { limit };
    let mut decoder = Decoder {
        lua,
        data,
        at: offset as usize,
        slots,
    };
    // The results go into a table as they come (mlua holds no more than a few thousand values
    // at once), the offset first unless everything was asked for.
    let results = lua.create_table()?;
    let first = usize::from(!decode_all);
    let mut count = 0usize;
    while decoder.at < data.len() && (count as i64) < i64::from(limit) {
        let value = decoder.one()?;
        count += 1;
        results.raw_set(first + count, value)?;
        decoder.slots += 1;
    }
    if !decode_all {
        check_stack(decoder.slots, 1, "in function mp_unpack_full")?;
        let next = match decoder.at == data.len() {
            true => -1.0,
            false => decoder.at as f64,
        };
        results.raw_set(1, next)?;
    }
    spread(results, first + count)
}

/// `luaL_checkstack` with `slots` in use.
fn check_stack(slots: usize, more: usize, what: &str) -> Result<(), Raise> {
    match slots + more > MAX_C_STACK {
        true => Err(Raise::Located(format!("stack overflow ({what})"))),
        false => Ok(()),
    }
}

const TOO_MANY_VALUES: &str =
    "too many return values at once; use unpack_one or unpack_limit instead.";

fn missing_bytes() -> Raise {
    Raise::Located("Missing bytes in input.".into())
}

/// A table being filled: its remaining entries, and for a map the key read before its value.
struct Open {
    table: Table,
    left: u64,
    kind: OpenKind,
}

enum OpenKind {
    /// The next index to set.
    Array(u64),
    Map(Option<Value>),
}

impl Open {
    /// The stack slots it holds while its next entry is decoded: the table, and the index or
    /// key pushed before the value.
    fn slots(&self) -> usize {
        match &self.kind {
            OpenKind::Array(_) | OpenKind::Map(Some(_)) => 2,
            OpenKind::Map(None) => 1,
        }
    }
}

struct Decoder<'a> {
    lua: &'a Lua,
    data: &'a [u8],
    at: usize,
    /// Slots in use below the values being decoded.
    slots: usize,
}

/// One decoded item: a finished value, or the start of an array or map of that many entries.
enum Item {
    Value(Value),
    Array(u64),
    Map(u64),
}

impl Decoder<'_> {
    fn need(&self, len: usize) -> Result<(), Raise> {
        match self.data.len() - self.at < len {
            true => Err(missing_bytes()),
            false => Ok(()),
        }
    }

    fn be(&self, from: usize, len: usize) -> u64 {
        self.data[from..from + len]
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
    }

    /// A string of `len` bytes after a header of `header` bytes.
    fn string(&mut self, header: usize, len: u64) -> Result<Item, Raise> {
        let len = usize::try_from(len).map_err(|_| missing_bytes())?;
        self.need(header.saturating_add(len))?;
        let start = self.at + header;
        let s = self.lua.create_string(&self.data[start..start + len])?;
        self.at = start + len;
        Ok(Item::Value(Value::String(s)))
    }

    /// A number of `len` bytes after the type byte, read as `read` says.
    fn number(&mut self, len: usize, read: impl Fn(u64) -> f64) -> Result<Item, Raise> {
        self.need(1 + len)?;
        let n = read(self.be(self.at + 1, len));
        self.at += 1 + len;
        Ok(Item::Value(Value::Number(n)))
    }

    /// The length of a container header, `len` bytes after the type byte.
    fn count(&mut self, len: usize) -> Result<u64, Raise> {
        self.need(1 + len)?;
        let n = self.be(self.at + 1, len);
        self.at += 1 + len;
        Ok(n)
    }

    fn item(&mut self) -> Result<Item, Raise> {
        let byte = self.data[self.at];
        let item = match byte {
            0xcc => self.number(1, |n| n as f64)?,
            0xcd => self.number(2, |n| n as f64)?,
            0xce => self.number(4, |n| n as f64)?,
            // lua_pushunsigned is lua_pushinteger in Lua 5.1: the bits read as signed.
            0xcf => self.number(8, |n| n as i64 as f64)?,
            0xd0 => self.number(1, |n| n as u8 as i8 as f64)?,
            0xd1 => self.number(2, |n| n as u16 as i16 as f64)?,
            0xd2 => self.number(4, |n| n as u32 as i32 as f64)?,
            0xd3 => self.number(8, |n| n as i64 as f64)?,
            0xca => self.number(4, |n| f32::from_bits(n as u32) as f64)?,
            0xcb => self.number(8, f64::from_bits)?,
            0xc0 => {
                self.at += 1;
                Item::Value(Value::Nil)
            }
            0xc3 | 0xc2 => {
                self.at += 1;
                Item::Value(Value::Boolean(byte == 0xc3))
            }
            0xd9 => {
                self.need(2)?;
                let len = self.be(self.at + 1, 1);
                self.string(2, len)?
            }
            0xda => {
                self.need(3)?;
                let len = self.be(self.at + 1, 2);
                self.string(3, len)?
            }
            0xdb => {
                self.need(5)?;
                let len = self.be(self.at + 1, 4);
                self.string(5, len)?
            }
            0xdc => Item::Array(self.count(2)?),
            0xdd => Item::Array(self.count(4)?),
            0xde => Item::Map(self.count(2)?),
            0xdf => Item::Map(self.count(4)?),
            _ if byte & 0x80 == 0 || byte & 0xe0 == 0xe0 => {
                self.at += 1;
                Item::Value(Value::Number(f64::from(byte as i8)))
            }
            _ if byte & 0xe0 == 0xa0 => self.string(1, u64::from(byte & 0x1f))?,
            _ if byte & 0xf0 == 0x90 => {
                self.at += 1;
                Item::Array(u64::from(byte & 0x0f))
            }
            _ if byte & 0xf0 == 0x80 => {
                self.at += 1;
                Item::Map(u64::from(byte & 0x0f))
            }
            _ => return Err(Raise::Located("Bad data format in input.".into())),
        };
        Ok(item)
    }

    /// `mp_decode_to_lua_type` for one whole object, tables filled as C fills them.
    fn one(&mut self) -> Result<Value, Raise> {
        let mut open: Vec<Open> = Vec::new();
        let mut open_slots = 0;
        loop {
            // A value of the innermost open table, or the object itself.
            self.need(1)?;
            check_stack(self.slots + open_slots, 1, TOO_MANY_VALUES)?;
            let (left, kind) = match self.item()? {
                Item::Value(value) => (0, Ok(value)),
                Item::Array(len) => (len, Err(OpenKind::Array(1))),
                Item::Map(len) => (len, Err(OpenKind::Map(None))),
            };
            let mut value = match kind {
                Ok(value) => value,
                Err(kind) => {
                    let table = self.lua.create_table()?;
                    if matches!(kind, OpenKind::Array(_)) {
                        // After lua_newtable, mp_decode_to_lua_array's luaL_checkstack.
                        check_stack(
                            self.slots + open_slots + 1,
                            1,
                            "in function mp_decode_to_lua_array",
                        )?;
                    }
                    if left == 0 {
                        Value::Table(table)
                    } else {
                        let table = Open { table, left, kind };
                        open_slots += table.slots();
                        open.push(table);
                        continue;
                    }
                }
            };
            // Place the value in the open tables, closing each that it completes.
            loop {
                let Some(top) = open.last_mut() else {
                    return Ok(value);
                };
                open_slots -= top.slots();
                match &mut top.kind {
                    OpenKind::Array(index) => {
                        top.table.raw_set(*index as f64, value)?;
                        *index += 1;
                        top.left -= 1;
                    }
                    OpenKind::Map(pending) => match pending.take() {
                        None => {
                            *pending = Some(value);
                            open_slots += top.slots();
                            break;
                        }
                        Some(key) => {
                            set_field(&top.table, key, value)?;
                            top.left -= 1;
                        }
                    },
                }
                if top.left > 0 {
                    open_slots += top.slots();
                    break;
                }
                let done = open.pop().expect("the innermost open table");
                value = Value::Table(done.table);
            }
        }
    }
}

/// `lua_settable` on a fresh table: Lua's own errors for a nil or NaN key.
fn set_field(table: &Table, key: Value, value: Value) -> Result<(), Raise> {
    match key {
        Value::Nil => Err(Raise::Bare("table index is nil".into())),
        Value::Number(n) if n.is_nan() => Err(Raise::Bare("table index is NaN".into())),
        key => Ok(table.raw_set(key, value)?),
    }
}
