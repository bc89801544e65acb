//! Strings as bit arrays: SETBIT, GETBIT, BITCOUNT, BITPOS and BITOP, with Redis 8's semantics
//! (bit 0 is the most significant bit of the first byte; a missing key reads as zeros). The
//! BITFIELD family is in `bitfield.rs`.

use super::args::{int, keyword, Args, Items};
use super::errors::*;
use super::key_specs::*;
use super::spec::{bits, command_table, CommandSpec, KeySpec};
use super::string_limits::{bit_offset, bytes_for_bit, Limits};
use super::Ctx;
use crate::protocol::Request;
use crate::store::Value;

fn bit_at(bytes: &[u8], offset: u64) -> bool {
    let mask = 0x80 >> (offset & 7);
    usize::try_from(offset >> 3)
        .ok()
        .and_then(|byte| bytes.get(byte))
        .is_some_and(|byte| byte & mask != 0)
}

/// GETBIT key offset, and SETBIT's first words.
struct BitAt<'a> {
    key: &'a [u8],
    offset: u64,
}

impl<'a> BitAt<'a> {
    fn parse(args: &mut Args<'a>, limits: Limits) -> Result<Self, CmdError> {
        Ok(BitAt {
            key: args.required()?,
            offset: bit_offset(args.required()?, None, limits)?,
        })
    }
}

/// SETBIT key offset value
struct SetBit<'a> {
    at: BitAt<'a>,
    on: bool,
}

impl<'a> SetBit<'a> {
    fn parse(request: Request<'a>, limits: Limits) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(SetBit {
            at: BitAt::parse(&mut args, limits)?,
            on: args.int_in(0..=1, BIT_VALUE)? == 1,
        })
    }
}

/// SETBIT key offset value: the bit's old value. The string grows zero-filled to hold it.
fn setbit(ctx: &mut Ctx, request: Request) -> CmdResult {
    let limits = Limits::of(ctx);
    let SetBit {
        at: BitAt { key, offset },
        on,
    } = SetBit::parse(request, limits)?;
    let len = bytes_for_bit(offset)?;
    let create = || limits.zeroed(len).map(Value::String);
    let old = ctx.db().get_or_create(key, ctx.now, create, |value, _| {
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

fn getbit(ctx: &mut Ctx, request: Request) -> CmdResult {
    let BitAt { key, offset } = BitAt::parse(&mut Args::new(request, 1), Limits::of(ctx))?;
    let bit = ctx.db().get(key, ctx.now, |value| match value {
        Some(Value::String(bytes)) => Ok(bit_at(bytes, offset)),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(false),
    })?;
    ctx.reply.int(i64::from(bit));
    Ok(())
}

/// BYTE or BIT, the unit of a range: whether it is BIT.
fn unit_is_bit(arg: &[u8]) -> Result<bool, CmdError> {
    keyword(arg, &[("BIT", true), ("BYTE", false)]).ok_or_else(|| SYNTAX.into())
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
struct BitCount<'a> {
    key: &'a [u8],
    /// Start, end, and whether they count bits.
    range: Option<(i64, i64, bool)>,
}

impl<'a> BitCount<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let range = match args.remaining() {
            0 => None,
            2 | 3 => {
                let start = args.int(NOT_INTEGER)?;
                let end = args.int(NOT_INTEGER)?;
                let in_bits = args.next().map(unit_is_bit).transpose()?;
                Some((start, end, in_bits.unwrap_or(false)))
            }
            _ => return Err(SYNTAX.into()),
        };
        Ok(BitCount { key, range })
    }
}

fn bitcount(ctx: &mut Ctx, request: Request) -> CmdResult {
    let BitCount { key, range } = BitCount::parse(request)?;
    let count = ctx.db().get(key, ctx.now, |value| {
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

/// BITPOS key bit [start [end [BYTE | BIT]]]. Redis reads the unit before the end.
struct BitPos<'a> {
    key: &'a [u8],
    bit: bool,
    start: i64,
    end: Option<i64>,
    in_bits: bool,
}

impl<'a> BitPos<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let bit = match args.int(NOT_INTEGER)? {
            0 => false,
            1 => true,
            _ => return Err(BITPOS_BIT.into()),
        };
        if args.remaining() > 3 {
            return Err(SYNTAX.into());
        }
        let (start, end, unit) = (args.next(), args.next(), args.next());
        let start = start.map_or(Ok(0), |start| int(start, NOT_INTEGER))?;
        let in_bits = unit.map(unit_is_bit).transpose()?.unwrap_or(false);
        let end = end.map(|end| int(end, NOT_INTEGER)).transpose()?;
        Ok(BitPos {
            key,
            bit,
            start,
            end,
            in_bits,
        })
    }
}

