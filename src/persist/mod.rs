//! Durability: snapshots of the whole keyspace, written atomically, and an optional
//! append-only file of the writes since; both are loaded at start-up.
//!
//! # The snapshot file, byte by byte
//!
//! `<dir>/sieved.snap`; all integers little-endian.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "SIEVEDSN"
//! 8       4     format version, 2 (1 is still read)
//! 12      4     first log segment: the number of the first append-only file segment whose
//!               writes this snapshot does not hold (those before it are folded in); 0 if no
//!               segment was ever folded in (version 1 files have 0 here)
//! 16      8     creation time, Unix milliseconds
//! 24      ...   records, then the end record
//!
//! key record
//! 0       1     tag 0x01
//! 1       2     database index
//! 3       8     expiry time, Unix milliseconds; 0 for none
//! 11      1     value kind: 0 = string, 1 = Bloom filter, 2 = counting Bloom filter
//! 12      4     key length K
//! 16      K     key
//! 16+K    4     header length H
//! 20+K    H     header: empty for a string; for a filter its SCANDUMP header, itself
//!               versioned and checksummed (filter/dump.rs, for both filter types)
//! 20+K+H  8     payload length P
//! 28+K+H  P     payload: the string, or the filter's bit (or counter) arrays end to end
//! 28+K+H+P 8    xxh3-64 of the record, from its tag to the end of the payload
//!
//! end record
//! 0       1     tag 0xFF
//! 1       8     number of key records
//! 9       8     xxh3-64 of the whole file before this field
//! ```
//!
//! Version 2 differs from version 1 only in the filter headers it may hold: a Bloom filter's is
//! dump format 2, which has its layout (classic or blocked). A version 1 file holds dump format 1
//! headers, all of classic filters, and loads as it always did. The file version was raised with
//! the header's so that a build that cannot read the headers says so up front.
//!
//! Nothing may follow the end record. A snapshot is written to a temporary file in the same
//! directory, fsynced, renamed over `sieved.snap`, and the directory is fsynced: a crash at any
//! instant leaves either the old snapshot or the new one.
//!
//! # What a snapshot contains
//!
//! Every write acknowledged before the snapshot started. Each key is captured when the writer
//! reaches it: its expiry, its header (the shape of a filter, its item counts) and its length
//! are read at one instant. A large filter's bits are then copied in 64 KiB pieces, each under a
//! brief read lock so that writers to that filter wait for one piece at most; bits set by adds that
//! race with the copy may or may not be included. Bits are only ever set, so an item whose add
//! was acknowledged before the snapshot started is always in it. A counting filter's counters
//! also go down, but while an item is held each of its counters stays at one or more at every
//! instant, so an item held throughout the snapshot is in it too. An add or delete racing with
//! the copy may be captured in part, as if it had not been acknowledged.

//!
//! # The append-only file, byte by byte
//!
//! With `appendonly yes`, every write command that succeeded is appended, in the order the writes
//! took effect, to `<dir>/sieved-<n>.aof`, segment `n`. Start-up loads the snapshot, then replays
//! the segments from the snapshot's first log segment on, each command at the time it first ran
//! (so expiry decides as it did then). A compaction starts a new segment, folds the snapshot and
//! the segments before the new one into a new snapshot, and then deletes them.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "SIEVEDAO"
//! 8       4     format version, 1
//! 12      4     reserved, 0
//! 16      8     segment number, as in the file name
//! 24      ...   records
//!
//! record
//! 0       4     body length L, at least 12
//! 4       4     the low 32 bits of the xxh3-64 of the 4 bytes of L, so that a damaged length
//!               is told apart from a record cut short by a crash
//! 8       L     body
//! 8+L     8     xxh3-64 of the body
//!
//! body
//! 0       8     time the commands ran, Unix milliseconds
//! 8       4     number of commands C: 1, or those of one transaction, which replay together
//! 12      ...   C commands: database index (2), argument count A (4), then A arguments,
//!               each a length (4) and its bytes; the first argument is the command's name
//! ```
//!
//! A record that is cut short or fails its checksum at the very end of the last segment is
//! what a crash during a write leaves: it is dropped with a warning and the file is truncated
//! to the records before it. Damage anywhere else stops start-up with the file and the offset,
//! unless `aof-load-damaged` is `yes`, which keeps the records before the damage, sets the
//! damaged file aside under a new name and writes a snapshot of what was loaded.

pub mod aof;
pub mod load;
pub mod replay;
pub mod snapshot;

pub const FILE_NAME: &str = "sieved.snap";
const AOF_MAGIC: &[u8; 8] = b"SIEVEDAO";
const AOF_VERSION: u32 = 1;

const MAGIC: &[u8; 8] = b"SIEVEDSN";
const VERSION: u32 = 2;
/// The version before Bloom filters had a layout.
const VERSION_CLASSIC_ONLY: u32 = 1;
const TAG_KEY: u8 = 0x01;
const TAG_END: u8 = 0xFF;
/// Payloads are read and written through buffers of this size.
const PIECE: u64 = 1024 * 1024;
/// A snapshot copies a value's payload in pieces of this size, each under the value's read lock:
/// a few microseconds, so that a writer rarely finds the lock held, and when the saver thread is
/// preempted while holding it (on a busy machine) that is rare too.
const LOCKED_PIECE: u64 = 64 * 1024;
