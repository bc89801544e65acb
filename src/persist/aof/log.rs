//! The log as commands see it: every write command that succeeded, in the order it ran, with the
//! time it ran at (the format is in `format.rs`).
//!
//! Commands append to a buffer in memory while they hold the log's lock, so the log's order is
//! the order in which writes changed the store; one writer thread (`writer.rs`) moves the buffer
//! to disk. With `appendfsync always` it syncs after every write it makes and publishes how far
//! the file is durable: connections wait for that before they send their replies, so the writes
//! of every client that arrived during one sync share the next one (group commit).

use super::file_end::{FileEnd, OpenSegment, State};
use super::sync_times::SyncTimes;
use crate::config::Fsync;
use crate::persist::fs::FileSystem;
#[cfg(feature = "scaling-bench")]
use crate::stripes::lock_waits;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::watch;

/// What happens when the log cannot be written and acknowledged writes would be lost: the
/// server exits (as Redis does with `appendfsync always`); a test records it instead.
pub type OnFatal = Box<dyn Fn(&io::Error) + Send + Sync>;

/// The log as commands and the writer thread share it.
pub struct Aof {
    pub(super) dir: PathBuf,
    pub(super) fs: Arc<dyn FileSystem>,
    fsync: AtomicU8,
    pub(super) state: Mutex<State>,
    pub(super) wake: Condvar,
    /// The segment being written and the sync thread's handle, while the writer thread runs.
    pub(super) end: Mutex<Option<FileEnd>>,
    /// How far the log is as safe as the fsync policy promises before a reply (see
    /// `wait_durable`): a position in the log.
    pub(super) durable: watch::Sender<u64>,
    /// Set while writing to the file fails; write commands are then refused.
    failing: Mutex<Option<String>>,
    has_failed: AtomicBool,
    pub(super) on_fatal: OnFatal,
    /// The last segment that is complete on disk and will not be written again.
    pub(super) sealed: AtomicU64,
    /// Size of the live segments right after the last compaction, for the growth rule.
    base_bytes: AtomicU64,
    /// Compactions that folded the log into a snapshot: INFO's `aof_rewrites`.
    compactions: AtomicU64,
    /// How long the syncs of the file took, for INFO and the metrics endpoint.
    pub(crate) sync_times: SyncTimes,
    started: AtomicBool,
    pub(super) stopped: Mutex<bool>,
    pub(super) stopped_signal: Condvar,
}

impl Aof {
    pub fn new(dir: PathBuf, fsync: Fsync, fs: Arc<dyn FileSystem>, on_fatal: OnFatal) -> Aof {
        Aof {
            dir,
            fs,
            fsync: AtomicU8::new(fsync as u8),
            state: Mutex::new(State {
                buffer: Vec::new(),
                appended: 0,
                segment: 0,
                rotate_at: None,
                live_bytes: 0,
                writer_waiting: false,
                closing: false,
            }),
            wake: Condvar::new(),
            end: Mutex::new(None),
            durable: watch::channel(0).0,
            failing: Mutex::new(None),
            has_failed: AtomicBool::new(false),
            on_fatal,
            sealed: AtomicU64::new(0),
            base_bytes: AtomicU64::new(0),
            compactions: AtomicU64::new(0),
            sync_times: SyncTimes::default(),
            started: AtomicBool::new(false),
            stopped: Mutex::new(false),
            stopped_signal: Condvar::new(),
        }
    }

    pub fn fsync(&self) -> Fsync {
        match self.fsync.load(Ordering::Relaxed) {
            0 => Fsync::Always,
            1 => Fsync::EverySec,
            _ => Fsync::No,
        }
    }

    pub fn set_fsync(&self, fsync: Fsync) {
        self.fsync.store(fsync as u8, Ordering::Relaxed);
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        #[cfg(feature = "scaling-bench")]
        if let Some(guard) = lock_waits::uncontended(self.state.try_lock(), &lock_waits::LOG) {
            return guard;
        }
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Held while a write command runs and is appended, so that the log's order is the order
    /// the writes took effect in.
    pub fn order(&self) -> Appender<'_> {
        Appender {
            aof: self,
            state: self.lock(),
            #[cfg(feature = "scaling-bench")]
            since: std::time::Instant::now(),
        }
    }

