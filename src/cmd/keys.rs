//! The keyspace commands: existence, deletion, types, iteration, renaming, copying, expiry.

use super::args::{is, parse_i64, Cursor};
use super::errors::*;
use super::random::next_random;
use super::spec::{
    bits, integer, key, one_of, pattern, pure_token, string, unix_time, Arg, CommandSpec, Docs,
    Group, KeySpec,
};
use super::Ctx;
use crate::protocol::Request;
use crate::store::{ScanFilter, Value};

pub(super) fn dbsize(ctx: &mut Ctx, _request: Request) -> CmdResult {
    ctx.reply.int(ctx.db().len() as i64);
    Ok(())
}

fn flush_mode(request: &Request) -> CmdResult {
    match request.len() {
        1 => Ok(()),
        2 if is(request.arg(1), "ASYNC") || is(request.arg(1), "SYNC") => Ok(()),
        _ => Err(SYNTAX.into()),
    }
}

pub(super) fn flushdb(ctx: &mut Ctx, request: Request) -> CmdResult {
    flush_mode(&request)?;
    ctx.db().clear();
    ctx.reply.ok();
    Ok(())
}

pub(super) fn flushall(ctx: &mut Ctx, request: Request) -> CmdResult {
    flush_mode(&request)?;
    ctx.store.dbs().for_each(|db| db.clear());
    ctx.reply.ok();
    Ok(())
}

/// Bytes the map spends on one key besides the value: the key itself and its slot.
fn key_overhead(key: &[u8]) -> u64 {
    key.len() as u64 + 64
}

pub(super) fn memory(ctx: &mut Ctx, request: Request) -> CmdResult {
    let sub = request.arg(1);
    if is(sub, "USAGE") {
        if request.len() != 3 && !(request.len() == 5 && is(request.arg(3), "SAMPLES")) {
            return Err(if request.len() < 3 {
                CmdError::arity("memory|usage")
            } else {
                SYNTAX.into()
            });
        }
        let key = request.arg(2);
        match ctx.db().peek(key, ctx.now, |v| v.map(Value::memory_bytes)) {
            Some(bytes) => ctx.reply.int((bytes + key_overhead(key)) as i64),
            None => ctx.reply.null(),
        }
    } else if is(sub, "HELP") {
        let lines = [
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value.",
            "HELP",
            "    Print this help.",
        ];
        ctx.reply.array(lines.len());
        lines.iter().for_each(|line| ctx.reply.simple(line));
    } else {
        return Err(CmdError::unknown_subcommand(sub, "MEMORY"));
    }
    Ok(())
}

/// OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ | HELP, for tools that inspect keys.
pub(super) fn object(ctx: &mut Ctx, request: Request) -> CmdResult {
    let sub = request.arg(1);
    if is(sub, "HELP") {
        let lines = [
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
            "HELP",
            "    Prints this help.",
        ];
        ctx.reply.array(lines.len());
        lines.iter().for_each(|line| ctx.reply.simple(line));
        return Ok(());
    }
    let known = ["ENCODING", "REFCOUNT", "IDLETIME", "FREQ"];
    if !known.iter().any(|k| is(sub, k)) {
        return Err(CmdError::unknown_subcommand(sub, "OBJECT"));
    }
    if request.len() != 3 {
        let name = String::from_utf8_lossy(sub).to_ascii_lowercase();
        return Err(CmdError::arity(&format!("object|{name}")));
    }
    // OBJECT looks without counting an access, as Redis's does.
    let encoding = ctx.db().peek(request.arg(2), ctx.now, |value| {
        value.map(|value| match value {
            Value::String(bytes) if parse_i64(bytes).is_some() && bytes.len() <= 20 => "int",
            Value::String(bytes) if bytes.len() <= 44 => "embstr",
            collection => collection.collection_encoding().unwrap_or("raw"),
        })
    });
    let Some(encoding) = encoding else {
        ctx.reply.null();
        return Ok(());
    };
    let tracking = ctx.db().tracking();
    let bits = || ctx.db().access_bits(request.arg(2), ctx.now).unwrap_or(0);
    if is(sub, "ENCODING") {
        ctx.reply.bulk(encoding.as_bytes());
    } else if is(sub, "FREQ") {
        if !tracking.is_lfu() {
            return Err(NOT_LFU.into());
        }
        ctx.reply.int(i64::from(tracking.frequency(bits())));
    } else if is(sub, "IDLETIME") {
        if tracking.is_lfu() {
            return Err(LFU.into());
        }
        ctx.reply.int(tracking.idle_secs(bits()) as i64);
    } else {
        ctx.reply.int(1);
    }
    Ok(())
}

