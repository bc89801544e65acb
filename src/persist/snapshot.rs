//! Writing a snapshot: see the module documentation of `persist` for the format.

use super::{FILE_NAME, LOCKED_PIECE, MAGIC, PIECE, TAG_END, TAG_KEY, VERSION};
use crate::store::{now_ms, read, Store, ValueHandle};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::Xxh3;

#[derive(Debug, Clone, Copy)]
pub struct SnapshotStats {
    pub keys: u64,
    pub bytes: u64,
    pub duration: Duration,
}

/// Writes a snapshot of `store` to `dir`, replacing the previous one only once the new one is
/// complete and on disk. `first_segment` is the first append-only file segment it does not hold.
pub fn write(store: &Store, dir: &Path, first_segment: u64) -> io::Result<SnapshotStats> {
    let started = Instant::now();
    let final_path = dir.join(FILE_NAME);
    let temp_path = dir.join(format!("{FILE_NAME}.tmp-{}", std::process::id()));
    let written = write_file(store, &temp_path, first_segment).and_then(|(keys, bytes)| {
        fs::rename(&temp_path, &final_path)?;
        File::open(dir)?.sync_all()?;
        Ok((keys, bytes))
    });
    match written {
        Ok((keys, bytes)) => Ok(SnapshotStats {
            keys,
            bytes,
            duration: started.elapsed(),
        }),
        Err(error) => {
            let _ = fs::remove_file(&temp_path);
            Err(error)
        }
    }
}

/// A writer that checksums everything it writes, per record and for the whole file.
struct Checksummed {
    out: BufWriter<File>,
    file_hash: Xxh3,
    record_hash: Xxh3,
    bytes: u64,
}

impl Checksummed {
    fn put(&mut self, data: &[u8]) -> io::Result<()> {
        self.file_hash.update(data);
        self.record_hash.update(data);
        self.bytes += data.len() as u64;
        self.out.write_all(data)
    }

    /// Writes a checksum field, which is itself covered by the file checksum.
    fn put_checksum(&mut self, checksum: u64) -> io::Result<()> {
        let bytes = checksum.to_le_bytes();
        self.file_hash.update(&bytes);
        self.bytes += 8;
        self.out.write_all(&bytes)
    }
}

fn write_file(store: &Store, path: &Path, first_segment: u64) -> io::Result<(u64, u64)> {
    let file = File::create(path)?;
    let mut out = Checksummed {
        out: BufWriter::with_capacity(PIECE as usize, file),
        file_hash: Xxh3::new(),
        record_hash: Xxh3::new(),
        bytes: 0,
    };
    let now = now_ms();
    out.put(MAGIC)?;
    out.put(&VERSION.to_le_bytes())?;
    let first_segment = u32::try_from(first_segment)
        .map_err(|_| io::Error::other("append-only file segment numbers ran out"))?;
    out.put(&first_segment.to_le_bytes())?;
    out.put(&now.to_le_bytes())?;
    let mut keys = 0u64;
    let mut piece = Vec::with_capacity(LOCKED_PIECE as usize);
    for (index, db) in store.dbs().enumerate() {
        for shard in 0..db.shard_count() {
            for (key, expires_at, value) in db.shard_entries(shard, now) {
                write_record(&mut out, index as u16, &key, expires_at, &value, &mut piece)?;
                keys += 1;
            }
        }
    }
    out.put(&[TAG_END])?;
    out.put(&keys.to_le_bytes())?;
    let checksum = out.file_hash.digest();
    out.put_checksum(checksum)?;
    let bytes = out.bytes;
    let file = out.out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    Ok((keys, bytes))
}

fn write_record(
    out: &mut Checksummed,
    db: u16,
    key: &[u8],
    expires_at: u64,
    value: &ValueHandle,
    piece: &mut Vec<u8>,
) -> io::Result<()> {
    let (kind, header, payload_len) = {
        let value = read(value);
        (value.kind(), value.snapshot_header(), value.payload_len())
    };
    out.record_hash.reset();
    out.put(&[TAG_KEY])?;
    out.put(&db.to_le_bytes())?;
    out.put(&expires_at.to_le_bytes())?;
    out.put(&[kind as u8])?;
    out.put(&(key.len() as u32).to_le_bytes())?;
    out.put(key)?;
    out.put(&(header.len() as u32).to_le_bytes())?;
    out.put(&header)?;
    out.put(&payload_len.to_le_bytes())?;
    let mut offset = 0;
    while offset < payload_len {
        let len = LOCKED_PIECE.min(payload_len - offset);
        piece.clear();
        if !read(value).read_payload(offset, len, piece) {
            return Err(io::Error::other(
                "a value changed shape while it was being saved",
            ));
        }
        out.put(piece)?;
        offset += len;
    }
    let checksum = out.record_hash.digest();
    out.put_checksum(checksum)
}
