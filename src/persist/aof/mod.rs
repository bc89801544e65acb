//! The append-only file: its format (`format`), the log commands append to (`log`), and the
//! thread that writes it out (`writer`).

mod file_end;
pub(crate) mod format;
mod log;
mod sync_times;
mod writer;

pub use file_end::OpenSegment;
pub use format::{
    list_segments, segment_path, PendingTransaction, Record, SegmentReader, Stop, FILE_HEADER_LEN,
};
pub use log::{Aof, OnFatal};
pub use sync_times::{SyncFigures, SYNC_BOUNDS_US};
pub use writer::create_segment;
