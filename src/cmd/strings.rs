//! Plain strings, so that clients' type checks and simple tools behave as they do on Redis.

use super::args::{is, parse_i64, Cursor};
use super::errors::*;
use super::spec::{
    bits, block, integer, key, one_of, pure_token, string, unix_time, CommandSpec, Group, KeySpec,
};
use super::Ctx;
use crate::protocol::Request;
use crate::store::{EvictionPolicy, Value};

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

/// What bounds a string a write makes or grows: `proto-max-bulk-len` for its length and
/// `maxmemory` for what it allocates. A write replayed from the log obeys neither, as Redis
/// obeys its primary and its AOF: it was admitted when it first ran.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    pub(super) max_len: u64,
    max_memory: u64,
    /// An eviction policy is set: keys can go to make room, so only an allocation larger than
    /// `maxmemory` itself is refused up front.
    evicting: bool,
}

impl Limits {
    pub(super) fn of(ctx: &Ctx) -> Limits {
        if ctx.session.replaying {
            return Limits {
                max_len: u64::MAX,
                max_memory: 0,
                evicting: false,
            };
        }
        let settings = ctx.config().settings();
        Limits {
            max_len: settings.proto_max_bulk_len,
            max_memory: ctx.config().maxmemory(),
            evicting: settings.maxmemory_policy != EvictionPolicy::NoEviction,
        }
    }

    /// `ERR string exceeds maximum allowed size` unless `start + len` bytes fit.
    pub(super) fn check_len(self, start: u64, len: u64) -> CmdResult {
        match start.checked_add(len) {
            Some(total) if total <= self.max_len => Ok(()),
            _ => Err(STRING_TOO_LONG.into()),
        }
    }

    /// Refuses an allocation of `bytes` that would take the process past `maxmemory`. Redis
    /// checks only before a `denyoom` command runs, so one command can overshoot by a whole
    /// 512 MB string; this refuses that command instead. Under an eviction policy the next
    /// command's evictions make room, as in Redis, unless no eviction could.
    fn check_memory(self, bytes: usize) -> CmdResult {
        let mut after = bytes as u64;
        if !self.evicting {
            after = after.saturating_add(crate::memory::allocated() as u64);
        }
        if self.max_memory > 0 && after > self.max_memory {
            return Err(OOM.into());
        }
        Ok(())
    }

    /// A new string of `len` zero bytes, allocated only once the limits allow it.
    pub(super) fn zeroed(self, len: usize) -> Result<Vec<u8>, CmdError> {
        let mut bytes = Vec::new();
        self.grow_zeroed(&mut bytes, len)?;
        Ok(bytes)
    }

    /// Makes `bytes` at least `len` long, the new bytes zero. Small growth doubles the room
    /// (up to a megabyte at a time, as Redis's strings do), so a string built by appends is
    /// not copied at each; a jump far past the end gets exactly the room it needs.
    pub(super) fn grow_zeroed(self, bytes: &mut Vec<u8>, len: usize) -> CmdResult {
        if len <= bytes.len() {
            return Ok(());
        }
        if len > bytes.capacity() {
            let room = bytes.capacity();
            let capacity = len.max(room.saturating_mul(2).min(room + (1 << 20)));
            self.check_memory(capacity - room)?;
            bytes
                .try_reserve_exact(capacity - bytes.len())
                .map_err(|_| CmdError::from(OOM))?;
        }
        bytes.resize(len, 0);
        Ok(())
    }
}

/// SETNX key value: 1 if it set the key, 0 if a key (of any type) was there.
pub(super) fn setnx(ctx: &mut Ctx, request: Request) -> CmdResult {
    let value = Value::String(request.arg(2).to_vec());
    let set = ctx.db().insert_new(request.arg(1), value, ctx.now);
    ctx.reply.int(i64::from(set));
    Ok(())
}

/// The string at `key`, copied, or None; WRONGTYPE for another type.
fn string_at(ctx: &Ctx, key: &[u8]) -> Result<Option<Vec<u8>>, CmdError> {
    ctx.db().get(key, ctx.now, |value| match value {
        Some(Value::String(bytes)) => Ok(Some(bytes.clone())),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(None),
    })
}

fn bulk_or_null(ctx: &mut Ctx, value: Option<Vec<u8>>) {
    match value {
        Some(bytes) => ctx.reply.bulk(&bytes),
        None => ctx.reply.null(),
    }
}

