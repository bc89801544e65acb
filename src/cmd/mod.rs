//! Commands: one file per family, each declaring its commands in `spec.rs`'s terms (flags, keys,
//! categories, documentation, handler); here they become the one table that dispatch, COMMAND
//! and the transaction rules read. Each handler reads its arguments from the request, acts on
//! the store, and writes its reply; a handler that fails returns an error before writing
//! anything, and `execute` sends it.

mod admin;
mod args;
mod bitfield;
mod bits;
mod bloom;
mod client_info;
mod collection;
mod command;
mod connection;
mod context;
mod counters;
mod counting;
mod cuckoo;
mod diagnostics;
pub mod errors;
mod eviction;
mod extended;
mod filter_options;
mod filter_specs;
mod filters;
mod frontier;
mod frontier_requests;
mod hashes;
mod keys;
mod lists;
mod merge;
mod migration;
mod module;
pub(crate) mod prefetch;
mod pubsub;
mod replication;
mod runs;
mod sets;
mod spec;
mod strings;
#[cfg(test)]
mod tests;
mod transaction;
mod windowed;
mod zsets;

pub use client_info::{ClientFilter, ClientInfo, ClientKind, ClientType};
pub use context::{
    BlockOn, Ctx, ExitSave, LogPosition, PubSub, ReplicaHandshake, Replicating, RoleView,
    SaveError, Server, Session, SubscriptionKind, WaitForReplicas, WriteLog,
};
pub(crate) use runs::{execute_run, Run, MAX_RUN};
pub use spec::CommandSpec;
pub use transaction::is_exec;
use transaction::Transaction;

use crate::protocol::{Request, RequestList};
use errors::{CmdError, CmdResult};
use spec::Flags;
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
    /// Parked (see `BlockOn`): counted when it is served, times out or is unblocked, as in
    /// Redis.
    Blocked,
}

/// Every family's commands, in one table: dispatch, COMMAND and the transaction rules all read
/// it. A command's index in it is its number for per-command statistics.
const FAMILIES: &[&[CommandSpec]] = &[
    bloom::SPECS,
    counting::SPECS,
    cuckoo::SPECS,
    windowed::SPECS,
    frontier::SPECS,
    connection::SPECS,
    command::SPECS,
    admin::SPECS,
    module::SPECS,
    transaction::SPECS,
    keys::SPECS,
    migration::SPECS,
    strings::SPECS,
    counters::SPECS,
    bits::SPECS,
    bitfield::SPECS,
    lists::SPECS,
    sets::SPECS,
    zsets::SPECS,
    hashes::SPECS,
    diagnostics::SPECS,
    pubsub::SPECS,
    replication::SPECS,
];

pub static COMMANDS: [CommandSpec; spec::total(FAMILIES)] = spec::concat(FAMILIES);

/// The command names' index: open addressing over a multiplicative hash of the lower-cased name
/// read as four words, at most half full. Every request looks its name up here; SipHash and a
/// general map cost about 5% of a pipelined BF.ADD's time, and a byte-wise hash with a memcmp
/// still 4%; a probe here is a few multiplications and, almost always, one four-word compare.
struct NameIndex {
    /// Each slot holds a command's index in `COMMANDS` plus one; 0 is empty.
    slots: Box<[u16]>,
    /// Each command's name as `name_words` gives it, in `COMMANDS` order.
    names: Box<[NameWords]>,
}

/// A name of at most `MAX_NAME` bytes, lower-cased and zero-padded, as little-endian words,
/// with its length in the last byte (so that trailing NULs are no match).
type NameWords = [u64; 4];

const MAX_NAME: usize = 31;

/// The name's words, or None if it is empty or longer than any command's. Upper-case ASCII
/// letters become lower case eight bytes at a time, and nothing else changes.
fn name_words(name: &[u8]) -> Option<NameWords> {
    const LOW_BITS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    // Added to a byte's low seven bits, these set its high bit when it is at least 'A', and when
    // it is past 'Z'; no sum carries into the next byte.
    const FROM_A: u64 = 0x3f3f_3f3f_3f3f_3f3f;
    const PAST_Z: u64 = 0x2525_2525_2525_2525;
    if name.is_empty() || name.len() > MAX_NAME {
        return None;
    }
    let mut bytes = [0u8; MAX_NAME + 1];
    bytes[..name.len()].copy_from_slice(name);
    let mut words = [0u64; 4];
    for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
        let raw = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let low = raw & LOW_BITS;
        let upper = (low + FROM_A) & !(low + PAST_Z) & !raw & HIGH_BITS;
        *word = raw | (upper >> 2);
    }
    words[3] |= (name.len() as u64) << 56;
    Some(words)
}

