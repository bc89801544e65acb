//! `struct`, Roberto Ierusalimschy's struct library 0.2 as Redis compiles it in
//! (`deps/lua/src/lua_struct.c`): `pack`, `unpack` and `size` over a format of `<` `>` (byte
//! order), `!n` (alignment), `x` (a pad byte), `b B h H l L T i I in In` (integers: char, short,
//! long, size_t, int, and n bytes up to 32), `f d` (float, double), `cn` (n chars, `c0` the whole
//! string or the size read before), `s` (zero-terminated) and spaces, with its error texts, on
//! x86-64's sizes (short 2, int 4, long and size_t 8, alignment 8).

use mlua::{Lua, MultiValue, Table, Value};

use super::native::{arg_error, native, one, spread, Args, NativeResult, Raise};
use super::number_format::c_double_to_i64;

const MAX_INT_SIZE: usize = 32;
/// `MAXALIGN`: the alignment of a double, a pointer and a long.
const MAX_ALIGN: usize = 8;
/// The Lua stack slots one C function may use (`LUAI_MAXCSTACK`).
const MAX_C_STACK: usize = 8000;

pub(crate) fn open(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.raw_set("pack", native(lua, pack)?)?;
    table.raw_set("unpack", native(lua, unpack)?)?;
    table.raw_set("size", native(lua, size)?)?;
    Ok(table)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Endian {
    Little,
    Big,
}

struct Header {
    endian: Endian,
    align: usize,
}

impl Header {
    fn new() -> Header {
        Header {
            endian: Endian::Little,
            align: 1,
        }
    }
}

/// The format as a cursor, as the C code walks its `const char **`.
struct Format {
    bytes: Vec<u8>,
    at: usize,
}

impl Format {
    fn next(&mut self) -> Option<u8> {
        let b = self.bytes.get(self.at).copied()?;
        self.at += 1;
        Some(b)
    }

    /// `getnum`: the digits here, or `default` when there are none.
    fn number(&mut self, default: usize) -> Result<usize, Raise> {
        if !self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i64 = 0;
        while let Some(d) = self.bytes.get(self.at).filter(|b| b.is_ascii_digit()) {
            let d = i64::from(d - b'0');
            if a > i64::from(i32::MAX) / 10 || a * 10 > i64::from(i32::MAX) - d {
                return Err(Raise::Located("integral size overflow".into()));
            }
            a = a * 10 + d;
            self.at += 1;
        }
        Ok(a as usize)
    }
}

/// `optsize`: the size of option `opt`, reading its digits.
fn option_size(opt: u8, format: &mut Format) -> Result<usize, Raise> {
    Ok(match opt {
        b'B' | b'b' | b'x' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'c' => format.number(1)?,
        b'i' | b'I' => {
            let size = format.number(4)?;
            if size > MAX_INT_SIZE {
                return Err(Raise::Located(format!(
                    "integral size {size} is larger than limit of {MAX_INT_SIZE}"
                )));
            }
            size
        }
        _ => 0,
    })
}

/// `gettoalign`: the padding that aligns an item of `size` at `len`.
fn to_align(len: usize, header: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(header.align);
    (size - (len & (size - 1))) & (size - 1)
}

/// `controloptions`: byte order, alignment, spaces; anything else is not an option.
fn control(lua: &Lua, opt: u8, format: &mut Format, header: &mut Header) -> Result<(), Raise> {
    match opt {
        b' ' => {}
        b'>' => header.endian = Endian::Big,
        b'<' => header.endian = Endian::Little,
        b'!' => {
            let a = format.number(MAX_ALIGN)?;
            if !a.is_power_of_two() {
                return Err(Raise::Located(format!("alignment {a} is not a power of 2")));
            }
            header.align = a;
        }
        _ => {
            let shown = String::from_utf8_lossy(&[opt]).into_owned();
            return Err(arg_error(
                lua,
                1,
                &format!("invalid format option '{shown}'"),
            ));
        }
    }
    Ok(())
}

/// b_pack pushes a nil after its arguments, so the argument past the last reads as nil.
fn pack_arg(args: &Args, narg: usize) -> Option<Value> {
    match args.get(narg) {
        Some(v) => Some(v.clone()),
        None if narg == args.len() + 1 => Some(Value::Nil),
        None => None,
    }
}

fn pack_number(args: &Args, narg: usize) -> Result<f64, Raise> {
    let value = pack_arg(args, narg);
    super::native::to_number(args.lua, value.as_ref())
        .ok_or_else(|| super::native::type_error(args.lua, narg, "number", value.as_ref()))
}

fn pack_bytes(args: &Args, narg: usize) -> Result<Vec<u8>, Raise> {
    let value = pack_arg(args, narg);
    super::native::to_bytes(value.as_ref())
        .ok_or_else(|| super::native::type_error(args.lua, narg, "string", value.as_ref()))
}

/// Bytes of `value`, lowest first, as far as 64 bits go (then zeros), in `endian` order.
fn integer_bytes(value: u64, size: usize, endian: Endian) -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..size)
        .map(|i| value.checked_shr(8 * i as u32).unwrap_or(0) as u8)
        .collect();
    if endian == Endian::Big {
        bytes.reverse();
    }
    bytes
}

