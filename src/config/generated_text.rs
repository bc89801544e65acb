//! For the tests that keep generated text in the repository's files (the book's settings table
//! and command reference, the man pages) equal to the tables it comes from: where a file is, and
//! a file with the text between its two marker lines replaced.

use std::path::PathBuf;

/// A file of the repository, by its path from the top.
pub(crate) fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// `page` with what lies between `begin` and the next `end` replaced by `section`; `None` when
/// a marker is missing.
pub(crate) fn with_section(page: &str, begin: &str, end: &str, section: &str) -> Option<String> {
    let start = page.find(begin)? + begin.len();
    let stop = start + page[start..].find(end)?;
    Some(format!("{}{section}{}", &page[..start], &page[stop..]))
}