/// GETSET key value: sets the value (clearing any expiry) and returns the old one.
pub(super) fn getset(ctx: &mut Ctx, request: Request) -> CmdResult {
    let old = string_at(ctx, request.arg(1))?;
    let value = Value::String(request.arg(2).to_vec());
    ctx.db().insert(request.arg(1), value, 0);
    bulk_or_null(ctx, old);
    Ok(())
}

/// GETDEL key: the value, removed in the same step, so that of two clients racing for a
/// one-time value only one gets it.
pub(super) fn getdel(ctx: &mut Ctx, request: Request) -> CmdResult {
    let key = request.arg(1);
    let is_string = ctx.db().get(key, ctx.now, |value| match value {
        Some(Value::String(_)) => Ok(true),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(false),
    })?;
    if !is_string {
        ctx.reply.null();
        return Ok(());
    }
    match ctx.db().take(key, ctx.now) {
        Some((Value::String(bytes), _)) => ctx.reply.bulk(&bytes),
        None => ctx.reply.null(),
        // Replaced by another type since the check above: put it back, as if that write came
        // after this command.
        Some((other, expires_at)) => {
            ctx.db().insert(key, other, expires_at);
            return Err(WRONGTYPE.into());
        }
    }
    Ok(())
}

/// SETEX key seconds value, and PSETEX in milliseconds: the expiry is checked before anything
/// else, as Redis does, and must be positive and not overflow once made absolute.
fn set_with_expiry(ctx: &mut Ctx, request: Request, unit_ms: i64, name: &str) -> CmdResult {
    let amount = parse_i64(request.arg(2)).ok_or(NOT_INTEGER)?;
    let invalid = || CmdError::Owned(format!("ERR invalid expire time in '{name}' command"));
    if amount <= 0 {
        return Err(invalid());
    }
    let at = amount
        .checked_mul(unit_ms)
        .and_then(|millis| millis.checked_add(ctx.now as i64))
        .ok_or_else(invalid)?;
    let value = Value::String(request.arg(3).to_vec());
    ctx.db().insert(request.arg(1), value, at as u64);
    ctx.reply.ok();
    Ok(())
}

pub(super) fn setex(ctx: &mut Ctx, request: Request) -> CmdResult {
    set_with_expiry(ctx, request, 1000, "setex")
}

pub(super) fn psetex(ctx: &mut Ctx, request: Request) -> CmdResult {
    set_with_expiry(ctx, request, 1, "psetex")
}

/// MGET key...: a null for each key that is missing or not a string.
pub(super) fn mget(ctx: &mut Ctx, request: Request) -> CmdResult {
    ctx.reply.array(request.len() - 1);
    for key in request.args().skip(1) {
        let db = ctx.store.db(ctx.session.db);
        let reply = &mut *ctx.reply;
        db.get(key, ctx.now, |value| match value {
            Some(Value::String(bytes)) => reply.bulk(bytes),
            _ => reply.null(),
        });
    }
    Ok(())
}

/// The key/value pairs of MSET and MSETNX; Redis's arity error when one is incomplete.
fn pairs<'a>(
    request: &Request<'a>,
) -> Result<impl Iterator<Item = (&'a [u8], &'a [u8])>, CmdError> {
    if request.len() % 2 == 0 {
        let name = String::from_utf8_lossy(request.arg(0)).to_ascii_lowercase();
        return Err(CmdError::arity(&name));
    }
    let request = *request;
    Ok((1..request.len())
        .step_by(2)
        .map(move |i| (request.arg(i), request.arg(i + 1))))
}

pub(super) fn mset(ctx: &mut Ctx, request: Request) -> CmdResult {
    for (key, value) in pairs(&request)? {
        ctx.db().insert(key, Value::String(value.to_vec()), 0);
    }
    ctx.reply.ok();
    Ok(())
}

/// MSETNX: sets every pair only if none of the keys exists. Like RENAME, not atomic across
/// keys against a concurrent writer (with the write log on, writes run one at a time).
pub(super) fn msetnx(ctx: &mut Ctx, request: Request) -> CmdResult {
    let db = ctx.db();
    let any_exists = pairs(&request)?.any(|(key, _)| db.contains(key, ctx.now));
    if !any_exists {
        for (key, value) in pairs(&request)? {
            db.insert(key, Value::String(value.to_vec()), 0);
        }
    }
    ctx.reply.int(i64::from(!any_exists));
    Ok(())
}

