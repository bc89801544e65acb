//! Start-up: the snapshot, then the append-only file segments after it, replayed into the
//! keyspace before any client is served; then where the log goes on from.

use super::aof::{self, create_segment, OpenSegment, Record, SegmentReader, Stop, FILE_HEADER_LEN};
use super::fs::{remove_if_present, FileSystem};
use super::load_error::{LoadError, LoadFailure};
use super::snapshot::{self, Expired, LoadReport, ReplPosition};
use crate::protocol::Request;
use crate::store::{now_ms, Store};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One command read back from the log: what ran, on which database, and when.
#[derive(Clone, Copy)]
pub(crate) struct Logged<'a> {
    pub db: usize,
    pub request: Request<'a>,
    pub time_ms: u64,
}

/// Applies a logged write to a keyspace. Persistence knows the log's records, not what the
/// commands in them mean: the server runs them.
pub(crate) trait ApplyLogged {
    /// Runs the write on `store` as it ran then; an error says why it cannot be applied.
    fn apply(&mut self, store: &Store, write: Logged) -> Result<(), String>;
}

/// What replaying the append-only file did.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReplayReport {
    pub segments: usize,
    pub records: u64,
    pub commands: u64,
    pub bytes: u64,
    pub duration: Duration,
}

/// What start-up found on disk, and where the log goes on.
#[derive(Default)]
pub struct Recovery {
    pub snapshot: Option<LoadReport>,
    pub log: ReplayReport,
    /// Damage that `aof-load-damaged yes` allowed to pass: the damaged file, where the damage
    /// starts, and where the file was set aside.
    pub set_aside: Option<(LoadError, PathBuf)>,
    /// The first segment a snapshot of the live keyspace will not hold: what it records.
    pub first_segment: u64,
    /// The replication position the loaded data holds exactly: the snapshot's, when no logged
    /// write followed it. A write in the log after it moved the data past that position by an
    /// amount the log does not record (its records are not all in the stream, and the stream
    /// holds records the log does not), so the position is then unknown: such a node syncs in
    /// full, and never claims an offset its data may not match.
    pub position: Option<ReplPosition>,
    /// With the log on: the segment the writer appends to first.
    pub append_to: Option<OpenSegment>,
}

/// What start-up is told about the data directory.
pub(crate) struct Options<'a> {
    pub dir: &'a Path,
    pub fs: &'a dyn FileSystem,
    /// `appendonly`: whether writes go on to the log after start-up.
    pub log_on: bool,
    /// `aof-load-damaged`: keep the writes before damage instead of refusing to start.
    pub load_damaged: bool,
}

pub(super) fn load_error(path: &Path, offset: u64, reason: impl Into<LoadFailure>) -> LoadError {
    LoadError {
        path: path.to_path_buf(),
        offset,
        reason: reason.into(),
    }
}

