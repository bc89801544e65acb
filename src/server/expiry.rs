//! Active expiry: keys nobody reads again still have to go, and time-windowed filters nobody
//! writes to still have to let their old slices go. Every tick sweeps a few shards of
//! each database, so the work per tick stays small however large the keyspace.
//!
//! Neither is logged, so neither may change what any write still to come sees: a primary sweeps
//! by its published clock (`Replication::publish_clock`), a time no batch still running began
//! before, and a replica by that clock as its primary's control records carry it. Sweeping by
//! the wall clock had let a batch that began earlier, still running, find gone a key it found
//! alive by its own clock, which a replica applying that batch's writes found alive: the two
//! then held different values for good.

use super::{Shared, Stats};
use crate::filter::Retired;
use crate::store::{now_ms, Value};
use std::sync::Arc;
use std::time::Duration;

const TICK: Duration = Duration::from_millis(100);
const SHARDS_PER_TICK: usize = 8;
/// Ticks between two publications of the clock: each waits for the batches in progress.
const TICKS_PER_PUBLISH: u64 = 10;

pub(super) async fn run(shared: Arc<Shared>) {
    let mut next_shard = 0;
    let mut ticks = 0u64;
    let mut interval = tokio::time::interval(TICK);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = shared.shutdown.requested() => return,
        }
        let replication = &shared.replication;
        if ticks % TICKS_PER_PUBLISH == 0 {
            let now = now_ms();
            shared.isolation.wait_for_batches_in_progress();
            replication.publish_clock(now);
        }
        ticks += 1;
        let now = replication.expiry_clock();
        let mut swept = false;
        // Writes to the keyspace happen inside a batch's isolation, so that pausing every
        // command pauses every write (a full sync's fork relies on it).
        let batch = shared.isolation.shared();
        for db in shared.store.dbs() {
            let removed = db.sweep_expired(now, next_shard, SHARDS_PER_TICK);
            swept |= removed > 0;
            Stats::add(&shared.stats.expired_keys, removed as u64);
            let mut retired = Retired::default();
            db.sweep_windowed(
                next_shard,
                SHARDS_PER_TICK,
                |value| matches!(value, Value::Windowed(filter) if filter.has_expired(now)),
                |value| {
                    if let Value::Windowed(filter) = value {
                        filter.expire(now, &mut retired);
                    }
                },
            );
            // Freeing a large array returns its pages to the system, which takes a moment:
            // not on a worker that serves clients.
            if !retired.is_empty() {
                swept = true;
                tokio::task::spawn_blocking(move || drop(retired));
            }
        }
        drop(batch);
        if swept {
            // Replicas sweep by the same clock as soon as they have it.
            replication.announce_clock();
        }
        next_shard = next_shard.wrapping_add(SHARDS_PER_TICK);
        crate::memory::note_peak();
    }
}
