//! Rebuilding the keyspace from the append-only file: at start-up on top of the snapshot, and
//! in a compaction, into a private keyspace that becomes the next snapshot while the server
//! goes on appending to a new segment.

use super::aof::{self, OpenSegment, Record, SegmentReader, Stop, FILE_HEADER_LEN};
use super::load::{self, LoadError, LoadLimits, LoadReport};
use super::snapshot::{self, SnapshotStats};
use crate::cmd::{self, Ctx, Session};
use crate::protocol::{Protocol, Reply, Request};
use crate::server::Shared;
use crate::store::{now_ms, Store};
use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What replaying the append-only file did.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReplayReport {
    pub segments: usize,
    pub records: u64,
    pub commands: u64,
    pub bytes: u64,
}

/// What start-up found on disk.
#[derive(Debug, Default)]
pub struct Recovery {
    pub snapshot: Option<LoadReport>,
    pub log: ReplayReport,
    /// The last record of the last segment, cut short by a crash and dropped: where and why.
    pub dropped_tail: Option<(PathBuf, u64, String)>,
    /// Damage that `aof-load-damaged yes` allowed to pass: the damaged file, where the damage
    /// starts, and where the file was set aside.
    pub set_aside: Option<(LoadError, PathBuf)>,
}

fn limits(shared: &Shared) -> LoadLimits {
    let settings = shared.config.settings();
    LoadLimits {
        max_filter_bytes: settings.max_filter_memory,
        max_string_bytes: settings.proto_max_bulk_len,
    }
}

fn load_error(path: &Path, offset: u64, reason: impl Into<String>) -> LoadError {
    LoadError {
        path: path.to_path_buf(),
        offset,
        reason: reason.into(),
    }
}

