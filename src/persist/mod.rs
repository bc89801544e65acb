//! Durability: snapshots of the whole keyspace, written atomically, and an optional append-only
//! file of the writes since; both are loaded at start-up.
//!
//! - `snapshot/`: the snapshot file (`format` documents it byte by byte), writing and loading it.
//! - `aof/`: the append-only file (`format` documents it byte by byte), the log commands append
//!   to, and the thread that writes it out.
//! - `recovery`: start-up; `compaction`: folding the log into a new snapshot.
//! - `fs`: the seam every change to the data directory goes through, so that tests can make any
//!   of them fail or crash (`faults`, in tests).
//!
//! With `appendonly yes`, start-up loads the snapshot, then replays the segments from the
//! snapshot's first log segment on, each command at the time it first ran (so expiry decides as
//! it did then). A compaction starts a new segment, folds the snapshot and the segments before
//! the new one into a new snapshot, and then deletes them. Persistence does not know what the
//! logged commands mean: the server applies them (`recovery::ApplyLogged`).

pub mod aof;
pub(crate) mod compaction;
#[cfg(test)]
pub(crate) mod faults;
pub(crate) mod fs;
mod load_error;
pub(crate) mod recovery;
pub mod snapshot;

pub use load_error::{LoadError, LoadFailure, LogDamage, SnapshotDamage};
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
