//! Writing a snapshot (the format is in `format.rs`): to a temporary file, synced, renamed
//! over the previous snapshot, and the directory synced, so that a crash at any instant leaves
//! either the old snapshot or the new one.

use super::format::{
    is_own_sync_payload, is_temp_file, temp_path, ReplPosition, FILE_NAME, LOCKED_PIECE, MAGIC,
    TAG_END, TAG_FUNCTION, TAG_KEY, VERSION,
};
use crate::persist::fs::{self, DataFile, FileSystem};
use crate::store::{now_ms, read, Store, ValueHandle};
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::Xxh3;

#[derive(Debug, Clone, Copy)]
pub struct SnapshotStats {
    pub keys: u64,
    pub bytes: u64,
    pub duration: Duration,
}

/// Which keys a snapshot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expired {
    /// Leaves out keys whose time has passed: the snapshot is all there is.
    Drop,
    /// Keeps every key, expired or not: log segments replayed on top of the snapshot may hold a
    /// write (a PERSIST, a longer EXPIRE) that found the key alive when it ran.
    Keep,
}

/// Writes a snapshot of `store` to `dir`, replacing the previous one only once the new one is
/// complete and on disk. `first_segment` is the first append-only file segment it does not hold.
/// It names no replication position.
pub fn write(
    fs: &dyn FileSystem,
    store: &Store,
    dir: &Path,
    first_segment: u64,
    expired: Expired,
) -> io::Result<SnapshotStats> {
    write_at(fs, store, dir, first_segment, expired, None)
}

/// `write`, naming the replication position `store` holds exactly (the caller keeps writes
/// out meanwhile: see `format.rs`).
pub fn write_at(
    fs: &dyn FileSystem,
    store: &Store,
    dir: &Path,
    first_segment: u64,
    expired: Expired,
    position: Option<ReplPosition>,
) -> io::Result<SnapshotStats> {
    let started = Instant::now();
    remove_leftovers(fs, dir)?;
    let final_path = dir.join(FILE_NAME);
    let temp_path = temp_path(dir);
    let written =
        write_file(fs, store, &temp_path, first_segment, expired, position).and_then(|counts| {
            // The rename frees the previous snapshot's blocks if it drops the last reference to
            // it, which for a large file takes a while (0.37 s for 1.8 GB on ext4 here). Holding it
            // open across the rename and closing it on a thread of its own keeps that out of the
            // save, as Redis does with its old files.
            let previous = std::fs::File::open(&final_path).ok();
            fs.rename(&temp_path, &final_path)?;
            fs.sync_dir(dir)?;
            if let Some(previous) = previous {
                // Should no thread start, the file is closed here instead.
                let _ = std::thread::Builder::new()
                    .name("sieved-close".into())
                    .spawn(move || drop(previous));
            }
            Ok(counts)
        });
    match written {
        Ok((keys, bytes)) => Ok(SnapshotStats {
            keys,
            bytes,
            duration: started.elapsed(),
        }),
        Err(error) => {
            let _ = fs::remove_if_present(fs, &temp_path);
            Err(error)
        }
    }
}

/// Removes the temporary files that snapshots cut short by a crash left in `dir`: they are of
/// no use, and each is as large as the data set.
pub fn remove_leftovers(fs: &dyn FileSystem, dir: &Path) -> io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        // A full sync of this process may be receiving its payload now (each link removes its
        // own file when it ends).
        if is_temp_file(name) && !is_own_sync_payload(name) {
            tracing::info!(file = %entry.path().display(), "removing a snapshot left unfinished");
            fs::remove_if_present(fs, &entry.path())?;
        }
    }
    Ok(())
}

/// The file as it is written: records are laid out in a large buffer, payloads copied into it
/// straight from the values, and written out in large writes. The checksums are computed over
/// the buffer a run at a time: a small record in one go, a large payload a piece at a time
/// while the piece is still in the cache.
struct Output<W: Write> {
    out: W,
    buffer: Vec<u8>,
    /// Bytes of `buffer` before this have been hashed.
    hashed: usize,
    file_hash: Xxh3,
    record_hash: Xxh3,
    /// Whether the bytes being laid out belong to a key record, whose checksum covers them.
    in_record: bool,
    /// Bytes written out so far.
    written: u64,
}

impl<W: Write> Output<W> {
    fn put(&mut self, data: &[u8]) {
        self.buffer.extend_from_slice(data);
    }

    /// Hashes what was laid out since the last call: a key record's bytes into its checksum,
    /// the rest (the file header, the records' checksums, the end record) into the file's.
    fn hash_pending(&mut self) {
        let pending = &self.buffer[self.hashed..];
        if self.in_record {
            self.record_hash.update(pending);
        } else {
            self.file_hash.update(pending);
        }
        self.hashed = self.buffer.len();
    }

    /// Writes the buffer out once it holds a write's worth.
    fn write_if_full(&mut self) -> io::Result<()> {
        if self.buffer.len() < WRITE {
            return Ok(());
        }
        self.hash_pending();
        self.out.write_all(&self.buffer)?;
        self.written += self.buffer.len() as u64;
        self.buffer.clear();
        self.hashed = 0;
        Ok(())
    }

    fn start_record(&mut self) {
        self.hash_pending();
        self.record_hash.reset();
        self.in_record = true;
    }

    /// Ends a key record with its checksum, which the file's checksum covers.
    fn end_record(&mut self) -> io::Result<()> {
        self.hash_pending();
        self.in_record = false;
        let checksum = self.record_hash.digest();
        self.put(&checksum.to_le_bytes());
        self.write_if_full()
    }