pub(super) fn del(ctx: &mut Ctx, request: Request) -> CmdResult {
    let db = ctx.db();
    let removed = request
        .args()
        .skip(1)
        .filter(|key| db.remove(key, ctx.now))
        .count();
    ctx.reply.int(removed as i64);
    Ok(())
}

pub(super) fn exists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let db = ctx.db();
    let found = request
        .args()
        .skip(1)
        .filter(|key| db.contains(key, ctx.now))
        .count();
    ctx.reply.int(found as i64);
    Ok(())
}

/// TOUCH: counts an access to each key, as a read would; the number of keys that exist.
pub(super) fn touch(ctx: &mut Ctx, request: Request) -> CmdResult {
    let db = ctx.db();
    let found = request
        .args()
        .skip(1)
        .filter(|key| db.touch(key, ctx.now))
        .count();
    ctx.reply.int(found as i64);
    Ok(())
}

pub(super) fn type_of(ctx: &mut Ctx, request: Request) -> CmdResult {
    let name = ctx.db().peek(request.arg(1), ctx.now, |v| {
        v.map_or("none", Value::type_name)
    });
    ctx.reply.simple(name);
    Ok(())
}

pub(super) fn keys(ctx: &mut Ctx, request: Request) -> CmdResult {
    let keys = ctx.db().keys_matching(request.arg(1), ctx.now);
    ctx.reply.array(keys.len());
    keys.iter().for_each(|key| ctx.reply.bulk(key));
    Ok(())
}

pub(super) fn scan(ctx: &mut Ctx, request: Request) -> CmdResult {
    let cursor = std::str::from_utf8(request.arg(1))
        .ok()
        .and_then(|text| text.parse::<u64>().ok())
        .ok_or("ERR invalid cursor")?;
    let mut filter = ScanFilter {
        pattern: None,
        type_name: None,
    };
    let mut count = 10;
    let mut options = Cursor::new(request, 2);
    while let Some(option) = options.next() {
        let value = options.next_or(SYNTAX)?;
        if is(option, "MATCH") {
            filter.pattern = Some(value);
        } else if is(option, "COUNT") {
            count = parse_i64(value).ok_or(NOT_INTEGER)?;
            if count < 1 {
                return Err(SYNTAX.into());
            }
        } else if is(option, "TYPE") {
            filter.type_name = Some(value);
        } else {
            return Err(SYNTAX.into());
        }
    }
    let (next, keys) = ctx.db().scan(cursor, count as usize, &filter, ctx.now);
    ctx.reply.array(2);
    ctx.reply.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.reply.array(keys.len());
    keys.iter().for_each(|key| ctx.reply.bulk(key));
    Ok(())
}

