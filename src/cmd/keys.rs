//! The keyspace commands: existence, deletion, types, iteration, renaming, copying, expiry.

use super::args::{int, keyword, parse_i64, Args, Items, Key};
use super::errors::*;
use super::key_specs::*;
use super::random::next_random;
use super::spec::{bits, command_table, CommandSpec, KeySpec};
use super::Ctx;
use crate::protocol::Request;
use crate::store::{ScanFilter, Value};

fn dbsize(ctx: &mut Ctx, _request: Request) -> CmdResult {
    ctx.reply.int(ctx.db().len() as i64);
    Ok(())
}

/// FLUSHDB and FLUSHALL [ASYNC | SYNC]: either mode clears at once.
fn parse_flush(request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    args.one_of(&[("ASYNC", ()), ("SYNC", ())]);
    args.finish(SYNTAX)
}

fn flushdb(ctx: &mut Ctx, request: Request) -> CmdResult {
    parse_flush(request)?;
    ctx.db().clear();
    ctx.reply.ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx, request: Request) -> CmdResult {
    parse_flush(request)?;
    ctx.store.dbs().for_each(|db| db.clear());
    ctx.reply.ok();
    Ok(())
}

/// Bytes the map spends on one key besides the value: the key itself and its slot.
fn key_overhead(key: &[u8]) -> u64 {
    key.len() as u64 + 64
}

/// MEMORY USAGE key [SAMPLES count] | HELP. The sample count is read as a word and not used: a
/// value's size is known exactly.
enum Memory<'a> {
    Usage { key: &'a [u8] },
    Help,
}

impl<'a> Memory<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let sub = args.required()?;
        match keyword(sub, &[("USAGE", true), ("HELP", false)]) {
            Some(true) => {
                let key = args.next().ok_or_else(|| CmdError::arity("memory|usage"))?;
                match args.remaining() {
                    0 => {}
                    2 if args.check("SAMPLES") => {}
                    _ => return Err(SYNTAX.into()),
                }
                Ok(Memory::Usage { key })
            }
            Some(false) => Ok(Memory::Help),
            None => Err(CmdError::unknown_subcommand(sub, "MEMORY")),
        }
    }
}

fn memory(ctx: &mut Ctx, request: Request) -> CmdResult {
    match Memory::parse(request)? {
        Memory::Usage { key } => {
            match ctx.db().peek(key, ctx.now, |v| v.map(Value::memory_bytes)) {
                Some(bytes) => ctx.reply.int((bytes + key_overhead(key)) as i64),
                None => ctx.reply.null(),
            }
        }
        Memory::Help => {
            let lines = [
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value.",
                "HELP",
                "    Print this help.",
            ];
            ctx.reply.array(lines.len());
            lines.iter().for_each(|line| ctx.reply.simple(line));
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Inspect {
    Encoding,
    RefCount,
    IdleTime,
    Freq,
}

/// OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ key, or OBJECT HELP, for tools that inspect
/// keys.
enum Object<'a> {
    Inspect(Inspect, &'a [u8]),
    Help,
}

impl<'a> Object<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        const SUBCOMMANDS: &[(&str, Option<Inspect>)] = &[
            ("HELP", None),
            ("ENCODING", Some(Inspect::Encoding)),
            ("REFCOUNT", Some(Inspect::RefCount)),
            ("IDLETIME", Some(Inspect::IdleTime)),
            ("FREQ", Some(Inspect::Freq)),
        ];
        let mut args = Args::new(request, 1);
        let sub = args.required()?;
        let inspect = match keyword(sub, SUBCOMMANDS) {
            Some(Some(inspect)) => inspect,
            Some(None) => return Ok(Object::Help),
            None => return Err(CmdError::unknown_subcommand(sub, "OBJECT")),
        };
        if args.word_count() != 3 {
            let name = String::from_utf8_lossy(sub).to_ascii_lowercase();
            return Err(CmdError::arity(&format!("object|{name}")));
        }
        Ok(Object::Inspect(inspect, args.required()?))
    }
}

