//! Reading a Redis RDB file (versions 9 to 12: Redis 6.2 to 8), for `sieved import-rdb`. The
//! values themselves are decoded by the rest of `rdb`, which RESTORE shares; this is the file around
//! them:
//!
//! ```text
//! "REDIS" and the version as four ASCII digits
//! then opcodes, each a byte:
//!   0xFA AUX            two strings (redis-ver, ctime, ...), passed over
//!   0xFE SELECTDB       a length: the database of the keys after it
//!   0xFB RESIZEDB       two lengths (table size hints), passed over
//!   0xF4 SLOT_INFO      three lengths (cluster slot hints), passed over
//!   0xFD EXPIRETIME     4 bytes LE, seconds  } the expiry of the next key
//!   0xFC EXPIRETIME_MS  8 bytes LE, ms       }
//!   0xF8 IDLE           a length  } the LRU/LFU figures of the next key, passed over
//!   0xF9 FREQ           one byte  }
//!   0xF7 MODULE_AUX     a module's own data: its ID, a "when" field, then module fields
//!   0xF5 FUNCTION2      a library of functions: its code, one string
//!   0xFF EOF            then the CRC-64 of everything before it, 8 bytes LE (0: not computed)
//!   anything else       a value's type: the key (a string), then the value
//! ```
//! Nothing is trusted: every length is held to what the file has left before it is allocated,
//! and the checksum is checked once the end is reached; the caller keeps what it was given only
//! if the whole file read cleanly. The file is only ever opened for reading.

use super::{
    crc64, describe_module, is_value_type, read_array, read_length, read_string, read_u8,
    read_value, skip_module_fields, Decoded, Input, Limits, RdbError, RdbResult, MAX_VERSION,
};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

const OLDEST_VERSION: u16 = 9;
const OPCODE_FUNCTION2: u8 = 0xf5;
const OPCODE_FUNCTION_PRE_GA: u8 = 0xf6;
const OPCODE_SLOT_INFO: u8 = 0xf4;
const OPCODE_MODULE_AUX: u8 = 0xf7;
const OPCODE_IDLE: u8 = 0xf8;
const OPCODE_FREQ: u8 = 0xf9;
const OPCODE_AUX: u8 = 0xfa;
const OPCODE_RESIZEDB: u8 = 0xfb;
const OPCODE_EXPIRETIME_MS: u8 = 0xfc;
const OPCODE_EXPIRETIME: u8 = 0xfd;
const OPCODE_SELECTDB: u8 = 0xfe;
const OPCODE_EOF: u8 = 0xff;
/// A module's auxiliary data announces its fields with this opcode (unsigned).
const MODULE_OPCODE_UINT: u64 = 2;

/// One key of the file.
pub struct Entry {
    pub db: usize,
    pub key: Vec<u8>,
    /// Unix milliseconds; 0 for none.
    pub expires_at: u64,
    pub value: Decoded,
}

/// What the file held besides its keys.
#[derive(Debug, Default)]
pub struct FileSummary {
    pub version: u16,
    /// The AUX field `redis-ver`, when present.
    pub redis_version: Option<String>,
    pub bytes: u64,
    /// The code of each function library, in the file's order.
    pub functions: Vec<Vec<u8>>,
    /// Module auxiliary data passed over, described.
    pub skipped_extras: Vec<String>,
}

/// Why a file could not be read, and where.
#[derive(Debug)]
pub struct FileError {
    pub path: PathBuf,
    pub offset: u64,
    pub reason: ReadFailure,
}

/// What stopped the reading of a file.
#[derive(Debug)]
pub enum ReadFailure {
    /// The file could not be opened, or its size read.
    Io(io::Error),
    /// A field cut short or invalid.
    Field(RdbError),
    /// No `REDIS` signature.
    NotRdb,
    /// A version this build does not read.
    Version(u16),
    /// A database at or past the number of databases imported into.
    Database(u64),
    ModuleAux,
    /// Functions as Redis 7.0's release candidates wrote them.
    PreGaFunctions,
    UnknownOpcode(u8),
    /// A value that cannot be decoded, with (the start of) its key.
    Value {
        key: Vec<u8>,
        error: RdbError,
    },
    Checksum,
    /// Bytes after the checksum.
    TrailingBytes(u64),
    /// The caller's `visit` refused an entry, for this reason.
    Refused(String),
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadFailure::Io(error) => write!(f, "{error}"),
            ReadFailure::Field(error) => write!(f, "{error}"),
            ReadFailure::NotRdb => f.write_str("not an RDB file (no REDIS signature)"),
            ReadFailure::Version(version) => write!(
                f,
                "RDB version {version} is not supported (this build reads {OLDEST_VERSION} to \
                 {MAX_VERSION}, written by Redis 6.2 to 8)"
            ),
            ReadFailure::Database(index) => write!(
                f,
                "the file has database {index}; import with --databases {}",
                index.saturating_add(1)
            ),
            ReadFailure::ModuleAux => f.write_str("module auxiliary data is invalid"),
            ReadFailure::PreGaFunctions => {
                f.write_str("functions as Redis 7.0's release candidates wrote them")
            }
            ReadFailure::UnknownOpcode(opcode) => write!(f, "unknown opcode {opcode:#04x}"),
            ReadFailure::Value { key, error } => {
                write!(f, "key '{}': {error}", String::from_utf8_lossy(key))
            }
            ReadFailure::Checksum => f.write_str("checksum mismatch: the file is damaged"),
            ReadFailure::TrailingBytes(len) => write!(
                f,
                "{len} bytes follow the end of the data (an AOF with an RDB preamble? import \
                 its rewritten base file instead)"
            ),
            ReadFailure::Refused(why) => f.write_str(why),
        }
    }
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot read {}: {} (at byte {})",
            self.path.display(),
            self.reason,
            self.offset
        )
    }
}

