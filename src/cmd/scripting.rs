//! Scripting as Redis 7.4 runs it: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, FUNCTION, FCALL
//! and FCALL_RO, on the Lua runtime of `crate::lua`.
//!
//! A script runs alone: its commands are flagged `EXCLUSIVE`, so the connection holds the
//! server's isolation lock exclusively around it, as around EXEC. What it calls goes through
//! `execute`, as EXEC's queued commands do (`Session::in_exec` set: no blocking waits, no
//! eviction halfway), after the checks Redis makes of a command called from a script. Its writes
//! are logged and replicated as their effects, one record for the whole script (as one
//! transaction), never as the script: replay and replicas apply what the script did, whatever it
//! read (`TIME`, `math.random`).

use super::args::{int, is, Args};
use super::context::After;
use super::dispatch::in_log_order;
use super::errors::*;
use super::script_engines::SyncedFunctions;
use super::script_replies::{parse_reply, write_reply};
use super::spec::{bits, command_table, find_subcommand, CommandSpec, Flags, KeySpec};
use super::{execute, lookup, Ctx, Scripts, Session, COMMANDS};
use crate::lua::{
    self, CommandRunner, LogLevel, ReplFlags, RunOutcome, ScriptFlags, ScriptKind, ScriptWatch,
};
use crate::protocol::{Protocol, Reply, RequestList};
use crate::store::Store;
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

fn scripts<'a>(ctx: &Ctx<'a>) -> Result<&'a Scripts, CmdError> {
    ctx.server
        .scripts()
        .ok_or(CmdError::Static(SCRIPTING_UNAVAILABLE))
}

/// A script's KEYS and ARGV.
type KeysAndArgs<'r> = (Vec<&'r [u8]>, Vec<&'r [u8]>);

/// `numkeys` and what follows it, as Redis's `evalGetKeys` reads them.
fn keys_and_args<'r>(request: &crate::protocol::Request<'r>) -> Result<KeysAndArgs<'r>, CmdError> {
    let numkeys = int(request.arg(2), NOT_INTEGER)?;
    let rest: Vec<&[u8]> = request.args().skip(3).collect();
    if numkeys > rest.len() as i64 {
        return Err(NUMKEYS_TOO_MANY.into());
    }
    if numkeys < 0 {
        return Err(NUMKEYS_NEGATIVE.into());
    }
    let (keys, args) = rest.split_at(numkeys as usize);
    Ok((keys.to_vec(), args.to_vec()))
}

/// Whether the script may write, from the command (`_RO`) and the flags it declares; Redis's
/// error when the two disagree.
fn read_only(flags: ScriptFlags, ro_command: bool) -> Result<bool, CmdError> {
    if flags.contains(ScriptFlags::EVAL_COMPAT_MODE) {
        return Ok(ro_command);
    }
    let no_writes = flags.contains(ScriptFlags::NO_WRITES);
    if ro_command && !no_writes {
        return Err(SCRIPT_WRITE_FLAG_RO.into());
    }
    Ok(no_writes)
}

fn eval(ctx: &mut Ctx, request: crate::protocol::Request) -> CmdResult {
    eval_generic(ctx, request, false, false)
}

fn eval_ro(ctx: &mut Ctx, request: crate::protocol::Request) -> CmdResult {
    eval_generic(ctx, request, false, true)
}

fn evalsha(ctx: &mut Ctx, request: crate::protocol::Request) -> CmdResult {
    eval_generic(ctx, request, true, false)
}

fn evalsha_ro(ctx: &mut Ctx, request: crate::protocol::Request) -> CmdResult {
    eval_generic(ctx, request, true, true)
}