impl NameIndex {
    fn build() -> NameIndex {
        let size = (COMMANDS.len() * 2).next_power_of_two();
        let mut slots = vec![0u16; size].into_boxed_slice();
        let mut names = Vec::with_capacity(COMMANDS.len());
        for (index, spec) in COMMANDS.iter().enumerate() {
            let words = name_words(spec.name.as_bytes()).expect("command names are short");
            let mut slot = slot_of(&words, size);
            while slots[slot] != 0 {
                slot = (slot + 1) & (size - 1);
            }
            slots[slot] = u16::try_from(index + 1).expect("fewer than 65535 commands");
            names.push(words);
        }
        NameIndex {
            slots,
            names: names.into_boxed_slice(),
        }
    }

    fn find(&self, name: &[u8]) -> Option<usize> {
        let words = name_words(name)?;
        let mask = self.slots.len() - 1;
        let mut slot = slot_of(&words, self.slots.len());
        loop {
            let index = usize::from(self.slots[slot]).checked_sub(1)?;
            if self.names[index] == words {
                return Some(index);
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// The home slot of a name in a table of `size` (a power of two) slots.
fn slot_of(words: &NameWords, size: usize) -> usize {
    const K: [u64; 4] = [
        0x9e37_79b9_7f4a_7c15,
        0xc2b2_ae3d_27d4_eb4f,
        0x1656_67b1_9e37_79f9,
        0x85eb_ca77_c2b2_ae63,
    ];
    let mixed = words
        .iter()
        .zip(K)
        .fold(0u64, |acc, (&word, k)| acc ^ word.wrapping_mul(k));
    let mixed = (mixed ^ (mixed >> 29)).wrapping_mul(K[0]);
    (mixed >> (64 - size.trailing_zeros())) as usize
}

fn name_index() -> &'static NameIndex {
    static INDEX: OnceLock<NameIndex> = OnceLock::new();
    INDEX.get_or_init(NameIndex::build)
}

/// Finds a command by name, in any case, without allocating.
pub fn lookup(name: &[u8]) -> Option<usize> {
    name_index().find(name)
}

/// Runs one request, writing exactly one reply (or none, for a successful SHUTDOWN). Inside
/// MULTI, a command is checked and queued instead.
pub fn execute(ctx: &mut Ctx, request: Request) -> Outcome {
    execute_found(ctx, request, lookup(request.arg(0)))
}

/// `execute` for a request whose name the caller has looked up already.
pub(crate) fn execute_found(ctx: &mut Ctx, request: Request, index: Option<usize>) -> Outcome {
    let outcome = dispatch(ctx, request, index);
    // CLIENT LIST shows the transaction as EXEC found it until EXEC ends, as Redis does.
    if !ctx.session.in_exec {
        let queued = ctx.session.transaction.as_ref().map(Transaction::len);
        ctx.session.client.set_transaction(queued);
    }
    outcome
}

fn dispatch(ctx: &mut Ctx, request: Request, index: Option<usize>) -> Outcome {
    let Some(index) = index else {
        transaction::fail(ctx);
        ctx.reply.error(&unknown_command(request));
        return Outcome::Unknown;
    };
    let spec = &COMMANDS[index];
    // As Redis, CLIENT LIST names EXEC rather than the commands it ran.
    if !ctx.session.in_exec {
        ctx.session.client.note_command(index, ctx.now);
    }
    if let Err(refusal) = admit(ctx, spec, request) {
        transaction::fail(ctx);
        ctx.reply.error(refusal.message());
        return Outcome::Rejected(index);
    }
    if let Some(queued) = transaction::queue(ctx, index, request) {
        return queued;
    }
    let ran = match ctx.server.write_log() {
        Some(log) if spec.writes() => run_logged(ctx, log, spec, request),
        _ => run_unlogged(ctx, spec, request),
    };
    match ran {
        Ok(()) if ctx.session.block_asked.is_some() => Outcome::Blocked,
        Ok(()) => {
            ctx.session.writes += spec.writes() as u64;
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

/// The checks every command passes before it runs or is queued, in Redis's order: arity,
/// authentication (unless flagged `no_auth`), memory (over `maxmemory`, keys are evicted as the
/// policy says; if none can go, a command flagged `denyoom` is refused), a disk that cannot keep
/// writes (MISCONF), and MULTI's refusal of `no_multi` commands.
fn admit(ctx: &mut Ctx, spec: &CommandSpec, request: Request) -> CmdResult {
    if !spec.arity_fits(request.len()) {
        return Err(CmdError::arity(spec.name));
    }
    if !spec.flags.contains(Flags::NO_AUTH) && ctx.session.must_authenticate(ctx.config()) {
        return Err(errors::NOAUTH.into());
    }
    let limit = ctx.config().maxmemory();
    if limit > 0 && eviction::over(ctx.server, limit) {
        // Inside EXEC the log's order is held for the whole transaction: its commands run on
        // what EXEC's own turn left, as in Redis.
        let room = match ctx.session.in_exec {
            true => eviction::Room::Exhausted,
            false => eviction::make_room(ctx, limit),
        };
        if room == eviction::Room::Exhausted && spec.flags.contains(Flags::DENYOOM) {
            return Err(errors::OOM.into());
        }
    }
    // As Redis: PING is refused too, so that a monitor sees the server cannot persist.
    if spec.writes() || spec.name == "ping" {
        if let Some(refusal) = ctx.server.write_refusal() {
            return Err(CmdError::Owned(refusal));
        }
    }
    if let Some(refusal) = ctx
        .server
        .role_refusal(spec.writes(), spec.flags.contains(Flags::STALE))
    {
        return Err(refusal.into());
    }
    // As Redis 7: a RESP3 client may run anything while subscribed, a RESP2 one cannot, as
    // its replies would be mistaken for messages; EXEC's commands were admitted when queued.
    if ctx.session.client.subscribed()
        && !ctx.session.in_exec
        && !ctx.reply.is_resp3()
        && !pubsub::allowed_when_subscribed(spec.name)
    {
        return Err(pubsub::refusal(spec.name));
    }
    transaction::admit(ctx, spec)
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
    if ctx.session.in_exec {
        let ran = (spec.handler)(ctx, request);
        let mut batch = std::mem::take(&mut ctx.session.batch);
        note_logged(ctx.session, &mut batch, ran.is_ok(), &request);
        ctx.session.batch = batch;
        return ran;
    }
    let mut ran = Ok(());
    in_log_order(ctx, log, &mut |ctx, batch| {
        ran = (spec.handler)(ctx, request);
        note_logged(ctx.session, batch, ran.is_ok(), &request);
    });
    ran
}

/// Runs `write` in the write log's order, with the batch it notes what to log in, and notes
/// where the log put it, for the replies to wait for.
fn in_log_order(
    ctx: &mut Ctx,
    log: &dyn WriteLog,
    write: &mut dyn FnMut(&mut Ctx, &mut RequestList),
) {
    let mut batch = std::mem::take(&mut ctx.session.batch);
    let position = log.in_order(ctx.now, &mut batch, &mut |batch| write(ctx, batch));
    ctx.session.batch = batch;
    ctx.session.note_logged(position);
}

/// Runs a command that nothing logs. What its handler noted for a log is dropped: a log can
/// start in the middle of a session (the first replica), and a later logged command must not
/// inherit it.
fn run_unlogged(ctx: &mut Ctx, spec: &CommandSpec, request: Request) -> CmdResult {
    let ran = (spec.handler)(ctx, request);
    forget_effects(ctx.session);
    ran
}

/// Drops what a handler noted for a log that is not written.
fn forget_effects(session: &mut Session) {
    session.effects.clear();
    session.effects_only = false;
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
        .filter(|spec| spec.writes())
        .ok_or_else(|| CmdError::from("ERR not a write command"))?;
    if !spec.arity_fits(request.len()) {
        return Err(CmdError::arity(spec.name));
    }
    ctx.session.replaying = true;
    let ran = (spec.handler)(ctx, request);
    ctx.session.replaying = false;
    forget_effects(ctx.session);
    ran
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