/// BITPOS key bit [start [end [BYTE | BIT]]]: the first bit set (or clear) in the range; -1
/// if none. Without an end, a string is followed by clear bits, so a clear bit is always found.
fn bitpos(ctx: &mut Ctx, request: Request) -> CmdResult {
    let BitPos {
        key,
        bit,
        start,
        end,
        in_bits,
    } = BitPos::parse(request)?;
    let found = ctx.db().get(key, ctx.now, |value| {
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

/// BITOP AND | OR | XOR | NOT destkey key...
struct BitOpRequest<'a> {
    op: BitOp,
    destination: &'a [u8],
    sources: Items<'a>,
}

impl<'a> BitOpRequest<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        const OPERATIONS: &[(&str, BitOp)] = &[
            ("AND", BitOp::And),
            ("OR", BitOp::Or),
            ("XOR", BitOp::Xor),
            ("NOT", BitOp::Not),
        ];
        let mut args = Args::new(request, 1);
        let op = keyword(args.required()?, OPERATIONS).ok_or(SYNTAX)?;
        let destination = args.required()?;
        let sources = args.items();
        if op == BitOp::Not && sources.len() != 1 {
            return Err(BITOP_NOT_ONE_SOURCE.into());
        }
        Ok(BitOpRequest {
            op,
            destination,
            sources,
        })
    }
}

/// BITOP AND | OR | XOR | NOT destkey key...: stores the result (as long as the longest
/// source, shorter ones read as zeros) and returns its length; an empty result deletes the
/// destination. Redis 7.0's operations; Redis 8.2's DIFF, DIFF1, ANDOR and ONE are not here.
fn bitop(ctx: &mut Ctx, request: Request) -> CmdResult {
    let BitOpRequest {
        op,
        destination,
        sources,
    } = BitOpRequest::parse(request)?;
    let db = ctx.db();
    let mut longest = 0;
    for source in sources.iter() {
        let len = db.get(source, ctx.now, |value| match value {
            Some(Value::String(bytes)) => Ok(bytes.len()),
            Some(_) => Err(CmdError::from(WRONGTYPE)),
            None => Ok(0),
        })?;
        longest = longest.max(len);
    }
    if longest == 0 {
        db.remove(destination, ctx.now);
        ctx.reply.int(0);
        return Ok(());
    }
    // Each source is read under its own lock, straight into the result: none is copied whole.
    let mut result = Limits::of(ctx).zeroed(longest)?;
    for (index, source) in sources.iter().enumerate() {
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

/// Bit commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Bitmap:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "setbit", 4, [WRITE, DENYOOM], RW_ACCESS_UPDATE, [BITMAP], setbit, docs::SETBIT;
    "getbit", 3, [READONLY, FAST], RO_ACCESS, [BITMAP], getbit, docs::GETBIT;
    "bitcount", -2, [READONLY], RO_ACCESS, [BITMAP], bitcount, docs::BITCOUNT;
    "bitpos", -3, [READONLY], RO_ACCESS, [BITMAP], bitpos, docs::BITPOS;
    "bitop", -4, [WRITE, DENYOOM], BITOP_KEYS, [BITMAP], bitop, docs::BITOP;
};

/// BITOP's destination, then its sources.
const BITOP_KEYS: &[KeySpec] = &[
    KeySpec::range(bits![KeyFlags: OW, UPDATE], 2, 0, 1),
    KeySpec::range(bits![KeyFlags: RO, ACCESS], 3, -1, 1),
];

/// What COMMAND DOCS says of each, in Redis 8's words.
mod docs {
    use super::super::spec::{block, integer, key, one_of, pure_token, Arg, Docs};

    pub(super) const SETBIT: Docs = Docs::new("Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.")
        .since("2.2.0")
        .complexity("O(1)")
        .args(&[key("key"), integer("offset"), integer("value")]);
    pub(super) const GETBIT: Docs = Docs::new("Returns a bit value by offset.")
        .since("2.2.0")
        .complexity("O(1)")
        .args(&[key("key"), integer("offset")]);
    pub(super) const BITCOUNT: Docs =
        Docs::new("Counts the number of set bits (population counting) in a string.")
            .since("2.6.0")
            .complexity("O(N)")
            .history(&[("7.0.0", "Added the `BYTE|BIT` option.")])
            .args(&[
                key("key"),
                block("range", &[integer("start"), integer("end"), RANGE_UNIT]).optional(),
            ]);
    pub(super) const BITPOS: Docs =
        Docs::new("Finds the first set (1) or clear (0) bit in a string.")
            .since("2.8.7")
            .complexity("O(N)")
            .history(&[("7.0.0", "Added the `BYTE|BIT` option.")])
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
            ]);
    pub(super) const BITOP: Docs =
        Docs::new("Performs bitwise operations on multiple strings, and stores the result.")
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
            ]);

    const RANGE_UNIT: Arg = one_of(
        "unit",
        &[pure_token("byte", "BYTE"), pure_token("bit", "BIT")],
    )
    .since("7.0.0")
    .optional();
}
