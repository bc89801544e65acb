//! When snapshots happen: on the save rules' schedule, on SAVE and BGSAVE, and at shutdown.
//! One snapshot runs at a time; its progress and outcome are what INFO persistence reports.

use super::logged_writes::LoggedWrites;
use super::Shared;
use crate::cmd::SaveError;
use crate::persist::compaction;
use crate::persist::snapshot::{self, Expired, SnapshotStats};
use crate::store::{now_ms, Store};
use crate::stripes::Counter;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// After a failed scheduled snapshot, wait this long before the schedule tries again, as Redis.
const RETRY_AFTER_FAILURE_MS: u64 = 5000;

pub struct Saver {
    /// Writes since the last snapshot: added to after every batch that wrote, so striped per
    /// thread, which also keeps it off the line of `refuses_writes`, read by every write.
    changes: Counter,
    in_progress: AtomicBool,
    /// BGSAVE SCHEDULE arrived while a snapshot was running: start another once it ends.
    pending: AtomicBool,
    last_save_ms: AtomicU64,
    last_attempt_ms: AtomicU64,
    last_ok: AtomicBool,
    last_duration_ms: AtomicU64,
    saves: AtomicU64,
    /// Writes are refused (MISCONF): `stop-writes-on-bgsave-error` is on, save rules are
    /// configured, there is no append-only file, and the last save failed. Kept here, updated
    /// when a save ends or a setting changes, so that a write command reads one flag.
    refuses_writes: AtomicBool,
    /// What a snapshot of the live keyspace records as its first log segment when there is no
    /// append-only file: the number after the last segment ever folded in.
    first_segment: AtomicU64,
}

impl Saver {
    pub fn new(now: u64) -> Saver {
        Saver {
            changes: Counter::default(),
            in_progress: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            last_save_ms: AtomicU64::new(now),
            last_attempt_ms: AtomicU64::new(0),
            last_ok: AtomicBool::new(true),
            last_duration_ms: AtomicU64::new(0),
            saves: AtomicU64::new(0),
            refuses_writes: AtomicBool::new(false),
            first_segment: AtomicU64::new(0),
        }
    }

    pub fn add_changes(&self, n: u64) {
        if n > 0 {
            self.changes.add(n);
        }
    }

    /// Writes since the last successful snapshot.
    pub fn changes(&self) -> u64 {
        self.changes.get()
    }

    pub fn in_progress(&self) -> bool {
        self.in_progress.load(Ordering::Relaxed)
    }

    pub fn last_save_ms(&self) -> u64 {
        self.last_save_ms.load(Ordering::Relaxed)
    }

    pub fn last_ok(&self) -> bool {
        self.last_ok.load(Ordering::Relaxed)
    }

    pub fn last_duration_ms(&self) -> u64 {
        self.last_duration_ms.load(Ordering::Relaxed)
    }

    pub fn set_first_segment(&self, segment: u64) {
        self.first_segment.store(segment, Ordering::Relaxed);
    }

    pub fn saves(&self) -> u64 {
        self.saves.load(Ordering::Relaxed)
    }

    pub fn refuses_writes(&self) -> bool {
        self.refuses_writes.load(Ordering::Relaxed)
    }

    /// With snapshots as the only copy on disk, a failed save means acknowledged writes could be
    /// lost: as Redis, refuse more of them until a save works. With the log on, the log keeps
    /// them, and only its own failures refuse writes.
    pub fn update_write_refusal(&self, shared: &Shared) {
        let settings = shared.config.settings();
        let refuse = shared.aof.is_none()
            && settings.stop_writes_on_bgsave_error
            && !settings.save.is_empty()
            && !self.last_ok();
        self.refuses_writes.store(refuse, Ordering::Relaxed);
    }

    /// Gives the place back when a claimed snapshot could not start.
    pub(super) fn unclaim(&self) {
        self.in_progress.store(false, Ordering::Release);
    }

    /// Takes the one place for a snapshot in progress.
    pub(super) fn claim(&self) -> Result<(), SaveError> {
        self.in_progress
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .map(|_| ())
            .map_err(|_| SaveError::InProgress)
    }

    /// Writes a snapshot on this thread (which it blocks for the duration).
    pub fn save(&self, shared: &Arc<Shared>) -> Result<SnapshotStats, SaveError> {
        self.claim()?;
        self.save_claimed(shared, Keyspace::Changing)
    }

