//! Snapshots of the whole keyspace: the file format (`format`), writing one (`write`) and
//! loading one (`read`).

pub(crate) mod format;
mod prefault;
mod read;
mod write;

pub use format::{sync_payload_path, ReplPosition, FILE_NAME};
pub use read::{load, load_file, LoadReport};
pub use write::{remove_leftovers, write, write_at, write_to, Expired, SnapshotStats};
