//! Redis's serialization, in one place: the RDB encoding of one value, as DUMP and RESTORE carry
//! it and as RDB files hold it after each key, and the reader of a whole RDB file (`file.rs`)
//! that `sieved import-rdb` drives. Below the commands (DUMP, RESTORE, MIGRATE) and the import,
//! which share it.
//!
//! A DUMP payload, byte by byte:
//! ```text
//! 1        the value's RDB type (types.rs)
//! ...      the value in that type's encoding
//! 2        the RDB version, little-endian: DUMP writes 9, which Redis 6.2 and every later
//!          release accept (a payload only uses encodings that version has)
//! 8        CRC-64 (Jones, crc64.rs) of everything before it, little-endian
//! ```
//! RESTORE accepts versions up to `MAX_VERSION`, Redis 7.4's and 8's, as Redis accepts its own
//! and older ones; the version and checksum are checked before anything is decoded, and the
//! value must take exactly the bytes before the trailer.
//!
//! Filters travel as module values (module_values.rs): RedisBloom's `MBbloom--` and `MBbloomCF`, so
//! that DUMP, RESTORE and MIGRATE move them to and from Redis with RedisBloom, and sieved's own
//! `sieved---` for what RedisBloom cannot hold.

mod crc64;
pub mod file;
mod lzf;
mod module_values;
mod packed;
mod primitives;
mod types;
mod value_codec;

pub use module_values::{describe as describe_module, skip_fields as skip_module_fields};
pub use primitives::{
    read_array, read_length, read_string, read_u8, skip_string, Input, RdbError, RdbResult,
    SliceInput,
};
pub use types::{is_value_type, Decoded, Limits};
pub use value_codec::{read_value, write_value};

use crate::store::Value;

/// The RDB version DUMP writes.
pub const DUMP_VERSION: u16 = 9;
/// The newest RDB version read, in payloads and in files.
pub const MAX_VERSION: u16 = 12;
/// The RDB version and the checksum after a payload's value.
const TRAILER_LEN: usize = 10;

/// Why RESTORE refused a payload, as Redis tells the two apart.
#[derive(Debug, PartialEq)]
pub enum RestoreError {
    /// Shorter than a trailer, a newer RDB version, or a checksum that does not match.
    VersionOrChecksum,
    /// The value itself is invalid, over a limit, or of a type sieved does not hold.
    BadData(RdbError),
}

/// DUMP's payload for `value`.
pub fn dump(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(&mut out, value);
    append_trailer(&mut out, DUMP_VERSION);
    out
}

/// Ends a payload's value with the trailer: RDB version `version`, then the checksum of it all.
pub fn append_trailer(payload: &mut Vec<u8>, version: u16) {
    payload.extend_from_slice(&version.to_le_bytes());
    let crc = crc64::checksum(payload);
    payload.extend_from_slice(&crc.to_le_bytes());
}

/// The value a DUMP payload holds, checked whole and held to `limits`.
pub fn restore(payload: &[u8], limits: &Limits) -> Result<Value, RestoreError> {
    let body_len = payload
        .len()
        .checked_sub(TRAILER_LEN)
        .ok_or(RestoreError::VersionOrChecksum)?;
    let (body, trailer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([trailer[0], trailer[1]]);
    let crc = u64::from_le_bytes(trailer[2..].try_into().expect("8 bytes"));
    if version > MAX_VERSION || crc64::checksum(&payload[..body_len + 2]) != crc {
        return Err(RestoreError::VersionOrChecksum);
    }
    let mut input = SliceInput(body);
    let rdb_type = read_u8(&mut input).map_err(RestoreError::BadData)?;
    let decoded = read_value(&mut input, rdb_type, limits).map_err(RestoreError::BadData)?;
    if input.remaining() != 0 {
        return Err(RestoreError::BadData(RdbError::Invalid(
            "bytes follow the value",
        )));
    }
    match decoded {
        Decoded::Value(value) => Ok(value),
        Decoded::Skipped(what) => Err(RestoreError::BadData(RdbError::Invalid(
            if what.starts_with("module") {
                "a module type sieved does not hold"
            } else {
                "a type sieved does not hold"
            },
        ))),
        Decoded::Empty => Err(RestoreError::BadData(RdbError::Invalid(
            "an empty collection",
        ))),
    }
}

#[cfg(test)]
mod tests;
