//! Strings as bit arrays: SETBIT, GETBIT, BITCOUNT, BITPOS and BITOP, with Redis 8's semantics
//! (bit 0 is the most significant bit of the first byte; a missing key reads as zeros). The
//! BITFIELD family is in `bitfield.rs`.

use super::args::{is, parse_i64};
use super::errors::*;
use super::spec::{bits, block, integer, key, one_of, pure_token, CommandSpec, Group, KeySpec};
use super::strings::Limits;
use super::Ctx;
use crate::protocol::Request;
use crate::store::Value;

/// A bit offset as Redis reads one: a non-negative integer (with `#`, when `width` is given,
/// a count of fields of that width) whose byte lies within `proto-max-bulk-len`.
pub(super) fn bit_offset(arg: &[u8], width: Option<u32>, limits: Limits) -> Result<u64, CmdError> {
    let (counted, digits) = match (arg, width) {
        ([b'#', rest @ ..], Some(width)) => (Some(width), rest),
        _ => (None, arg),
    };
    let offset = parse_i64(digits).ok_or(BIT_OFFSET)?;
    let offset = match counted {
        Some(width) => offset.checked_mul(i64::from(width)).ok_or(BIT_OFFSET)?,
        None => offset,
    };
    match u64::try_from(offset) {
        Ok(offset) if (offset >> 3) < limits.max_len => Ok(offset),
        _ => Err(BIT_OFFSET.into()),
    }
}

/// The length in bytes that holds bit `offset`, as a usize (offsets are below 2^63).
pub(super) fn bytes_for_bit(offset: u64) -> Result<usize, CmdError> {
    usize::try_from((offset >> 3) + 1).map_err(|_| CmdError::from(STRING_TOO_LONG))
}

fn bit_at(bytes: &[u8], offset: u64) -> bool {
    let mask = 0x80 >> (offset & 7);
    usize::try_from(offset >> 3)
        .ok()
        .and_then(|byte| bytes.get(byte))
        .is_some_and(|byte| byte & mask != 0)
}

/// SETBIT key offset value: the bit's old value. The string grows zero-filled to hold it.
pub(super) fn setbit(ctx: &mut Ctx, request: Request) -> CmdResult {
    let limits = Limits::of(ctx);
    let offset = bit_offset(request.arg(2), None, limits)?;
    let on = match parse_i64(request.arg(3)) {
        Some(0) => false,
        Some(1) => true,
        _ => return Err(BIT_VALUE.into()),
    };
    let len = bytes_for_bit(offset)?;
    let create = || limits.zeroed(len).map(Value::String);
    let old = ctx
        .db()
        .get_or_create(request.arg(1), ctx.now, create, |value, _| {
            let Value::String(bytes) = value else {
                return Err(CmdError::from(WRONGTYPE));
            };
            limits.grow_zeroed(bytes, len)?;
            let mask = 0x80 >> (offset & 7);
            let byte = &mut bytes[len - 1];
            let old = *byte & mask != 0;
            if on {
                *byte |= mask;
            } else {
                *byte &= !mask;
            }
            Ok(old)
        })??;
    ctx.reply.int(i64::from(old));
    Ok(())
}

pub(super) fn getbit(ctx: &mut Ctx, request: Request) -> CmdResult {
    let offset = bit_offset(request.arg(2), None, Limits::of(ctx))?;
    let bit = ctx.db().get(request.arg(1), ctx.now, |value| match value {
        Some(Value::String(bytes)) => Ok(bit_at(bytes, offset)),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(false),
    })?;
    ctx.reply.int(i64::from(bit));
    Ok(())
}

/// BYTE or BIT, the unit of a range.
fn unit_is_bit(arg: &[u8]) -> Result<bool, CmdError> {
    if is(arg, "BIT") {
        Ok(true)
    } else if is(arg, "BYTE") {
        Ok(false)
    } else {
        Err(SYNTAX.into())
    }
}

/// A range of a string's bits, first and last included, once negative indexes are resolved
/// and the end is clamped to the string, as Redis does; None when it is empty.
fn bit_range(len_bytes: usize, start: i64, end: i64, in_bits: bool) -> Option<(u64, u64)> {
    let total = if in_bits {
        len_bytes as i64 * 8
    } else {
        len_bytes as i64
    };
    let resolve = |index: i64| {
        if index < 0 {
            (total + index).max(0)
        } else {
            index
        }
    };
    let (start, end) = (resolve(start), resolve(end).min(total - 1));
    if start > end {
        return None;
    }
    Some(if in_bits {
        (start as u64, end as u64)
    } else {
        (start as u64 * 8, end as u64 * 8 + 7)
    })
}

