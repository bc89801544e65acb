//! Commands: one file per family, and the table that names them all. Each handler reads its
//! arguments from the request, acts on the store, and writes its reply; a handler that fails
//! returns an error before writing anything, and `execute` sends it.

mod admin;
mod args;
mod bloom;
mod client_info;
mod command;
mod connection;
mod context;
mod counting;
mod diagnostics;
pub mod errors;
mod filters;
mod keys;
mod strings;
#[cfg(test)]
mod tests;
mod transaction;

pub use client_info::ClientInfo;
pub use context::{Ctx, ExitSave, SaveError, Server, Session, WriteLog};

use crate::protocol::{Request, RequestList};
use errors::{CmdError, CmdResult};
use std::collections::HashMap;
use std::sync::OnceLock;

/// How one request ended, as `execute` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Not a command this server knows: counted nowhere per command, as in Redis.
    Unknown,
    /// Refused before running (wrong number of arguments, not authenticated, out of memory).
    Rejected(usize),
    Succeeded(usize),
    /// Ran and replied with an error.
    Failed(usize),
    /// Queued inside MULTI: counted when EXEC runs it.
    Queued,
}

type Handler = fn(&mut Ctx, Request) -> CmdResult;

/// What COMMAND reports about a command, and how to run it.
pub struct CommandSpec {
    /// Lower case, as Redis reports it.
    pub name: &'static str,
    /// Exact argument count including the name when positive; a minimum when negative.
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub group: &'static str,
    pub summary: &'static str,
    /// Flagged `write`: counts as a change for the snapshot schedule.
    pub writes: bool,
    /// Flagged `denyoom`: refused while memory is over `maxmemory`.
    pub denyoom: bool,
    handler: Handler,
}

const fn has_flag(flags: &[&str], wanted: &str) -> bool {
    let wanted = wanted.as_bytes();
    let mut i = 0;
    while i < flags.len() {
        let flag = flags[i].as_bytes();
        if flag.len() == wanted.len() {
            let mut j = 0;
            while j < flag.len() && flag[j] == wanted[j] {
                j += 1;
            }
            if j == flag.len() {
                return true;
            }
        }
        i += 1;
    }
    false
}

const W: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "fast"];
const R: &[&str] = &["readonly", "fast"];
const RS: &[&str] = &["readonly"];
const C: &[&str] = &["fast", "loading", "stale"];
const A: &[&str] = &["admin", "noscript", "loading", "stale"];

macro_rules! commands {
    ($($name:literal, $arity:expr, $flags:expr, ($first:expr, $last:expr, $step:expr), $group:literal, $handler:path, $summary:literal;)*) => {
        pub static COMMANDS: &[CommandSpec] = &[$(CommandSpec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $first,
            last_key: $last,
            step: $step,
            group: $group,
            summary: $summary,
            writes: has_flag($flags, "write"),
            denyoom: has_flag($flags, "denyoom"),
            handler: $handler,
        }),*];
    };
}

