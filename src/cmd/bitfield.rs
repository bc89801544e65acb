//! BITFIELD and BITFIELD_RO: integers of 1 to 64 bits at any bit offset of a string, read,
//! written and incremented with Redis's overflow rules (WRAP, SAT, FAIL).

use super::args::{keyword, parse_i64, Args};
use super::errors::*;
use super::key_specs::RO_ACCESS;
use super::spec::{bits, command_table, CommandSpec, KeySpec};
use super::string_limits::{bit_offset, bytes_for_bit, Limits};
use super::Ctx;
use crate::protocol::Request;
use crate::store::Value;

#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq)]
enum Action {
    Get,
    Set(i64),
    IncrBy(i64),
}

#[derive(Clone, Copy)]
struct Field {
    signed: bool,
    width: u32,
    offset: u64,
}

struct Op {
    action: Action,
    field: Field,
    overflow: Overflow,
}

/// `i1`..`i64` or `u1`..`u63`.
fn field_type(arg: &[u8]) -> Result<(bool, u32), CmdError> {
    let (signed, digits) = match arg {
        [b'i', rest @ ..] => (true, rest),
        [b'u', rest @ ..] => (false, rest),
        _ => return Err(BITFIELD_BAD_TYPE.into()),
    };
    let max = if signed { 64 } else { 63 };
    match parse_i64(digits) {
        Some(width) if (1..=max).contains(&width) => Ok((signed, width as u32)),
        _ => Err(BITFIELD_BAD_TYPE.into()),
    }
}

/// A subcommand of BITFIELD, by its keyword.
#[derive(Clone, Copy)]
enum Subcommand {
    Get,
    Set,
    IncrBy,
    Overflow,
}

impl Subcommand {
    const KEYWORDS: &[(&str, Subcommand)] = &[
        ("GET", Subcommand::Get),
        ("SET", Subcommand::Set),
        ("INCRBY", Subcommand::IncrBy),
        ("OVERFLOW", Subcommand::Overflow),
    ];

    /// The words it takes after its keyword: fewer left is a syntax error.
    fn words(self) -> usize {
        match self {
            Subcommand::Get => 2,
            Subcommand::Set | Subcommand::IncrBy => 3,
            Subcommand::Overflow => 1,
        }
    }
}

/// BITFIELD key [GET type offset | SET type offset value | INCRBY type offset increment |
/// OVERFLOW WRAP|SAT|FAIL] ...: the operations in order, each with the overflow mode in force
/// where it stands.
struct BitField<'a> {
    key: &'a [u8],
    ops: Vec<Op>,
}

impl<'a> BitField<'a> {
    /// Offsets within `limits`.
    fn parse(request: Request<'a>, limits: Limits) -> Result<Self, CmdError> {
        const OVERFLOWS: &[(&str, Overflow)] = &[
            ("WRAP", Overflow::Wrap),
            ("SAT", Overflow::Sat),
            ("FAIL", Overflow::Fail),
        ];
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let mut ops = Vec::new();
        let mut overflow = Overflow::Wrap;
        while let Some(name) = args.next() {
            let subcommand = keyword(name, Subcommand::KEYWORDS)
                .filter(|subcommand| args.remaining() >= subcommand.words())
                .ok_or(SYNTAX)?;
            if let Subcommand::Overflow = subcommand {
                overflow = args.one_of(OVERFLOWS).ok_or(BITFIELD_BAD_OVERFLOW)?;
                continue;
            }
            let (signed, width) = field_type(args.required()?)?;
            let offset = bit_offset(args.required()?, Some(width), limits)?;
            let action = match subcommand {
                Subcommand::Set => Action::Set(args.int(NOT_INTEGER)?),
                Subcommand::IncrBy => Action::IncrBy(args.int(NOT_INTEGER)?),
                _ => Action::Get,
            };
            ops.push(Op {
                action,
                field: Field {
                    signed,
                    width,
                    offset,
                },
                overflow,
            });
        }
        Ok(BitField { key, ops })
    }
}