    /// Ends the file with the end record; returns the bytes written.
    fn finish(mut self, keys: u64) -> io::Result<u64> {
        self.put(&[TAG_END]);
        self.put(&keys.to_le_bytes());
        self.hash_pending();
        let checksum = self.file_hash.digest();
        self.put(&checksum.to_le_bytes());
        self.out.write_all(&self.buffer)?;
        self.out.flush()?;
        Ok(self.written + self.buffer.len() as u64)
    }
}

fn write_file(
    fs: &dyn FileSystem,
    store: &Store,
    path: &Path,
    first_segment: u64,
    expired: Expired,
    position: Option<ReplPosition>,
) -> io::Result<(u64, u64)> {
    let mut file: Box<dyn DataFile> = fs.create(path)?;
    let counts = write_to(
        fs::Writer::new(file.as_mut()),
        store,
        first_segment,
        expired,
        position,
    )?;
    file.sync()?;
    Ok(counts)
}

/// Writes a snapshot of `store` to `out`, which it flushes; returns the keys and bytes written.
/// Also a full sync's payload, streamed to a replica.
pub fn write_to(
    out: impl Write,
    store: &Store,
    first_segment: u64,
    expired: Expired,
    position: Option<ReplPosition>,
) -> io::Result<(u64, u64)> {
    let mut out = Output {
        out,
        buffer: Vec::with_capacity(WRITE + LOCKED_PIECE as usize),
        hashed: 0,
        file_hash: Xxh3::new(),
        record_hash: Xxh3::new(),
        in_record: false,
        written: 0,
    };
    let now = now_ms();
    // Time 0 finds every key alive.
    let alive_at = match expired {
        Expired::Drop => now,
        Expired::Keep => 0,
    };
    let first_segment = u32::try_from(first_segment)
        .map_err(|_| io::Error::other("append-only file segment numbers ran out"))?;
    out.put(MAGIC);
    out.put(&VERSION.to_le_bytes());
    out.put(&first_segment.to_le_bytes());
    out.put(&now.to_le_bytes());
    out.put(&[u8::from(position.is_some())]);
    out.put(&position.map_or([0; 40], |p| p.id));
    out.put(&position.map_or(0, |p| p.offset).to_le_bytes());
    let mut keys = 0u64;
    for (index, db) in store.dbs().enumerate() {
        for shard in 0..db.shard_count() {
            for (key, expires_at, value) in db.shard_entries(shard, alive_at) {
                write_record(&mut out, index as u16, &key, expires_at, &value)?;
                keys += 1;
            }
        }
    }
    for (name, code) in store.functions().codes().1 {
        write_function(&mut out, &name, &code)?;
    }
    let bytes = out.finish(keys)?;
    Ok((keys, bytes))
}

/// A function library's record: its name and code.
fn write_function<W: Write>(out: &mut Output<W>, name: &[u8], code: &[u8]) -> io::Result<()> {
    let too_long = || io::Error::other("a function library is too large for a snapshot record");
    let name_len = u32::try_from(name.len()).map_err(|_| too_long())?;
    let code_len = u32::try_from(code.len()).map_err(|_| too_long())?;
    out.start_record();
    out.put(&[TAG_FUNCTION]);
    out.put(&name_len.to_le_bytes());
    out.put(name);
    out.put(&code_len.to_le_bytes());
    out.put(code);
    out.end_record()
}

fn write_record<W: Write>(
    out: &mut Output<W>,
    db: u16,
    key: &[u8],
    expires_at: u64,
    value: &ValueHandle,
) -> io::Result<()> {
    out.start_record();
    // A small value is laid out whole under one lock: a counter (INCR) changes length in place,
    // and its header and payload must describe the same moment. A large one is copied in
    // pieces and can only grow meanwhile (strings grow in place, never shrink), so its first
    // `payload_len` bytes are still there.
    let payload_len = {
        let value = read(value);
        let header = value.snapshot_header();
        // A collection is all header; one past 4 GiB cannot be described, and must fail the
        // save rather than write a length that reads back as something else.
        let header_len = u32::try_from(header.len())
            .map_err(|_| io::Error::other("a collection is too large for a snapshot record"))?;
        let len = value.payload_len();
        out.put(&[TAG_KEY]);
        out.put(&db.to_le_bytes());
        out.put(&expires_at.to_le_bytes());
        out.put(&[value.kind() as u8]);
        out.put(&(key.len() as u32).to_le_bytes());
        out.put(key);
        out.put(&header_len.to_le_bytes());
        out.put(&header);
        out.put(&len.to_le_bytes());
        if len <= LOCKED_PIECE && !value.read_payload(0, len, &mut out.buffer) {
            return Err(io::Error::other(
                "a value's payload is shorter than its length",
            ));
        }
        len
    };
    let mut offset = if payload_len <= LOCKED_PIECE {
        payload_len
    } else {
        0
    };
    while offset < payload_len {
        let len = LOCKED_PIECE.min(payload_len - offset);
        if !read(value).read_payload(offset, len, &mut out.buffer) {
            return Err(io::Error::other(
                "a value changed shape while it was being saved",
            ));
        }
        out.hash_pending();
        out.write_if_full()?;
        offset += len;
    }
    out.end_record()
}

/// Snapshots are written out in pieces of this size: few system calls, and no larger, for
/// larger writes get the page cache's largest folios (2 MiB on Linux 6.x's ext4), which cost
/// more to set up where fresh memory is dear: on a virtual machine whose host takes back free
/// memory, writing 1.8 GB with one fsync took 1.9-7.0 s in 4 MiB writes against 0.8-1.0 s in
/// 1 MiB ones (`dd conv=fsync`).
const WRITE: usize = 1 << 20;
