//! MULTI, EXEC, DISCARD, WATCH and UNWATCH, and what MULTI does with every other command, read
//! from the table's flags: `no_multi` ones are refused (failing the transaction), `NOT_QUEUED`
//! ones run at once, the rest are checked (name, arity, authentication, memory) and queued.
//! EXEC runs them back to back while no other connection executes anything (flagged
//! `EXCLUSIVE`, it has the connection take the server's isolation lock exclusively around it),
//! and WATCH aborts EXEC if a watched key was written, deleted, recreated or expired in
//! between.

use super::errors::*;
use super::spec::{bits, key, Group, KeySpec};
use super::{execute, CommandSpec, Ctx, Flags, Outcome, Session, COMMANDS};
use crate::protocol::{Request, RequestList};
use std::time::Instant;

/// Queued arguments are copied (the read buffer moves on); past this many bytes the
/// transaction is refused rather than allowed to grow without bound.
const MAX_QUEUED_BYTES: usize = 512 * 1024 * 1024;

#[derive(Default)]
pub struct Transaction {
    queued: RequestList,
    /// A queued command was refused: EXEC will answer EXECABORT.
    failed: bool,
}

impl Transaction {
    /// Queues a command; false (and the transaction marked failed) if it would exceed the cap.
    pub fn queue(&mut self, request: Request) -> bool {
        let size: usize = request.args().map(<[u8]>::len).sum();
        if self.queued.arg_bytes() + size > MAX_QUEUED_BYTES {
            self.failed = true;
            return false;
        }
        self.queued.push(0, &request);
        true
    }

    pub fn len(&self) -> usize {
        self.queued.len()
    }

    pub fn fail(&mut self) {
        self.failed = true;
    }
}

/// Refuses a command flagged `no_multi` inside MULTI (SAVE, SHUTDOWN: a queued SHUTDOWN would
/// end the server halfway through EXEC's reply), as Redis does; `execute` then fails the
/// transaction.
pub(super) fn admit(ctx: &Ctx, spec: &CommandSpec) -> CmdResult {
    if ctx.session.transaction.is_some() && spec.flags.contains(Flags::NO_MULTI) {
        return Err(NOT_IN_MULTI.into());
    }
    Ok(())
}

/// Inside MULTI, queues the admitted command `index` of the table and replies QUEUED, or
/// refuses it when the queue would grow too large (the transaction then fails). None when the
/// command runs now: no MULTI, or a command flagged `NOT_QUEUED`, which acts on the
/// transaction itself.
pub(super) fn queue(ctx: &mut Ctx, index: usize, request: Request) -> Option<Outcome> {
    let transaction = ctx.session.transaction.as_mut()?;
    if COMMANDS[index].flags.contains(Flags::NOT_QUEUED) {
        return None;
    }
    if transaction.queue(request) {
        ctx.reply.simple("QUEUED");
        Some(Outcome::Queued)
    } else {
        ctx.reply.error(QUEUE_TOO_LARGE);
        Some(Outcome::Rejected(index))
    }
}

/// A refused command inside MULTI makes the whole transaction fail at EXEC, as in Redis.
pub(super) fn fail(ctx: &mut Ctx) {
    if let Some(transaction) = ctx.session.transaction.as_mut() {
        transaction.fail();
    }
}

/// Whether the command at `index` of the table (None: unknown) runs a transaction now, which
/// it must do while no other connection runs anything: a command flagged `EXCLUSIVE` (EXEC)
/// inside MULTI. The connection then holds the server's isolation lock exclusively around it.
pub fn runs_exclusively(session: &Session, index: Option<usize>) -> bool {
    session.transaction.is_some()
        && index.is_some_and(|index| COMMANDS[index].flags.contains(Flags::EXCLUSIVE))
}

const NOT_IN_MULTI: &str = "ERR Command not allowed inside a transaction";

const QUEUE_TOO_LARGE: &str = "ERR transaction too large: more than 512 MiB of queued arguments";

pub(super) fn multi(ctx: &mut Ctx, _request: Request) -> CmdResult {
    if ctx.session.transaction.is_some() {
        return Err("ERR MULTI calls can not be nested".into());
    }
    ctx.session.transaction = Some(Transaction::default());
    ctx.reply.ok();
    Ok(())
}

pub(super) fn discard(ctx: &mut Ctx, _request: Request) -> CmdResult {
    ctx.session
        .transaction
        .take()
        .ok_or("ERR DISCARD without MULTI")?;
    ctx.session.watched.clear();
    ctx.reply.ok();
    Ok(())
}

