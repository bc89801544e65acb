//! The plain Bloom filter: a link's bits in one of two layouts, and the chain of such links that
//! BF.* serves.
//!
//! The classic layout, the default, probes anywhere in a flat array by 64-bit double hashing, with
//! RedisBloom's sizes, under RedisBloom's hash (`HashScheme::Murmur`, the default, for bits
//! identical to RedisBloom's) or sieved's own (`HashScheme::Xxh3`, what classic filters had before).
//! The blocked layout (`block_array.rs`) keeps each item's probes in one cache line, for speed on
//! large filters, at the cost of a few more bits, and always uses sieved's own hash.

use super::arrays::{prefetch_word, read_le_bytes, write_le_bytes, zeroed_words};
use super::block_array::{self, BlockArray};
use super::blocked_sizing::BLOCK_BITS;
use super::chain::Chain;
use super::hash::{hash_item, murmur_item, HashScheme, ItemHash};
use super::link::LinkArray;
use super::sizing::{Layout, LinkSize};
use super::FilterError;

/// A scalable Bloom filter (BF.*).
pub type BloomChain = Chain<Bits>;

/// How a new filter is shaped. `expansion` 0 means non-scaling, as does `non_scaling`, which
/// keeps the expansion asked for: RedisBloom records it in a non-scaling filter's dump header.
#[derive(Debug, Clone, Copy)]
pub struct ChainOptions {
    pub error_rate: f64,
    pub capacity: u64,
    pub expansion: u32,
    pub non_scaling: bool,
    pub layout: Layout,
    /// Only classic filters have a choice; blocked ones always hash with xxh3.
    pub hash: HashScheme,
}

/// What every link of a plain chain shares: its layout and hash scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BitsKind {
    layout: Layout,
    hash: HashScheme,
}

impl BitsKind {
    /// A blocked layout takes sieved's own hash whatever is asked, its probes needing xxh3's
    /// independent words.
    pub fn new(layout: Layout, hash: HashScheme) -> BitsKind {
        let hash = match layout {
            Layout::Classic => hash,
            Layout::Blocked => HashScheme::Xxh3,
        };
        BitsKind { layout, hash }
    }

    pub fn layout(self) -> Layout {
        self.layout
    }

    pub fn hash(self) -> HashScheme {
        self.hash
    }
}

/// A plain link's bits, in the layout and scheme it was created with.
#[derive(Debug, Clone)]
pub struct Bits(BitArray);

/// Boxed slices (the arrays never grow) keep this, and so every link, as small as a plain `Vec`
/// was.
#[derive(Debug, Clone)]
enum BitArray {
    /// Classic, RedisBloom's hash: bit x is bit x mod 64 of word x / 64, which read as
    /// little-endian bytes is RedisBloom's byte x / 8 under mask 1 << (x mod 8).
    Murmur(Box<[u64]>),
    /// Classic, sieved's own hash.
    Classic(Box<[u64]>),
    Blocked(BlockArray),
}

impl Bits {
    /// The payload: the classic array, or the blocks one after another.
    fn words(&self) -> &[u64] {
        match &self.0 {
            BitArray::Murmur(words) | BitArray::Classic(words) => words,
            BitArray::Blocked(blocks) => blocks.words(),
        }
    }
}

/// Whether every one of `probes` is set in `words`.
#[inline]
fn all_set(words: &[u64], mut probes: impl Iterator<Item = u64>) -> bool {
    probes.all(|bit| words[(bit >> 6) as usize] & (1 << (bit & 63)) != 0)
}

/// Sets every one of `probes`; true when one of them was clear.
#[inline]
fn set_all(words: &mut [u64], probes: impl Iterator<Item = u64>) -> bool {
    let mut changed = 0;
    for bit in probes {
        let word = &mut words[(bit >> 6) as usize];
        let mask = 1 << (bit & 63);
        changed |= !*word & mask;
        *word |= mask;
    }
    changed != 0
}

impl LinkArray for Bits {
    type Kind = BitsKind;
    type Options = ChainOptions;
    const COUNTS_COPIES: bool = false;

    fn unpack(options: ChainOptions) -> (BitsKind, u64, f64, u32) {
        let expansion = if options.non_scaling {
            0
        } else {
            options.expansion
        };
        let kind = BitsKind::new(options.layout, options.hash);
        (kind, options.capacity, options.error_rate, expansion)
    }

    fn stated_expansion(options: ChainOptions) -> u32 {
        options.expansion
    }

    fn hash(kind: BitsKind, item: &[u8]) -> ItemHash {
        match kind.hash {
            HashScheme::Murmur => murmur_item(item),
            HashScheme::Xxh3 => hash_item(item),
        }
    }

    fn size_for(kind: BitsKind, capacity: u64, error_rate: f64) -> Option<LinkSize> {
        LinkSize::for_layout(kind.layout, capacity, error_rate)
    }

    fn bytes_for(_: BitsKind, size: LinkSize) -> Option<u64> {
        Some(size.bytes())
    }

    fn zeroed(kind: BitsKind, size: LinkSize) -> Result<Bits, FilterError> {
        let classic = || zeroed_words(size.words()).map(Vec::into_boxed_slice);
        Ok(Bits(match (kind.layout, kind.hash) {
            (Layout::Classic, HashScheme::Murmur) => BitArray::Murmur(classic()?),
            (Layout::Classic, HashScheme::Xxh3) => BitArray::Classic(classic()?),
            (Layout::Blocked, _) => BitArray::Blocked(BlockArray::zeroed(size.words() / 8)?),
        }))
    }