commands! {
    "bf.reserve", -4, W, (1, 1, 1), "bf", bloom::reserve, "Creates a new Bloom filter";
    "bf.add", 3, W, (1, 1, 1), "bf", bloom::add, "Adds an item to a Bloom filter";
    "bf.madd", -3, W, (1, 1, 1), "bf", bloom::madd, "Adds one or more items to a Bloom filter";
    "bf.insert", -4, W, (1, 1, 1), "bf", bloom::insert, "Adds items to a Bloom filter, creating it with the given options if needed";
    "bf.exists", 3, R, (1, 1, 1), "bf", bloom::exists, "Checks whether an item exists in a Bloom filter";
    "bf.mexists", -3, R, (1, 1, 1), "bf", bloom::mexists, "Checks whether one or more items exist in a Bloom filter";
    "bf.info", -2, R, (1, 1, 1), "bf", bloom::info, "Returns information about a Bloom filter";
    "bf.card", 2, R, (1, 1, 1), "bf", bloom::card, "Returns the number of items added to a Bloom filter";
    "bf.scandump", 3, R, (1, 1, 1), "bf", bloom::scandump, "Begins an incremental save of a Bloom filter";
    "bf.loadchunk", 4, W, (1, 1, 1), "bf", bloom::loadchunk, "Restores a Bloom filter previously saved with BF.SCANDUMP";
    "bf.debug", -1, R, (1, 1, 1), "bf", bloom::debug, "Describes each sub-filter of a Bloom filter";
    "cbf.reserve", -4, W, (1, 1, 1), "cbf", counting::reserve, "Creates a new counting Bloom filter";
    "cbf.add", 3, W, (1, 1, 1), "cbf", counting::add, "Adds one copy of an item to a counting Bloom filter";
    "cbf.madd", -3, W, (1, 1, 1), "cbf", counting::madd, "Adds one copy of each of one or more items to a counting Bloom filter";
    "cbf.insert", -4, W, (1, 1, 1), "cbf", counting::insert, "Adds items to a counting Bloom filter, creating it with the given options if needed";
    "cbf.exists", 3, R, (1, 1, 1), "cbf", counting::exists, "Checks whether an item exists in a counting Bloom filter";
    "cbf.mexists", -3, R, (1, 1, 1), "cbf", counting::mexists, "Checks whether one or more items exist in a counting Bloom filter";
    "cbf.del", 3, WF, (1, 1, 1), "cbf", counting::del, "Deletes one copy of an item from a counting Bloom filter";
    "cbf.mdel", -3, WF, (1, 1, 1), "cbf", counting::mdel, "Deletes one copy of each of one or more items from a counting Bloom filter";
    "cbf.count", 3, R, (1, 1, 1), "cbf", counting::count, "Returns how many copies of an item a counting Bloom filter holds, at most";
    "cbf.card", 2, R, (1, 1, 1), "cbf", counting::card, "Returns the number of items held by a counting Bloom filter";
    "cbf.info", -2, R, (1, 1, 1), "cbf", counting::info, "Returns information about a counting Bloom filter";
    "cbf.scandump", 3, R, (1, 1, 1), "cbf", counting::scandump, "Begins an incremental save of a counting Bloom filter";
    "cbf.loadchunk", 4, W, (1, 1, 1), "cbf", counting::loadchunk, "Restores a counting Bloom filter previously saved with CBF.SCANDUMP";
    "ping", -1, C, (0, 0, 0), "connection", connection::ping, "Returns the server's liveliness response";
    "echo", 2, C, (0, 0, 0), "connection", connection::echo, "Returns the given string";
    "hello", -1, C, (0, 0, 0), "connection", connection::hello, "Handshakes with the server";
    "auth", -2, C, (0, 0, 0), "connection", connection::auth, "Authenticates the connection";
    "select", 2, C, (0, 0, 0), "connection", connection::select, "Changes the selected database";
    "quit", -1, C, (0, 0, 0), "connection", connection::quit, "Closes the connection";
    "reset", 1, C, (0, 0, 0), "connection", connection::reset, "Resets the connection";
    "client", -2, C, (0, 0, 0), "connection", connection::client, "A container for client connection commands";
    "command", -1, C, (0, 0, 0), "server", command::command, "Returns detailed information about all commands";
    "info", -1, C, (0, 0, 0), "server", admin::info, "Returns information and statistics about the server";
    "config", -2, A, (0, 0, 0), "server", admin::config, "A container for server configuration commands";
    "time", 1, C, (0, 0, 0), "server", admin::time, "Returns the server time";
    "shutdown", -1, A, (0, 0, 0), "server", admin::shutdown, "Stops the server";
    "multi", 1, &["noscript", "loading", "stale", "fast"], (0, 0, 0), "transactions", transaction::multi, "Starts a transaction";
    "exec", 1, &["noscript", "loading", "stale"], (0, 0, 0), "transactions", transaction::exec, "Executes all commands in a transaction";
    "discard", 1, &["noscript", "loading", "stale", "fast"], (0, 0, 0), "transactions", transaction::discard, "Discards a transaction";
    "watch", -2, &["noscript", "loading", "stale", "fast"], (1, -1, 1), "transactions", transaction::watch, "Monitors changes to keys to determine the execution of a transaction";
    "unwatch", 1, &["noscript", "loading", "stale", "fast"], (0, 0, 0), "transactions", transaction::unwatch, "Forgets about watched keys of a transaction";
    "save", 1, A, (0, 0, 0), "server", admin::save, "Synchronously saves the database to disk";
    "bgsave", -1, A, (0, 0, 0), "server", admin::bgsave, "Asynchronously saves the database to disk";
    "bgrewriteaof", 1, A, (0, 0, 0), "server", admin::bgrewriteaof, "Asynchronously rewrites the append-only file to disk";
    "lastsave", 1, &["fast", "loading", "stale"], (0, 0, 0), "server", admin::lastsave, "Returns the Unix timestamp of the last successful save";
    "dbsize", 1, R, (0, 0, 0), "server", keys::dbsize, "Returns the number of keys in the database";
    "flushdb", -1, &["write"], (0, 0, 0), "server", keys::flushdb, "Removes all keys from the current database";
    "flushall", -1, &["write"], (0, 0, 0), "server", keys::flushall, "Removes all keys from all databases";
    "memory", -2, RS, (0, 0, 0), "server", keys::memory, "A container for memory diagnostics commands";
    "del", -2, &["write"], (1, -1, 1), "generic", keys::del, "Deletes one or more keys";
    "unlink", -2, WF, (1, -1, 1), "generic", keys::del, "Deletes one or more keys";
    "exists", -2, R, (1, -1, 1), "generic", keys::exists, "Determines whether one or more keys exist";
    "touch", -2, R, (1, -1, 1), "generic", keys::exists, "Returns the number of existing keys out of those specified";
    "type", 2, R, (1, 1, 1), "generic", keys::type_of, "Determines the type of value stored at a key";
    "keys", 2, RS, (0, 0, 0), "generic", keys::keys, "Returns all key names that match a pattern";
    "scan", -2, RS, (0, 0, 0), "generic", keys::scan, "Iterates over the key names in the database";
    "randomkey", 1, RS, (0, 0, 0), "generic", keys::randomkey, "Returns a random key name from the database";
    "rename", 3, &["write"], (1, 2, 1), "generic", keys::rename, "Renames a key and overwrites the destination";
    "renamenx", 3, WF, (1, 2, 1), "generic", keys::renamenx, "Renames a key only when the target key name doesn't exist";
    "copy", -3, W, (1, 2, 1), "generic", keys::copy, "Copies the value of a key to a new key";
    "expire", -3, WF, (1, 1, 1), "generic", keys::expire, "Sets the expiration time of a key in seconds";
    "pexpire", -3, WF, (1, 1, 1), "generic", keys::pexpire, "Sets the expiration time of a key in milliseconds";
    "expireat", -3, WF, (1, 1, 1), "generic", keys::expireat, "Sets the expiration time of a key to a Unix timestamp";
    "pexpireat", -3, WF, (1, 1, 1), "generic", keys::pexpireat, "Sets the expiration time of a key to a Unix milliseconds timestamp";
    "ttl", 2, R, (1, 1, 1), "generic", keys::ttl, "Returns the expiration time in seconds of a key";
    "pttl", 2, R, (1, 1, 1), "generic", keys::pttl, "Returns the expiration time in milliseconds of a key";
    "expiretime", 2, R, (1, 1, 1), "generic", keys::expiretime, "Returns the expiration time of a key as a Unix timestamp";
    "pexpiretime", 2, R, (1, 1, 1), "generic", keys::pexpiretime, "Returns the expiration time of a key as a Unix milliseconds timestamp";
    "persist", 2, WF, (1, 1, 1), "generic", keys::persist, "Removes the expiration time of a key";
    "set", -3, W, (1, 1, 1), "string", strings::set, "Sets the string value of a key";
    "get", 2, R, (1, 1, 1), "string", strings::get, "Returns the string value of a key";
    "strlen", 2, R, (1, 1, 1), "string", strings::strlen, "Returns the length of a string value";
    "object", -2, RS, (2, 2, 1), "generic", keys::object, "A container for object introspection commands";
    "slowlog", -2, &["admin", "loading", "stale"], (0, 0, 0), "server", diagnostics::slowlog, "A container for slow log commands";
    "sieved.stats", 2, RS, (1, 1, 1), "bf", diagnostics::sieved_stats, "Reports how full a Bloom or counting Bloom filter is and its estimated false-positive rate";
}

