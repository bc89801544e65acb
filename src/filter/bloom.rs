//! One Bloom filter link, and the item hashing and batch prefetching that every filter shares.
//!
//! A link lays its bits out in one of two ways. The classic layout, the default, probes anywhere
//! in a flat array by 64-bit double hashing, with RedisBloom's sizes. Probe positions are mapped
//! onto the array with a multiply-shift instead of a modulo, which is uniform for any bit count
//! and avoids a division per probe. The blocked layout (`blocked.rs`) keeps each item's probes in
//! one cache line, for speed on large filters, at the cost of a few more bits.

use super::arrays::{
    prefetch_word, read_le_bytes, write_le_bytes, zeroed_words, PREFETCH_MIN_WORDS,
};
use super::blocked::{self, BlockArray};
use super::blocked_sizing::BLOCK_BITS;
use super::sizing::{Layout, LinkSize};
use super::FilterError;
use xxhash_rust::xxh3::xxh3_128;

/// The two 64-bit halves of an item's 128-bit xxh3 hash, from which each layout derives the
/// item's probes.
#[derive(Debug, Clone, Copy)]
pub struct ItemHash {
    pub(super) h1: u64,
    pub(super) h2: u64,
}

/// MurmurHash3's 64-bit finaliser: a bijection whose every output bit depends on every input bit.
#[inline]
pub(super) fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

pub fn hash_item(item: &[u8]) -> ItemHash {
    let h = xxh3_128(item);
    ItemHash {
        h1: h as u64,
        h2: (h >> 64) as u64,
    }
}

impl ItemHash {
    /// The bit positions of this item in an array of `bits` bits.
    ///
    /// Plain double hashing (h1 + i·h2 taken straight to a position) correlates the probes of
    /// different items: two items whose steps nearly agree share several bits. With many probes
    /// in a small array that measurably inflates the false-positive rate (by 5 to 20% at error
    /// rates of 1e-4, in tests/fpr.rs). Passing each h1 + i·h2 through a 64-bit finaliser makes
    /// the positions behave as independent for the cost of two multiplications per probe.
    #[inline]
    pub fn probes(self, bits: u64, hashes: u32) -> impl Iterator<Item = u64> {
        (0..hashes as u64).map(move |i| {
            let x = mix(self.h1.wrapping_add(i.wrapping_mul(self.h2)));
            ((x as u128 * bits as u128) >> 64) as u64
        })
    }
}

/// How many items a batch hashes ahead of the one it probes. Each item's probes are prefetched
/// when it is hashed, so that by its turn its cache lines have had the time of this many items'
/// work to arrive; eight covers a miss to memory with room to spare.
const PREFETCH_AHEAD: usize = 8;

/// Calls `visit` on the hash of each item in order, until it returns false. Every hash is made
/// `PREFETCH_AHEAD` items before its visit and passed to `prefetch` then, so that on a large filter
/// the misses of several items overlap instead of following one another. The state the two
/// share is passed in as `target` so that one may read it and the other change it.
fn for_each_prefetched<'a, T: ?Sized>(
    target: &mut T,
    items: impl IntoIterator<Item = &'a [u8]>,
    prefetch: impl Fn(&T, ItemHash),
    mut visit: impl FnMut(&mut T, ItemHash) -> bool,
) {
    let mut items = items.into_iter().fuse();
    let mut ring = [ItemHash { h1: 0, h2: 0 }; PREFETCH_AHEAD];
    let mut queued = 0;
    for (slot, item) in ring.iter_mut().zip(items.by_ref()) {
        *slot = hash_item(item);
        prefetch(target, *slot);
        queued += 1;
    }
    let mut head = 0;
    while queued > 0 {
        let hash = ring[head];
        match items.next() {
            Some(item) => {
                ring[head] = hash_item(item);
                prefetch(target, ring[head]);
            }
            None => queued -= 1,
        }
        head = (head + 1) % PREFETCH_AHEAD;
        if !visit(target, hash) {
            return;
        }
    }
}

/// A chain of links probed by item hash. Given its three per-hash operations, the batch
/// operations are the same for plain and counting chains, so they are written once here.
pub trait HashedChain {
    /// Adds an item by its hash; Ok(true) when it was not (seemingly) present before.
    fn add_hashed(&mut self, hash: ItemHash, limit_bytes: u64) -> Result<bool, FilterError>;
    /// Starts loading what an add or a look-up of the item will read.
    fn prefetch(&self, hash: ItemHash);
    fn contains_hashed(&self, hash: ItemHash) -> bool;