/// Set bits from bit `first` to bit `last`, both included (both within `bytes`).
fn count_ones(bytes: &[u8], first: u64, last: u64) -> u64 {
    let (first_byte, last_byte) = ((first >> 3) as usize, (last >> 3) as usize);
    let head_mask = 0xffu8 >> (first & 7);
    let tail_mask = 0xffu8 << (7 - (last & 7));
    if first_byte == last_byte {
        return u64::from((bytes[first_byte] & head_mask & tail_mask).count_ones());
    }
    let middle = &bytes[first_byte + 1..last_byte];
    let (words, rest) = middle.split_at(middle.len() / 8 * 8);
    let mut count = words
        .chunks_exact(8)
        .map(|word| u64::from(u64::from_ne_bytes(word.try_into().unwrap_or_default()).count_ones()))
        .sum::<u64>();
    count += rest.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
    count
        + u64::from((bytes[first_byte] & head_mask).count_ones())
        + u64::from((bytes[last_byte] & tail_mask).count_ones())
}

/// BITCOUNT key [start end [BYTE | BIT]]. Redis 8 checks the arguments before the key (7.0
/// answers 0 for a missing key whatever follows it).
pub(super) fn bitcount(ctx: &mut Ctx, request: Request) -> CmdResult {
    let range = match request.len() {
        2 => None,
        4 | 5 => {
            let start = parse_i64(request.arg(2)).ok_or(NOT_INTEGER)?;
            let end = parse_i64(request.arg(3)).ok_or(NOT_INTEGER)?;
            let in_bits = request.len() == 5 && unit_is_bit(request.arg(4))?;
            Some((start, end, in_bits))
        }
        _ => return Err(SYNTAX.into()),
    };
    let count = ctx.db().get(request.arg(1), ctx.now, |value| {
        let bytes = match value {
            Some(Value::String(bytes)) => bytes,
            Some(_) => return Err(CmdError::from(WRONGTYPE)),
            None => return Ok(0),
        };
        let bits = match range {
            None => bit_range(bytes.len(), 0, -1, false),
            Some((start, end, _)) if start < 0 && end < 0 && start > end => None,
            Some((start, end, in_bits)) => bit_range(bytes.len(), start, end, in_bits),
        };
        Ok(bits.map_or(0, |(first, last)| count_ones(bytes, first, last)))
    })?;
    ctx.reply.int(count as i64);
    Ok(())
}

/// The first bit equal to `bit` from bit `first` to bit `last`, both included. Whole bytes,
/// eight at a time, that cannot hold it are skipped.
fn find_bit(bytes: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
    let skip = if bit { 0x00 } else { 0xff };
    let mut at = first;
    while at <= last {
        let byte = (at >> 3) as usize;
        if at & 7 == 0 && last - at >= 63 {
            let word: [u8; 8] = bytes[byte..byte + 8].try_into().unwrap_or([!skip; 8]);
            if word == [skip; 8] {
                at += 64;
                continue;
            }
        }
        if at & 7 == 0 && last - at >= 7 && bytes[byte] == skip {
            at += 8;
            continue;
        }
        if bit_at(bytes, at) == bit {
            return Some(at);
        }
        at += 1;
    }
    None
}

