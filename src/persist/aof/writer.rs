//! The writer thread: moves what commands appended to the log's buffer into the current segment,
//! syncs as `appendfsync` says, and starts the next segment when a compaction asks for it.
//!
//! Under `everysec` the once-a-second fsync runs on a thread of its own, as Redis runs it in a
//! background job: a disk busy with a snapshot can take hundreds of milliseconds over one fsync,
//! and replies wait on the writer (their writes must reach the file first), not on the sync.
//!
//! Under `everysec` and `no` a reply needs its write handed to the operating system, no more, and
//! the connection waiting for it does that itself when nobody else is writing (`write_through`),
//! as Redis writes its log in its event loop before it replies: handing each batch to this thread
//! and being woken back cost a wake-up each way, 60% more CPU per single request than
//! redis-server's SET with the same setting. Whoever holds the file end writes; this thread keeps
//! what a connection should not do on its way to a reply: syncing, starting segments, retrying
//! failed writes, and writing while a background sync runs (a write can then wait on the sync).

use super::file_end::{BackgroundSyncs, FileEnd, OpenSegment, Segment, SyncThread};
use super::format::{file_header, segment_path, FILE_HEADER_LEN};
use super::log::Aof;
use crate::config::Fsync;
use crate::persist::fs::{remove_if_present, DataFile, FileSyncer, FileSystem};
use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

/// A writer that failed waits this long before it tries again.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// How many times a connection writing the log writes what others appended meanwhile (they wait
/// for it) before it leaves the rest to the writer thread and goes on to its own reply.
const WRITE_THROUGH_ROUNDS: usize = 4;

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

