//! The snapshot file, byte by byte.
//!
//! `<dir>/sieved.snap`; all integers little-endian.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "SIEVEDSN"
//! 8       4     format version, 5 (1 to 4 are still read)
//! 12      4     first log segment: the number of the first append-only file segment whose
//!               writes this snapshot does not hold (those before it are folded in); 0 if no
//!               segment was ever folded in (version 1 files have 0 here)
//! 16      8     creation time, Unix milliseconds
//! 24      1     replication position: 1 if the next two fields name the replication history
//!               and offset this snapshot holds exactly, 0 if it names none (version 5 on;
//!               older files have neither this field nor the next two)
//! 25      40    replication ID, 40 hexadecimal characters (zeros when none)
//! 65      8     replication offset: the stream's offset (Redis's `master_repl_offset`) at
//!               the instant the data was cut (0 when none)
//! 73      ...   records, then the end record
//!
//! key record
//! 0       1     tag 0x01
//! 1       2     database index
//! 3       8     expiry time, Unix milliseconds; 0 for none
//! 11      1     value kind: 0 = string, 1 = Bloom filter, 2 = counting Bloom filter,
//!               3 = list, 4 = set, 5 = sorted set, 6 = hash, 7 = cuckoo filter,
//!               8 = crawl frontier
//!               9 = time-windowed Bloom filter
//! 12      4     key length K
//! 16      K     key
//! 16+K    4     header length H
//! 20+K    H     header: empty for a string; for a filter its SCANDUMP header, itself
//!               versioned and checksummed (filter/dump.rs, for both filter types); for a
//!               collection, the whole of it (store/collection_encoding.rs): a u64 count, then each
//!               element as a u32 length and its bytes (a sorted set's member then its f64
//!               score's bits, a hash's field then its value), sets and hashes in byte order;
//!               for a cuckoo filter, its 38-byte CF.SCANDUMP header (filter/cuckoo/mod.rs: u64
//!               items, first sub-filter's buckets, deletes, sub-filters; u16 bucket size,
//!               max iterations, expansion), checked on load as CF.LOADCHUNK checks it;
//!               for a crawl frontier, the whole of it, seen-set bits included
//!               (frontier/encoding.rs), so that it too is captured at one instant; for
//!               a time-windowed filter, its TBF.SCANDUMP header (filter/windowed.rs: shape,
//!               window, and each slice's time and items)
//! 20+K+H  8     payload length P
//! 28+K+H  P     payload: the string, or the filter's bit (or counter) arrays end to end;
//!               empty for a collection; a cuckoo filter's sub-filters' slots end to end; a
//!               time-windowed filter's slices' bit arrays end to end
//! 28+K+H+P 8    xxh3-64 of the record, from its tag to the end of the payload
//!
//! function library record (FUNCTION's libraries, after the key records)
//! 0       1     tag 0x02
//! 1       4     library name length N
//! 5       N     library name
//! 5+N     4     code length C
//! 9+N     C     the library's code, as FUNCTION LOAD was given it
//! 9+N+C   8     xxh3-64 of the record, from its tag to the end of the code
//!
//! end record
//! 0       1     tag 0xFF
//! 1       8     number of key records
//! 9       8     the file checksum: xxh3-64 of every byte before this field that no key
//!               record's checksum covers, in order: the file header, each key record's
//!               checksum field, the end record's tag and count. (Versions 1 to 3: of every
//!               byte of the file before this field.)
//! ```
//!
//! Version 2 differs from version 1 only in the filter headers it may hold: a Bloom filter's is
//! dump format 2, which has its layout (classic or blocked). A version 1 file holds dump format 1
//! headers, all of classic filters, and loads as it always did. The file version was raised with
//! the header's so that a build that cannot read the headers says so up front. Version 3 adds,
//! for the same reason, RedisBloom's header (filter/redisbloom_dump.rs), which a classic filter
//! hashed as RedisBloom hashes has; version 1 and 2 files hold only sieved's headers, whose
//! filters hash with xxh3.
//!
//! Version 4 changes only what the file checksum covers: through the records' checksums, which
//! it covers, it still depends on every byte, but the bytes of a record, nearly all the file,
//! are hashed once on writing and once on loading, not twice.
//!
//! Version 5 adds the replication position, Redis's RDB aux fields `repl-id` and `repl-offset`:
//! a restarted replica continues from it with a partial resync, and a restarted primary keeps
//! it as its second ID (see `server/replication/mod.rs`, `Replication::restore`). Redis's third,
//! `repl-stream-db`, has no counterpart: every record of sieved's stream names its database. A
//! snapshot names a position only when it is a cut at one instant of both the data and the
//! stream: written with every command paused (the exit snapshot, a replica's save of a full
//! sync it took over). A background snapshot, copied while writes go on, names none, nor does a
//! compaction (its data is the log's up to a segment's end, whose offset the log does not hold).
//!
//! The collection kinds, the cuckoo filter and the frontier were added without a version change: older files
//! hold none of them, and so load as before; an older build refuses a file holding one, naming
//! the unknown kind.
//!
//! Function library records were added the same way: an older file holds none and loads as
//! before, with no libraries; an older build refuses a file holding one, naming the unknown tag.
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
//! the copy may be captured in part, as if it had not been acknowledged. A time-windowed filter
//! clears a slice only when it has aged out of the window: if that happens during the copy, the
//! slice's header (read first) names a time already outside the window and its bits may be read
//! partly from the fresh array, so what may be lost had been forgotten already; the fresh
//! slice's adds race with the copy like any other.
//!
//! # Temporary files
//!
//! A snapshot is first written to `sieved.snap.tmp-<pid>`. A crash leaves that file behind; the
//! next start-up and every new save remove such leftovers, and only files of exactly that form.