fn object(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (inspect, key) = match Object::parse(request)? {
        Object::Inspect(inspect, key) => (inspect, key),
        Object::Help => {
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
    };
    // OBJECT looks without counting an access, as Redis's does.
    let encoding = ctx.db().peek(key, ctx.now, |value| {
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
    let bits = || ctx.db().access_bits(key, ctx.now).unwrap_or(0);
    match inspect {
        Inspect::Encoding => ctx.reply.bulk(encoding.as_bytes()),
        Inspect::Freq if !tracking.is_lfu() => return Err(NOT_LFU.into()),
        Inspect::Freq => ctx.reply.int(i64::from(tracking.frequency(bits()))),
        Inspect::IdleTime if tracking.is_lfu() => return Err(LFU.into()),
        Inspect::IdleTime => ctx.reply.int(tracking.idle_secs(bits()) as i64),
        Inspect::RefCount => ctx.reply.int(1),
    }
    Ok(())
}

/// The keys of DEL, UNLINK, EXISTS and TOUCH: every word after the name.
fn keys_of(request: Request) -> Items {
    Args::new(request, 1).items()
}

fn del(ctx: &mut Ctx, request: Request) -> CmdResult {
    let db = ctx.db();
    let keys = keys_of(request);
    let removed = keys.iter().filter(|key| db.remove(key, ctx.now)).count();
    ctx.reply.int(removed as i64);
    Ok(())
}

fn exists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let db = ctx.db();
    let keys = keys_of(request);
    let found = keys.iter().filter(|key| db.contains(key, ctx.now)).count();
    ctx.reply.int(found as i64);
    Ok(())
}

/// TOUCH: counts an access to each key, as a read would; the number of keys that exist.
fn touch(ctx: &mut Ctx, request: Request) -> CmdResult {
    let db = ctx.db();
    let keys = keys_of(request);
    let found = keys.iter().filter(|key| db.touch(key, ctx.now)).count();
    ctx.reply.int(found as i64);
    Ok(())
}

fn type_of(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let name = ctx
        .db()
        .peek(key, ctx.now, |v| v.map_or("none", Value::type_name));
    ctx.reply.simple(name);
    Ok(())
}

fn keys(ctx: &mut Ctx, request: Request) -> CmdResult {
    let pattern = Args::new(request, 1).required()?;
    let keys = ctx.db().keys_matching(pattern, ctx.now);
    ctx.reply.array(keys.len());
    keys.iter().for_each(|key| ctx.reply.bulk(key));
    Ok(())
}

#[derive(Clone, Copy)]
enum ScanOption {
    Match,
    Count,
    Type,
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]: each option's value is read before
/// its name is checked, as Redis does.
struct Scan<'a> {
    cursor: u64,
    filter: ScanFilter<'a>,
    count: usize,
}

impl<'a> Scan<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        const OPTIONS: &[(&str, ScanOption)] = &[
            ("MATCH", ScanOption::Match),
            ("COUNT", ScanOption::Count),
            ("TYPE", ScanOption::Type),
        ];
        let mut args = Args::new(request, 1);
        let cursor = std::str::from_utf8(args.required()?)
            .ok()
            .and_then(|text| text.parse::<u64>().ok())
            .ok_or(INVALID_CURSOR)?;
        let mut scan = Scan {
            cursor,
            filter: ScanFilter {
                pattern: None,
                type_name: None,
            },
            count: 10,
        };
        while let Some(option) = args.next() {
            let value = args.next_or(SYNTAX)?;
            match keyword(option, OPTIONS) {
                Some(ScanOption::Match) => scan.filter.pattern = Some(value),
                Some(ScanOption::Count) => {
                    let count = int(value, NOT_INTEGER)?;
                    if count < 1 {
                        return Err(SYNTAX.into());
                    }
                    scan.count = count as usize;
                }
                Some(ScanOption::Type) => scan.filter.type_name = Some(value),
                None => return Err(SYNTAX.into()),
            }
        }
        Ok(scan)
    }
}