fn eval_generic(
    ctx: &mut Ctx,
    request: crate::protocol::Request,
    by_sha: bool,
    ro_command: bool,
) -> CmdResult {
    let scripts = scripts(ctx)?;
    let (keys, args) = keys_and_args(&request)?;
    let mut engine = scripts.eval();
    let sha = match by_sha {
        true => request.arg(1).to_vec(),
        false => match engine.load(request.arg(1), lua::CompiledBy::Eval) {
            Ok(sha) => sha.to_vec(),
            Err(error) => return Err(error_of(&error)),
        },
    };
    let Some(flags) = engine.flags(&sha) else {
        return Err(lua::NOSCRIPT.into());
    };
    let read_only = read_only(flags, ro_command)?;
    let threshold = busy_threshold(ctx);
    let outcome = run_script(ctx, read_only, scripts.eval_watch.clone(), |runner| {
        engine.run(&sha, &keys, &args, runner, threshold)
    });
    answer(ctx, outcome)
}

fn fcall(ctx: &mut Ctx, request: crate::protocol::Request) -> CmdResult {
    fcall_generic(ctx, request, false)
}

fn fcall_ro(ctx: &mut Ctx, request: crate::protocol::Request) -> CmdResult {
    fcall_generic(ctx, request, true)
}

fn fcall_generic(ctx: &mut Ctx, request: crate::protocol::Request, ro_command: bool) -> CmdResult {
    let scripts = scripts(ctx)?;
    let (keys, args) = keys_and_args(&request)?;
    let mut engine = scripts.functions(ctx.store);
    let Some((_, function)) = engine.function(request.arg(1)) else {
        return Err(FUNCTION_NOT_FOUND.into());
    };
    let read_only = read_only(function.flags(), ro_command)?;
    let threshold = busy_threshold(ctx);
    let name = request.arg(1);
    let outcome = run_script(ctx, read_only, scripts.function_watch.clone(), |runner| {
        engine.call(name, &keys, &args, runner, threshold)
    });
    answer(ctx, outcome)
}

/// `busy-reply-threshold`: None (0) never calls a script busy.
fn busy_threshold(ctx: &Ctx) -> Option<Duration> {
    match ctx.config().settings().busy_reply_threshold {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    }
}

/// The script's reply to its caller: an error as the command's error (counted as a failed call,
/// as Redis counts it), anything else written out in the caller's protocol.
fn answer(ctx: &mut Ctx, outcome: RunOutcome) -> CmdResult {
    match &outcome.reply {
        lua::Reply::Error(_) => Err(error_of(&outcome.reply)),
        reply => {
            write_reply(ctx.reply, reply);
            Ok(())
        }
    }
}

/// An error reply of the Lua runtime as a command's error.
fn error_of(reply: &lua::Reply) -> CmdError {
    match reply {
        lua::Reply::Error(line) => CmdError::Owned(String::from_utf8_lossy(line).into_owned()),
        _ => CmdError::Static(SCRIPT_UNEXPECTED_REPLY),
    }
}

/// Runs `script` with a runner over this connection's session, as one unit: in the write log's
/// order (unless inside EXEC, which holds it already), its writes logged as one record. The
/// session's database is the caller's again afterwards, whatever the script SELECTed.
fn run_script(
    ctx: &mut Ctx,
    read_only: bool,
    watch: ScriptWatch,
    script: impl FnOnce(&mut dyn CommandRunner) -> RunOutcome,
) -> RunOutcome {
    let db = ctx.session.db;
    let was_in_exec = ctx.session.in_exec;
    ctx.session.in_exec = true;
    let mut script = Some(script);
    let mut outcome = None;
    let mut run = |server, store, session: &mut Session, now| {
        let mut runner = ScriptRunner {
            server,
            store,
            session,
            now,
            read_only,
            watch: watch.clone(),
            wrote: false,
            out: Reply::new(Protocol::Resp2),
            request: RequestList::default(),
        };
        if let Some(script) = script.take() {
            outcome = Some(script(&mut runner));
        }
    };
    match ctx.server.write_log() {
        Some(log) if !was_in_exec => {
            let (server, store, now) = (ctx.server, ctx.store, ctx.now);
            let mut batch = std::mem::take(&mut ctx.session.batch);
            let session = &mut *ctx.session;
            let position = log.in_order(now, &mut batch, &mut |batch| {
                std::mem::swap(&mut session.batch, batch);
                run(server, store, session, now);
                std::mem::swap(&mut session.batch, batch);
            });
            ctx.session.batch = batch;
            ctx.session.note_logged(position);
        }
        _ => run(ctx.server, ctx.store, ctx.session, ctx.now),
    }
    ctx.session.in_exec = was_in_exec;
    ctx.session.db = db;
    outcome.unwrap_or(RunOutcome {
        reply: lua::Reply::Null,
        error_already_counted: false,
    })
}

