//! MULTI, EXEC, DISCARD, WATCH and UNWATCH. What MULTI does with every other command is
//! dispatch's (`dispatch.rs`): `no_multi` ones are refused (failing the transaction),
//! `NOT_QUEUED` ones run at once, the rest are checked (name, arity, authentication, memory) and
//! queued in the session's `Transaction`. EXEC runs them back to back while no other connection
//! executes anything (flagged `EXCLUSIVE`, it has the connection take the server's isolation
//! lock exclusively around it), and WATCH aborts EXEC if a watched key was written, deleted,
//! recreated or expired in between.

use super::context::Transaction;
use super::errors::*;
use super::spec::{bits, key, Group, KeySpec};
use super::{execute, CommandSpec, Ctx, Flags, Session, COMMANDS};
use crate::protocol::{Request, RequestList};
use std::time::Instant;

/// Whether the command at `index` of the table (None: unknown) runs a transaction or a script
/// now, which it must do while no other connection runs anything: a command flagged
/// `EXCLUSIVE`, EXEC inside MULTI and a script (EVAL, FCALL) anywhere. The connection then holds
/// the server's isolation lock exclusively around it.
pub fn runs_exclusively(session: &Session, index: Option<usize>) -> bool {
    index.is_some_and(|index| {
        let flags = COMMANDS[index].flags;
        flags.contains(Flags::EXCLUSIVE)
            && (session.transaction.is_some() || !flags.contains(Flags::NOT_QUEUED))
    })
}

pub(super) fn multi(ctx: &mut Ctx, _request: Request) -> CmdResult {
    if ctx.session.transaction.is_some() {
        return Err(MULTI_NESTED.into());
    }
    ctx.session.transaction = Some(Transaction::default());
    ctx.reply.ok();
    Ok(())
}

pub(super) fn discard(ctx: &mut Ctx, _request: Request) -> CmdResult {
    ctx.session
        .transaction
        .take()
        .ok_or(DISCARD_WITHOUT_MULTI)?;
    ctx.session.watched.clear();
    ctx.reply.ok();
    Ok(())
}

pub(super) fn exec(ctx: &mut Ctx, _request: Request) -> CmdResult {
    let transaction = ctx.session.transaction.take().ok_or(EXEC_WITHOUT_MULTI)?;
    let watched = std::mem::take(&mut ctx.session.watched);
    if transaction.failed {
        return Err(EXECABORT.into());
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
        return Err(WATCH_IN_MULTI.into());
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