/// Loads the snapshot and replays the append-only file segments that follow it. `progress` is
/// told (what, bytes done, bytes in all) as loading advances.
pub(crate) fn recover(
    options: &Options,
    store: &Store,
    applier: &mut dyn ApplyLogged,
    mut progress: impl FnMut(&str, u64, u64),
) -> Result<Recovery, LoadError> {
    let Options { dir, fs, .. } = *options;
    snapshot::remove_leftovers(fs, dir).map_err(|e| load_error(dir, 0, e))?;
    let mut recovery = Recovery {
        snapshot: snapshot::load(store, dir, |done, total| progress("snapshot", done, total))?,
        ..Recovery::default()
    };
    let first = recovery.snapshot.map_or(0, |report| report.first_segment);
    let segments = aof::list_segments(dir).map_err(|e| load_error(dir, 0, e))?;
    for (_, path) in segments.iter().filter(|(n, _)| *n < first) {
        tracing::info!(file = %path.display(), "removing a log segment the snapshot already holds");
        remove_if_present(fs, path).map_err(|e| load_error(path, 0, e))?;
    }
    let live: Vec<_> = segments.into_iter().filter(|(n, _)| *n >= first).collect();
    let total: u64 = live
        .iter()
        .map(|(_, path)| fs::metadata(path).map_or(0, |m| m.len()))
        .sum();
    let mut replayer = Replayer { store, applier };
    // Where appends may go on: the last segment, its length, and whether its format is current.
    let mut append_to = None;
    let replay_started = Instant::now();
    for (index, (number, path)) in live.iter().enumerate() {
        let last = index + 1 == live.len();
        let done_before = recovery.log.bytes;
        let (end, current) = replayer.segment(path, *number, &mut recovery.log, |done| {
            progress("append-only file", done_before + done, total)
        })?;
        match end {
            Stop::End => {
                let len = fs::metadata(path).map_or(0, |m| m.len());
                append_to = last.then_some((*number, len, current));
            }
            Stop::Torn { offset, reason } if last => {
                tracing::warn!(
                    file = %path.display(),
                    offset,
                    "{reason}: a write cut short by a crash; dropping it"
                );
                truncate(fs, path, offset)?;
                append_to = Some((*number, offset, current));
            }
            Stop::Torn { offset, reason } | Stop::Damaged { offset, reason } => {
                let error = load_error(path, offset, LoadFailure::Log(reason));
                if !options.load_damaged {
                    return Err(error);
                }
                let aside = set_aside(fs, &live[index..])?;
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
    recovery.log.duration = replay_started.elapsed();
    recovery.position = recovery
        .snapshot
        .and_then(|report| report.position)
        .filter(|_| recovery.log.records == 0 && recovery.set_aside.is_none());
    let newest = live.last().map_or(first, |(n, _)| *n);
    if !options.log_on || recovery.set_aside.is_some() {
        // Nothing will append to these segments: fold them into a snapshot now, so that a
        // later snapshot without them cannot lose what they hold.
        let first_new = newest + 1;
        if !live.is_empty() || recovery.set_aside.is_some() {
            snapshot::write_at(fs, store, dir, first_new, Expired::Keep, recovery.position)
                .map_err(|e| load_error(dir, 0, LoadFailure::WriteSnapshot(e)))?;
            for (_, path) in &live {
                remove_if_present(fs, path).map_err(|e| load_error(path, 0, e))?;
            }
        }
        recovery.first_segment = first_new.max(first);
        if !options.log_on {
            return Ok(recovery);
        }
    }
    let folded_all = recovery.set_aside.is_some();
    let live_bytes = if folded_all { 0 } else { total };
    recovery.append_to = Some(match append_to.filter(|_| !folded_all) {
        // Appends go on in the last segment when it is whole and of the current format.
        Some((segment, len, true)) if len >= FILE_HEADER_LEN => {
            let path = aof::segment_path(dir, segment);
            let file = fs.open_append(&path).map_err(|e| load_error(&path, 0, e))?;
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
                Some((segment, len, _)) if len < FILE_HEADER_LEN => {
                    remove_if_present(fs, &aof::segment_path(dir, segment))
                        .map_err(|e| load_error(dir, 0, e))?;
                    segment
                }
                _ => (newest + 1).max(first).max(1),
            };
            let path = aof::segment_path(dir, segment);
            let file = create_segment(fs, dir, segment).map_err(|e| load_error(&path, 0, e))?;
            OpenSegment {
                segment,
                file,
                file_len: FILE_HEADER_LEN,
                live_bytes: live_bytes + FILE_HEADER_LEN,
            }
        }
    });
    Ok(recovery)
}

fn truncate(fs: &dyn FileSystem, path: &Path, len: u64) -> Result<(), LoadError> {
    let mut file = fs.open_append(path).map_err(|e| load_error(path, len, e))?;
    file.set_len(len)
        .and_then(|()| file.sync())
        .map_err(|e| load_error(path, len, LoadFailure::DropTorn(e)))
}

/// Renames the damaged segment and those after it out of the way, keeping them for a person to
/// look at; returns the first new name.
fn set_aside(fs: &dyn FileSystem, segments: &[(u64, PathBuf)]) -> Result<PathBuf, LoadError> {
    let stamp = now_ms();
    let mut first = None;
    for (_, path) in segments {
        let aside = path.with_extension(format!("aof.damaged-{stamp}"));
        fs.rename(path, &aside)
            .map_err(|e| load_error(path, 0, e))?;
        first.get_or_insert(aside);
    }
    Ok(first.unwrap_or_default())
}

/// Runs the records of segments against a keyspace.
pub(super) struct Replayer<'a> {
    pub(super) store: &'a Store,
    pub(super) applier: &'a mut dyn ApplyLogged,
}

impl Replayer<'_> {
    /// Replays one segment up to where it ends or stops being readable; also says whether the
    /// segment is of the current format, which appends may continue.
    pub(super) fn segment(
        &mut self,
        path: &Path,
        number: u64,
        report: &mut ReplayReport,
        mut progress: impl FnMut(u64),
    ) -> Result<(Stop, bool), LoadError> {
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
        Ok((stop, reader.version == aof::format::VERSION))
    }

    /// Applies a record's commands; a command that cannot be applied is an error, never a
    /// silent skip: what was acknowledged once must come back, or start-up must say why not.
    fn apply(&mut self, record: &Record, report: &mut ReplayReport) -> Result<(), LoadFailure> {
        report.records += 1;
        for (db, ranges) in &record.commands {
            report.commands += 1;
            if *db >= self.store.databases() {
                return Err(LoadFailure::LogDatabase {
                    db: *db,
                    databases: self.store.databases(),
                });
            }
            let request = Request::new(&record.body, ranges);
            self.applier
                .apply(
                    self.store,
                    Logged {
                        db: *db,
                        request,
                        time_ms: record.time_ms,
                    },
                )
                .map_err(|error| LoadFailure::NotApplied {
                    command: String::from_utf8_lossy(request.arg(0)).into_owned(),
                    error,
                })?;
        }
        Ok(())
    }
}
