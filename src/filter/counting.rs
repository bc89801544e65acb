//! Counting Bloom filters: every bit of a plain link becomes a small counter, so that an item can
//! be deleted again. Sizing, hashing and probe positions are exactly those of the plain filter
//! (`LinkSize`, `ItemHash::probes`): a counting link has one counter where the plain link of the
//! same capacity and error rate has one bit, so 4-bit counters take four times the memory.
//!
//! Counters are packed into 64-bit words, 16 four-bit or 8 eight-bit counters per word, counter
//! `i` of a word in bits `i·w .. i·w + w`. Counters saturate: one that reaches its maximum (15 or
//! 255) never changes again, neither up nor down.
//!
//! # Which link an add or a delete acts on
//!
//! A chain grows like the plain one (a full newest link gets a successor with `expansion` times the
//! capacity and half the error rate). An item is *present* in a link when all its counters there
//! are non-zero. The rule, for adds and deletes alike, is: act on the **oldest** link where the
//! item is present; an add of an item present nowhere goes to the newest link, growing the chain
//! first if that link is full. A link is full when the items it holds (adds minus deletes, counted
//! with multiplicity, so never fewer than the distinct items behind its counters) reach capacity.
//!
//! # Why no false negative can arise
//!
//! Claim: an item `x` added `n` times and deleted fewer than `n` times is present, provided no item
//! is ever deleted more times than it was added (deleting an item that was never added is the one
//! way to break this, and the reason `CBF.DEL` is documented as unsafe for such items).
//!
//! 1. *Only the newest link gains non-zero counters.* An add to an older link happens only when
//!    the item is present there, so it only increments counters that are already non-zero; a
//!    delete only decrements. So once a link has a successor, the set of its non-zero counters
//!    can only shrink, and an item absent from it stays absent.
//! 2. *Counter invariant.* Let `T(c)` be the number of times counter `c` was incremented for item
//!    copies still held in its link (a probe repeated within one item counts each time). Every
//!    counter is either saturated (at its maximum, so non-zero) or equal to `T(c)`. Increments
//!    keep this. A delete of `x` that acts on a link holding a copy of `x` lowers `T(c)` by exactly
//!    what it subtracts from each non-saturated counter, so it keeps it too.
//! 3. *A delete acts on the link that holds the item.* Say `x` is held in link `m` but the oldest
//!    link where it is present is `j ≠ m`. Because held copies are present (by 2), `j < m`. When
//!    the copy of `x` in `m` was added, `x` was absent from every link older than `m` (that is
//!    why the add went to `m`), `j` included, and `j` was not the newest link; by 1 it stays
//!    absent from `j`, a contradiction. So every delete of a held item acts where it is held, the
//!    invariant of 2 holds throughout, and every counter of a held copy is non-zero: no false
//!    negative, whatever else is added or deleted, however counters are shared or saturated.
//!
//! The same argument shows that all copies of an item sit in one link while it is held, so the
//! smallest counter in the oldest link where the item is present bounds its count from above
//! (unless that counter saturated, in which case the count is at least the maximum).
//!
//! Deleting from the *newest* link where the item is present would not be safe: an item held in an
//! old link can look present, by a false positive, in a newer link, and decrementing there would
//! take counts away from the items that really live there.

use super::arrays::{
    prefetch_word, read_le_bytes, write_le_bytes, zeroed_words, PREFETCH_MIN_WORDS,
};
use super::bloom::{hash_item, HashedChain, ItemHash};
use super::chain::MAX_ERROR_RATE;
use super::sizing::LinkSize;
use super::FilterError;

/// How wide each counter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterBits {
    Four,
    Eight,
}

impl CounterBits {
    pub fn from_bits(bits: u64) -> Option<CounterBits> {
        match bits {
            4 => Some(CounterBits::Four),
            8 => Some(CounterBits::Eight),
            _ => None,
        }
    }

    pub fn bits(self) -> u32 {
        match self {
            CounterBits::Four => 4,
            CounterBits::Eight => 8,
        }
    }

    /// The saturated value.
    pub fn max(self) -> u8 {
        match self {
            CounterBits::Four => 15,
            CounterBits::Eight => 255,
        }
    }

    fn log2(self) -> u32 {
        self.bits().trailing_zeros()
    }

    fn mask(self) -> u64 {
        u64::from(self.max())
    }

