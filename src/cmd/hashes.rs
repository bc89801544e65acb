//! Hashes: HSET, HSETNX, HMSET, HGET, HMGET, HGETALL, HDEL, HINCRBY, HINCRBYFLOAT, HLEN,
//! HEXISTS, HKEYS, HVALS and HSCAN, as Redis has them. HINCRBYFLOAT is logged as the HSET of
//! its result, as Redis propagates it, so that replay repeats no long-double arithmetic.

use super::args::parse_i64;
use super::collection::*;
use super::errors::*;
use super::key_specs::*;
use super::long_double::{format_float, parse_float, Extended, Parsed};
use super::spec::{bits, block, double, integer, key, pattern, string, CommandSpec, Group};
use super::Ctx;
use crate::protocol::Request;
use crate::store::{Hash, Value};

fn read_hash<R>(ctx: &Ctx, key: &[u8], f: impl FnOnce(Option<&Hash>) -> R) -> Result<R, CmdError> {
    ctx.db().get(key, ctx.now, |value| match value {
        None => Ok(f(None)),
        Some(Value::Hash(hash)) => Ok(f(Some(hash))),
        Some(_) => Err(WRONGTYPE.into()),
    })
}

/// Runs `f` on the hash at `key`, created if there is none.
fn upsert_hash<R>(
    ctx: &Ctx,
    key: &[u8],
    f: impl FnOnce(&mut Hash) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    let create = || Value::Hash(Box::default());
    upsert(ctx, key, create, |value| match value {
        Value::Hash(hash) => f(hash),
        _ => Err(WRONGTYPE.into()),
    })
}

/// Sets every field/value pair after the key; how many fields are new.
fn set_pairs(ctx: &Ctx, request: Request, name: &str) -> Result<usize, CmdError> {
    if request.len() % 2 == 1 {
        return Err(CmdError::arity(name));
    }
    upsert_hash(ctx, request.arg(1), |hash| {
        let mut added = 0;
        for at in (2..request.len()).step_by(2) {
            added += hash.insert(request.arg(at), request.arg(at + 1)) as usize;
        }
        Ok(added)
    })
}

pub(super) fn hset(ctx: &mut Ctx, request: Request) -> CmdResult {
    let added = set_pairs(ctx, request, "hset")?;
    ctx.reply.int(added as i64);
    Ok(())
}

pub(super) fn hmset(ctx: &mut Ctx, request: Request) -> CmdResult {
    set_pairs(ctx, request, "hmset")?;
    ctx.reply.ok();
    Ok(())
}

pub(super) fn hsetnx(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (field, value) = (request.arg(2), request.arg(3));
    let set = upsert_hash(ctx, request.arg(1), |hash| {
        if hash.contains_key(field) {
            return Ok(false);
        }
        hash.insert(field, value);
        Ok(true)
    })?;
    ctx.reply.int(set as i64);
    Ok(())
}

pub(super) fn hget(ctx: &mut Ctx, request: Request) -> CmdResult {
    let field = request.arg(2);
    let reply = &mut *ctx.reply;
    ctx.store
        .db(ctx.session.db)
        .get(request.arg(1), ctx.now, |value| match value {
            None => {
                reply.null();
                Ok(())
            }
            Some(Value::Hash(hash)) => {
                match hash.get(field) {
                    Some(value) => reply.bulk(value),
                    None => reply.null(),
                }
                Ok(())
            }
            Some(_) => Err(WRONGTYPE.into()),
        })
}

pub(super) fn hmget(ctx: &mut Ctx, request: Request) -> CmdResult {
    let reply = &mut *ctx.reply;
    ctx.store
        .db(ctx.session.db)
        .get(request.arg(1), ctx.now, |value| {
            let hash = match value {
                None => None,
                Some(Value::Hash(hash)) => Some(&**hash),
                Some(_) => return Err(CmdError::from(WRONGTYPE)),
            };
            reply.array(request.len() - 2);
            for field in request.args().skip(2) {
                match hash.and_then(|hash| hash.get(field)) {
                    Some(value) => reply.bulk(value),
                    None => reply.null(),
                }
            }
            Ok(())
        })
}

#[derive(Clone, Copy, PartialEq)]
enum Part {
    Fields,
    Values,
    Both,
}

