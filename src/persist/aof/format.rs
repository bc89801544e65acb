//! The append-only file, byte by byte.
//!
//! With `appendonly yes`, every write command that succeeded is appended, in the order the writes
//! took effect, to `<dir>/sieved-<n>.aof`, segment `n`. Start-up loads the snapshot, then replays
//! the segments from the snapshot's first log segment on, each command at the time it first ran
//! (so expiry decides as it did then). A compaction starts a new segment, folds the snapshot and
//! the segments before the new one into a new snapshot, and then deletes them.
//!
//! Integers are little-endian; "varint" is LEB128 (7 bits a byte, low first, the high bit set on
//! every byte but the last; at most 10 bytes).
//!
//! ```text
//! offset  size  field
//! 0       8     magic "SIEVEDAO"
//! 8       4     format version, 2 (1 is still read)
//! 12      4     reserved, 0
//! 16      8     segment number, as in the file name
//! 24      ...   records
//!
//! record
//! 0       8     body length L, at least 9
//! 8       4     the low 32 bits of the xxh3-64 of the 8 bytes of L, so that a damaged length
//!               is told apart from a record cut short by a crash
//! 12      L     body
//! 12+L    8     xxh3-64 of the body
//!
//! body
//! 0       8     time the commands ran, Unix milliseconds
//! 8       var   number of commands C (varint): 1, or those of one transaction, which replay
//!               together
//! ...     ...   C commands: database index (varint), argument count A (varint), then A
//!               arguments, each a length (varint) and its bytes; the first argument is the
//!               command's name
//! ```
//!
//! Version 1 differs in three fields only: the body length is 4 bytes (its check covers those 4),
//! and the command count, database index, argument count and argument lengths are fixed-width
//! (4, 2, 4 and 4 bytes). It could not hold a record of 4 GiB or more, which a transaction or a
//! raised `proto-max-bulk-len` can reach. New segments are always version 2; a version 1 segment
//! is read, and never appended to.
//!
//! A record that is cut short or fails its checksum at the very end of the last segment is
//! what a crash during a write leaves: it is dropped with a warning and the file is truncated
//! to the records before it. Damage anywhere else stops start-up with the file and the offset,
//! unless `aof-load-damaged` is `yes`, which keeps the records before the damage, sets the
//! damaged file aside under a new name and writes a snapshot of what was loaded.

use crate::persist::load_error::{LoadFailure, LogDamage};
use crate::protocol::Request;
use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 8] = b"SIEVEDAO";
pub(crate) const VERSION: u32 = 2;
/// Fixed-width fields and a 4-byte record length.
const VERSION_FIXED_WIDTH: u32 = 1;
/// Bytes before the first record: magic, version, reserved, segment number.
pub const FILE_HEADER_LEN: u64 = 24;
/// A record's length field and the check of that field.
const RECORD_HEAD_LEN: usize = 12;
const RECORD_HEAD_LEN_V1: usize = 8;
/// A record's body checksum.
const RECORD_TAIL_LEN: usize = 8;
/// The body's time, and the smallest command count.
const BODY_MIN_LEN: u64 = 9;
const BODY_MIN_LEN_V1: u64 = 12;

/// `<dir>/sieved-<n>.aof`: segments are numbered from 1, and a snapshot names the first one
/// that is not folded into it.
pub fn segment_path(dir: &Path, segment: u64) -> PathBuf {
    dir.join(format!("sieved-{segment}.aof"))
}

/// The log segments in `dir`, in order.
pub fn list_segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut segments = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(segments),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let number = name
            .to_str()
            .and_then(|name| name.strip_prefix("sieved-"))
            .and_then(|rest| rest.strip_suffix(".aof"))
            .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u64>().ok());
        if let Some(number) = number {
            segments.push((number, entry.path()));
        }
    }
    segments.sort();
    Ok(segments)
}