    /// Bytes taken by `counters` counters; counts are whole 64-counter multiples, so it is exact.
    pub(super) fn bytes_for(self, counters: u64) -> Option<u64> {
        counters
            .checked_mul(u64::from(self.bits()))
            .map(|bits| bits / 8)
    }
}

/// One link of a counting filter: a packed array of saturating counters.
#[derive(Debug, Clone)]
pub struct CountingLink {
    words: Vec<u64>,
    size: LinkSize,
    width: CounterBits,
    capacity: u64,
    error_rate: f64,
    items: u64,
    saturated: u64,
}

impl CountingLink {
    /// Allocates a zeroed link, refusing (before allocating) anything over `limit_bytes`.
    pub(super) fn with_size(
        size: LinkSize,
        width: CounterBits,
        capacity: u64,
        error_rate: f64,
        limit_bytes: u64,
    ) -> Result<CountingLink, FilterError> {
        let bytes = width.bytes_for(size.bits).ok_or(FilterError::CannotScale)?;
        if bytes > limit_bytes {
            return Err(FilterError::TooLarge {
                bytes,
                limit: limit_bytes,
            });
        }
        let word_count = usize::try_from(bytes / 8).map_err(|_| FilterError::OutOfMemory)?;
        Ok(CountingLink {
            words: zeroed_words(word_count)?,
            size,
            width,
            capacity,
            error_rate,
            items: 0,
            saturated: 0,
        })
    }

    /// The word holding `counter` and the counter's lowest bit within it.
    #[inline]
    fn slot(&self, counter: u64) -> (usize, u32) {
        let bit = counter << self.width.log2();
        ((bit >> 6) as usize, (bit & 63) as u32)
    }

    #[inline]
    fn get(&self, counter: u64) -> u8 {
        let (word, shift) = self.slot(counter);
        ((self.words[word] >> shift) & self.width.mask()) as u8
    }

    #[inline]
    fn set(&mut self, counter: u64, value: u8) {
        let (word, shift) = self.slot(counter);
        let mask = self.width.mask() << shift;
        self.words[word] = (self.words[word] & !mask) | (u64::from(value) << shift);
    }

    #[inline]
    fn probes(&self, hash: ItemHash) -> impl Iterator<Item = u64> {
        hash.probes(self.size.bits, self.size.hashes)
    }

    #[inline]
    pub fn contains(&self, hash: ItemHash) -> bool {
        self.probes(hash).all(|counter| self.get(counter) != 0)
    }

    /// The item's smallest counter here.
    pub fn min_counter(&self, hash: ItemHash) -> u8 {
        self.probes(hash)
            .map(|counter| self.get(counter))
            .min()
            .unwrap_or(0)
    }

    /// Starts loading the cache lines of every counter of the item, unless the counters are few
    /// enough to stay in the caches.
    #[inline]
    fn prefetch(&self, hash: ItemHash) {
        if self.words.len() < PREFETCH_MIN_WORDS {
            return;
        }
        for counter in self.probes(hash) {
            prefetch_word(&self.words, self.slot(counter).0);
        }
    }

    /// Increments the item's counters; true when one of them was zero before, that is when the
    /// item was not present. A counter probed twice is zero at its first visit if at all, so the
    /// answer is the one a look-up before the increments would have given.
    fn increment(&mut self, hash: ItemHash) -> bool {
        let max = self.width.max();
        let mut was_absent = false;
        for counter in self.probes(hash) {
            let value = self.get(counter);
            was_absent |= value == 0;
            if value < max {
                self.set(counter, value + 1);
                if value + 1 == max {
                    self.saturated += 1;
                }
            }
        }
        was_absent
    }

    /// Saturated counters stay put: their true count is unknown, and lowering one could take it
    /// below the count of the items still behind it. A zero is left alone too: it can only be met
    /// when deleting an item that was never added, and must not wrap around.
    fn decrement(&mut self, hash: ItemHash) {
        let max = self.width.max();
        for counter in self.probes(hash) {
            let value = self.get(counter);
            if value != 0 && value != max {
                self.set(counter, value - 1);
            }
        }
    }