fn scan(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Scan {
        cursor,
        filter,
        count,
    } = Scan::parse(request)?;
    let (next, keys) = ctx.db().scan(cursor, count, &filter, ctx.now);
    ctx.reply.array(2);
    ctx.reply.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.reply.array(keys.len());
    keys.iter().for_each(|key| ctx.reply.bulk(key));
    Ok(())
}

fn randomkey(ctx: &mut Ctx, _request: Request) -> CmdResult {
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

/// RENAME and RENAMENX key newkey.
struct Rename<'a> {
    from: &'a [u8],
    to: &'a [u8],
}

impl<'a> Rename<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(Rename {
            from: args.required()?,
            to: args.required()?,
        })
    }
}

fn rename(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Rename { from, to } = Rename::parse(request)?;
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

fn renamenx(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Rename { from, to } = Rename::parse(request)?;
    let db = ctx.db();
    if !db.contains(from, ctx.now) {
        return Err(NO_SUCH_KEY.into());
    }
    let moved = from != to && !db.contains(to, ctx.now) && move_key(ctx, from, to);
    ctx.reply.int(moved as i64);
    Ok(())
}

#[derive(Clone, Copy)]
enum CopyOption {
    Replace,
    Db,
}

/// COPY source destination [DB index] [REPLACE]. Unlike RedisBloom, Bloom filters can be copied.
struct KeyCopy<'a> {
    from: &'a [u8],
    to: &'a [u8],
    /// The destination's database, if DB names one.
    db: Option<usize>,
    replace: bool,
}

impl<'a> KeyCopy<'a> {
    /// `databases` bounds DB's index, checked as it is read.
    fn parse(request: Request<'a>, databases: usize) -> Result<Self, CmdError> {
        const OPTIONS: &[(&str, CopyOption)] =
            &[("REPLACE", CopyOption::Replace), ("DB", CopyOption::Db)];
        let mut args = Args::new(request, 1);
        let mut copy = KeyCopy {
            from: args.required()?,
            to: args.required()?,
            db: None,
            replace: false,
        };
        while let Some(option) = args.next() {
            match keyword(option, OPTIONS) {
                Some(CopyOption::Replace) => copy.replace = true,
                Some(CopyOption::Db) => {
                    let index = int(args.next_or(SYNTAX)?, NOT_INTEGER)?;
                    if index < 0 || index as usize >= databases {
                        return Err(DB_INDEX.into());
                    }
                    copy.db = Some(index as usize);
                }
                None => return Err(SYNTAX.into()),
            }
        }
        Ok(copy)
    }
}

