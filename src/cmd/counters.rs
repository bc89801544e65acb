//! Strings as counters: INCR, DECR, INCRBY, DECRBY and INCRBYFLOAT, in place (an expiry stays).

use super::args::parse_i64;
use super::errors::*;
use super::extended::{Extended, Parsed};
use super::spec::{bits, double, integer, key, CommandSpec, Group, KeySpec};
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

pub(super) fn incr(ctx: &mut Ctx, request: Request) -> CmdResult {
    incr_by(ctx, request.arg(1), 1)
}

pub(super) fn decr(ctx: &mut Ctx, request: Request) -> CmdResult {
    incr_by(ctx, request.arg(1), -1)
}

pub(super) fn incrby(ctx: &mut Ctx, request: Request) -> CmdResult {
    let by = parse_i64(request.arg(2)).ok_or(NOT_INTEGER)?;
    incr_by(ctx, request.arg(1), by)
}

pub(super) fn decrby(ctx: &mut Ctx, request: Request) -> CmdResult {
    let by = parse_i64(request.arg(2)).ok_or(NOT_INTEGER)?;
    let by = by.checked_neg().ok_or(DECR_OVERFLOW)?;
    incr_by(ctx, request.arg(1), by)
}

/// A float as Redis's `string2ld` reads one: `strtold` over the whole text, shorter than
/// 5 KB. None when not a valid float.
pub(super) fn parse_float(text: &[u8]) -> Option<Parsed> {
    const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;
    (text.len() < MAX_LONG_DOUBLE_CHARS)
        .then(|| Extended::parse(text))
        .flatten()
}

/// Redis's human format for a long double: `%.17Lf`, trailing zeros and point dropped, and
/// "-0" written "0".
pub(super) fn format_float(value: Extended) -> Vec<u8> {
    let mut text = value.to_fixed17();
    let kept = text.trim_end_matches('0').trim_end_matches('.').len();
    text.truncate(kept);
    if text == "-0" {
        text = "0".into();
    }
    text.into_bytes()
}

/// INCRBYFLOAT key increment, in long double as Redis computes it (see `extended.rs`). Logged
/// as `SET key result KEEPTTL`, as Redis propagates it, so that replay repeats no arithmetic.
pub(super) fn incrbyfloat(ctx: &mut Ctx, request: Request) -> CmdResult {
    let key = request.arg(1);
    let Some(Parsed::Finite(by)) = parse_float(request.arg(2)) else {
        // Fails whatever the key holds (an infinite sum, or no number); Redis reports the
        // key's type, then its value, first.
        let current = ctx.db().get(key, ctx.now, |value| match value {
            Some(Value::String(bytes)) => Ok(parse_float(bytes).is_some()),
            Some(_) => Err(CmdError::from(WRONGTYPE)),
            None => Ok(true),
        })?;
        return Err(match (current, parse_float(request.arg(2))) {
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

const COUNTER_KEY: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE], 1, 0, 1)];

/// Counter commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "incr",
        2,
        Group::String,
        "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        incr,
    )
    .flags(bits![Flags: WRITE, DENYOOM, FAST])
    .key_specs(COUNTER_KEY)
    .acl(bits![Acl: STRING])
    .complexity("O(1)")
    .args(&[key("key")]),
    CommandSpec::new(
        "decr",
        2,
        Group::String,
        "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        decr,
    )
    .flags(bits![Flags: WRITE, DENYOOM, FAST])
    .key_specs(COUNTER_KEY)
    .acl(bits![Acl: STRING])
    .complexity("O(1)")
    .args(&[key("key")]),
    CommandSpec::new(
        "incrby",
        3,
        Group::String,
        "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        incrby,
    )
    .flags(bits![Flags: WRITE, DENYOOM, FAST])
    .key_specs(COUNTER_KEY)
    .acl(bits![Acl: STRING])
    .complexity("O(1)")
    .args(&[key("key"), integer("increment")]),
    CommandSpec::new(
        "decrby",
        3,
        Group::String,
        "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.",
        decrby,
    )
    .flags(bits![Flags: WRITE, DENYOOM, FAST])
    .key_specs(COUNTER_KEY)
    .acl(bits![Acl: STRING])
    .complexity("O(1)")
    .args(&[key("key"), integer("decrement")]),
    CommandSpec::new(
        "incrbyfloat",
        3,
        Group::String,
        "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        incrbyfloat,
    )
    .flags(bits![Flags: WRITE, DENYOOM, FAST])
    .key_specs(COUNTER_KEY)
    .acl(bits![Acl: STRING])
    .since("2.6.0")
    .complexity("O(1)")
    .args(&[key("key"), double("increment")]),
];