pub(crate) fn file_header(segment: u64) -> [u8; FILE_HEADER_LEN as usize] {
    let mut header = [0u8; FILE_HEADER_LEN as usize];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[16..24].copy_from_slice(&segment.to_le_bytes());
    header
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends one command to `out` in the record body's layout.
fn encode_command(out: &mut Vec<u8>, db: usize, request: &Request) {
    put_varint(out, db as u64);
    put_varint(out, request.len() as u64);
    for arg in request.args() {
        put_varint(out, arg.len() as u64);
        out.extend_from_slice(arg);
    }
}

/// Appends a whole record whose body is written by `body`, filling in the head and the tail.
fn encode_record(out: &mut Vec<u8>, time_ms: u64, count: u64, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0u8; RECORD_HEAD_LEN]);
    out.extend_from_slice(&time_ms.to_le_bytes());
    put_varint(out, count);
    body(out);
    let length = ((out.len() - start - RECORD_HEAD_LEN) as u64).to_le_bytes();
    out[start..start + 8].copy_from_slice(&length);
    out[start + 8..start + 12].copy_from_slice(&(xxh3_64(&length) as u32).to_le_bytes());
    let checksum = xxh3_64(&out[start + RECORD_HEAD_LEN..]);
    out.extend_from_slice(&checksum.to_le_bytes());
}

/// Appends a record of one command, encoding it in place.
pub(crate) fn encode_single(out: &mut Vec<u8>, time_ms: u64, db: usize, request: &Request) {
    encode_record(out, time_ms, 1, |out| encode_command(out, db, request));
}

/// The commands a transaction ran, gathered so that they reach the log as one record: a crash
/// keeps all of them or none.
#[derive(Default)]
pub struct PendingTransaction {
    commands: Vec<u8>,
    count: u64,
}

impl PendingTransaction {
    pub fn push(&mut self, db: usize, request: &Request) {
        encode_command(&mut self.commands, db, request);
        self.count += 1;
    }

    /// Appends the transaction as one record.
    pub fn encode(&self, out: &mut Vec<u8>, time_ms: u64) {
        encode_record(out, time_ms, self.count, |out| {
            out.extend_from_slice(&self.commands)
        });
    }
}

/// One record read back: when it ran, and its commands as (database, argument ranges) over
/// `body`.
pub struct Record {
    pub time_ms: u64,
    pub body: Vec<u8>,
    pub commands: Vec<(usize, Vec<Range<usize>>)>,
}

/// What reading a segment found where it stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// The segment ends after a whole record.
    End,
    /// The last record is incomplete or fails its checksum and nothing follows it: a write cut
    /// short by a crash. The offset is where it starts.
    Torn { offset: u64, reason: LogDamage },
    /// Damage with more of the file after it.
    Damaged { offset: u64, reason: LogDamage },
}

/// Decodes the first record of `input` (a replication stream's bytes, in this same format),
/// returning it with the bytes it took; None while `input` holds only part of it. `max_body`
/// bounds what a damaged length could make the caller wait for.
pub(crate) fn decode_record(
    input: &[u8],
    max_body: u64,
) -> Result<Option<(Record, usize)>, LogDamage> {
    let Some(head) = input.get(..RECORD_HEAD_LEN) else {
        return Ok(None);
    };
    let (length, check) = head.split_at(8);
    if xxh3_64(length) as u32 != u32::from_le_bytes(check.try_into().expect("four bytes")) {
        return Err(LogDamage::LengthField);
    }
    let body_len = u64::from_le_bytes(length.try_into().expect("eight bytes"));
    if !(BODY_MIN_LEN..=max_body).contains(&body_len) {
        return Err(LogDamage::OutOfBounds(body_len));
    }
    let total = RECORD_HEAD_LEN + body_len as usize + RECORD_TAIL_LEN;
    let Some(record) = input.get(..total) else {
        return Ok(None);
    };
    let body = &record[RECORD_HEAD_LEN..total - RECORD_TAIL_LEN];
    let tail = &record[total - RECORD_TAIL_LEN..];
    if xxh3_64(body) != u64::from_le_bytes(tail.try_into().expect("eight bytes")) {
        return Err(LogDamage::Checksum);
    }
    parse_body(body.to_vec(), false).map(|record| Some((record, total)))
}

