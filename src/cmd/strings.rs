//! Plain strings, so that clients' type checks and simple tools behave as they do on Redis.

use super::args::{is, parse_i64, Cursor};
use super::errors::*;
use super::spec::{
    bits, integer, key, one_of, pure_token, string, unix_time, CommandSpec, Group, KeySpec,
};
use super::Ctx;
use crate::protocol::Request;
use crate::store::Value;

enum Condition {
    Always,
    IfMissing,
    IfPresent,
}

enum Expiry {
    None,
    Keep,
    At(u64),
}

/// SET key value [NX | XX] [GET] [EX s | PX ms | EXAT s | PXAT ms | KEEPTTL]
pub(super) fn set(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (key, value) = (request.arg(1), request.arg(2));
    let (mut condition, mut expiry, mut get) = (Condition::Always, Expiry::None, false);
    let mut cursor = Cursor::new(request, 3);
    while let Some(option) = cursor.next() {
        let unset_condition = matches!(condition, Condition::Always);
        let unset_expiry = matches!(expiry, Expiry::None);
        if is(option, "NX") && unset_condition {
            condition = Condition::IfMissing;
        } else if is(option, "XX") && unset_condition {
            condition = Condition::IfPresent;
        } else if is(option, "GET") {
            get = true;
        } else if is(option, "KEEPTTL") && unset_expiry {
            expiry = Expiry::Keep;
        } else if unset_expiry && ["EX", "PX", "EXAT", "PXAT"].iter().any(|o| is(option, o)) {
            let amount = parse_i64(cursor.next_or(SYNTAX)?).ok_or(NOT_INTEGER)?;
            let invalid = || CmdError::from("ERR invalid expire time in 'set' command");
            if amount <= 0 {
                return Err(invalid());
            }
            let millis = if is(option, "EX") || is(option, "EXAT") {
                amount.checked_mul(1000).ok_or_else(invalid)?
            } else {
                amount
            };
            let relative = is(option, "EX") || is(option, "PX");
            let at = if relative {
                (ctx.now as i64).checked_add(millis).ok_or_else(invalid)?
            } else {
                millis
            };
            expiry = Expiry::At(at as u64);
        } else {
            return Err(SYNTAX.into());
        }
    }
    let db = ctx.db();
    let old = db.get(key, ctx.now, |v| match v {
        None => Ok(None),
        Some(Value::String(old)) => Ok(Some(get.then(|| old.clone()))),
        Some(_) if get => Err(CmdError::from(WRONGTYPE)),
        Some(_) => Ok(Some(None)),
    })?;
    let proceed = match condition {
        Condition::Always => true,
        Condition::IfMissing => old.is_none(),
        Condition::IfPresent => old.is_some(),
    };
    if proceed {
        let expires_at = match expiry {
            Expiry::None => 0,
            Expiry::Keep => db.expires_at(key, ctx.now).unwrap_or(0),
            Expiry::At(at) => at,
        };
        db.insert(key, Value::String(value.to_vec()), expires_at);
    }
    match (get, old.flatten()) {
        (true, Some(old)) => ctx.reply.bulk(&old),
        (true, None) => ctx.reply.null(),
        (false, _) if proceed => ctx.reply.ok(),
        (false, _) => ctx.reply.null(),
    }
    Ok(())
}

pub(super) fn get(ctx: &mut Ctx, request: Request) -> CmdResult {
    let reply = &mut *ctx.reply;
    ctx.store
        .db(ctx.session.db)
        .get(request.arg(1), ctx.now, |value| match value {
            Some(Value::String(bytes)) => {
                reply.bulk(bytes);
                Ok(())
            }
            Some(_) => Err(WRONGTYPE.into()),
            None => {
                reply.null();
                Ok(())
            }
        })
}

pub(super) fn strlen(ctx: &mut Ctx, request: Request) -> CmdResult {
    let len = ctx.db().get(request.arg(1), ctx.now, |value| match value {
        Some(Value::String(bytes)) => Ok(bytes.len()),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(0),
    })?;
    ctx.reply.int(len as i64);
    Ok(())
}

/// String commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "set",
        -3,
        Group::String,
        "Sets the string value of a key",
        set,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[
        KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE, VARIABLE_FLAGS], 1, 0, 1)
            .notes("RW and ACCESS due to the optional `GET` argument"),
    ])
    .acl(bits![Acl: STRING])
    .complexity("O(1)")
    .args(&[
        key("key"),
        string("value"),
        one_of(
            "condition",
            &[pure_token("nx", "NX"), pure_token("xx", "XX")],
        )
        .since("2.6.12")
        .optional(),
        pure_token("get", "GET").since("6.2.0").optional(),
        one_of(
            "expiration",
            &[
                integer("seconds").token("EX").since("2.6.12"),
                integer("milliseconds").token("PX").since("2.6.12"),
                unix_time("unix-time-seconds").token("EXAT").since("6.2.0"),
                unix_time("unix-time-milliseconds")
                    .token("PXAT")
                    .since("6.2.0"),
                pure_token("keepttl", "KEEPTTL").since("6.0.0"),
            ],
        )
        .optional(),
    ]),
    CommandSpec::new(
        "get",
        2,
        Group::String,
        "Returns the string value of a key",
        get,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .complexity("O(1)")
    .args(&[key("key")]),
    CommandSpec::new(
        "strlen",
        2,
        Group::String,
        "Returns the length of a string value",
        strlen,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .since("2.2.0")
    .complexity("O(1)")
    .args(&[key("key")]),
];