    pub fn is_full(&self) -> bool {
        self.items >= self.capacity
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn error_rate(&self) -> f64 {
        self.error_rate
    }

    /// Items held: adds minus deletes, with multiplicity.
    pub fn items(&self) -> u64 {
        self.items
    }

    pub(super) fn set_items(&mut self, items: u64) {
        self.items = items;
    }

    pub fn hashes(&self) -> u32 {
        self.size.hashes
    }

    /// How many counters: the bit count of the plain link of the same shape.
    pub fn counters(&self) -> u64 {
        self.size.bits
    }

    pub fn saturated(&self) -> u64 {
        self.saturated
    }

    /// Counters above zero, counted on request (a pass over the whole array): each counter's
    /// bits are folded onto its lowest bit, and those lowest bits are counted a word at a time.
    pub fn nonzero_counters(&self) -> u64 {
        let width = self.width.bits();
        let lowest_bits = u64::MAX / ((1 << width) - 1);
        self.words
            .iter()
            .map(|&word| {
                let mut folded = word;
                let mut shift = 1;
                while shift < width {
                    folded |= folded >> shift;
                    shift *= 2;
                }
                u64::from((folded & lowest_bits).count_ones())
            })
            .sum()
    }

    /// Bytes of packed counters.
    pub fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    /// Appends `len` bytes of the counter array from byte `from`, words little-endian.
    pub fn read_bytes(&self, from: u64, len: u64, out: &mut Vec<u8>) {
        read_le_bytes(&self.words, from, len, out);
    }

    /// Overwrites the bytes at `from` with `data` (the caller has checked the range), keeping the
    /// saturated-counter tally true to what the bytes now hold.
    pub fn write_bytes(&mut self, from: u64, data: &[u8]) {
        let before = self.saturated_in(from, data.len() as u64);
        write_le_bytes(&mut self.words, from, data);
        let after = self.saturated_in(from, data.len() as u64);
        self.saturated = self.saturated - before + after;
    }

    /// Saturated counters among those stored in `len` bytes from byte `from`.
    fn saturated_in(&self, from: u64, len: u64) -> u64 {
        let per_byte_log2 = 3 - self.width.log2();
        let first = from << per_byte_log2;
        let end = (from + len) << per_byte_log2;
        let max = self.width.max();
        (first..end).filter(|&c| self.get(c) == max).count() as u64
    }
}

/// How a new counting filter is shaped. `expansion` 0 means non-scaling.
#[derive(Debug, Clone, Copy)]
pub struct CountingOptions {
    pub error_rate: f64,
    pub capacity: u64,
    pub expansion: u32,
    pub counter_bits: CounterBits,
}

#[derive(Debug, Clone)]
pub struct CountingChain {
    pub(super) links: Vec<CountingLink>,
    pub(super) items: u64,
    pub(super) expansion: u32,
    pub(super) counter_bits: CounterBits,
}

impl CountingChain {
    /// Builds the first link, shaped exactly as the plain chain's first link would be.
    pub fn new(options: CountingOptions, limit_bytes: u64) -> Result<CountingChain, FilterError> {
        let error_rate = options.error_rate.min(MAX_ERROR_RATE);
        let link_error = if options.expansion == 0 {
            error_rate
        } else {
            error_rate * 0.5
        };
        let size =
            LinkSize::for_capacity(options.capacity, link_error).ok_or(FilterError::CannotScale)?;
        let link = CountingLink::with_size(
            size,
            options.counter_bits,
            options.capacity,
            link_error,
            limit_bytes,
        )?;
        Ok(CountingChain {
            links: vec![link],
            items: 0,
            expansion: options.expansion,
            counter_bits: options.counter_bits,
        })
    }

    pub fn is_scaling(&self) -> bool {
        self.expansion != 0
    }

    /// Adds one copy of the item; Ok(true) when it was not present before.
    pub fn add(&mut self, item: &[u8], limit_bytes: u64) -> Result<bool, FilterError> {
        self.add_hashed(hash_item(item), limit_bytes)
    }

    fn count_add(&mut self, index: usize) {
        let link = &mut self.links[index];
        // Saturating: a loaded dump may carry any count, and must not make an add panic.
        link.items = link.items.saturating_add(1);
        self.items = self.items.saturating_add(1);
    }

    /// Removes one copy of the item if it is present; false (and nothing changed) if it is not.
    pub fn delete(&mut self, item: &[u8]) -> bool {
        self.delete_hashed(hash_item(item))
    }

