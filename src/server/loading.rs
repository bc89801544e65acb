//! Start-up's load of the snapshot and the log, which runs while clients are already served, as
//! Redis's: commands flagged `loading` (INFO, ROLE, AUTH, HELLO, CONFIG, SHUTDOWN, SUBSCRIBE...)
//! run, every other is answered `-LOADING` (`cmd::Server::loading`), and INFO persistence shows
//! `loading:1` with how far the load is and how long it should take yet.

use crate::observe::LoadingState;
use crate::store::now_ms;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[derive(Default)]
pub(crate) struct Loading {
    active: AtomicBool,
    started_ms: AtomicU64,
    /// The snapshot's size, which the log's bytes come after.
    snapshot_bytes: AtomicU64,
    total_bytes: AtomicU64,
    loaded_bytes: AtomicU64,
}

impl Loading {
    /// The load starts, of a snapshot of `snapshot_bytes` and `total_bytes` in all.
    pub(crate) fn begin(&self, snapshot_bytes: u64, total_bytes: u64) {
        self.started_ms.store(now_ms(), Ordering::Relaxed);
        self.snapshot_bytes.store(snapshot_bytes, Ordering::Relaxed);
        self.total_bytes.store(total_bytes, Ordering::Relaxed);
        self.loaded_bytes.store(0, Ordering::Relaxed);
        self.active.store(true, Ordering::Release);
    }

    /// Recovery's progress: `done` of `total` bytes of the snapshot or of the log.
    pub(crate) fn progress(&self, of_snapshot: bool, done: u64, total: u64) {
        if of_snapshot {
            self.loaded_bytes.store(done, Ordering::Relaxed);
        } else {
            let snapshot = self.snapshot_bytes.load(Ordering::Relaxed);
            self.total_bytes.store(snapshot + total, Ordering::Relaxed);
            self.loaded_bytes.store(snapshot + done, Ordering::Relaxed);
        }
    }

    pub(crate) fn end(&self) {
        self.active.store(false, Ordering::Release);
    }

    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// INFO's view, as Redis computes it; None when no load runs.
    pub(crate) fn state(&self, now_ms: u64) -> Option<LoadingState> {
        if !self.active() {
            return None;
        }
        let started_ms = self.started_ms.load(Ordering::Relaxed);
        let total = self.total_bytes.load(Ordering::Relaxed);
        let loaded = self.loaded_bytes.load(Ordering::Relaxed).min(total);
        let elapsed_secs = now_ms.saturating_sub(started_ms) / 1000;
        let eta_secs = match elapsed_secs {
            0 => 1,
            elapsed => elapsed.saturating_mul(total - loaded) / (loaded + 1),
        };
        Some(LoadingState {
            start_time_secs: started_ms / 1000,
            total_bytes: total,
            loaded_bytes: loaded,
            loaded_perc: loaded as f64 * 100.0 / (total + 1) as f64,
            eta_secs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_counts_the_log_after_the_snapshot() {
        let loading = Loading::default();
        assert!(loading.state(now_ms()).is_none());
        loading.begin(1000, 1500);
        loading.progress(true, 500, 1000);
        let state = loading.state(now_ms()).expect("loading");
        assert_eq!((state.loaded_bytes, state.total_bytes), (500, 1500));
        loading.progress(false, 100, 600);
        let state = loading.state(now_ms() + 4000).expect("loading");
        assert_eq!((state.loaded_bytes, state.total_bytes), (1100, 1600));
        assert!(
            (state.loaded_perc - 68.7).abs() < 0.1,
            "{}",
            state.loaded_perc
        );
        assert!((1..=2).contains(&state.eta_secs), "{}", state.eta_secs);
        loading.end();
        assert!(loading.state(now_ms()).is_none());
    }
}
