//! A file system for tests that fails on demand: the n-th change to the data directory returns
//! an error (EIO, ENOSPC), or the disk "crashes" there. A crash leaves what a power cut may
//! leave in the worst case: every file cut back to what was last synced, and every creation and
//! rename not yet made durable by a directory sync undone (the file replaced by a rename comes
//! back). Every change after a crash fails, as if the process were gone. It also records any
//! change to a file persistence has no business touching.

use super::fs::{DataFile, FileSyncer, FileSystem, RealFs};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The change fails with this operating-system error (EIO, ENOSPC, EROFS...), once; later
    /// changes work.
    Fail(i32),
    /// The disk stops at this change, which does not happen.
    Crash,
}

/// A change to a directory entry that a crash undoes until the directory is synced.
enum Entry {
    Created(PathBuf),
    /// Renamed from, to, and where a copy of the file it replaced is kept.
    Renamed(PathBuf, PathBuf, Option<PathBuf>),
}

#[derive(Default)]
struct State {
    /// Changes made so far, counting the one failing.
    points: u64,
    fault_at: Option<(u64, Fault)>,
    crashed: bool,
    /// Files written through this file system, with the length that is on disk for sure.
    synced: Vec<(PathBuf, u64)>,
    unsynced_entries: Vec<Entry>,
    /// Files changed that persistence does not own.
    trespasses: Vec<PathBuf>,
    /// Where copies of replaced files are kept, outside the data directory.
    attic: PathBuf,
}

#[derive(Clone)]
pub(crate) struct FaultyFs {
    state: Arc<Mutex<State>>,
}

/// Whether a file in the data directory is one persistence may create, change or remove.
fn owned(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "sieved.snap"
        || super::snapshot::format::is_temp_file(name)
        || (name.starts_with("sieved-") && name.contains(".aof"))
}