/// The command layer's side of a running script: `redis.call` and the rest.
struct ScriptRunner<'a> {
    server: &'a dyn super::Server,
    store: &'a Store,
    session: &'a mut Session,
    now: u64,
    read_only: bool,
    watch: ScriptWatch,
    /// The script has written: Redis lets its later writes through whatever the memory.
    wrote: bool,
    /// Each called command's reply, encoded as for a client, then read back.
    out: Reply,
    request: RequestList,
}

impl ScriptRunner<'_> {
    /// Redis's checks of a command called from a script, before it runs.
    fn refusal(&mut self, args: &[&[u8]]) -> Option<&'static str> {
        let Some(index) = lookup(args[0]) else {
            return Some(SCRIPT_UNKNOWN_COMMAND);
        };
        let spec = &COMMANDS[index];
        if !spec.arity_fits(args.len()) {
            return Some(SCRIPT_WRONG_ARGS);
        }
        if spec.flags.contains(Flags::NOSCRIPT) {
            return Some(SCRIPT_NOT_ALLOWED);
        }
        if spec.writes() {
            if self.read_only {
                return Some(SCRIPT_READ_ONLY);
            }
            if !self.wrote {
                if !self.watch.note_write() {
                    return Some(SCRIPT_KILLED);
                }
                self.wrote = true;
            }
        }
        None
    }
}

impl CommandRunner for ScriptRunner<'_> {
    fn call(&mut self, args: &[&[u8]], resp: u8) -> lua::Reply {
        if let Some(refusal) = self.refusal(args) {
            return lua::Reply::error(refusal);
        }
        self.request.clear();
        self.request
            .push_args(self.session.db, args.iter().copied());
        let Some((_, request)) = self.request.iter().next() else {
            return lua::Reply::error(SCRIPT_UNKNOWN_COMMAND);
        };
        self.out.clear();
        self.out.set_protocol(match resp {
            3 => Protocol::Resp3,
            _ => Protocol::Resp2,
        });
        let started = Instant::now();
        let mut ctx = Ctx {
            server: self.server,
            store: self.store,
            session: &mut *self.session,
            reply: &mut self.out,
            now: self.now,
        };
        let outcome = execute(&mut ctx, request);
        // A command that would hand work back to the connection (a wait, a block) does not
        // get to from inside a script: it has answered already.
        if !matches!(self.session.after, Some(After::Close)) {
            self.session.after = None;
        }
        let micros = started.elapsed().as_micros() as u64;
        self.session.exec_outcomes.push((outcome, micros));
        self.server.slowlog_script_call(request, micros);
        let bytes = self.out.bytes();
        let mut last = lua::Reply::Null;
        let mut at = 0;
        while at < bytes.len() {
            match parse_reply(bytes, &mut at) {
                Some(reply) => last = reply,
                None => break,
            }
        }
        last
    }

    fn log(&mut self, level: LogLevel, message: &[u8]) {
        let message = String::from_utf8_lossy(message);
        match level {
            LogLevel::Debug | LogLevel::Verbose => tracing::debug!(target: "script", "{message}"),
            LogLevel::Notice => tracing::info!(target: "script", "{message}"),
            LogLevel::Warning => tracing::warn!(target: "script", "{message}"),
        }
    }

    fn acl_check_cmd(&mut self, args: &[&[u8]]) -> Option<bool> {
        lookup(args.first()?).map(|_| true)
    }

    fn set_repl(&mut self, _flags: ReplFlags) {
        // Effects go to the log and replicas together: sieved has one stream for both.
    }

    fn on_slow_script(&mut self, elapsed: Duration) {
        tracing::warn!(
            "Slow script detected: still in execution after {} milliseconds. You can try killing \
             the script using the SCRIPT KILL command.",
            elapsed.as_millis()
        );
    }
}

