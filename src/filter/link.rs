//! One link of a chain: an array of bits or counters with the shape and bookkeeping every link
//! has (its size, capacity, error rate and items held). What differs between a plain link
//! (`Bits`, classic or blocked) and a counting one (`Counters`) is behind `LinkArray`, so that
//! the chain, the dumps and the health estimate are written once for both, and monomorphised.

use super::arrays::PREFETCH_MIN_WORDS;
use super::item_hash::{HashScheme, ItemHash};
use super::sizing::LinkSize;
use super::FilterError;

/// What a link stores its items in, and how its kind of filter is asked for and sized.
pub trait LinkArray: Sized {
    /// What every link of one chain shares besides its size: the bit layout, or the counter
    /// width.
    type Kind: Copy + PartialEq + std::fmt::Debug;
    /// How a new chain of these links is asked for.
    type Options: Copy;
    /// Whether an add of an item already present is held again (a counting filter is a
    /// multiset) rather than a no-op.
    const COUNTS_COPIES: bool;

    /// The kind, capacity, error rate and expansion (0: non-scaling) the options ask for.
    fn unpack(options: Self::Options) -> (Self::Kind, u64, f64, u32);
    /// The expansion the options state, which a non-scaling filter keeps only to report it.
    fn stated_expansion(options: Self::Options) -> u32 {
        Self::unpack(options).3
    }
    /// The item's hash for links of `kind`: the function their scheme names.
    fn hash(kind: Self::Kind, item: &[u8]) -> ItemHash {
        Self::hash_scheme(kind).item_hash(item)
    }
    /// How links of `kind` hash items: two chains of one scheme hash an item alike.
    fn hash_scheme(_kind: Self::Kind) -> HashScheme {
        HashScheme::Xxh3
    }
    /// The shape of a link of `kind` for `capacity` items at `error_rate`; None when no link of a
    /// representable size meets it.
    fn size_for(kind: Self::Kind, capacity: u64, error_rate: f64) -> Option<LinkSize>;
    /// The bytes of payload of a link of this shape, None if they do not fit a u64.
    fn bytes_for(kind: Self::Kind, size: LinkSize) -> Option<u64>;
    /// A zeroed array for a link of `size`.
    fn zeroed(kind: Self::Kind, size: LinkSize) -> Result<Self, FilterError>;

    fn kind(&self) -> Self::Kind;
    /// Whether the item is present: all its probes set (non-zero).
    fn contains(&self, size: LinkSize, hash: ItemHash) -> bool;
    /// Adds the item's probes; true when one of them was clear before (the item was not
    /// present), which is the answer a look-up before the add would have given.
    fn insert(&mut self, size: LinkSize, hash: ItemHash) -> bool;
    /// Starts loading the cache lines of every probe of the item.
    fn prefetch(&self, size: LinkSize, hash: ItemHash);
    /// Starts loading the cache line of the item's first probe only: enough for a look-up that
    /// is likely to stop there, as it does in an older link of a chain.
    fn prefetch_first(&self, size: LinkSize, hash: ItemHash);
    /// Bits set or counters above zero, counted on request (a pass over the whole array).
    fn used_slots(&self) -> u64;
    /// The chance that an item never added passes every probe, estimated from the fill;
    /// `used_slots` is what `used_slots` counted.
    fn estimated_pass_rate(&self, size: LinkSize, used_slots: u64) -> f64;
    /// How many 64-bit words the payload has (little-endian in dumps); cheap, as prefetching
    /// asks on every add.
    fn payload_words(&self) -> usize;
    /// The bytes the array takes from the allocator.
    fn allocated_bytes(&self) -> u64;
    /// Appends `len` bytes of the payload from byte `from`, words little-endian.
    fn read_bytes(&self, from: u64, len: u64, out: &mut Vec<u8>);
    /// Overwrites the payload bytes at `from` with `data`; the caller has checked the range.
    fn write_bytes(&mut self, from: u64, data: &[u8]);
    /// Hands `fill` the whole payload's memory as little-endian bytes to overwrite
    /// (`arrays::fill_le_bytes`), and brings any bookkeeping kept over them up to date.
    fn fill_bytes<E>(&mut self, fill: &mut impl FnMut(&mut [u8]) -> Result<(), E>)
        -> Result<(), E>;
    /// Folds payload bytes of another link of the same shape into `into`, the same bytes of this
    /// kind of link: the union of what the two hold (bits or-ed, counters added).
    fn combine(kind: Self::Kind, into: &mut [u8], from: &[u8]);
    /// What a link of `kind` must share with another for their union to be one link, as
    /// (field, value) pairs named for an error message: the layout and hash scheme, or the
    /// counter width.
    fn kind_fields(kind: Self::Kind) -> Vec<(&'static str, String)>;
}

/// A link: its array and what it was sized for. `size` is what `A::size_for` gave for the
/// array's kind, `capacity` and `error_rate`.
#[derive(Debug, Clone)]
pub struct Link<A> {
    pub(super) array: A,
    size: LinkSize,
    capacity: u64,
    error_rate: f64,
    items: u64,
}

impl<A: LinkArray> Link<A> {
    /// Allocates a zeroed link, refusing (before allocating) anything over `limit_bytes`.
    pub(crate) fn new(
        kind: A::Kind,
        capacity: u64,
        error_rate: f64,
        limit_bytes: u64,
    ) -> Result<Link<A>, FilterError> {
        let size = A::size_for(kind, capacity, error_rate).ok_or(FilterError::CannotScale)?;
        Self::with_size(kind, size, capacity, error_rate, limit_bytes)
    }

