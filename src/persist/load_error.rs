//! Why start-up could not load the data directory (or a replica its full sync's payload): in
//! which file, at which byte, and what was wrong, as a value the caller can tell apart. The
//! text each gives is the one start-up logs.

use std::fmt;
use std::io;
use std::path::PathBuf;

#[derive(Debug)]
pub struct LoadError {
    pub path: PathBuf,
    pub offset: u64,
    pub reason: LoadFailure,
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

/// What stopped a load.
#[derive(Debug)]
pub enum LoadFailure {
    /// The operating system refused a read, a removal, a rename or an open.
    Io(io::Error),
    /// The snapshot is damaged.
    Snapshot(SnapshotDamage),
    /// The snapshot that folds in a log nothing will append to could not be written.
    WriteSnapshot(io::Error),
    /// A record cut short by a crash could not be cut off the log's last segment.
    DropTorn(io::Error),
    /// An append-only file segment is damaged.
    Log(LogDamage),
    /// A write logged for a database past the number there are.
    LogDatabase { db: usize, databases: usize },
    /// A logged write the server could not apply: its command's name, and why.
    NotApplied { command: String, error: String },
    /// The append-only file's writer thread could not be started.
    LogWriter(io::Error),
}

impl fmt::Display for LoadFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadFailure::Io(error) => write!(f, "{error}"),
            LoadFailure::Snapshot(damage) => write!(f, "{damage}"),
            LoadFailure::WriteSnapshot(error) => write!(f, "cannot write a snapshot: {error}"),
            LoadFailure::DropTorn(error) => write!(f, "cannot drop the torn record: {error}"),
            LoadFailure::Log(damage) => write!(f, "{damage}"),
            LoadFailure::LogDatabase { db, databases } => write!(
                f,
                "a write logged for database {db}, but there are only {databases} (start with \
                 --databases {} or more)",
                db + 1
            ),
            LoadFailure::NotApplied { command, error } => {
                write!(f, "the logged write {command} cannot be applied: {error}")
            }
            LoadFailure::LogWriter(error) => write!(f, "cannot start the log writer: {error}"),
        }
    }
}

impl From<SnapshotDamage> for LoadFailure {
    fn from(damage: SnapshotDamage) -> LoadFailure {
        LoadFailure::Snapshot(damage)
    }
}

impl From<LogDamage> for LoadFailure {
    fn from(damage: LogDamage) -> LoadFailure {
        LoadFailure::Log(damage)
    }
}

impl From<io::Error> for LoadFailure {
    fn from(error: io::Error) -> LoadFailure {
        LoadFailure::Io(error)
    }
}