enum ScriptSub {
    Load,
    Exists,
    Flush,
    Kill,
    Help,
}

const SCRIPT_SUBCOMMANDS: &[(&str, i32, ScriptSub)] = &[
    ("load", 3, ScriptSub::Load),
    ("exists", -3, ScriptSub::Exists),
    ("flush", -2, ScriptSub::Flush),
    ("kill", 2, ScriptSub::Kill),
    ("help", 2, ScriptSub::Help),
];

const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Print this help.",
];

fn script(ctx: &mut Ctx, request: crate::protocol::Request) -> CmdResult {
    let scripts = scripts(ctx)?;
    match find_subcommand(&request, "SCRIPT", SCRIPT_SUBCOMMANDS)? {
        ScriptSub::Load => {
            let sha = scripts
                .eval()
                .load(request.arg(2), lua::CompiledBy::ScriptLoad)
                .map_err(|e| error_of(&e))?;
            ctx.reply.bulk(&sha);
        }
        ScriptSub::Exists => {
            let engine = scripts.eval();
            ctx.reply.array(request.len() - 2);
            for sha in request.args().skip(2) {
                ctx.reply.int(i64::from(engine.exists(sha)));
            }
        }
        ScriptSub::Flush => {
            flush_mode(&request)?;
            scripts.eval().flush();
            ctx.reply.ok();
        }
        ScriptSub::Kill => {
            scripts.kill(ScriptKind::Eval).map_err(CmdError::Static)?;
            ctx.reply.ok();
        }
        ScriptSub::Help => help(ctx, SCRIPT_HELP),
    }
    Ok(())
}

/// SCRIPT FLUSH's and FUNCTION FLUSH's optional ASYNC or SYNC (both flush at once here).
fn flush_mode(request: &crate::protocol::Request) -> CmdResult {
    match request.len() {
        2 => Ok(()),
        3 if is(request.arg(2), "async") || is(request.arg(2), "sync") => Ok(()),
        3 => Err(SCRIPT_FLUSH_MODE.into()),
        _ => Err(SYNTAX.into()),
    }
}

fn help(ctx: &mut Ctx, lines: &[&str]) {
    ctx.reply.array(lines.len());
    lines.iter().for_each(|line| ctx.reply.simple(line));
}

enum FunctionSub {
    Load,
    List,
    Delete,
    Flush,
    Kill,
    Stats,
    Help,
}

const FUNCTION_SUBCOMMANDS: &[(&str, i32, FunctionSub)] = &[
    ("load", -3, FunctionSub::Load),
    ("list", -2, FunctionSub::List),
    ("delete", 3, FunctionSub::Delete),
    ("flush", -2, FunctionSub::Flush),
    ("kill", 2, FunctionSub::Kill),
    ("stats", 2, FunctionSub::Stats),
    ("help", 2, FunctionSub::Help),
];

const FUNCTION_HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "HELP",
    "    Print this help.",
];

