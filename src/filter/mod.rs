//! The data structures only: hashing, sizing maths, the bit and counter arrays, the scaling chain
//! over either, and their dump format.
//! Nothing here knows about the protocol, the network or the disk.

mod arrays;
mod block_array;
mod blocked_sizing;
mod bloom;
mod chain;
mod count_min;
mod counter_array;
mod counting;
mod cuckoo;
mod dump;
mod glibc_random;
mod health;
mod item_hash;
mod link;
mod link_spec;
mod merge;
mod module_double;
mod module_fields;
mod murmur;
mod redisbloom_dump;
mod reply_double;
mod sizing;
mod sketch_error;
#[cfg(test)]
mod sketch_fixtures;
mod sketch_hash;
#[cfg(test)]
mod sketch_properties;
mod t_digest;
mod top_k;
mod windowed;

pub use bloom::{BitsKind, BloomChain, ChainOptions};
pub use chain::HashedChain;
pub use count_min::{
    CountMinInfo, CountMinShape, CountMinSketch, CountMinSource, COUNT_MIN_ENCODING_VERSION,
    COUNT_MIN_TYPE_NAME,
};
pub use counter_array::{CounterBits, CountingOptions};
pub use counting::CountingChain;
pub use cuckoo::{
    CuckooFilter, CuckooOptions, Insertion, BUCKET_SIZE_RANGE, CUCKOO_HEADER_LEN, EXPANSION_RANGE,
    MAX_ITERATIONS_RANGE,
};
pub(crate) use dump::DumpStep;
pub use dump::MAX_CHUNK_BYTES;
pub use glibc_random::{DecayDraws, GlibcRandom, GlibcRandomState, RAND_MAX};
pub(crate) use health::Health;
pub use item_hash::{HashScheme, ItemHash};
pub use merge::{bounded_estimate, MergeMismatch, MergeShape};
pub use module_double::module_double;
pub use module_fields::{decode_fields, encode_fields, ModuleField};
pub use redisbloom_dump::{RedisBloomLink, RedisBloomShape};
pub use reply_double::reply_double_text;
pub(crate) use sizing::format_g;
pub use sizing::Layout;
pub use sketch_error::*;
pub use t_digest::{
    merge_compression, TDigest, TDigestInfo, TDigestShape, T_DIGEST_DEFAULT_COMPRESSION,
    T_DIGEST_ENCODING_VERSION, T_DIGEST_TYPE_NAME,
};
pub use top_k::{
    TopK, TopKInfo, TopKListed, TopKShape, TOP_K_DEFAULT_DECAY, TOP_K_DEFAULT_DEPTH,
    TOP_K_DEFAULT_WIDTH, TOP_K_ENCODING_VERSION, TOP_K_MAX_INCREMENT, TOP_K_TYPE_NAME,
};
pub use windowed::{Retired, WindowOptions, WindowedFilter, MAX_SLICES};

use std::fmt;

/// Everything that can go wrong inside a filter. The client-visible text of each lives in
/// `cmd::errors`, so that the exact Redis-compatible strings sit in one place.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterError {
    /// A non-scaling filter reached its capacity and the item is new.
    Full,
    /// A new link or filter would be larger than the configured per-filter limit.
    TooLarge { bytes: u64, limit: u64 },
    /// The allocator refused the memory.
    OutOfMemory,
    /// Growing the chain would overflow capacity or the error rate would underflow.
    CannotScale,
    /// A dump header or chunk that does not describe a valid filter.
    BadDump,
    /// A chunk's offset falls outside every link.
    BadOffset,
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterError::Full => f.write_str("filter is full"),
            FilterError::TooLarge { bytes, limit } => {
                write!(
                    f,
                    "filter would need {bytes} bytes, over the limit of {limit}"
                )
            }
            FilterError::OutOfMemory => f.write_str("insufficient memory"),
            FilterError::CannotScale => f.write_str("filter cannot scale further"),
            FilterError::BadDump => f.write_str("bad dump data"),
            FilterError::BadOffset => f.write_str("offset outside every link"),
        }
    }
}

impl std::error::Error for FilterError {}