/// Loads the snapshot, replays the append-only file segments that follow it, and, with
/// `appendonly yes`, starts the writer on the last segment. `progress` is told (what, bytes
/// done, bytes in all) as loading advances.
pub fn recover(
    shared: &Arc<Shared>,
    mut progress: impl FnMut(&str, u64, u64),
) -> Result<Recovery, LoadError> {
    let dir = &shared.config.dir;
    let mut recovery = Recovery {
        snapshot: load::load(&shared.store, dir, limits(shared), |done, total| {
            progress("snapshot", done, total)
        })?,
        ..Recovery::default()
    };
    let first = recovery.snapshot.map_or(0, |report| report.first_segment);
    let segments = aof::list_segments(dir).map_err(|e| load_error(dir, 0, e.to_string()))?;
    for (_, path) in segments.iter().filter(|(n, _)| *n < first) {
        tracing::info!(file = %path.display(), "removing a log segment the snapshot already holds");
        fs::remove_file(path).map_err(|e| load_error(path, 0, e.to_string()))?;
    }
    let live: Vec<_> = segments.into_iter().filter(|(n, _)| *n >= first).collect();
    let total: u64 = live
        .iter()
        .map(|(_, path)| fs::metadata(path).map_or(0, |m| m.len()))
        .sum();
    let mut replayer = Replayer::new(shared, &shared.store);
    let mut append_to = None;
    for (index, (number, path)) in live.iter().enumerate() {
        let last = index + 1 == live.len();
        let done_before = recovery.log.bytes;
        let end = replayer.segment(path, *number, &mut recovery.log, |done| {
            progress("append-only file", done_before + done, total)
        })?;
        match end {
            Stop::End => {
                let len = fs::metadata(path).map_or(0, |m| m.len());
                append_to = last.then_some((*number, len));
            }
            Stop::Torn { offset, reason } if last => {
                tracing::warn!(
                    file = %path.display(),
                    offset,
                    "{reason}: a write cut short by a crash; dropping it"
                );
                truncate(path, offset)?;
                append_to = Some((*number, offset));
                recovery.dropped_tail = Some((path.clone(), offset, reason));
            }
            Stop::Torn { offset, reason } | Stop::Damaged { offset, reason } => {
                let error = load_error(path, offset, reason);
                if !shared.config.aof_load_damaged {
                    return Err(error);
                }
                let aside = set_aside(&live[index..])?;
                tracing::error!(
                    "{error}; aof-load-damaged is yes, so the writes before it are kept and the \
                     file and any after it are set aside as {}",
                    aside.display()
                );
                recovery.set_aside = Some((error, aside));
                append_to = None;
                break;
            }
        }
    }
    let newest = live.last().map_or(first, |(n, _)| *n);
    let folded_all = if shared.aof.is_none() || recovery.set_aside.is_some() {
        // Nothing will append to these segments: fold them into a snapshot now, so that a
        // later snapshot without them cannot lose what they hold.
        let first_new = newest + 1;
        if !live.is_empty() || recovery.set_aside.is_some() {
            snapshot::write(&shared.store, dir, first_new)
                .map_err(|e| load_error(dir, 0, format!("cannot write a snapshot: {e}")))?;
            for (_, path) in &live {
                remove_if_present(path).map_err(|e| load_error(path, 0, e.to_string()))?;
            }
        }
        shared.saver.set_first_segment(first_new.max(first));
        true
    } else {
        false
    };
    if shared.aof.is_some() {
        let live_bytes = if folded_all { 0 } else { total };
        let open = match append_to.filter(|_| !folded_all) {
            Some((segment, len)) if len >= FILE_HEADER_LEN => {
                let path = aof::segment_path(dir, segment);
                let file = OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(|e| load_error(&path, 0, e.to_string()))?;
                OpenSegment {
                    segment,
                    file,
                    file_len: len,
                    live_bytes,
                }
            }
            reuse => {
                let segment = match reuse {
                    // A segment whose header never reached the disk: start it again.
                    Some((segment, _)) => {
                        remove_if_present(&aof::segment_path(dir, segment))
                            .map_err(|e| load_error(dir, 0, e.to_string()))?;
                        segment
                    }
                    None => (newest + 1).max(first).max(1),
                };
                let file = aof::create_segment(dir, segment)
                    .map_err(|e| load_error(&aof::segment_path(dir, segment), 0, e.to_string()))?;
                OpenSegment {
                    segment,
                    file,
                    file_len: FILE_HEADER_LEN,
                    live_bytes: live_bytes + FILE_HEADER_LEN,
                }
            }
        };
        if let Some(aof) = shared.aof.as_ref() {
            aof.will_run_writer(&open);
        }
        let writer = shared.clone();
        std::thread::Builder::new()
            .name("sieved-aof".into())
            .spawn(move || {
                if let Some(aof) = writer.aof.as_ref() {
                    aof.run_writer(open);
                }
            })
            .map_err(|e| load_error(dir, 0, format!("cannot start the log writer: {e}")))?;
    }
    Ok(recovery)
}

/// Folds the snapshot and every complete segment into a new snapshot, while commands go on
/// appending to a new segment. The keyspace is rebuilt privately from the files, not copied from
/// the live one, so the new snapshot holds exactly the writes before the new segment: replaying
/// that segment on top of it counts no write twice (a counting filter's delete included).
pub fn compact(shared: &Arc<Shared>, aof: &aof::Aof) -> io::Result<SnapshotStats> {
    let dir = &shared.config.dir;
    let ended = aof.rotate();
    aof.wait_sealed(ended)?;
    let private = Store::new(shared.config.databases, shared.config.shards);
    let report = load::load(&private, dir, limits(shared), |_, _| {}).map_err(io::Error::other)?;
    let first = report.map_or(0, |report| report.first_segment);
    let folded: Vec<_> = aof::list_segments(dir)?
        .into_iter()
        .filter(|(n, _)| (first..=ended).contains(n))
        .collect();
    let mut replayed = ReplayReport::default();
    let mut replayer = Replayer::new(shared, &private);
    let mut folded_bytes = 0;
    for (number, path) in &folded {
        folded_bytes += fs::metadata(path)?.len();
        match replayer
            .segment(path, *number, &mut replayed, |_| {})
            .map_err(io::Error::other)?
        {
            Stop::End => {}
            Stop::Torn { offset, reason } | Stop::Damaged { offset, reason } => {
                return Err(io::Error::other(load_error(path, offset, reason)));
            }
        }
    }
    let stats = snapshot::write(&private, dir, ended + 1)?;
    for (_, path) in &folded {
        remove_if_present(path)?;
    }
    aof.compacted(folded_bytes);
    tracing::info!(
        segments = folded.len(),
        records = replayed.records,
        "append-only file compacted into the snapshot"
    );
    Ok(stats)
}