/// HGETALL (a map under RESP3), HKEYS and HVALS.
fn get_all(ctx: &mut Ctx, request: Request, part: Part) -> CmdResult {
    let reply = &mut *ctx.reply;
    ctx.store
        .db(ctx.session.db)
        .get(request.arg(1), ctx.now, |value| {
            let hash = match value {
                None => None,
                Some(Value::Hash(hash)) => Some(&**hash),
                Some(_) => return Err(CmdError::from(WRONGTYPE)),
            };
            let len = hash.map_or(0, |hash| hash.len());
            match part {
                Part::Both => reply.map(len),
                _ => reply.array(len),
            }
            for (field, value) in hash.into_iter().flat_map(Hash::iter) {
                if part != Part::Values {
                    reply.bulk(field);
                }
                if part != Part::Fields {
                    reply.bulk(value);
                }
            }
            Ok(())
        })
}

pub(super) fn hgetall(ctx: &mut Ctx, request: Request) -> CmdResult {
    get_all(ctx, request, Part::Both)
}

pub(super) fn hkeys(ctx: &mut Ctx, request: Request) -> CmdResult {
    get_all(ctx, request, Part::Fields)
}

pub(super) fn hvals(ctx: &mut Ctx, request: Request) -> CmdResult {
    get_all(ctx, request, Part::Values)
}

pub(super) fn hdel(ctx: &mut Ctx, request: Request) -> CmdResult {
    let removed = modify(ctx, request.arg(1), |value| match value {
        None => Ok(0),
        Some(Value::Hash(hash)) => Ok(request
            .args()
            .skip(2)
            .filter(|field| hash.remove(field))
            .count()),
        Some(_) => Err(WRONGTYPE.into()),
    })?;
    ctx.reply.int(removed as i64);
    Ok(())
}

pub(super) fn hlen(ctx: &mut Ctx, request: Request) -> CmdResult {
    let len = read_hash(ctx, request.arg(1), |hash| {
        hash.map_or(0, |hash| hash.len())
    })?;
    ctx.reply.int(len as i64);
    Ok(())
}

pub(super) fn hexists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let field = request.arg(2);
    let found = read_hash(ctx, request.arg(1), |hash| {
        hash.is_some_and(|hash| hash.contains_key(field))
    })?;
    ctx.reply.int(found as i64);
    Ok(())
}

pub(super) fn hincrby(ctx: &mut Ctx, request: Request) -> CmdResult {
    let by = parse_i64(request.arg(3)).ok_or(NOT_INTEGER)?;
    let field = request.arg(2);
    let new = upsert_hash(ctx, request.arg(1), |hash| {
        let current = match hash.get(field) {
            None => 0,
            Some(value) => parse_i64(value).ok_or(HASH_NOT_INTEGER)?,
        };
        let new = current.checked_add(by).ok_or(INCR_OVERFLOW)?;
        hash.insert(field, itoa::Buffer::new().format(new).as_bytes());
        Ok(new)
    })?;
    ctx.reply.int(new);
    Ok(())
}

/// HINCRBYFLOAT key field increment, in long double as INCRBYFLOAT computes it.
pub(super) fn hincrbyfloat(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Some(Parsed::Finite(by)) = parse_float(request.arg(3)) else {
        return Err(match parse_float(request.arg(3)) {
            Some(_) => "ERR value is NaN or Infinity".into(),
            None => NOT_FLOAT.into(),
        });
    };
    let (key, field) = (request.arg(1), request.arg(2));
    let result = upsert_hash(ctx, key, |hash| {
        let current = match hash.get(field).map(parse_float) {
            None => Extended::ZERO,
            Some(Some(Parsed::Finite(current))) => current,
            Some(Some(Parsed::Infinite)) => return Err(FLOAT_NAN_OR_INF.into()),
            Some(None) => return Err(HASH_NOT_FLOAT.into()),
        };
        let sum = current.add(by).ok_or(FLOAT_NAN_OR_INF)?;
        let text = format_float(sum);
        hash.insert(field, &text);
        Ok(text)
    })?;
    ctx.note_effect([&b"HSET"[..], key, field, &result]);
    ctx.log_effects_only();
    ctx.reply.bulk(&result);
    Ok(())
}

/// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES].
pub(super) fn hscan(ctx: &mut Ctx, request: Request) -> CmdResult {
    let cursor = parse_cursor(request)?;
    let (next, found, fields_only) = read_hash(ctx, request.arg(1), |hash| {
        let Some(hash) = hash else {
            return Ok((0, Vec::new(), false));
        };
        let options = scan_options(request, Scanned::Hash)?;
        let (next, entries) = hash.scan(cursor, options.count);
        let found = entries
            .filter(|(field, _)| matches(options.pattern, field))
            .map(|(field, value)| (field.to_vec(), value.to_vec()))
            .collect::<Vec<_>>();
        Ok::<_, CmdError>((next, found, options.members_only))
    })??;
    ctx.reply.array(2);
    ctx.reply.bulk(next.to_string().as_bytes());
    ctx.reply
        .array(found.len() * if fields_only { 1 } else { 2 });
    for (field, value) in &found {
        ctx.reply.bulk(field);
        if !fields_only {
            ctx.reply.bulk(value);
        }
    }
    Ok(())
}

const PAIRS: super::spec::Arg = block("data", &[string("field"), string("value")]).multiple();

/// Hash commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new("hset", -4, Group::Hash, "Creates or modifies the value of a field in a hash.", hset)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_UPDATE)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.")
        .history(&[
            ("4.0.0", "Accepts multiple `field` and `value` arguments."),
        ])
        .args(&[key("key"), PAIRS]),
    CommandSpec::new("hsetnx", 4, Group::Hash, "Sets the value of a field in a hash only when the field doesn't exist.", hsetnx)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_INSERT)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(1)")
        .args(&[key("key"), string("field"), string("value")]),
    CommandSpec::new("hmset", -4, Group::Hash, "Sets the values of multiple fields.", hmset)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_UPDATE)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(N) where N is the number of fields being set.")
        .deprecated("4.0.0", "`HSET` with multiple field-value pairs")
        .args(&[key("key"), PAIRS]),
    CommandSpec::new("hget", 3, Group::Hash, "Returns the value of a field in a hash.", hget)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(1)")
        .args(&[key("key"), string("field")]),
    CommandSpec::new("hmget", -3, Group::Hash, "Returns the values of all fields in a hash.", hmget)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(N) where N is the number of fields being requested.")
        .args(&[key("key"), string("field").multiple()]),
    CommandSpec::new("hgetall", 2, Group::Hash, "Returns all fields and values in a hash.", hgetall)
        .flags(bits![Flags: READONLY])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(N) where N is the size of the hash.")
        .args(&[key("key")])
        .tips(&["nondeterministic_output_order"]),
    CommandSpec::new("hdel", -3, Group::Hash, "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", hdel)
        .flags(bits![Flags: WRITE, FAST])
        .key_specs(RW_DELETE)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(N) where N is the number of fields to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple `field` arguments."),
        ])
        .args(&[key("key"), string("field").multiple()]),
    CommandSpec::new("hincrby", 4, Group::Hash, "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", hincrby)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_ACCESS_UPDATE)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(1)")
        .args(&[key("key"), string("field"), integer("increment")]),
    CommandSpec::new("hincrbyfloat", 4, Group::Hash, "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", hincrbyfloat)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_ACCESS_UPDATE)
        .acl(bits![Acl: HASH])
        .since("2.6.0")
        .complexity("O(1)")
        .args(&[key("key"), string("field"), double("increment")]),
    CommandSpec::new("hlen", 2, Group::Hash, "Returns the number of fields in a hash.", hlen)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(1)")
        .args(&[key("key")]),
    CommandSpec::new("hexists", 3, Group::Hash, "Determines whether a field exists in a hash.", hexists)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(1)")
        .args(&[key("key"), string("field")]),
    CommandSpec::new("hkeys", 2, Group::Hash, "Returns all fields in a hash.", hkeys)
        .flags(bits![Flags: READONLY])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(N) where N is the size of the hash.")
        .args(&[key("key")])
        .tips(&["nondeterministic_output_order"]),
    CommandSpec::new("hvals", 2, Group::Hash, "Returns all values in a hash.", hvals)
        .flags(bits![Flags: READONLY])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: HASH])
        .since("2.0.0")
        .complexity("O(N) where N is the size of the hash.")
        .args(&[key("key")])
        .tips(&["nondeterministic_output_order"]),
    CommandSpec::new("hscan", -3, Group::Hash, "Iterates over fields and values of a hash.", hscan)
        .flags(bits![Flags: READONLY])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: HASH])
        .since("2.8.0")
        .complexity("O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .args(&[
            key("key"),
            integer("cursor"),
            pattern("pattern").token("MATCH").optional(),
            integer("count").token("COUNT").optional(),
            super::spec::pure_token("novalues", "NOVALUES").optional(),
        ])
        .tips(&["nondeterministic_output"]),
];
