//! Loading a snapshot. Every length is checked against what the rest of the file can hold before
//! anything is allocated; any damage is reported with the file name and the byte offset where it
//! was found.
//!
//! No setting limits what loads: a snapshot holds what was acknowledged, and lowering
//! `max-filter-memory` or `proto-max-bulk-len` since must not lose it. The file itself is the
//! bound: a value can be no larger than the bytes that hold it.

use super::format::{FILE_NAME, MAGIC, PIECE, TAG_END, TAG_KEY, VERSION, VERSION_CLASSIC_ONLY};
use crate::filter::FilterError;
use crate::store::{now_ms, Store, Value, ValueKind};
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::Xxh3;

/// What a successful load found.
#[derive(Debug, Clone, Copy)]
pub struct LoadReport {
    /// The first append-only file segment the snapshot does not hold.
    pub first_segment: u64,
    pub keys: u64,
    pub expired: u64,
    pub bytes: u64,
    pub duration: Duration,
}

#[derive(Debug)]
pub struct LoadError {
    pub path: PathBuf,
    pub offset: u64,
    pub reason: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot load {}: {} (at byte {})",
            self.path.display(),
            self.reason,
            self.offset
        )
    }
}

impl std::error::Error for LoadError {}

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
                reason: error.to_string(),
            })
        }
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let started = Instant::now();
    let mut reader = Reader {
        input: BufReader::with_capacity(PIECE as usize, file),
        size,
        offset: 0,
        file_hash: Xxh3::new(),
        record_hash: Xxh3::new(),
    };
    let result = load_records(store, &mut reader, &mut progress);
    let offset = reader.offset;
    result
        .map(|(first_segment, keys, expired)| {
            Some(LoadReport {
                first_segment,
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

struct Reader {
    input: BufReader<File>,
    size: u64,
    offset: u64,
    file_hash: Xxh3,
    record_hash: Xxh3,
}

impl Reader {
    fn fill(&mut self, buf: &mut [u8]) -> Result<(), String> {
        self.input
            .read_exact(buf)
            .map_err(|error| match error.kind() {
                io::ErrorKind::UnexpectedEof => "the file ends early (truncated?)".to_string(),
                _ => error.to_string(),
            })?;
        self.file_hash.update(buf);
        self.record_hash.update(buf);
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut buf = [0u8; N];
        self.fill(&mut buf)?;
        Ok(buf)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, String> {
        self.array().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Result<u32, String> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, String> {
        self.array().map(u64::from_le_bytes)
    }

    /// A length field, refused if larger than what is left of the file.
    fn length(&mut self, what: &str) -> Result<u64, String> {
        let len = self.u64()?;
        let left = self.size.saturating_sub(self.offset);
        if len > left {
            return Err(format!(
                "{what} length {len} is longer than the rest of the file ({left} bytes)"
            ));
        }
        Ok(len)
    }

    fn bytes(&mut self, len: u64) -> Result<Vec<u8>, String> {
        let mut buf = vec![0u8; len as usize];
        self.fill(&mut buf)?;
        Ok(buf)
    }

    /// Reads a checksum field and compares it with `expected`.
    fn check(&mut self, expected: u64, what: &str) -> Result<(), String> {
        let mut stored = [0u8; 8];
        self.input
            .read_exact(&mut stored)
            .map_err(|_| "the file ends early (truncated?)".to_string())?;
        self.offset += 8;
        if u64::from_le_bytes(stored) != expected {
            return Err(format!("{what} checksum mismatch"));
        }
        self.file_hash.update(&stored);
        Ok(())
    }
}

fn describe(kind: ValueKind, error: FilterError, payload_len: u64) -> String {
    match error {
        _ if matches!(
            kind,
            ValueKind::List | ValueKind::Set | ValueKind::ZSet | ValueKind::Hash
        ) =>
        {
            "a collection's contents are invalid".to_string()
        }
        FilterError::TooLarge { bytes, .. } => format!(
            "a filter header describes {bytes} bytes of arrays, but its payload holds {payload_len}"
        ),
        FilterError::OutOfMemory => "not enough memory for a filter".to_string(),
        _ => "a filter header is invalid".to_string(),
    }
}

fn load_records(
    store: &Store,
    reader: &mut Reader,
    progress: &mut impl FnMut(u64, u64),
) -> Result<(u64, u64, u64), String> {
    if &reader.array::<8>()? != MAGIC {
        return Err("not a sieved snapshot (bad magic)".into());
    }
    let version = reader.u32()?;
    if !(VERSION_CLASSIC_ONLY..=VERSION).contains(&version) {
        return Err(format!(
            "snapshot format version {version} is not supported (this build reads \
             {VERSION_CLASSIC_ONLY} to {VERSION})"
        ));
    }
    let first_segment = reader.u32()? as u64;
    reader.u64()?;
    let now = now_ms();
    let (mut keys, mut expired) = (0u64, 0u64);
    let mut piece = vec![0u8; PIECE as usize];
    loop {
        progress(reader.offset, reader.size);
        reader.record_hash.reset();
        match reader.u8()? {
            TAG_KEY => {}
            TAG_END => break,
            tag => return Err(format!("unknown record tag {tag:#04x}")),
        }
        let db = reader.u16()? as usize;
        if db >= store.databases() {
            return Err(format!(
                "database {db} does not exist; start with --databases {}",
                db + 1
            ));
        }
        let expires_at = reader.u64()?;
        let kind = reader.u8()?;
        let kind = ValueKind::from_tag(kind).ok_or_else(|| format!("unknown value kind {kind}"))?;
        let key_len = reader.u32()? as u64;
        let key = reader.bytes(reader_len_checked(reader, key_len, "key")?)?;
        let header_len = reader.u32()? as u64;
        let header = reader.bytes(reader_len_checked(reader, header_len, "header")?)?;
        let payload_len = reader.length("payload")?;
        // A filter's arrays are exactly its payload, so the payload's length is its limit.
        let mut value = Value::from_snapshot_header(kind, &header, payload_len, payload_len)
            .map_err(|error| describe(kind, error, payload_len))?;
        let mut offset = 0;
        while offset < payload_len {
            let len = PIECE.min(payload_len - offset) as usize;
            reader.fill(&mut piece[..len])?;
            value
                .write_payload(offset, &piece[..len])
                .map_err(|_| "a payload does not fit its header".to_string())?;
            offset += len as u64;
            progress(reader.offset, reader.size);
        }
        let checksum = reader.record_hash.digest();
        reader.check(checksum, "record")?;
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
    let checksum = reader.file_hash.digest();
    reader.check(checksum, "file")?;
    if count != keys + expired {
        return Err(format!(
            "the end record counts {count} keys but the file holds {}",
            keys + expired
        ));
    }
    if reader.offset != reader.size {
        return Err("bytes follow the end record".into());
    }
    Ok((first_segment, keys, expired))
}

/// Keys and headers are small; anything claiming more than the file holds is damage.
fn reader_len_checked(reader: &Reader, len: u64, what: &str) -> Result<u64, String> {
    let left = reader.size.saturating_sub(reader.offset);
    if len > left {
        return Err(format!(
            "{what} length {len} is longer than the rest of the file"
        ));
    }
    Ok(len)
}