fn pack(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    let mut format = Format {
        bytes: args.check_bytes(1)?,
        at: 0,
    };
    let mut header = Header::new();
    let mut arg = 2;
    let mut out: Vec<u8> = Vec::new();
    while let Some(opt) = format.next() {
        let mut size = option_size(opt, &mut format)?;
        let pad = to_align(out.len(), &header, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = pack_number(&args, arg)?;
                arg += 1;
                // (Uinttype)(Inttype)n below zero, (Uinttype)n otherwise, as x86 casts.
                let value = match n < 0.0 {
                    true => c_double_to_i64(n) as u64,
                    false => double_to_u64(n),
                };
                out.extend(integer_bytes(value, size, header.endian));
            }
            b'x' => out.push(0),
            b'f' => {
                let f = pack_number(&args, arg)? as f32;
                arg += 1;
                out.extend_from_slice(&match header.endian {
                    Endian::Big => f.to_be_bytes(),
                    Endian::Little => f.to_le_bytes(),
                });
            }
            b'd' => {
                let d = pack_number(&args, arg)?;
                arg += 1;
                out.extend_from_slice(&match header.endian {
                    Endian::Big => d.to_be_bytes(),
                    Endian::Little => d.to_le_bytes(),
                });
            }
            b'c' | b's' => {
                let s = pack_bytes(&args, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    return Err(arg_error(lua, arg, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => control(lua, opt, &mut format, &mut header)?,
        }
    }
    one(Value::String(lua.create_string(&out)?))
}

/// `(unsigned long long)d` for d >= 0 as x86-64 computes it: past 2^64 (and NaN) the
/// conversion's invalid result, 2^63.
fn double_to_u64(d: f64) -> u64 {
    if d < 18_446_744_073_709_551_616.0 {
        d as u64
    } else {
        1 << 63
    }
}

fn size(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    let mut format = Format {
        bytes: args.check_bytes(1)?,
        at: 0,
    };
    let mut header = Header::new();
    let mut pos = 0usize;
    while let Some(opt) = format.next() {
        let size = option_size(opt, &mut format)?;
        pos += to_align(pos, &header, opt, size);
        if opt == b's' {
            return Err(arg_error(lua, 1, "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(lua, 1, "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            control(lua, opt, &mut format, &mut header)?;
        }
        pos += size;
    }
    one(Value::Number(pos as f64))
}

/// `getinteger`: `size` bytes as an unsigned or sign-extended integer, on 64 bits.
fn read_integer(bytes: &[u8], endian: Endian, signed: bool) -> f64 {
    let mut l: u64 = 0;
    let mut fold = |b: &u8| l = (l << 8) | u64::from(*b);
    match endian {
        Endian::Big => bytes.iter().for_each(&mut fold),
        Endian::Little => bytes.iter().rev().for_each(&mut fold),
    }
    if !signed {
        return l as f64;
    }
    // The shift as x86 does it, its count taken modulo 64 (sizes past 8 bytes, and 0).
    let mask = u64::MAX.wrapping_shl((bytes.len() * 8).wrapping_sub(1) as u32);
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

fn unpack(lua: &Lua, values: MultiValue) -> NativeResult {
    let args = Args::new(lua, values);
    let mut format = Format {
        bytes: args.check_bytes(1)?,
        at: 0,
    };
    let data = args.check_bytes(2)?;
    let ld = data.len();
    let start = match args.get(3) {
        None | Some(Value::Nil) => 1,
        _ => args.check_integer(3)?,
    };
    if start == 0 {
        return Err(arg_error(lua, 3, "offset must be 1 or greater"));
    }
    // size_t arithmetic: a negative offset is a huge position.
    let mut pos = (start as u64).wrapping_sub(1) as usize;
    let mut header = Header::new();
    // The results go into a table as they come (see `spread`).
    let results = lua.create_table()?;
    let mut count = 0usize;
    let too_short = || arg_error(lua, 2, "data string too short");
    while let Some(opt) = format.next() {
        let mut size = option_size(opt, &mut format)?;
        pos = pos.wrapping_add(to_align(pos, &header, opt, size));
        if size > ld || pos > ld - size {
            return Err(too_short());
        }
        // luaL_checkstack(L, 2, "too many results") over the arguments and results so far.
        if args.len() + count + 2 > MAX_C_STACK {
            return Err(Raise::Located("stack overflow (too many results)".into()));
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let signed = opt.is_ascii_lowercase();
                count += 1;
                results.raw_set(
                    count,
                    read_integer(&data[pos..pos + size], header.endian, signed),
                )?;
            }
            b'x' => {}
            b'f' => {
                let raw: [u8; 4] = data[pos..pos + 4].try_into().expect("4 bytes");
                let f = match header.endian {
                    Endian::Big => f32::from_be_bytes(raw),
                    Endian::Little => f32::from_le_bytes(raw),
                };
                count += 1;
                results.raw_set(count, f64::from(f))?;
            }
            b'd' => {
                let raw: [u8; 8] = data[pos..pos + 8].try_into().expect("8 bytes");
                count += 1;
                results.raw_set(
                    count,
                    match header.endian {
                        Endian::Big => f64::from_be_bytes(raw),
                        Endian::Little => f64::from_le_bytes(raw),
                    },
                )?;
            }
            b'c' => {
                if size == 0 {
                    let previous = match count {
                        0 => None,
                        _ => super::native::to_number(lua, Some(&results.raw_get(count)?)),
                    };
                    let Some(n) = previous.filter(|n| *n >= 0.0) else {
                        return Err(Raise::Located("format 'c0' needs a previous size".into()));
                    };
                    results.raw_set(count, Value::Nil)?;
                    count -= 1;
                    size = double_to_u64(n) as usize;
                    if size > ld || pos > ld - size {
                        return Err(too_short());
                    }
                }
                count += 1;
                results.raw_set(count, lua.create_string(&data[pos..pos + size])?)?;
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(Raise::Located("unfinished string in data".into()));
                };
                size = len + 1;
                count += 1;
                results.raw_set(count, lua.create_string(&data[pos..pos + len])?)?;
            }
            _ => control(lua, opt, &mut format, &mut header)?,
        }
        pos = pos.wrapping_add(size);
    }
    count += 1;
    results.raw_set(count, pos.wrapping_add(1) as f64)?;
    spread(results, count)
}
