//! The plain Bloom filter: a link's bits in one of two layouts, and the chain of such links that
//! BF.* serves.
//!
//! The classic layout, the default, probes anywhere in a flat array by 64-bit double hashing, with
//! RedisBloom's sizes (`ItemHash::probes`). The blocked layout (`block_array.rs`) keeps each
//! item's probes in one cache line, for speed on large filters, at the cost of a few more bits.

use super::arrays::{prefetch_word, read_le_bytes, write_le_bytes, zeroed_words};
use super::block_array::{self, BlockArray};
use super::blocked_sizing::BLOCK_BITS;
use super::chain::Chain;
use super::hash::ItemHash;
use super::link::LinkArray;
use super::sizing::{Layout, LinkSize};
use super::FilterError;

/// A scalable Bloom filter (BF.*).
pub type BloomChain = Chain<Bits>;

/// How a new filter is shaped. `expansion` 0 means non-scaling.
#[derive(Debug, Clone, Copy)]
pub struct ChainOptions {
    pub error_rate: f64,
    pub capacity: u64,
    pub expansion: u32,
    pub layout: Layout,
}

/// A plain link's bits, in the layout it was created with.
#[derive(Debug, Clone)]
pub struct Bits(BitArray);

/// Boxed slices (the arrays never grow) keep this, and so every link and BF.INFO's `Size`, as
/// small as a plain `Vec` was.
#[derive(Debug, Clone)]
enum BitArray {
    Classic(Box<[u64]>),
    Blocked(BlockArray),
}

impl Bits {
    /// The payload: the classic array, or the blocks one after another.
    fn words(&self) -> &[u64] {
        match &self.0 {
            BitArray::Classic(words) => words,
            BitArray::Blocked(blocks) => blocks.words(),
        }
    }
}

impl LinkArray for Bits {
    type Kind = Layout;
    type Options = ChainOptions;
    const COUNTS_COPIES: bool = false;

    fn unpack(options: ChainOptions) -> (Layout, u64, f64, u32) {
        let ChainOptions {
            error_rate,
            capacity,
            expansion,
            layout,
        } = options;
        (layout, capacity, error_rate, expansion)
    }

    fn size_for(layout: Layout, capacity: u64, error_rate: f64) -> Option<LinkSize> {
        LinkSize::for_layout(layout, capacity, error_rate)
    }

    fn bytes_for(_: Layout, size: LinkSize) -> Option<u64> {
        Some(size.bytes())
    }

    fn zeroed(layout: Layout, size: LinkSize) -> Result<Bits, FilterError> {
        Ok(Bits(match layout {
            Layout::Classic => BitArray::Classic(zeroed_words(size.words())?.into_boxed_slice()),
            Layout::Blocked => BitArray::Blocked(BlockArray::zeroed(size.words() / 8)?),
        }))
    }

    fn kind(&self) -> Layout {
        match self.0 {
            BitArray::Classic(_) => Layout::Classic,
            BitArray::Blocked(_) => Layout::Blocked,
        }
    }

    #[inline]
    fn contains(&self, size: LinkSize, hash: ItemHash) -> bool {
        match &self.0 {
            BitArray::Classic(words) => hash
                .probes(size.bits, size.hashes)
                .all(|bit| words[(bit >> 6) as usize] & (1 << (bit & 63)) != 0),
            BitArray::Blocked(blocks) => block_array::contains(blocks, hash, size.hashes),
        }
    }

    /// Sets the item's bits; true when at least one of them was clear (the item is new here).
    #[inline]
    fn insert(&mut self, size: LinkSize, hash: ItemHash) -> bool {
        match &mut self.0 {
            BitArray::Classic(words) => {
                let mut changed = 0;
                for bit in hash.probes(size.bits, size.hashes) {
                    let word = &mut words[(bit >> 6) as usize];
                    let mask = 1 << (bit & 63);
                    changed |= !*word & mask;
                    *word |= mask;
                }
                changed != 0
            }
            BitArray::Blocked(blocks) => block_array::insert(blocks, hash, size.hashes),
        }
    }

    #[inline]
    fn prefetch(&self, size: LinkSize, hash: ItemHash) {
        match &self.0 {
            BitArray::Classic(words) => {
                for bit in hash.probes(size.bits, size.hashes) {
                    prefetch_word(words, (bit >> 6) as usize);
                }
            }
            BitArray::Blocked(blocks) => block_array::prefetch(blocks, hash),
        }
    }

