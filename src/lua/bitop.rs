//! `bit`, LuaBitOp 1.0 as Redis compiles it in: 32-bit operations on Lua numbers, results as
//! signed 32-bit numbers, arguments read as LuaBitOp's `barg` reads them (the low 32 bits of the
//! number rounded to an integer, by adding 2^52+2^51).

use mlua::{Lua, MultiValue, Table, Value};

use super::native::{native, one, type_error, Args, NativeResult};

fn barg(args: &Args, narg: usize) -> Result<u32, super::native::Raise> {
    let n = args.to_number(narg).unwrap_or(0.0);
    let b = (n + 6_755_399_441_055_744.0).to_bits() as u32;
    if b == 0 && args.to_number(narg).is_none() {
        return Err(type_error(args.lua, narg, "number", args.get(narg)));
    }
    Ok(b)
}

fn ret(b: u32) -> NativeResult {
    one(Value::Number(f64::from(b as i32)))
}

fn unary(lua: &Lua, f: fn(u32) -> u32) -> mlua::Result<mlua::Function> {
    native(lua, move |lua, values: MultiValue| {
        let args = Args::new(lua, values);
        ret(f(barg(&args, 1)?))
    })
}

fn fold(lua: &Lua, f: fn(u32, u32) -> u32) -> mlua::Result<mlua::Function> {
    native(lua, move |lua, values: MultiValue| {
        let args = Args::new(lua, values);
        let mut b = barg(&args, 1)?;
        // LuaBitOp reads the arguments from the last one down.
        for i in (2..=args.len()).rev() {
            b = f(b, barg(&args, i)?);
        }
        ret(b)
    })
}

fn shift(lua: &Lua, f: fn(u32, u32) -> u32) -> mlua::Result<mlua::Function> {
    native(lua, move |lua, values: MultiValue| {
        let args = Args::new(lua, values);
        let b = barg(&args, 1)?;
        let n = barg(&args, 2)? & 31;
        ret(f(b, n))
    })
}

pub(crate) fn open(lua: &Lua) -> mlua::Result<Table> {
    let bit = lua.create_table()?;
    bit.raw_set("tobit", unary(lua, |b| b)?)?;
    bit.raw_set("bnot", unary(lua, |b| !b)?)?;
    bit.raw_set("bswap", unary(lua, u32::swap_bytes)?)?;
    bit.raw_set("band", fold(lua, |a, b| a & b)?)?;
    bit.raw_set("bor", fold(lua, |a, b| a | b)?)?;
    bit.raw_set("bxor", fold(lua, |a, b| a ^ b)?)?;
    bit.raw_set("lshift", shift(lua, |b, n| b << n)?)?;
    bit.raw_set("rshift", shift(lua, |b, n| b >> n)?)?;
    bit.raw_set("arshift", shift(lua, |b, n| ((b as i32) >> n) as u32)?)?;
    bit.raw_set("rol", shift(lua, u32::rotate_left)?)?;
    bit.raw_set("ror", shift(lua, u32::rotate_right)?)?;
    bit.raw_set(
        "tohex",
        native(lua, |lua, values| {
            let args = Args::new(lua, values);
            let mut b = barg(&args, 1)?;
            let mut n: i32 = if args.get(2).is_none() {
                8
            } else {
                barg(&args, 2)? as i32
            };
            if n == i32::MIN {
                n = i32::MIN + 1;
            }
            let digits: &[u8; 16] = if n < 0 {
                n = -n;
                b"0123456789ABCDEF"
            } else {
                b"0123456789abcdef"
            };
            let n = n.min(8) as usize;
            let mut buf = vec![0u8; n];
            for slot in buf.iter_mut().rev() {
                *slot = digits[(b & 15) as usize];
                b >>= 4;
            }
            one(Value::String(lua.create_string(buf)?))
        })?,
    )?;
    Ok(bit)
}
