//! DUMP, RESTORE and MIGRATE: a value as Redis serializes it (`rdb`), so that keys move
//! between sieved and Redis (with RedisBloom's filters) in both directions.

use super::args::{int, keyword, Args, Key};
use super::errors::*;
use super::spec::{
    bits, block, integer, key, one_of, pure_token, string, CommandSpec, Group, KeySpec,
};
use super::Ctx;
use crate::protocol::{encode_request, Request};
use crate::rdb::{self, Limits, RestoreError};
use crate::store::Value;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

pub(super) fn dump(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    // RedisBloom's save of a t-digest compresses the live digest, which TDIGEST.INFO then shows.
    ctx.db().get_mut(key, ctx.now, |value| {
        if let Some(Value::TDigest(digest)) = value {
            digest.compress();
        }
    });
    match ctx.db().get(key, ctx.now, |v| v.map(rdb::dump)) {
        Some(payload) => ctx.reply.bulk(&payload),
        None => ctx.reply.null(),
    }
    Ok(())
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency].
/// IDLETIME sets the key's idle time under an LRU policy and FREQ its access counter under an
/// LFU one, as in Redis.
struct Restore<'a> {
    key: &'a [u8],
    /// Read as a number only after the key's existence is checked, as Redis orders its errors.
    ttl: &'a [u8],
    payload: &'a [u8],
    replace: bool,
    absttl: bool,
    idle: Option<u64>,
    freq: Option<u8>,
}

#[derive(Clone, Copy)]
enum RestoreOption {
    Replace,
    AbsTtl,
    IdleTime,
    Freq,
}

impl<'a> Restore<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        const OPTIONS: &[(&str, RestoreOption)] = &[
            ("REPLACE", RestoreOption::Replace),
            ("ABSTTL", RestoreOption::AbsTtl),
            ("IDLETIME", RestoreOption::IdleTime),
            ("FREQ", RestoreOption::Freq),
        ];
        let mut args = Args::new(request, 1);
        let mut restore = Restore {
            key: args.required()?,
            ttl: args.required()?,
            payload: args.required()?,
            replace: false,
            absttl: false,
            idle: None,
            freq: None,
        };
        while let Some(option) = args.next() {
            let valued = args.remaining() >= 1;
            match keyword(option, OPTIONS) {
                Some(RestoreOption::Replace) => restore.replace = true,
                Some(RestoreOption::AbsTtl) => restore.absttl = true,
                Some(RestoreOption::IdleTime) if valued && restore.freq.is_none() => {
                    let seconds = args.int(NOT_INTEGER)?;
                    restore.idle = Some(u64::try_from(seconds).map_err(|_| RESTORE_BAD_IDLETIME)?);
                }
                Some(RestoreOption::Freq) if valued && restore.idle.is_none() => {
                    let frequency = args.int(NOT_INTEGER)?;
                    restore.freq = Some(u8::try_from(frequency).map_err(|_| RESTORE_BAD_FREQ)?);
                }
                _ => return Err(SYNTAX.into()),
            }
        }
        Ok(restore)
    }

    /// The TTL in milliseconds (0: none), relative unless ABSTTL.
    fn ttl(&self) -> Result<u64, CmdError> {
        let ttl = int(self.ttl, NOT_INTEGER)?;
        u64::try_from(ttl).map_err(|_| RESTORE_BAD_TTL.into())
    }
}

