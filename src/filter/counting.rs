//! Counting Bloom filters (CBF.*): a chain of counting links (`counter_array.rs`), to which an item can
//! be added several times and from which it can be deleted again. Adds and look-ups are the
//! chain's (`chain.rs`, where `LinkArray::COUNTS_COPIES` selects the add half of the rule below);
//! deletes and counts, and the rule that keeps them safe, are here.
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

use super::chain::Chain;
use super::counter_array::{CounterBits, Counters};
use super::item_hash::{hash_item, ItemHash};

/// A scalable counting Bloom filter (CBF.*).
pub type CountingChain = Chain<Counters>;

impl CountingChain {
    /// Removes one copy of the item if it is present; false (and nothing changed) if it is not.
    /// It acts on the oldest link where the item is present, where by the rule above it is held.
    pub fn delete(&mut self, item: &[u8]) -> bool {
        let hash = hash_item(item);
        let Some(index) = self.oldest_holding(hash) else {
            return false;
        };
        self.links[index].remove(hash);
        self.items = self.items.saturating_sub(1);
        true
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

    pub(crate) fn counter_bits(&self) -> CounterBits {
        self.kind()
    }

    pub fn saturated_counters(&self) -> u64 {
        self.links.iter().map(|link| link.saturated()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::bloom::{BloomChain, ChainOptions};
    use super::super::counter_array::CountingOptions;
    use super::super::item_hash::{hash_item, HashScheme};
    use super::super::sizing::Layout;
    use super::super::FilterError;
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
        assert_eq!(chain.links[0].used_slots(), 0);
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
                non_scaling: false,
                layout: Layout::Classic,
                hash: HashScheme::Murmur,
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
