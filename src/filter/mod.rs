//! The data structures only: sizing maths, the bit array, the scaling chain, the counting chain
//! and their dump formats.
//! Nothing here knows about the protocol, the network or the disk.

mod arrays;
mod blocked;
mod blocked_sizing;
mod bloom;
mod chain;
mod counting;
mod counting_dump;
mod dump;
mod health;
mod sizing;

pub use bloom::{hash_item, HashedChain, ItemHash, Link};
pub use chain::{BloomChain, ChainOptions};
pub use counting::{CounterBits, CountingChain, CountingLink, CountingOptions};
pub use dump::{DumpStep, MAX_CHUNK_BYTES};
pub use health::Health;
pub use sizing::{format_g, Layout, LinkSize};

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