/// APPEND key value: the new length; creates the key if missing.
pub(super) fn append(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (key, tail) = (request.arg(1), request.arg(2));
    let limits = Limits::of(ctx);
    let create = || Ok::<_, CmdError>(Value::String(tail.to_vec()));
    let len = ctx
        .db()
        .get_or_create(key, ctx.now, create, |value, created| {
            let Value::String(bytes) = value else {
                return Err(CmdError::from(WRONGTYPE));
            };
            if !created {
                limits.check_len(bytes.len() as u64, tail.len() as u64)?;
                let start = bytes.len();
                limits.grow_zeroed(bytes, start + tail.len())?;
                bytes[start..].copy_from_slice(tail);
            }
            Ok(bytes.len())
        })??;
    ctx.reply.int(len as i64);
    Ok(())
}

/// GETRANGE key start end, Redis 8's way: negative indexes count from the end, and a range
/// that ends before the string starts is empty. (Redis 7.0 answers `GETRANGE k -100 -50` on
/// a short string with its first byte.)
pub(super) fn getrange(ctx: &mut Ctx, request: Request) -> CmdResult {
    let start = parse_i64(request.arg(2)).ok_or(NOT_INTEGER)?;
    let end = parse_i64(request.arg(3)).ok_or(NOT_INTEGER)?;
    let db = ctx.store.db(ctx.session.db);
    let reply = &mut *ctx.reply;
    db.get(request.arg(1), ctx.now, |value| {
        let bytes = match value {
            Some(Value::String(bytes)) => bytes,
            Some(_) => return Err(CmdError::from(WRONGTYPE)),
            None => {
                reply.bulk(b"");
                return Ok(());
            }
        };
        let len = bytes.len() as i64;
        let start = if start < 0 { start + len } else { start };
        let end = if end < 0 { end + len } else { end };
        if len == 0 || start >= len || end < 0 || start > end {
            reply.bulk(b"");
        } else {
            reply.bulk(&bytes[start.max(0) as usize..=end.min(len - 1) as usize]);
        }
        Ok(())
    })
}

/// SETRANGE key offset value: the new length. Writing nothing creates nothing; a missing
/// key is created zero-filled up to the offset.
pub(super) fn setrange(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (key, data) = (request.arg(1), request.arg(3));
    let offset = parse_i64(request.arg(2)).ok_or(NOT_INTEGER)?;
    let offset = u64::try_from(offset).map_err(|_| CmdError::from(OFFSET_RANGE))?;
    if data.is_empty() {
        let len = ctx.db().get(key, ctx.now, |value| match value {
            Some(Value::String(bytes)) => Ok(bytes.len()),
            Some(_) => Err(CmdError::from(WRONGTYPE)),
            None => Ok(0),
        })?;
        ctx.reply.int(len as i64);
        return Ok(());
    }
    let limits = Limits::of(ctx);
    // Within the limit, which is below 2^63, so the end fits a usize on 64-bit targets.
    let end = || {
        limits.check_len(offset, data.len() as u64)?;
        usize::try_from(offset + data.len() as u64).map_err(|_| CmdError::from(STRING_TOO_LONG))
    };
    let create = || limits.zeroed(end()?).map(Value::String);
    let len = ctx.db().get_or_create(key, ctx.now, create, |value, _| {
        let Value::String(bytes) = value else {
            return Err(CmdError::from(WRONGTYPE));
        };
        let end = end()?;
        limits.grow_zeroed(bytes, end)?;
        bytes[end - data.len()..end].copy_from_slice(data);
        Ok(bytes.len())
    })??;
    ctx.reply.int(len as i64);
    Ok(())
}