    fn kind(&self) -> BitsKind {
        match self.0 {
            BitArray::Murmur(_) => BitsKind::new(Layout::Classic, HashScheme::Murmur),
            BitArray::Classic(_) => BitsKind::new(Layout::Classic, HashScheme::Xxh3),
            BitArray::Blocked(_) => BitsKind::new(Layout::Blocked, HashScheme::Xxh3),
        }
    }

    #[inline]
    fn contains(&self, size: LinkSize, hash: ItemHash) -> bool {
        match &self.0 {
            BitArray::Murmur(words) => {
                all_set(words, hash.redisbloom_probes(size.bits, size.hashes))
            }
            BitArray::Classic(words) => all_set(words, hash.probes(size.bits, size.hashes)),
            BitArray::Blocked(blocks) => block_array::contains(blocks, hash, size.hashes),
        }
    }

    /// Sets the item's bits; true when at least one of them was clear (the item is new here).
    #[inline]
    fn insert(&mut self, size: LinkSize, hash: ItemHash) -> bool {
        match &mut self.0 {
            BitArray::Murmur(words) => {
                set_all(words, hash.redisbloom_probes(size.bits, size.hashes))
            }
            BitArray::Classic(words) => set_all(words, hash.probes(size.bits, size.hashes)),
            BitArray::Blocked(blocks) => block_array::insert(blocks, hash, size.hashes),
        }
    }

    #[inline]
    fn prefetch(&self, size: LinkSize, hash: ItemHash) {
        match &self.0 {
            BitArray::Murmur(words) => {
                for bit in hash.redisbloom_probes(size.bits, size.hashes) {
                    prefetch_word(words, (bit >> 6) as usize);
                }
            }
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
            BitArray::Murmur(words) => {
                if let Some(bit) = hash.redisbloom_probes(size.bits, size.hashes).next() {
                    prefetch_word(words, (bit >> 6) as usize);
                }
            }
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
            BitArray::Murmur(_) | BitArray::Classic(_) => {
                (used_slots as f64 / size.bits as f64).powi(hashes)
            }
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
            BitArray::Murmur(words) | BitArray::Classic(words) => words.len(),
            BitArray::Blocked(blocks) => blocks.payload_words(),
        }
    }

    /// For a blocked link, the payload and the padding that brings its first block to a cache
    /// line.
    fn allocated_bytes(&self) -> u64 {
        match &self.0 {
            BitArray::Murmur(words) | BitArray::Classic(words) => {
                std::mem::size_of_val(&**words) as u64
            }
            BitArray::Blocked(blocks) => blocks.allocated_bytes(),
        }
    }

    fn read_bytes(&self, from: u64, len: u64, out: &mut Vec<u8>) {
        read_le_bytes(self.words(), from, len, out);
    }

    fn write_bytes(&mut self, from: u64, data: &[u8]) {
        let words = match &mut self.0 {
            BitArray::Murmur(words) | BitArray::Classic(words) => words,
            BitArray::Blocked(blocks) => blocks.words_mut(),
        };
        write_le_bytes(words, from, data);
    }

    fn combine(_: BitsKind, into: &mut [u8], from: &[u8]) {
        for (byte, other) in into.iter_mut().zip(from) {
            *byte |= other;
        }
    }

    fn kind_fields(kind: BitsKind) -> Vec<(&'static str, String)> {
        vec![
            ("layout", kind.layout.name().to_string()),
            ("hash scheme", kind.hash.name().to_string()),
        ]
    }
}

impl BloomChain {
    /// The layout its links share.
    pub(crate) fn layout(&self) -> Layout {
        self.kind().layout
    }

    /// BF.INFO's Size. For a filter hashed as RedisBloom hashes, RedisBloom's accounting: the
    /// sizes of its C structures on x86-64 (a 32-byte chain, a 64-byte link) plus the arrays, so
    /// that the figures agree with it. Other filters, which RedisBloom cannot hold, report the
    /// bytes sieved uses for them, as they always did.
    pub(crate) fn info_size(&self) -> u64 {
        match self.kind().hash {
            HashScheme::Murmur => 32 + self.links.iter().map(|link| 64 + link.bytes()).sum::<u64>(),
            HashScheme::Xxh3 => self.memory_bytes(),
        }
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
            for hash in [HashScheme::Murmur, HashScheme::Xxh3] {
                byte_view_round_trips(BitsKind::new(layout, hash));
            }
        }
    }

    fn byte_view_round_trips(layout: BitsKind) {
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
        // Every value of the keyspace is as large as a chain; each link of a chain as large as
        // RedisBloom's.
        assert_eq!(std::mem::size_of::<BloomLink>(), 64);
        assert_eq!(std::mem::size_of::<BloomChain>(), 40);
    }

    #[test]
    fn refuses_before_allocating() {
        let classic = BitsKind::new(Layout::Classic, HashScheme::Murmur);
        let err = BloomLink::new(classic, 1 << 30, 1e-300, 1 << 30).unwrap_err();
        assert!(matches!(err, FilterError::TooLarge { limit, .. } if limit == 1 << 30));
    }
}