    pub fn delete_hashed(&mut self, hash: ItemHash) -> bool {
        let Some(index) = self.oldest_holding(hash) else {
            return false;
        };
        let link = &mut self.links[index];
        link.decrement(hash);
        link.items = link.items.saturating_sub(1);
        self.items = self.items.saturating_sub(1);
        true
    }

    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_hashed(hash_item(item))
    }

    /// How many copies of the item are held, at most: its smallest counter in the one link that
    /// holds it. A reply equal to the counter maximum means "at least this many".
    pub fn count(&self, item: &[u8]) -> u64 {
        let hash = hash_item(item);
        self.oldest_holding(hash)
            .map_or(0, |index| u64::from(self.links[index].min_counter(hash)))
    }

    fn oldest_holding(&self, hash: ItemHash) -> Option<usize> {
        self.links.iter().position(|link| link.contains(hash))
    }

    fn newest(&self) -> &CountingLink {
        self.links.last().expect("a chain always has a link")
    }

    fn grow(&mut self, limit_bytes: u64) -> Result<(), FilterError> {
        let newest = self.newest();
        let capacity = newest
            .capacity()
            .checked_mul(u64::from(self.expansion))
            .ok_or(FilterError::CannotScale)?;
        let error_rate = newest.error_rate() * 0.5;
        let size = LinkSize::for_capacity(capacity, error_rate).ok_or(FilterError::CannotScale)?;
        let bytes = self
            .counter_bits
            .bytes_for(size.bits)
            .ok_or(FilterError::CannotScale)?;
        let total = self.payload_bytes().saturating_add(bytes);
        if total > limit_bytes {
            return Err(FilterError::TooLarge {
                bytes: total,
                limit: limit_bytes,
            });
        }
        let link =
            CountingLink::with_size(size, self.counter_bits, capacity, error_rate, u64::MAX)?;
        self.links
            .try_reserve_exact(1)
            .map_err(|_| FilterError::OutOfMemory)?;
        self.links.push(link);
        Ok(())
    }

    pub fn capacity(&self) -> u64 {
        self.links.iter().map(CountingLink::capacity).sum()
    }

    /// Items held: adds minus successful deletes.
    pub fn items(&self) -> u64 {
        self.items
    }

    pub fn expansion(&self) -> Option<u32> {
        self.is_scaling().then_some(self.expansion)
    }

    pub fn counter_bits(&self) -> CounterBits {
        self.counter_bits
    }

    /// The error rate the filter was created with (after the cap), recovered from its first link.
    pub fn error_rate(&self) -> f64 {
        let first = self.links[0].error_rate();
        if self.is_scaling() {
            first * 2.0
        } else {
            first
        }
    }

    pub fn saturated_counters(&self) -> u64 {
        self.links.iter().map(CountingLink::saturated).sum()
    }

    pub fn links(&self) -> &[CountingLink] {
        &self.links
    }

    /// Bytes of counter arrays alone.
    pub fn payload_bytes(&self) -> u64 {
        self.links.iter().map(CountingLink::bytes).sum()
    }

    /// What the filter really occupies: its counter arrays plus the structures that hold them.
    pub fn memory_bytes(&self) -> u64 {
        let fixed = std::mem::size_of::<CountingChain>() as u64;
        let per_link = std::mem::size_of::<CountingLink>() as u64;
        fixed + self.links.capacity() as u64 * per_link + self.payload_bytes()
    }
}

impl HashedChain for CountingChain {
    /// Follows the rule in the module documentation: the oldest link where the item is present,
    /// else the newest, grown first if full.
    ///
    /// When no older link holds the item and the newest has room, the add is one pass over the
    /// counters: the increments there tell whether the item was present.
    fn add_hashed(&mut self, hash: ItemHash, limit_bytes: u64) -> Result<bool, FilterError> {
        let newest = self.links.len() - 1;
        let older_holding = self.links[..newest]
            .iter()
            .position(|link| link.contains(hash));
        let (index, was_new) = match older_holding {
            Some(index) => (index, false),
            None if !self.links[newest].is_full() => {
                let was_new = self.links[newest].increment(hash);
                self.count_add(newest);
                return Ok(was_new);
            }
            None if self.links[newest].contains(hash) => (newest, false),
            None => {
                if !self.is_scaling() {
                    return Err(FilterError::Full);
                }
                self.grow(limit_bytes)?;
                (self.links.len() - 1, true)
            }
        };
        self.links[index].increment(hash);
        self.count_add(index);
        Ok(was_new)
    }

