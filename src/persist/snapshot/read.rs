//! Loading a snapshot. Every length is checked against what the rest of the file can hold before
//! anything is allocated; any damage is reported with the file name and the byte offset where it
//! was found.
//!
//! No setting limits what loads: a snapshot holds what was acknowledged, and lowering
//! `max-filter-memory` or `proto-max-bulk-len` since must not lose it. The file itself is the
//! bound: a value can be no larger than the bytes that hold it.

use super::format::{
    ReplPosition, FILE_NAME, MAGIC, TAG_END, TAG_FUNCTION, TAG_KEY, VERSION, VERSION_CLASSIC_ONLY,
    VERSION_POSITION, VERSION_WHOLE_FILE_CHECKSUM,
};
use super::prefault::fill_faulting_ahead;
use crate::filter::FilterError;
use crate::persist::load_error::{LoadError, LoadFailure, SnapshotDamage};
use crate::store::{now_ms, Store, Value, ValueKind};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::Xxh3;

/// What a successful load found.
#[derive(Debug, Clone, Copy)]
pub struct LoadReport {
    /// The first append-only file segment the snapshot does not hold.
    pub first_segment: u64,
    /// The replication position the snapshot holds exactly, if it names one.
    pub position: Option<ReplPosition>,
    pub keys: u64,
    pub expired: u64,
    pub bytes: u64,
    pub duration: Duration,
}

/// Loads `<dir>/sieved.snap` into an empty `store`; Ok(None) if there is no snapshot.
/// `progress` is called with (bytes read, file size) as the load advances.
pub fn load(
    store: &Store,
    dir: &Path,
    progress: impl FnMut(u64, u64),
) -> Result<Option<LoadReport>, LoadError> {
    load_file(store, &dir.join(FILE_NAME), progress)
}

/// Loads the snapshot at `path` (a replica's full sync payload, say) into an empty `store`;
/// Ok(None) if there is no such file.
pub fn load_file(
    store: &Store,
    path: &Path,
    mut progress: impl FnMut(u64, u64),
) -> Result<Option<LoadReport>, LoadError> {
    let path = path.to_path_buf();
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => {
            return Err(LoadError {
                path,
                offset: 0,
                reason: LoadFailure::Io(error),
            })
        }
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    advise_sequential(&file);
    let started = Instant::now();
    let mut reader = Reader {
        file,
        buffer: vec![0; BUFFER].into_boxed_slice(),
        at: 0,
        end: 0,
        hashed: 0,
        size,
        offset: 0,
        file_hash: Xxh3::new(),
        record_hash: Xxh3::new(),
        in_record: false,
        whole_file_checksum: false,
    };
    let result = load_records(store, &mut reader, &mut progress);
    let offset = reader.offset;
    result
        .map(|(first_segment, position, keys, expired)| {
            Some(LoadReport {
                first_segment,
                position,
                keys,
                expired,
                bytes: size,
                duration: started.elapsed(),
            })
        })
        .map_err(|reason| LoadError {
            path,
            offset,
            reason,
        })
}