/// Removes the segments the snapshot now holds, once the writer has stopped and the live
/// keyspace was saved whole: the exit snapshot of a server with an append-only file.
pub fn remove_segments_before(dir: &Path, first_kept: u64) -> io::Result<()> {
    for (_, path) in aof::list_segments(dir)?
        .into_iter()
        .filter(|(n, _)| *n < first_kept)
    {
        remove_if_present(&path)?;
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

fn truncate(path: &Path, len: u64) -> Result<(), LoadError> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| load_error(path, len, e.to_string()))?;
    file.set_len(len)
        .and_then(|()| file.sync_all())
        .map_err(|e| load_error(path, len, format!("cannot drop the torn record: {e}")))
}

/// Renames the damaged segment and those after it out of the way, keeping them for a person to
/// look at; returns the first new name.
fn set_aside(segments: &[(u64, PathBuf)]) -> Result<PathBuf, LoadError> {
    let stamp = now_ms();
    let mut first = None;
    for (_, path) in segments {
        let aside = path.with_extension(format!("aof.damaged-{stamp}"));
        fs::rename(path, &aside).map_err(|e| load_error(path, 0, e.to_string()))?;
        first.get_or_insert(aside);
    }
    Ok(first.unwrap_or_default())
}

/// Runs records against a keyspace, as a client that is always allowed.
struct Replayer<'a> {
    shared: &'a Arc<Shared>,
    store: &'a Store,
    session: Session,
    reply: Reply,
}

impl<'a> Replayer<'a> {
    fn new(shared: &'a Arc<Shared>, store: &'a Store) -> Replayer<'a> {
        let client = shared.clients.detached(shared.addr, now_ms());
        Replayer {
            shared,
            store,
            session: Session::new(client, true),
            reply: Reply::new(Protocol::Resp2),
        }
    }

    /// Replays one segment up to where it ends or stops being readable.
    fn segment(
        &mut self,
        path: &Path,
        number: u64,
        report: &mut ReplayReport,
        mut progress: impl FnMut(u64),
    ) -> Result<Stop, LoadError> {
        let mut reader = SegmentReader::open(path, number)
            .map_err(|(offset, why)| load_error(path, offset, why))?;
        report.segments += 1;
        let stop = loop {
            let start = reader.offset;
            match reader.next_record() {
                Ok(record) => self
                    .apply(&record, report)
                    .map_err(|reason| load_error(path, start, reason))?,
                Err(stop) => break stop,
            }
            progress(reader.offset);
        };
        report.bytes += reader.offset;
        Ok(stop)
    }

    /// Applies a record's commands; a command that cannot be applied is an error, never a
    /// silent skip: what was acknowledged once must come back, or start-up must say why not.
    fn apply(&mut self, record: &Record, report: &mut ReplayReport) -> Result<(), String> {
        report.records += 1;
        for (db, ranges) in &record.commands {
            report.commands += 1;
            if *db >= self.store.databases() {
                return Err(format!(
                    "a write logged for database {db}, but there are only {} (start with \
                     --databases {} or more)",
                    self.store.databases(),
                    db + 1
                ));
            }
            self.session.db = *db;
            let request = Request::new(&record.body, ranges);
            let mut ctx = Ctx {
                server: self.shared,
                store: self.store,
                session: &mut self.session,
                reply: &mut self.reply,
                now: record.time_ms,
            };
            let applied = cmd::replay(&mut ctx, request);
            self.reply.clear();
            if let Err(error) = applied {
                return Err(format!(
                    "the logged write {} cannot be applied: {}",
                    String::from_utf8_lossy(request.arg(0)),
                    error.message()
                ));
            }
        }
        Ok(())
    }
}
