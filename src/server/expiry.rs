//! Active expiry: keys nobody reads again still have to go. Every tick sweeps a few shards of
//! each database, so the work per tick stays small however large the keyspace. A replica
//! sweeps by its primary's clock, as its stream shows it, not its own.

use super::{Shared, Stats};
use crate::store::now_ms;
use std::sync::Arc;
use std::time::Duration;

const TICK: Duration = Duration::from_millis(100);
const SHARDS_PER_TICK: usize = 8;

pub(super) async fn run(shared: Arc<Shared>) {
    let mut next_shard = 0;
    let mut interval = tokio::time::interval(TICK);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = shared.shutdown.requested() => return,
        }
        // A replica removes only what its primary's clock says expired: see `expiry_clock`.
        let now = shared.replication.expiry_clock(now_ms());
        // Writes to the keyspace happen inside a batch's isolation, so that pausing every
        // command pauses every write (a full sync's fork relies on it).
        let _batch = shared.isolation.shared();
        for db in shared.store.dbs() {
            let removed = db.sweep_expired(now, next_shard, SHARDS_PER_TICK);
            Stats::add(&shared.stats.expired_keys, removed as u64);
        }
        next_shard = next_shard.wrapping_add(SHARDS_PER_TICK);
        crate::memory::note_peak();
    }
}