impl std::error::Error for FileError {}

/// The file as the value codec reads it: buffered, checksummed as it goes, its size the bound of
/// every length.
struct FileInput {
    input: BufReader<File>,
    size: u64,
    offset: u64,
    crc: crc64::Running,
}

impl Input for FileInput {
    fn remaining(&self) -> u64 {
        self.size.saturating_sub(self.offset)
    }

    fn fill(&mut self, buf: &mut [u8]) -> RdbResult<()> {
        self.input
            .read_exact(buf)
            .map_err(|error| match error.kind() {
                io::ErrorKind::UnexpectedEof => RdbError::Truncated,
                _ => RdbError::Io(error.to_string()),
            })?;
        self.crc.update(buf);
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn skip(&mut self, mut len: u64) -> RdbResult<()> {
        if len > self.remaining() {
            return Err(RdbError::Truncated);
        }
        let mut piece = [0u8; 8192];
        while len > 0 {
            let n = len.min(piece.len() as u64) as usize;
            self.fill(&mut piece[..n])?;
            len -= n as u64;
        }
        Ok(())
    }
}

/// The base file a Redis 7 multi-part AOF manifest names (`file <name> seq <n> type b`), which
/// holds the data set as of the last rewrite. Refused if an increment file after it is not
/// empty: its writes would be lost (BGREWRITEAOF on the source folds them into a new base).
pub fn manifest_base(manifest: &Path) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string(manifest)
        .map_err(|error| format!("cannot read {}: {error}", manifest.display()))?;
    let dir = manifest.parent().unwrap_or(Path::new("."));
    let mut base = None;
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let field = |name: &str| {
            words
                .chunks(2)
                .find(|pair| pair[0] == name)
                .and_then(|pair| pair.get(1).copied())
        };
        let (Some(file), Some(kind)) = (field("file"), field("type")) else {
            return Err(format!(
                "{}: not a manifest line: {line}",
                manifest.display()
            ));
        };
        // A name is the file's name alone: nothing may lead outside the manifest's directory.
        if file.contains('/') {
            return Err(format!(
                "{}: the file name {file} has a path",
                manifest.display()
            ));
        }
        let path = dir.join(file);
        match kind {
            "b" => base = Some(path),
            "i" => {
                let len = std::fs::metadata(&path)
                    .map(|m| m.len())
                    .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
                if len > 0 {
                    return Err(format!(
                        "{} holds {len} bytes of writes after the base file, which import-rdb \
                         cannot apply; run BGREWRITEAOF on the source first",
                        path.display()
                    ));
                }
            }
            // A history file is superseded by the base.
            _ => {}
        }
    }
    base.ok_or_else(|| format!("{}: no base file", manifest.display()))
}

/// Reads the RDB file at `path`, giving each key to `visit` in order; `progress` is told the
/// bytes read and the file's size as it goes. `databases` bounds the database numbers.
pub fn read_file(
    path: &Path,
    databases: usize,
    limits: &Limits,
    mut progress: impl FnMut(u64, u64),
    mut visit: impl FnMut(Entry) -> Result<(), String>,
) -> Result<FileSummary, FileError> {
    let fail = |offset, reason: ReadFailure| FileError {
        path: path.to_path_buf(),
        offset,
        reason,
    };
    let file = File::open(path).map_err(|error| fail(0, ReadFailure::Io(error)))?;
    let size = file
        .metadata()
        .map_err(|error| fail(0, ReadFailure::Io(error)))?
        .len();
    let mut input = FileInput {
        input: BufReader::with_capacity(1 << 20, file),
        size,
        offset: 0,
        crc: crc64::running(),
    };
    let mut summary = FileSummary {
        bytes: size,
        ..FileSummary::default()
    };
    let result = read_entries(
        &mut input,
        databases,
        limits,
        &mut summary,
        &mut progress,
        &mut visit,
    );
    progress(input.offset, size);
    result
        .map(|()| summary)
        .map_err(|reason| fail(input.offset, reason))
}

