//! Strings as counters: INCR, DECR, INCRBY, DECRBY and INCRBYFLOAT, in place (an expiry stays).

use super::args::{parse_i64, Args, Key};
use super::errors::*;
use super::key_specs::RW_ACCESS_UPDATE;
use super::long_double::{format_float, parse_float, Extended, Parsed};
use super::spec::{command_table, CommandSpec};
use super::Ctx;
use crate::protocol::Request;
use crate::store::Value;

/// Applies `change` to the string at `key` (an absent key reads as an empty string, flagged),
/// atomically: the key's lock is held from read to write. The new value replaces the old one's
/// bytes only when `change` succeeds; it must not fail for a key it created, which would be
/// left behind empty.
fn update<T>(
    ctx: &Ctx,
    key: &[u8],
    change: impl FnOnce(&[u8], bool) -> Result<(Vec<u8>, T), CmdError>,
) -> Result<T, CmdError> {
    let create = || Ok::<_, CmdError>(Value::String(Vec::new()));
    ctx.db()
        .get_or_create(key, ctx.now, create, |value, created| {
            let Value::String(bytes) = value else {
                return Err(CmdError::from(WRONGTYPE));
            };
            let (new, result) = change(bytes, created)?;
            *bytes = new;
            Ok(result)
        })?
}

fn incr_by(ctx: &mut Ctx, key: &[u8], by: i64) -> CmdResult {
    let value = update(ctx, key, |bytes, created| {
        let current = if created {
            0
        } else {
            parse_i64(bytes).ok_or(NOT_INTEGER)?
        };
        let new = current.checked_add(by).ok_or(INCR_OVERFLOW)?;
        Ok((itoa::Buffer::new().format(new).as_bytes().to_vec(), new))
    })?;
    ctx.reply.int(value);
    Ok(())
}

/// INCRBY key increment, DECRBY key decrement: the amount to add, a decrement negated.
struct By<'a> {
    key: &'a [u8],
    by: i64,
}

impl<'a> By<'a> {
    fn parse(request: Request<'a>, decrement: bool) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let by = args.int(NOT_INTEGER)?;
        let by = match decrement {
            true => by.checked_neg().ok_or(DECR_OVERFLOW)?,
            false => by,
        };
        Ok(By { key, by })
    }
}

fn incr(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    incr_by(ctx, key, 1)
}

fn decr(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    incr_by(ctx, key, -1)
}

fn incrby(ctx: &mut Ctx, request: Request) -> CmdResult {
    let By { key, by } = By::parse(request, false)?;
    incr_by(ctx, key, by)
}

fn decrby(ctx: &mut Ctx, request: Request) -> CmdResult {
    let By { key, by } = By::parse(request, true)?;
    incr_by(ctx, key, by)
}

/// INCRBYFLOAT key increment: the increment read as `strtold` reads it, None if it is not a
/// float; what that is an error of depends on the key (see `incrbyfloat`).
struct IncrByFloat<'a> {
    key: &'a [u8],
    by: Option<Parsed>,
}

impl<'a> IncrByFloat<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(IncrByFloat {
            key: args.required()?,
            by: parse_float(args.required()?),
        })
    }
}

/// INCRBYFLOAT key increment, in long double as Redis computes it (see `long_double.rs`).
/// Logged as `SET key result KEEPTTL`, as Redis propagates it, so that replay repeats no
/// arithmetic.
fn incrbyfloat(ctx: &mut Ctx, request: Request) -> CmdResult {
    let IncrByFloat { key, by } = IncrByFloat::parse(request)?;
    let Some(Parsed::Finite(by)) = by else {
        // Fails whatever the key holds (an infinite sum, or no number); Redis reports the
        // key's type, then its value, first.
        let current = ctx.db().get(key, ctx.now, |value| match value {
            Some(Value::String(bytes)) => Ok(parse_float(bytes).is_some()),
            Some(_) => Err(CmdError::from(WRONGTYPE)),
            None => Ok(true),
        })?;
        return Err(match (current, by) {
            (true, Some(_)) => FLOAT_NAN_OR_INF.into(),
            _ => NOT_FLOAT.into(),
        });
    };
    let result = update(ctx, key, |bytes, created| {
        let current = match parse_float(bytes) {
            _ if created => Extended::ZERO,
            Some(Parsed::Finite(current)) => current,
            Some(Parsed::Infinite) => return Err(FLOAT_NAN_OR_INF.into()),
            None => return Err(NOT_FLOAT.into()),
        };
        let sum = current.add(by).ok_or(FLOAT_NAN_OR_INF)?;
        let text = format_float(sum);
        Ok((text.clone(), text))
    })?;
    ctx.note_effect([&b"SET"[..], key, &result, b"KEEPTTL"]);
    ctx.log_effects_only();
    ctx.reply.bulk(&result);
    Ok(())
}

/// Counter commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &command_table! { String:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "incr", 2, [WRITE, DENYOOM, FAST], RW_ACCESS_UPDATE, [STRING], incr, docs::INCR;
    "decr", 2, [WRITE, DENYOOM, FAST], RW_ACCESS_UPDATE, [STRING], decr, docs::DECR;
    "incrby", 3, [WRITE, DENYOOM, FAST], RW_ACCESS_UPDATE, [STRING], incrby, docs::INCRBY;
    "decrby", 3, [WRITE, DENYOOM, FAST], RW_ACCESS_UPDATE, [STRING], decrby, docs::DECRBY;
    "incrbyfloat", 3, [WRITE, DENYOOM, FAST], RW_ACCESS_UPDATE, [STRING], incrbyfloat, docs::INCRBYFLOAT;
};

/// What COMMAND DOCS says of each, in Redis 8's words.
mod docs {
    use super::super::spec::{double, integer, key, Docs};

    pub(super) const INCR: Docs = Docs::new("Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.")
        .complexity("O(1)")
        .args(&[key("key")]);
    pub(super) const DECR: Docs = Docs::new("Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.")
        .complexity("O(1)")
        .args(&[key("key")]);
    pub(super) const INCRBY: Docs = Docs::new("Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.")
        .complexity("O(1)")
        .args(&[key("key"), integer("increment")]);
    pub(super) const DECRBY: Docs = Docs::new("Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.")
        .complexity("O(1)")
        .args(&[key("key"), integer("decrement")]);
    pub(super) const INCRBYFLOAT: Docs = Docs::new("Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.")
        .since("2.6.0")
        .complexity("O(1)")
        .args(&[key("key"), double("increment")]);
}