fn table() -> &'static HashMap<&'static [u8], usize> {
    static TABLE: OnceLock<HashMap<&'static [u8], usize>> = OnceLock::new();
    TABLE.get_or_init(|| {
        COMMANDS
            .iter()
            .enumerate()
            .map(|(i, spec)| (spec.name.as_bytes(), i))
            .collect()
    })
}

/// Finds a command by name, in any case, without allocating.
pub fn lookup(name: &[u8]) -> Option<usize> {
    let mut lower = [0u8; 32];
    let lower = lower.get_mut(..name.len())?;
    for (out, &b) in lower.iter_mut().zip(name) {
        *out = b.to_ascii_lowercase();
    }
    table().get(&*lower).copied()
}

/// Runs one request, writing exactly one reply (or none, for a successful SHUTDOWN). Inside
/// MULTI, a command is checked and queued instead.
pub fn execute(ctx: &mut Ctx, request: Request) -> Outcome {
    let Some(index) = lookup(request.arg(0)) else {
        fail_transaction(ctx);
        ctx.reply.error(&unknown_command(request));
        return Outcome::Unknown;
    };
    let spec = &COMMANDS[index];
    ctx.session.client.note_command(index, ctx.now);
    let argc = request.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || argc < -spec.arity {
        fail_transaction(ctx);
        ctx.reply.error(CmdError::arity(spec.name).message());
        return Outcome::Rejected(index);
    }
    if ctx.session.must_authenticate(ctx.config())
        && !matches!(spec.name, "auth" | "hello" | "quit" | "reset")
    {
        fail_transaction(ctx);
        ctx.reply.error(errors::NOAUTH);
        return Outcome::Rejected(index);
    }
    if spec.denyoom {
        let limit = ctx.config().maxmemory();
        if limit > 0 && crate::memory::allocated() as u64 > limit {
            fail_transaction(ctx);
            ctx.reply.error(errors::OOM);
            return Outcome::Rejected(index);
        }
    }
    if let Some(queue) = ctx.session.transaction.as_mut() {
        if transaction::refused_inside_multi(spec.name) {
            queue.fail();
            ctx.reply.error(transaction::NOT_IN_MULTI);
            return Outcome::Rejected(index);
        }
        if !transaction::runs_inside_multi(spec.name) {
            if queue.queue(request) {
                ctx.reply.simple("QUEUED");
                return Outcome::Queued;
            }
            ctx.reply.error(transaction::QUEUE_TOO_LARGE);
            return Outcome::Rejected(index);
        }
    }
    let ran = match ctx.server.write_log() {
        Some(log) if spec.writes => run_logged(ctx, log, spec, request),
        _ => (spec.handler)(ctx, request),
    };
    match ran {
        Ok(()) => {
            ctx.session.writes += spec.writes as u64;
            Outcome::Succeeded(index)
        }
        Err(error) => {
            tracing::debug!(
                client = ctx.session.client.id,
                command = spec.name,
                error = error.message(),
                "command failed"
            );
            ctx.reply.error(error.message());
            Outcome::Failed(index)
        }
    }
}

