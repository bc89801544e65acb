//! Diagnostic commands: SLOWLOG, SIEVED.STATS and SIEVED.DIGEST.

use super::args::{keyword, parse_i64, Args, Key};
use super::errors::*;
use super::filter_specs::FILTER_KEY;
use super::spec::{bits, command_table, CommandSpec, KeySpec};
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
fn sieved_digest(ctx: &mut Ctx, request: Request) -> CmdResult {
    let keys = Args::new(request, 1).items();
    if keys.is_empty() {
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
    ctx.reply.array(keys.len());
    for key in keys.iter() {
        let digest = db.entry(key, ctx.now).map_or(0, |(expires_at, value)| {
            key_digest(ctx.session.db, key, expires_at, &value)
        });
        ctx.reply.bulk(&hex(digest));
    }
    Ok(())
}

/// SIEVED.STATS key: how full a filter is and what that does to its answers; see
/// `filter/health.rs` for the estimate.
fn sieved_stats(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let (health, saturated) = ctx.db().get(key, ctx.now, |value| match value {
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

/// SLOWLOG GET [count] | LEN | RESET | HELP
#[derive(Clone, Copy)]
enum Slowlog {
    /// How many entries, most recent first.
    Get(usize),
    Len,
    Reset,
    Help,
}

impl Slowlog {
    /// A known subcommand with more words than it takes is the arity error of
    /// `slowlog|<subcommand>`; an unknown one, Redis's unknown subcommand error.
    fn parse(request: Request) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let sub = args.required()?;
        let subcommands = [
            ("GET", Slowlog::Get(10)),
            ("LEN", Slowlog::Len),
            ("RESET", Slowlog::Reset),
            ("HELP", Slowlog::Help),
        ];
        let found = keyword(sub, &subcommands)
            .ok_or_else(|| CmdError::unknown_subcommand(sub, "SLOWLOG"))?;
        let most_words = match found {
            Slowlog::Get(_) => 3,
            _ => 2,
        };
        if args.word_count() > most_words {
            return Err(CmdError::arity(&format!(
                "slowlog|{}",
                String::from_utf8_lossy(sub).to_ascii_lowercase()
            )));
        }
        let Some(count) = args.next() else {
            return Ok(found);
        };
        match parse_i64(count) {
            Some(-1) => Ok(Slowlog::Get(usize::MAX)),
            Some(n) if n >= 0 => Ok(Slowlog::Get(n as usize)),
            _ => Err(SLOWLOG_COUNT.into()),
        }
    }
}

fn slowlog(ctx: &mut Ctx, request: Request) -> CmdResult {
    match Slowlog::parse(request)? {
        Slowlog::Get(count) => ctx.server.slowlog_get(count, ctx.reply),
        Slowlog::Len => ctx.reply.int(ctx.server.slowlog_len() as i64),
        Slowlog::Reset => {
            ctx.server.slowlog_reset();
            ctx.reply.ok();
        }
        Slowlog::Help => {
            ctx.reply.array(SLOWLOG_HELP.len());
            SLOWLOG_HELP.iter().for_each(|line| ctx.reply.simple(line));
        }
    }
    Ok(())
}

/// SLOWLOG as Redis 7 declares it (its subcommands are not listed apart), SIEVED.STATS and
/// SIEVED.DIGEST.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Server:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "slowlog", -2, [], &[], [], slowlog, docs::SLOWLOG, subcommands(docs::SLOWLOG_SUBCOMMANDS);
    Bloom: "sieved.stats", 2, [READONLY], FILTER_KEY, [READ, BLOOM], sieved_stats, docs::STATS;
    "sieved.digest", -1, [READONLY], EVERY_KEY_READ, [READ, KEYSPACE], sieved_digest, docs::DIGEST;
};

const EVERY_KEY_READ: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RO], 1, -1, 1)];

/// What COMMAND DOCS says of each.
mod docs {
    use super::super::spec::{integer, key, Docs, FIRST_RELEASE};

    pub(super) const SLOWLOG: Docs = Docs::new("A container for slow log commands.")
        .since("2.2.12")
        .complexity("Depends on subcommand.");
    pub(super) const STATS: Docs = Docs::new(
        "Reports how full a Bloom or counting Bloom filter is and its estimated false-positive \
         rate",
    )
    .since(FIRST_RELEASE)
    .complexity("O(f), where f is the number of sub-filters")
    .args(&[key("key")]);
    pub(super) const DIGEST: Docs = Docs::new(
        "Returns a digest of the whole data set, or of each key given, to compare two nodes",
    )
    .since(FIRST_RELEASE)
    .complexity("O(N) in the bytes of the data set, or of the keys given")
    .args(&[key("key").optional().multiple()]);

    /// SLOWLOG's subcommands, as COMMAND DOCS lists them.
    pub(super) const SLOWLOG_SUBCOMMANDS: &[(&str, Docs)] = &[
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
}
