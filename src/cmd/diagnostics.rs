//! Diagnostic commands: SLOWLOG, SIEVED.STATS and SIEVED.DIGEST.

use super::args::{is, parse_i64};
use super::bloom::FILTER_KEY;
use super::errors::*;
use super::spec::{bits, integer, key, CommandSpec, Docs, Group, KeySpec, FIRST_RELEASE};
use super::Ctx;
use crate::filter::Health;
use crate::protocol::Request;
use crate::store::{read, Value, ValueHandle};
use xxhash_rust::xxh3::Xxh3;

/// A digest as SIEVED.DIGEST prints it: 32 hexadecimal characters.
fn hex(digest: u128) -> [u8; 32] {
    let mut out = [b'0'; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = b"0123456789abcdef"[((digest >> (124 - 4 * i)) & 0xf) as usize];
    }
    out
}

/// One key's digest: everything a snapshot keeps of it (database, name, expiry, type, shape
/// and contents), so two nodes with the same digest hold the same data. The contents are read
/// in pieces, each under a brief read lock, as a snapshot reads them.
fn key_digest(db: usize, key: &[u8], expires_at: u64, value: &ValueHandle) -> u128 {
    const PIECE: u64 = 64 * 1024;
    let mut hasher = Xxh3::new();
    hasher.update(&(db as u64).to_le_bytes());
    hasher.update(&(key.len() as u64).to_le_bytes());
    hasher.update(key);
    hasher.update(&expires_at.to_le_bytes());
    let (kind, header, len) = {
        let value = read(value);
        (value.kind(), value.snapshot_header(), value.payload_len())
    };
    hasher.update(&[kind as u8]);
    hasher.update(&(header.len() as u64).to_le_bytes());
    hasher.update(&header);
    let mut piece = Vec::new();
    let mut offset = 0;
    while offset < len {
        piece.clear();
        let take = PIECE.min(len - offset);
        if !read(value).read_payload(offset, take, &mut piece) {
            break;
        }
        hasher.update(&piece);
        offset += take;
    }
    hasher.digest128()
}

/// SIEVED.DIGEST [key ...]: without keys, one digest of the whole data set, every database (all
/// zeros when it is empty); with keys, the digest of each in the selected database (zeros for
/// one that does not exist). Digests are combined by XOR, so the order keys sit in memory, which
/// differs between nodes, does not matter.
pub(super) fn sieved_digest(ctx: &mut Ctx, request: Request) -> CmdResult {
    if request.len() == 1 {
        let mut total = 0u128;
        for (index, db) in ctx.store.dbs().enumerate() {
            for shard in 0..db.shard_count() {
                for (key, expires_at, value) in db.shard_entries(shard, ctx.now) {
                    total ^= key_digest(index, &key, expires_at, &value);
                }
            }
        }
        ctx.reply.bulk(&hex(total));
        return Ok(());
    }
    let db = ctx.store.db(ctx.session.db);
    ctx.reply.array(request.len() - 1);
    for key in request.args().skip(1) {
        let digest = db.entry(key, ctx.now).map_or(0, |(expires_at, value)| {
            key_digest(ctx.session.db, key, expires_at, &value)
        });
        ctx.reply.bulk(&hex(digest));
    }
    Ok(())
}

/// SIEVED.STATS key: how full a filter is and what that does to its answers; see
/// `filter/health.rs` for the estimate.
pub(super) fn sieved_stats(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (health, saturated) = ctx.db().get(request.arg(1), ctx.now, |value| match value {
        None => Err(CmdError::from(BF_NOT_FOUND)),
        Some(Value::Bloom(chain)) => Ok((Health::of(chain), None)),
        Some(Value::Counting(chain)) => Ok((Health::of(chain), Some(chain.saturated_counters()))),
        Some(_) => Err(WRONGTYPE.into()),
    })?;
    let reply = &mut *ctx.reply;
    reply.map(10 + saturated.is_some() as usize);
    reply.bulk(b"type");
    reply.bulk(if saturated.is_some() {
        b"counting"
    } else {
        b"bloom"
    });
    reply.bulk(b"links");
    reply.int(health.links as i64);
    reply.bulk(b"capacity");
    reply.int(health.capacity as i64);
    reply.bulk(b"items");
    reply.int(health.items as i64);
    reply.bulk(b"bytes");
    reply.int(health.bytes as i64);
    reply.bulk(b"fill_ratio");
    reply.double(health.fill_ratio);
    reply.bulk(b"newest_link_fill_ratio");
    reply.double(health.newest_fill_ratio);
    reply.bulk(b"target_error_rate");
    reply.double(health.target_error_rate);
    reply.bulk(b"estimated_error_rate");
    reply.double(health.estimated_error_rate);
    reply.bulk(if health.scaling {
        b"items_until_scale_out".as_slice()
    } else {
        b"items_until_full"
    });
    reply.int(health.items_until_scale_out as i64);
    if let Some(saturated) = saturated {
        reply.bulk(b"saturated_counters");
        reply.int(saturated as i64);
    }
    Ok(())
}