/// BITPOS key bit [start [end [BYTE | BIT]]]: the first bit set (or clear) in the range; -1
/// if none. Without an end, a string is followed by clear bits, so a clear bit is always found.
pub(super) fn bitpos(ctx: &mut Ctx, request: Request) -> CmdResult {
    let bit = match parse_i64(request.arg(2)).ok_or(NOT_INTEGER)? {
        0 => false,
        1 => true,
        _ => return Err("ERR The bit argument must be 1 or 0.".into()),
    };
    if request.len() > 6 {
        return Err(SYNTAX.into());
    }
    let start = match request.len() {
        3 => 0,
        _ => parse_i64(request.arg(3)).ok_or(NOT_INTEGER)?,
    };
    let in_bits = request.len() == 6 && unit_is_bit(request.arg(5))?;
    let end = match request.len() {
        5 | 6 => Some(parse_i64(request.arg(4)).ok_or(NOT_INTEGER)?),
        _ => None,
    };
    let found = ctx.db().get(request.arg(1), ctx.now, |value| {
        let bytes = match value {
            Some(Value::String(bytes)) => bytes,
            Some(_) => return Err(CmdError::from(WRONGTYPE)),
            None => return Ok(if bit { -1 } else { 0 }),
        };
        let Some((first, last)) = bit_range(bytes.len(), start, end.unwrap_or(-1), in_bits) else {
            return Ok(-1);
        };
        Ok(match find_bit(bytes, first, last, bit) {
            Some(at) => at as i64,
            None if !bit && end.is_none() => last as i64 + 1,
            None => -1,
        })
    })?;
    ctx.reply.int(found);
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// Combines `source` (read as zeros past its end) into the first `result.len()` bytes.
fn combine(op: BitOp, result: &mut [u8], source: &[u8]) {
    let shared = source.len().min(result.len());
    let (head, tail) = result.split_at_mut(shared);
    match op {
        BitOp::And => {
            head.iter_mut().zip(source).for_each(|(r, s)| *r &= s);
            tail.fill(0);
        }
        BitOp::Or => head.iter_mut().zip(source).for_each(|(r, s)| *r |= s),
        BitOp::Xor => head.iter_mut().zip(source).for_each(|(r, s)| *r ^= s),
        BitOp::Not => {
            head.iter_mut().zip(source).for_each(|(r, s)| *r = !s);
            tail.fill(0xff);
        }
    }
}

/// BITOP AND | OR | XOR | NOT destkey key...: stores the result (as long as the longest
/// source, shorter ones read as zeros) and returns its length; an empty result deletes the
/// destination. Redis 7.0's operations; Redis 8.2's DIFF, DIFF1, ANDOR and ONE are not here.
pub(super) fn bitop(ctx: &mut Ctx, request: Request) -> CmdResult {
    let name = request.arg(1);
    let op = [
        ("AND", BitOp::And),
        ("OR", BitOp::Or),
        ("XOR", BitOp::Xor),
        ("NOT", BitOp::Not),
    ]
    .into_iter()
    .find(|(known, _)| is(name, known))
    .map(|(_, op)| op)
    .ok_or(SYNTAX)?;
    if op == BitOp::Not && request.len() != 4 {
        return Err("ERR BITOP NOT must be called with a single source key.".into());
    }
    let db = ctx.db();
    let sources = || request.args().skip(3);
    let mut longest = 0;
    for source in sources() {
        let len = db.get(source, ctx.now, |value| match value {
            Some(Value::String(bytes)) => Ok(bytes.len()),
            Some(_) => Err(CmdError::from(WRONGTYPE)),
            None => Ok(0),
        })?;
        longest = longest.max(len);
    }
    let destination = request.arg(2);
    if longest == 0 {
        db.remove(destination, ctx.now);
        ctx.reply.int(0);
        return Ok(());
    }
    // Each source is read under its own lock, straight into the result: none is copied whole.
    let mut result = Limits::of(ctx).zeroed(longest)?;
    for (index, source) in sources().enumerate() {
        let op = match (index, op) {
            (0, BitOp::Not) => BitOp::Not,
            (0, _) => BitOp::Or,
            _ => op,
        };
        db.get(source, ctx.now, |value| match value {
            Some(Value::String(bytes)) => combine(op, &mut result, bytes),
            _ => combine(op, &mut result, &[]),
        });
    }
    let len = result.len();
    db.insert(destination, Value::String(result), 0);
    ctx.reply.int(len as i64);
    Ok(())
}

const RANGE_UNIT: crate::cmd::spec::Arg = one_of(
    "unit",
    &[pure_token("byte", "BYTE"), pure_token("bit", "BIT")],
)
.since("7.0.0")
.optional();

/// Bit commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "setbit",
        4,
        Group::Bitmap,
        "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.",
        setbit,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE], 1, 0, 1)])
    .acl(bits![Acl: BITMAP])
    .since("2.2.0")
    .complexity("O(1)")
    .args(&[key("key"), integer("offset"), integer("value")]),
    CommandSpec::new(
        "getbit",
        3,
        Group::Bitmap,
        "Returns a bit value by offset.",
        getbit,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1)])
    .acl(bits![Acl: BITMAP])
    .since("2.2.0")
    .complexity("O(1)")
    .args(&[key("key"), integer("offset")]),
    CommandSpec::new(
        "bitcount",
        -2,
        Group::Bitmap,
        "Counts the number of set bits (population counting) in a string.",
        bitcount,
    )
    .flags(bits![Flags: READONLY])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1)])
    .acl(bits![Acl: BITMAP])
    .since("2.6.0")
    .complexity("O(N)")
    .history(&[
        ("7.0.0", "Added the `BYTE|BIT` option."),
    ])
    .args(&[
        key("key"),
        block("range", &[integer("start"), integer("end"), RANGE_UNIT]).optional(),
    ]),
    CommandSpec::new(
        "bitpos",
        -3,
        Group::Bitmap,
        "Finds the first set (1) or clear (0) bit in a string.",
        bitpos,
    )
    .flags(bits![Flags: READONLY])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1)])
    .acl(bits![Acl: BITMAP])
    .since("2.8.7")
    .complexity("O(N)")
    .history(&[
        ("7.0.0", "Added the `BYTE|BIT` option."),
    ])
    .args(&[
        key("key"),
        integer("bit"),
        block(
            "range",
            &[
                integer("start"),
                block("end-unit-block", &[integer("end"), RANGE_UNIT]).optional(),
            ],
        )
        .optional(),
    ]),
    CommandSpec::new(
        "bitop",
        -4,
        Group::Bitmap,
        "Performs bitwise operations on multiple strings, and stores the result.",
        bitop,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[
        KeySpec::range(bits![KeyFlags: OW, UPDATE], 2, 0, 1),
        KeySpec::range(bits![KeyFlags: RO, ACCESS], 3, -1, 1),
    ])
    .acl(bits![Acl: BITMAP])
    .since("2.6.0")
    .complexity("O(N)")
    .args(&[
        one_of(
            "operation",
            &[
                pure_token("and", "AND"),
                pure_token("or", "OR"),
                pure_token("xor", "XOR"),
                pure_token("not", "NOT"),
            ],
        ),
        key("destkey"),
        key("key").key_spec(1).multiple(),
    ]),
];