fn function(ctx: &mut Ctx, request: crate::protocol::Request) -> CmdResult {
    let scripts = scripts(ctx)?;
    match find_subcommand(&request, "FUNCTION", FUNCTION_SUBCOMMANDS)? {
        FunctionSub::Load => {
            let mut args = Args::new(request, 2);
            let replace = args.check("replace");
            let code = args.required()?;
            args.finish(FUNCTION_LOAD_UNKNOWN_OPTION)?;
            let mut engine = live_engine(ctx, scripts);
            function_change(ctx, request, |ctx| {
                let libraries = ctx.store.functions();
                let name = match engine.as_mut() {
                    Some(engine) => {
                        let name = engine
                            .load(code, replace, Some(lua::FUNCTION_LOAD_TIMEOUT))
                            .map_err(|e| error_of(&e))?;
                        engine.in_step_at(libraries.insert(&name, code));
                        name
                    }
                    // It compiled when it was logged; the engine follows the table when next used.
                    None => {
                        let name =
                            lua::library_name(code).ok_or(CmdError::Static(LIBRARY_UNNAMED))?;
                        libraries.insert(&name, code);
                        name
                    }
                };
                ctx.reply.bulk(&name);
                Ok(())
            })?;
        }
        FunctionSub::List => function_list(ctx, scripts, request)?,
        FunctionSub::Delete => {
            let mut engine = live_engine(ctx, scripts);
            function_change(ctx, request, |ctx| {
                let name = request.arg(2);
                let libraries = ctx.store.functions();
                match engine.as_mut() {
                    Some(engine) => {
                        engine.delete(name).map_err(|e| error_of(&e))?;
                        engine.in_step_at(libraries.remove(name));
                    }
                    None => {
                        libraries.remove(name);
                    }
                }
                ctx.reply.ok();
                Ok(())
            })?;
        }
        FunctionSub::Flush => {
            flush_mode(&request).map_err(|_| CmdError::from(FUNCTION_FLUSH_MODE))?;
            let mut engine = live_engine(ctx, scripts);
            function_change(ctx, request, |ctx| {
                let generation = ctx.store.functions().clear();
                if let Some(engine) = engine.as_mut() {
                    engine.flush();
                    engine.in_step_at(generation);
                }
                ctx.reply.ok();
                Ok(())
            })?;
        }
        FunctionSub::Kill => {
            scripts
                .kill(ScriptKind::Function)
                .map_err(CmdError::Static)?;
            ctx.reply.ok();
        }
        FunctionSub::Stats => {
            let engine = scripts.functions(ctx.store);
            ctx.reply.map(2);
            ctx.reply.bulk(b"running_script");
            ctx.reply.null();
            ctx.reply.bulk(b"engines");
            ctx.reply.map(1);
            ctx.reply.bulk(b"LUA");
            ctx.reply.map(2);
            ctx.reply.bulk(b"libraries_count");
            ctx.reply.int(engine.libraries().count() as i64);
            ctx.reply.bulk(b"functions_count");
            ctx.reply.int(engine.functions_count() as i64);
        }
        FunctionSub::Help => help(ctx, FUNCTION_HELP),
    }
    Ok(())
}

/// The function engine a FUNCTION LOAD, DELETE or FLUSH changes with the store's libraries,
/// locked before the write log's order is taken, as FCALL locks it; None when replaying, which
/// changes the store's libraries alone (the store replayed into may not be the live one: a
/// compaction's).
fn live_engine<'s>(ctx: &Ctx, scripts: &'s Scripts) -> Option<MutexGuard<'s, SyncedFunctions>> {
    (!ctx.session.replaying).then(|| scripts.functions(ctx.store))
}

