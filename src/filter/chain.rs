//! A scalable filter: a chain of links, each new one larger and stricter than the last, so that
//! the compound false-positive rate stays under the requested one however many items arrive.
//! Written once for any link array (plain bits, classic or blocked, and counters), and
//! monomorphised for each, since adds and look-ups here are the hot path of every command.
//!
//! The one rule that differs is where an add of an item already present goes: a plain link need
//! not change, a counting link holds another copy, in the oldest link where the item is present
//! (`counting.rs` says why).

use super::item_hash::{HashScheme, ItemHash};
use super::link::{Link, LinkArray};
use super::sizing::LinkSize;
use super::FilterError;

/// RedisBloom 8 caps the requested error rate here; a looser filter is rarely what anyone meant.
pub(super) const MAX_ERROR_RATE: f64 = 0.25;

/// A scalable filter over links of `A`: `BloomChain` or `CountingChain`. It always has a link;
/// `items` is the sum of the links' items, and `expansion` 0 means non-scaling.
/// `stated_expansion` is the expansion asked for, which differs only for a non-scaling filter
/// (RedisBloom's dump header records it).
#[derive(Debug, Clone)]
pub struct Chain<A> {
    pub(super) links: Vec<Link<A>>,
    pub(super) items: u64,
    pub(super) expansion: u32,
    pub(super) stated_expansion: u32,
}

impl<A: LinkArray> Chain<A> {
    /// Builds the first link. A scaling filter's first link gets half the error rate, leaving room
    /// for the links that follow; the series error/2 + error/4 + ... stays under `error_rate`.
    pub fn new(options: A::Options, limit_bytes: u64) -> Result<Chain<A>, FilterError> {
        let (kind, capacity, error_rate, expansion) = A::unpack(options);
        let stated_expansion = A::stated_expansion(options);
        let error_rate = error_rate.min(MAX_ERROR_RATE);
        let link_error = if expansion == 0 {
            error_rate
        } else {
            error_rate * 0.5
        };
        let link = Link::new(kind, capacity, link_error, limit_bytes)?;
        Ok(Chain {
            links: vec![link],
            items: 0,
            expansion,
            stated_expansion,
        })
    }

    pub fn is_scaling(&self) -> bool {
        self.expansion != 0
    }

    /// What its links share: their layout, or their counter width.
    pub(super) fn kind(&self) -> A::Kind {
        self.newest().kind()
    }

    /// Adds an item; Ok(true) when it was not (seemingly) present before.
    ///
    /// The cache lines the add will read are prefetched first, before the chain's bookkeeping:
    /// on a 1 GiB blocked filter that took single adds from about twice fastbloom's time to about
    /// the same, the misses of consecutive adds overlapping more (benches/filters.rs). Small
    /// filters skip the prefetch.
    pub fn add(&mut self, item: &[u8], limit_bytes: u64) -> Result<bool, FilterError> {
        let hash = self.hash(item);
        self.prefetch(hash);
        self.add_hashed(hash, limit_bytes)
    }

    /// Prefetches first, as `add` does.
    pub fn contains(&self, item: &[u8]) -> bool {
        let hash = self.hash(item);
        self.prefetch(hash);
        self.contains_hashed(hash)
    }

    fn newest(&self) -> &Link<A> {
        self.links.last().expect("a chain always has a link")
    }

    /// An older link (not the newest) where the item is present. For counting links it must be
    /// the oldest such; for plain ones any will do, and the newest of them, the largest and the
    /// likeliest to hold a recent item, is tried first.
    fn older_holding(&self, hash: ItemHash) -> Option<usize> {
        let older = &self.links[..self.links.len() - 1];
        if A::COUNTS_COPIES {
            older.iter().position(|link| link.contains(hash))
        } else {
            older.iter().rposition(|link| link.contains(hash))
        }
    }

    /// An add of an item present in link `index`: a counting link holds one copy more, a plain
    /// one is left as it is.
    fn add_again(&mut self, index: usize, hash: ItemHash) {
        if A::COUNTS_COPIES {
            self.links[index].insert(hash);
            self.count_add(index);
        }
    }