/// The sync thread's loop: one sync at a time. A failure refuses writes at once, as Redis does
/// when its background fsync fails, until the writer's own retry of the sync works.
fn run_syncs(
    aof: &Aof,
    jobs: mpsc::Receiver<(Arc<dyn FileSyncer>, u64)>,
    state: Arc<Mutex<BackgroundSyncs>>,
) {
    for (syncer, len) in jobs {
        let started = Instant::now();
        let result = syncer.sync(len);
        if result.is_ok() {
            aof.sync_times.record(started.elapsed());
        }
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
        let background = Arc::<Mutex<BackgroundSyncs>>::default();
        *self.file_end() = Some(FileEnd::new(start, jobs, background.clone()));
        std::thread::scope(|scope| {
            let state = background.clone();
            std::thread::Builder::new()
                .name("aof-sync".into())
                .spawn_scoped(scope, move || run_syncs(self, received, state))
                .expect("start the append-only file's sync thread");
            self.write_until_closed(&background);
            // Dropping the file end drops the sync thread's sender, which ends it; the scope
            // waits for it.
            drop(self.file_end().take());
        });
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.stopped_signal.notify_all();
    }

    fn file_end(&self) -> MutexGuard<'_, Option<FileEnd>> {
        self.end.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn write_until_closed(&self, background: &Mutex<BackgroundSyncs>) {
        let sync_failed = || background.lock().unwrap_or_else(|p| p.into_inner()).failed;
        loop {
            let last_sync = match self.file_end().as_ref() {
                Some(end) => end.segment.last_sync,
                None => return,
            };
            {
                let mut state = self.lock();
                while state.buffer.is_empty()
                    && state.rotate_at.is_none()
                    && !state.closing
                    && !sync_failed()
                {
                    // Connections write without waking this thread, so under `everysec` it
                    // wakes on the second after the last sync to see whether one is due.
                    let wait = match self.fsync() {
                        Fsync::EverySec => {
                            let into_second = last_sync.elapsed().as_nanos() % 1_000_000_000;
                            Duration::from_nanos(1_000_000_000 - into_second as u64)
                        }
                        _ => Duration::from_secs(1),
                    };
                    state.writer_waiting = true;
                    let (woken, timeout) = self
                        .wake
                        .wait_timeout(state, wait)
                        .unwrap_or_else(|p| p.into_inner());
                    state = woken;
                    state.writer_waiting = false;
                    if timeout.timed_out() {
                        break;
                    }
                }
            }
            let mut guard = self.file_end();
            let Some(end) = guard.as_mut() else { return };
            let (data, mut rotate_at, closing) = {
                let mut state = self.lock();
                (
                    end.take_appended(&mut state),
                    state.rotate_at.take(),
                    state.closing,
                )
            };
            let mut consumed = 0;
            let result = self.write_out(
                &mut end.segment,
                &data,
                &mut rotate_at,
                &mut consumed,
                closing,
                &end.syncs,
            );
            if let Err(error) = result {
                if self.fsync() == Fsync::Always {
                    // Nothing appended can be acknowledged any more, and waiting clients would
                    // wait forever: stop, as Redis does, rather than pretend.
                    tracing::error!(%error, "cannot write the append-only file with appendfsync always");
                    (self.on_fatal)(&error);
                    self.set_failure(&error);
                    return;
                }
                tracing::error!(%error, "cannot write the append-only file; write commands are refused until it works again");
                self.set_failure(&error);
                // As Redis: what was tried is acknowledged, and kept in memory to retry.
                self.publish_durable(end.segment.written + (data.len() - consumed) as u64);
                self.put_back(&data[consumed..]);
                let mut state = self.lock();
                if let Some(at) = rotate_at {
                    state.rotate_at.get_or_insert(at);
                }
                state.closing |= closing;
                drop(state);
                drop(guard);
                std::thread::sleep(RETRY_AFTER_FAILURE);
                continue;
            }
            // A background sync that failed meanwhile keeps writes refused until its retry.
            if !sync_failed() {
                self.clear_failure();
            }
            end.recycle(data);
            if closing {
                return;
            }
        }
    }

    /// Puts back what did not reach the file, in front of anything appended since.
    fn put_back(&self, unwritten: &[u8]) {
        let mut state = self.lock();
        let mut buffer = unwritten.to_vec();
        buffer.extend_from_slice(&state.buffer);
        state.buffer = buffer;
    }

    /// Under `everysec` and `no`, writes the log on the calling thread when nobody else is
    /// writing it, and returns whether everything up to `position` is then as safe as a reply
    /// needs. When it is not, whoever holds the file end writes it: the writer thread, which
    /// looks at the buffer again before it waits, another connection, which writes what was
    /// appended while it wrote, or else wakes the writer thread, as this does when the file end
    /// is the writer thread's business just now.
    pub fn write_through(&self, position: u64) -> bool {
        if *self.durable.borrow() >= position {
            return true;
        }
        if self.fsync() == Fsync::Always {
            // The append woke the writer thread, which syncs before a reply may go.
            return false;
        }
        let mut guard = match self.end.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        let Some(end) = guard.as_mut() else {
            return false;
        };
        for _ in 0..WRITE_THROUGH_ROUNDS {
            let data = {
                let mut state = self.lock();
                let writer_thread_work =
                    state.rotate_at.is_some() || state.closing || self.failure().is_some() || {
                        let syncs = end.syncs.state();
                        syncs.in_flight || syncs.failed
                    };
                if state.buffer.is_empty() || writer_thread_work {
                    break;
                }
                end.take_appended(&mut state)
            };
            if end.segment.append(&data).is_err() {
                // The writer thread tries again, and reports it and refuses writes if it fails.
                self.put_back(&data);
                break;
            }
            self.publish_durable(end.segment.written);
            end.recycle(data);
        }
        let state = self.lock();
        if !state.buffer.is_empty() && state.writer_waiting {
            self.wake.notify_one();
        }
        drop(state);
        drop(guard);
        *self.durable.borrow() >= position
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
            segment.sync(&self.sync_times)?;
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
                Fsync::Always => segment.sync(&self.sync_times)?,
                _ if closing || retry => {
                    segment.sync(&self.sync_times)?;
                    syncs.state().failed = false;
                }
                Fsync::EverySec if segment.last_sync.elapsed() >= Duration::from_secs(1) => {
                    segment.sync_in_background(syncs, &self.sync_times)?
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::faults::{Fault, FaultyFs};
    use crate::persist::fs::RealFs;
    use crate::persist::test_support::scratch_dir;
    use std::path::PathBuf;

    /// A log on a fresh scratch directory, with its first segment ready for a writer.
    fn new_log(name: &str, fs: Arc<dyn FileSystem>, fsync: Fsync) -> (Aof, OpenSegment, PathBuf) {
        let dir = scratch_dir(&format!("writer-{name}"));
        let file = create_segment(fs.as_ref(), &dir, 1).expect("segment");
        let aof = Aof::new(dir.clone(), fsync, fs, Box::new(|_| {}));
        let start = OpenSegment {
            segment: 1,
            file,
            file_len: FILE_HEADER_LEN,
            live_bytes: FILE_HEADER_LEN,
        };
        aof.will_run_writer(&start);
        (aof, start, dir)
    }

    /// A log whose file end is set up as the writer thread sets it, with no writer thread:
    /// whatever reaches the file got there through `write_through`.
    fn log_without_writer(name: &str, fs: Arc<dyn FileSystem>, fsync: Fsync) -> (Aof, PathBuf) {
        let (aof, start, dir) = new_log(name, fs, fsync);
        // No sync thread either: a sync handed to it would be made inline.
        let (jobs, _) = mpsc::channel();
        *aof.file_end() = Some(FileEnd::new(start, jobs, Arc::default()));
        (aof, dir)
    }

    fn append(aof: &Aof, bytes: &[u8]) -> u64 {
        aof.order().append_with(|out| out.extend_from_slice(bytes))
    }

    fn logged_bytes(dir: &Path) -> Vec<u8> {
        let bytes = std::fs::read(segment_path(dir, 1)).expect("segment");
        bytes[FILE_HEADER_LEN as usize..].to_vec()
    }

    #[test]
    fn under_everysec_the_waiting_caller_writes_what_everyone_appended() {
        let (aof, dir) = log_without_writer("through", Arc::new(RealFs), Fsync::EverySec);
        let first = append(&aof, b"one;");
        let second = append(&aof, b"two;");
        assert!(aof.write_through(first));
        assert_eq!(aof.durable_position(), second, "the whole buffer went");
        assert!(aof.write_through(second), "already there: nothing to do");
        assert_eq!(logged_bytes(&dir), b"one;two;");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn under_always_the_caller_leaves_writing_and_syncing_to_the_writer_thread() {
        let (aof, dir) = log_without_writer("always", Arc::new(RealFs), Fsync::Always);
        let position = append(&aof, b"one;");
        assert!(!aof.write_through(position));
        assert_eq!(aof.durable_position(), 0);
        assert_eq!(logged_bytes(&dir), b"");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_rotation_or_a_failure_is_left_to_the_writer_thread_with_the_buffer_whole() {
        let (aof, dir) = log_without_writer("rotating", Arc::new(RealFs), Fsync::EverySec);
        let position = append(&aof, b"one;");
        aof.rotate();
        assert!(!aof.write_through(position));
        assert_eq!(aof.lock().buffer, b"one;");
        assert_eq!(logged_bytes(&dir), b"");
        let _ = std::fs::remove_dir_all(&dir);

        let (aof, dir) = log_without_writer("failing", Arc::new(RealFs), Fsync::No);
        let position = append(&aof, b"one;");
        aof.set_failure(&io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(!aof.write_through(position));
        assert_eq!(aof.lock().buffer, b"one;");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Connections on several threads append and each waits for its own write, through
    /// `write_through` or, when another holds the file's end, for whoever does; with the writer
    /// thread running too. Every acknowledged write is in the file, each thread's in its order.
    #[test]
    fn writers_on_many_threads_each_see_their_own_writes_reach_the_file() {
        const THREADS: usize = 4;
        const WRITES: usize = 2000;
        let (aof, start, dir) = new_log("many", Arc::new(RealFs), Fsync::EverySec);
        let aof = Arc::new(aof);
        let writer = aof.clone();
        let writer = std::thread::spawn(move || writer.run_writer(start));
        let clients: Vec<_> = (0..THREADS)
            .map(|thread| {
                let aof = aof.clone();
                std::thread::spawn(move || {
                    for write in 0..WRITES {
                        let position = append(&aof, format!("{thread}:{write};").as_bytes());
                        if !aof.write_through(position) {
                            while aof.durable_position() < position {
                                std::thread::yield_now();
                            }
                        }
                    }
                })
            })
            .collect();
        for client in clients {
            client.join().expect("client");
        }
        aof.close();
        writer.join().expect("writer");
        let logged = String::from_utf8(logged_bytes(&dir)).expect("text");
        let mut next = [0usize; THREADS];
        for record in logged.split_terminator(';') {
            let (thread, write) = record.split_once(':').expect("a record");
            let (thread, write): (usize, usize) = (thread.parse().unwrap(), write.parse().unwrap());
            assert_eq!(
                write, next[thread],
                "thread {thread}'s writes in order, once each"
            );
            next[thread] += 1;
        }
        assert_eq!(next, [WRITES; THREADS]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The caller's write fails (ENOSPC, EIO): nothing reaches the file, the bytes go back in
    /// front of what was appended since, and the next write takes them all, in order.
    #[test]
    fn a_write_that_fails_puts_its_bytes_back_in_order() {
        for error in [libc::ENOSPC, libc::EIO, libc::EROFS] {
            let attic = scratch_dir("writer-attic");
            let faulty = FaultyFs::new(&attic);
            let (aof, dir) = log_without_writer("fault", Arc::new(faulty.clone()), Fsync::EverySec);
            let first = append(&aof, b"one;");
            faulty.set_fault(faulty.points() + 1, Fault::Fail(error));
            assert!(!aof.write_through(first));
            assert_eq!(aof.durable_position(), 0, "not acknowledged");
            assert_eq!(logged_bytes(&dir), b"", "the file is as it was");
            let second = append(&aof, b"two;");
            assert_eq!(aof.lock().buffer, b"one;two;");
            assert!(aof.write_through(first));
            assert_eq!(aof.durable_position(), second);
            assert_eq!(logged_bytes(&dir), b"one;two;");
            let _ = std::fs::remove_dir_all(&dir);
            let _ = std::fs::remove_dir_all(&attic);
        }
    }
}