use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "sieved.snap";
pub(super) const MAGIC: &[u8; 8] = b"SIEVEDSN";
pub(super) const VERSION: u32 = 5;
/// The first version whose header names a replication position.
pub(super) const VERSION_POSITION: u32 = 5;
/// The last version whose file checksum hashes the key records' bytes a second time.
pub(super) const VERSION_WHOLE_FILE_CHECKSUM: u32 = 3;
/// The version before Bloom filters had a layout.
pub(super) const VERSION_CLASSIC_ONLY: u32 = 1;
pub(super) const TAG_KEY: u8 = 0x01;
pub(super) const TAG_FUNCTION: u8 = 0x02;
pub(super) const TAG_END: u8 = 0xFF;
/// A snapshot copies a value's payload in pieces of this size, each under the value's read lock:
/// a few microseconds, so that a writer rarely finds the lock held, and when the saver thread is
/// preempted while holding it (on a busy machine) that is rare too.
pub(super) const LOCKED_PIECE: u64 = 64 * 1024;

const TEMP_PREFIX: &str = "sieved.snap.tmp-";

/// Where a snapshot's data stands in a replication history: the ID and the stream's offset
/// (the next byte) that its data holds exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplPosition {
    /// 40 hexadecimal characters, as Redis's replication IDs.
    pub id: [u8; 40],
    pub offset: u64,
}

impl ReplPosition {
    /// The position of `id` (which must be 40 bytes long; None otherwise) at `offset`.
    pub fn new(id: &str, offset: u64) -> Option<ReplPosition> {
        Some(ReplPosition {
            id: id.as_bytes().try_into().ok()?,
            offset,
        })
    }

    pub fn id(&self) -> String {
        String::from_utf8_lossy(&self.id).into_owned()
    }
}

/// Where this process writes a snapshot before renaming it into place.
pub(super) fn temp_path(dir: &Path) -> PathBuf {
    dir.join(format!("{TEMP_PREFIX}{}", std::process::id()))
}

/// Where a replica receives its primary's snapshot in a full sync, before loading it.
const SYNC_PREFIX: &str = "sieved.sync.tmp-";

/// The payload file of this process's replication link number `link`: each link has its own,
/// so that a link that REPLICAOF ended never touches the next one's.
pub fn sync_payload_path(dir: &Path, link: u64) -> PathBuf {
    dir.join(format!("{SYNC_PREFIX}{}-{link}", std::process::id()))
}

/// Whether `name` is a sync payload of this process, which one of its links may be receiving.
pub(crate) fn is_own_sync_payload(name: &str) -> bool {
    name.strip_prefix(SYNC_PREFIX)
        .and_then(|rest| rest.strip_prefix(&format!("{}-", std::process::id())))
        .is_some_and(all_digits)
}

fn all_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `name` is a snapshot's (or a sync payload's) temporary file, of this process or of an
/// earlier one: `<prefix><pid>`, and for a sync payload also `<prefix><pid>-<link>`.
pub(crate) fn is_temp_file(name: &str) -> bool {
    name.strip_prefix(TEMP_PREFIX).is_some_and(all_digits)
        || name.strip_prefix(SYNC_PREFIX).is_some_and(|rest| {
            let (pid, link) = rest.split_once('-').unwrap_or((rest, "0"));
            all_digits(pid) && all_digits(link)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_temporary_names_are_leftovers() {
        let own = temp_path(Path::new("/d"));
        assert!(is_temp_file(own.file_name().unwrap().to_str().unwrap()));
        assert!(is_temp_file("sieved.snap.tmp-1"));
        let payload = sync_payload_path(Path::new("/d"), 7);
        let payload = payload.file_name().unwrap().to_str().unwrap();
        assert!(is_temp_file(payload) && is_own_sync_payload(payload));
        assert!(is_temp_file("sieved.sync.tmp-1") && !is_own_sync_payload("sieved.sync.tmp-1"));
        assert!(is_temp_file("sieved.sync.tmp-1-2"));
        for other in [
            "sieved.snap",
            "sieved.snap.tmp-",
            "sieved.snap.tmp-12a",
            "sieved.snap.tmp-1.bak",
            "sieved.snap.tmp-1-2",
            "sieved.sync.tmp-1-",
            "sieved.sync.tmp-1-2-3",
            "xsieved.snap.tmp-1",
            "sieved-1.aof",
        ] {
            assert!(!is_temp_file(other), "{other}");
        }
    }
}