/// String commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "set",
        -3,
        Group::String,
        "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
        set,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[
        KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE, VARIABLE_FLAGS], 1, 0, 1)
            .notes("RW and ACCESS due to the optional `GET` argument"),
    ])
    .acl(bits![Acl: STRING])
    .complexity("O(1)")
    .history(&[
        ("2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."),
        ("6.0.0", "Added the `KEEPTTL` option."),
        ("6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."),
        ("7.0.0", "Allowed the `NX` and `GET` options to be used together."),
    ])
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
        "Returns the string value of a key.",
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
        "Returns the length of a string value.",
        strlen,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .since("2.2.0")
    .complexity("O(1)")
    .args(&[key("key")]),
    CommandSpec::new(
        "setnx",
        3,
        Group::String,
        "Set the string value of a key only when the key doesn't exist.",
        setnx,
    )
    .flags(bits![Flags: WRITE, DENYOOM, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: OW, INSERT], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .complexity("O(1)")
    .deprecated("2.6.12", "`SET` with the `NX` argument")
    .args(&[key("key"), string("value")]),
    CommandSpec::new(
        "getset",
        3,
        Group::String,
        "Returns the previous string value of a key after setting it to a new value.",
        getset,
    )
    .flags(bits![Flags: WRITE, DENYOOM, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .complexity("O(1)")
    .deprecated("6.2.0", "`SET` with the `!GET` argument")
    .args(&[key("key"), string("value")]),
    CommandSpec::new(
        "getdel",
        2,
        Group::String,
        "Returns the string value of a key after deleting the key.",
        getdel,
    )
    .flags(bits![Flags: WRITE, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RW, ACCESS, DELETE], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .since("6.2.0")
    .complexity("O(1)")
    .args(&[key("key")]),
    CommandSpec::new(
        "setex",
        4,
        Group::String,
        "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.",
        setex,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[KeySpec::range(bits![KeyFlags: OW, UPDATE], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .since("2.0.0")
    .complexity("O(1)")
    .deprecated("2.6.12", "`SET` with the `EX` argument")
    .args(&[key("key"), integer("seconds"), string("value")]),
    CommandSpec::new(
        "psetex",
        4,
        Group::String,
        "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.",
        psetex,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[KeySpec::range(bits![KeyFlags: OW, UPDATE], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .since("2.6.0")
    .complexity("O(1)")
    .deprecated("2.6.12", "`SET` with the `PX` argument")
    .args(&[key("key"), integer("milliseconds"), string("value")]),
    CommandSpec::new(
        "mget",
        -2,
        Group::String,
        "Atomically returns the string values of one or more keys.",
        mget,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, -1, 1)])
    .acl(bits![Acl: STRING])
    .complexity("O(N) where N is the number of keys to retrieve.")
    .args(&[key("key").multiple()])
    .tips(&["request_policy:multi_shard"]),
    CommandSpec::new(
        "mset",
        -3,
        Group::String,
        "Atomically creates or modifies the string values of one or more keys.",
        mset,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[KeySpec::range(bits![KeyFlags: OW, UPDATE], 1, -1, 2)])
    .acl(bits![Acl: STRING])
    .since("1.0.1")
    .complexity("O(N) where N is the number of keys to set.")
    .args(&[block("data", &[key("key"), string("value")]).multiple()])
    .tips(&["request_policy:multi_shard", "response_policy:all_succeeded"]),
    CommandSpec::new(
        "msetnx",
        -3,
        Group::String,
        "Atomically modifies the string values of one or more keys only when all keys don't exist.",
        msetnx,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[KeySpec::range(bits![KeyFlags: OW, INSERT], 1, -1, 2)])
    .acl(bits![Acl: STRING])
    .since("1.0.1")
    .complexity("O(N) where N is the number of keys to set.")
    .args(&[block("data", &[key("key"), string("value")]).multiple()])
    // Redis 7.0's tips; Redis 8 dropped them.
    .tips(&["request_policy:multi_shard", "response_policy:agg_min"]),
    CommandSpec::new(
        "append",
        3,
        Group::String,
        "Appends a string to the value of a key. Creates the key if it doesn't exist.",
        append,
    )
    .flags(bits![Flags: WRITE, DENYOOM, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RW, INSERT], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .since("2.0.0")
    .complexity("O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.")
    .args(&[key("key"), string("value")]),
    CommandSpec::new(
        "getrange",
        4,
        Group::String,
        "Returns a substring of the string stored at a key.",
        getrange,
    )
    .flags(bits![Flags: READONLY])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .since("2.4.0")
    .complexity("O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.")
    .args(&[key("key"), integer("start"), integer("end")]),
    CommandSpec::new(
        "setrange",
        4,
        Group::String,
        "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.",
        setrange,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RW, UPDATE], 1, 0, 1)])
    .acl(bits![Acl: STRING])
    .since("2.2.0")
    .complexity("O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.")
    .args(&[key("key"), integer("offset"), string("value")]),
];
