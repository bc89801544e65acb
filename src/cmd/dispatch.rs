//! Dispatch: one request from its name to its reply. `execute` looks the command up in the
//! table, runs the checks every command passes (arity, authentication, memory, a disk that
//! cannot keep writes, the replication role, Pub/Sub's and MULTI's rules), queues it inside
//! MULTI, and runs its handler, in the write log's order when it writes. Runs of one command
//! on one key (`runs.rs`) share its checks and logging; replay runs what the log holds.

use super::args::{command_name, Args};
use super::context::Transaction;
use super::errors::{self, CmdError, CmdResult};
use super::{
    eviction, lookup, pubsub, After, CommandSpec, Ctx, Flags, Outcome, Session, WriteLog, COMMANDS,
};
use crate::protocol::{Request, RequestList};

/// Runs one request, writing exactly one reply (or none, for a successful SHUTDOWN). Inside
/// MULTI, a command is checked and queued instead.
pub fn execute(ctx: &mut Ctx, request: Request) -> Outcome {
    execute_found(ctx, request, lookup(command_name(request)))
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
        fail_transaction(ctx);
        ctx.reply.error(&unknown_command(request));
        return Outcome::Unknown;
    };
    let spec = &COMMANDS[index];
    // As Redis, CLIENT LIST names EXEC rather than the commands it ran.
    if !ctx.session.in_exec {
        ctx.session.client.note_command(index, ctx.now);
    }
    if let Err(refusal) = admit(ctx, spec, request) {
        fail_transaction(ctx);
        ctx.reply.error(refusal.message());
        return Outcome::Rejected(index);
    }
    if let Some(queued) = queue_in_multi(ctx, index, request) {
        return queued;
    }
    let ran = match ctx.server.write_log() {
        Some(log) if spec.writes() => run_logged(ctx, log, spec, request),
        _ => run_unlogged(ctx, spec, request),
    };
    match ran {
        Ok(()) if matches!(ctx.session.after, Some(After::Block(_))) => Outcome::Blocked,
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
/// authentication (unless flagged `no_auth`), then sieved's refusal of commands only the log
/// holds (`LOG_ONLY`), start-up's load (`-LOADING` for a command not flagged `loading`; Redis
/// checks it after memory, but nothing may be evicted while the data loads), memory (over
/// `maxmemory`, keys are evicted as the policy says; if none can go, a command flagged
/// `denyoom` is refused), a disk that cannot keep writes (MISCONF), and MULTI's refusal of
/// `no_multi` commands.
pub(super) fn admit(ctx: &mut Ctx, spec: &CommandSpec, request: Request) -> CmdResult {
    if !spec.arity_fits(request.len()) {
        return Err(CmdError::arity(spec.name));
    }
    if !spec.flags.contains(Flags::NO_AUTH) && ctx.session.must_authenticate(ctx.config()) {
        return Err(errors::NOAUTH.into());
    }
    // What a client could send of these is unchecked against what made them: a lease time
    // far in the future moved the frontier's clock, and the log could no longer be replayed.
    if spec.flags.contains(Flags::LOG_ONLY) {
        return Err(errors::log_only(spec.name));
    }
    // Before memory: room made while the data loads would evict keys the log's writes need.
    if ctx.server.loading() && !runs_while_loading(spec) {
        return Err(errors::LOADING.into());
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
        return Err(errors::pubsub_refusal(spec.name));
    }
    admit_in_multi(ctx, spec)
}

/// Containers whose every subcommand Redis flags `loading`: a container itself carries no
/// flags (COMMAND INFO shows none, as Redis's), so their subcommands' are named here.
const CONTAINERS_RUN_WHILE_LOADING: [&str; 4] = ["client", "config", "pubsub", "slowlog"];

/// Whether a command runs while start-up loads the data, as Redis's flag `loading` says.
fn runs_while_loading(spec: &CommandSpec) -> bool {
    spec.flags.contains(Flags::LOADING) || CONTAINERS_RUN_WHILE_LOADING.contains(&spec.name)
}

/// Refuses a command flagged `no_multi` inside MULTI (SAVE, SHUTDOWN: a queued SHUTDOWN would
/// end the server halfway through EXEC's reply), as Redis does; `execute` then fails the
/// transaction.
fn admit_in_multi(ctx: &Ctx, spec: &CommandSpec) -> CmdResult {
    if ctx.session.transaction.is_some() && spec.flags.contains(Flags::NO_MULTI) {
        return Err(errors::NOT_IN_MULTI.into());
    }
    Ok(())
}

/// Inside MULTI, queues the admitted command `index` of the table and replies QUEUED, or
/// refuses it when the queue would grow too large (the transaction then fails). None when the
/// command runs now: no MULTI, or a command flagged `NOT_QUEUED`, which acts on the
/// transaction itself.
fn queue_in_multi(ctx: &mut Ctx, index: usize, request: Request) -> Option<Outcome> {
    let transaction = ctx.session.transaction.as_mut()?;
    if COMMANDS[index].flags.contains(Flags::NOT_QUEUED) {
        return None;
    }
    if transaction.queue(request) {
        ctx.reply.simple("QUEUED");
        Some(Outcome::Queued)
    } else {
        ctx.reply.error(errors::QUEUE_TOO_LARGE);
        Some(Outcome::Rejected(index))
    }
}

/// A refused command inside MULTI makes the whole transaction fail at EXEC, as in Redis.
fn fail_transaction(ctx: &mut Ctx) {
    if let Some(transaction) = ctx.session.transaction.as_mut() {
        transaction.fail();
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
pub(super) fn in_log_order(
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
pub(super) fn forget_effects(session: &mut Session) {
    session.effects.clear();
    session.effects_only = false;
}

/// Puts what a write command did into the log's batch: the effects it noted, then itself if it
/// succeeded and is not logged by its effects alone. A failed command's effects are logged too:
/// they happened.
pub(super) fn note_logged(
    session: &mut Session,
    batch: &mut RequestList,
    ran: bool,
    request: &Request,
) {
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
    let spec = lookup(command_name(request))
        .map(|index| &COMMANDS[index])
        .filter(|spec| spec.writes() || spec.flags.contains(Flags::LOGS_ITSELF))
        .ok_or_else(|| CmdError::from(errors::NOT_A_WRITE_COMMAND))?;
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
    let mut words = Args::new(request, 1);
    let name = words.name();
    let mut args = String::new();
    for arg in words.rest() {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push('\'');
        args.push_str(&String::from_utf8_lossy(&arg[..arg.len().min(room)]));
        args.push_str("' ");
    }
    errors::unknown_command(&name[..name.len().min(128)], &args)
}
