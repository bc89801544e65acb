//! One Bloom filter link: a flat bit array probed by 64-bit double hashing.
//!
//! The layout is the classic one (each probe anywhere in the array) rather than a cache-line-blocked
//! one: with the reference sizing formulas, a blocked layout overshoots the requested false-positive
//! rate, and correctness comes first. Probe positions are mapped onto the array with a multiply-shift
//! instead of a modulo, which is uniform for any bit count and avoids a division per probe.

use super::sizing::LinkSize;
use super::FilterError;
use xxhash_rust::xxh3::xxh3_128;

/// The two 64-bit halves of an item's 128-bit xxh3 hash; probe i sits at h1 + i·h2.
#[derive(Debug, Clone, Copy)]
pub struct ItemHash {
    h1: u64,
    h2: u64,
}

/// MurmurHash3's 64-bit finaliser: a bijection whose every output bit depends on every input bit.
#[inline]
fn mix(mut x: u64) -> u64 {
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

/// Arrays smaller than this (1 MiB) are left to the caches; see `Link::worth_prefetching`.
pub(super) const PREFETCH_MIN_WORDS: usize = 1 << 17;

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

/// Asks the CPU to start loading the cache line that holds `words[index]`. Only a hint: it reads
/// nothing and cannot fault. Where no prefetch instruction is wired up it does nothing.
#[inline(always)]
pub(super) fn prefetch_word(words: &[u64], index: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 never dereferences its operand in a way that can fault, whatever the
        // address, and SSE is part of the x86-64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(words.as_ptr().wrapping_add(index).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (words, index);
}

/// Arrays from this size up are worth backing with huge pages.
const HUGE_PAGE_MIN_BYTES: usize = 8 << 20;

/// Asks Linux to back the array with 2 MiB pages. Every probe of a large filter lands on a random
/// page, so with 4 KiB pages nearly every probe also misses the TLB and walks the page tables;
/// with 2 MiB pages the walk is shorter and mostly cached. On a 1 GiB filter a look-up went from
/// 2.0 to 1.5 times the time fastbloom takes on small pages (benches/filters.rs). The kernel may
/// ignore the advice (transparent huge pages disabled); nothing changes then.
fn advise_huge_pages(words: &mut [u64]) {
    let bytes = std::mem::size_of_val(words);
    if bytes < HUGE_PAGE_MIN_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE_PAGE: usize = 2 << 20;
        let start = words.as_mut_ptr() as usize;
        // madvise wants a page-aligned start; the 2 MiB pieces at either end that the array only
        // partly covers stay on small pages.
        let aligned = start.next_multiple_of(HUGE_PAGE);
        let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
        if end > aligned {
            // SAFETY: the range lies inside the allocation that `words` owns; MADV_HUGEPAGE only
            // changes how the kernel backs those pages, never their contents.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
}

/// A zeroed word array that may fail instead of aborting. It comes from `alloc_zeroed`, so the
/// kernel supplies zero pages lazily: reserving a large filter costs no time and no resident
/// memory until bits are set. Large arrays are advised onto huge pages before any is touched.
pub(super) fn zeroed_words(len: usize) -> Result<Vec<u64>, FilterError> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u64>(len).map_err(|_| FilterError::OutOfMemory)?;
    // SAFETY: the layout has non-zero size. The pointer, if not null, comes from the global
    // allocator with exactly the layout of a Vec<u64> of capacity `len`, and all-zero bytes are a
    // valid u64, so all `len` elements are initialised.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut u64;
        if ptr.is_null() {
            return Err(FilterError::OutOfMemory);
        }
        let mut words = Vec::from_raw_parts(ptr, len, len);
        advise_huge_pages(&mut words);
        Ok(words)
    }
}

#[derive(Debug, Clone)]
pub struct Link {
    words: Vec<u64>,
    size: LinkSize,
    capacity: u64,
    error_rate: f64,
    items: u64,
}

impl Link {
    /// Allocates a zeroed link, refusing (before allocating) anything over `limit_bytes`.
    pub fn new(capacity: u64, error_rate: f64, limit_bytes: u64) -> Result<Link, FilterError> {
        let size = LinkSize::for_capacity(capacity, error_rate).ok_or(FilterError::CannotScale)?;
        Self::with_size(size, capacity, error_rate, limit_bytes)
    }

    pub(super) fn with_size(
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
        Ok(Link {
            words: zeroed_words(size.words())?,
            size,
            capacity,
            error_rate,
            items: 0,
        })
    }

    #[inline]
    pub fn contains(&self, hash: ItemHash) -> bool {
        hash.probes(self.size.bits, self.size.hashes)
            .all(|bit| self.words[(bit >> 6) as usize] & (1 << (bit & 63)) != 0)
    }

    /// Whether prefetching pays: below this size the bits stay in the CPU's caches, and the
    /// second computation of the probe positions would cost more than it saves.
    #[inline]
    fn worth_prefetching(&self) -> bool {
        self.words.len() >= PREFETCH_MIN_WORDS
    }

