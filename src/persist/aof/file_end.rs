//! What the log (`log.rs`) and its writer (`writer.rs`) share: what commands appended and the
//! writer has not yet written (`State`, under the log's lock), and the end of the file that
//! writes it (`FileEnd`, under a lock of its own: whoever holds it writes).

use super::sync_times::SyncTimes;
use crate::persist::fs::{DataFile, FileSyncer};
use std::io;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What the log's lock guards: the bytes appended and not yet taken by a writer, and where
/// the log stands.
pub(super) struct State {
    pub(super) buffer: Vec<u8>,
    /// Bytes ever appended, counted from the start of the process: a position in the log.
    pub(super) appended: u64,
    /// The segment that appends go to.
    pub(super) segment: u64,
    /// Set by a compaction: the bytes before this position belong to the previous segment.
    pub(super) rotate_at: Option<u64>,
    /// Bytes in the segments not yet folded into a snapshot, buffered bytes included.
    pub(super) live_bytes: u64,
    pub(super) writer_waiting: bool,
    pub(super) closing: bool,
}

/// The segment the writer thread appends to first.
pub struct OpenSegment {
    pub segment: u64,
    pub file: Box<dyn DataFile>,
    /// Length of `file`, which appends continue from.
    pub file_len: u64,
    /// Bytes in this and any earlier live segments.
    pub live_bytes: u64,
}

/// The file being appended to, and how far it got.
pub(super) struct Segment {
    pub(super) file: Box<dyn DataFile>,
    pub(super) number: u64,
    /// Log position up to which bytes are in the files.
    pub(super) written: u64,
    /// Length of the current file.
    pub(super) file_len: u64,
    pub(super) unsynced: bool,
    pub(super) last_sync: Instant,
    /// A handle of this file for the sync thread, made when first needed.
    pub(super) syncer: Option<Arc<dyn FileSyncer>>,
}

/// What the `everysec` sync thread reports back.
#[derive(Default)]
pub(super) struct BackgroundSyncs {
    /// A sync was handed over and has not finished: the next one waits for it, as in Redis.
    pub(super) in_flight: bool,
    /// The last background sync failed: the writer syncs inline next, and until that works
    /// write commands stay refused.
    pub(super) failed: bool,
}

/// The end of the log that writes to the file: whoever holds it writes.
pub(super) struct FileEnd {
    pub(super) segment: Segment,
    pub(super) syncs: SyncThread,
    /// Swapped in for the buffer that is taken to be written, so that appends reuse its memory.
    pub(super) spare: Vec<u8>,
}

impl FileEnd {
    /// Takes what was appended, leaving the spare buffer in its place.
    pub(super) fn take_appended(&mut self, state: &mut State) -> Vec<u8> {
        std::mem::swap(&mut state.buffer, &mut self.spare);
        std::mem::take(&mut self.spare)
    }

    /// Keeps the memory of a buffer that was written out, for the next `take_appended`.
    pub(super) fn recycle(&mut self, mut written: Vec<u8>) {
        written.clear();
        self.spare = written;
    }

    pub(super) fn new(
        start: OpenSegment,
        jobs: mpsc::Sender<(Arc<dyn FileSyncer>, u64)>,
        background: Arc<Mutex<BackgroundSyncs>>,
    ) -> FileEnd {
        FileEnd {
            segment: Segment {
                file: start.file,
                number: start.segment,
                written: 0,
                file_len: start.file_len,
                unsynced: false,
                last_sync: Instant::now(),
                syncer: None,
            },
            syncs: SyncThread {
                jobs,
                state: background,
            },
            spare: Vec::new(),
        }
    }
}

/// The `everysec` sync thread's end of things: where to send a sync, and what came of it.
pub(super) struct SyncThread {
    pub(super) jobs: mpsc::Sender<(Arc<dyn FileSyncer>, u64)>,
    pub(super) state: Arc<Mutex<BackgroundSyncs>>,
}

impl SyncThread {
    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, BackgroundSyncs> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Segment {
    /// Appends all of `data` or, failing, leaves the file as it was.
    pub(super) fn append(&mut self, data: &[u8]) -> io::Result<()> {
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

    pub(super) fn sync(&mut self, times: &SyncTimes) -> io::Result<()> {
        let started = Instant::now();
        self.file.sync()?;
        times.record(started.elapsed());
        self.unsynced = false;
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Starts a sync of what is written so far on the sync thread, unless one is still running
    /// (then the next chance is taken instead, as Redis postpones its fsync).
    pub(super) fn sync_in_background(
        &mut self,
        thread: &SyncThread,
        times: &SyncTimes,
    ) -> io::Result<()> {
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
            return self.sync(times);
        }
        state.in_flight = true;
        self.unsynced = false;
        self.last_sync = Instant::now();
        Ok(())
    }
}
