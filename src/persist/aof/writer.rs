//! The writer thread: moves what commands appended to the log's buffer into the current segment,
//! syncs as `appendfsync` says, and starts the next segment when a compaction asks for it.
//!
//! Under `everysec` the once-a-second fsync runs on a thread of its own, as Redis runs it in a
//! background job: a disk busy with a snapshot can take hundreds of milliseconds over one fsync,
//! and replies wait on the writer (their writes must reach the file first), not on the sync.

use super::format::{file_header, segment_path, FILE_HEADER_LEN};
use super::log::{Aof, OpenSegment};
use crate::config::Fsync;
use crate::persist::fs::{remove_if_present, DataFile, FileSyncer, FileSystem};
use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A writer that failed waits this long before it tries again.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// Creates an empty segment and makes it and its name durable. A segment that could not be
/// made whole is removed again, so that the next attempt starts afresh.
pub fn create_segment(
    fs: &dyn FileSystem,
    dir: &Path,
    segment: u64,
) -> io::Result<Box<dyn DataFile>> {
    let path = segment_path(dir, segment);
    let mut file = fs.create_new(&path)?;
    let made = file
        .write_all(&file_header(segment))
        .and_then(|()| file.sync())
        .and_then(|()| fs.sync_dir(dir));
    match made {
        Ok(()) => Ok(file),
        Err(error) => {
            let _ = remove_if_present(fs, &path);
            Err(error)
        }
    }
}

/// The file being appended to, and how far it got.
struct Segment {
    file: Box<dyn DataFile>,
    number: u64,
    /// Log position up to which bytes are in the files.
    written: u64,
    /// Length of the current file.
    file_len: u64,
    unsynced: bool,
    last_sync: Instant,
    /// A handle of this file for the sync thread, made when first needed.
    syncer: Option<Arc<dyn FileSyncer>>,
}

/// What the `everysec` sync thread reports back.
#[derive(Default)]
struct BackgroundSyncs {
    /// A sync was handed over and has not finished: the next one waits for it, as in Redis.
    in_flight: bool,
    /// The last background sync failed: the writer syncs inline next, and until that works
    /// write commands stay refused.
    failed: bool,
}

/// The `everysec` sync thread's end of things: where to send a sync, and what came of it.
struct SyncThread {
    jobs: mpsc::Sender<(Arc<dyn FileSyncer>, u64)>,
    state: Arc<Mutex<BackgroundSyncs>>,
}

impl SyncThread {
    fn state(&self) -> std::sync::MutexGuard<'_, BackgroundSyncs> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Segment {
    /// Appends all of `data` or, failing, leaves the file as it was.
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.file.write_all(data) {
            let _ = self.file.set_len(self.file_len);
            return Err(error);
        }
        self.written += data.len() as u64;
        self.file_len += data.len() as u64;
        self.unsynced = true;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync()?;
        self.unsynced = false;
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Starts a sync of what is written so far on the sync thread, unless one is still running
    /// (then the next chance is taken instead, as Redis postpones its fsync).
    fn sync_in_background(&mut self, thread: &SyncThread) -> io::Result<()> {
        let mut state = thread.state();
        if state.in_flight {
            return Ok(());
        }
        let syncer = match &self.syncer {
            Some(syncer) => syncer.clone(),
            None => self.syncer.insert(Arc::from(self.file.syncer()?)).clone(),
        };
        if thread.jobs.send((syncer, self.file_len)).is_err() {
            drop(state);
            return self.sync();
        }
        state.in_flight = true;
        self.unsynced = false;
        self.last_sync = Instant::now();
        Ok(())
    }
}

/// The sync thread's loop: one sync at a time. A failure refuses writes at once, as Redis does
/// when its background fsync fails, until the writer's own retry of the sync works.
fn run_syncs(
    aof: &Aof,
    jobs: mpsc::Receiver<(Arc<dyn FileSyncer>, u64)>,
    state: Arc<Mutex<BackgroundSyncs>>,
) {
    for (syncer, len) in jobs {
        let result = syncer.sync(len);
        let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
        state.in_flight = false;
        if let Err(error) = result {
            tracing::error!(%error, "cannot sync the append-only file; write commands are refused until it works again");
            aof.set_failure(&error);
            state.failed = true;
            aof.wake.notify_all();
        }
    }
}