const SLOWLOG_HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Print this help.",
];

pub(super) fn slowlog(ctx: &mut Ctx, request: Request) -> CmdResult {
    let sub = request.arg(1);
    if is(sub, "GET") && request.len() <= 3 {
        let count = match request.len() {
            3 => match parse_i64(request.arg(2)) {
                Some(-1) => usize::MAX,
                Some(n) if n >= 0 => n as usize,
                _ => return Err("ERR count should be greater than or equal to -1".into()),
            },
            _ => 10,
        };
        ctx.server.slowlog_get(count, ctx.reply);
    } else if is(sub, "LEN") && request.len() == 2 {
        ctx.reply.int(ctx.server.slowlog_len() as i64);
    } else if is(sub, "RESET") && request.len() == 2 {
        ctx.server.slowlog_reset();
        ctx.reply.ok();
    } else if is(sub, "HELP") && request.len() == 2 {
        ctx.reply.array(SLOWLOG_HELP.len());
        SLOWLOG_HELP.iter().for_each(|line| ctx.reply.simple(line));
    } else if ["GET", "LEN", "RESET", "HELP"].iter().any(|s| is(sub, s)) {
        return Err(CmdError::arity(&format!(
            "slowlog|{}",
            String::from_utf8_lossy(sub).to_ascii_lowercase()
        )));
    } else {
        return Err(CmdError::unknown_subcommand(sub, "SLOWLOG"));
    }
    Ok(())
}

/// SLOWLOG as Redis 7 declares it (its subcommands are not listed apart), and SIEVED.STATS.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "slowlog",
        -2,
        Group::Server,
        "A container for slow log commands.",
        slowlog,
    )
    .since("2.2.12")
    .complexity("Depends on subcommand.")
    .subcommands(SLOWLOG_SUBCOMMANDS),
    CommandSpec::new(
        "sieved.stats",
        2,
        Group::Bloom,
        "Reports how full a Bloom or counting Bloom filter is and its estimated \
        false-positive rate",
        sieved_stats,
    )
    .flags(bits![Flags: READONLY])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .since(FIRST_RELEASE)
    .complexity("O(f), where f is the number of sub-filters")
    .args(&[key("key")]),
    CommandSpec::new(
        "sieved.digest",
        -1,
        Group::Server,
        "Returns a digest of the whole data set, or of each key given, to compare two nodes",
        sieved_digest,
    )
    .flags(bits![Flags: READONLY])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO], 1, -1, 1)])
    .acl(bits![Acl: READ, KEYSPACE])
    .since(FIRST_RELEASE)
    .complexity("O(N) in the bytes of the data set, or of the keys given")
    .args(&[key("key").optional().multiple()]),
];

/// SLOWLOG's subcommands, as COMMAND DOCS lists them.
const SLOWLOG_SUBCOMMANDS: &[(&str, Docs)] = &[
    (
        "slowlog|get",
        Docs::new("Returns the slow log's entries.")
            .since("2.2.12")
            .complexity("O(N) where N is the number of entries returned")
            .history(&[(
                "4.0.0",
                "Added client IP address, port and name to the reply.",
            )])
            .args(&[integer("count").optional()]),
    ),
    (
        "slowlog|help",
        Docs::new("Show helpful text about the different subcommands")
            .since("6.2.0")
            .complexity("O(1)"),
    ),
    (
        "slowlog|len",
        Docs::new("Returns the number of entries in the slow log.")
            .since("2.2.12")
            .complexity("O(1)"),
    ),
    (
        "slowlog|reset",
        Docs::new("Clears all entries from the slow log.")
            .since("2.2.12")
            .complexity("O(N) where N is the number of entries in the slowlog"),
    ),
];
