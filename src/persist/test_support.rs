//! What the persistence tests share: requests to log, and data directories to write them in.

use std::ops::Range;
use std::path::{Path, PathBuf};

/// Encodes `args` as a request over one buffer.
pub(crate) fn request(args: &[&[u8]]) -> (Vec<u8>, Vec<Range<usize>>) {
    let mut body = Vec::new();
    let mut ranges = Vec::new();
    for arg in args {
        ranges.push(body.len()..body.len() + arg.len());
        body.extend_from_slice(arg);
    }
    (body, ranges)
}

/// A data directory on a RAM disk when there is one: the walk syncs thousands of times.
pub(crate) fn scratch_dir(name: &str) -> PathBuf {
    let base = Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("sieved-persist-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}
