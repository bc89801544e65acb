//! Plain strings, so that clients' type checks and simple tools behave as they do on Redis.

use super::args::{int, keyword, Args, Items, Key};
use super::errors::*;
use super::key_specs::*;
use super::spec::{bits, command_table, CommandSpec, KeySpec};
use super::string_limits::Limits;
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

#[derive(Clone, Copy)]
enum SetOption {
    Nx,
    Xx,
    Get,
    KeepTtl,
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// SET key value [NX | XX] [GET] [EX s | PX ms | EXAT s | PXAT ms | KEEPTTL]: a condition or an
/// expiry given twice is a syntax error, GET may be.
struct Set<'a> {
    key: &'a [u8],
    value: &'a [u8],
    condition: Condition,
    expiry: Expiry,
    get: bool,
}

impl<'a> Set<'a> {
    /// `now` makes a relative expiry absolute.
    fn parse(request: Request<'a>, now: u64) -> Result<Self, CmdError> {
        const OPTIONS: &[(&str, SetOption)] = &[
            ("NX", SetOption::Nx),
            ("XX", SetOption::Xx),
            ("GET", SetOption::Get),
            ("KEEPTTL", SetOption::KeepTtl),
            ("EX", SetOption::Ex),
            ("PX", SetOption::Px),
            ("EXAT", SetOption::ExAt),
            ("PXAT", SetOption::PxAt),
        ];
        let mut args = Args::new(request, 1);
        let mut set = Set {
            key: args.required()?,
            value: args.required()?,
            condition: Condition::Always,
            expiry: Expiry::None,
            get: false,
        };
        while let Some(word) = args.next() {
            let unset_condition = matches!(set.condition, Condition::Always);
            let unset_expiry = matches!(set.expiry, Expiry::None);
            match keyword(word, OPTIONS) {
                Some(SetOption::Nx) if unset_condition => set.condition = Condition::IfMissing,
                Some(SetOption::Xx) if unset_condition => set.condition = Condition::IfPresent,
                Some(SetOption::Get) => set.get = true,
                Some(SetOption::KeepTtl) if unset_expiry => set.expiry = Expiry::Keep,
                Some(
                    unit @ (SetOption::Ex | SetOption::Px | SetOption::ExAt | SetOption::PxAt),
                ) if unset_expiry => {
                    let amount = int(args.next_or(SYNTAX)?, NOT_INTEGER)?;
                    set.expiry = Expiry::At(expire_at(unit, amount, now)?);
                }
                _ => return Err(SYNTAX.into()),
            }
        }
        Ok(set)
    }
}

/// The time, in Unix milliseconds, that SET's EX, PX, EXAT or PXAT `amount` names: positive,
/// and not overflowing once in milliseconds and absolute.
fn expire_at(unit: SetOption, amount: i64, now: u64) -> Result<u64, CmdError> {
    let invalid = || invalid_expire_time("set");
    if amount <= 0 {
        return Err(invalid());
    }
    let millis = match unit {
        SetOption::Ex | SetOption::ExAt => amount.checked_mul(1000).ok_or_else(invalid)?,
        _ => amount,
    };
    let at = match unit {
        SetOption::Ex | SetOption::Px => (now as i64).checked_add(millis).ok_or_else(invalid)?,
        _ => millis,
    };
    Ok(at as u64)
}

fn set(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Set {
        key,
        value,
        condition,
        expiry,
        get,
    } = Set::parse(request, ctx.now)?;
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

fn get(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let reply = &mut *ctx.reply;
    ctx.store
        .db(ctx.session.db)
        .get(key, ctx.now, |value| match value {
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

fn strlen(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let len = ctx.db().get(key, ctx.now, |value| match value {
        Some(Value::String(bytes)) => Ok(bytes.len()),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(0),
    })?;
    ctx.reply.int(len as i64);
    Ok(())
}

/// `key value`: SETNX, GETSET and APPEND.
struct KeyValue<'a> {
    key: &'a [u8],
    value: &'a [u8],
}

impl<'a> KeyValue<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(KeyValue {
            key: args.required()?,
            value: args.required()?,
        })
    }
}

