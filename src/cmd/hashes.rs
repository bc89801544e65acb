//! Hashes: HSET, HSETNX, HMSET, HGET, HMGET, HGETALL, HDEL, HINCRBY, HINCRBYFLOAT, HLEN,
//! HEXISTS, HKEYS, HVALS and HSCAN, as Redis has them. HINCRBYFLOAT is logged as the HSET of
//! its result, as Redis propagates it, so that replay repeats no long-double arithmetic.

use super::args::{int, parse_i64, Args, Items, Key, KeyItem, KeyItems};
use super::collection::*;
use super::errors::*;
use super::key_specs::*;
use super::long_double::{format_float, parse_float, Extended, Parsed};
use super::spec::{command_table, CommandSpec};
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

/// HSET and HMSET key field value [field value ...]: Redis's arity error when a pair is
/// incomplete.
struct FieldValues<'a> {
    key: &'a [u8],
    pairs: Items<'a>,
}

impl<'a> FieldValues<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        if args.remaining() % 2 == 1 {
            return Err(args.arity_error());
        }
        Ok(FieldValues {
            key,
            pairs: args.items(),
        })
    }
}

/// Sets every field/value pair after the key; how many fields are new.
fn set_pairs(ctx: &Ctx, request: Request) -> Result<usize, CmdError> {
    let FieldValues { key, pairs } = FieldValues::parse(request)?;
    upsert_hash(ctx, key, |hash| {
        let mut words = pairs.iter();
        let mut added = 0;
        while let (Some(field), Some(value)) = (words.next(), words.next()) {
            added += hash.insert(field, value) as usize;
        }
        Ok(added)
    })
}

fn hset(ctx: &mut Ctx, request: Request) -> CmdResult {
    let added = set_pairs(ctx, request)?;
    ctx.reply.int(added as i64);
    Ok(())
}

fn hmset(ctx: &mut Ctx, request: Request) -> CmdResult {
    set_pairs(ctx, request)?;
    ctx.reply.ok();
    Ok(())
}

/// HSETNX key field value, and HINCRBY's and HINCRBYFLOAT's words: the last one as each reads
/// it.
struct FieldWith<'a, T> {
    key: &'a [u8],
    field: &'a [u8],
    with: T,
}

impl<'a, T> FieldWith<'a, T> {
    fn parse(
        request: Request<'a>,
        read: impl FnOnce(&'a [u8]) -> Result<T, CmdError>,
    ) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(FieldWith {
            key: args.required()?,
            field: args.required()?,
            with: read(args.required()?)?,
        })
    }
}

fn hsetnx(ctx: &mut Ctx, request: Request) -> CmdResult {
    let FieldWith {
        key,
        field,
        with: value,
    } = FieldWith::parse(request, Ok)?;
    let set = upsert_hash(ctx, key, |hash| {
        if hash.contains_key(field) {
            return Ok(false);
        }
        hash.insert(field, value);
        Ok(true)
    })?;
    ctx.reply.int(set as i64);
    Ok(())
}

/// HSTRLEN key field: the length of the field's value, 0 if there is none.
fn hstrlen(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item: field } = KeyItem::parse(request)?;
    let len = ctx.db().get(key, ctx.now, |value| match value {
        None => Ok(0),
        Some(Value::Hash(hash)) => Ok(hash.get(field).map_or(0, <[u8]>::len)),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
    })?;
    ctx.reply.int(len as i64);
    Ok(())
}