/// Tells the kernel the file is read once from start to end, so that it reads further ahead.
fn advise_sequential(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: the descriptor is open for as long as `file` is; the advice changes only how
        // the kernel caches the file, and a failure changes nothing.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Reads the file in large pieces. Fields are taken from a buffer; a payload (or any long run
/// of bytes) is read from the file straight into its destination, a value's own memory, and
/// hashed there while it is still in the cache. Bytes taken from the buffer are hashed lazily,
/// a run at a time, rather than field by field.
struct Reader {
    file: File,
    buffer: Box<[u8]>,
    /// The next byte of `buffer` to take.
    at: usize,
    /// Where what has been read into `buffer` ends.
    end: usize,
    /// Bytes of `buffer` before this have been hashed; those from here to `at` are taken but
    /// not hashed yet.
    hashed: usize,
    size: u64,
    /// Bytes of the file taken so far.
    offset: u64,
    file_hash: Xxh3,
    record_hash: Xxh3,
    /// Whether the bytes taken belong to a key record, and so to its checksum.
    in_record: bool,
    /// Whether the file's checksum covers the key records' bytes too (versions 1 to 3).
    whole_file_checksum: bool,
}

impl Reader {
    /// Hashes `bytes`, the next ones of the file: into the record's checksum while in a key
    /// record, into the file's otherwise (and always, in a file of version 3 or before).
    fn hash(&mut self, bytes: &[u8]) {
        if self.in_record {
            self.record_hash.update(bytes);
        }
        if !self.in_record || self.whole_file_checksum {
            self.file_hash.update(bytes);
        }
    }

    /// Hashes the bytes taken from the buffer and not hashed yet.
    fn hash_taken(&mut self) {
        let (from, to) = (self.hashed, self.at);
        if from < to {
            let buffer = std::mem::take(&mut self.buffer);
            self.hash(&buffer[from..to]);
            self.buffer = buffer;
        }
        self.hashed = self.at;
    }

    /// Reads until at least `want` bytes are waiting in the buffer (`want` at most its size).
    fn ensure(&mut self, want: usize) -> Result<(), LoadFailure> {
        if self.end - self.at >= want {
            return Ok(());
        }
        self.hash_taken();
        self.buffer.copy_within(self.at..self.end, 0);
        self.end -= self.at;
        (self.at, self.hashed) = (0, 0);
        while self.end < want {
            match self.file.read(&mut self.buffer[self.end..]) {
                Ok(0) => return Err(SnapshotDamage::Truncated.into()),
                Ok(read) => self.end += read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }

    /// The next `n` bytes, from the buffer (`n` at most its size).
    fn take(&mut self, n: usize) -> Result<&[u8], LoadFailure> {
        self.ensure(n)?;
        let at = self.at;
        self.at += n;
        self.offset += n as u64;
        Ok(&self.buffer[at..at + n])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], LoadFailure> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    fn u8(&mut self) -> Result<u8, LoadFailure> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, LoadFailure> {
        self.array().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Result<u32, LoadFailure> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, LoadFailure> {
        self.array().map(u64::from_le_bytes)
    }

    /// Fills `out` with the next bytes of the file: what the buffer holds, then, for a long
    /// run, large reads straight into `out`, each hashed as soon as it has landed.
    fn fill(&mut self, out: &mut [u8]) -> Result<(), LoadFailure> {
        let waiting = out.len().min(self.end - self.at);
        let (head, rest) = out.split_at_mut(waiting);
        head.copy_from_slice(&self.buffer[self.at..self.at + waiting]);
        self.at += waiting;
        self.offset += waiting as u64;
        if rest.len() < BUFFER / 2 {
            if !rest.is_empty() {
                let n = rest.len();
                rest.copy_from_slice(self.take(n)?);
            }
            return Ok(());
        }
        self.hash_taken();
        for chunk in rest.chunks_mut(DIRECT_READ) {
            self.file
                .read_exact(chunk)
                .map_err(|error| match error.kind() {
                    io::ErrorKind::UnexpectedEof => SnapshotDamage::Truncated.into(),
                    _ => LoadFailure::Io(error),
                })?;
            self.hash(chunk);
            self.offset += chunk.len() as u64;
        }
        Ok(())
    }

    /// A length field, refused if larger than what is left of the file.
    fn length(&mut self, what: &'static str) -> Result<u64, LoadFailure> {
        let len = self.u64()?;
        let left = self.size.saturating_sub(self.offset);
        if len > left {
            return Err(SnapshotDamage::TooLong {
                what,
                len,
                left: Some(left),
            }
            .into());
        }
        Ok(len)
    }

    fn bytes(&mut self, len: u64) -> Result<Vec<u8>, LoadFailure> {
        let mut buf = vec![0u8; len as usize];
        self.fill(&mut buf)?;
        Ok(buf)
    }

    /// Starts the next record, a key record unless its tag says otherwise: a key record's
    /// checksum covers the bytes from its tag on.
    fn start_record(&mut self) {
        self.hash_taken();
        self.record_hash.reset();
        self.in_record = true;
    }

    /// Reads a checksum field and compares it with what the bytes before it hash to (`digest`
    /// of the hashers); the field itself is part of the file's checksum.
    fn check(&mut self, digest: fn(&Reader) -> u64, what: &'static str) -> Result<(), LoadFailure> {
        self.hash_taken();
        self.in_record = false;
        let expected = digest(self);
        let stored = self.array::<8>()?;
        if u64::from_le_bytes(stored) != expected {
            return Err(SnapshotDamage::Checksum(what).into());
        }
        self.hash_taken();
        Ok(())
    }
}

/// The buffer that fields are read through: large reads, few system calls.
const BUFFER: usize = 1 << 20;
/// Runs of bytes are read straight into their destination in reads of this size, each hashed
/// as soon as it lands, while it is still in the cache.
const DIRECT_READ: usize = 4 << 20;
/// The load reports its progress about this often.
const PROGRESS_STEP: u64 = 64 << 20;

fn describe(kind: ValueKind, error: FilterError, payload_len: u64) -> SnapshotDamage {
    match error {
        _ if matches!(
            kind,
            ValueKind::List | ValueKind::Set | ValueKind::ZSet | ValueKind::Hash
        ) =>
        {
            SnapshotDamage::Collection
        }
        FilterError::TooLarge { bytes, .. } => SnapshotDamage::FilterArrays {
            bytes,
            payload: payload_len,
        },
        FilterError::OutOfMemory => SnapshotDamage::FilterMemory,
        _ => SnapshotDamage::FilterHeader,
    }
}

fn load_records(
    store: &Store,
    reader: &mut Reader,
    progress: &mut impl FnMut(u64, u64),
) -> Result<(u64, Option<ReplPosition>, u64, u64), LoadFailure> {
    if &reader.array::<8>()? != MAGIC {
        return Err(SnapshotDamage::BadMagic.into());
    }
    let version = reader.u32()?;
    if !(VERSION_CLASSIC_ONLY..=VERSION).contains(&version) {
        return Err(SnapshotDamage::Version {
            version,
            oldest: VERSION_CLASSIC_ONLY,
            newest: VERSION,
        }
        .into());
    }
    reader.whole_file_checksum = version <= VERSION_WHOLE_FILE_CHECKSUM;
    let first_segment = reader.u32()? as u64;
    reader.u64()?;
    let position = match version >= VERSION_POSITION {
        true => {
            let named = reader.u8()?;
            let id = reader.array::<40>()?;
            let offset = reader.u64()?;
            match named {
                0 => None,
                1 if id.iter().all(u8::is_ascii_hexdigit) => Some(ReplPosition { id, offset }),
                _ => return Err(SnapshotDamage::ReplPosition.into()),
            }
        }
        false => None,
    };
    let now = now_ms();
    let (mut keys, mut expired) = (0u64, 0u64);
    let mut reported = 0;
    loop {
        if reader.offset >= reported + PROGRESS_STEP {
            reported = reader.offset;
            progress(reader.offset, reader.size);
        }
        reader.start_record();
        match reader.u8()? {
            TAG_KEY => {}
            TAG_FUNCTION => {
                let name_len = reader.u32()? as u64;
                let name = reader.bytes(reader_len_checked(reader, name_len, "library name")?)?;
                let code_len = reader.u32()? as u64;
                let code = reader.bytes(reader_len_checked(reader, code_len, "library code")?)?;
                reader.check(|reader| reader.record_hash.digest(), "record")?;
                store.functions().insert(&name, &code);
                continue;
            }
            TAG_END => {
                // The end record is no key record: the file's checksum covers it.
                reader.in_record = false;
                break;
            }
            tag => return Err(SnapshotDamage::UnknownTag(tag).into()),
        }
        let db = reader.u16()? as usize;
        if db >= store.databases() {
            return Err(SnapshotDamage::Database(db).into());
        }
        let expires_at = reader.u64()?;
        let kind = reader.u8()?;
        let kind = ValueKind::from_tag(kind).ok_or(SnapshotDamage::UnknownKind(kind))?;
        let key_len = reader.u32()? as u64;
        let key = reader.bytes(reader_len_checked(reader, key_len, "key")?)?;
        let header_len = reader.u32()? as u64;
        let header = reader.bytes(reader_len_checked(reader, header_len, "header")?)?;
        let payload_len = reader.length("payload")?;
        // A filter's arrays are exactly its payload, so the payload's length is its limit.
        let mut value = Value::from_snapshot_header(kind, &header, payload_len, payload_len)
            .map_err(|error| describe(kind, error, payload_len))?;
        value
            .fill_payload(payload_len, |memory| {
                fill_faulting_ahead(memory, DIRECT_READ, |piece| {
                    reader.fill(piece)?;
                    if reader.offset >= reported + PROGRESS_STEP {
                        reported = reader.offset;
                        progress(reader.offset, reader.size);
                    }
                    Ok::<(), LoadFailure>(())
                })
            })
            .map_err(|_| SnapshotDamage::Payload)??;
        reader.check(|reader| reader.record_hash.digest(), "record")?;
        // A key that has expired is kept until the sweeper removes it: writes replayed from
        // the append-only file ran while it was alive, and must find it as they did then.
        if expires_at != 0 && expires_at <= now {
            expired += 1;
        } else {
            keys += 1;
        }
        store.db(db).insert(&key, value, expires_at);
    }
    let count = reader.u64()?;
    reader.check(|reader| reader.file_hash.digest(), "file")?;
    if count != keys + expired {
        return Err(SnapshotDamage::Count {
            counted: count,
            found: keys + expired,
        }
        .into());
    }
    if reader.offset != reader.size {
        return Err(SnapshotDamage::TrailingBytes.into());
    }
    Ok((first_segment, position, keys, expired))
}

/// Keys and headers are small; anything claiming more than the file holds is damage.
fn reader_len_checked(reader: &Reader, len: u64, what: &'static str) -> Result<u64, LoadFailure> {
    let left = reader.size.saturating_sub(reader.offset);
    if len > left {
        return Err(SnapshotDamage::TooLong {
            what,
            len,
            left: None,
        }
        .into());
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::fs::RealFs;
    use crate::persist::snapshot::{write, Expired};

    /// Lengths that put each field of the record, and the end record after it, across the end
    /// of the read buffer, for a string read through the buffer and one read past it.
    #[test]
    fn every_field_may_straddle_the_end_of_the_buffer() {
        let dir = std::env::temp_dir().join(format!("sieved-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("directory");
        // The file header (73 bytes) and the record's fields before the payload (37 with a key
        // of one byte) come before the payload; the end record's tag after its checksum.
        let fields = 73 + 37 + 8;
        let around = |edge: usize| (edge - fields - 30)..(edge - fields + 30);
        for len in around(BUFFER).chain(around(BUFFER / 2)) {
            let store = Store::new(1, 1);
            let value: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
            store.db(0).insert(b"k", Value::String(value.clone()), 0);
            write(&RealFs, &store, &dir, 0, Expired::Keep).expect("snapshot");
            let loaded = Store::new(1, 1);
            load(&loaded, &dir, |_, _| {})
                .unwrap_or_else(|error| panic!("{len}: {error}"))
                .expect("a snapshot");
            let same = loaded.db(0).get(
                b"k",
                0,
                |found| matches!(found, Some(Value::String(bytes)) if *bytes == value),
            );
            assert!(same, "{len}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
