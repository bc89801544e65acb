//! The plain Bloom filter: a link's bits in one of two layouts, and the chain of such links that
//! BF.* serves.
//!
//! The classic layout, the default, probes anywhere in a flat array by 64-bit double hashing, with
//! RedisBloom's sizes, under RedisBloom's hash (`HashScheme::Murmur`, the default, for bits
//! identical to RedisBloom's) or sieved's own (`HashScheme::Xxh3`, what classic filters had before).
//! The blocked layout (`block_array.rs`) keeps each item's probes in one cache line, for speed on
//! large filters, at the cost of a few more bits, and always uses sieved's own hash.

use super::arrays::{fill_le_bytes, prefetch_at, read_le_bytes, write_le_bytes, zeroed_words};
use super::block_array::{self, BlockArray};
use super::blocked_sizing::BLOCK_BITS;
use super::chain::Chain;
use super::item_hash::{HashScheme, ItemHash};
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

    fn words_mut(&mut self) -> &mut [u64] {
        match &mut self.0 {
            BitArray::Murmur(words) | BitArray::Classic(words) => words,
            BitArray::Blocked(blocks) => blocks.words_mut(),
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

    fn hash_scheme(kind: BitsKind) -> HashScheme {
        kind.hash
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
                    prefetch_at(words, (bit >> 6) as usize);
                }
            }
            BitArray::Classic(words) => {
                for bit in hash.probes(size.bits, size.hashes) {
                    prefetch_at(words, (bit >> 6) as usize);
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
                    prefetch_at(words, (bit >> 6) as usize);
                }
            }
            BitArray::Classic(words) => {
                if let Some(bit) = hash.probes(size.bits, size.hashes).next() {
                    prefetch_at(words, (bit >> 6) as usize);
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
        write_le_bytes(self.words_mut(), from, data);
    }

    fn fill_bytes<E>(
        &mut self,
        fill: &mut impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        fill_le_bytes(self.words_mut(), fill)
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
    use super::super::item_hash::hash_item;
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

    /// The words of a link's array, whatever its layout.
    fn words_mut(link: &mut BloomLink) -> &mut [u64] {
        link.array.words_mut()
    }

    /// The chance that a look-up in a block whose bits are each set with probability 1/2 finds
    /// all its `hashes` probes set: 2^-j when the probes fall on j distinct bits of the 512, which
    /// they do with the probability the recurrence over the probes gives.
    fn blocked_pass_rate_at_half_fill(hashes: u32) -> f64 {
        let bits = BLOCK_BITS as f64;
        let mut distinct = vec![1.0f64];
        for _ in 0..hashes {
            let mut next = vec![0.0; distinct.len() + 1];
            for (j, p) in distinct.iter().enumerate() {
                next[j] += p * j as f64 / bits;
                next[j + 1] += p * (bits - j as f64) / bits;
            }
            distinct = next;
        }
        distinct
            .iter()
            .enumerate()
            .map(|(j, p)| p * 0.5f64.powi(j as i32))
            .sum()
    }

    /// A filter of 1.8·10^9 items at 1%, 17.25·10^9 bits (past 2^34), in each layout: the probe
    /// arithmetic must have no bias at that size. Filling it with real items would take some
    /// 10^10 probes; the test samples instead, which checks the same arithmetic:
    ///
    /// - 200,000 real items are added through the real add path: each is then found (no false
    ///   negative), and the bits they set are spread evenly over 64 equal regions of the whole
    ///   array, the upper ones past 2^32 and 2^33 included (a position computed in 32 bits, or a
    ///   biased reduction, would leave regions empty or skewed). With 1.4·10^6 probes, a region
    ///   gets about 21,900 bits, σ ≈ 148; each must be within 6σ.
    /// - The array is then filled the way a filter at capacity is filled as far as any one
    ///   look-up can tell: each bit set independently with probability 1/2 (RedisBloom's sizing
    ///   leaves a fill of 1 − e^(−k/bpe) ≈ 0.52 at capacity). A look-up of an item never added
    ///   passes with probability 2^−k exactly when its k probes are uniform over the whole array
    ///   and distinct, whatever the size; the blocked layout's probes share one block and may
    ///   coincide, which `blocked_pass_rate_at_half_fill` accounts for. 400,000 look-ups: for k = 7
    ///   the expected 3,125 passes have σ ≈ 56; the count must be within 5σ (a chance of 6·10^-7
    ///   of a false alarm).
    ///
    /// What the random fill leaves out is the correlation between the probes of different items
    /// that plain double hashing (RedisBloom's scheme) has: two items whose steps h2 agree modulo
    /// the size share probes. Its effect on the rate falls as the size grows (Kirsch and
    /// Mitzenmacher, "Less hashing, same performance"): at 2^34 bits a pair of items shares two
    /// or more probes with probability of order k²/m, 3·10^-9, so it cannot move the rate
    /// measurably; tests/it/fpr.rs measures it where it matters, on small filters.
    #[test]
    fn no_bias_past_2_to_the_34_bits() {
        let kinds = [
            BitsKind::new(Layout::Classic, HashScheme::Murmur),
            BitsKind::new(Layout::Classic, HashScheme::Xxh3),
            BitsKind::new(Layout::Blocked, HashScheme::Xxh3),
        ];
        for kind in kinds {
            let mut link = BloomLink::new(kind, 1_800_000_000, 0.01, u64::MAX).unwrap();
            assert!(link.bits() > 1 << 34, "{kind:?}: {} bits", link.bits());
            let hash = |item: &[u8]| Bits::hash(kind, item);
            let added = |i: u32| format!("added:{i}");
            for i in 0..200_000 {
                link.insert(hash(added(i).as_bytes()));
            }
            assert!((0..200_000).all(|i| link.contains(hash(added(i).as_bytes()))));
            let words = words_mut(&mut link);
            let region = words.len().div_ceil(64);
            let per_region: Vec<u64> = words
                .chunks(region)
                .map(|words| words.iter().map(|w| u64::from(w.count_ones())).sum())
                .collect();
            let total: u64 = per_region.iter().sum();
            let mean = total as f64 / 64.0;
            for (at, &count) in per_region.iter().enumerate() {
                let last_is_short = at == 63 && words.len() % region != 0;
                if !last_is_short {
                    let deviation = (count as f64 - mean).abs() / mean.sqrt();
                    assert!(
                        deviation < 6.0,
                        "{kind:?}: region {at} has {count}, mean {mean}"
                    );
                }
            }
            let mut state = 0x5eed_u64;
            for word in words.iter_mut() {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                *word = z ^ (z >> 31);
            }
            let queries = 400_000u32;
            let passed = (0..queries)
                .filter(|i| link.contains(hash(format!("absent:{i}").as_bytes())))
                .count() as f64;
            let rate = match kind.layout() {
                Layout::Classic => 0.5f64.powi(link.hashes() as i32),
                Layout::Blocked => blocked_pass_rate_at_half_fill(link.hashes()),
            };
            let expected = f64::from(queries) * rate;
            let sigma = (expected * (1.0 - rate)).sqrt();
            assert!(
                (passed - expected).abs() < 5.0 * sigma,
                "{kind:?}: {passed} passes, expected {expected} ± {sigma}"
            );
        }
    }

    #[test]
    fn refuses_before_allocating() {
        let classic = BitsKind::new(Layout::Classic, HashScheme::Murmur);
        let err = BloomLink::new(classic, 1 << 30, 1e-300, 1 << 30).unwrap_err();
        assert!(matches!(err, FilterError::TooLarge { limit, .. } if limit == 1 << 30));
    }

    // The scalable chain (chain.rs), as the Bloom filter grows it.

    fn options(error_rate: f64, capacity: u64, expansion: u32) -> ChainOptions {
        ChainOptions {
            error_rate,
            capacity,
            expansion,
            non_scaling: false,
            layout: Layout::Classic,
            hash: HashScheme::Murmur,
        }
    }

    #[test]
    fn scales_like_redisbloom() {
        let mut chain = BloomChain::new(options(0.01, 100, 2), u64::MAX).unwrap();
        let mut added = 0;
        for i in 0..1000 {
            added += chain.add(format!("item{i}").as_bytes(), u64::MAX).unwrap() as u64;
        }
        let shape: Vec<_> = chain
            .links()
            .iter()
            .map(|l| (l.capacity(), l.bytes(), l.hashes()))
            .collect();
        assert_eq!(
            shape,
            [
                (100, 144, 8),
                (200, 312, 9),
                (400, 696, 10),
                (800, 1536, 11)
            ]
        );
        assert_eq!(chain.capacity(), 1500);
        assert_eq!(chain.items(), added);
        // RedisBloom counts 994: the same six adds are false positives under its hash.
        assert_eq!(added, 994);
        for i in 0..1000 {
            assert!(chain.contains(format!("item{i}").as_bytes()));
        }
    }

    #[test]
    fn blocked_chains_grow_blocked_links() {
        let mut blocked = options(0.01, 100, 2);
        blocked.layout = Layout::Blocked;
        let mut chain = BloomChain::new(blocked, u64::MAX).unwrap();
        for i in 0..1000 {
            chain.add(format!("item{i}").as_bytes(), u64::MAX).unwrap();
        }
        let shape: Vec<_> = chain
            .links()
            .iter()
            .map(|l| {
                (
                    l.kind().layout(),
                    l.capacity(),
                    l.bytes() % 64,
                    l.error_rate(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                (Layout::Blocked, 100, 0, 0.005),
                (Layout::Blocked, 200, 0, 0.0025),
                (Layout::Blocked, 400, 0, 0.00125),
                (Layout::Blocked, 800, 0, 0.000625)
            ]
        );
        for i in 0..1000 {
            assert!(chain.contains(format!("item{i}").as_bytes()));
        }
    }

    #[test]
    fn non_scaling_fills_up() {
        let mut chain = BloomChain::new(options(0.01, 10, 0), u64::MAX).unwrap();
        for i in 0..10 {
            assert_eq!(chain.add(format!("x{i}").as_bytes(), u64::MAX), Ok(true));
        }
        assert_eq!(chain.add(b"another", u64::MAX), Err(FilterError::Full));
        assert_eq!(chain.add(b"x0", u64::MAX), Ok(false));
        assert_eq!(chain.links()[0].bytes(), 16);
    }

    #[test]
    fn error_rate_is_capped() {
        let chain = BloomChain::new(options(0.5, 100, 2), u64::MAX).unwrap();
        assert_eq!(chain.links()[0].error_rate(), 0.125);
        assert_eq!(chain.links()[0].bytes(), 56);
    }

    #[test]
    fn growth_beyond_the_limit_is_refused() {
        let mut chain = BloomChain::new(options(0.01, 100, 32768), 1 << 20).unwrap();
        let mut result = Ok(true);
        for i in 0..200 {
            result = chain.add(format!("{i}").as_bytes(), 1 << 20);
            if result.is_err() {
                break;
            }
        }
        assert!(matches!(result, Err(FilterError::TooLarge { .. })));
        assert_eq!(chain.links().len(), 1);
    }

    #[test]
    fn blocked_filters_are_refused_past_the_limit_on_their_own_size() {
        // 100,000 items at 1%: 119,816 bytes classic, 124,032 blocked.
        let mut blocked = options(0.01, 100_000, 0);
        assert!(BloomChain::new(blocked, 120_000).is_ok());
        blocked.layout = Layout::Blocked;
        assert_eq!(
            BloomChain::new(blocked, 120_000).unwrap_err(),
            FilterError::TooLarge {
                bytes: 124_032,
                limit: 120_000
            }
        );
    }
}