fn read_entries(
    input: &mut FileInput,
    databases: usize,
    limits: &Limits,
    summary: &mut FileSummary,
    progress: &mut impl FnMut(u64, u64),
    visit: &mut impl FnMut(Entry) -> Result<(), String>,
) -> Result<(), ReadFailure> {
    let text = ReadFailure::Field;
    let magic: [u8; 9] = read_array(input).map_err(text)?;
    let version = std::str::from_utf8(&magic[5..])
        .ok()
        .filter(|_| &magic[..5] == b"REDIS")
        .and_then(|digits| digits.parse::<u16>().ok())
        .ok_or(ReadFailure::NotRdb)?;
    if !(OLDEST_VERSION..=MAX_VERSION).contains(&version) {
        return Err(ReadFailure::Version(version));
    }
    summary.version = version;
    let (mut db, mut expires_at) = (0usize, 0u64);
    let mut last_report = 0u64;
    loop {
        if input.offset - last_report >= 1 << 20 {
            progress(input.offset, input.size);
            last_report = input.offset;
        }
        let opcode = read_u8(input).map_err(text)?;
        match opcode {
            OPCODE_EOF => break,
            OPCODE_SELECTDB => {
                let index = read_length(input).map_err(text)?;
                db = usize::try_from(index)
                    .ok()
                    .filter(|&index| index < databases)
                    .ok_or(ReadFailure::Database(index))?;
            }
            OPCODE_RESIZEDB => {
                read_length(input).map_err(text)?;
                read_length(input).map_err(text)?;
            }
            OPCODE_SLOT_INFO => {
                for _ in 0..3 {
                    read_length(input).map_err(text)?;
                }
            }
            OPCODE_EXPIRETIME => {
                let seconds = u32::from_le_bytes(read_array(input).map_err(text)?);
                expires_at = u64::from(seconds) * 1000;
            }
            OPCODE_EXPIRETIME_MS => {
                expires_at = u64::from_le_bytes(read_array(input).map_err(text)?);
            }
            OPCODE_IDLE => {
                read_length(input).map_err(text)?;
            }
            OPCODE_FREQ => {
                read_u8(input).map_err(text)?;
            }
            OPCODE_AUX => {
                let field = read_string(input, u64::MAX).map_err(text)?;
                let value = read_string(input, u64::MAX).map_err(text)?;
                if field == b"redis-ver" {
                    summary.redis_version = Some(String::from_utf8_lossy(&value).into_owned());
                }
            }
            OPCODE_MODULE_AUX => {
                let id = read_length(input).map_err(text)?;
                if read_length(input).map_err(text)? != MODULE_OPCODE_UINT {
                    return Err(ReadFailure::ModuleAux);
                }
                read_length(input).map_err(text)?;
                skip_module_fields(input).map_err(text)?;
                summary
                    .skipped_extras
                    .push(format!("auxiliary data of {}", describe_module(id)));
            }
            OPCODE_FUNCTION2 => {
                let code = read_string(input, u64::MAX).map_err(text)?;
                summary.functions.push(code);
            }
            OPCODE_FUNCTION_PRE_GA => return Err(ReadFailure::PreGaFunctions),
            rdb_type if is_value_type(rdb_type) => {
                let key = read_string(input, u64::MAX).map_err(text)?;
                let value =
                    read_value(input, rdb_type, limits).map_err(|error| ReadFailure::Value {
                        key: key[..key.len().min(100)].to_vec(),
                        error,
                    })?;
                visit(Entry {
                    db,
                    key,
                    expires_at: std::mem::take(&mut expires_at),
                    value,
                })
                .map_err(ReadFailure::Refused)?;
            }
            other => return Err(ReadFailure::UnknownOpcode(other)),
        }
    }
    let computed = input.crc.clone().finalize();
    let stored = u64::from_le_bytes(read_array(input).map_err(text)?);
    if stored != 0 && stored != computed {
        return Err(ReadFailure::Checksum);
    }
    if input.remaining() != 0 {
        return Err(ReadFailure::TrailingBytes(input.remaining()));
    }
    Ok(())
}

/// Whether `path` looks like a multi-part AOF manifest rather than an RDB file.
pub fn is_manifest(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut first = String::new();
    let _ = BufReader::new(file).take(512).read_line(&mut first);
    first.starts_with("file ")
}