/// Makes a change to the function libraries (LOAD, DELETE, FLUSH) as a write: refused where
/// writes are (a replica, MISCONF), and logged and replicated as the request itself, in the
/// write log's order, once it succeeded. Replayed (the log, a primary's stream), the change
/// acts on the store's table alone, which the engine follows when it is next used.
fn function_change(
    ctx: &mut Ctx,
    request: crate::protocol::Request,
    change: impl FnOnce(&mut Ctx) -> CmdResult,
) -> CmdResult {
    if ctx.session.replaying {
        return change(ctx);
    }
    if let Some(refusal) = ctx.server.write_refusal() {
        return Err(CmdError::Owned(refusal));
    }
    if let Some(refusal) = ctx.server.role_refusal(true, false) {
        return Err(refusal.into());
    }
    let db = ctx.session.db;
    match ctx.server.write_log() {
        Some(log) if !ctx.session.in_exec => {
            let mut change = Some(change);
            let mut ran = Ok(());
            in_log_order(ctx, log, &mut |ctx, batch| {
                if let Some(change) = change.take() {
                    ran = change(ctx);
                    if ran.is_ok() {
                        batch.push(db, &request);
                    }
                }
            });
            ran
        }
        // EXEC holds the log's order: the change joins the transaction's record.
        Some(_) => {
            let ran = change(ctx);
            if ran.is_ok() {
                ctx.session.batch.push(db, &request);
            }
            ran
        }
        None => change(ctx),
    }
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE], libraries in name order.
fn function_list(ctx: &mut Ctx, scripts: &Scripts, request: crate::protocol::Request) -> CmdResult {
    let mut args = Args::new(request, 2);
    let mut pattern = None;
    let mut with_code = false;
    while let Some(word) = args.next() {
        if is(word, "withcode") && !with_code {
            with_code = true;
        } else if is(word, "libraryname") && pattern.is_none() {
            pattern = Some(args.next_or(FUNCTION_LIST_NO_NAME)?);
        } else {
            return Err(CmdError::Owned(format!(
                "{FUNCTION_LIST_UNKNOWN}{}",
                String::from_utf8_lossy(word)
            )));
        }
    }
    let engine = scripts.functions(ctx.store);
    let mut libraries: Vec<_> = engine
        .libraries()
        .filter(|l| pattern.is_none_or(|p| crate::store::glob_match(p, l.name(), false)))
        .collect();
    libraries.sort_by(|a, b| a.name().cmp(b.name()));
    ctx.reply.array(libraries.len());
    for library in libraries {
        ctx.reply.map(3 + usize::from(with_code));
        ctx.reply.bulk(b"library_name");
        ctx.reply.bulk(library.name());
        ctx.reply.bulk(b"engine");
        ctx.reply.bulk(library.engine().as_bytes());
        ctx.reply.bulk(b"functions");
        let mut functions: Vec<_> = library.functions().collect();
        functions.sort_by(|a, b| a.name().cmp(b.name()));
        ctx.reply.array(functions.len());
        for f in functions {
            ctx.reply.map(3);
            ctx.reply.bulk(b"name");
            ctx.reply.bulk(f.name());
            ctx.reply.bulk(b"description");
            match f.description() {
                Some(text) => ctx.reply.bulk(text),
                None => ctx.reply.null(),
            }
            ctx.reply.bulk(b"flags");
            let names: Vec<_> = f.flags().names().collect();
            ctx.reply.set(names.len());
            names
                .iter()
                .for_each(|name| ctx.reply.bulk(name.as_bytes()));
        }
        if with_code {
            ctx.reply.bulk(b"library_code");
            ctx.reply.bulk(library.code());
        }
    }
    Ok(())
}

