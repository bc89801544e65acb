//! Blocked clients: the generic mechanism behind BLPOP, BZPOPMIN and any command that waits for
//! a key (see `cmd::BlockOn`), as Redis's `blocked.c` has it.
//!
//! A blocking command that finds nothing asks, through its session, to be parked on some keys
//! (`cmd::After::Block`). Its connection then hands its session, its reply buffer and a copy of
//! the command to this registry, and waits (reading its socket only to notice the client
//! leave). Every write that creates or replaces a waited key (or calls `Db::signal_ready`)
//! notes the key in the store; after each command, the connection that ran it calls
//! `serve_ready`, which walks each ready key's waiters in the order they blocked and, for each
//! whose `serves` accepts the value there now, runs its command again right there, with the
//! waiter's own session, and hands the session back with the reply. A command that still finds
//! nothing is parked again in its place. So clients are served first come, first served per
//! key, before the writer's next command runs, and a served pop is logged as the plain pop it
//! did, as in Redis.
//!
//! A waiter's state changes only under the registry's lock: parked (its session held here),
//! running (taken out by whoever serves it), then ended (served, timed out, unblocked, or
//! withdrawn by its closing connection) and handed back through a one-shot channel. A wait
//! ended while its command runs is ended once the command parks again.

use super::{outcomes, Shared};
use crate::cmd::errors::{NOW_REPLICA, UNBLOCKED};
use crate::cmd::{self, After, BlockOn, Ctx, Session};
use crate::observe::{Call, Tally};
use crate::protocol::{Reply, RequestList};
use crate::store::{now_ms, Store, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// What a parked connection gets back when its wait ends.
pub(super) struct Parked {
    pub(super) session: Session,
    /// The reply to the blocking command (none for `Ended::Withdrawn`).
    pub(super) reply: Reply,
    pub(super) ended: Ended,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// Its command ran again and replied; whoever ran it counted it.
    Served,
    /// The timeout passed, or CLIENT UNBLOCK ... TIMEOUT.
    TimedOut,
    /// Ended with this error (CLIENT UNBLOCK ... ERROR).
    Failed(&'static str),
    /// Ended with this error, and the connection closes after it.
    Disconnected(&'static str),
    /// Its own connection ended the wait, as it closes: no reply.
    Withdrawn,
}

impl Ended {
    /// How commandstats counts the parked command, ended so: None when whoever ran it again
    /// counted it (served), or when its connection withdrew it.
    pub(super) fn call(self) -> Option<Call> {
        match self {
            Ended::TimedOut => Some(Call::Succeeded),
            Ended::Failed(_) | Ended::Disconnected(_) => Some(Call::Failed),
            Ended::Served | Ended::Withdrawn => None,
        }
    }
}

/// A parked client's connection state, out of the registry while its command runs.
struct Held {
    session: Session,
    reply: Reply,
    request: RequestList,
}

struct Waiter {
    db: usize,
    /// Each once, in the order given.
    keys: Vec<Box<[u8]>>,
    serves: fn(&Value) -> bool,
    timed_out: fn(&mut Reply),
    /// None while its command runs.
    held: Option<Box<Held>>,
    done: Option<oneshot::Sender<Parked>>,
    /// How the wait ends once its running command parks again.
    cancel: Option<Ended>,
    /// One of its keys was signalled while its command ran: look at them again if it parks.
    recheck: bool,
    /// When its connection signals its keys itself (`BlockOn::wake_at_ms`).
    wake_at_ms: Option<u64>,
}

type KeyRef = (usize, Box<[u8]>);

#[derive(Default)]
struct Inner {
    waiters: HashMap<u64, Waiter>,
    /// Per waited key, the clients waiting on it, oldest first.
    queues: HashMap<KeyRef, VecDeque<u64>>,
    /// Keys being served now, each by one thread at a time (so that clients are served in
    /// order); true if it was signalled again meanwhile and needs another pass.
    serving: HashMap<KeyRef, bool>,
}

#[derive(Default)]
pub(crate) struct Blocking {
    /// Parked clients: INFO's `blocked_clients`. While 0, a command pays one load for this.
    parked: AtomicUsize,
    inner: Mutex<Inner>,
}

impl Blocking {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn parked(&self) -> usize {
        self.parked.load(Ordering::Relaxed)
    }

    /// Parks the client: its wait ends through the returned channel. The caller then calls
    /// `serve_ready`, which looks at the keys again: a write may have come between the
    /// command's look and now.
    pub(super) fn park(
        &self,
        store: &Store,
        session: Session,
        reply: Reply,
        block: BlockOn,
    ) -> oneshot::Receiver<Parked> {
        let BlockOn {
            keys,
            serves,
            timed_out,
            request,
            wake_at_ms,
            ..
        } = block;
        let (done, receiver) = oneshot::channel();
        let id = session.client.id;
        let db = session.db;
        let mut unique: Vec<Box<[u8]>> = Vec::with_capacity(keys.len());
        for key in keys {
            if !unique.iter().any(|seen| **seen == *key) {
                unique.push(key.into_boxed_slice());
            }
        }
        session.client.set_blocked(true);
        let mut inner = self.lock();
        for key in &unique {
            let queue = inner.queues.entry((db, key.clone())).or_default();
            queue.push_back(id);
            store.db(db).add_waiter(key);
            store.db(db).signal_ready(key);
        }
        let waiter = Waiter {
            db,
            keys: unique,
            serves,
            timed_out,
            held: Some(Box::new(Held {
                session,
                reply,
                request,
            })),
            done: Some(done),
            cancel: None,
            recheck: false,
            wake_at_ms,
        };
        inner.waiters.insert(id, waiter);
        self.parked.fetch_add(1, Ordering::Relaxed);
        receiver
    }

    /// When the parked client's command wants to run again whatever is written (see
    /// `BlockOn::wake_at_ms`); None if never, or if it is not parked.
    pub(super) fn wake_at_ms(&self, id: u64) -> Option<u64> {
        self.lock()
            .waiters
            .get(&id)
            .and_then(|waiter| waiter.wake_at_ms)
    }

    /// Signals the parked client's keys, as a write to them would: its connection does so at
    /// `wake_at_ms`, then serves them, so that it runs again in its place among their waiters.
    pub(super) fn signal_own_keys(&self, store: &Store, id: u64) {
        let inner = self.lock();
        if let Some(waiter) = inner.waiters.get(&id) {
            let db = store.db(waiter.db);
            waiter.keys.iter().for_each(|key| db.signal_ready(key));
        }
    }

    /// Ends the client's wait from its own connection (`Ended::TimedOut` or `Withdrawn`): the
    /// state, with the timeout reply written, if it is parked; None if its command runs now or
    /// its wait already ended, when the outcome comes through its channel.
    pub(super) fn withdraw(&self, store: &Store, id: u64, why: Ended) -> Option<Parked> {
        let mut inner = self.lock();
        let waiter = inner.waiters.get_mut(&id)?;
        if waiter.held.is_none() {
            waiter.cancel.get_or_insert(why);
            return None;
        }
        let (_, parked) = self.end(&mut inner, store, id, why)?;
        Some(parked)
    }

    /// CLIENT UNBLOCK: ends a parked client's wait with its timeout reply or (`error`) the
    /// UNBLOCKED error; false if the client is not parked.
    pub(super) fn unblock(&self, store: &Store, id: u64, error: bool) -> bool {
        let why = if error {
            Ended::Failed(UNBLOCKED)
        } else {
            Ended::TimedOut
        };
        let mut inner = self.lock();
        let Some(waiter) = inner.waiters.get_mut(&id) else {
            return false;
        };
        if waiter.cancel.is_some() {
            return false;
        }
        if waiter.held.is_none() {
            waiter.cancel = Some(why);
            return true;
        }
        if let Some((done, parked)) = self.end(&mut inner, store, id, why) {
            deliver(done, parked);
        }
        true
    }

    /// Ends every wait, with an error, closing the connections, as Redis does when the server
    /// becomes a replica: what they wait for may now never come, or come from elsewhere.
    pub(super) fn disconnect_all(&self, store: &Store) {
        let mut inner = self.lock();
        let ids: Vec<u64> = inner.waiters.keys().copied().collect();
        for id in ids {
            let Some(waiter) = inner.waiters.get_mut(&id) else {
                continue;
            };
            if waiter.held.is_none() {
                waiter.cancel = Some(Ended::Disconnected(NOW_REPLICA));
            } else if let Some((done, parked)) =
                self.end(&mut inner, store, id, Ended::Disconnected(NOW_REPLICA))
            {
                deliver(done, parked);
            }
        }
    }

    /// Removes a waiter whose state is held here, writing the reply `why` calls for.
    fn end(
        &self,
        inner: &mut Inner,
        store: &Store,
        id: u64,
        why: Ended,
    ) -> Option<(Option<oneshot::Sender<Parked>>, Parked)> {
        let mut waiter = self.unregister(inner, store, id)?;
        let held = waiter.held.take()?;
        let Held {
            session, mut reply, ..
        } = *held;
        match why {
            Ended::TimedOut => (waiter.timed_out)(&mut reply),
            Ended::Failed(message) | Ended::Disconnected(message) => reply.error(message),
            Ended::Served | Ended::Withdrawn => {}
        }
        Some((
            waiter.done.take(),
            Parked {
                session,
                reply,
                ended: why,
            },
        ))
    }

    fn unregister(&self, inner: &mut Inner, store: &Store, id: u64) -> Option<Waiter> {
        let waiter = inner.waiters.remove(&id)?;
        for key in &waiter.keys {
            let slot = (waiter.db, key.clone());
            if let Some(queue) = inner.queues.get_mut(&slot) {
                queue.retain(|&waiting| waiting != id);
                if queue.is_empty() {
                    inner.queues.remove(&slot);
                }
            }
            store.db(waiter.db).remove_waiter(key);
        }
        if let Some(held) = &waiter.held {
            held.session.client.set_blocked(false);
        }
        self.parked.fetch_sub(1, Ordering::Relaxed);
        Some(waiter)
    }

    /// Takes a waiter's state out to run its command, if the value at the key now serves it
    /// and the client is still there.
    fn take_if_served(
        &self,
        inner: &mut Inner,
        store: &Store,
        id: u64,
        (db, key): &KeyRef,
        now: u64,
    ) -> Option<Box<Held>> {
        let waiter = inner.waiters.get_mut(&id)?;
        let Some(held) = waiter.held.as_ref() else {
            // Its command runs for another key now: it looks again if it parks again.
            waiter.recheck = true;
            return None;
        };
        if held.session.client.is_killed() || waiter.cancel.is_some() {
            return None;
        }
        let serves = waiter.serves;
        let served = store
            .db(*db)
            .get(key, now, |value| value.is_some_and(serves));
        if served {
            waiter.held.take()
        } else {
            None
        }
    }

    /// After a waiter's command ran: parks it again in its place if it asked to (`reparked`, what
    /// it asked this time) and its wait was not ended meanwhile, else ends the wait.
    fn after_run(&self, store: &Store, id: u64, held: Box<Held>, reparked: Option<Box<BlockOn>>) {
        let mut inner = self.lock();
        let Some(waiter) = inner.waiters.get_mut(&id) else {
            return;
        };
        let why = match (reparked, waiter.cancel) {
            (None, _) => Ended::Served,
            (Some(_), Some(why)) => why,
            (Some(again), None) => {
                waiter.wake_at_ms = again.wake_at_ms;
                if std::mem::take(&mut waiter.recheck) {
                    let db = store.db(waiter.db);
                    waiter.keys.iter().for_each(|key| db.signal_ready(key));
                }
                waiter.held = Some(held);
                return;
            }
        };
        waiter.held = Some(held);
        if let Some((done, parked)) = self.end(&mut inner, store, id, why) {
            deliver(done, parked);
        }
    }
}

/// Hands an ended wait back to its connection, unless the connection is gone (then the state
/// is dropped here).
fn deliver(done: Option<oneshot::Sender<Parked>>, parked: Parked) {
    if let Some(done) = done {
        // Err: the connection's task ended meanwhile; it took the client with it.
        let _ = done.send(parked);
    }
}

/// Serves the clients waiting on keys that writes made ready, until none is left: called after
/// every command (and every write applied from a primary), by the connection that ran it.
/// The caller holds a batch's isolation guard, as for any command.
pub(super) fn serve_ready(shared: &Arc<Shared>) {
    if shared.blocking.parked() == 0 || shared.shutdown.is_stopping() {
        return;
    }
    let mut tally = Tally::default();
    loop {
        let mut ready = Vec::new();
        for (index, db) in shared.store.dbs().enumerate() {
            ready.extend(db.take_ready().into_iter().map(|key| (index, key)));
        }
        if ready.is_empty() {
            break;
        }
        for slot in ready {
            serve_key(shared, slot, &mut tally);
        }
    }
    tally.flush(&shared.commands);
}

/// Serves the clients waiting on one key, oldest first, each at most once a pass, as Redis's
/// `handleClientsBlockedOnKey`. One thread serves a key at a time; another that finds it being
/// served leaves it another pass.
fn serve_key(shared: &Arc<Shared>, slot: KeyRef, tally: &mut Tally) {
    let blocking = &shared.blocking;
    {
        let mut inner = blocking.lock();
        if !inner.queues.contains_key(&slot) {
            return;
        }
        if let Some(again) = inner.serving.get_mut(&slot) {
            *again = true;
            return;
        }
        inner.serving.insert(slot.clone(), false);
    }
    loop {
        let waiting: Vec<u64> = {
            let inner = blocking.lock();
            inner
                .queues
                .get(&slot)
                .into_iter()
                .flatten()
                .copied()
                .collect()
        };
        for id in waiting {
            let now = now_ms();
            let taken = {
                let mut inner = blocking.lock();
                blocking.take_if_served(&mut inner, &shared.store, id, &slot, now)
            };
            if let Some(mut held) = taken {
                let reparked = run(shared, &mut held, tally);
                blocking.after_run(&shared.store, id, held, reparked);
            }
        }
        let mut inner = blocking.lock();
        if inner.serving.get(&slot) == Some(&true) {
            inner.serving.insert(slot.clone(), false);
        } else {
            inner.serving.remove(&slot);
            return;
        }
    }
}

/// Runs a waiter's command again, counting it if it ended; what it asked if it parked again.
fn run(shared: &Arc<Shared>, held: &mut Held, tally: &mut Tally) -> Option<Box<BlockOn>> {
    let Held {
        session,
        reply,
        request,
    } = held;
    let (_, request) = request.iter().next()?;
    let started = shared.clock.now();
    let mut ctx = Ctx {
        server: shared,
        store: &shared.store,
        session,
        reply,
        now: now_ms(),
    };
    let outcome = cmd::execute(&mut ctx, request);
    let micros = shared.clock.micros(started, shared.clock.now());
    outcomes::count(tally, outcome, micros);
    match session.after.take() {
        Some(After::Block(again)) => Some(again),
        // A blocking command asks nothing else of its connection.
        _ => None,
    }
}