    /// Saturating: a loaded dump may carry any count, and must not make an add panic.
    fn count_add(&mut self, index: usize) {
        let link = &mut self.links[index];
        link.set_items(link.items().saturating_add(1));
        self.items = self.items.saturating_add(1);
    }

    /// Appends a link with `expansion` times the newest one's capacity and half its error rate,
    /// refusing before allocating if the chain would then be over `limit_bytes`.
    fn grow(&mut self, limit_bytes: u64) -> Result<(), FilterError> {
        let newest = self.newest();
        let capacity = newest
            .capacity()
            .checked_mul(u64::from(self.expansion))
            .ok_or(FilterError::CannotScale)?;
        let error_rate = newest.error_rate() * 0.5;
        let kind = self.kind();
        let size = A::size_for(kind, capacity, error_rate).ok_or(FilterError::CannotScale)?;
        let bytes = A::bytes_for(kind, size).ok_or(FilterError::CannotScale)?;
        let total = self.payload_bytes().saturating_add(bytes);
        if total > limit_bytes {
            return Err(FilterError::TooLarge {
                bytes: total,
                limit: limit_bytes,
            });
        }
        let link = Link::with_size(kind, size, capacity, error_rate, u64::MAX)?;
        self.links
            .try_reserve_exact(1)
            .map_err(|_| FilterError::OutOfMemory)?;
        self.links.push(link);
        Ok(())
    }

    pub fn capacity(&self) -> u64 {
        self.links.iter().map(Link::capacity).sum()
    }

    /// Items added; for a counting filter adds minus successful deletes.
    pub fn items(&self) -> u64 {
        self.items
    }

    pub(crate) fn expansion(&self) -> Option<u32> {
        self.is_scaling().then_some(self.expansion)
    }

    /// The error rate the filter was created with (after the cap), recovered from its first link.
    pub(crate) fn error_rate(&self) -> f64 {
        let first = self.links[0].error_rate();
        if self.is_scaling() {
            first * 2.0
        } else {
            first
        }
    }

    pub fn links(&self) -> &[Link<A>] {
        &self.links
    }

    /// Bytes of bit or counter arrays alone.
    pub fn payload_bytes(&self) -> u64 {
        self.links.iter().map(Link::bytes).sum()
    }

    /// What the filter really occupies: its arrays plus the structures that hold them.
    pub(crate) fn memory_bytes(&self) -> u64 {
        let fixed = std::mem::size_of::<Self>() as u64;
        let per_link = std::mem::size_of::<Link<A>>() as u64;
        let arrays: u64 = self.links.iter().map(Link::allocated_bytes).sum();
        fixed + self.links.capacity() as u64 * per_link + arrays
    }
}

/// How many items a batch hashes ahead of the one it probes. Each item's probes are prefetched
/// when it is hashed, so that by its turn its cache lines have had the time of this many items'
/// work to arrive; eight covers a miss to memory with room to spare.
const PREFETCH_AHEAD: usize = 8;

/// Empty links of `shapes` (size, capacity, error rate), each made into a `T` by `wrap`: all or
/// nothing, refused before anything is allocated if `total_bytes`, what whatever holds them
/// would then come to, is over `limit_bytes`.
pub(super) fn allocate_links<A: LinkArray, T>(
    kind: A::Kind,
    shapes: impl ExactSizeIterator<Item = (LinkSize, u64, f64)>,
    total_bytes: u64,
    limit_bytes: u64,
    mut wrap: impl FnMut(Link<A>) -> T,
) -> Result<Vec<T>, FilterError> {
    if total_bytes > limit_bytes {
        return Err(FilterError::TooLarge {
            bytes: total_bytes,
            limit: limit_bytes,
        });
    }
    let mut links = Vec::new();
    links
        .try_reserve_exact(shapes.len())
        .map_err(|_| FilterError::OutOfMemory)?;
    for (size, capacity, error_rate) in shapes {
        links.push(wrap(Link::with_size(
            kind,
            size,
            capacity,
            error_rate,
            u64::MAX,
        )?));
    }
    Ok(links)
}

