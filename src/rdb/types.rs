//! The RDB type bytes, what reading a value gives, and the limits it is held to: shared by the
//! plain types' codec (`value_codec.rs`), the module types' (`module_values.rs`) and the file
//! reader (`file.rs`).

use crate::store::Value;

pub(super) const TYPE_STRING: u8 = 0;
pub(super) const TYPE_LIST: u8 = 1;
pub(super) const TYPE_SET: u8 = 2;
pub(super) const TYPE_ZSET: u8 = 3;
pub(super) const TYPE_HASH: u8 = 4;
pub(super) const TYPE_ZSET_2: u8 = 5;
pub(super) const TYPE_MODULE_PRE_GA: u8 = 6;
pub(super) const TYPE_MODULE_2: u8 = 7;
pub(super) const TYPE_HASH_ZIPMAP: u8 = 9;
pub(super) const TYPE_LIST_ZIPLIST: u8 = 10;
pub(super) const TYPE_SET_INTSET: u8 = 11;
pub(super) const TYPE_ZSET_ZIPLIST: u8 = 12;
pub(super) const TYPE_HASH_ZIPLIST: u8 = 13;
pub(super) const TYPE_LIST_QUICKLIST: u8 = 14;
pub(super) const TYPE_STREAM_LISTPACKS: u8 = 15;
pub(super) const TYPE_HASH_LISTPACK: u8 = 16;
pub(super) const TYPE_ZSET_LISTPACK: u8 = 17;
pub(super) const TYPE_LIST_QUICKLIST_2: u8 = 18;
pub(super) const TYPE_STREAM_LISTPACKS_2: u8 = 19;
pub(super) const TYPE_SET_LISTPACK: u8 = 20;
pub(super) const TYPE_STREAM_LISTPACKS_3: u8 = 21;
pub(super) const TYPE_HASH_METADATA_PRE_GA: u8 = 22;
pub(super) const TYPE_HASH_LISTPACK_EX_PRE_GA: u8 = 23;
pub(super) const TYPE_HASH_METADATA: u8 = 24;
pub(super) const TYPE_HASH_LISTPACK_EX: u8 = 25;

/// What a value may decode to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest string, and the most a collection's elements may add up to
    /// (`proto-max-bulk-len` for RESTORE).
    pub string_bytes: u64,
    /// The largest filter (`max-filter-memory`).
    pub filter_bytes: u64,
}

impl Limits {
    pub const NONE: Limits = Limits {
        string_bytes: u64::MAX,
        filter_bytes: u64::MAX,
    };
}

#[derive(Debug)]
pub enum Decoded {
    Value(Value),
    /// A value sieved does not hold, described as Redis names its type.
    Skipped(String),
    /// A collection with no elements, which Redis refuses to load as a key too.
    Empty,
}

/// Whether `rdb_type` is a value's type byte (rather than a file's opcode).
pub fn is_value_type(rdb_type: u8) -> bool {
    matches!(rdb_type, 0..=7 | 9..=25)
}
