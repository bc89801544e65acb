//! A scalable Bloom filter: a chain of links, each new one larger and stricter than the last, so
//! that the compound false-positive rate stays under the requested one however many items arrive.

use super::bloom::{hash_item, HashedChain, ItemHash, Link};
use super::sizing::{Layout, LinkSize};
use super::FilterError;

/// RedisBloom 8 caps the requested error rate here; a looser filter is rarely what anyone meant.
pub(super) const MAX_ERROR_RATE: f64 = 0.25;

/// How a new filter is shaped. `expansion` 0 means non-scaling.
#[derive(Debug, Clone, Copy)]
pub struct ChainOptions {
    pub error_rate: f64,
    pub capacity: u64,
    pub expansion: u32,
    pub layout: Layout,
}

#[derive(Debug, Clone)]
pub struct BloomChain {
    pub(super) links: Vec<Link>,
    pub(super) expansion: u32,
    pub(super) items: u64,
}

impl BloomChain {
    /// Builds the first link. A scaling filter's first link gets half the error rate, leaving room
    /// for the links that follow; the series error/2 + error/4 + ... stays under `error_rate`.
    pub fn new(options: ChainOptions, limit_bytes: u64) -> Result<BloomChain, FilterError> {
        let error_rate = options.error_rate.min(MAX_ERROR_RATE);
        let link_error = if options.expansion == 0 {
            error_rate
        } else {
            error_rate * 0.5
        };
        let link = Link::new(options.layout, options.capacity, link_error, limit_bytes)?;
        Ok(BloomChain {
            links: vec![link],
            expansion: options.expansion,
            items: 0,
        })
    }

    pub fn is_scaling(&self) -> bool {
        self.expansion != 0
    }

    /// The layout its links share.
    pub fn layout(&self) -> Layout {
        self.newest().layout()
    }

    /// Adds an item; Ok(true) when it was not (seemingly) present before.
    ///
    /// The cache lines the add will read are prefetched first, before the chain's bookkeeping:
    /// on a 1 GiB blocked filter that took single adds from about twice fastbloom's time to about
    /// the same, the misses of consecutive adds overlapping more (benches/filters.rs). Small
    /// filters skip the prefetch.
    pub fn add(&mut self, item: &[u8], limit_bytes: u64) -> Result<bool, FilterError> {
        let hash = hash_item(item);
        self.prefetch(hash);
        self.add_hashed(hash, limit_bytes)
    }

    /// Prefetches first, as `add` does.
    pub fn contains(&self, item: &[u8]) -> bool {
        let hash = hash_item(item);
        self.prefetch(hash);
        self.contains_hashed(hash)
    }

    fn newest(&self) -> &Link {
        self.links.last().expect("a chain always has a link")
    }

    fn grow(&mut self, limit_bytes: u64) -> Result<(), FilterError> {
        let newest = self.newest();
        let capacity = newest
            .capacity()
            .checked_mul(self.expansion as u64)
            .ok_or(FilterError::CannotScale)?;
        let error_rate = newest.error_rate() * 0.5;
        let layout = self.layout();
        let size =
            LinkSize::for_layout(layout, capacity, error_rate).ok_or(FilterError::CannotScale)?;
        let total = self.payload_bytes().saturating_add(size.bytes());
        if total > limit_bytes {
            return Err(FilterError::TooLarge {
                bytes: total,
                limit: limit_bytes,
            });
        }
        let link = Link::with_size(layout, size, capacity, error_rate, u64::MAX)?;
        self.links
            .try_reserve_exact(1)
            .map_err(|_| FilterError::OutOfMemory)?;
        self.links.push(link);
        Ok(())
    }

    pub fn capacity(&self) -> u64 {
        self.links.iter().map(Link::capacity).sum()
    }

    pub fn items(&self) -> u64 {
        self.items
    }

    pub fn expansion(&self) -> Option<u32> {
        self.is_scaling().then_some(self.expansion)
    }

    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Bytes of bit arrays alone.
    pub fn payload_bytes(&self) -> u64 {
        self.links.iter().map(Link::bytes).sum()
    }

    /// What the filter really occupies: its bit arrays plus the structures that hold them.
    pub fn memory_bytes(&self) -> u64 {
        let fixed = std::mem::size_of::<BloomChain>() as u64;
        let per_link = std::mem::size_of::<Link>() as u64;
        let arrays: u64 = self.links.iter().map(Link::allocated_bytes).sum();
        fixed + self.links.capacity() as u64 * per_link + arrays
    }
}

impl HashedChain for BloomChain {
    /// One pass over the probes when the newest link has room, the common case: setting the
    /// item's bits there tells at the same time whether it was new, which is what a look-up first
    /// would have said (no older link holding it).
    fn add_hashed(&mut self, hash: ItemHash, limit_bytes: u64) -> Result<bool, FilterError> {
        let (newest, older) = self
            .links
            .split_last_mut()
            .expect("a chain always has a link");
        if older.iter().rev().any(|link| link.contains(hash)) {
            return Ok(false);
        }
        if !newest.is_full() {
            if !newest.insert(hash) {
                return Ok(false);
            }
            newest.count_insert();
            self.items += 1;
            return Ok(true);
        }
        if newest.contains(hash) {
            return Ok(false);
        }
        if !self.is_scaling() {
            return Err(FilterError::Full);
        }
        self.grow(limit_bytes)?;
        let newest = self.links.last_mut().expect("a chain always has a link");
        newest.insert(hash);
        newest.count_insert();
        self.items += 1;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn options(error_rate: f64, capacity: u64, expansion: u32) -> ChainOptions {
        ChainOptions {
            error_rate,
            capacity,
            expansion,
            layout: Layout::Classic,
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
        assert!(
            added >= 990,
            "too many false positives while adding: {added}"
        );
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
            .map(|l| (l.layout(), l.capacity(), l.bytes() % 64, l.error_rate()))
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