impl FaultyFs {
    /// No fault yet; copies of replaced files go to `attic`.
    pub(crate) fn new(attic: &Path) -> FaultyFs {
        fs::create_dir_all(attic).expect("attic");
        FaultyFs {
            state: Arc::new(Mutex::new(State {
                attic: attic.to_path_buf(),
                ..State::default()
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes change number `point` (from 1) fail or crash.
    pub(crate) fn set_fault(&self, point: u64, fault: Fault) {
        self.lock().fault_at = Some((point, fault));
    }

    /// Changes made so far: a run without faults tells how many points a scenario has.
    pub(crate) fn points(&self) -> u64 {
        self.lock().points
    }

    pub(crate) fn crashed(&self) -> bool {
        self.lock().crashed
    }

    pub(crate) fn trespasses(&self) -> Vec<PathBuf> {
        self.lock().trespasses.clone()
    }

    /// Counts a change to the files `paths` and says whether it may go ahead.
    fn enter(&self, paths: &[&Path]) -> io::Result<()> {
        let mut state = self.lock();
        for path in paths.iter().filter(|path| !owned(path)) {
            state.trespasses.push(path.to_path_buf());
        }
        if state.crashed {
            return Err(io::Error::other("the disk is gone (simulated crash)"));
        }
        state.points += 1;
        match state.fault_at {
            Some((point, Fault::Fail(code))) if point == state.points => {
                Err(io::Error::from_raw_os_error(code))
            }
            Some((point, Fault::Crash)) if point == state.points => {
                crash(&mut state);
                Err(io::Error::other("the disk is gone (simulated crash)"))
            }
            _ => Ok(()),
        }
    }

    fn track(&self, path: &Path, synced_len: u64) {
        let mut state = self.lock();
        state.synced.retain(|(p, _)| p != path);
        state.synced.push((path.to_path_buf(), synced_len));
    }

    fn file(&self, path: &Path, file: Box<dyn DataFile>) -> Box<dyn DataFile> {
        Box::new(FaultyFile {
            fs: self.clone(),
            path: path.to_path_buf(),
            inner: file,
        })
    }
}

/// Applies what a power cut may lose, on the real directory.
fn crash(state: &mut State) {
    state.crashed = true;
    for entry in state.unsynced_entries.drain(..).rev() {
        match entry {
            Entry::Created(path) => {
                let _ = fs::remove_file(&path);
            }
            Entry::Renamed(from, to, replaced) => {
                let _ = fs::rename(&to, &from);
                if let Some(copy) = replaced {
                    let _ = fs::copy(&copy, &to);
                }
            }
        }
    }
    for (path, len) in &state.synced {
        if let Ok(file) = fs::OpenOptions::new().write(true).open(path) {
            if file.metadata().is_ok_and(|m| m.len() > *len) {
                let _ = file.set_len(*len);
            }
        }
    }
}

struct FaultyFile {
    fs: FaultyFs,
    path: PathBuf,
    inner: Box<dyn DataFile>,
}

impl DataFile for FaultyFile {
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.fs.enter(&[&self.path])?;
        self.inner.write_all(data)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.fs.enter(&[&self.path])?;
        self.inner.sync()?;
        let len = fs::metadata(&self.path).map_or(0, |m| m.len());
        self.fs.track(&self.path, len);
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.fs.enter(&[&self.path])?;
        self.inner.set_len(len)?;
        let mut state = self.fs.lock();
        for (path, synced) in state.synced.iter_mut() {
            if *path == self.path {
                *synced = (*synced).min(len);
            }
        }
        Ok(())
    }

    /// Only a hint, which makes nothing durable: no fault is injected here.
    fn start_writeback(&mut self, from: u64, len: u64) {
        self.inner.start_writeback(from, len);
    }

    fn syncer(&self) -> io::Result<Box<dyn FileSyncer>> {
        Ok(Box::new(FaultySyncer {
            fs: self.fs.clone(),
            path: self.path.clone(),
            inner: self.inner.syncer()?,
        }))
    }
}

/// A sync from another thread: a fault point of its own, and durable only up to the length
/// written when it was asked for (the writer may have added more since).
struct FaultySyncer {
    fs: FaultyFs,
    path: PathBuf,
    inner: Box<dyn FileSyncer>,
}

impl FileSyncer for FaultySyncer {
    fn sync(&self, len: u64) -> io::Result<()> {
        self.fs.enter(&[&self.path])?;
        self.inner.sync(len)?;
        let already = self
            .fs
            .lock()
            .synced
            .iter()
            .find(|(path, _)| *path == self.path)
            .map_or(0, |(_, synced)| *synced);
        self.fs.track(&self.path, len.max(already));
        Ok(())
    }
}

impl FileSystem for FaultyFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DataFile>> {
        self.enter(&[path])?;
        let file = RealFs.create_new(path)?;
        self.track(path, 0);
        self.lock()
            .unsynced_entries
            .push(Entry::Created(path.to_path_buf()));
        Ok(self.file(path, file))
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn DataFile>> {
        self.enter(&[path])?;
        let existed = path.exists();
        let file = RealFs.create(path)?;
        self.track(path, 0);
        if !existed {
            self.lock()
                .unsynced_entries
                .push(Entry::Created(path.to_path_buf()));
        }
        Ok(self.file(path, file))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn DataFile>> {
        self.enter(&[path])?;
        let file = RealFs.open_append(path)?;
        self.track(path, fs::metadata(path)?.len());
        Ok(self.file(path, file))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.enter(&[from, to])?;
        let mut state = self.lock();
        let replaced = to.exists().then(|| {
            let copy = state.attic.join(format!("replaced-{}", state.points));
            let _ = fs::copy(to, &copy);
            copy
        });
        fs::rename(from, to)?;
        // The file replaced is gone: what is synced of `to` is now what was synced of `from`.
        state.synced.retain(|(path, _)| path != to);
        for (path, _) in state.synced.iter_mut() {
            if path == from {
                *path = to.to_path_buf();
            }
        }
        state.unsynced_entries.push(Entry::Renamed(
            from.to_path_buf(),
            to.to_path_buf(),
            replaced,
        ));
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.enter(&[path])?;
        RealFs.remove(path)?;
        self.lock().synced.retain(|(p, _)| p != path);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.enter(&[])?;
        RealFs.sync_dir(dir)?;
        self.lock().unsynced_entries.clear();
        Ok(())
    }
}
