//! What sets make of each other: SINTER, SUNION, SDIFF and their STORE forms, SINTERCARD and
//! SMOVE, as Redis 7.4 has them. Every key is checked for its type before any is used, so a
//! key of another type fails the command even after a missing one (Redis 7.4's order). The
//! STORE forms replace the destination (and its time to live) with the result, or delete it
//! when the result is empty; they are deterministic, so the log keeps the request as sent.

use super::args::{int, is, Args, Items};
use super::collection::modify;
use super::errors::*;
use super::key_specs::*;
use super::spec::{bits, command_table, CommandSpec, KeySpec};
use super::Ctx;
use crate::protocol::Request;
use crate::store::{Bytes, Set, Value};
use std::collections::HashSet;

/// The members of each set named, None for a missing key; WRONGTYPE if any is of another type.
fn read_sets(ctx: &Ctx, keys: Items) -> Result<Vec<Option<HashSet<Bytes>>>, CmdError> {
    keys.iter()
        .map(|key| {
            ctx.db().get(key, ctx.now, |value| match value {
                None => Ok(None),
                Some(Value::Set(set)) => Ok(Some(set.iter().map(Bytes::from).collect())),
                Some(_) => Err(WRONGTYPE.into()),
            })
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The members `op` leaves of `sets` (the sets of `keys`, in order).
fn combine(op: Op, sets: Vec<Option<HashSet<Bytes>>>) -> HashSet<Bytes> {
    match op {
        Op::Inter => {
            if sets.iter().any(Option::is_none) {
                return HashSet::new();
            }
            let mut sets: Vec<HashSet<Bytes>> = sets.into_iter().flatten().collect();
            sets.sort_by_key(HashSet::len);
            let mut sets = sets.into_iter();
            let smallest = sets.next().unwrap_or_default();
            let rest: Vec<HashSet<Bytes>> = sets.collect();
            smallest
                .into_iter()
                .filter(|member| rest.iter().all(|set| set.contains(member)))
                .collect()
        }
        Op::Union => sets.into_iter().flatten().flatten().collect(),
        Op::Diff => {
            let mut sets = sets.into_iter();
            let mut first = sets.next().flatten().unwrap_or_default();
            for set in sets.flatten() {
                first.retain(|member| !set.contains(member));
            }
            first
        }
    }
}

fn reply_members(ctx: &mut Ctx, op: Op, request: Request) -> CmdResult {
    let keys = Args::new(request, 1).items();
    let members = combine(op, read_sets(ctx, keys)?);
    ctx.reply.set(members.len());
    members.iter().for_each(|member| ctx.reply.bulk(member));
    Ok(())
}

fn store_members(ctx: &mut Ctx, op: Op, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let destination = args.required()?;
    let members = combine(op, read_sets(ctx, args.items())?);
    if members.is_empty() {
        ctx.db().remove(destination, ctx.now);
    } else {
        let mut set = Set::default();
        members.iter().for_each(|member| _ = set.insert(member));
        ctx.db().insert(destination, Value::Set(Box::new(set)), 0);
    }
    ctx.reply.int(members.len() as i64);
    Ok(())
}

fn sinter(ctx: &mut Ctx, request: Request) -> CmdResult {
    reply_members(ctx, Op::Inter, request)
}

fn sunion(ctx: &mut Ctx, request: Request) -> CmdResult {
    reply_members(ctx, Op::Union, request)
}

fn sdiff(ctx: &mut Ctx, request: Request) -> CmdResult {
    reply_members(ctx, Op::Diff, request)
}

fn sinterstore(ctx: &mut Ctx, request: Request) -> CmdResult {
    store_members(ctx, Op::Inter, request)
}

fn sunionstore(ctx: &mut Ctx, request: Request) -> CmdResult {
    store_members(ctx, Op::Union, request)
}

fn sdiffstore(ctx: &mut Ctx, request: Request) -> CmdResult {
    store_members(ctx, Op::Diff, request)
}

/// `numkeys key [key ...]`, as SINTERCARD reads it: the keys, and the reader at the words
/// after them.
fn numkeys<'a>(args: &mut Args<'a>, not_positive: &'static str) -> Result<Items<'a>, CmdError> {
    let count = args.int(not_positive)?;
    if count < 1 {
        return Err(not_positive.into());
    }
    if count as u64 > args.remaining() as u64 {
        return Err(NUMKEYS_TOO_MANY.into());
    }
    Ok(args.take_items(count as usize))
}

/// SINTERCARD: `numkeys key [key ...] [LIMIT limit]`, a limit of 0 none.
struct InterCard<'a> {
    keys: Items<'a>,
    limit: usize,
}

impl<'a> InterCard<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let keys = numkeys(&mut args, NUMKEYS_NOT_POSITIVE)?;
        let mut limit = 0;
        while let Some(word) = args.next() {
            match args.peek() {
                Some(value) if is(word, "LIMIT") => {
                    args.next();
                    limit = int(value, LIMIT_NEGATIVE)?;
                    if limit < 0 {
                        return Err(LIMIT_NEGATIVE.into());
                    }
                }
                _ => return Err(SYNTAX.into()),
            }
        }
        Ok(InterCard {
            keys,
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
        })
    }
}

