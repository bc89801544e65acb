//! Durability: snapshots of the whole keyspace, written atomically and loaded at start-up.
//!
//! # The snapshot file, byte by byte
//!
//! `<dir>/sieved.snap`; all integers little-endian.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "SIEVEDSN"
//! 8       4     format version, 2 (1 is still read)
//! 12      4     reserved, 0
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
//!               versioned and checksummed (filter/dump.rs, filter/counting_dump.rs)
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
//! are read at one instant. A large filter's bits are then copied in pieces, each under a brief
//! read lock so that writers to that filter wait for one piece at most; bits set by adds that
//! race with the copy may or may not be included. Bits are only ever set, so an item whose add
//! was acknowledged before the snapshot started is always in it. A counting filter's counters
//! also go down, but while an item is held each of its counters stays at one or more at every
//! instant, so an item held throughout the snapshot is in it too. An add or delete racing with
//! the copy may be captured in part, as if it had not been acknowledged.

pub mod load;
pub mod snapshot;

pub const FILE_NAME: &str = "sieved.snap";

const MAGIC: &[u8; 8] = b"SIEVEDSN";
const VERSION: u32 = 2;
/// The version before Bloom filters had a layout.
const VERSION_CLASSIC_ONLY: u32 = 1;
const TAG_KEY: u8 = 0x01;
const TAG_END: u8 = 0xFF;
/// Payloads move in pieces of this size, so no copy holds a value's lock for long.
const PIECE: u64 = 1024 * 1024;