/// RESTORE, checked in Redis's order: the options, the key's existence, the TTL, the payload.
/// A relative TTL is logged as the absolute time it gave, as Redis propagates it.
pub(super) fn restore(ctx: &mut Ctx, request: Request) -> CmdResult {
    let restore = Restore::parse(request)?;
    let Restore {
        key,
        replace,
        absttl,
        ..
    } = restore;
    if !replace && ctx.db().contains(key, ctx.now) {
        return Err(BUSYKEY.into());
    }
    let ttl = restore.ttl()?;
    let limits = if ctx.session.replaying {
        Limits::NONE
    } else {
        Limits {
            string_bytes: ctx.config().settings().proto_max_bulk_len,
            filter_bytes: ctx.filter_memory_limit(),
        }
    };
    let value = rdb::restore(restore.payload, &limits).map_err(|error| match error {
        RestoreError::VersionOrChecksum => RESTORE_PAYLOAD_CHECK,
        RestoreError::BadData(_) => RESTORE_BAD_DATA,
    })?;
    let expires_at = match ttl {
        0 => 0,
        ttl if absttl => ttl,
        ttl => ttl.saturating_add(ctx.now),
    };
    let db = ctx.db();
    let deleted = replace && db.remove(key, ctx.now);
    if expires_at != 0 && expires_at <= ctx.now {
        // Already expired: nothing is created, and a replaced key is gone.
        ctx.log_effects_only();
        if deleted {
            ctx.note_effect([&b"DEL"[..], key]);
        }
        ctx.reply.ok();
        return Ok(());
    }
    db.insert(key, value, expires_at);
    if let Some(bits) = db.tracking().restored(restore.idle, restore.freq) {
        db.set_access_bits(key, ctx.now, bits);
    }
    if expires_at != 0 && !absttl && ctx.logging() {
        let when = itoa::Buffer::new().format(expires_at).as_bytes().to_vec();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", key, &when, restore.payload, b"ABSTTL"];
        if replace {
            args.push(b"REPLACE");
        }
        ctx.note_effect(args);
        ctx.log_effects_only();
    }
    ctx.reply.ok();
    Ok(())
}

/// What MIGRATE was asked to do, read in Redis's order: the options, then the timeout, then the
/// database.
struct Migration<'a> {
    host: &'a [u8],
    port: &'a [u8],
    db_index: i64,
    timeout: Duration,
    copy: bool,
    replace: bool,
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    keys: Vec<&'a [u8]>,
}

#[derive(Clone, Copy)]
enum MigrateOption {
    Copy,
    Replace,
    Auth,
    Auth2,
    Keys,
}

impl<'a> Migration<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        const OPTIONS: &[(&str, MigrateOption)] = &[
            ("COPY", MigrateOption::Copy),
            ("REPLACE", MigrateOption::Replace),
            ("AUTH", MigrateOption::Auth),
            ("AUTH2", MigrateOption::Auth2),
            ("KEYS", MigrateOption::Keys),
        ];
        let mut args = Args::new(request, 1);
        let (host, port, key) = (args.required()?, args.required()?, args.required()?);
        let (db_index, timeout) = (args.required()?, args.required()?);
        let mut migration = Migration {
            host,
            port,
            db_index: 0,
            timeout: Duration::ZERO,
            copy: false,
            replace: false,
            auth: None,
            keys: vec![key],
        };
        while let Some(option) = args.next() {
            match keyword(option, OPTIONS) {
                Some(MigrateOption::Copy) => migration.copy = true,
                Some(MigrateOption::Replace) => migration.replace = true,
                Some(MigrateOption::Auth) => {
                    migration.auth = Some((None, args.next_or(SYNTAX)?));
                }
                Some(MigrateOption::Auth2) => {
                    if args.remaining() < 2 {
                        return Err(SYNTAX.into());
                    }
                    migration.auth = Some((Some(args.required()?), args.required()?));
                }
                Some(MigrateOption::Keys) => {
                    if !key.is_empty() {
                        return Err(MIGRATE_KEYS_WITH_KEY.into());
                    }
                    migration.keys = args.rest().collect();
                }
                None => return Err(SYNTAX.into()),
            }
        }
        let timeout = int(timeout, NOT_INTEGER)?;
        migration.db_index = int(db_index, NOT_INTEGER)?;
        migration.timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
        Ok(migration)
    }
}

/// Where a migration's connection failed, as Redis's IOERR names it.
enum LinkError {
    Connecting,
    Writing,
    Reading,
}

