//! What the many-core measurement (benches/scaling.rs) drives, public only to it (feature
//! `scaling-bench`): a connection's batch of pipelined requests minus the socket, the counts of
//! lock acquisitions that had to wait, and the striped counter.

use super::{blocking, Shared};
use crate::cmd::{self, Ctx, Outcome, Session};
use crate::observe::{Call, Stats, Tally};
use crate::protocol::{Limits, Protocol, Reply, RequestParser};
use crate::store::now_ms;
use crate::stripes::{lock_waits, Counter};
use std::sync::Arc;

/// One connection's state, as `client_io` keeps it between batches.
pub struct Connection {
    session: Session,
    reply: Reply,
    parser: RequestParser,
    tally: Tally,
}

impl Connection {
    pub fn new(shared: &Shared) -> Connection {
        Connection {
            session: Session::new(shared.clients.detached(shared.addr, now_ms()), true),
            reply: Reply::new(Protocol::Resp2),
            parser: RequestParser::new(Limits::default()),
            tally: Tally::default(),
        }
    }

    /// Does what a connection does for one batch, as `batch::execute_all` and the loop
    /// around it do: takes the isolation guard, runs every request of `input` through
    /// `cmd::execute` (the lookup, the checks, the keyspace's locks, the value, the write log
    /// when there is one), serves blocked clients after each, times each for commandstats,
    /// then adds the batch to the server's counters and flushes its commandstats tally. The
    /// replies are dropped. Returns how many requests ran; panics on one that failed.
    pub fn run_batch(&mut self, shared: &Arc<Shared>, input: &[u8]) -> u64 {
        let now = now_ms();
        let batch = shared.isolation.shared();
        let (mut consumed, mut commands) = (0, 0);
        let mut started = shared.clock.now();
        while let Some(request) = self.parser.parse(&input[consumed..]).expect("well formed") {
            let mut ctx = Ctx {
                server: shared,
                store: &shared.store,
                session: &mut self.session,
                reply: &mut self.reply,
                now,
            };
            let Outcome::Succeeded(index) = cmd::execute(&mut ctx, request) else {
                panic!("{}", String::from_utf8_lossy(self.reply.bytes()));
            };
            blocking::serve_ready(shared);
            let finished = shared.clock.now();
            let micros = shared.clock.micros(started, finished);
            started = finished;
            self.tally.record(index, Call::Succeeded, micros);
            // Read per command, as the connection reads it.
            std::hint::black_box(shared.config.slowlog_threshold_us());
            consumed += self.parser.take_consumed();
            commands += 1;
        }
        drop(batch);
        Stats::add(&shared.stats.net_input_bytes, input.len() as u64);
        Stats::add(&shared.stats.commands_processed, commands);
        self.tally.flush(&shared.commands);
        shared
            .saver
            .add_changes(std::mem::take(&mut self.session.writes));
        Stats::add(&shared.stats.net_output_bytes, self.reply.len() as u64);
        self.reply.clear();
        commands
    }
}

/// Lock acquisitions that found the lock held, since the last `reset_lock_waits`, and how long
/// writes held the append-only file's lock.
pub struct LockWaits {
    /// The keyspace's shard and value locks.
    pub keyspace: u64,
    /// The isolation stripes.
    pub isolation: u64,
    /// The append-only file's lock.
    pub log: u64,
    pub log_held_ns: u64,
}

pub fn reset_lock_waits() {
    for counter in [
        &lock_waits::KEYSPACE,
        &lock_waits::ISOLATION,
        &lock_waits::LOG,
        &lock_waits::LOG_HELD_NS,
    ] {
        counter.reset();
    }
}

pub fn lock_waits() -> LockWaits {
    LockWaits {
        keyspace: lock_waits::KEYSPACE.get(),
        isolation: lock_waits::ISOLATION.get(),
        log: lock_waits::LOG.get(),
        log_held_ns: lock_waits::LOG_HELD_NS.get(),
    }
}

/// The server's per-thread counter (`stripes::Counter`): each thread adds on a cache line of
/// its own.
#[derive(Default)]
pub struct StripedCounter(Counter);

impl StripedCounter {
    pub fn add(&self, n: u64) {
        self.0.add(n);
    }
}