/// The field's bits as an unsigned number; bits past the end of the string read as zeros.
fn read_bits(bytes: &[u8], field: Field) -> u64 {
    (0..u64::from(field.width)).fold(0, |value, i| {
        let at = field.offset + i;
        let bit = usize::try_from(at >> 3)
            .ok()
            .and_then(|byte| bytes.get(byte))
            .is_some_and(|byte| byte & (0x80 >> (at & 7)) != 0);
        (value << 1) | u64::from(bit)
    })
}

/// Writes the low `width` bits of `value` (the string is long enough).
fn write_bits(bytes: &mut [u8], field: Field, value: u64) {
    for i in 0..u64::from(field.width) {
        let at = field.offset + i;
        let mask = 0x80 >> (at & 7);
        let byte = &mut bytes[(at >> 3) as usize];
        if value & (1 << (u64::from(field.width) - 1 - i)) != 0 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// The field's value, sign-extended when it is signed.
fn get(bytes: &[u8], field: Field) -> i64 {
    let raw = read_bits(bytes, field);
    if field.signed && field.width < 64 && raw & (1 << (field.width - 1)) != 0 {
        (raw | (u64::MAX << field.width)) as i64
    } else {
        raw as i64
    }
}

/// `value + incr` in the field's type: Some(result) (wrapped or saturated as the mode says),
/// or None when it overflows under FAIL. Redis's rules, including its reading of a SET value
/// that does not fit as an overflow.
fn add(field: Field, value: i64, incr: i64, overflow: Overflow) -> Option<i64> {
    let bits = field.width;
    let (over, under, sat_max, sat_min) = if field.signed {
        let max = if bits == 64 {
            i64::MAX
        } else {
            (1i64 << (bits - 1)) - 1
        };
        let min = -max - 1;
        let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
        let min_incr = min.wrapping_sub(value);
        let over = value > max
            || (bits != 64 && incr > max_incr)
            || (value >= 0 && incr > 0 && incr > max_incr);
        let under = value < min
            || (bits != 64 && incr < min_incr)
            || (value < 0 && incr < 0 && incr < min_incr);
        (over, under, max, min)
    } else {
        let value = value as u64;
        let max = (1u64 << bits) - 1;
        let max_incr = max.wrapping_sub(value) as i64;
        let min_incr = value.wrapping_neg() as i64;
        let over = value > max || (incr > 0 && incr > max_incr);
        let under = !over && incr < 0 && incr < min_incr;
        (over, under, max as i64, 0)
    };
    if !over && !under {
        return Some(value.wrapping_add(incr));
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if over { sat_max } else { sat_min }),
        Overflow::Wrap => {
            let sum = (value as u64).wrapping_add(incr as u64);
            if bits == 64 {
                return Some(sum as i64);
            }
            let high = u64::MAX << bits;
            let negative = field.signed && sum & (1 << (bits - 1)) != 0;
            Some(if negative { sum | high } else { sum & !high } as i64)
        }
    }
}

/// Runs one operation on a string long enough for every write; None for a FAIL overflow.
fn apply(bytes: &mut [u8], op: &Op) -> Option<i64> {
    let old = get(bytes, op.field);
    let (new, reply) = match op.action {
        Action::Get => return Some(old),
        Action::Set(value) => (add(op.field, value, 0, op.overflow)?, old),
        Action::IncrBy(incr) => {
            let new = add(op.field, old, incr, op.overflow)?;
            (new, new)
        }
    };
    write_bits(bytes, op.field, new as u64);
    Some(reply)
}

fn run(ctx: &mut Ctx, request: Request, read_only: bool) -> CmdResult {
    let limits = Limits::of(ctx);
    let BitField { key, ops } = BitField::parse(request, limits)?;
    let last_written = ops
        .iter()
        .filter(|op| op.action != Action::Get)
        .map(|op| op.field.offset + u64::from(op.field.width) - 1)
        .max();
    let results: Vec<Option<i64>> = match last_written {
        None => ctx.db().get(key, ctx.now, |value| match value {
            Some(Value::String(bytes)) => {
                Ok(ops.iter().map(|op| Some(get(bytes, op.field))).collect())
            }
            Some(_) => Err(CmdError::from(WRONGTYPE)),
            None => Ok(ops.iter().map(|_| Some(0)).collect()),
        })?,
        Some(_) if read_only => {
            return Err(BITFIELD_RO_WRITES.into());
        }
        Some(last) => {
            let len = bytes_for_bit(last)?;
            let create = || limits.zeroed(len).map(Value::String);
            ctx.db().get_or_create(key, ctx.now, create, |value, _| {
                let Value::String(bytes) = value else {
                    return Err(CmdError::from(WRONGTYPE));
                };
                limits.grow_zeroed(bytes, len)?;
                Ok(ops.iter().map(|op| apply(bytes, op)).collect())
            })??
        }
    };
    ctx.reply.array(results.len());
    for result in results {
        match result {
            Some(value) => ctx.reply.int(value),
            None => ctx.reply.null(),
        }
    }
    Ok(())
}

fn bitfield(ctx: &mut Ctx, request: Request) -> CmdResult {
    run(ctx, request, false)
}

fn bitfield_ro(ctx: &mut Ctx, request: Request) -> CmdResult {
    run(ctx, request, true)
}

/// BITFIELD and BITFIELD_RO as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Bitmap:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "bitfield", -2, [WRITE, DENYOOM], BITFIELD_KEY, [BITMAP], bitfield,
        docs::BITFIELD;
    "bitfield_ro", -2, [READONLY, FAST], RO_ACCESS, [BITMAP], bitfield_ro, docs::BITFIELD_RO;
};

