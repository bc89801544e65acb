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
    /// Asks the kernel to start writing bytes `from..from + len` to the disk now, without
    /// waiting and without any promise: a hint, so that the sync that follows finds less left
    /// to write. Nothing is durable until `sync` returns.
    fn start_writeback(&mut self, from: u64, len: u64);
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

    fn start_writeback(&mut self, from: u64, len: u64) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: the descriptor is open for as long as `self.0` is; SYNC_FILE_RANGE_WRITE
            // only starts writeback of pages already written, and a failure changes nothing.
            unsafe {
                libc::sync_file_range(
                    self.0.as_raw_fd(),
                    from as libc::off64_t,
                    len as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                );
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (from, len);
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

/// Lets a writer write a large file through the seam, starting the writeback of every
/// `WRITEBACK_STEP` bytes as soon as they are written, so that the disk works while the rest is
/// being produced and the final sync has little left to wait for (as Redis's
/// `rdb-save-incremental-fsync`).
pub(crate) struct Writer<'a> {
    file: &'a mut dyn DataFile,
    written: u64,
    handed_over: u64,
}

const WRITEBACK_STEP: u64 = 32 << 20;

impl<'a> Writer<'a> {
    pub(crate) fn new(file: &'a mut dyn DataFile) -> Writer<'a> {
        Writer {
            file,
            written: 0,
            handed_over: 0,
        }
    }
}

impl Write for Writer<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.file.write_all(data)?;
        self.written += data.len() as u64;
        if self.written - self.handed_over >= WRITEBACK_STEP {
            self.file
                .start_writeback(self.handed_over, self.written - self.handed_over);
            self.handed_over = self.written;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
