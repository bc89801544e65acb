//! The counting filter's link array: every bit of a plain link becomes a small counter, so that an
//! item can be deleted again. Sizing, hashing and probe positions are exactly those of the classic
//! plain link (`LinkSize::for_capacity`, `ItemHash::probes`): a counting link has one counter
//! where the plain link of the same capacity and error rate has one bit, so 4-bit counters take
//! four times the memory.
//!
//! Counters are packed into 64-bit words, 16 four-bit or 8 eight-bit counters per word, counter
//! `i` of a word in bits `i·w .. i·w + w`. Counters saturate: one that reaches its maximum (15 or
//! 255) never changes again, neither up nor down.

use super::arrays::{fill_le_bytes, prefetch_at, read_le_bytes, write_le_bytes, zeroed_words};
use super::item_hash::ItemHash;
use super::link::{Link, LinkArray};
use super::sizing::LinkSize;
use super::FilterError;

/// One link of a `CountingChain`.
pub(super) type CountingLink = Link<Counters>;

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
    fn bytes_for(self, counters: u64) -> Option<u64> {
        counters
            .checked_mul(u64::from(self.bits()))
            .map(|bits| bits / 8)
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

/// A packed array of saturating counters, with a tally of the saturated ones.
#[derive(Debug, Clone)]
pub struct Counters {
    words: Vec<u64>,
    width: CounterBits,
    saturated: u64,
}

impl Counters {
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

    /// Saturated counters stay put: their true count is unknown, and lowering one could take it
    /// below the count of the items still behind it. A zero is left alone too: it can only be met
    /// when deleting an item that was never added, and must not wrap around.
    fn decrement(&mut self, size: LinkSize, hash: ItemHash) {
        let max = self.width.max();
        for counter in hash.probes(size.bits, size.hashes) {
            let value = self.get(counter);
            if value != 0 && value != max {
                self.set(counter, value - 1);
            }
        }
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

impl LinkArray for Counters {
    type Kind = CounterBits;
    type Options = CountingOptions;
    const COUNTS_COPIES: bool = true;

    fn unpack(options: CountingOptions) -> (CounterBits, u64, f64, u32) {
        let CountingOptions {
            error_rate,
            capacity,
            expansion,
            counter_bits,
        } = options;
        (counter_bits, capacity, error_rate, expansion)
    }

    fn size_for(_: CounterBits, capacity: u64, error_rate: f64) -> Option<LinkSize> {
        LinkSize::for_capacity(capacity, error_rate)
    }

    fn bytes_for(width: CounterBits, size: LinkSize) -> Option<u64> {
        width.bytes_for(size.bits)
    }

    fn zeroed(width: CounterBits, size: LinkSize) -> Result<Counters, FilterError> {
        let bytes = width.bytes_for(size.bits).ok_or(FilterError::CannotScale)?;
        let word_count = usize::try_from(bytes / 8).map_err(|_| FilterError::OutOfMemory)?;
        Ok(Counters {
            words: zeroed_words(word_count)?,
            width,
            saturated: 0,
        })
    }

    fn kind(&self) -> CounterBits {
        self.width
    }

    #[inline]
    fn contains(&self, size: LinkSize, hash: ItemHash) -> bool {
        hash.probes(size.bits, size.hashes)
            .all(|counter| self.get(counter) != 0)
    }

    /// Increments the item's counters. A counter probed twice is zero at its first visit if at
    /// all, so the answer is the one a look-up before the increments would have given.
    fn insert(&mut self, size: LinkSize, hash: ItemHash) -> bool {
        let max = self.width.max();
        let mut was_absent = false;
        for counter in hash.probes(size.bits, size.hashes) {
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

    #[inline]
    fn prefetch(&self, size: LinkSize, hash: ItemHash) {
        for counter in hash.probes(size.bits, size.hashes) {
            prefetch_at(&self.words, self.slot(counter).0);
        }
    }

    #[inline]
    fn prefetch_first(&self, size: LinkSize, hash: ItemHash) {
        if let Some(counter) = hash.probes(size.bits, size.hashes).next() {
            prefetch_at(&self.words, self.slot(counter).0);
        }
    }

    /// Counters above zero: each counter's bits are folded onto its lowest bit, and those lowest
    /// bits are counted a word at a time.
    fn used_slots(&self) -> u64 {
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

    /// The fill of counters above zero to the power of the probes.
    fn estimated_pass_rate(&self, size: LinkSize, used_slots: u64) -> f64 {
        let fill = used_slots as f64 / size.bits.max(1) as f64;
        fill.powi(size.hashes as i32)
    }

    fn payload_words(&self) -> usize {
        self.words.len()
    }

    fn allocated_bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    fn read_bytes(&self, from: u64, len: u64, out: &mut Vec<u8>) {
        read_le_bytes(&self.words, from, len, out);
    }

    /// Keeps the saturated-counter tally true to what the bytes now hold.
    fn write_bytes(&mut self, from: u64, data: &[u8]) {
        let before = self.saturated_in(from, data.len() as u64);
        write_le_bytes(&mut self.words, from, data);
        let after = self.saturated_in(from, data.len() as u64);
        self.saturated = self.saturated - before + after;
    }

    fn fill_bytes<E>(
        &mut self,
        fill: &mut impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let filled = fill_le_bytes(&mut self.words, fill);
        self.saturated = self.saturated_in(0, self.words.len() as u64 * 8);
        filled
    }

    /// Counter by counter, each sum stopping at the maximum: a counter saturated in either
    /// filter stays saturated, as it would had every add gone to one filter.
    fn combine(width: CounterBits, into: &mut [u8], from: &[u8]) {
        let pairs = into.iter_mut().zip(from);
        match width {
            CounterBits::Eight => {
                pairs.for_each(|(byte, other)| *byte = byte.saturating_add(*other))
            }
            CounterBits::Four => pairs.for_each(|(byte, other)| {
                let low = ((*byte & 15) + (other & 15)).min(15);
                let high = ((*byte >> 4) + (other >> 4)).min(15);
                *byte = low | high << 4;
            }),
        }
    }

    fn kind_fields(width: CounterBits) -> Vec<(&'static str, String)> {
        vec![("counter bits", width.bits().to_string())]
    }
}

impl CountingLink {
    pub(crate) fn saturated(&self) -> u64 {
        self.array.saturated
    }

    /// The item's smallest counter here.
    pub(crate) fn min_counter(&self, hash: ItemHash) -> u8 {
        let size = self.size();
        hash.probes(size.bits, size.hashes)
            .map(|counter| self.array.get(counter))
            .min()
            .unwrap_or(0)
    }

    /// Takes one copy of the item away; see `Counters::decrement` for what stays.
    pub(crate) fn remove(&mut self, hash: ItemHash) {
        let size = self.size();
        self.array.decrement(size, hash);
        self.set_items(self.items().saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::super::bloom::{Bits, BitsKind};
    use super::super::item_hash::HashScheme;
    use super::super::sizing::Layout;
    use super::*;

    #[test]
    fn counters_are_packed_and_independent() {
        for width in [CounterBits::Four, CounterBits::Eight] {
            let size = LinkSize::for_capacity(100, 0.01).unwrap();
            let mut counters = Counters::zeroed(width, size).unwrap();
            let max = u64::from(width.max());
            for counter in 0..size.bits {
                counters.set(counter, (counter % (max + 1)) as u8);
            }
            for counter in 0..size.bits {
                assert_eq!(
                    counters.get(counter),
                    (counter % (max + 1)) as u8,
                    "{width:?} counter {counter}"
                );
            }
            assert_eq!(
                counters.words.len() as u64 * 64,
                size.bits * u64::from(width.bits())
            );
        }
    }

    #[test]
    fn four_bit_counters_take_four_times_the_plain_bits() {
        for (capacity, error) in [(100, 0.01), (1000, 0.001), (1, 0.25), (12345, 1e-6)] {
            let plain = Link::<Bits>::new(
                BitsKind::new(Layout::Classic, HashScheme::Xxh3),
                capacity,
                error,
                u64::MAX,
            )
            .unwrap();
            for (width, factor) in [(CounterBits::Four, 4), (CounterBits::Eight, 8)] {
                let link = CountingLink::new(width, capacity, error, u64::MAX).unwrap();
                assert_eq!(link.bytes(), plain.bytes() * factor);
                assert_eq!((link.bits(), link.hashes()), (plain.bits(), plain.hashes()));
            }
        }
    }

    #[test]
    fn a_link_is_as_large_as_it_was() {
        // CBF.INFO's Size counts the links' structures.
        assert_eq!(std::mem::size_of::<CountingLink>(), 80);
    }
}