    /// Starts loading what an add or a look-up of the item reads: every counter in the newest
    /// link, the largest, and the first in each older one, where an absent item is usually ruled
    /// out at once.
    fn prefetch(&self, hash: ItemHash) {
        let (newest, older) = self.links.split_last().expect("a chain always has a link");
        for link in older
            .iter()
            .filter(|link| link.words.len() >= PREFETCH_MIN_WORDS)
        {
            if let Some(counter) = link.probes(hash).next() {
                prefetch_word(&link.words, link.slot(counter).0);
            }
        }
        newest.prefetch(hash);
    }

    /// Newest link first: it is the largest and the likeliest to hold a recent item.
    fn contains_hashed(&self, hash: ItemHash) -> bool {
        self.links.iter().rev().any(|link| link.contains(hash))
    }
}

#[cfg(test)]
mod tests {
    use super::super::bloom::Link;
    use super::super::chain::{BloomChain, ChainOptions};
    use super::super::sizing::Layout;
    use super::*;

    fn options(
        error_rate: f64,
        capacity: u64,
        expansion: u32,
        counter_bits: CounterBits,
    ) -> CountingOptions {
        CountingOptions {
            error_rate,
            capacity,
            expansion,
            counter_bits,
        }
    }

    fn chain(capacity: u64, expansion: u32, counter_bits: CounterBits) -> CountingChain {
        CountingChain::new(options(0.01, capacity, expansion, counter_bits), u64::MAX).unwrap()
    }

    #[test]
    fn counters_are_packed_and_independent() {
        for width in [CounterBits::Four, CounterBits::Eight] {
            let size = LinkSize::for_capacity(100, 0.01).unwrap();
            let mut link = CountingLink::with_size(size, width, 100, 0.01, u64::MAX).unwrap();
            let max = width.max();
            for counter in 0..link.counters() {
                link.set(counter, (counter % (u64::from(max) + 1)) as u8);
            }
            for counter in 0..link.counters() {
                assert_eq!(
                    link.get(counter),
                    (counter % (u64::from(max) + 1)) as u8,
                    "{width:?} counter {counter}"
                );
            }
            assert_eq!(link.bytes() * 8, link.counters() * u64::from(width.bits()));
        }
    }

    #[test]
    fn four_bit_counters_take_four_times_the_plain_bits() {
        for (capacity, error) in [(100, 0.01), (1000, 0.001), (1, 0.25), (12345, 1e-6)] {
            let plain = Link::new(Layout::Classic, capacity, error, u64::MAX).unwrap();
            let size = LinkSize::for_capacity(capacity, error).unwrap();
            for (width, factor) in [(CounterBits::Four, 4), (CounterBits::Eight, 8)] {
                let link = CountingLink::with_size(size, width, capacity, error, u64::MAX).unwrap();
                assert_eq!(link.bytes(), plain.bytes() * factor);
                assert_eq!(
                    (link.counters(), link.hashes()),
                    (plain.bits(), plain.hashes())
                );
            }
        }
    }

    #[test]
    fn multiset_add_and_delete() {
        let mut chain = chain(100, 2, CounterBits::Four);
        assert_eq!(chain.add(b"a", u64::MAX), Ok(true));
        assert_eq!(chain.add(b"a", u64::MAX), Ok(false));
        assert_eq!(chain.count(b"a"), 2);
        assert_eq!(chain.items(), 2);
        assert!(chain.delete(b"a"));
        assert!(chain.contains(b"a"));
        assert_eq!(chain.count(b"a"), 1);
        assert!(chain.delete(b"a"));
        assert!(!chain.contains(b"a"));
        assert!(!chain.delete(b"a"));
        assert_eq!((chain.items(), chain.count(b"a")), (0, 0));
        assert!(chain.links[0].words.iter().all(|&w| w == 0));
    }