/// BITFIELD's key, which its GET subcommand reads.
const BITFIELD_KEY: &[KeySpec] =
    &[
        KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE, VARIABLE_FLAGS], 1, 0, 1)
            .notes("This command allows both access and modification of the key"),
    ];

/// What COMMAND DOCS says of each, in Redis 8's words.
mod docs {
    use super::super::spec::{block, integer, key, one_of, pure_token, string, Arg, Docs};

    pub(super) const BITFIELD: Docs =
        Docs::new("Performs arbitrary bitfield integer operations on strings.")
            .since("3.2.0")
            .complexity("O(1) for each subcommand specified")
            .args(&[
                key("key"),
                one_of(
                    "operation",
                    &[
                        GET_BLOCK,
                        block(
                            "write",
                            &[
                                one_of(
                                    "overflow-block",
                                    &[
                                        pure_token("wrap", "WRAP"),
                                        pure_token("sat", "SAT"),
                                        pure_token("fail", "FAIL"),
                                    ],
                                )
                                .token("OVERFLOW")
                                .optional(),
                                one_of(
                                    "write-operation",
                                    &[
                                        block(
                                            "set-block",
                                            &[
                                                string("encoding"),
                                                crate::cmd::spec::integer("offset"),
                                                crate::cmd::spec::integer("value"),
                                            ],
                                        )
                                        .token("SET"),
                                        block(
                                            "incrby-block",
                                            &[
                                                string("encoding"),
                                                crate::cmd::spec::integer("offset"),
                                                crate::cmd::spec::integer("increment"),
                                            ],
                                        )
                                        .token("INCRBY"),
                                    ],
                                ),
                            ],
                        ),
                    ],
                )
                .optional()
                .multiple(),
            ]);
    pub(super) const BITFIELD_RO: Docs =
        Docs::new("Performs arbitrary read-only bitfield integer operations on strings.")
            .since("6.0.0")
            .complexity("O(1) for each subcommand specified")
            .args(&[key("key"), GET_BLOCK.optional().multiple_token()]);

    const GET_BLOCK: Arg =
        block("get-block", &[string("encoding"), integer("offset")]).token("GET");
}
