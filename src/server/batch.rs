//! One batch: every complete request a connection has read, run in order under the server's
//! isolation lock, each timed and counted for commandstats and SLOWLOG. Consecutive requests that
//! form a run (`cmd::runs`) run together; the look ahead (`cmd::prefetch`) requests the memory
//! of the filter commands coming; EXEC runs with the lock held exclusively; blocked clients that
//! a command made ready are served before the next command. The batch stops at a command that
//! hands its connection something to do (`cmd::After`).

use super::{blocking, outcomes, Shared};
use crate::cmd::{self, After, Ctx, Outcome, Session};
use crate::lua::ScriptKind;
use crate::observe::{CommandTime, Tally, Tick};
use crate::protocol::{Reply, Request, RequestParser};
use crate::store::now_ms;
use std::sync::{Arc, RwLockReadGuard};
use std::time::Duration;

/// Replies are written once this much is pending, before the rest of a pipeline executes, so a
/// pipeline of large replies (SCANDUMP chunks, say) never piles up in memory: a client that does
/// not read holds the server to this much.
pub(super) const MAX_PENDING_REPLY: usize = 16 * 1024 * 1024;

/// Executes every complete request in `input`, appending replies, until one hands the
/// connection something to do (`Session::after`) or the replies grow past `MAX_PENDING_REPLY`;
/// returns how many ran and how many bytes of `input` they took up. A protocol error ends the
/// batch with its reply, and the connection is to close (`After::Close`); so it is when the
/// server stopped.
///
/// Requests that form a run (`cmd::runs`) are gathered as they are parsed and run together
/// before anything after them.
pub(super) fn execute_all(
    shared: &Arc<Shared>,
    parser: &mut RequestParser,
    input: &[u8],
    session: &mut Session,
    reply: &mut Reply,
    tally: &mut Tally,
) -> (u64, usize) {
    // The lock first: a wait for it (behind an EXEC or a script) is not the first command's
    // time. While a script holds it past busy-reply-threshold, requests are answered without it.
    let mut consumed = 0;
    let mut commands = 0;
    let isolation = loop {
        if let Some(guard) = wait_for_isolation(shared) {
            break Some(guard);
        }
        match while_busy(shared, parser, &input[consumed..], session, reply) {
            WhileBusy::Answered(taken) => {
                consumed += taken;
                commands += 1;
                if session.after.is_some() {
                    return (commands, consumed);
                }
            }
            WhileBusy::Incomplete => return (commands, consumed),
            WhileBusy::Ended => {}
        }
    };
    let mut batch = Batch {
        shared,
        input,
        time: CommandTime::new(&shared.clock),
        started: shared.clock.now(),
        commands,
        isolation,
    };
    // The server stopped while this batch waited: nothing more runs.
    if shared.shutdown.is_stopping() {
        session.after = Some(After::Close);
        return (commands, consumed);
    }
    let mut run = cmd::Run::default();
    // The look ahead (`cmd::prefetch`): requests before `looked_to` have been looked at; once
    // parsing reaches `last_look`, where the latest look began, the next one is taken, so each
    // filter command's memory is requested a look's worth of requests before it runs. A look
    // that finds no filter command ends them for the batch.
    let mut looked_to = 0;
    let mut last_look = 0;
    let mut looking = true;
    loop {
        let authenticated = !session.must_authenticate(&shared.config);
        if looking && authenticated && consumed >= last_look {
            let from = looked_to.max(consumed);
            let db = shared.store.db(session.db);
            // Not the request about to run, when the look starts there.
            let skip = usize::from(from == consumed);
            let look = cmd::prefetch::look_ahead(
                db,
                batch.now(),
                &input[from..],
                skip,
                &mut session.hashed_ahead,
            );
            looking = look.hinted > 0;
            last_look = from;
            looked_to = from + look.covered;
        }
        parser.set_authenticated(authenticated);
        let more = match parser.parse(&input[consumed..]) {
            Ok(Some(request)) => {
                if !run.extend(request, input) {
                    batch.run(&mut run, session, reply, tally);
                    let index = cmd::lookup(request.arg(0));
                    if !index.is_some_and(|index| run.begin(index, request, input)) {
                        batch.one(request, index, session, reply, tally);
                    }
                }
                true
            }
            Ok(None) => false,
            Err(error) => {
                batch.run(&mut run, session, reply, tally);
                let message = error.to_string();
                let client = session.client.id;
                tracing::debug!(client, error = %message, "protocol error; closing");
                reply.error(&message);
                session.after = Some(After::Close);
                return (batch.commands, consumed);
            }
        };
        consumed += parser.take_consumed();
        if !more || session.after.is_some() || reply.len() >= MAX_PENDING_REPLY {
            batch.run(&mut run, session, reply, tally);
            return (batch.commands, consumed);
        }
    }
}

