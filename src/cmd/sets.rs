//! Sets: SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SPOP, SRANDMEMBER, SMEMBERS and SSCAN, as
//! Redis has them. SPOP is logged as the SREM of what it popped, as Redis propagates it, so a
//! replica and a replay remove the same members.

use super::args::{int, Key, KeyItem, KeyItems};
use super::collection::*;
use super::errors::*;
use super::key_specs::*;
use super::random::next_random;
use super::spec::{command_table, CommandSpec};
use super::Ctx;
use crate::protocol::Request;
use crate::store::{Bytes, Set, Value};

fn read_set<R>(ctx: &Ctx, key: &[u8], f: impl FnOnce(Option<&Set>) -> R) -> Result<R, CmdError> {
    ctx.db().get(key, ctx.now, |value| match value {
        None => Ok(f(None)),
        Some(Value::Set(set)) => Ok(f(Some(set))),
        Some(_) => Err(WRONGTYPE.into()),
    })
}

fn sadd(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let create = || Value::Set(Box::default());
    let added = upsert(ctx, key, create, |value| match value {
        Value::Set(set) => Ok(items.iter().filter(|member| set.insert(member)).count()),
        _ => Err(WRONGTYPE.into()),
    })?;
    ctx.reply.int(added as i64);
    Ok(())
}

fn srem(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let removed = modify(ctx, key, |value| match value {
        None => Ok(0),
        Some(Value::Set(set)) => Ok(items.iter().filter(|member| set.remove(member)).count()),
        Some(_) => Err(WRONGTYPE.into()),
    })?;
    ctx.reply.int(removed as i64);
    Ok(())
}

fn sismember(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item: member } = KeyItem::parse(request)?;
    let found = read_set(ctx, key, |set| set.is_some_and(|set| set.contains(member)))?;
    ctx.reply.int(found as i64);
    Ok(())
}

fn smismember(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(key, ctx.now, |value| {
        let set = match value {
            None => None,
            Some(Value::Set(set)) => Some(set),
            Some(_) => return Err(CmdError::from(WRONGTYPE)),
        };
        reply.array(items.len());
        for member in items.iter() {
            reply.int(set.is_some_and(|set| set.contains(member)) as i64);
        }
        Ok(())
    })
}

fn scard(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let len = read_set(ctx, key, |set| set.map_or(0, |set| set.len()))?;
    ctx.reply.int(len as i64);
    Ok(())
}

/// Up to `count` distinct members chosen at random, by reservoir sampling: one pass, and
/// memory for what is chosen only. (A hash set offers no random access, so a pick costs a
/// walk over the set.)
fn pick(set: &Set, count: usize) -> Vec<Bytes> {
    if count >= set.len() {
        return set.iter().map(Bytes::from).collect();
    }
    let mut chosen: Vec<&[u8]> = Vec::with_capacity(count);
    for (seen, member) in set.iter().enumerate() {
        if seen < count {
            chosen.push(member);
        } else {
            let slot = (next_random() % (seen as u64 + 1)) as usize;
            if slot < count {
                chosen[slot] = member;
            }
        }
    }
    chosen.into_iter().map(Bytes::from).collect()
}

/// SPOP key [count].
fn spop(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyCount { key, count } = KeyCount::parse(request, parse_count)?;
    let popped = modify(ctx, key, |value| match value {
        None => Ok(Vec::new()),
        Some(Value::Set(set)) => {
            let popped = pick(set, count.unwrap_or(1));
            popped.iter().for_each(|member| _ = set.remove(member));
            Ok(popped)
        }
        Some(_) => Err(WRONGTYPE.into()),
    })?;
    if !popped.is_empty() {
        let args = [&b"SREM"[..], key]
            .into_iter()
            .chain(popped.iter().map(|member| &**member));
        ctx.note_effect(args);
    }
    ctx.log_effects_only();
    match count {
        None => match popped.first() {
            Some(member) => ctx.reply.bulk(member),
            None => ctx.reply.null(),
        },
        Some(_) => {
            ctx.reply.set(popped.len());
            popped.iter().for_each(|member| ctx.reply.bulk(member));
        }
    }
    Ok(())
}

/// SRANDMEMBER key [count]: a positive count asks for distinct members, a negative one for
/// that many draws, which may repeat.
fn srandmember(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyCount { key, count } = KeyCount::parse(request, |count| int(count, NOT_INTEGER))?;
    if count == Some(i64::MIN) {
        return Err(VALUE_OUT_OF_RANGE.into());
    }
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(key, ctx.now, |value| {
        let set = match value {
            None => None,
            Some(Value::Set(set)) => Some(set),
            Some(_) => return Err(CmdError::from(WRONGTYPE)),
        };
        match (set, count) {
            (None, None) => reply.null(),
            (None, Some(_)) => reply.array(0),
            (Some(set), None) => pick(set, 1).iter().for_each(|m| reply.bulk(m)),
            (Some(set), Some(count)) if count >= 0 => {
                let members = pick(set, count as usize);
                reply.array(members.len());
                members.iter().for_each(|m| reply.bulk(m));
            }
            (Some(set), Some(count)) => {
                let members: Vec<&[u8]> = set.iter().collect();
                let draws = count.unsigned_abs();
                reply.array(draws as usize);
                for _ in 0..draws {
                    reply.bulk(members[(next_random() % members.len() as u64) as usize]);
                }
            }
        }
        Ok(())
    })
}