pub(super) fn exec(ctx: &mut Ctx, _request: Request) -> CmdResult {
    let transaction = ctx
        .session
        .transaction
        .take()
        .ok_or("ERR EXEC without MULTI")?;
    let watched = std::mem::take(&mut ctx.session.watched);
    if transaction.failed {
        return Err("EXECABORT Transaction discarded because of previous errors.".into());
    }
    let store = &ctx.store;
    if !watched
        .iter()
        .all(|(db, key, token)| store.db(*db).unchanged_since(key, ctx.now, token))
    {
        ctx.reply.null_array();
        return Ok(());
    }
    ctx.reply.array(transaction.queued.len());
    match ctx.server.write_log() {
        // The whole transaction runs in the log's order and is logged as one record, so a
        // crash keeps all of its writes or none.
        Some(log) => {
            let mut batch = std::mem::take(&mut ctx.session.batch);
            let position = log.in_order(ctx.now, &mut batch, &mut |batch| {
                std::mem::swap(&mut ctx.session.batch, batch);
                run_queued(ctx, &transaction.queued);
                std::mem::swap(&mut ctx.session.batch, batch);
            });
            ctx.session.batch = batch;
            ctx.session.note_logged(position);
        }
        None => run_queued(ctx, &transaction.queued),
    }
    Ok(())
}

fn run_queued(ctx: &mut Ctx, queued: &RequestList) {
    ctx.session.in_exec = true;
    for (_, request) in queued.iter() {
        let started = Instant::now();
        let outcome = execute(ctx, request);
        let micros = started.elapsed().as_micros() as u64;
        ctx.session.exec_outcomes.push((outcome, micros));
    }
    ctx.session.in_exec = false;
}

pub(super) fn watch(ctx: &mut Ctx, request: Request) -> CmdResult {
    if ctx.session.transaction.is_some() {
        return Err("ERR WATCH inside MULTI is not allowed".into());
    }
    let db = ctx.session.db;
    for key in request.args().skip(1) {
        let token = ctx.store.db(db).watch(key, ctx.now);
        ctx.session.watched.push((db, key.to_vec(), token));
    }
    ctx.reply.ok();
    Ok(())
}

pub(super) fn unwatch(ctx: &mut Ctx, _request: Request) -> CmdResult {
    ctx.session.watched.clear();
    ctx.reply.ok();
    Ok(())
}

/// The transaction commands as Redis 7 declares them. `NOT_QUEUED` marks those MULTI runs at once.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "multi",
        1,
        Group::Transactions,
        "Starts a transaction.",
        multi,
    )
    .flags(bits![Flags:
        NOSCRIPT, LOADING, STALE, FAST, ALLOW_BUSY, NOT_QUEUED
    ])
    .acl(bits![Acl: TRANSACTION])
    .since("1.2.0")
    .complexity("O(1)"),
    CommandSpec::new(
        "exec",
        1,
        Group::Transactions,
        "Executes all commands in a transaction.",
        exec,
    )
    .flags(bits![Flags: NOSCRIPT, LOADING, STALE, SKIP_SLOWLOG, NOT_QUEUED, EXCLUSIVE])
    .acl(bits![Acl: TRANSACTION])
    .since("1.2.0")
    .complexity("Depends on commands in the transaction"),
    CommandSpec::new(
        "discard",
        1,
        Group::Transactions,
        "Discards a transaction.",
        discard,
    )
    .flags(bits![Flags:
        NOSCRIPT, LOADING, STALE, FAST, ALLOW_BUSY, NOT_QUEUED
    ])
    .acl(bits![Acl: TRANSACTION])
    .since("2.0.0")
    .complexity("O(N), when N is the number of queued commands"),
    CommandSpec::new(
        "watch",
        -2,
        Group::Transactions,
        "Monitors changes to keys to determine the execution of a transaction.",
        watch,
    )
    .flags(bits![Flags:
        NOSCRIPT, LOADING, STALE, FAST, ALLOW_BUSY, NOT_QUEUED
    ])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO], 1, -1, 1)])
    .acl(bits![Acl: TRANSACTION])
    .since("2.2.0")
    .complexity("O(1) for every key.")
    .args(&[key("key").multiple()]),
    CommandSpec::new(
        "unwatch",
        1,
        Group::Transactions,
        "Forgets about watched keys of a transaction.",
        unwatch,
    )
    .flags(bits![Flags: NOSCRIPT, LOADING, STALE, FAST, ALLOW_BUSY])
    .acl(bits![Acl: TRANSACTION])
    .since("2.2.0")
    .complexity("O(1)"),
];