/// Reads a segment record by record.
pub struct SegmentReader {
    input: BufReader<File>,
    pub size: u64,
    pub offset: u64,
    /// The segment's format version; 0 while its header is incomplete.
    pub version: u32,
}

impl SegmentReader {
    /// Opens a segment and checks its header.
    pub fn open(path: &Path, segment: u64) -> Result<SegmentReader, (u64, LoadFailure)> {
        let file = File::open(path).map_err(|error| (0, error.into()))?;
        let size = file.metadata().map_err(|error| (0, error.into()))?.len();
        let mut reader = SegmentReader {
            input: BufReader::with_capacity(1 << 20, file),
            size,
            offset: 0,
            version: 0,
        };
        let mut header = [0u8; FILE_HEADER_LEN as usize];
        if size < FILE_HEADER_LEN {
            // Created but its header never reached the disk: a crash right after a rotation.
            return Ok(reader);
        }
        reader
            .input
            .read_exact(&mut header)
            .map_err(|error| (0, error.into()))?;
        if &header[..8] != MAGIC {
            return Err((0, LogDamage::BadMagic.into()));
        }
        let version = u32::from_le_bytes(header[8..12].try_into().expect("four bytes"));
        if version != VERSION && version != VERSION_FIXED_WIDTH {
            return Err((
                8,
                LogDamage::Version {
                    version,
                    fixed_width: VERSION_FIXED_WIDTH,
                    current: VERSION,
                }
                .into(),
            ));
        }
        if header[12..16] != [0u8; 4] {
            return Err((12, LogDamage::ReservedField.into()));
        }
        let number = u64::from_le_bytes(header[16..24].try_into().expect("eight bytes"));
        if number != segment {
            return Err((
                16,
                LogDamage::SegmentNumber {
                    inside: number,
                    named: segment,
                }
                .into(),
            ));
        }
        reader.offset = FILE_HEADER_LEN;
        reader.version = version;
        Ok(reader)
    }