/// SETNX key value: 1 if it set the key, 0 if a key (of any type) was there.
fn setnx(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyValue { key, value } = KeyValue::parse(request)?;
    let set = ctx
        .db()
        .insert_new(key, Value::String(value.to_vec()), ctx.now);
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
fn getset(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyValue { key, value } = KeyValue::parse(request)?;
    let old = string_at(ctx, key)?;
    ctx.db().insert(key, Value::String(value.to_vec()), 0);
    bulk_or_null(ctx, old);
    Ok(())
}

/// GETDEL key: the value, removed in the same step, so that of two clients racing for a
/// one-time value only one gets it.
fn getdel(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
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
struct SetEx<'a> {
    key: &'a [u8],
    /// Unix milliseconds.
    expires_at: u64,
    value: &'a [u8],
}

impl<'a> SetEx<'a> {
    /// An expiry in units of `unit_ms` from `now`; `name` is the command's, for its error.
    fn parse(request: Request<'a>, unit_ms: i64, name: &str, now: u64) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let amount = args.int(NOT_INTEGER)?;
        let invalid = || invalid_expire_time(name);
        if amount <= 0 {
            return Err(invalid());
        }
        let at = amount
            .checked_mul(unit_ms)
            .and_then(|millis| millis.checked_add(now as i64))
            .ok_or_else(invalid)?;
        Ok(SetEx {
            key,
            expires_at: at as u64,
            value: args.required()?,
        })
    }
}

fn set_with_expiry(ctx: &mut Ctx, command: SetEx) -> CmdResult {
    let value = Value::String(command.value.to_vec());
    ctx.db().insert(command.key, value, command.expires_at);
    ctx.reply.ok();
    Ok(())
}

fn setex(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = SetEx::parse(request, 1000, "setex", ctx.now)?;
    set_with_expiry(ctx, command)
}

fn psetex(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = SetEx::parse(request, 1, "psetex", ctx.now)?;
    set_with_expiry(ctx, command)
}

/// MGET key...: a null for each key that is missing or not a string.
fn mget(ctx: &mut Ctx, request: Request) -> CmdResult {
    let keys = Args::new(request, 1).items();
    ctx.reply.array(keys.len());
    for key in keys.iter() {
        let db = ctx.store.db(ctx.session.db);
        let reply = &mut *ctx.reply;
        db.get(key, ctx.now, |value| match value {
            Some(Value::String(bytes)) => reply.bulk(bytes),
            _ => reply.null(),
        });
    }
    Ok(())
}

/// MSET and MSETNX key value [key value ...]: Redis's arity error when a pair is incomplete.
struct Pairs<'a> {
    words: Items<'a>,
}

impl<'a> Pairs<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        if args.remaining() % 2 == 1 {
            return Err(args.arity_error());
        }
        Ok(Pairs {
            words: args.items(),
        })
    }

    /// Each key with its value.
    fn iter(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let mut words = self.words.iter();
        std::iter::from_fn(move || Some((words.next()?, words.next()?)))
    }
}

fn mset(ctx: &mut Ctx, request: Request) -> CmdResult {
    for (key, value) in Pairs::parse(request)?.iter() {
        ctx.db().insert(key, Value::String(value.to_vec()), 0);
    }
    ctx.reply.ok();
    Ok(())
}

/// MSETNX: sets every pair only if none of the keys exists. Like RENAME, not atomic across
/// keys against a concurrent writer (with the write log on, writes run one at a time).
fn msetnx(ctx: &mut Ctx, request: Request) -> CmdResult {
    let pairs = Pairs::parse(request)?;
    let db = ctx.db();
    let any_exists = pairs.iter().any(|(key, _)| db.contains(key, ctx.now));
    if !any_exists {
        for (key, value) in pairs.iter() {
            db.insert(key, Value::String(value.to_vec()), 0);
        }
    }
    ctx.reply.int(i64::from(!any_exists));
    Ok(())
}