/// Calls `visit` on the hash of each item in order, until it returns false. Every hash is made
/// `PREFETCH_AHEAD` items before its visit and passed to `prefetch` then, so that on a large filter
/// the misses of several items overlap instead of following one another. The state the two
/// share is passed in as `target` so that one may read it and the other change it.
fn for_each_prefetched<'a, T: ?Sized>(
    target: &mut T,
    items: impl IntoIterator<Item = &'a [u8]>,
    hash_item: impl Fn(&T, &[u8]) -> ItemHash,
    prefetch: impl Fn(&T, ItemHash),
    mut visit: impl FnMut(&mut T, ItemHash) -> bool,
) {
    let mut items = items.into_iter().fuse();
    let mut ring = [ItemHash::ZERO; PREFETCH_AHEAD];
    let mut queued = 0;
    for (slot, item) in ring.iter_mut().zip(items.by_ref()) {
        *slot = hash_item(target, item);
        prefetch(target, *slot);
        queued += 1;
    }
    let mut head = 0;
    while queued > 0 {
        let hash = ring[head];
        match items.next() {
            Some(item) => {
                ring[head] = hash_item(target, item);
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

/// A chain of links probed by item hash, with the batch operations written over its three
/// per-hash ones.
pub trait HashedChain {
    /// The item's hash under the chain's scheme.
    fn hash(&self, item: &[u8]) -> ItemHash;
    /// Which function `hash` is.
    fn hash_scheme(&self) -> HashScheme;
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
        for_each_prefetched(self, items, Self::hash, Self::prefetch, |chain, hash| {
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
            |chain, item| chain.hash(item),
            |chain, hash| chain.prefetch(hash),
            |chain, hash| {
                on_result(chain.contains_hashed(hash));
                true
            },
        );
    }
}

impl<A: LinkArray> HashedChain for Chain<A> {
    #[inline]
    fn hash(&self, item: &[u8]) -> ItemHash {
        A::hash(self.kind(), item)
    }

    fn hash_scheme(&self) -> HashScheme {
        A::hash_scheme(self.kind())
    }

    /// An item present in an older link is added there again (`add_again`); otherwise it goes to
    /// the newest link, grown first if that is full.
    ///
    /// One pass over the probes when the newest link has room, the common case: the insert there
    /// tells at the same time whether the item was new, which is what a look-up first would have
    /// said (no older link holding it).
    fn add_hashed(&mut self, hash: ItemHash, limit_bytes: u64) -> Result<bool, FilterError> {
        if let Some(index) = self.older_holding(hash) {
            self.add_again(index, hash);
            return Ok(false);
        }
        let newest = self.links.len() - 1;
        if !self.links[newest].is_full() {
            let was_new = self.links[newest].insert(hash);
            if was_new || A::COUNTS_COPIES {
                self.count_add(newest);
            }
            return Ok(was_new);
        }
        if self.links[newest].contains(hash) {
            self.add_again(newest, hash);
            return Ok(false);
        }
        if !self.is_scaling() {
            return Err(FilterError::Full);
        }
        self.grow(limit_bytes)?;
        let newest = self.links.len() - 1;
        self.links[newest].insert(hash);
        self.count_add(newest);
        Ok(true)
    }

    /// Starts loading what a look-up or an add of the item will read: every probe in the newest
    /// link, which holds most of the bits, and the first probe in the older ones, where a new item
    /// is usually ruled out at once.
    fn prefetch(&self, hash: ItemHash) {
        let (newest, older) = self.links.split_last().expect("a chain always has a link");
        for link in older {
            link.prefetch_first(hash);
        }
        newest.prefetch(hash);
    }

    /// Newest link first: it is the largest and the likeliest to hold a recent item.
    fn contains_hashed(&self, hash: ItemHash) -> bool {
        self.links.iter().rev().any(|link| link.contains(hash))
    }
}