fn sintercard(ctx: &mut Ctx, request: Request) -> CmdResult {
    let InterCard { keys, limit } = InterCard::parse(request)?;
    let count = combine(Op::Inter, read_sets(ctx, keys)?).len();
    let count = if limit > 0 { count.min(limit) } else { count };
    ctx.reply.int(count as i64);
    Ok(())
}

/// SMOVE source destination member. A missing source answers 0 before the destination's
/// type is looked at, as in Redis.
fn smove(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let (source, destination, member) = (args.required()?, args.required()?, args.required()?);
    let kinds = [source, destination].map(|key| {
        ctx.db().get(key, ctx.now, |value| match value {
            None => Ok(None),
            Some(Value::Set(set)) => Ok(Some(set.contains(member))),
            Some(_) => Err(CmdError::from(WRONGTYPE)),
        })
    });
    let [source_has, destination_has] = kinds;
    let Some(source_has) = source_has? else {
        ctx.reply.int(0);
        return Ok(());
    };
    destination_has?;
    if source == destination || !source_has {
        ctx.reply.int(source_has as i64);
        return Ok(());
    }
    modify(ctx, source, |value| match value {
        Some(Value::Set(set)) => Ok(set.remove(member)),
        _ => Ok(false),
    })?;
    let create = || Ok::<_, CmdError>(Value::Set(Box::default()));
    ctx.db()
        .get_or_create(destination, ctx.now, create, |value, _| {
            if let Value::Set(set) = value {
                set.insert(member);
            }
        })?;
    ctx.reply.int(1);
    Ok(())
}

const SMOVE_KEYS: &[KeySpec] = &[
    KeySpec::range(bits![KeyFlags: RW, ACCESS, DELETE], 1, 0, 1),
    KeySpec::range(bits![KeyFlags: RW, INSERT], 2, 0, 1),
];

/// Set algebra as Redis 7.4 declares it.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Set:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "sinter", -2, [READONLY], RO_ACCESS_KEYS, [SET], sinter, docs::SINTER,
        tips(&["nondeterministic_output_order"]);
    "sinterstore", -3, [WRITE, DENYOOM], OW_UPDATE_FROM_RO_KEYS, [SET], sinterstore,
        docs::SINTERSTORE;
    "sunion", -2, [READONLY], RO_ACCESS_KEYS, [SET], sunion, docs::SUNION,
        tips(&["nondeterministic_output_order"]);
    "sunionstore", -3, [WRITE, DENYOOM], OW_UPDATE_FROM_RO_KEYS, [SET], sunionstore,
        docs::SUNIONSTORE;
    "sdiff", -2, [READONLY], RO_ACCESS_KEYS, [SET], sdiff, docs::SDIFF,
        tips(&["nondeterministic_output_order"]);
    "sdiffstore", -3, [WRITE, DENYOOM], OW_UPDATE_FROM_RO_KEYS, [SET], sdiffstore,
        docs::SDIFFSTORE;
    "sintercard", -3, [READONLY], RO_ACCESS_NUMKEYS, [SET], sintercard, docs::SINTERCARD;
    "smove", 4, [WRITE, FAST], SMOVE_KEYS, [SET], smove, docs::SMOVE;
};

/// What COMMAND DOCS says of each, in Redis 7.4's words.
#[rustfmt::skip]
mod docs {
    use super::super::spec::{integer, key, string, Docs};

    pub(super) const SINTER: Docs = Docs::new("Returns the intersect of multiple sets.")
        .complexity("O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(&[key("key").multiple()]);
    pub(super) const SINTERSTORE: Docs = Docs::new("Stores the intersect of multiple sets in a key.")
        .complexity("O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(&[key("destination"), key("key").key_spec(1).multiple()]);
    pub(super) const SUNION: Docs = Docs::new("Returns the union of multiple sets.")
        .complexity("O(N) where N is the total number of elements in all given sets.")
        .args(&[key("key").multiple()]);
    pub(super) const SUNIONSTORE: Docs = Docs::new("Stores the union of multiple sets in a key.")
        .complexity("O(N) where N is the total number of elements in all given sets.")
        .args(&[key("destination"), key("key").key_spec(1).multiple()]);
    pub(super) const SDIFF: Docs = Docs::new("Returns the difference of multiple sets.")
        .complexity("O(N) where N is the total number of elements in all given sets.")
        .args(&[key("key").multiple()]);
    pub(super) const SDIFFSTORE: Docs = Docs::new("Stores the difference of multiple sets in a key.")
        .complexity("O(N) where N is the total number of elements in all given sets.")
        .args(&[key("destination"), key("key").key_spec(1).multiple()]);
    pub(super) const SINTERCARD: Docs = Docs::new("Returns the number of members of the intersect of multiple sets.")
        .since("7.0.0")
        .complexity("O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.")
        .args(&[integer("numkeys"), key("key").multiple(), integer("limit").token("LIMIT").optional()]);
    pub(super) const SMOVE: Docs = Docs::new("Moves a member from one set to another.")
        .complexity("O(1)")
        .args(&[key("source"), key("destination").key_spec(1), string("member")]);
}