fn copy(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyCopy {
        from,
        to,
        db,
        replace,
    } = KeyCopy::parse(request, ctx.store.databases())?;
    let target_db = db.unwrap_or(ctx.session.db);
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

#[derive(Clone, Copy)]
enum Condition {
    Nx,
    Xx,
    Gt,
    Lt,
}

/// EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT key time [NX | XX | GT | LT]. NX, XX, GT and LT
/// combine as in Redis; the time is made absolute, in milliseconds, as it is read.
struct Expire<'a> {
    key: &'a [u8],
    at: i64,
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl<'a> Expire<'a> {
    /// `to_millis` turns the time into milliseconds; `now`, if given, is added to it. `name`
    /// is the command's, for the error of a time that overflows.
    fn parse(
        request: Request<'a>,
        name: &str,
        to_millis: i64,
        now: Option<u64>,
    ) -> Result<Self, CmdError> {
        const CONDITIONS: &[(&str, Condition)] = &[
            ("NX", Condition::Nx),
            ("XX", Condition::Xx),
            ("GT", Condition::Gt),
            ("LT", Condition::Lt),
        ];
        let invalid = || invalid_expire_time(name);
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let amount = int(args.required()?, NOT_INTEGER)?;
        let mut expire = Expire {
            key,
            at: 0,
            nx: false,
            xx: false,
            gt: false,
            lt: false,
        };
        for option in args.rest() {
            let flag = match keyword(option, CONDITIONS) {
                Some(Condition::Nx) => &mut expire.nx,
                Some(Condition::Xx) => &mut expire.xx,
                Some(Condition::Gt) => &mut expire.gt,
                Some(Condition::Lt) => &mut expire.lt,
                None => return Err(unsupported_option(option)),
            };
            *flag = true;
        }
        if expire.nx && (expire.xx || expire.gt || expire.lt) {
            return Err(EXPIRE_NX_AND_OTHERS.into());
        }
        if expire.gt && expire.lt {
            return Err(EXPIRE_GT_AND_LT.into());
        }
        expire.at = amount.checked_mul(to_millis).ok_or_else(invalid)?;
        if let Some(now) = now {
            expire.at = expire.at.checked_add(now as i64).ok_or_else(invalid)?;
        }
        Ok(expire)
    }
}

fn set_expiry(ctx: &mut Ctx, expire: Expire) -> CmdResult {
    let Expire {
        key,
        at,
        nx,
        xx,
        gt,
        lt,
    } = expire;
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

fn expire(ctx: &mut Ctx, request: Request) -> CmdResult {
    let expire = Expire::parse(request, "expire", 1000, Some(ctx.now))?;
    set_expiry(ctx, expire)
}

fn pexpire(ctx: &mut Ctx, request: Request) -> CmdResult {
    let expire = Expire::parse(request, "pexpire", 1, Some(ctx.now))?;
    set_expiry(ctx, expire)
}

fn expireat(ctx: &mut Ctx, request: Request) -> CmdResult {
    let expire = Expire::parse(request, "expireat", 1000, None)?;
    set_expiry(ctx, expire)
}

fn pexpireat(ctx: &mut Ctx, request: Request) -> CmdResult {
    let expire = Expire::parse(request, "pexpireat", 1, None)?;
    set_expiry(ctx, expire)
}

/// TTL and friends: -2 for a missing key, -1 for no expiry, else `f(expiry time)`.
fn report_expiry(ctx: &mut Ctx, request: Request, f: impl Fn(u64, u64) -> i64) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let value = match ctx.db().expires_at(key, ctx.now) {
        None => -2,
        Some(0) => -1,
        Some(at) => f(at, ctx.now),
    };
    ctx.reply.int(value);
    Ok(())
}

fn ttl(ctx: &mut Ctx, request: Request) -> CmdResult {
    report_expiry(ctx, request, |at, now| ((at - now + 500) / 1000) as i64)
}

fn pttl(ctx: &mut Ctx, request: Request) -> CmdResult {
    report_expiry(ctx, request, |at, now| (at - now) as i64)
}

fn expiretime(ctx: &mut Ctx, request: Request) -> CmdResult {
    report_expiry(ctx, request, |at, _| (at / 1000) as i64)
}

fn pexpiretime(ctx: &mut Ctx, request: Request) -> CmdResult {
    report_expiry(ctx, request, |at, _| at as i64)
}

fn persist(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let db = ctx.db();
    let removed =
        db.expires_at(key, ctx.now).is_some_and(|at| at != 0) && db.set_expires_at(key, ctx.now, 0);
    ctx.reply.int(removed as i64);
    Ok(())
}

/// Keyspace commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Generic:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    Server: "dbsize", 1, [READONLY, FAST], &[], [KEYSPACE], dbsize, docs::DBSIZE;
    Server: "flushdb", -1, [WRITE], &[], [KEYSPACE, DANGEROUS], flushdb, docs::FLUSHDB;
    Server: "flushall", -1, [WRITE], &[], [KEYSPACE, DANGEROUS], flushall, docs::FLUSHALL;
    Server: "memory", -2, [], &[], [], memory, docs::MEMORY, subcommands(docs::MEMORY_SUBCOMMANDS);
    "del", -2, [WRITE], RM_DELETE_KEYS, [KEYSPACE], del, docs::DEL;
    "unlink", -2, [WRITE, FAST], RM_DELETE_KEYS, [KEYSPACE], del, docs::UNLINK;
    "exists", -2, [READONLY, FAST], RO_KEYS, [KEYSPACE], exists, docs::EXISTS;
    "touch", -2, [READONLY, FAST], RO_KEYS, [KEYSPACE], touch, docs::TOUCH;
    "type", 2, [READONLY, FAST], RO, [KEYSPACE], type_of, docs::TYPE;
    "keys", 2, [READONLY], &[], [KEYSPACE, DANGEROUS], keys, docs::KEYS;
    "scan", -2, [READONLY], &[], [KEYSPACE], scan, docs::SCAN;
    "randomkey", 1, [READONLY], &[], [KEYSPACE], randomkey, docs::RANDOMKEY;
    "rename", 3, [WRITE], RENAME_KEYS, [KEYSPACE], rename, docs::RENAME;
    "renamenx", 3, [WRITE, FAST], RENAMENX_KEYS, [KEYSPACE], renamenx, docs::RENAMENX;
    "copy", -3, [WRITE, DENYOOM], COPY_KEYS, [KEYSPACE], copy, docs::COPY;
    "expire", -3, [WRITE, FAST], RW_UPDATE, [KEYSPACE], expire, docs::EXPIRE;
    "pexpire", -3, [WRITE, FAST], RW_UPDATE, [KEYSPACE], pexpire, docs::PEXPIRE;
    "expireat", -3, [WRITE, FAST], RW_UPDATE, [KEYSPACE], expireat, docs::EXPIREAT;
    "pexpireat", -3, [WRITE, FAST], RW_UPDATE, [KEYSPACE], pexpireat, docs::PEXPIREAT;
    "ttl", 2, [READONLY, FAST], RO_ACCESS, [KEYSPACE], ttl, docs::TTL;
    "pttl", 2, [READONLY, FAST], RO_ACCESS, [KEYSPACE], pttl, docs::PTTL;
    "expiretime", 2, [READONLY, FAST], RO_ACCESS, [KEYSPACE], expiretime, docs::EXPIRETIME;
    "pexpiretime", 2, [READONLY, FAST], RO_ACCESS, [KEYSPACE], pexpiretime, docs::PEXPIRETIME;
    "persist", 2, [WRITE, FAST], RW_UPDATE, [KEYSPACE], persist, docs::PERSIST;
    "object", -2, [], OBJECT_KEY, [], object, docs::OBJECT, subcommands(docs::OBJECT_SUBCOMMANDS);
};

