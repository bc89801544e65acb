//! The cache-line-blocked bit array: all probes of an item fall in one 64-byte block, so an add or
//! a look-up reads one cache line (and, on a large filter, misses memory once) instead of once per
//! probe. The price is a few more bits per item for the same false-positive rate, worked out in
//! `blocked_sizing`.
//!
//! The item's 128-bit hash gives the block (the high half of h1 × blocks, uniform for any block
//! count) and, independently, the probes: nine bits of h2 each, seven per 64-bit word, then nine
//! bits at a time from further words drawn from h2 as splitmix64 would. Probes are uniform and
//! independent, and may coincide, which is what the sizing assumes.

use super::arrays::{prefetch_line, Zeroable};
use super::bloom::{mix, ItemHash};

/// One cache line of bits.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Block([u64; 8]);

// SAFETY: a Block is eight u64s and nothing else.
unsafe impl Zeroable for Block {}

const PROBE_BITS: u32 = 9;
const PROBES_PER_WORD: u32 = 64 / PROBE_BITS;
/// splitmix64's increment: the fractional part of the golden ratio.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl ItemHash {
    #[inline]
    fn block(self, blocks: usize) -> usize {
        ((self.h1 as u128 * blocks as u128) >> 64) as usize
    }

    /// Calls `probe` on each of the item's bit positions in its block, each below 512: nine bits
    /// of h2 per probe, seven per word, then nine bits at a time of further words drawn from h2
    /// as splitmix64 would.
    #[inline(always)]
    fn each_probe(self, hashes: u32, mut probe: impl FnMut(usize)) {
        let (mut left, mut word, mut drawn) = (hashes, self.h2, 0u64);
        loop {
            let here = left.min(PROBES_PER_WORD);
            for _ in 0..here {
                probe((word & 511) as usize);
                word >>= PROBE_BITS;
            }
            left -= here;
            if left == 0 {
                return;
            }
            drawn += 1;
            word = mix(self.h2.wrapping_add(drawn.wrapping_mul(GOLDEN)));
        }
    }
}

/// The probes are gathered into a mask and the block compared with it word by word: no branch
/// depends on the bits, which a look-up of an item not in the filter would mispredict half the
/// time.
#[inline]
pub(super) fn contains(blocks: &[Block], hash: ItemHash, hashes: u32) -> bool {
    let block = &blocks[hash.block(blocks.len())].0;
    let mut mask = [0u64; 8];
    hash.each_probe(hashes, |bit| mask[bit >> 6] |= 1 << (bit & 63));
    let missing = block
        .iter()
        .zip(mask)
        .fold(0, |missing, (word, probes)| missing | (probes & !word));
    missing == 0
}

/// Sets the item's bits; true when at least one of them was clear. One read-modify-write per
/// probe rather than a mask written back whole: on a large filter the stores wait for their cache
/// line, and fewer of them let the CPU run further ahead (measured on 1 GiB, benches/filters.rs).
#[inline]
pub(super) fn insert(blocks: &mut [Block], hash: ItemHash, hashes: u32) -> bool {
    let block = &mut blocks[hash.block(blocks.len())].0;
    let mut missing = 0;
    hash.each_probe(hashes, |bit| {
        let word = &mut block[bit >> 6];
        let mask = 1 << (bit & 63);
        missing |= mask & !*word;
        *word |= mask;
    });
    missing != 0
}

#[inline]
pub(super) fn prefetch(blocks: &[Block], hash: ItemHash) {
    prefetch_line(blocks, hash.block(blocks.len()));
}

/// The blocks as the words they are made of, in order.
pub(super) fn words(blocks: &[Block]) -> &[u64] {
    // SAFETY: Block is repr(C) around [u64; 8], 64 bytes without padding, so a slice of n blocks
    // is a slice of 8n initialised u64s, suitably aligned (64 is a multiple of 8), borrowed for
    // the same lifetime.
    unsafe { std::slice::from_raw_parts(blocks.as_ptr().cast::<u64>(), blocks.len() * 8) }
}

pub(super) fn words_mut(blocks: &mut [Block]) -> &mut [u64] {
    // SAFETY: as in `words`, with the one mutable borrow of the blocks passed on.
    unsafe { std::slice::from_raw_parts_mut(blocks.as_mut_ptr().cast::<u64>(), blocks.len() * 8) }
}

/// Bits set in each block, for estimating the false-positive rate from the fill.
pub(super) fn set_bits_per_block(blocks: &[Block]) -> impl Iterator<Item = u32> + '_ {
    blocks
        .iter()
        .map(|block| block.0.iter().map(|w| w.count_ones()).sum())
}

#[cfg(test)]
mod tests {
    use super::super::arrays::zeroed;
    use super::super::bloom::hash_item;
    use super::*;

    #[test]
    fn blocks_are_cache_lines() {
        assert_eq!(std::mem::size_of::<Block>(), 64);
        let blocks: Vec<Block> = zeroed(1000).unwrap();
        assert_eq!(blocks.as_ptr() as usize % 64, 0);
        assert_eq!(words(&blocks).len(), 8000);
    }

    #[test]
    fn probes_are_spread_evenly() {
        // Where the probe at each of the first 20 places lands, over 100,000 items.
        let mut counts = [[0u32; 512]; 20];
        for i in 0..100_000u32 {
            let mut place = 0;
            hash_item(&i.to_le_bytes()).each_probe(20, |bit| {
                counts[place][bit] += 1;
                place += 1;
            });
        }
        // 195 a bit on average, σ ≈ 14.
        for counts in &counts {
            assert!(
                counts.iter().all(|&c| (120..270).contains(&c)),
                "{counts:?}"
            );
        }
    }

    #[test]
    fn added_items_are_found() {
        let mut blocks: Vec<Block> = zeroed(10).unwrap();
        for i in 0..300u32 {
            let hash = hash_item(&i.to_le_bytes());
            insert(&mut blocks, hash, 7);
            assert!(!insert(&mut blocks, hash, 7));
        }
        assert!((0..300u32).all(|i| contains(&blocks, hash_item(&i.to_le_bytes()), 7)));
    }
}