    #[test]
    fn saturated_counters_are_sticky() {
        let mut chain = chain(100, 2, CounterBits::Four);
        for _ in 0..20 {
            chain.add(b"hot", u64::MAX).unwrap();
        }
        let hashes = chain.links[0].hashes() as u64;
        assert_eq!(chain.count(b"hot"), 15);
        assert!((1..=hashes).contains(&chain.saturated_counters()));
        let saturated = chain.saturated_counters();
        for _ in 0..20 {
            assert!(chain.delete(b"hot"));
        }
        // Every counter of "hot" saturated, so it stays present: accuracy lost, never an item.
        assert!(chain.contains(b"hot"));
        assert_eq!(chain.saturated_counters(), saturated);

        let mut wide = self::chain(100, 2, CounterBits::Eight);
        for _ in 0..20 {
            wide.add(b"hot", u64::MAX).unwrap();
        }
        assert_eq!((wide.count(b"hot"), wide.saturated_counters()), (20, 0));
    }

    #[test]
    fn saturation_spares_the_items_sharing_a_counter() {
        // "hot" saturates its counters; every other item shares some of them. Deleting "hot"
        // more times than any counter can hold must leave every other item present.
        let mut chain = chain(10, 0, CounterBits::Four);
        let others: Vec<String> = (0..9).map(|i| format!("other{i}")).collect();
        for other in &others {
            chain.add(other.as_bytes(), u64::MAX).unwrap();
        }
        for _ in 0..40 {
            chain.add(b"hot", u64::MAX).unwrap();
        }
        for _ in 0..40 {
            assert!(chain.delete(b"hot"));
        }
        for other in &others {
            assert!(chain.contains(other.as_bytes()), "{other}");
        }
    }

    #[test]
    fn scales_like_the_plain_chain() {
        let mut counting = chain(100, 2, CounterBits::Four);
        let mut plain = BloomChain::new(
            ChainOptions {
                error_rate: 0.01,
                capacity: 100,
                expansion: 2,
                layout: Layout::Classic,
            },
            u64::MAX,
        )
        .unwrap();
        for i in 0..1000 {
            let item = format!("item{i}");
            counting.add(item.as_bytes(), u64::MAX).unwrap();
            plain.add(item.as_bytes(), u64::MAX).unwrap();
        }
        let shape = |c: u64, e: f64, h: u32| (c, e, h);
        let counting_shape: Vec<_> = counting
            .links()
            .iter()
            .map(|l| shape(l.capacity(), l.error_rate(), l.hashes()))
            .collect();
        let plain_shape: Vec<_> = plain
            .links()
            .iter()
            .map(|l| shape(l.capacity(), l.error_rate(), l.hashes()))
            .collect();
        assert_eq!(counting_shape, plain_shape);
        assert_eq!(counting.items(), 1000);
        assert_eq!(counting.capacity(), 1500);
        assert_eq!(counting.error_rate(), 0.01);
        assert_eq!(counting.payload_bytes(), plain.payload_bytes() * 4);
    }

    #[test]
    fn non_scaling_fills_up_and_deletes_make_room() {
        let mut chain = chain(10, 0, CounterBits::Four);
        for i in 0..10 {
            assert_eq!(chain.add(format!("x{i}").as_bytes(), u64::MAX), Ok(true));
        }
        assert_eq!(chain.add(b"another", u64::MAX), Err(FilterError::Full));
        assert_eq!(chain.add(b"x0", u64::MAX), Ok(false));
        assert!(chain.delete(b"x0"));
        assert!(chain.delete(b"x1"));
        assert_eq!(chain.add(b"another", u64::MAX), Ok(true));
        assert_eq!(chain.links().len(), 1);
        assert_eq!(chain.expansion(), None);
    }

    #[test]
    fn growth_beyond_the_limit_is_refused_before_allocating() {
        let limit = 1 << 20;
        let err = CountingChain::new(options(1e-300, 1 << 30, 2, CounterBits::Four), limit);
        assert!(matches!(err, Err(FilterError::TooLarge { limit: l, .. }) if l == limit));
        let mut chain =
            CountingChain::new(options(0.01, 100, 32768, CounterBits::Eight), limit).unwrap();
        let mut result = Ok(true);
        for i in 0..200 {
            result = chain.add(format!("{i}").as_bytes(), limit);
            if result.is_err() {
                break;
            }
        }
        assert!(matches!(result, Err(FilterError::TooLarge { .. })));
        assert_eq!(chain.links().len(), 1);
    }