    /// The next record, or where and why reading stopped.
    pub fn next_record(&mut self) -> Result<Record, Stop> {
        let start = self.offset;
        let left = self.size - self.offset;
        if left == 0 {
            return Err(Stop::End);
        }
        if self.size < FILE_HEADER_LEN {
            return Err(Stop::Torn {
                offset: 0,
                reason: LogDamage::HeaderIncomplete,
            });
        }
        let torn = |reason| Stop::Torn {
            offset: start,
            reason,
        };
        let damaged = |reason| Stop::Damaged {
            offset: start,
            reason,
        };
        let fixed_width = self.version == VERSION_FIXED_WIDTH;
        let (head_len, min_body) = if fixed_width {
            (RECORD_HEAD_LEN_V1, BODY_MIN_LEN_V1)
        } else {
            (RECORD_HEAD_LEN, BODY_MIN_LEN)
        };
        if left < head_len as u64 {
            return Err(torn(LogDamage::CutShort));
        }
        let mut head = [0u8; RECORD_HEAD_LEN];
        let head = &mut head[..head_len];
        self.read(head)
            .map_err(|e| damaged(LogDamage::Unreadable(e.kind())))?;
        let (length, check) = head.split_at(head_len - 4);
        let check = u32::from_le_bytes(check.try_into().expect("four bytes"));
        if xxh3_64(length) as u32 != check {
            // A crash can leave zeros where the tail was to go; anything else is damage.
            if head.iter().all(|&b| b == 0) && self.rest_is_zero()? {
                return Err(torn(LogDamage::ZeroTail));
            }
            return Err(damaged(LogDamage::LengthField));
        }
        let mut wide = [0u8; 8];
        wide[..length.len()].copy_from_slice(length);
        let body_len = u64::from_le_bytes(wide);
        if body_len < min_body {
            return Err(damaged(LogDamage::TooShort(body_len)));
        }
        if body_len > (self.size - self.offset).saturating_sub(RECORD_TAIL_LEN as u64) {
            return Err(torn(LogDamage::CutShort));
        }
        let mut body = vec![0u8; body_len as usize];
        self.read(&mut body)
            .map_err(|e| damaged(LogDamage::Unreadable(e.kind())))?;
        let mut tail = [0u8; RECORD_TAIL_LEN];
        self.read(&mut tail)
            .map_err(|e| damaged(LogDamage::Unreadable(e.kind())))?;
        if xxh3_64(&body) != u64::from_le_bytes(tail) {
            if self.offset == self.size {
                return Err(torn(LogDamage::LastChecksum));
            }
            return Err(damaged(LogDamage::Checksum));
        }
        parse_body(body, fixed_width).map_err(damaged)
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.input.read_exact(buf)?;
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn rest_is_zero(&mut self) -> Result<bool, Stop> {
        let mut chunk = [0u8; 4096];
        loop {
            let n = self.input.read(&mut chunk).map_err(|e| Stop::Damaged {
                offset: self.offset,
                reason: LogDamage::Unreadable(e.kind()),
            })?;
            if n == 0 {
                return Ok(true);
            }
            if chunk[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
        }
    }
}

/// Reads a checksummed body's fields in order; any field that runs past the end is damage.
struct BodyCursor<'a> {
    body: &'a [u8],
    at: usize,
    fixed_width: bool,
}

impl BodyCursor<'_> {
    fn take(&mut self, n: u64) -> Option<Range<usize>> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.at.checked_add(n))
            .filter(|&end| end <= self.body.len())?;
        let range = self.at..end;
        self.at = end;
        Some(range)
    }

    /// An integer field: `width` bytes in version 1, a varint in version 2.
    fn int(&mut self, width: usize) -> Option<u64> {
        if self.fixed_width {
            let range = self.take(width as u64)?;
            let mut wide = [0u8; 8];
            wide[..width].copy_from_slice(&self.body[range]);
            return Some(u64::from_le_bytes(wide));
        }
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.body.get(self.at)?;
            self.at += 1;
            value |= u64::from(byte & 0x7f).checked_shl(shift)?;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
}