/// APPEND key value: the new length; creates the key if missing.
fn append(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyValue { key, value: tail } = KeyValue::parse(request)?;
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

/// GETRANGE key start end
struct GetRange<'a> {
    key: &'a [u8],
    start: i64,
    end: i64,
}

impl<'a> GetRange<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(GetRange {
            key: args.required()?,
            start: args.int(NOT_INTEGER)?,
            end: args.int(NOT_INTEGER)?,
        })
    }
}

/// GETRANGE key start end, Redis 8's way: negative indexes count from the end, and a range
/// that ends before the string starts is empty. (Redis 7.0 answers `GETRANGE k -100 -50` on
/// a short string with its first byte.)
fn getrange(ctx: &mut Ctx, request: Request) -> CmdResult {
    let GetRange { key, start, end } = GetRange::parse(request)?;
    let db = ctx.store.db(ctx.session.db);
    let reply = &mut *ctx.reply;
    db.get(key, ctx.now, |value| {
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

/// SETRANGE key offset value
struct SetRange<'a> {
    key: &'a [u8],
    offset: u64,
    data: &'a [u8],
}

impl<'a> SetRange<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let offset = args.int(NOT_INTEGER)?;
        Ok(SetRange {
            key,
            offset: u64::try_from(offset).map_err(|_| CmdError::from(OFFSET_RANGE))?,
            data: args.required()?,
        })
    }
}

/// SETRANGE key offset value: the new length. Writing nothing creates nothing; a missing
/// key is created zero-filled up to the offset.
fn setrange(ctx: &mut Ctx, request: Request) -> CmdResult {
    let SetRange { key, offset, data } = SetRange::parse(request)?;
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
pub(super) const SPECS: &[CommandSpec] = &command_table! { String:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "set", -3, [WRITE, DENYOOM], SET_KEY, [STRING], set, docs::SET;
    "get", 2, [READONLY, FAST], RO_ACCESS, [STRING], get, docs::GET;
    "strlen", 2, [READONLY, FAST], RO, [STRING], strlen, docs::STRLEN;
    "setnx", 3, [WRITE, DENYOOM, FAST], OW_INSERT, [STRING], setnx, docs::SETNX;
    "getset", 3, [WRITE, DENYOOM, FAST], RW_ACCESS_UPDATE, [STRING], getset, docs::GETSET;
    "getdel", 2, [WRITE, FAST], RW_ACCESS_DELETE, [STRING], getdel, docs::GETDEL;
    "setex", 4, [WRITE, DENYOOM], OW_UPDATE, [STRING], setex, docs::SETEX;
    "psetex", 4, [WRITE, DENYOOM], OW_UPDATE, [STRING], psetex, docs::PSETEX;
    "mget", -2, [READONLY, FAST], RO_ACCESS_KEYS, [STRING], mget, docs::MGET,
        tips(&["request_policy:multi_shard"]);
    "mset", -3, [WRITE, DENYOOM], OW_UPDATE_PAIRS, [STRING], mset, docs::MSET,
        tips(&["request_policy:multi_shard", "response_policy:all_succeeded"]);
    // Redis 7.0's tips; Redis 8 dropped them.
    "msetnx", -3, [WRITE, DENYOOM], OW_INSERT_PAIRS, [STRING], msetnx, docs::MSETNX,
        tips(&["request_policy:multi_shard", "response_policy:agg_min"]);
    "append", 3, [WRITE, DENYOOM, FAST], RW_INSERT, [STRING], append, docs::APPEND;
    "getrange", 4, [READONLY], RO_ACCESS, [STRING], getrange, docs::GETRANGE;
    "substr", 4, [READONLY], RO_ACCESS, [STRING], getrange, docs::SUBSTR;
    "setrange", 4, [WRITE, DENYOOM], RW_UPDATE, [STRING], setrange, docs::SETRANGE;
};

/// SET's key, which it reads as well with GET.
const SET_KEY: &[KeySpec] =
    &[
        KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE, VARIABLE_FLAGS], 1, 0, 1)
            .notes("RW and ACCESS due to the optional `GET` argument"),
    ];