    /// Writes a snapshot after `claim` succeeded, on the calling thread.
    pub(super) fn save_claimed(
        &self,
        shared: &Arc<Shared>,
        keyspace: Keyspace,
    ) -> Result<SnapshotStats, SaveError> {
        let (fs, dir) = (shared.fs.as_ref(), &shared.config.dir);
        self.record(shared, || match shared.aof.as_ref() {
            Some(aof) if keyspace == Keyspace::Paused => {
                // No command runs: the live keyspace holds exactly what the segments up to the
                // one just ended do. It keeps expired keys, in case a write lands in the new
                // segment after all.
                let ended = aof.rotate();
                aof.wait_sealed(ended).and_then(|()| {
                    let stats = snapshot::write_at(
                        fs,
                        &shared.store,
                        dir,
                        ended + 1,
                        Expired::Keep,
                        shared.replication.position(),
                    )?;
                    compaction::remove_segments_before(fs, dir, ended + 1)?;
                    Ok(stats)
                })
            }
            Some(aof) => {
                let scratch = Store::new(shared.config.databases, shared.config.shards);
                let mut applier = LoggedWrites::new(shared);
                let ended = aof.rotate();
                compaction::compact(fs, dir, aof, ended, &scratch, &mut applier)
            }
            // Copied while writes go on, a snapshot holds no one position of the stream.
            None => snapshot::write_at(
                fs,
                &shared.store,
                dir,
                self.first_segment.load(Ordering::Relaxed),
                Expired::Drop,
                match keyspace {
                    Keyspace::Paused => shared.replication.position(),
                    Keyspace::Changing => None,
                },
            ),
        })
    }

    /// Claims the saver, waiting while a save is in progress.
    fn claim_waiting(&self) {
        while self.claim().is_err() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs a claimed save and records its outcome (INFO persistence, the save schedule, the
    /// refusal of writes), then releases the claim.
    fn record(
        &self,
        shared: &Arc<Shared>,
        save: impl FnOnce() -> io::Result<SnapshotStats>,
    ) -> Result<SnapshotStats, SaveError> {
        let changes_before = self.changes();
        let started = now_ms();
        self.last_attempt_ms.store(started, Ordering::Relaxed);
        tracing::info!(dir = %shared.config.dir.display(), "snapshot started");
        let result = save();
        match &result {
            Ok(stats) => {
                self.changes.sub(changes_before);
                self.last_save_ms.store(now_ms(), Ordering::Relaxed);
                self.last_ok.store(true, Ordering::Relaxed);
                self.saves.fetch_add(1, Ordering::Relaxed);
                self.last_duration_ms
                    .store(stats.duration.as_millis() as u64, Ordering::Relaxed);
                tracing::info!(
                    keys = stats.keys,
                    bytes = stats.bytes,
                    seconds = stats.duration.as_secs_f64(),
                    "snapshot finished"
                );
            }
            Err(error) => {
                self.last_ok.store(false, Ordering::Relaxed);
                tracing::error!(%error, "snapshot failed; the previous snapshot is kept");
            }
        }
        self.update_write_refusal(shared);
        self.in_progress.store(false, Ordering::Release);
        result.map_err(SaveError::Failed)
    }

    /// Asks the schedule for a snapshot as soon as the one running ends.
    pub fn schedule(&self) {
        self.pending.store(true, Ordering::Relaxed);
    }

    /// Whether the save rules, a scheduled BGSAVE or the growth of the append-only file call for
    /// a snapshot now.
    pub(super) fn due(&self, shared: &Shared, now: u64) -> bool {
        if !self.in_progress() && self.pending.swap(false, Ordering::Relaxed) {
            return true;
        }
        let settings = shared.config.settings();
        let retry_wait = !self.last_ok()
            && now < self.last_attempt_ms.load(Ordering::Relaxed) + RETRY_AFTER_FAILURE_MS;
        let log_grew = shared.aof.as_ref().is_some_and(|aof| {
            aof.wants_compaction(
                settings.auto_aof_rewrite_percentage,
                settings.auto_aof_rewrite_min_size,
            )
        });
        // With the log on, writes are safe in it and a snapshot is a compaction, which reads the
        // whole data set back: the log's growth decides when, not the save rules.
        let rules_due = shared.aof.is_none()
            && settings.save.due(
                now.saturating_sub(self.last_save_ms()) / 1000,
                self.changes(),
            );
        !self.in_progress() && !retry_wait && (log_grew || rules_due)
    }
}

/// Whether commands may change the keyspace while a snapshot is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keyspace {
    Changing,
    /// Every command is paused: the server is stopping.
    Paused,
}

/// A snapshot taken with every command paused (the server stops, or a replica took over its
/// primary's data set): waits for one in progress, then writes its own. Blocks the calling
/// thread.
pub(super) fn save_paused(shared: &Arc<Shared>) -> io::Result<()> {
    shared.saver.claim_waiting();
    match shared.saver.save_claimed(shared, Keyspace::Paused) {
        Ok(_) => Ok(()),
        Err(SaveError::Failed(error)) => Err(error),
        Err(SaveError::InProgress) => Err(io::Error::other("a save is in progress")),
    }
}