/// Runs a write command in the write log's order, and logs it if it succeeded: the log then
/// holds writes in the order they took effect, so replaying it rebuilds the same keyspace.
/// Inside EXEC the log's order is already held, for the whole transaction: the write joins the
/// transaction's batch, logged as one record when EXEC ends.
fn run_logged(
    ctx: &mut Ctx,
    log: &dyn WriteLog,
    spec: &CommandSpec,
    request: Request,
) -> CmdResult {
    if let Some(refusal) = log.refusal() {
        return Err(CmdError::Owned(refusal));
    }
    if ctx.session.in_exec {
        let ran = (spec.handler)(ctx, request);
        let mut batch = std::mem::take(&mut ctx.session.batch);
        note_logged(ctx.session, &mut batch, ran.is_ok(), &request);
        ctx.session.batch = batch;
        return ran;
    }
    let mut batch = std::mem::take(&mut ctx.session.batch);
    let mut ran = Ok(());
    let position = log.in_order(ctx.now, &mut batch, &mut |batch| {
        ran = (spec.handler)(ctx, request);
        note_logged(ctx.session, batch, ran.is_ok(), &request);
    });
    ctx.session.batch = batch;
    if position > 0 {
        ctx.session.logged_up_to = position;
    }
    ran
}

/// Puts what a write command did into the log's batch: the effects it noted, then itself if it
/// succeeded and is not logged by its effects alone. A failed command's effects are logged too:
/// they happened.
fn note_logged(session: &mut Session, batch: &mut RequestList, ran: bool, request: &Request) {
    let db = session.db;
    batch.append(&mut session.effects);
    if ran && !std::mem::take(&mut session.effects_only) {
        batch.push(db, request);
    }
    session.effects_only = false;
}

/// Runs a command read back from the append-only file: no checks beyond its arity (it passed
/// them when it first ran), and nothing logged again.
pub fn replay(ctx: &mut Ctx, request: Request) -> CmdResult {
    let spec = lookup(request.arg(0))
        .map(|index| &COMMANDS[index])
        .filter(|spec| spec.writes)
        .ok_or_else(|| CmdError::from("ERR not a write command"))?;
    let argc = request.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || argc < -spec.arity {
        return Err(CmdError::arity(spec.name));
    }
    ctx.session.replaying = true;
    let ran = (spec.handler)(ctx, request);
    ctx.session.replaying = false;
    ctx.session.effects.clear();
    ctx.session.effects_only = false;
    ran
}

/// A refused command inside MULTI makes the whole transaction fail at EXEC, as in Redis.
fn fail_transaction(ctx: &mut Ctx) {
    if let Some(queue) = ctx.session.transaction.as_mut() {
        queue.fail();
    }
}

/// Whether `request` is an EXEC that will run a transaction, which must execute in isolation.
pub fn is_exec(session: &Session, request: &Request) -> bool {
    session.transaction.is_some() && request.arg(0).eq_ignore_ascii_case(b"exec")
}

/// Redis's message: the name and the first arguments, each quoted, cut at 128 bytes.
fn unknown_command(request: Request) -> String {
    let name = request.arg(0);
    let mut args = String::new();
    for arg in request.args().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push('\'');
        args.push_str(&String::from_utf8_lossy(&arg[..arg.len().min(room)]));
        args.push_str("' ");
    }
    format!(
        "ERR unknown command '{}', with args beginning with: {args}",
        String::from_utf8_lossy(&name[..name.len().min(128)])
    )
}