/// The scripting commands as Redis 7.4 declares them; `EXCLUSIVE` runs a script while no other
/// connection runs anything.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Scripting:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "eval", -3, [NOSCRIPT, SKIP_MONITOR, MAY_REPLICATE, NO_MANDATORY_KEYS, STALE, EXCLUSIVE], SCRIPT_KEYS, [SLOW, SCRIPTING], eval, docs::EVAL;
    "evalsha", -3, [NOSCRIPT, SKIP_MONITOR, MAY_REPLICATE, NO_MANDATORY_KEYS, STALE, EXCLUSIVE], SCRIPT_KEYS, [SLOW, SCRIPTING], evalsha, docs::EVALSHA;
    "eval_ro", -3, [NOSCRIPT, SKIP_MONITOR, NO_MANDATORY_KEYS, STALE, READONLY, EXCLUSIVE], SCRIPT_KEYS, [SLOW, SCRIPTING], eval_ro, docs::EVAL_RO;
    "evalsha_ro", -3, [NOSCRIPT, SKIP_MONITOR, NO_MANDATORY_KEYS, STALE, READONLY, EXCLUSIVE], SCRIPT_KEYS, [SLOW, SCRIPTING], evalsha_ro, docs::EVALSHA_RO;
    "fcall", -3, [NOSCRIPT, SKIP_MONITOR, MAY_REPLICATE, NO_MANDATORY_KEYS, STALE, EXCLUSIVE], SCRIPT_KEYS, [SLOW, SCRIPTING], fcall, docs::FCALL;
    "fcall_ro", -3, [NOSCRIPT, SKIP_MONITOR, NO_MANDATORY_KEYS, STALE, READONLY, EXCLUSIVE], SCRIPT_KEYS, [SLOW, SCRIPTING], fcall_ro, docs::FCALL_RO;
    "script", -2, [NOSCRIPT], &[], [SLOW, SCRIPTING], script, docs::SCRIPT, subcommands(docs::SCRIPT_SUBCOMMANDS);
    "function", -2, [NOSCRIPT, LOGS_ITSELF], &[], [SLOW, SCRIPTING], function, docs::FUNCTION, subcommands(docs::FUNCTION_SUBCOMMANDS);
};

/// The keys a script names: Redis finds them by `numkeys`, which sieved's key specifications
/// cannot say; every word after it is taken as a key, read and written, as Redis assumes of them.
const SCRIPT_KEYS: &[KeySpec] = &[
    KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE], 3, -1, 1)
        .notes("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"),
];

/// What COMMAND DOCS says of each.
mod docs {
    use super::super::spec::{integer, key, one_of, pure_token, string, Docs};

    const SCRIPT_ARGS: &[super::super::spec::Arg] = &[
        string("script"),
        integer("numkeys"),
        key("key").optional().multiple(),
        string("arg").optional().multiple(),
    ];
    const SHA_ARGS: &[super::super::spec::Arg] = &[
        string("sha1"),
        integer("numkeys"),
        key("key").optional().multiple(),
        string("arg").optional().multiple(),
    ];
    const FUNCTION_ARGS: &[super::super::spec::Arg] = &[
        string("function"),
        integer("numkeys"),
        key("key").optional().multiple(),
        string("arg").optional().multiple(),
    ];
    const SCRIPT_COMPLEXITY: &str = "Depends on the script that is executed.";
    const FUNCTION_COMPLEXITY: &str = "Depends on the function that is executed.";

    pub(super) const EVAL: Docs = Docs::new("Executes a server-side Lua script.")
        .since("2.6.0")
        .complexity(SCRIPT_COMPLEXITY)
        .args(SCRIPT_ARGS);
    pub(super) const EVALSHA: Docs = Docs::new("Executes a server-side Lua script by SHA1 digest.")
        .since("2.6.0")
        .complexity(SCRIPT_COMPLEXITY)
        .args(SHA_ARGS);
    pub(super) const EVAL_RO: Docs = Docs::new("Executes a read-only server-side Lua script.")
        .since("7.0.0")
        .complexity(SCRIPT_COMPLEXITY)
        .args(SCRIPT_ARGS);
    pub(super) const EVALSHA_RO: Docs =
        Docs::new("Executes a read-only server-side Lua script by SHA1 digest.")
            .since("7.0.0")
            .complexity(SCRIPT_COMPLEXITY)
            .args(SHA_ARGS);
    pub(super) const FCALL: Docs = Docs::new("Invokes a function.")
        .since("7.0.0")
        .complexity(FUNCTION_COMPLEXITY)
        .args(FUNCTION_ARGS);
    pub(super) const FCALL_RO: Docs = Docs::new("Invokes a read-only function.")
        .since("7.0.0")
        .complexity(FUNCTION_COMPLEXITY)
        .args(FUNCTION_ARGS);
    pub(super) const SCRIPT: Docs = Docs::new("A container for Lua scripts management commands.")
        .since("2.6.0")
        .complexity("Depends on subcommand.");
    pub(super) const FUNCTION: Docs = Docs::new("A container for function commands.")
        .since("7.0.0")
        .complexity("Depends on subcommand.");

