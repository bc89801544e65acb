//! A cheap, non-cryptographic source of variety, shared by RANDOMKEY, SPOP, SRANDMEMBER and
//! eviction's sampling.

use std::sync::atomic::{AtomicU64, Ordering};

pub(super) fn next_random() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0x2545_F491_4F6C_DD1D);
    let x = STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    xxhash_rust::xxh3::xxh3_64(&x.to_le_bytes())
}