/// What COMMAND DOCS says of each, in Redis 8's words.
mod docs {
    use super::super::spec::{block, integer, key, one_of, pure_token, string, unix_time, Docs};

    pub(super) const SUBSTR: Docs = Docs::new("Returns a substring from a string value.")
        .complexity("O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.")
        .deprecated("2.0.0", "`GETRANGE`")
        .args(&[key("key"), integer("start"), integer("end")]);

    pub(super) const SET: Docs = Docs::new("Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.")
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
    ]);
    pub(super) const GET: Docs = Docs::new("Returns the string value of a key.")
        .complexity("O(1)")
        .args(&[key("key")]);
    pub(super) const STRLEN: Docs = Docs::new("Returns the length of a string value.")
        .since("2.2.0")
        .complexity("O(1)")
        .args(&[key("key")]);
    pub(super) const SETNX: Docs =
        Docs::new("Set the string value of a key only when the key doesn't exist.")
            .complexity("O(1)")
            .deprecated("2.6.12", "`SET` with the `NX` argument")
            .args(&[key("key"), string("value")]);
    pub(super) const GETSET: Docs =
        Docs::new("Returns the previous string value of a key after setting it to a new value.")
            .complexity("O(1)")
            .deprecated("6.2.0", "`SET` with the `!GET` argument")
            .args(&[key("key"), string("value")]);
    pub(super) const GETDEL: Docs =
        Docs::new("Returns the string value of a key after deleting the key.")
            .since("6.2.0")
            .complexity("O(1)")
            .args(&[key("key")]);
    pub(super) const SETEX: Docs = Docs::new(
        "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.",
    )
    .since("2.0.0")
    .complexity("O(1)")
    .deprecated("2.6.12", "`SET` with the `EX` argument")
    .args(&[key("key"), integer("seconds"), string("value")]);
    pub(super) const PSETEX: Docs = Docs::new("Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.")
        .since("2.6.0")
        .complexity("O(1)")
        .deprecated("2.6.12", "`SET` with the `PX` argument")
        .args(&[key("key"), integer("milliseconds"), string("value")]);
    pub(super) const MGET: Docs =
        Docs::new("Atomically returns the string values of one or more keys.")
            .complexity("O(N) where N is the number of keys to retrieve.")
            .args(&[key("key").multiple()]);
    pub(super) const MSET: Docs =
        Docs::new("Atomically creates or modifies the string values of one or more keys.")
            .since("1.0.1")
            .complexity("O(N) where N is the number of keys to set.")
            .args(&[block("data", &[key("key"), string("value")]).multiple()]);
    pub(super) const MSETNX: Docs = Docs::new(
        "Atomically modifies the string values of one or more keys only when all keys don't exist.",
    )
    .since("1.0.1")
    .complexity("O(N) where N is the number of keys to set.")
    .args(&[block("data", &[key("key"), string("value")]).multiple()]);
    pub(super) const APPEND: Docs = Docs::new("Appends a string to the value of a key. Creates the key if it doesn't exist.")
        .since("2.0.0")
        .complexity("O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.")
        .args(&[key("key"), string("value")]);
    pub(super) const GETRANGE: Docs = Docs::new("Returns a substring of the string stored at a key.")
        .since("2.4.0")
        .complexity("O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.")
        .args(&[key("key"), integer("start"), integer("end")]);
    pub(super) const SETRANGE: Docs = Docs::new("Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.")
        .since("2.2.0")
        .complexity("O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.")
        .args(&[key("key"), integer("offset"), string("value")]);
}