    /// `size` must be what `A::size_for` gives for `kind`.
    pub(super) fn with_size(
        kind: A::Kind,
        size: LinkSize,
        capacity: u64,
        error_rate: f64,
        limit_bytes: u64,
    ) -> Result<Link<A>, FilterError> {
        let bytes = A::bytes_for(kind, size).ok_or(FilterError::CannotScale)?;
        if bytes > limit_bytes {
            return Err(FilterError::TooLarge {
                bytes,
                limit: limit_bytes,
            });
        }
        Ok(Link {
            array: A::zeroed(kind, size)?,
            size,
            capacity,
            error_rate,
            items: 0,
        })
    }

    #[inline]
    pub(crate) fn contains(&self, hash: ItemHash) -> bool {
        self.array.contains(self.size, hash)
    }

    #[inline]
    pub(super) fn insert(&mut self, hash: ItemHash) -> bool {
        self.array.insert(self.size, hash)
    }

    /// Whether prefetching pays: below this size the array stays in the CPU's caches, and the
    /// second computation of the probe positions would cost more than it saves.
    #[inline]
    fn worth_prefetching(&self) -> bool {
        self.array.payload_words() >= PREFETCH_MIN_WORDS
    }

    #[inline]
    pub(super) fn prefetch(&self, hash: ItemHash) {
        if self.worth_prefetching() {
            self.array.prefetch(self.size, hash);
        }
    }

    #[inline]
    pub(super) fn prefetch_first(&self, hash: ItemHash) {
        if self.worth_prefetching() {
            self.array.prefetch_first(self.size, hash);
        }
    }

    pub(super) fn kind(&self) -> A::Kind {
        self.array.kind()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.items >= self.capacity
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    pub(crate) fn error_rate(&self) -> f64 {
        self.error_rate
    }

    /// Items held; for a counting link adds minus deletes, with multiplicity.
    pub(crate) fn items(&self) -> u64 {
        self.items
    }

    pub(super) fn set_items(&mut self, items: u64) {
        self.items = items;
    }

    pub fn hashes(&self) -> u32 {
        self.size.hashes
    }

    /// How many bits, or for a counting link how many counters.
    pub fn bits(&self) -> u64 {
        self.size.bits
    }

    pub(super) fn size(&self) -> LinkSize {
        self.size
    }

    /// Bytes of payload: the bit or counter array alone.
    pub(crate) fn bytes(&self) -> u64 {
        self.array.payload_words() as u64 * 8
    }

    pub(crate) fn allocated_bytes(&self) -> u64 {
        self.array.allocated_bytes()
    }

    pub(crate) fn used_slots(&self) -> u64 {
        self.array.used_slots()
    }

    /// The chance that an item never added passes every probe; `used_slots` is what
    /// `used_slots` counted.
    pub(crate) fn estimated_pass_rate(&self, used_slots: u64) -> f64 {
        self.array.estimated_pass_rate(self.size, used_slots)
    }

    pub(crate) fn read_bytes(&self, from: u64, len: u64, out: &mut Vec<u8>) {
        self.array.read_bytes(from, len, out);
    }

    pub(crate) fn write_bytes(&mut self, from: u64, data: &[u8]) {
        self.array.write_bytes(from, data);
    }

    pub(crate) fn fill_bytes<E>(
        &mut self,
        fill: &mut impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.array.fill_bytes(fill)
    }

    /// Folds payload bytes of a link of the same shape, taken from its byte `from`, into the
    /// same bytes of this one (`LinkArray::combine`); the caller has checked the range.
    pub(crate) fn merge_bytes(&mut self, from: u64, data: &[u8]) {
        let mut own = Vec::with_capacity(data.len());
        self.array.read_bytes(from, data.len() as u64, &mut own);
        A::combine(self.kind(), &mut own, data);
        self.array.write_bytes(from, &own);
    }
}
