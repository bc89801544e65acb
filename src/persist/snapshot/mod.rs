//! Snapshots of the whole keyspace: the file format (`format`), writing one (`write`) and
//! loading one (`read`).

pub(crate) mod format;
mod read;
mod write;

pub use format::FILE_NAME;
pub use read::{load, LoadError, LoadReport};
pub use write::{remove_leftovers, write, Expired, SnapshotStats};