    /// Adds items in order, passing each result to `on_result`; stops after the first error.
    /// Items are hashed and their probes prefetched a few ahead of their turn.
    fn add_all<'a>(
        &mut self,
        items: impl IntoIterator<Item = &'a [u8]>,
        limit_bytes: u64,
        mut on_result: impl FnMut(Result<bool, FilterError>),
    ) {
        for_each_prefetched(self, items, Self::prefetch, |chain, hash| {
            let result = chain.add_hashed(hash, limit_bytes);
            let failed = result.is_err();
            on_result(result);
            !failed
        });
    }

    /// Looks items up in order, passing each answer to `on_result`, with the prefetching of
    /// `add_all`.
    fn contains_all<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
        mut on_result: impl FnMut(bool),
    ) {
        for_each_prefetched(
            &mut &*self,
            items,
            |chain, hash| chain.prefetch(hash),
            |chain, hash| {
                on_result(chain.contains_hashed(hash));
                true
            },
        );
    }
}

/// A link's bits, in the layout it was created with. Boxed slices (the arrays never grow) keep
/// the enum, and so every link and BF.INFO's `Size`, as small as a plain `Vec` was.
#[derive(Debug, Clone)]
enum Bits {
    Classic(Box<[u64]>),
    Blocked(BlockArray),
}

#[derive(Debug, Clone)]
pub struct Link {
    bits: Bits,
    size: LinkSize,
    capacity: u64,
    error_rate: f64,
    items: u64,
}

impl Link {
    /// Allocates a zeroed link, refusing (before allocating) anything over `limit_bytes`.
    pub fn new(
        layout: Layout,
        capacity: u64,
        error_rate: f64,
        limit_bytes: u64,
    ) -> Result<Link, FilterError> {
        let size =
            LinkSize::for_layout(layout, capacity, error_rate).ok_or(FilterError::CannotScale)?;
        Self::with_size(layout, size, capacity, error_rate, limit_bytes)
    }

    /// `size` must be what `LinkSize::for_layout` gives for `layout`.
    pub(super) fn with_size(
        layout: Layout,
        size: LinkSize,
        capacity: u64,
        error_rate: f64,
        limit_bytes: u64,
    ) -> Result<Link, FilterError> {
        if size.bytes() > limit_bytes {
            return Err(FilterError::TooLarge {
                bytes: size.bytes(),
                limit: limit_bytes,
            });
        }
        let bits = match layout {
            Layout::Classic => Bits::Classic(zeroed_words(size.words())?.into_boxed_slice()),
            Layout::Blocked => Bits::Blocked(BlockArray::zeroed(size.words() / 8)?),
        };
        Ok(Link {
            bits,
            size,
            capacity,
            error_rate,
            items: 0,
        })
    }

    pub fn layout(&self) -> Layout {
        match self.bits {
            Bits::Classic(_) => Layout::Classic,
            Bits::Blocked(_) => Layout::Blocked,
        }
    }

    #[inline]
    pub fn contains(&self, hash: ItemHash) -> bool {
        match &self.bits {
            Bits::Classic(words) => hash
                .probes(self.size.bits, self.size.hashes)
                .all(|bit| words[(bit >> 6) as usize] & (1 << (bit & 63)) != 0),
            Bits::Blocked(blocks) => blocked::contains(blocks, hash, self.size.hashes),
        }
    }

    /// Whether prefetching pays: below this size the bits stay in the CPU's caches, and the
    /// second computation of the probe positions would cost more than it saves.
    #[inline]
    fn worth_prefetching(&self) -> bool {
        self.size.words() >= PREFETCH_MIN_WORDS
    }

    /// Starts loading the cache lines of every probe of the item.
    #[inline]
    pub fn prefetch(&self, hash: ItemHash) {
        if !self.worth_prefetching() {
            return;
        }
        match &self.bits {
            Bits::Classic(words) => {
                for bit in hash.probes(self.size.bits, self.size.hashes) {
                    prefetch_word(words, (bit >> 6) as usize);
                }
            }
            Bits::Blocked(blocks) => blocked::prefetch(blocks, hash),
        }
    }

    /// Starts loading the cache line of the item's first probe only: enough for a look-up that
    /// is likely to stop there, as it does in an older link of a chain. In a blocked link that
    /// is every probe.
    #[inline]
    pub fn prefetch_first(&self, hash: ItemHash) {
        if !self.worth_prefetching() {
            return;
        }
        match &self.bits {
            Bits::Classic(words) => {
                if let Some(bit) = hash.probes(self.size.bits, self.size.hashes).next() {
                    prefetch_word(words, (bit >> 6) as usize);
                }
            }
            Bits::Blocked(blocks) => blocked::prefetch(blocks, hash),
        }
    }