impl Aof {
    /// Runs on its own thread, after `will_run_writer`, until `close` (or until the log cannot
    /// be written under `appendfsync always`, which is fatal).
    pub fn run_writer(&self, start: OpenSegment) {
        let (jobs, received) = mpsc::channel();
        let syncs = SyncThread {
            jobs,
            state: Arc::default(),
        };
        let state = syncs.state.clone();
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("aof-sync".into())
                .spawn_scoped(scope, move || run_syncs(self, received, state))
                .expect("start the append-only file's sync thread");
            self.write_until_closed(start, &syncs);
            // Dropping the sender ends the sync thread; the scope waits for it.
            drop(syncs);
        });
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.stopped_signal.notify_all();
    }

    fn write_until_closed(&self, start: OpenSegment, syncs: &SyncThread) {
        let mut segment = Segment {
            file: start.file,
            number: start.segment,
            written: 0,
            file_len: start.file_len,
            unsynced: false,
            last_sync: Instant::now(),
            syncer: None,
        };
        let mut spare = Vec::new();
        loop {
            let (data, rotate_at, closing) = {
                let mut state = self.lock();
                loop {
                    if !state.buffer.is_empty()
                        || state.rotate_at.is_some()
                        || state.closing
                        || syncs.state().failed
                    {
                        break;
                    }
                    let wait = match self.fsync() {
                        Fsync::EverySec if segment.unsynced => {
                            Duration::from_secs(1).saturating_sub(segment.last_sync.elapsed())
                        }
                        _ => Duration::from_secs(1),
                    };
                    if wait.is_zero() {
                        break;
                    }
                    state.writer_waiting = true;
                    state = self
                        .wake
                        .wait_timeout(state, wait)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    state.writer_waiting = false;
                }
                std::mem::swap(&mut state.buffer, &mut spare);
                (
                    std::mem::take(&mut spare),
                    state.rotate_at.take(),
                    state.closing,
                )
            };
            let mut rotate_at = rotate_at;
            let mut consumed = 0;
            let result = self.write_out(
                &mut segment,
                &data,
                &mut rotate_at,
                &mut consumed,
                closing,
                syncs,
            );
            if let Err(error) = result {
                if self.fsync() == Fsync::Always {
                    // Nothing appended can be acknowledged any more, and waiting clients would
                    // wait forever: stop, as Redis does, rather than pretend.
                    tracing::error!(%error, "cannot write the append-only file with appendfsync always");
                    (self.on_fatal)(&error);
                    self.set_failure(&error);
                    break;
                }
                tracing::error!(%error, "cannot write the append-only file; write commands are refused until it works again");
                self.set_failure(&error);
                // As Redis: what was tried is acknowledged, and kept in memory to retry.
                self.publish_durable(segment.written + (data.len() - consumed) as u64);
                // Put back what did not reach the file, in front of anything appended since.
                let mut state = self.lock();
                let mut unwritten = data[consumed..].to_vec();
                unwritten.extend_from_slice(&state.buffer);
                state.buffer = unwritten;
                if let Some(at) = rotate_at {
                    state.rotate_at.get_or_insert(at);
                }
                state.closing |= closing;
                drop(state);
                std::thread::sleep(RETRY_AFTER_FAILURE);
                continue;
            }
            // A background sync that failed meanwhile keeps writes refused until its retry.
            if !syncs.state().failed {
                self.clear_failure();
            }
            spare = data;
            spare.clear();
            if closing {
                break;
            }
        }
    }

    /// Writes `data`, ending the segment at `rotate_at` if set (and then clearing it);
    /// `consumed` tells how much of `data` is in the files, also when it fails.
    fn write_out(
        &self,
        segment: &mut Segment,
        data: &[u8],
        rotate_at: &mut Option<u64>,
        consumed: &mut usize,
        closing: bool,
        syncs: &SyncThread,
    ) -> io::Result<()> {
        if let Some(at) = *rotate_at {
            let before = (at.saturating_sub(segment.written) as usize).min(data.len());
            segment.append(&data[..before])?;
            *consumed = before;
            segment.sync()?;
            self.sealed.store(segment.number, Ordering::Release);
            segment.file = create_segment(self.fs.as_ref(), &self.dir, segment.number + 1)?;
            segment.syncer = None;
            segment.number += 1;
            segment.file_len = FILE_HEADER_LEN;
            *rotate_at = None;
            self.lock().live_bytes += FILE_HEADER_LEN;
        }
        segment.append(&data[*consumed..])?;
        *consumed = data.len();
        let retry = syncs.state().failed;
        if segment.unsynced || retry {
            match self.fsync() {
                Fsync::Always => segment.sync()?,
                _ if closing || retry => {
                    segment.sync()?;
                    syncs.state().failed = false;
                }
                Fsync::EverySec if segment.last_sync.elapsed() >= Duration::from_secs(1) => {
                    segment.sync_in_background(syncs)?
                }
                Fsync::EverySec | Fsync::No => {}
            }
        }
        if closing {
            self.sealed.store(segment.number, Ordering::Release);
        }
        self.publish_durable(segment.written);
        Ok(())
    }
}