    const FLUSH_MODE: &[super::super::spec::Arg] = &[one_of(
        "async",
        &[pure_token("async", "ASYNC"), pure_token("sync", "SYNC")],
    )
    .optional()];

    pub(super) const SCRIPT_SUBCOMMANDS: &[(&str, Docs)] = &[
        (
            "script|help",
            Docs::new("Show helpful text about the different subcommands")
                .since("5.0.0")
                .complexity("O(1)"),
        ),
        (
            "script|kill",
            Docs::new("Kill the script currently in execution.")
                .since("2.6.0")
                .complexity("O(1)"),
        ),
        (
            "script|exists",
            Docs::new("Check existence of scripts in the script cache.")
                .since("2.6.0")
                .complexity(
                    "O(N) with N being the number of scripts to check (so checking a single \
                     script is an O(1) operation).",
                )
                .args(&[string("sha1").multiple()]),
        ),
        (
            "script|flush",
            Docs::new("Remove all the scripts from the script cache.")
                .since("2.6.0")
                .complexity("O(N) with N being the number of scripts in cache")
                .history(&[(
                    "6.2.0",
                    "Added the `ASYNC` and `SYNC` flushing mode modifiers.",
                )])
                .args(&[one_of(
                    "async",
                    &[pure_token("async", "ASYNC"), pure_token("sync", "SYNC")],
                )
                .since("6.2.0")
                .optional()]),
        ),
        (
            "script|load",
            Docs::new("Load the specified Lua script into the script cache.")
                .since("2.6.0")
                .complexity("O(N) with N being the length in bytes of the script body.")
                .args(&[string("script")]),
        ),
    ];

    pub(super) const FUNCTION_SUBCOMMANDS: &[(&str, Docs)] = &[
        (
            "function|flush",
            Docs::new("Deleting all functions")
                .since("7.0.0")
                .complexity("O(N) where N is the number of functions deleted")
                .args(FLUSH_MODE),
        ),
        (
            "function|load",
            Docs::new("Create a function with the given arguments (name, code, description)")
                .since("7.0.0")
                .complexity("O(1) (considering compilation time is redundant)")
                .args(&[
                    pure_token("replace", "REPLACE").optional(),
                    string("function-code"),
                ]),
        ),
        (
            "function|list",
            Docs::new("List information about all the functions")
                .since("7.0.0")
                .complexity("O(N) where N is the number of functions")
                .args(&[
                    string("library-name-pattern")
                        .token("LIBRARYNAME")
                        .optional(),
                    pure_token("withcode", "WITHCODE").optional(),
                ]),
        ),
        (
            "function|help",
            Docs::new("Show helpful text about the different subcommands")
                .since("7.0.0")
                .complexity("O(1)"),
        ),
        (
            "function|delete",
            Docs::new("Delete a function by name")
                .since("7.0.0")
                .complexity("O(1)")
                .args(&[string("library-name")]),
        ),
        (
            "function|stats",
            Docs::new(
                "Return information about the function currently running (name, description, \
                 duration)",
            )
            .since("7.0.0")
            .complexity("O(1)"),
        ),
        (
            "function|kill",
            Docs::new("Kill the function currently in execution.")
                .since("7.0.0")
                .complexity("O(1)"),
        ),
    ];
}