/// What is wrong with a snapshot file (`snapshot/format.rs` lays it out).
#[derive(Debug)]
pub enum SnapshotDamage {
    Truncated,
    BadMagic,
    /// A format version this build does not read: the version, and the range it reads.
    Version {
        version: u32,
        oldest: u32,
        newest: u32,
    },
    UnknownTag(u8),
    /// A header's replication position that is neither absent nor a hex id and offset.
    ReplPosition,
    /// A database past the number there are.
    Database(usize),
    UnknownKind(u8),
    /// A length field longer than what is left of the file (told when known).
    TooLong {
        what: &'static str,
        len: u64,
        left: Option<u64>,
    },
    /// A collection's contents that do not decode.
    Collection,
    /// A filter header that describes more bytes of arrays than its payload holds.
    FilterArrays {
        bytes: u64,
        payload: u64,
    },
    FilterMemory,
    FilterHeader,
    /// A payload of another length than its header describes.
    Payload,
    /// A record's or the file's checksum does not match.
    Checksum(&'static str),
    /// The end record's count of keys is not what the file holds.
    Count {
        counted: u64,
        found: u64,
    },
    TrailingBytes,
}

impl fmt::Display for SnapshotDamage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotDamage::Truncated => f.write_str("the file ends early (truncated?)"),
            SnapshotDamage::BadMagic => f.write_str("not a sieved snapshot (bad magic)"),
            SnapshotDamage::Version {
                version,
                oldest,
                newest,
            } => write!(
                f,
                "snapshot format version {version} is not supported (this build reads \
                 {oldest} to {newest})"
            ),
            SnapshotDamage::UnknownTag(tag) => write!(f, "unknown record tag {tag:#04x}"),
            SnapshotDamage::ReplPosition => {
                f.write_str("the replication position in the header is invalid")
            }
            SnapshotDamage::Database(db) => write!(
                f,
                "database {db} does not exist; start with --databases {}",
                db + 1
            ),
            SnapshotDamage::UnknownKind(kind) => write!(f, "unknown value kind {kind}"),
            SnapshotDamage::TooLong {
                what,
                len,
                left: Some(left),
            } => write!(
                f,
                "{what} length {len} is longer than the rest of the file ({left} bytes)"
            ),
            SnapshotDamage::TooLong {
                what,
                len,
                left: None,
            } => write!(f, "{what} length {len} is longer than the rest of the file"),
            SnapshotDamage::Collection => f.write_str("a collection's contents are invalid"),
            SnapshotDamage::FilterArrays { bytes, payload } => write!(
                f,
                "a filter header describes {bytes} bytes of arrays, but its payload holds \
                 {payload}"
            ),
            SnapshotDamage::FilterMemory => f.write_str("not enough memory for a filter"),
            SnapshotDamage::FilterHeader => f.write_str("a filter header is invalid"),
            SnapshotDamage::Payload => f.write_str("a payload does not fit its header"),
            SnapshotDamage::Checksum(what) => write!(f, "{what} checksum mismatch"),
            SnapshotDamage::Count { counted, found } => write!(
                f,
                "the end record counts {counted} keys but the file holds {found}"
            ),
            SnapshotDamage::TrailingBytes => f.write_str("bytes follow the end record"),
        }
    }
}

/// What is wrong with an append-only file segment, or a record of a replication stream in the
/// same format (`aof/format.rs` lays it out). Comparable, so tests can say which damage they
/// expect; a read error is told by its kind for that reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogDamage {
    BadMagic,
    /// A format version this build does not read: the version, and the two it reads.
    Version {
        version: u32,
        fixed_width: u32,
        current: u32,
    },
    ReservedField,
    /// The segment number in the header is not the one in the file's name.
    SegmentNumber {
        inside: u64,
        named: u64,
    },
    /// The header never fully reached the disk.
    HeaderIncomplete,
    /// The last record ends before its length says.
    CutShort,
    /// Zeros where the last record was to go.
    ZeroTail,
    /// A record's length field fails its own check.
    LengthField,
    /// A body length below the least a record holds.
    TooShort(u64),
    /// A body length outside what a stream's record may have.
    OutOfBounds(u64),
    /// A record fails its checksum with more of the file after it.
    Checksum,
    /// The last record fails its checksum.
    LastChecksum,
    /// A body whose checksum matched but whose contents do not parse.
    Malformed,
    /// The operating system refused a read.
    Unreadable(io::ErrorKind),
}

impl fmt::Display for LogDamage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogDamage::BadMagic => f.write_str("not a sieved append-only file (bad magic)"),
            LogDamage::Version {
                version,
                fixed_width,
                current,
            } => write!(
                f,
                "append-only file version {version} is not supported (this build reads \
                 {fixed_width} and {current})"
            ),
            LogDamage::ReservedField => {
                f.write_str("the reserved field of the file header is not zero")
            }
            LogDamage::SegmentNumber { inside, named } => write!(
                f,
                "the file says it is segment {inside}, its name says {named}"
            ),
            LogDamage::HeaderIncomplete => f.write_str("the file header is incomplete"),
            LogDamage::CutShort => f.write_str("the last record is cut short"),
            LogDamage::ZeroTail => f.write_str("the end of the file is zeros"),
            LogDamage::LengthField => f.write_str("a record's length field is damaged"),
            LogDamage::TooShort(len) => write!(f, "a record of {len} bytes is too short"),
            LogDamage::OutOfBounds(len) => write!(f, "a record of {len} bytes is out of bounds"),
            LogDamage::Checksum => f.write_str("a record fails its checksum"),
            LogDamage::LastChecksum => f.write_str("the last record fails its checksum"),
            LogDamage::Malformed => f.write_str("a record's contents are malformed"),
            LogDamage::Unreadable(kind) => write!(f, "cannot read: {kind}"),
        }
    }
}
