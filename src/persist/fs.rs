//! The file-system seam: every change persistence makes to the data directory (creating,
//! writing, syncing, renaming, removing, truncating) goes through `FileSystem`, so that a test
//! can make any one of them fail (EIO, ENOSPC) or stop the process's disk at that point as a
//! crash would (`faults.rs`). Reading goes straight to the operating system: a failed read stops
//! a load with an error and changes nothing.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

/// A file opened for writing.
pub trait DataFile: Send {
    fn write_all(&mut self, data: &[u8]) -> io::Result<()>;
    /// Makes the file's data durable (fdatasync).
    fn sync(&mut self) -> io::Result<()>;
    /// Cuts the file back to `len` bytes, as after a write that failed half-way.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// A second handle on the same file that only syncs it, so that a slow fsync can run on
    /// another thread while this handle goes on writing.
    fn syncer(&self) -> io::Result<Box<dyn FileSyncer>>;
}

/// Syncs a file that another handle writes.
pub trait FileSyncer: Send + Sync {
    /// Makes the file's data durable (fdatasync), at least its first `len` bytes: those written
    /// before the sync was asked for.
    fn sync(&self, len: u64) -> io::Result<()>;
}

/// The changes persistence makes to the data directory.
pub trait FileSystem: Send + Sync {
    /// Creates `path`, which must not exist yet, for appending.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DataFile>>;
    /// Creates `path` or empties it, for writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn DataFile>>;
    /// Opens an existing file for appending.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn DataFile>>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// The operating system's file system.
pub(crate) struct RealFs;

/// The file system a server uses unless a test gives it another.
pub(crate) fn real() -> Arc<dyn FileSystem> {
    Arc::new(RealFs)
}

struct RealFile(File);

impl DataFile for RealFile {
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.0.write_all(data)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn syncer(&self) -> io::Result<Box<dyn FileSyncer>> {
        Ok(Box::new(RealFile(self.0.try_clone()?)))
    }
}

impl FileSyncer for RealFile {
    fn sync(&self, _len: u64) -> io::Result<()> {
        self.0.sync_data()
    }
}

impl FileSystem for RealFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DataFile>> {
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)?;
        Ok(Box::new(RealFile(file)))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn DataFile>> {
        Ok(Box::new(RealFile(File::create(path)?)))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn DataFile>> {
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(Box::new(RealFile(file)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// Removes `path`; a file already gone is not an error.
pub(crate) fn remove_if_present(fs: &dyn FileSystem, path: &Path) -> io::Result<()> {
    match fs.remove(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Lets a buffered writer write through the seam.
pub(crate) struct Writer<'a>(pub &'a mut dyn DataFile);

impl Write for Writer<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.write_all(data)?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