    /// Starts loading the cache lines of every probe of the item.
    #[inline]
    pub fn prefetch(&self, hash: ItemHash) {
        if !self.worth_prefetching() {
            return;
        }
        for bit in hash.probes(self.size.bits, self.size.hashes) {
            prefetch_word(&self.words, (bit >> 6) as usize);
        }
    }

    /// Starts loading the cache line of the item's first probe only: enough for a look-up that
    /// is likely to stop there, as it does in an older link of a chain.
    #[inline]
    pub fn prefetch_first(&self, hash: ItemHash) {
        if !self.worth_prefetching() {
            return;
        }
        if let Some(bit) = hash.probes(self.size.bits, self.size.hashes).next() {
            prefetch_word(&self.words, (bit >> 6) as usize);
        }
    }

    /// Sets the item's bits; true when at least one of them was clear (the item is new here).
    #[inline]
    pub fn insert(&mut self, hash: ItemHash) -> bool {
        let mut changed = 0;
        for bit in hash.probes(self.size.bits, self.size.hashes) {
            let word = &mut self.words[(bit >> 6) as usize];
            let mask = 1 << (bit & 63);
            changed |= !*word & mask;
            *word |= mask;
        }
        changed != 0
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

    /// Bits set, counted on request (a pass over the whole array).
    pub fn set_bits(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Appends `len` bytes of the bit array, starting at byte `from`, in little-endian word order.
    pub fn read_bytes(&self, from: u64, len: u64, out: &mut Vec<u8>) {
        read_le_bytes(&self.words, from, len, out);
    }

    /// Overwrites the bytes at `from` with `data`; the caller has checked the range.
    pub fn write_bytes(&mut self, from: u64, data: &[u8]) {
        write_le_bytes(&mut self.words, from, data);
    }
}

/// Appends `len` bytes of `words`, starting at byte `from`, each word little-endian: the byte view
/// that dumps use for every filter type, whatever its word layout.
///
/// A snapshot copies under the filter's read lock, so this must be as fast as a memory copy:
/// whole words go through a loop over fixed-size chunks that compiles to one, not a push of
/// eight bytes at a time.
pub(super) fn read_le_bytes(words: &[u64], from: u64, len: u64, out: &mut Vec<u8>) {
    let (from, end) = (from as usize, (from + len) as usize);
    let start = out.len();
    out.resize(start + (end - from), 0);
    let mut dst = &mut out[start..];
    let mut at = from;
    let head = (8 - at % 8) % 8;
    if head > 0 {
        let take = head.min(end - at);
        let word = words[at / 8].to_le_bytes();
        dst[..take].copy_from_slice(&word[at % 8..at % 8 + take]);
        dst = &mut dst[take..];
        at += take;
    }
    let whole = (end - at) / 8;
    let (body, tail) = dst.split_at_mut(whole * 8);
    for (chunk, word) in body.chunks_exact_mut(8).zip(&words[at / 8..at / 8 + whole]) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    at += whole * 8;
    if !tail.is_empty() {
        let word = words[at / 8].to_le_bytes();
        tail.copy_from_slice(&word[..tail.len()]);
    }
}

/// Overwrites the bytes of `words` at `from` with `data`; the caller has checked the range.
pub(super) fn write_le_bytes(words: &mut [u64], from: u64, data: &[u8]) {
    let mut at = from as usize;
    let mut rest = data;
    while !rest.is_empty() {
        let offset = at % 8;
        let take = (8 - offset).min(rest.len());
        let mut word = words[at / 8].to_le_bytes();
        word[offset..offset + take].copy_from_slice(&rest[..take]);
        words[at / 8] = u64::from_le_bytes(word);
        at += take;
        rest = &rest[take..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_view_round_trips_at_any_alignment() {
        let mut link = Link::new(100, 0.01, u64::MAX).unwrap();
        for i in 0..60u32 {
            link.insert(hash_item(&i.to_le_bytes()));
        }
        let mut all = Vec::new();
        link.read_bytes(0, link.bytes(), &mut all);
        let mut copy = Link::new(100, 0.01, u64::MAX).unwrap();
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
    fn byte_view_matches_the_words_for_every_range() {
        let words: Vec<u64> = (0..5u64)
            .map(|i| 0x0102_0304_0506_0708u64.wrapping_mul(i + 1))
            .collect();
        let expected: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        for from in 0..expected.len() {
            for end in from..=expected.len() {
                let mut out = vec![0xAA];
                read_le_bytes(&words, from as u64, (end - from) as u64, &mut out);
                assert_eq!(out[0], 0xAA);
                assert_eq!(&out[1..], &expected[from..end], "bytes {from}..{end}");
            }
        }
    }

    #[test]
    fn refuses_before_allocating() {
        let err = Link::new(1 << 30, 1e-300, 1 << 30).unwrap_err();
        assert!(matches!(err, FilterError::TooLarge { limit, .. } if limit == 1 << 30));
    }
}