fn connect(host: &[u8], port: &[u8], timeout: Duration) -> Result<TcpStream, LinkError> {
    let host = std::str::from_utf8(host).map_err(|_| LinkError::Connecting)?;
    let port = std::str::from_utf8(port)
        .ok()
        .and_then(|port| port.parse::<u16>().ok())
        .ok_or(LinkError::Connecting)?;
    let addresses = (host, port)
        .to_socket_addrs()
        .map_err(|_| LinkError::Connecting)?;
    let mut failure = LinkError::Connecting;
    for address in addresses {
        match TcpStream::connect_timeout(&address, timeout) {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                stream
                    .set_write_timeout(Some(timeout))
                    .and_then(|()| stream.set_read_timeout(Some(timeout)))
                    .map_err(|_| LinkError::Connecting)?;
                return Ok(stream);
            }
            // Redis connects without blocking and learns of a refusal only when it writes.
            Err(error) if error.kind() != std::io::ErrorKind::TimedOut => {
                failure = LinkError::Writing;
            }
            Err(_) => failure = LinkError::Connecting,
        }
    }
    Err(failure)
}

/// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password |
/// AUTH2 username password] [KEYS key ...], as Redis runs it: each key's DUMP is sent as a
/// RESTORE (with its remaining TTL), and without COPY each key the target accepted is deleted
/// here, which the log records as a DEL. The connection is made for the one command (Redis
/// keeps it for ten seconds); the command holds this connection, and the write log's order
/// while it runs, for at most a few timeouts.
pub(super) fn migrate(ctx: &mut Ctx, request: Request) -> CmdResult {
    let migration = Migration::parse(request)?;
    ctx.log_effects_only();
    let db = ctx.db();
    let mut found = Vec::new();
    for key in &migration.keys {
        let Some(payload) = db.get(key, ctx.now, |v| v.map(rdb::dump)) else {
            continue;
        };
        let ttl = match db.expires_at(key, ctx.now) {
            Some(0) | None => 0,
            Some(at) => at.saturating_sub(ctx.now).max(1),
        };
        found.push((*key, ttl, payload));
    }
    if found.is_empty() {
        ctx.reply.simple("NOKEY");
        return Ok(());
    }
    let mut stream =
        connect(migration.host, migration.port, migration.timeout).map_err(link_error)?;
    let mut out = Vec::new();
    if let Some((user, password)) = migration.auth {
        match user {
            Some(user) => encode_request(&mut out, &[b"AUTH", user, password]),
            None => encode_request(&mut out, &[b"AUTH", password]),
        }
    }
    encode_request(
        &mut out,
        &[
            b"SELECT",
            itoa::Buffer::new().format(migration.db_index).as_bytes(),
        ],
    );
    for (key, ttl, payload) in &found {
        let ttl = itoa::Buffer::new().format(*ttl).as_bytes().to_vec();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", key, &ttl, payload];
        if migration.replace {
            args.push(b"REPLACE");
        }
        encode_request(&mut out, &args);
    }
    let sent: Vec<&[u8]> = found.iter().map(|(key, _, _)| *key).collect();
    drop(found);
    stream
        .write_all(&out)
        .map_err(|_| link_error(LinkError::Writing))?;
    drop(out);
    let mut replies = BufReader::new(stream);
    let mut read_line = || {
        let mut line = Vec::new();
        match replies.read_until(b'\n', &mut line) {
            Ok(n) if n > 0 && line.ends_with(b"\r\n") => Ok(line),
            _ => Err(LinkError::Reading),
        }
    };
    // The replies to AUTH and SELECT: an error there fails every key, as in Redis.
    let mut target_error = None;
    for _ in 0..1 + usize::from(migration.auth.is_some()) {
        let line = read_line().map_err(link_error)?;
        if line.starts_with(b"-") {
            target_error.get_or_insert(line);
        }
    }
    let setup_failed = target_error.is_some();
    let mut moved: Vec<&[u8]> = Vec::new();
    let mut link_failure = None;
    for key in sent {
        let line = match read_line() {
            Ok(line) => line,
            Err(error) => {
                link_failure = Some(error);
                break;
            }
        };
        if line.starts_with(b"-") {
            target_error.get_or_insert(line);
        } else if !setup_failed && !migration.copy {
            db.remove(key, ctx.now);
            moved.push(key);
        }
    }
    if !moved.is_empty() {
        ctx.note_effect([&b"DEL"[..]].into_iter().chain(moved.iter().copied()));
    }
    if let Some(line) = target_error {
        let text = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
        return Err(migrate_target_error(&text));
    }
    if let Some(error) = link_failure {
        return Err(link_error(error));
    }
    ctx.reply.ok();
    Ok(())
}

