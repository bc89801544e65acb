//! How long the log's fsyncs take, for the metrics endpoint: apart from the log and its file
//! end, which both record into it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets `SyncTimes` counts syncs in, in microseconds; a last bucket
/// takes the slower ones.
pub const SYNC_BOUNDS_US: [u64; 10] = [
    100, 500, 1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000, 5_000_000,
];

/// How long the log's fsyncs took: a count, a total and a histogram, as the metrics endpoint
/// exposes them (a slow disk shows there before clients feel it under `appendfsync always`).
#[derive(Default)]
pub(crate) struct SyncTimes {
    count: AtomicU64,
    total_us: AtomicU64,
    last_us: AtomicU64,
    buckets: [AtomicU64; SYNC_BOUNDS_US.len() + 1],
}

/// `SyncTimes` read at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncFigures {
    pub count: u64,
    pub total_us: u64,
    pub last_us: u64,
    /// Syncs per bucket of `SYNC_BOUNDS_US` (not cumulative), the last past every bound.
    pub buckets: Vec<u64>,
}

impl SyncTimes {
    pub(super) fn record(&self, took: Duration) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let bucket = SYNC_BOUNDS_US
            .iter()
            .position(|&bound| micros <= bound)
            .unwrap_or(SYNC_BOUNDS_US.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.total_us.fetch_add(micros, Ordering::Relaxed);
        self.last_us.store(micros, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> SyncFigures {
        SyncFigures {
            count: self.count.load(Ordering::Relaxed),
            total_us: self.total_us.load(Ordering::Relaxed),
            last_us: self.last_us.load(Ordering::Relaxed),
            buckets: self
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
        }
    }
}