fn hget(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item: field } = KeyItem::parse(request)?;
    let reply = &mut *ctx.reply;
    ctx.store
        .db(ctx.session.db)
        .get(key, ctx.now, |value| match value {
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

fn hmget(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items: fields } = KeyItems::parse(request)?;
    let reply = &mut *ctx.reply;
    ctx.store.db(ctx.session.db).get(key, ctx.now, |value| {
        let hash = match value {
            None => None,
            Some(Value::Hash(hash)) => Some(&**hash),
            Some(_) => return Err(CmdError::from(WRONGTYPE)),
        };
        reply.array(fields.len());
        for field in fields.iter() {
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
    let Key { key } = Key::parse(request)?;
    let reply = &mut *ctx.reply;
    ctx.store.db(ctx.session.db).get(key, ctx.now, |value| {
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

fn hgetall(ctx: &mut Ctx, request: Request) -> CmdResult {
    get_all(ctx, request, Part::Both)
}

fn hkeys(ctx: &mut Ctx, request: Request) -> CmdResult {
    get_all(ctx, request, Part::Fields)
}

fn hvals(ctx: &mut Ctx, request: Request) -> CmdResult {
    get_all(ctx, request, Part::Values)
}

fn hdel(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items: fields } = KeyItems::parse(request)?;
    let removed = modify(ctx, key, |value| match value {
        None => Ok(0),
        Some(Value::Hash(hash)) => Ok(fields.iter().filter(|field| hash.remove(field)).count()),
        Some(_) => Err(WRONGTYPE.into()),
    })?;
    ctx.reply.int(removed as i64);
    Ok(())
}

fn hlen(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let len = read_hash(ctx, key, |hash| hash.map_or(0, |hash| hash.len()))?;
    ctx.reply.int(len as i64);
    Ok(())
}

fn hexists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item: field } = KeyItem::parse(request)?;
    let found = read_hash(ctx, key, |hash| {
        hash.is_some_and(|hash| hash.contains_key(field))
    })?;
    ctx.reply.int(found as i64);
    Ok(())
}

fn hincrby(ctx: &mut Ctx, request: Request) -> CmdResult {
    let FieldWith {
        key,
        field,
        with: by,
    } = FieldWith::parse(request, |by| int(by, NOT_INTEGER))?;
    let new = upsert_hash(ctx, key, |hash| {
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

/// An increment as HINCRBYFLOAT reads it: a finite long double.
fn finite_increment(arg: &[u8]) -> Result<Extended, CmdError> {
    match parse_float(arg) {
        Some(Parsed::Finite(by)) => Ok(by),
        Some(Parsed::Infinite) => Err(VALUE_NAN_OR_INF.into()),
        None => Err(NOT_FLOAT.into()),
    }
}

/// HINCRBYFLOAT key field increment, in long double as INCRBYFLOAT computes it.
fn hincrbyfloat(ctx: &mut Ctx, request: Request) -> CmdResult {
    let FieldWith {
        key,
        field,
        with: by,
    } = FieldWith::parse(request, finite_increment)?;
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
fn hscan(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Scan {
        key,
        cursor,
        options,
    } = Scan::parse(request, Scanned::Hash)?;
    let (next, found, fields_only) = read_hash(ctx, key, |hash| {
        let Some(hash) = hash else {
            return Ok((0, Vec::new(), false));
        };
        let options = options?;
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

/// Hash commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Hash:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "hset", -4, [WRITE, DENYOOM, FAST], RW_UPDATE, [HASH], hset, docs::HSET;
    "hsetnx", 4, [WRITE, DENYOOM, FAST], RW_INSERT, [HASH], hsetnx, docs::HSETNX;
    "hmset", -4, [WRITE, DENYOOM, FAST], RW_UPDATE, [HASH], hmset, docs::HMSET;
    "hget", 3, [READONLY, FAST], RO_ACCESS, [HASH], hget, docs::HGET;
    "hmget", -3, [READONLY, FAST], RO_ACCESS, [HASH], hmget, docs::HMGET;
    "hgetall", 2, [READONLY], RO_ACCESS, [HASH], hgetall, docs::HGETALL,
        tips(&["nondeterministic_output_order"]);
    "hdel", -3, [WRITE, FAST], RW_DELETE, [HASH], hdel, docs::HDEL;
    "hincrby", 4, [WRITE, DENYOOM, FAST], RW_ACCESS_UPDATE, [HASH], hincrby, docs::HINCRBY;
    "hincrbyfloat", 4, [WRITE, DENYOOM, FAST], RW_ACCESS_UPDATE, [HASH], hincrbyfloat,
        docs::HINCRBYFLOAT;
    "hlen", 2, [READONLY, FAST], RO, [HASH], hlen, docs::HLEN;
    "hexists", 3, [READONLY, FAST], RO, [HASH], hexists, docs::HEXISTS;
    "hkeys", 2, [READONLY], RO_ACCESS, [HASH], hkeys, docs::HKEYS,
        tips(&["nondeterministic_output_order"]);
    "hvals", 2, [READONLY], RO_ACCESS, [HASH], hvals, docs::HVALS,
        tips(&["nondeterministic_output_order"]);
    "hscan", -3, [READONLY], RO_ACCESS, [HASH], hscan, docs::HSCAN,
        tips(&["nondeterministic_output"]);
    "hstrlen", 3, [READONLY, FAST], RO, [HASH], hstrlen, docs::HSTRLEN;
};

/// What COMMAND DOCS says of each, in Redis 8's words.
mod docs {
    use super::super::spec::{block, double, integer, key, pattern, pure_token, string, Arg, Docs};

    pub(super) const HSTRLEN: Docs = Docs::new("Returns the length of the value of a field.")
        .since("3.2.0")
        .complexity("O(1)")
        .args(&[key("key"), string("field")]);

    pub(super) const HSET: Docs = Docs::new("Creates or modifies the value of a field in a hash.")
        .since("2.0.0")
        .complexity("O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.")
        .history(&[
            ("4.0.0", "Accepts multiple `field` and `value` arguments."),
        ])
        .args(&[key("key"), PAIRS]);
    pub(super) const HSETNX: Docs =
        Docs::new("Sets the value of a field in a hash only when the field doesn't exist.")
            .since("2.0.0")
            .complexity("O(1)")
            .args(&[key("key"), string("field"), string("value")]);
    pub(super) const HMSET: Docs = Docs::new("Sets the values of multiple fields.")
        .since("2.0.0")
        .complexity("O(N) where N is the number of fields being set.")
        .deprecated("4.0.0", "`HSET` with multiple field-value pairs")
        .args(&[key("key"), PAIRS]);
    pub(super) const HGET: Docs = Docs::new("Returns the value of a field in a hash.")
        .since("2.0.0")
        .complexity("O(1)")
        .args(&[key("key"), string("field")]);
    pub(super) const HMGET: Docs = Docs::new("Returns the values of all fields in a hash.")
        .since("2.0.0")
        .complexity("O(N) where N is the number of fields being requested.")
        .args(&[key("key"), string("field").multiple()]);
    pub(super) const HGETALL: Docs = Docs::new("Returns all fields and values in a hash.")
        .since("2.0.0")
        .complexity("O(N) where N is the size of the hash.")
        .args(&[key("key")]);
    pub(super) const HDEL: Docs = Docs::new("Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.")
        .since("2.0.0")
        .complexity("O(N) where N is the number of fields to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple `field` arguments."),
        ])
        .args(&[key("key"), string("field").multiple()]);
    pub(super) const HINCRBY: Docs = Docs::new("Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.")
        .since("2.0.0")
        .complexity("O(1)")
        .args(&[key("key"), string("field"), integer("increment")]);
    pub(super) const HINCRBYFLOAT: Docs = Docs::new("Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.")
        .since("2.6.0")
        .complexity("O(1)")
        .args(&[key("key"), string("field"), double("increment")]);
    pub(super) const HLEN: Docs = Docs::new("Returns the number of fields in a hash.")
        .since("2.0.0")
        .complexity("O(1)")
        .args(&[key("key")]);
    pub(super) const HEXISTS: Docs = Docs::new("Determines whether a field exists in a hash.")
        .since("2.0.0")
        .complexity("O(1)")
        .args(&[key("key"), string("field")]);
    pub(super) const HKEYS: Docs = Docs::new("Returns all fields in a hash.")
        .since("2.0.0")
        .complexity("O(N) where N is the size of the hash.")
        .args(&[key("key")]);
    pub(super) const HVALS: Docs = Docs::new("Returns all values in a hash.")
        .since("2.0.0")
        .complexity("O(N) where N is the size of the hash.")
        .args(&[key("key")]);
    pub(super) const HSCAN: Docs = Docs::new("Iterates over fields and values of a hash.")
        .since("2.8.0")
        .complexity("O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .args(&[
            key("key"),
            integer("cursor"),
            pattern("pattern").token("MATCH").optional(),
            integer("count").token("COUNT").optional(),
            pure_token("novalues", "NOVALUES").optional(),
        ]);

    const PAIRS: Arg = block("data", &[string("field"), string("value")]).multiple();
}
