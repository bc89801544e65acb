//! Sets: SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SPOP, SRANDMEMBER, SMEMBERS and SSCAN, as
//! Redis has them. SPOP is logged as the SREM of what it popped, as Redis propagates it, so a
//! replica and a replay remove the same members.

use super::args::parse_i64;
use super::collection::*;
use super::errors::*;
use super::key_specs::*;
use super::keys::next_random;
use super::spec::{bits, integer, key, pattern, string, CommandSpec, Group};
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

pub(super) fn sadd(ctx: &mut Ctx, request: Request) -> CmdResult {
    let create = || Value::Set(Box::default());
    let added = upsert(ctx, request.arg(1), create, |value| match value {
        Value::Set(set) => Ok(request
            .args()
            .skip(2)
            .filter(|member| set.insert(member))
            .count()),
        _ => Err(WRONGTYPE.into()),
    })?;
    ctx.reply.int(added as i64);
    Ok(())
}

pub(super) fn srem(ctx: &mut Ctx, request: Request) -> CmdResult {
    let removed = modify(ctx, request.arg(1), |value| match value {
        None => Ok(0),
        Some(Value::Set(set)) => Ok(request
            .args()
            .skip(2)
            .filter(|member| set.remove(member))
            .count()),
        Some(_) => Err(WRONGTYPE.into()),
    })?;
    ctx.reply.int(removed as i64);
    Ok(())
}

pub(super) fn sismember(ctx: &mut Ctx, request: Request) -> CmdResult {
    let member = request.arg(2);
    let found = read_set(ctx, request.arg(1), |set| {
        set.is_some_and(|set| set.contains(member))
    })?;
    ctx.reply.int(found as i64);
    Ok(())
}

pub(super) fn smismember(ctx: &mut Ctx, request: Request) -> CmdResult {
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(request.arg(1), ctx.now, |value| {
        let set = match value {
            None => None,
            Some(Value::Set(set)) => Some(set),
            Some(_) => return Err(CmdError::from(WRONGTYPE)),
        };
        reply.array(request.len() - 2);
        for member in request.args().skip(2) {
            reply.int(set.is_some_and(|set| set.contains(member)) as i64);
        }
        Ok(())
    })
}

pub(super) fn scard(ctx: &mut Ctx, request: Request) -> CmdResult {
    let len = read_set(ctx, request.arg(1), |set| set.map_or(0, |set| set.len()))?;
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
pub(super) fn spop(ctx: &mut Ctx, request: Request) -> CmdResult {
    let count = match request.len() {
        2 => None,
        3 => Some(parse_count(request.arg(2))?),
        _ => return Err(SYNTAX.into()),
    };
    let key = request.arg(1);
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
pub(super) fn srandmember(ctx: &mut Ctx, request: Request) -> CmdResult {
    let count = match request.len() {
        2 => None,
        3 => Some(parse_i64(request.arg(2)).ok_or(NOT_INTEGER)?),
        _ => return Err(SYNTAX.into()),
    };
    if count == Some(i64::MIN) {
        return Err("ERR value is out of range".into());
    }
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(request.arg(1), ctx.now, |value| {
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

pub(super) fn smembers(ctx: &mut Ctx, request: Request) -> CmdResult {
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(request.arg(1), ctx.now, |value| match value {
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

pub(super) fn sscan(ctx: &mut Ctx, request: Request) -> CmdResult {
    let cursor = parse_cursor(request)?;
    let (next, members) = read_set(ctx, request.arg(1), |set| {
        let Some(set) = set else {
            return Ok((0, Vec::new()));
        };
        let options = scan_options(request, Scanned::Set)?;
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

const SCAN_ARGS: &[super::spec::Arg] = &[
    key("key"),
    integer("cursor"),
    pattern("pattern").token("MATCH").optional(),
    integer("count").token("COUNT").optional(),
];

/// Set commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new("sadd", -3, Group::Set, "Adds one or more members to a set. Creates the key if it doesn't exist.", sadd)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_INSERT)
        .acl(bits![Acl: SET])
        .complexity("O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `member` arguments."),
        ])
        .args(&[key("key"), string("member").multiple()]),
    CommandSpec::new("srem", -3, Group::Set, "Removes one or more members from a set. Deletes the set if the last member was removed.", srem)
        .flags(bits![Flags: WRITE, FAST])
        .key_specs(RW_DELETE)
        .acl(bits![Acl: SET])
        .complexity("O(N) where N is the number of members to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple `member` arguments."),
        ])
        .args(&[key("key"), string("member").multiple()]),
    CommandSpec::new("sismember", 3, Group::Set, "Determines whether a member belongs to a set.", sismember)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO)
        .acl(bits![Acl: SET])
        .complexity("O(1)")
        .args(&[key("key"), string("member")]),
    CommandSpec::new("smismember", -3, Group::Set, "Determines whether multiple members belong to a set.", smismember)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: SET])
        .since("6.2.0")
        .complexity("O(N) where N is the number of elements being checked for membership")
        .args(&[key("key"), string("member").multiple()]),
    CommandSpec::new("scard", 2, Group::Set, "Returns the number of members in a set.", scard)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO)
        .acl(bits![Acl: SET])
        .complexity("O(1)")
        .args(&[key("key")]),
    CommandSpec::new("spop", -2, Group::Set, "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", spop)
        .flags(bits![Flags: WRITE, FAST])
        .key_specs(RW_ACCESS_DELETE)
        .acl(bits![Acl: SET])
        .complexity("Without the count argument O(1), otherwise O(N) where N is the value of the passed count.")
        .history(&[
            ("3.2.0", "Added the `count` argument."),
        ])
        .args(&[key("key"), integer("count").optional().since("3.2.0")])
        .tips(&["nondeterministic_output"]),
    CommandSpec::new("srandmember", -2, Group::Set, "Get one or multiple random members from a set", srandmember)
        .flags(bits![Flags: READONLY])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: SET])
        .complexity("Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.")
        .history(&[
            ("2.6.0", "Added the optional `count` argument."),
        ])
        .args(&[key("key"), integer("count").optional().since("2.6.0")])
        .tips(&["nondeterministic_output"]),
    CommandSpec::new("smembers", 2, Group::Set, "Returns all members of a set.", smembers)
        .flags(bits![Flags: READONLY])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: SET])
        .complexity("O(N) where N is the set cardinality.")
        .args(&[key("key")])
        .tips(&["nondeterministic_output_order"]),
    CommandSpec::new("sscan", -3, Group::Set, "Iterates over members of a set.", sscan)
        .flags(bits![Flags: READONLY])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: SET])
        .since("2.8.0")
        .complexity("O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .args(SCAN_ARGS)
        .tips(&["nondeterministic_output"]),
];