pub(super) fn randomkey(ctx: &mut Ctx, _request: Request) -> CmdResult {
    match ctx.db().random_key(ctx.now, next_random()) {
        Some(key) => ctx.reply.bulk(&key),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// Moves a key; the destination is overwritten. Not atomic across the two keys: a concurrent
/// reader may briefly see neither.
fn move_key(ctx: &Ctx, from: &[u8], to: &[u8]) -> bool {
    let db = ctx.db();
    match db.take(from, ctx.now) {
        Some((value, expires_at)) => {
            db.insert(to, value, expires_at);
            true
        }
        None => false,
    }
}

pub(super) fn rename(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (from, to) = (request.arg(1), request.arg(2));
    if from == to {
        if !ctx.db().contains(from, ctx.now) {
            return Err(NO_SUCH_KEY.into());
        }
    } else if !move_key(ctx, from, to) {
        return Err(NO_SUCH_KEY.into());
    }
    ctx.reply.ok();
    Ok(())
}

pub(super) fn renamenx(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (from, to) = (request.arg(1), request.arg(2));
    let db = ctx.db();
    if !db.contains(from, ctx.now) {
        return Err(NO_SUCH_KEY.into());
    }
    let moved = from != to && !db.contains(to, ctx.now) && move_key(ctx, from, to);
    ctx.reply.int(moved as i64);
    Ok(())
}

/// COPY source destination [DB index] [REPLACE]. Unlike RedisBloom, Bloom filters can be copied.
pub(super) fn copy(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (from, to) = (request.arg(1), request.arg(2));
    let mut target_db = ctx.session.db;
    let mut replace = false;
    let mut options = Cursor::new(request, 3);
    while let Some(option) = options.next() {
        if is(option, "REPLACE") {
            replace = true;
        } else if is(option, "DB") {
            let index = parse_i64(options.next_or(SYNTAX)?).ok_or(NOT_INTEGER)?;
            if index < 0 || index as usize >= ctx.store.databases() {
                return Err(DB_INDEX.into());
            }
            target_db = index as usize;
        } else {
            return Err(SYNTAX.into());
        }
    }
    if from == to && target_db == ctx.session.db {
        return Err(SAME_OBJECT.into());
    }
    let source = ctx.db();
    let Some(value) = source.get(from, ctx.now, |v| v.cloned()) else {
        ctx.reply.int(0);
        return Ok(());
    };
    let expires_at = source.expires_at(from, ctx.now).unwrap_or(0);
    let target = ctx.store.db(target_db);
    if !replace && target.contains(to, ctx.now) {
        ctx.reply.int(0);
        return Ok(());
    }
    target.insert(to, value, expires_at);
    ctx.reply.int(1);
    Ok(())
}

/// EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT: `to_millis` turns the argument into milliseconds;
/// `relative` adds the current time. NX, XX, GT and LT combine as in Redis.
fn set_expiry(
    ctx: &mut Ctx,
    request: Request,
    name: &str,
    to_millis: i64,
    relative: bool,
) -> CmdResult {
    let invalid = || CmdError::Owned(format!("ERR invalid expire time in '{name}' command"));
    let amount = parse_i64(request.arg(2)).ok_or(NOT_INTEGER)?;
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for option in request.args().skip(3) {
        let flag = if is(option, "NX") {
            &mut nx
        } else if is(option, "XX") {
            &mut xx
        } else if is(option, "GT") {
            &mut gt
        } else if is(option, "LT") {
            &mut lt
        } else {
            return Err(CmdError::Owned(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(option)
            )));
        };
        *flag = true;
    }
    if nx && (xx || gt || lt) {
        return Err("ERR NX and XX, GT or LT options at the same time are not compatible".into());
    }
    if gt && lt {
        return Err("ERR GT and LT options at the same time are not compatible".into());
    }
    let mut at = amount.checked_mul(to_millis).ok_or_else(invalid)?;
    if relative {
        at = at.checked_add(ctx.now as i64).ok_or_else(invalid)?;
    }
    let key = request.arg(1);
    let db = ctx.db();
    let Some(current) = db.expires_at(key, ctx.now) else {
        ctx.reply.int(0);
        return Ok(());
    };
    // A key without expiry counts as expiring never: later than any time.
    let allowed = (!nx || current == 0)
        && (!xx || current != 0)
        && (!gt || (current != 0 && at > current as i64))
        && (!lt || current == 0 || at < current as i64);
    if !allowed {
        ctx.reply.int(0);
        return Ok(());
    }
    if at <= ctx.now as i64 {
        db.remove(key, ctx.now);
    } else {
        db.set_expires_at(key, ctx.now, at as u64);
    }
    ctx.reply.int(1);
    Ok(())
}

pub(super) fn expire(ctx: &mut Ctx, request: Request) -> CmdResult {
    set_expiry(ctx, request, "expire", 1000, true)
}

pub(super) fn pexpire(ctx: &mut Ctx, request: Request) -> CmdResult {
    set_expiry(ctx, request, "pexpire", 1, true)
}

pub(super) fn expireat(ctx: &mut Ctx, request: Request) -> CmdResult {
    set_expiry(ctx, request, "expireat", 1000, false)
}

pub(super) fn pexpireat(ctx: &mut Ctx, request: Request) -> CmdResult {
    set_expiry(ctx, request, "pexpireat", 1, false)
}

/// TTL and friends: -2 for a missing key, -1 for no expiry, else `f(expiry time)`.
fn report_expiry(ctx: &mut Ctx, request: Request, f: impl Fn(u64, u64) -> i64) -> CmdResult {
    let value = match ctx.db().expires_at(request.arg(1), ctx.now) {
        None => -2,
        Some(0) => -1,
        Some(at) => f(at, ctx.now),
    };
    ctx.reply.int(value);
    Ok(())
}

pub(super) fn ttl(ctx: &mut Ctx, request: Request) -> CmdResult {
    report_expiry(ctx, request, |at, now| ((at - now + 500) / 1000) as i64)
}

pub(super) fn pttl(ctx: &mut Ctx, request: Request) -> CmdResult {
    report_expiry(ctx, request, |at, now| (at - now) as i64)
}

pub(super) fn expiretime(ctx: &mut Ctx, request: Request) -> CmdResult {
    report_expiry(ctx, request, |at, _| (at / 1000) as i64)
}

pub(super) fn pexpiretime(ctx: &mut Ctx, request: Request) -> CmdResult {
    report_expiry(ctx, request, |at, _| at as i64)
}

pub(super) fn persist(ctx: &mut Ctx, request: Request) -> CmdResult {
    let key = request.arg(1);
    let db = ctx.db();
    let removed =
        db.expires_at(key, ctx.now).is_some_and(|at| at != 0) && db.set_expires_at(key, ctx.now, 0);
    ctx.reply.int(removed as i64);
    Ok(())
}

/// Keyspace commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "dbsize",
        1,
        Group::Server,
        "Returns the number of keys in the database.",
        dbsize,
    )
    .flags(bits![Flags: READONLY, FAST])
    .acl(bits![Acl: KEYSPACE])
    .complexity("O(1)"),
    CommandSpec::new(
        "flushdb",
        -1,
        Group::Server,
        "Remove all keys from the current database.",
        flushdb,
    )
    .flags(bits![Flags: WRITE])
    .acl(bits![Acl: KEYSPACE, DANGEROUS])
    .complexity("O(N) where N is the number of keys in the selected database")
    .history(&[
        ("4.0.0", "Added the `ASYNC` flushing mode modifier."),
        ("6.2.0", "Added the `SYNC` flushing mode modifier."),
    ])
    .args(FLUSH_MODE),
    CommandSpec::new(
        "flushall",
        -1,
        Group::Server,
        "Removes all keys from all databases.",
        flushall,
    )
    .flags(bits![Flags: WRITE])
    .acl(bits![Acl: KEYSPACE, DANGEROUS])
    .complexity("O(N) where N is the total number of keys in all databases")
    .history(&[
        ("4.0.0", "Added the `ASYNC` flushing mode modifier."),
        ("6.2.0", "Added the `SYNC` flushing mode modifier."),
    ])
    .args(FLUSH_MODE),
    CommandSpec::new(
        "memory",
        -2,
        Group::Server,
        "A container for memory diagnostics commands.",
        memory,
    )
    .since("4.0.0")
    .complexity("Depends on subcommand.")
    .subcommands(MEMORY_SUBCOMMANDS),
    CommandSpec::new("del", -2, Group::Generic, "Deletes one or more keys.", del)
        .flags(bits![Flags: WRITE])
        .key_specs(&[KeySpec::range(bits![KeyFlags: RM, DELETE], 1, -1, 1)])
        .acl(bits![Acl: KEYSPACE])
        .complexity(
            "O(N) where N is the number of keys that will be removed. When a key to \
            remove holds a value other than a string, the individual complexity for this \
            key is O(M) where M is the number of elements in the list, set, sorted set \
            or hash. Removing a single key that holds a string value is O(1).",
        )
        .args(&[key("key").multiple()]),
    CommandSpec::new(
        "unlink",
        -2,
        Group::Generic,
        "Asynchronously deletes one or more keys.",
        del,
    )
    .flags(bits![Flags: WRITE, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RM, DELETE], 1, -1, 1)])
    .acl(bits![Acl: KEYSPACE])
    .since("4.0.0")
    .complexity(
        "O(1) for each key removed regardless of its size. Then the command does O(N) \
        work in a different thread in order to reclaim memory, where N is the number \
        of allocations the deleted objects where composed of.",
    )
    .args(&[key("key").multiple()]),
    CommandSpec::new(
        "exists",
        -2,
        Group::Generic,
        "Determines whether one or more keys exist.",
        exists,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO], 1, -1, 1)])
    .acl(bits![Acl: KEYSPACE])
    .complexity("O(N) where N is the number of keys to check.")
    .history(&[
        ("3.0.3", "Accepts multiple `key` arguments."),
    ])
    .args(&[key("key").multiple()]),
    CommandSpec::new(
        "touch",
        -2,
        Group::Generic,
        "Returns the number of existing keys out of those specified after updating the time they were last accessed.",
        touch,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO], 1, -1, 1)])
    .acl(bits![Acl: KEYSPACE])
    .since("3.2.1")
    .complexity("O(N) where N is the number of keys that will be touched.")
    .args(&[key("key").multiple()]),
    CommandSpec::new(
        "type",
        2,
        Group::Generic,
        "Determines the type of value stored at a key.",
        type_of,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO], 1, 0, 1)])
    .acl(bits![Acl: KEYSPACE])
    .complexity("O(1)")
    .args(KEY),
    CommandSpec::new(
        "keys",
        2,
        Group::Generic,
        "Returns all key names that match a pattern.",
        keys,
    )
    .flags(bits![Flags: READONLY])
    .acl(bits![Acl: KEYSPACE, DANGEROUS])
    .complexity(
        "O(N) with N being the number of keys in the database, under the assumption \
        that the key names in the database and the given pattern have limited \
        length.",
    )
    .args(&[pattern("pattern")]),
    CommandSpec::new(
        "scan",
        -2,
        Group::Generic,
        "Iterates over the key names in the database.",
        scan,
    )
    .flags(bits![Flags: READONLY])
    .acl(bits![Acl: KEYSPACE])
    .since("2.8.0")
    .complexity(
        "O(1) for every call. O(N) for a complete iteration, including enough command \
        calls for the cursor to return back to 0. N is the number of elements inside \
        the collection.",
    )
    .history(&[
        ("6.0.0", "Added the `TYPE` subcommand."),
    ])
    .args(&[
        integer("cursor"),
        pattern("pattern").token("MATCH").optional(),
        integer("count").token("COUNT").optional(),
        string("type").token("TYPE").since("6.0.0").optional(),
    ]),
    CommandSpec::new(
        "randomkey",
        1,
        Group::Generic,
        "Returns a random key name from the database.",
        randomkey,
    )
    .flags(bits![Flags: READONLY])
    .acl(bits![Acl: KEYSPACE])
    .complexity("O(1)"),
    CommandSpec::new(
        "rename",
        3,
        Group::Generic,
        "Renames a key and overwrites the destination.",
        rename,
    )
    .flags(bits![Flags: WRITE])
    .key_specs(&[
        KeySpec::range(bits![KeyFlags: RW, ACCESS, DELETE], 1, 0, 1),
        KeySpec::range(bits![KeyFlags: OW, UPDATE], 2, 0, 1),
    ])
    .acl(bits![Acl: KEYSPACE])
    .complexity("O(1)")
    .args(&[key("key"), key("newkey").key_spec(1)]),
    CommandSpec::new(
        "renamenx",
        3,
        Group::Generic,
        "Renames a key only when the target key name doesn't exist.",
        renamenx,
    )
    .flags(bits![Flags: WRITE, FAST])
    .key_specs(&[
        KeySpec::range(bits![KeyFlags: RW, ACCESS, DELETE], 1, 0, 1),
        KeySpec::range(bits![KeyFlags: OW, INSERT], 2, 0, 1),
    ])
    .acl(bits![Acl: KEYSPACE])
    .complexity("O(1)")
    .history(&[
        ("3.2.0", "The command no longer returns an error when source and destination names are the same."),
    ])
    .args(&[key("key"), key("newkey").key_spec(1)]),
    CommandSpec::new(
        "copy",
        -3,
        Group::Generic,
        "Copies the value of a key to a new key.",
        copy,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[
        KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1),
        KeySpec::range(bits![KeyFlags: OW, UPDATE], 2, 0, 1),
    ])
    .acl(bits![Acl: KEYSPACE])
    .since("6.2.0")
    .complexity(
        "O(N) worst case for collections, where N is the number of nested items. O(1) \
        for string values.",
    )
    .args(&[
        key("source"),
        key("destination").key_spec(1),
        integer("destination-db").token("DB").optional(),
        pure_token("replace", "REPLACE").optional(),
    ]),
    CommandSpec::new(
        "expire",
        -3,
        Group::Generic,
        "Sets the expiration time of a key in seconds.",
        expire,
    )
    .flags(bits![Flags: WRITE, FAST])
    .key_specs(UPDATED_KEY)
    .acl(bits![Acl: KEYSPACE])
    .complexity("O(1)")
    .history(&[
        ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
    ])
    .args(&[key("key"), integer("seconds"), EXPIRY_CONDITION]),
    CommandSpec::new(
        "pexpire",
        -3,
        Group::Generic,
        "Sets the expiration time of a key in milliseconds.",
        pexpire,
    )
    .flags(bits![Flags: WRITE, FAST])
    .key_specs(UPDATED_KEY)
    .acl(bits![Acl: KEYSPACE])
    .since("2.6.0")
    .complexity("O(1)")
    .history(&[
        ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
    ])
    .args(&[key("key"), integer("milliseconds"), EXPIRY_CONDITION]),
    CommandSpec::new(
        "expireat",
        -3,
        Group::Generic,
        "Sets the expiration time of a key to a Unix timestamp.",
        expireat,
    )
    .flags(bits![Flags: WRITE, FAST])
    .key_specs(UPDATED_KEY)
    .acl(bits![Acl: KEYSPACE])
    .since("1.2.0")
    .complexity("O(1)")
    .history(&[
        ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
    ])
    .args(&[key("key"), unix_time("unix-time-seconds"), EXPIRY_CONDITION]),
    CommandSpec::new(
        "pexpireat",
        -3,
        Group::Generic,
        "Sets the expiration time of a key to a Unix milliseconds timestamp.",
        pexpireat,
    )
    .flags(bits![Flags: WRITE, FAST])
    .key_specs(UPDATED_KEY)
    .acl(bits![Acl: KEYSPACE])
    .since("2.6.0")
    .complexity("O(1)")
    .history(&[
        ("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."),
    ])
    .args(&[
        key("key"),
        unix_time("unix-time-milliseconds"),
        EXPIRY_CONDITION,
    ]),
    CommandSpec::new(
        "ttl",
        2,
        Group::Generic,
        "Returns the expiration time in seconds of a key.",
        ttl,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(READ_KEY)
    .acl(bits![Acl: KEYSPACE])
    .complexity("O(1)")
    .history(&[
        ("2.8.0", "Added the -2 reply."),
    ])
    .args(KEY),
    CommandSpec::new(
        "pttl",
        2,
        Group::Generic,
        "Returns the expiration time in milliseconds of a key.",
        pttl,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(READ_KEY)
    .acl(bits![Acl: KEYSPACE])
    .since("2.6.0")
    .complexity("O(1)")
    .history(&[
        ("2.8.0", "Added the -2 reply."),
    ])
    .args(KEY),
    CommandSpec::new(
        "expiretime",
        2,
        Group::Generic,
        "Returns the expiration time of a key as a Unix timestamp.",
        expiretime,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(READ_KEY)
    .acl(bits![Acl: KEYSPACE])
    .since("7.0.0")
    .complexity("O(1)")
    .args(KEY),
    CommandSpec::new(
        "pexpiretime",
        2,
        Group::Generic,
        "Returns the expiration time of a key as a Unix milliseconds timestamp.",
        pexpiretime,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(READ_KEY)
    .acl(bits![Acl: KEYSPACE])
    .since("7.0.0")
    .complexity("O(1)")
    .args(KEY),
    CommandSpec::new(
        "persist",
        2,
        Group::Generic,
        "Removes the expiration time of a key.",
        persist,
    )
    .flags(bits![Flags: WRITE, FAST])
    .key_specs(UPDATED_KEY)
    .acl(bits![Acl: KEYSPACE])
    .since("2.2.0")
    .complexity("O(1)")
    .args(KEY),
    CommandSpec::new(
        "object",
        -2,
        Group::Generic,
        "A container for object introspection commands.",
        object,
    )
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO], 2, 0, 1)])
    .since("2.2.3")
    .complexity("Depends on subcommand.")
    .subcommands(OBJECT_SUBCOMMANDS),
];

