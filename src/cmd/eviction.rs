//! Eviction: before a command runs while memory is over `maxmemory`, keys go as
//! `maxmemory-policy` says until it is under again (Redis's `performEvictions`). Each evicted
//! key is logged as a DEL in the write log's order, so that the append-only file and every
//! replica delete the same keys: eviction depends on sampling and on this process's memory,
//! which replay and replicas must not repeat. Replicas themselves never evict (Redis's default
//! `replica-ignore-maxmemory yes`): they delete what their primary evicted.

use super::random::next_random;
use super::{Ctx, Server};
use crate::protocol::RequestList;
use crate::store::EvictionPolicy;
use std::time::{Duration, Instant};

/// How long one command's evictions may take before the command runs anyway, as Redis's
/// default `maxmemory-eviction-tenacity` (10) allows; the next commands carry on evicting.
const TIME_LIMIT: Duration = Duration::from_micros(500);
/// Evictions between looks at the clock, as Redis's.
const CLOCK_EVERY: usize = 16;

/// How an attempt to get under `maxmemory` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Room {
    /// Under the limit, or evicting for as long as one command may and not done yet.
    Enough,
    /// Over the limit with nothing left that the policy may evict: commands that may allocate
    /// are refused.
    Exhausted,
}

/// Evicts until memory is under `limit`, the policy finds nothing more, or the time is up.
pub(super) fn make_room(ctx: &mut Ctx, limit: u64) -> Room {
    let settings = ctx.config().settings();
    let policy = settings.maxmemory_policy;
    if policy == EvictionPolicy::NoEviction {
        return Room::Exhausted;
    }
    if settings.replicaof.0.is_some() {
        return Room::Enough;
    }
    let samples = usize::try_from(settings.maxmemory_samples).unwrap_or(usize::MAX);
    let mut evicted = 0;
    let mut room = Room::Enough;
    let started = Instant::now();
    let server = ctx.server;
    let log = server.write_log();
    let logged = log.is_some();
    let mut evict = |batch: &mut RequestList| {
        while over(server, limit) {
            let Some((db, key)) = ctx.store.evict_one(policy, samples, ctx.now, next_random())
            else {
                room = Room::Exhausted;
                return;
            };
            if logged {
                batch.push_args(db, [&b"DEL"[..], &key]);
            }
            evicted += 1;
            if evicted % CLOCK_EVERY == 0 && started.elapsed() > TIME_LIMIT {
                return;
            }
        }
    };
    let mut batch = RequestList::default();
    match log {
        // The connection writes the deletions out with its replies (`Session::logged_up_to`).
        Some(log) => {
            let position = log.in_order(ctx.now, &mut batch, &mut evict);
            ctx.session.note_logged(position);
        }
        None => evict(&mut batch),
    }
    if evicted > 0 {
        ctx.server.count_evictions(evicted as u64);
        tracing::debug!(keys = evicted, policy = policy.name(), "evicted");
    }
    room
}

/// Whether the process uses more than `limit` bytes, leaving out what `Server::memory_not_counted`
/// names.
pub(super) fn over(server: &dyn Server, limit: u64) -> bool {
    (crate::memory::allocated() as u64).saturating_sub(server.memory_not_counted()) > limit
}
