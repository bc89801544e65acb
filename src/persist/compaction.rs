//! Compaction: folds the snapshot and every complete segment into a new snapshot while commands
//! go on appending to a new segment.

use super::aof::{self, Aof, Stop};
use super::fs::{remove_if_present, FileSystem};
use super::load_error::LoadFailure;
use super::recovery::{load_error, ApplyLogged, ReplayReport, Replayer};
use super::snapshot::{self, Expired, SnapshotStats};
use crate::store::Store;
use std::fs;
use std::io;
use std::path::Path;

/// The keyspace is rebuilt privately (in `scratch`, empty) from the files, not copied from the
/// live one, so the new snapshot holds exactly the writes before the new segment: replaying that
/// segment on top of it counts no write twice (a counting filter's delete included). It keeps
/// expired keys, which the new segment's writes may have found alive when they ran.
///
/// `ended` is the segment the caller's `Aof::rotate` ended: the cut. Once this returns,
/// `scratch` holds the keyspace exactly as the writes before the cut left it.
pub(crate) fn compact(
    fs: &dyn FileSystem,
    dir: &Path,
    aof: &Aof,
    ended: u64,
    scratch: &Store,
    applier: &mut dyn ApplyLogged,
) -> io::Result<SnapshotStats> {
    aof.wait_sealed(ended)?;
    let report = snapshot::load(scratch, dir, |_, _| {}).map_err(io::Error::other)?;
    let first = report.map_or(0, |report| report.first_segment);
    let folded: Vec<_> = aof::list_segments(dir)?
        .into_iter()
        .filter(|(n, _)| (first..=ended).contains(n))
        .collect();
    let mut replayed = ReplayReport::default();
    let mut replayer = Replayer {
        store: scratch,
        applier,
    };
    let mut folded_bytes = 0;
    for (number, path) in &folded {
        folded_bytes += fs::metadata(path)?.len();
        match replayer
            .segment(path, *number, &mut replayed, |_| {})
            .map_err(io::Error::other)?
            .0
        {
            Stop::End => {}
            Stop::Torn { offset, reason } | Stop::Damaged { offset, reason } => {
                return Err(io::Error::other(load_error(
                    path,
                    offset,
                    LoadFailure::Log(reason),
                )));
            }
        }
    }
    let stats = snapshot::write(fs, scratch, dir, ended + 1, Expired::Keep)?;
    for (_, path) in &folded {
        remove_if_present(fs, path)?;
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
pub(crate) fn remove_segments_before(
    fs: &dyn FileSystem,
    dir: &Path,
    first_kept: u64,
) -> io::Result<()> {
    for (_, path) in aof::list_segments(dir)?
        .into_iter()
        .filter(|(n, _)| *n < first_kept)
    {
        remove_if_present(fs, &path)?;
    }
    Ok(())
}