    /// The case that rules out "delete from the newest link where the item is present": an item
    /// held in an old link that looks present, by a false positive, in a newer, fuller one.
    #[test]
    fn a_delete_never_takes_counts_from_a_newer_link() {
        let mut found = 0;
        for seed in 0..200u32 {
            let mut chain =
                CountingChain::new(options(0.25, 1, 64, CounterBits::Four), u64::MAX).unwrap();
            let old = format!("old{seed}");
            chain.add(old.as_bytes(), u64::MAX).unwrap();
            let newer: Vec<String> = (0..64).map(|i| format!("newer{seed}-{i}")).collect();
            for item in &newer {
                chain.add(item.as_bytes(), u64::MAX).unwrap();
            }
            if !chain.links[1].contains(hash_item(old.as_bytes())) {
                continue;
            }
            found += 1;
            let (old_link, new_link) = (chain.links[0].items(), chain.links[1].items());
            assert!(chain.delete(old.as_bytes()));
            assert_eq!(chain.links[0].items(), old_link - 1);
            assert_eq!(chain.links[1].items(), new_link);
            for item in &newer {
                assert!(chain.contains(item.as_bytes()), "seed {seed}: {item}");
            }
        }
        assert!(found > 0, "no item was a false positive in the newer link");
    }

    /// Requested rate × 1.1 (the reference sizing formulas land slightly above the requested rate
    /// at exactly full capacity: 0.01006 for 0.01, 0.00101 for 0.001) plus three standard
    /// deviations of the binomial count of false positives among `probes` absent items.
    fn fpr_bound(requested: f64, probes: u64) -> f64 {
        let sigma = (requested * (1.0 - requested) / probes as f64).sqrt();
        requested * 1.1 + 3.0 * sigma
    }

    fn false_positive_rate(chain: &CountingChain, probes: u64) -> f64 {
        let hits = (0..probes)
            .filter(|i| chain.contains(format!("absent-{i}").as_bytes()))
            .count();
        hits as f64 / probes as f64
    }

    #[test]
    fn false_positive_rate_at_capacity() {
        const CAPACITY: u64 = 50_000;
        const PROBES: u64 = 400_000;
        for error in [0.01, 0.001] {
            let mut chain =
                CountingChain::new(options(error, CAPACITY, 0, CounterBits::Four), u64::MAX)
                    .unwrap();
            for i in 0..CAPACITY {
                chain.add(format!("item-{i}").as_bytes(), u64::MAX).unwrap();
            }
            let fresh = false_positive_rate(&chain, PROBES);

            // Churn: delete half, add as many new ones, back at capacity.
            for i in (0..CAPACITY).step_by(2) {
                assert!(chain.delete(format!("item-{i}").as_bytes()));
            }
            for i in 0..CAPACITY / 2 {
                chain
                    .add(format!("later-{i}").as_bytes(), u64::MAX)
                    .unwrap();
            }
            assert_eq!(chain.items(), CAPACITY);
            let churned = false_positive_rate(&chain, PROBES);
            let bound = fpr_bound(error, PROBES);
            eprintln!("error {error}: fresh {fresh}, after churn {churned}, bound {bound}");
            assert!(fresh <= bound, "error {error}: fresh {fresh} > {bound}");
            assert!(
                churned <= bound,
                "error {error}: churned {churned} > {bound}"
            );
            for i in (1..CAPACITY).step_by(2) {
                assert!(chain.contains(format!("item-{i}").as_bytes()));
            }
        }
    }

    #[test]
    fn scaling_false_positive_rate_stays_under_the_requested_rate() {
        const PROBES: u64 = 400_000;
        let error = 0.01;
        let mut chain =
            CountingChain::new(options(error, 1000, 2, CounterBits::Four), u64::MAX).unwrap();
        // 15 000 items fill links of 1000, 2000, 4000 and 8000 exactly.
        for i in 0..15_000 {
            chain.add(format!("item-{i}").as_bytes(), u64::MAX).unwrap();
        }
        for i in (0..15_000).step_by(3) {
            chain.delete(format!("item-{i}").as_bytes());
        }
        assert_eq!(chain.links().len(), 4);
        let measured = false_positive_rate(&chain, PROBES);
        let bound = fpr_bound(error, PROBES);
        eprintln!("scaling, error {error}: {measured}, bound {bound}");
        assert!(measured <= bound, "{measured} > {bound}");
    }
}
