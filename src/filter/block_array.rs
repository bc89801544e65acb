//! The cache-line-blocked bit array: all probes of an item fall in one 64-byte block, so an add or
//! a look-up reads one cache line (and, on a large filter, misses memory once) instead of once per
//! probe. The price is a few more bits per item for the same false-positive rate, worked out in
//! `blocked_sizing`.
//!
//! The item's hash gives the block and, independently, the probes inside it (`ItemHash::block`,
//! `ItemHash::each_block_probe` in `item_hash.rs`).

use super::arrays::{prefetch_at, zeroed_words};
use super::item_hash::ItemHash;
use super::FilterError;

const BLOCK_WORDS: usize = 8;
/// Words before the first block, at most, to bring it to a cache line boundary.
const MAX_PADDING: usize = BLOCK_WORDS - 1;

/// 64-byte blocks laid over a word array, the first block starting on a cache line.
///
/// The array is allocated with the words' own alignment and padded, rather than allocated
/// 64-byte aligned: an aligned allocation is zeroed by hand, page by page, so that reserving a
/// large filter would take time and all its memory at once, and its pages would be small ones
/// before they could be advised onto huge pages. This way it comes lazily zeroed (`zeroed_words`).
#[derive(Debug)]
pub(super) struct BlockArray {
    words: Box<[u64]>,
}

impl BlockArray {
    pub(super) fn zeroed(blocks: usize) -> Result<BlockArray, FilterError> {
        let len = blocks
            .checked_mul(BLOCK_WORDS)
            .and_then(|words| words.checked_add(MAX_PADDING))
            .ok_or(FilterError::OutOfMemory)?;
        Ok(BlockArray {
            words: zeroed_words(len)?.into_boxed_slice(),
        })
    }

    /// Where the first block starts. Worked out from the address, so it holds wherever the
    /// array is.
    #[inline]
    fn start(&self) -> usize {
        let padding = self.words.as_ptr().align_offset(BLOCK_WORDS * 8);
        if padding <= MAX_PADDING {
            padding
        } else {
            0
        }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        (self.words.len() - MAX_PADDING) / BLOCK_WORDS
    }

    #[inline]
    fn block(&self, index: usize) -> &[u64; BLOCK_WORDS] {
        let at = self.start() + index * BLOCK_WORDS;
        self.words[at..]
            .first_chunk()
            .expect("a block index is below the block count")
    }

    #[inline]
    fn block_mut(&mut self, index: usize) -> &mut [u64; BLOCK_WORDS] {
        let at = self.start() + index * BLOCK_WORDS;
        self.words[at..]
            .first_chunk_mut()
            .expect("a block index is below the block count")
    }

    /// The blocks' words, without the padding.
    #[inline]
    pub(super) fn payload_words(&self) -> usize {
        self.len() * BLOCK_WORDS
    }

    pub(super) fn allocated_bytes(&self) -> u64 {
        std::mem::size_of_val(&*self.words) as u64
    }

    /// The blocks' words, block after block.
    pub(super) fn words(&self) -> &[u64] {
        let start = self.start();
        &self.words[start..start + self.payload_words()]
    }

    pub(super) fn words_mut(&mut self) -> &mut [u64] {
        let (start, len) = (self.start(), self.payload_words());
        &mut self.words[start..start + len]
    }

    /// Bits set in each block, for estimating the false-positive rate from the fill.
    pub(super) fn set_bits_per_block(&self) -> impl Iterator<Item = u32> + '_ {
        self.words()
            .chunks_exact(BLOCK_WORDS)
            .map(|block| block.iter().map(|w| w.count_ones()).sum())
    }
}

/// A copy lands at another address, whose padding may differ: the blocks are copied, not the
/// array.
impl Clone for BlockArray {
    fn clone(&self) -> BlockArray {
        let mut copy = match BlockArray::zeroed(self.len()) {
            Ok(copy) => copy,
            // As a Vec's clone does when the allocator fails.
            Err(_) => std::alloc::handle_alloc_error(std::alloc::Layout::for_value(&*self.words)),
        };
        copy.words_mut().copy_from_slice(self.words());
        copy
    }
}

/// The probes are gathered into a mask and the block compared with it word by word: no branch
/// depends on the bits, which a look-up of an item not in the filter would mispredict half the
/// time.
#[inline]
pub(super) fn contains(blocks: &BlockArray, hash: ItemHash, hashes: u32) -> bool {
    let block = blocks.block(hash.block(blocks.len()));
    let mut mask = [0u64; 8];
    hash.each_block_probe(hashes, |bit| mask[bit >> 6] |= 1 << (bit & 63));
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
pub(super) fn insert(blocks: &mut BlockArray, hash: ItemHash, hashes: u32) -> bool {
    let block = blocks.block_mut(hash.block(blocks.len()));
    let mut missing = 0;
    hash.each_block_probe(hashes, |bit| {
        let word = &mut block[bit >> 6];
        let mask = 1 << (bit & 63);
        missing |= mask & !*word;
        *word |= mask;
    });
    missing != 0
}

#[inline]
pub(super) fn prefetch(blocks: &BlockArray, hash: ItemHash) {
    let at = blocks.start() + hash.block(blocks.len()) * BLOCK_WORDS;
    prefetch_at(&blocks.words, at);
}

#[cfg(test)]
mod tests {
    use super::super::item_hash::hash_item;
    use super::*;

    #[test]
    fn blocks_are_cache_lines_wherever_the_array_lands() {
        // Arrays of assorted sizes land at assorted addresses; a clone at yet another.
        let arrays: Vec<BlockArray> = (1..40).map(|n| BlockArray::zeroed(n).unwrap()).collect();
        for (n, array) in (1..40).zip(&arrays) {
            let mut array = array.clone();
            assert_eq!(array.words().as_ptr() as usize % 64, 0);
            assert_eq!((array.len(), array.words().len()), (n, n * 8));
            array.words_mut()[n * 8 - 1] = 1 << 63;
            let copy = array.clone();
            assert_eq!(copy.words(), array.words());
            assert_eq!(copy.words().as_ptr() as usize % 64, 0);
        }
    }

    #[test]
    fn added_items_are_found() {
        let mut blocks = BlockArray::zeroed(10).unwrap();
        for i in 0..300u32 {
            let hash = hash_item(&i.to_le_bytes());
            insert(&mut blocks, hash, 7);
            assert!(!insert(&mut blocks, hash, 7));
        }
        assert!((0..300u32).all(|i| contains(&blocks, hash_item(&i.to_le_bytes()), 7)));
    }
}