/// The isolation lock, shared; None once a script has held it past busy-reply-threshold. A
/// batch behind an EXEC or a short script waits as it would on the lock, a little longer at
/// most: the lock is tried again every few dozen microseconds, so that a script turning busy
/// is noticed.
fn wait_for_isolation(shared: &Shared) -> Option<RwLockReadGuard<'_, ()>> {
    const POLL: Duration = Duration::from_micros(50);
    let mut tries = 0u32;
    loop {
        if let Some(guard) = shared.isolation.try_shared() {
            return Some(guard);
        }
        if shared.scripts.busy().is_some() {
            return None;
        }
        tries += 1;
        if tries < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(POLL);
        }
    }
}

/// What became of the next request while a script was busy.
enum WhileBusy {
    /// Answered, in this many bytes of the input.
    Answered(usize),
    /// No complete request yet.
    Incomplete,
    /// The script ended first: the request is left to run as usual.
    Ended,
}

/// One request while a script runs past busy-reply-threshold, without the isolation lock (the
/// script holds it): SCRIPT KILL and FUNCTION KILL stop it; anything else gets Redis's BUSY
/// error.
fn while_busy(
    shared: &Shared,
    parser: &mut RequestParser,
    input: &[u8],
    session: &mut Session,
    reply: &mut Reply,
) -> WhileBusy {
    let request = match parser.parse(input) {
        Ok(Some(request)) => request,
        Ok(None) => return WhileBusy::Incomplete,
        Err(error) => {
            reply.error(&error.to_string());
            session.after = Some(After::Close);
            return WhileBusy::Answered(0);
        }
    };
    let kill = match (
        request.len(),
        request.arg(0).to_ascii_lowercase().as_slice(),
    ) {
        (2, b"script") if request.arg(1).eq_ignore_ascii_case(b"kill") => Some(ScriptKind::Eval),
        (2, b"function") if request.arg(1).eq_ignore_ascii_case(b"kill") => {
            Some(ScriptKind::Function)
        }
        _ => None,
    };
    if session.must_authenticate(&shared.config) {
        reply.error(cmd::errors::NOAUTH);
    } else if let Some(by) = kill {
        match shared.scripts.kill(by) {
            Ok(()) => reply.ok(),
            Err(line) => reply.error(line),
        }
    } else if let Some(running) = shared.scripts.busy() {
        reply.error(running.busy_error());
    } else {
        // Parsed again from the same place once the lock is held.
        parser.take_consumed();
        return WhileBusy::Ended;
    }
    WhileBusy::Answered(parser.take_consumed())
}

/// What one batch's commands share as they run.
struct Batch<'a> {
    shared: &'a Arc<Shared>,
    input: &'a [u8],
    /// The time each command runs at, which `now` gives.
    time: CommandTime,
    /// When the last command ended. Each command is timed from there (the first from the start
    /// of the batch), so the clock is read once per command; the time includes framing the
    /// request, which is small next to running it.
    started: Tick,
    commands: u64,
    /// Held for the whole batch, so that a transaction elsewhere never interleaves with it.
    isolation: Option<RwLockReadGuard<'a, ()>>,
}