    /// Why writes are refused, while the log cannot be written.
    pub fn failure(&self) -> Option<String> {
        if !self.has_failed.load(Ordering::Relaxed) {
            return None;
        }
        self.failing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(super) fn set_failure(&self, error: &io::Error) {
        *self.failing.lock().unwrap_or_else(|p| p.into_inner()) = Some(error.to_string());
        self.has_failed.store(true, Ordering::Relaxed);
    }

    /// Moves the safe position forward to `position` (never back).
    pub(super) fn publish_durable(&self, position: u64) {
        self.durable.send_if_modified(|at| {
            let forward = position > *at;
            if forward {
                *at = position;
            }
            forward
        });
    }

    pub(super) fn clear_failure(&self) {
        if self.has_failed.swap(false, Ordering::Relaxed) {
            tracing::info!("the append-only file can be written again");
            *self.failing.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// Resolves once everything up to `position` is as safe as the fsync policy promises
    /// before a reply: synced with `always`; with `everysec` and `no`, handed to the operating
    /// system (by the caller itself when nobody else is writing: `write_through`), as Redis
    /// does, so that a crash of the process alone loses nothing acknowledged (while the disk
    /// fails, the write is kept and retried and new writes are refused, as in Redis, and
    /// waiting ends once the write was tried).
    pub async fn wait_durable(&self, position: u64) {
        if self.write_through(position) {
            return;
        }
        let mut durable = self.durable.subscribe();
        let _ = durable.wait_for(|&at| at >= position).await;
    }

    /// How far the log is durable, as a position in the log.
    #[cfg(test)]
    pub fn durable_position(&self) -> u64 {
        *self.durable.borrow()
    }

    pub fn segment(&self) -> u64 {
        self.lock().segment
    }

    pub fn live_bytes(&self) -> u64 {
        self.lock().live_bytes
    }

    pub fn base_bytes(&self) -> u64 {
        self.base_bytes.load(Ordering::Relaxed)
    }

    /// Whether the live segments have grown enough to fold into a new snapshot: at least
    /// `min_bytes`, and `percent` more than right after the last compaction.
    pub fn wants_compaction(&self, percent: u64, min_bytes: u64) -> bool {
        if percent == 0 {
            return false;
        }
        let live = self.live_bytes();
        let base = self.base_bytes();
        live >= min_bytes && live.saturating_sub(base) * 100 >= base.max(1) * percent
    }

    /// Ends the current segment: what is appended from now on goes to a new one. Returns the
    /// number of the segment just ended.
    pub fn rotate(&self) -> u64 {
        let mut state = self.lock();
        let ended = state.segment;
        state.rotate_at = Some(state.appended);
        state.segment += 1;
        if state.writer_waiting {
            self.wake.notify_one();
        }
        ended
    }

    /// Waits until segment `segment` is complete on disk.
    pub fn wait_sealed(&self, segment: u64) -> io::Result<()> {
        while self.sealed.load(Ordering::Acquire) < segment {
            if self.is_closed() {
                return Err(io::Error::other("the append-only file was closed"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// After a compaction folded `folded_bytes` of segments into the snapshot.
    pub fn compacted(&self, folded_bytes: u64) {
        let mut state = self.lock();
        state.live_bytes = state.live_bytes.saturating_sub(folded_bytes);
        self.base_bytes.store(state.live_bytes, Ordering::Relaxed);
        self.compactions.fetch_add(1, Ordering::Relaxed);
    }

    /// Compactions since start-up.
    pub fn compactions(&self) -> u64 {
        self.compactions.load(Ordering::Relaxed)
    }

    /// Whether the writer has stopped: nothing more reaches the file.
    pub fn is_closed(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes out and syncs everything appended, then stops the writer thread.
    pub fn close(&self) {
        if !self.started.load(Ordering::Acquire) {
            return;
        }
        {
            let mut state = self.lock();
            state.closing = true;
            self.wake.notify_one();
        }
        let mut stopped = self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        while !*stopped {
            stopped = self
                .stopped_signal
                .wait(stopped)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Takes the position of the segment appends go to, before any command can append or a
    /// compaction rotate, and says a writer thread is about to run, so that `close` waits for it.
    pub fn will_run_writer(&self, start: &OpenSegment) {
        {
            let mut state = self.lock();
            state.segment = start.segment;
            state.live_bytes = start.live_bytes;
        }
        self.base_bytes.store(start.live_bytes, Ordering::Relaxed);
        self.sealed
            .store(start.segment.saturating_sub(1), Ordering::Release);
        self.started.store(true, Ordering::Release);
    }
}

/// The log's lock, held by a write command while it runs; it appends the command once it has
/// succeeded.
pub struct Appender<'a> {
    aof: &'a Aof,
    state: MutexGuard<'a, State>,
    #[cfg(feature = "scaling-bench")]
    since: std::time::Instant,
}

#[cfg(feature = "scaling-bench")]
impl Drop for Appender<'_> {
    fn drop(&mut self) {
        lock_waits::LOG_HELD_NS.add(self.since.elapsed().as_nanos() as u64);
    }
}

impl Appender<'_> {
    /// Appends what `encode` writes: whole records, in the format of `format.rs`. Returns the
    /// log position a reply to them must wait for; 0 if `encode` wrote nothing.
    pub fn append_with(mut self, encode: impl FnOnce(&mut Vec<u8>)) -> u64 {
        let before = self.state.buffer.len();
        encode(&mut self.state.buffer);
        if self.state.buffer.len() == before {
            return 0;
        }
        self.finish(before)
    }

    fn finish(mut self, before: usize) -> u64 {
        let added = (self.state.buffer.len() - before) as u64;
        self.state.appended += added;
        self.state.live_bytes += added;
        // Under `everysec` and `no` whoever waits for the write writes it (`write_through`).
        if self.state.writer_waiting && self.aof.fsync() == Fsync::Always {
            self.aof.wake.notify_one();
        }
        self.state.appended
    }
}