fn smembers(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(key, ctx.now, |value| match value {
        None => {
            reply.set(0);
            Ok(())
        }
        Some(Value::Set(set)) => {
            reply.set(set.len());
            set.iter().for_each(|member| reply.bulk(member));
            Ok(())
        }
        Some(_) => Err(WRONGTYPE.into()),
    })
}

fn sscan(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Scan {
        key,
        cursor,
        options,
    } = Scan::parse(request, Scanned::Set)?;
    let (next, members) = read_set(ctx, key, |set| {
        let Some(set) = set else {
            return Ok((0, Vec::new()));
        };
        let options = options?;
        let (next, found) = set.scan(cursor, options.count);
        let members = found
            .filter(|member| matches(options.pattern, member))
            .map(<[u8]>::to_vec)
            .collect::<Vec<_>>();
        Ok::<_, CmdError>((next, members))
    })??;
    ctx.reply.array(2);
    ctx.reply.bulk(next.to_string().as_bytes());
    ctx.reply.array(members.len());
    members.iter().for_each(|member| ctx.reply.bulk(member));
    Ok(())
}

/// Set commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Set:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "sadd", -3, [WRITE, DENYOOM, FAST], RW_INSERT, [SET], sadd, docs::SADD;
    "srem", -3, [WRITE, FAST], RW_DELETE, [SET], srem, docs::SREM;
    "sismember", 3, [READONLY, FAST], RO, [SET], sismember, docs::SISMEMBER;
    "smismember", -3, [READONLY, FAST], RO_ACCESS, [SET], smismember, docs::SMISMEMBER;
    "scard", 2, [READONLY, FAST], RO, [SET], scard, docs::SCARD;
    "spop", -2, [WRITE, FAST], RW_ACCESS_DELETE, [SET], spop, docs::SPOP,
        tips(&["nondeterministic_output"]);
    "srandmember", -2, [READONLY], RO_ACCESS, [SET], srandmember, docs::SRANDMEMBER,
        tips(&["nondeterministic_output"]);
    "smembers", 2, [READONLY], RO_ACCESS, [SET], smembers, docs::SMEMBERS,
        tips(&["nondeterministic_output_order"]);
    "sscan", -3, [READONLY], RO_ACCESS, [SET], sscan, docs::SSCAN,
        tips(&["nondeterministic_output"]);
};

/// What COMMAND DOCS says of each, in Redis 8's words.
mod docs {
    use super::super::spec::{integer, key, pattern, string, Arg, Docs};

    pub(super) const SADD: Docs = Docs::new("Adds one or more members to a set. Creates the key if it doesn't exist.")
        .complexity("O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `member` arguments."),
        ])
        .args(&[key("key"), string("member").multiple()]);
    pub(super) const SREM: Docs = Docs::new(
        "Removes one or more members from a set. Deletes the set if the last member was removed.",
    )
    .complexity("O(N) where N is the number of members to be removed.")
    .history(&[("2.4.0", "Accepts multiple `member` arguments.")])
    .args(&[key("key"), string("member").multiple()]);
    pub(super) const SISMEMBER: Docs = Docs::new("Determines whether a member belongs to a set.")
        .complexity("O(1)")
        .args(&[key("key"), string("member")]);
    pub(super) const SMISMEMBER: Docs =
        Docs::new("Determines whether multiple members belong to a set.")
            .since("6.2.0")
            .complexity("O(N) where N is the number of elements being checked for membership")
            .args(&[key("key"), string("member").multiple()]);
    pub(super) const SCARD: Docs = Docs::new("Returns the number of members in a set.")
        .complexity("O(1)")
        .args(&[key("key")]);
    pub(super) const SPOP: Docs = Docs::new("Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.")
        .complexity("Without the count argument O(1), otherwise O(N) where N is the value of the passed count.")
        .history(&[
            ("3.2.0", "Added the `count` argument."),
        ])
        .args(&[key("key"), integer("count").optional().since("3.2.0")]);
    pub(super) const SRANDMEMBER: Docs = Docs::new("Get one or multiple random members from a set")
        .complexity("Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.")
        .history(&[
            ("2.6.0", "Added the optional `count` argument."),
        ])
        .args(&[key("key"), integer("count").optional().since("2.6.0")]);
    pub(super) const SMEMBERS: Docs = Docs::new("Returns all members of a set.")
        .complexity("O(N) where N is the set cardinality.")
        .args(&[key("key")]);
    pub(super) const SSCAN: Docs = Docs::new("Iterates over members of a set.")
        .since("2.8.0")
        .complexity("O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .args(SCAN_ARGS);

    const SCAN_ARGS: &[Arg] = &[
        key("key"),
        integer("cursor"),
        pattern("pattern").token("MATCH").optional(),
        integer("count").token("COUNT").optional(),
    ];
}