    /// In a blocked link the first probe's cache line is every probe's.
    #[inline]
    fn prefetch_first(&self, size: LinkSize, hash: ItemHash) {
        match &self.0 {
            BitArray::Classic(words) => {
                if let Some(bit) = hash.probes(size.bits, size.hashes).next() {
                    prefetch_word(words, (bit >> 6) as usize);
                }
            }
            BitArray::Blocked(blocks) => block_array::prefetch(blocks, hash),
        }
    }

    fn used_slots(&self) -> u64 {
        self.words().iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// The fill to the power of the probes, block by block for a blocked link, whose blocks
    /// fill unevenly.
    fn estimated_pass_rate(&self, size: LinkSize, used_slots: u64) -> f64 {
        let hashes = size.hashes as i32;
        match &self.0 {
            BitArray::Classic(_) => (used_slots as f64 / size.bits as f64).powi(hashes),
            BitArray::Blocked(blocks) => {
                let per_block: f64 = blocks
                    .set_bits_per_block()
                    .map(|set| (f64::from(set) / BLOCK_BITS as f64).powi(hashes))
                    .sum();
                per_block / blocks.len().max(1) as f64
            }
        }
    }

    fn payload_words(&self) -> usize {
        match &self.0 {
            BitArray::Classic(words) => words.len(),
            BitArray::Blocked(blocks) => blocks.payload_words(),
        }
    }

    /// For a blocked link, the payload and the padding that brings its first block to a cache
    /// line.
    fn allocated_bytes(&self) -> u64 {
        match &self.0 {
            BitArray::Classic(words) => std::mem::size_of_val(&**words) as u64,
            BitArray::Blocked(blocks) => blocks.allocated_bytes(),
        }
    }

    fn read_bytes(&self, from: u64, len: u64, out: &mut Vec<u8>) {
        read_le_bytes(self.words(), from, len, out);
    }

    fn write_bytes(&mut self, from: u64, data: &[u8]) {
        let words = match &mut self.0 {
            BitArray::Classic(words) => words,
            BitArray::Blocked(blocks) => blocks.words_mut(),
        };
        write_le_bytes(words, from, data);
    }
}

impl BloomChain {
    /// The layout its links share.
    pub(crate) fn layout(&self) -> Layout {
        self.kind()
    }
}

#[cfg(test)]
mod tests {
    use super::super::hash::hash_item;
    use super::super::link::Link;
    use super::*;

    type BloomLink = Link<Bits>;

    #[test]
    fn byte_view_round_trips_at_any_alignment() {
        for layout in [Layout::Classic, Layout::Blocked] {
            byte_view_round_trips(layout);
        }
    }

    fn byte_view_round_trips(layout: Layout) {
        let mut link = BloomLink::new(layout, 100, 0.01, u64::MAX).unwrap();
        for i in 0..60u32 {
            link.insert(hash_item(&i.to_le_bytes()));
        }
        let mut all = Vec::new();
        link.read_bytes(0, link.bytes(), &mut all);
        let mut copy = BloomLink::new(layout, 100, 0.01, u64::MAX).unwrap();
        for (start, end) in [(0, 5), (5, 17), (17, 64), (64, all.len())] {
            copy.write_bytes(start as u64, &all[start..end]);
        }
        let mut again = Vec::new();
        copy.read_bytes(3, link.bytes() - 3, &mut again);
        assert_eq!(&all[3..], &again[..]);
        for i in 0..60u32 {
            assert!(copy.contains(hash_item(&i.to_le_bytes())));
        }
    }

    #[test]
    fn the_layout_does_not_grow_a_link() {
        // BF.INFO's Size counts the links' structures; with 64-byte links it is RedisBloom's
        // figure plus 8 bytes.
        assert_eq!(std::mem::size_of::<BloomLink>(), 64);
        // And the chain's own, for which 40 bytes are counted.
        assert_eq!(std::mem::size_of::<BloomChain>(), 40);
    }

    #[test]
    fn refuses_before_allocating() {
        let err = BloomLink::new(Layout::Classic, 1 << 30, 1e-300, 1 << 30).unwrap_err();
        assert!(matches!(err, FilterError::TooLarge { limit, .. } if limit == 1 << 30));
    }
}