fn link_error(error: LinkError) -> CmdError {
    match error {
        LinkError::Connecting => MIGRATE_CONNECTING.into(),
        LinkError::Writing => MIGRATE_WRITING.into(),
        LinkError::Reading => MIGRATE_READING.into(),
    }
}

/// The serialization commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "dump",
        2,
        Group::Generic,
        "Returns a serialized representation of the value stored at a key.",
        dump,
    )
    .flags(bits![Flags: READONLY])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1)])
    .acl(bits![Acl: KEYSPACE])
    .since("2.6.0")
    .complexity(
        "O(1) to access the key and additional O(N*M) to serialize it, where N is the number \
        of Redis objects composing the value and M their average size. For small string values \
        the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
    )
    .tips(&["nondeterministic_output"])
    .args(&[key("key")]),
    CommandSpec::new(
        "restore",
        -4,
        Group::Generic,
        "Creates a key from the serialized representation of a value.",
        restore,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(&[KeySpec::range(bits![KeyFlags: OW, UPDATE], 1, 0, 1)])
    .acl(bits![Acl: KEYSPACE, DANGEROUS])
    .since("2.6.0")
    .complexity(
        "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, \
        where N is the number of Redis objects composing the value and M their average size. \
        For small string values the time complexity is thus O(1)+O(1*M) where M is small, so \
        simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because \
        inserting values into sorted sets is O(log(N)).",
    )
    .history(&[
        ("3.0.0", "Added the `REPLACE` modifier."),
        ("5.0.0", "Added the `ABSTTL` modifier."),
        ("5.0.0", "Added the `IDLETIME` and `FREQ` options."),
    ])
    .args(&[
        key("key"),
        integer("ttl"),
        string("serialized-value"),
        pure_token("replace", "REPLACE").since("3.0.0").optional(),
        pure_token("absttl", "ABSTTL").since("5.0.0").optional(),
        integer("seconds")
            .token("IDLETIME")
            .since("5.0.0")
            .optional(),
        integer("frequency").token("FREQ").since("5.0.0").optional(),
    ]),
    // Redis finds MIGRATE's keys after KEYS with a keyword search, which sieved's key
    // specifications do not express: COMMAND reports the single-key form's.
    CommandSpec::new(
        "migrate",
        -6,
        Group::Generic,
        "Atomically transfers a key from one Redis instance to another.",
        migrate,
    )
    .flags(bits![Flags: WRITE])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RW, ACCESS, DELETE], 3, 0, 1)])
    .acl(bits![Acl: KEYSPACE, DANGEROUS])
    .since("2.6.0")
    .complexity(
        "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in \
        the target instance. See the pages of these commands for time complexity. Also an O(N) \
        data transfer between the two instances is performed.",
    )
    .tips(&["nondeterministic_output"])
    .history(&[
        ("3.0.0", "Added the `COPY` and `REPLACE` options."),
        ("3.0.6", "Added the `KEYS` option."),
        ("4.0.7", "Added the `AUTH` option."),
        ("6.0.0", "Added the `AUTH2` option."),
    ])
    .args(&[
        string("host"),
        integer("port"),
        one_of(
            "key-selector",
            &[key("key"), pure_token("empty-string", "\"\"")],
        ),
        integer("destination-db"),
        integer("timeout"),
        pure_token("copy", "COPY").since("3.0.0").optional(),
        pure_token("replace", "REPLACE").since("3.0.0").optional(),
        one_of(
            "authentication",
            &[
                string("auth").token("AUTH").since("4.0.7"),
                block("auth2", &[string("username"), string("password")])
                    .token("AUTH2")
                    .since("6.0.0"),
            ],
        )
        .optional(),
        key("keys")
            .token("KEYS")
            .since("3.0.6")
            .optional()
            .multiple(),
    ]),
];