/// Every argument is a key, deleted (DEL, UNLINK) or read (EXISTS, TOUCH).
const RM_DELETE_KEYS: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RM, DELETE], 1, -1, 1)];
const RO_KEYS: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RO], 1, -1, 1)];
const RENAME_KEYS: &[KeySpec] = &[
    KeySpec::range(bits![KeyFlags: RW, ACCESS, DELETE], 1, 0, 1),
    KeySpec::range(bits![KeyFlags: OW, UPDATE], 2, 0, 1),
];
const RENAMENX_KEYS: &[KeySpec] = &[
    KeySpec::range(bits![KeyFlags: RW, ACCESS, DELETE], 1, 0, 1),
    KeySpec::range(bits![KeyFlags: OW, INSERT], 2, 0, 1),
];
const COPY_KEYS: &[KeySpec] = &[
    KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1),
    KeySpec::range(bits![KeyFlags: OW, UPDATE], 2, 0, 1),
];
/// OBJECT's key follows its subcommand.
const OBJECT_KEY: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RO], 2, 0, 1)];

/// What COMMAND DOCS says of each, in Redis 7's words.
mod docs {
    use super::super::spec::{integer, key, one_of, pattern, pure_token, string, unix_time};
    use super::super::spec::{Arg, Docs};

    pub(super) const DBSIZE: Docs =
        Docs::new("Returns the number of keys in the database.").complexity("O(1)");
    pub(super) const FLUSHDB: Docs = Docs::new("Remove all keys from the current database.")
        .complexity("O(N) where N is the number of keys in the selected database")
        .history(FLUSH_HISTORY)
        .args(FLUSH_MODE);
    pub(super) const FLUSHALL: Docs = Docs::new("Removes all keys from all databases.")
        .complexity("O(N) where N is the total number of keys in all databases")
        .history(FLUSH_HISTORY)
        .args(FLUSH_MODE);
    pub(super) const MEMORY: Docs = Docs::new("A container for memory diagnostics commands.")
        .since("4.0.0")
        .complexity("Depends on subcommand.");
    pub(super) const DEL: Docs = Docs::new("Deletes one or more keys.")
        .complexity(
            "O(N) where N is the number of keys that will be removed. When a key to \
            remove holds a value other than a string, the individual complexity for this \
            key is O(M) where M is the number of elements in the list, set, sorted set \
            or hash. Removing a single key that holds a string value is O(1).",
        )
        .args(EVERY_KEY);
    pub(super) const UNLINK: Docs = Docs::new("Asynchronously deletes one or more keys.")
        .since("4.0.0")
        .complexity(
            "O(1) for each key removed regardless of its size. Then the command does O(N) \
            work in a different thread in order to reclaim memory, where N is the number \
            of allocations the deleted objects where composed of.",
        )
        .args(EVERY_KEY);
    pub(super) const EXISTS: Docs = Docs::new("Determines whether one or more keys exist.")
        .complexity("O(N) where N is the number of keys to check.")
        .history(&[("3.0.3", "Accepts multiple `key` arguments.")])
        .args(EVERY_KEY);
    pub(super) const TOUCH: Docs = Docs::new("Returns the number of existing keys out of those specified after updating the time they were last accessed.")
        .since("3.2.1")
        .complexity("O(N) where N is the number of keys that will be touched.")
        .args(EVERY_KEY);
    pub(super) const TYPE: Docs = Docs::new("Determines the type of value stored at a key.")
        .complexity("O(1)")
        .args(KEY);
    pub(super) const KEYS: Docs = Docs::new("Returns all key names that match a pattern.")
        .complexity(
            "O(N) with N being the number of keys in the database, under the assumption \
            that the key names in the database and the given pattern have limited \
            length.",
        )
        .args(&[pattern("pattern")]);
    pub(super) const SCAN: Docs = Docs::new("Iterates over the key names in the database.")
        .since("2.8.0")
        .complexity(
            "O(1) for every call. O(N) for a complete iteration, including enough command \
            calls for the cursor to return back to 0. N is the number of elements inside \
            the collection.",
        )
        .history(&[("6.0.0", "Added the `TYPE` subcommand.")])
        .args(&[
            integer("cursor"),
            pattern("pattern").token("MATCH").optional(),
            integer("count").token("COUNT").optional(),
            string("type").token("TYPE").since("6.0.0").optional(),
        ]);
    pub(super) const RANDOMKEY: Docs =
        Docs::new("Returns a random key name from the database.").complexity("O(1)");
    pub(super) const RENAME: Docs = Docs::new("Renames a key and overwrites the destination.")
        .complexity("O(1)")
        .args(&[key("key"), key("newkey").key_spec(1)]);
    pub(super) const RENAMENX: Docs = Docs::new(
        "Renames a key only when the target key name doesn't exist.",
    )
    .complexity("O(1)")
    .history(&[(
        "3.2.0",
        "The command no longer returns an error when source and destination names are the same.",
    )])
    .args(&[key("key"), key("newkey").key_spec(1)]);
    pub(super) const COPY: Docs = Docs::new("Copies the value of a key to a new key.")
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
        ]);
    pub(super) const EXPIRE: Docs = Docs::new("Sets the expiration time of a key in seconds.")
        .complexity("O(1)")
        .history(EXPIRY_HISTORY)
        .args(&[key("key"), integer("seconds"), EXPIRY_CONDITION]);
    pub(super) const PEXPIRE: Docs =
        Docs::new("Sets the expiration time of a key in milliseconds.")
            .since("2.6.0")
            .complexity("O(1)")
            .history(EXPIRY_HISTORY)
            .args(&[key("key"), integer("milliseconds"), EXPIRY_CONDITION]);
    pub(super) const EXPIREAT: Docs =
        Docs::new("Sets the expiration time of a key to a Unix timestamp.")
            .since("1.2.0")
            .complexity("O(1)")
            .history(EXPIRY_HISTORY)
            .args(&[key("key"), unix_time("unix-time-seconds"), EXPIRY_CONDITION]);
    pub(super) const PEXPIREAT: Docs =
        Docs::new("Sets the expiration time of a key to a Unix milliseconds timestamp.")
            .since("2.6.0")
            .complexity("O(1)")
            .history(EXPIRY_HISTORY)
            .args(&[
                key("key"),
                unix_time("unix-time-milliseconds"),
                EXPIRY_CONDITION,
            ]);
    pub(super) const TTL: Docs = Docs::new("Returns the expiration time in seconds of a key.")
        .complexity("O(1)")
        .history(TTL_HISTORY)
        .args(KEY);
    pub(super) const PTTL: Docs =
        Docs::new("Returns the expiration time in milliseconds of a key.")
            .since("2.6.0")
            .complexity("O(1)")
            .history(TTL_HISTORY)
            .args(KEY);
    pub(super) const EXPIRETIME: Docs =
        Docs::new("Returns the expiration time of a key as a Unix timestamp.")
            .since("7.0.0")
            .complexity("O(1)")
            .args(KEY);
    pub(super) const PEXPIRETIME: Docs =
        Docs::new("Returns the expiration time of a key as a Unix milliseconds timestamp.")
            .since("7.0.0")
            .complexity("O(1)")
            .args(KEY);
    pub(super) const PERSIST: Docs = Docs::new("Removes the expiration time of a key.")
        .since("2.2.0")
        .complexity("O(1)")
        .args(KEY);
    pub(super) const OBJECT: Docs = Docs::new("A container for object introspection commands.")
        .since("2.2.3")
        .complexity("Depends on subcommand.");

    const KEY: &[Arg] = &[key("key")];
    const EVERY_KEY: &[Arg] = &[key("key").multiple()];

    const FLUSH_HISTORY: &[(&str, &str)] = &[
        ("4.0.0", "Added the `ASYNC` flushing mode modifier."),
        ("6.2.0", "Added the `SYNC` flushing mode modifier."),
    ];

    /// The option of FLUSHDB and FLUSHALL; `parse_flush` accepts it and clears at once either
    /// way.
    const FLUSH_MODE: &[Arg] = &[one_of(
        "flush-type",
        &[
            pure_token("async", "ASYNC").since("4.0.0"),
            pure_token("sync", "SYNC").since("6.2.0"),
        ],
    )
    .optional()];

    const EXPIRY_HISTORY: &[(&str, &str)] =
        &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")];

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

    const TTL_HISTORY: &[(&str, &str)] = &[("2.8.0", "Added the -2 reply.")];

    /// MEMORY's subcommands, as COMMAND DOCS lists them.
    pub(super) const MEMORY_SUBCOMMANDS: &[(&str, Docs)] = &[
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
    pub(super) const OBJECT_SUBCOMMANDS: &[(&str, Docs)] = &[
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
}