    /// Sets the item's bits; true when at least one of them was clear (the item is new here).
    #[inline]
    pub fn insert(&mut self, hash: ItemHash) -> bool {
        match &mut self.bits {
            Bits::Classic(words) => {
                let mut changed = 0;
                for bit in hash.probes(self.size.bits, self.size.hashes) {
                    let word = &mut words[(bit >> 6) as usize];
                    let mask = 1 << (bit & 63);
                    changed |= !*word & mask;
                    *word |= mask;
                }
                changed != 0
            }
            Bits::Blocked(blocks) => blocked::insert(blocks, hash, self.size.hashes),
        }
    }

    pub fn is_full(&self) -> bool {
        self.items >= self.capacity
    }

    pub fn count_insert(&mut self) {
        self.items += 1;
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn error_rate(&self) -> f64 {
        self.error_rate
    }

    pub fn items(&self) -> u64 {
        self.items
    }

    pub(super) fn set_items(&mut self, items: u64) {
        self.items = items;
    }

    pub fn hashes(&self) -> u32 {
        self.size.hashes
    }

    pub fn bits(&self) -> u64 {
        self.size.bits
    }

    pub fn bytes(&self) -> u64 {
        self.size.bytes()
    }

    /// The bytes the bit array takes from the allocator: `bytes`, and for a blocked link the
    /// padding that brings its first block to a cache line.
    pub fn allocated_bytes(&self) -> u64 {
        match &self.bits {
            Bits::Classic(words) => std::mem::size_of_val(&**words) as u64,
            Bits::Blocked(blocks) => blocks.allocated_bytes(),
        }
    }

    fn words(&self) -> &[u64] {
        match &self.bits {
            Bits::Classic(words) => words,
            Bits::Blocked(blocks) => blocks.words(),
        }
    }

    /// Bits set, counted on request (a pass over the whole array).
    pub fn set_bits(&self) -> u64 {
        self.words().iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// The chance that an item never added passes every probe, estimated from the bits set (a
    /// pass over the whole array): the fill to the power of the probes, block by block for a
    /// blocked link, whose blocks fill unevenly.
    pub fn estimated_pass_rate(&self) -> f64 {
        let hashes = self.size.hashes as i32;
        match &self.bits {
            Bits::Classic(_) => (self.set_bits() as f64 / self.size.bits as f64).powi(hashes),
            Bits::Blocked(blocks) => {
                let per_block: f64 = blocks
                    .set_bits_per_block()
                    .map(|set| (f64::from(set) / BLOCK_BITS as f64).powi(hashes))
                    .sum();
                per_block / blocks.len().max(1) as f64
            }
        }
    }

    /// Appends `len` bytes of the bit array, starting at byte `from`, in little-endian word order.
    pub fn read_bytes(&self, from: u64, len: u64, out: &mut Vec<u8>) {
        read_le_bytes(self.words(), from, len, out);
    }

    /// Overwrites the bytes at `from` with `data`; the caller has checked the range.
    pub fn write_bytes(&mut self, from: u64, data: &[u8]) {
        let words = match &mut self.bits {
            Bits::Classic(words) => words,
            Bits::Blocked(blocks) => blocks.words_mut(),
        };
        write_le_bytes(words, from, data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_view_round_trips_at_any_alignment() {
        for layout in [Layout::Classic, Layout::Blocked] {
            byte_view_round_trips(layout);
        }
    }

    fn byte_view_round_trips(layout: Layout) {
        let mut link = Link::new(layout, 100, 0.01, u64::MAX).unwrap();
        for i in 0..60u32 {
            link.insert(hash_item(&i.to_le_bytes()));
        }
        let mut all = Vec::new();
        link.read_bytes(0, link.bytes(), &mut all);
        let mut copy = Link::new(layout, 100, 0.01, u64::MAX).unwrap();
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
        assert_eq!(std::mem::size_of::<Link>(), 64);
    }

    #[test]
    fn refuses_before_allocating() {
        let err = Link::new(Layout::Classic, 1 << 30, 1e-300, 1 << 30).unwrap_err();
        assert!(matches!(err, FilterError::TooLarge { limit, .. } if limit == 1 << 30));
    }
}