/// The option of FLUSHDB and FLUSHALL; `flush_mode` accepts it and clears at once either way.
const FLUSH_MODE: &[Arg] = &[one_of(
    "flush-type",
    &[
        pure_token("async", "ASYNC").since("4.0.0"),
        pure_token("sync", "SYNC").since("6.2.0"),
    ],
)
.optional()];

/// The option of EXPIRE and its three siblings.
const EXPIRY_CONDITION: Arg = one_of(
    "condition",
    &[
        pure_token("nx", "NX"),
        pure_token("xx", "XX"),
        pure_token("gt", "GT"),
        pure_token("lt", "LT"),
    ],
)
.since("7.0.0")
.optional();

const KEY: &[Arg] = &[key("key")];
/// One key, read (the TTL family).
const READ_KEY: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1)];
/// One key, its expiry changed (the EXPIRE family, PERSIST).
const UPDATED_KEY: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RW, UPDATE], 1, 0, 1)];

/// MEMORY's subcommands, as COMMAND DOCS lists them.
const MEMORY_SUBCOMMANDS: &[(&str, Docs)] = &[
    (
        "memory|help",
        Docs::new("Returns helpful text about the different subcommands.")
            .since("4.0.0")
            .complexity("O(1)"),
    ),
    (
        "memory|usage",
        Docs::new("Estimates the memory usage of a key.")
            .since("4.0.0")
            .complexity("O(N) where N is the number of samples.")
            .args(&[key("key"), integer("count").token("SAMPLES").optional()]),
    ),
];

/// OBJECT's subcommands, as COMMAND DOCS lists them.
const OBJECT_SUBCOMMANDS: &[(&str, Docs)] = &[
    (
        "object|encoding",
        Docs::new("Returns the internal encoding of a Redis object.")
            .since("2.2.3")
            .complexity("O(1)")
            .args(&[key("key")]),
    ),
    (
        "object|freq",
        Docs::new("Returns the logarithmic access frequency counter of a Redis object.")
            .since("4.0.0")
            .complexity("O(1)")
            .args(&[key("key")]),
    ),
    (
        "object|help",
        Docs::new("Returns helpful text about the different subcommands.")
            .since("6.2.0")
            .complexity("O(1)"),
    ),
    (
        "object|idletime",
        Docs::new("Returns the time since the last access to a Redis object.")
            .since("2.2.3")
            .complexity("O(1)")
            .args(&[key("key")]),
    ),
    (
        "object|refcount",
        Docs::new("Returns the reference count of a value of a key.")
            .since("2.2.3")
            .complexity("O(1)")
            .args(&[key("key")]),
    ),
];