impl Batch<'_> {
    /// The Unix time in milliseconds at which the next command starts: each command's own, so
    /// that one after a long one in the same batch judges time as if it came alone.
    fn now(&mut self) -> u64 {
        self.time.at(&self.shared.clock, self.started)
    }

    /// Runs one request, the command at `index` if the name was found.
    fn one(
        &mut self,
        request: Request,
        index: Option<usize>,
        session: &mut Session,
        reply: &mut Reply,
        tally: &mut Tally,
    ) {
        let shared = self.shared;
        let exclusive = cmd::runs_exclusively(session, index);
        let everyone = exclusive.then(|| {
            self.isolation = None;
            shared.isolation.exclusive()
        });
        // An EXEC's time is when it has every other command paused, after its wait.
        let now = match exclusive {
            true => self.time.at(&shared.clock, shared.clock.now()),
            false => self.now(),
        };
        let mut ctx = Ctx {
            server: shared,
            store: &shared.store,
            session: &mut *session,
            reply,
            now,
        };
        let outcome = cmd::execute_found(&mut ctx, request, index);
        if exclusive {
            drop(everyone);
            self.isolation = Some(shared.isolation.shared());
        }
        // Clients blocked on keys this command made ready are served before the next.
        blocking::serve_ready(shared);
        let micros = self.lap();
        for (outcome, micros) in session.exec_outcomes.drain(..) {
            outcomes::count(tally, outcome, micros);
        }
        self.counted(outcome, micros, request, session, tally);
    }

    /// Runs the requests of `run`, together if they may be, else one by one, and empties it.
    fn run(
        &mut self,
        run: &mut cmd::Run,
        session: &mut Session,
        reply: &mut Reply,
        tally: &mut Tally,
    ) {
        if run.is_empty() {
            return;
        }
        let shared = self.shared;
        let mut ends = [(self.started, false); cmd::MAX_RUN];
        let mut ended = 0;
        let now = self.now();
        let mut ctx = Ctx {
            server: shared,
            store: &shared.store,
            session: &mut *session,
            reply: &mut *reply,
            now,
        };
        let together = cmd::execute_run(&mut ctx, run, self.input, &mut |succeeded| {
            ends[ended] = (shared.clock.now(), succeeded);
            ended += 1;
        });
        let mut ranges = Default::default();
        if together {
            // A write may have made keys ready for blocked clients, as `one` serves them.
            blocking::serve_ready(shared);
            // What followed the last reply (logging the run, serving) is the last request's.
            ends[run.len() - 1].0 = shared.clock.now();
            for (at, &(end, succeeded)) in ends[..run.len()].iter().enumerate() {
                let request = run.request(self.input, at, &mut ranges);
                let micros = self.lap_to(end);
                let outcome = match succeeded {
                    true => Outcome::Succeeded(run.index()),
                    false => Outcome::Failed(run.index()),
                };
                self.counted(outcome, micros, request, session, tally);
            }
        } else {
            for at in 0..run.len() {
                let request = run.request(self.input, at, &mut ranges);
                self.one(request, Some(run.index()), session, reply, tally);
            }
        }
        run.clear();
    }

    /// The time since the last command ended, which is now.
    fn lap(&mut self) -> u64 {
        self.lap_to(self.shared.clock.now())
    }

    /// The time from the end of the last command to `finished`, when this one ended.
    fn lap_to(&mut self, finished: Tick) -> u64 {
        let micros = self.shared.clock.micros(self.started, finished);
        self.started = finished;
        micros
    }

    /// Counts a command that took `micros`, and logs it if slow.
    fn counted(
        &mut self,
        outcome: Outcome,
        micros: u64,
        request: Request,
        session: &Session,
        tally: &mut Tally,
    ) {
        outcomes::count(tally, outcome, micros);
        let threshold = self.shared.config.slowlog_threshold_us();
        if threshold >= 0 && micros >= threshold as u64 {
            log_slow(self.shared, session, request, micros);
        }
        self.commands += 1;
    }
}

fn log_slow(shared: &Shared, session: &Session, request: Request, micros: u64) {
    let client = &session.client;
    let name = client.name().unwrap_or_default();
    shared.slowlog.push(
        request,
        micros,
        now_ms() / 1000,
        (client.addr().to_string(), name),
        shared.config.settings().slowlog_max_len,
    );
}