/// Splits a checksummed body into its commands; a body whose checksum matched but whose
/// contents do not parse was written by a different program, and is damage.
fn parse_body(body: Vec<u8>, fixed_width: bool) -> Result<Record, LogDamage> {
    let bad = || LogDamage::Malformed;
    let time_ms = u64::from_le_bytes(body[..8].try_into().expect("eight bytes"));
    let mut cursor = BodyCursor {
        body: &body,
        at: 8,
        fixed_width,
    };
    let count = cursor.int(4).ok_or_else(bad)?;
    // Every command takes at least three bytes, so the count is bounded by the body's length
    // before anything is reserved for it.
    if count == 0 || count > body.len() as u64 {
        return Err(bad());
    }
    let mut commands = Vec::new();
    for _ in 0..count {
        let db = cursor.int(2).ok_or_else(bad)?;
        let argc = cursor.int(4).ok_or_else(bad)?;
        if argc == 0 || argc > body.len() as u64 || db > u64::from(u16::MAX) {
            return Err(bad());
        }
        let mut args = Vec::with_capacity(argc as usize);
        for _ in 0..argc {
            let len = cursor.int(4).ok_or_else(bad)?;
            args.push(cursor.take(len).ok_or_else(bad)?);
        }
        commands.push((db as usize, args));
    }
    if cursor.at != body.len() {
        return Err(bad());
    }
    Ok(Record {
        time_ms,
        body,
        commands,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::test_support::request;

    /// Writes `records` after a header of `version` and reads them back.
    fn read_back(version: u32, records: &[u8]) -> Vec<Record> {
        let dir = std::env::temp_dir().join(format!(
            "sieved-aof-format-{}-{version}-{}",
            std::process::id(),
            records.len()
        ));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = segment_path(&dir, 3);
        let mut bytes = file_header(3).to_vec();
        bytes[8..12].copy_from_slice(&version.to_le_bytes());
        bytes.extend_from_slice(records);
        std::fs::write(&path, bytes).expect("segment");
        let mut reader = SegmentReader::open(&path, 3).expect("header");
        assert_eq!(reader.version, version);
        let mut read = Vec::new();
        loop {
            match reader.next_record() {
                Ok(record) => read.push(record),
                Err(Stop::End) => break,
                Err(other) => panic!("{other:?}"),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        read
    }

    fn args_of(record: &Record, command: usize) -> Vec<&[u8]> {
        record.commands[command]
            .1
            .iter()
            .map(|range| &record.body[range.clone()])
            .collect()
    }

    #[test]
    fn records_round_trip_with_varints_of_every_width() {
        let long = vec![b'x'; 300];
        let (body, ranges) = request(&[b"SET", b"k", &long]);
        let mut records = Vec::new();
        encode_single(&mut records, 7, 1000, &Request::new(&body, &ranges));
        let mut transaction = PendingTransaction::default();
        for db in [0, 127, 128, 16383, 16384] {
            transaction.push(db, &Request::new(&body, &ranges));
        }
        transaction.encode(&mut records, 9);
        let read = read_back(VERSION, &records);
        assert_eq!(read.len(), 2);
        assert_eq!((read[0].time_ms, read[0].commands[0].0), (7, 1000));
        assert_eq!(args_of(&read[0], 0), [&b"SET"[..], b"k", &long]);
        let dbs: Vec<usize> = read[1].commands.iter().map(|(db, _)| *db).collect();
        assert_eq!(dbs, [0, 127, 128, 16383, 16384]);
        assert_eq!(args_of(&read[1], 4)[2].len(), 300);
    }

    #[test]
    fn varints_take_what_they_need_and_refuse_what_overflows() {
        for value in [0u64, 1, 127, 128, 300, u32::MAX as u64 + 1, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            let expected_len = (64 - value.leading_zeros()).max(1).div_ceil(7) as usize;
            assert_eq!(out.len(), expected_len, "{value}");
            let mut cursor = BodyCursor {
                body: &out,
                at: 0,
                fixed_width: false,
            };
            assert_eq!(cursor.int(4), Some(value));
        }
        let overlong = [0xffu8; 11];
        let mut cursor = BodyCursor {
            body: &overlong,
            at: 0,
            fixed_width: false,
        };
        assert_eq!(cursor.int(4), None);
    }

    #[test]
    fn version_1_segments_are_still_read() {
        // One record of format 1: a 4-byte length and its check, then fixed-width fields.
        let mut body = Vec::new();
        body.extend_from_slice(&5u64.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        body.extend_from_slice(&2u16.to_le_bytes());
        body.extend_from_slice(&2u32.to_le_bytes());
        for arg in [&b"DEL"[..], b"key"] {
            body.extend_from_slice(&(arg.len() as u32).to_le_bytes());
            body.extend_from_slice(arg);
        }
        let length = (body.len() as u32).to_le_bytes();
        let mut record = length.to_vec();
        record.extend_from_slice(&(xxh3_64(&length) as u32).to_le_bytes());
        record.extend_from_slice(&body);
        record.extend_from_slice(&xxh3_64(&body).to_le_bytes());
        let read = read_back(VERSION_FIXED_WIDTH, &record);
        assert_eq!((read[0].time_ms, read[0].commands[0].0), (5, 2));
        assert_eq!(args_of(&read[0], 0), [&b"DEL"[..], b"key"]);
    }

    #[test]
    fn a_length_of_4_gib_or_more_is_written_whole() {
        // The length field is 64 bits: only its encoding is checked here, not 4 GiB of data.
        let mut out = Vec::new();
        encode_record(&mut out, 0, 1, |body| put_varint(body, 0));
        let length = u64::from_le_bytes(out[..8].try_into().expect("eight bytes"));
        assert_eq!(
            length as usize,
            out.len() - RECORD_HEAD_LEN - RECORD_TAIL_LEN
        );
        assert_eq!(RECORD_HEAD_LEN, 12);
    }
}
