//! The union of filters of one shape (BF.MERGE, CBF.MERGE, BF.UNIONCARD), done link by link
//! and piece by piece, so that a command can fold a large source into a destination without
//! holding both at once or copying either whole.
//!
//! # When two chains can be merged
//!
//! A chain's links follow from its first link and its expansion (each link after the first has
//! `expansion` times the capacity and half the error rate: `chain.rs`). Two chains whose links
//! share the kind (layout and hash scheme, or counter width), the expansion and the first link's
//! capacity and error rate (so its bits and hashes) have the same link at every position they
//! both have; they may differ in length, one having grown further. Their union takes, at each
//! position, the union of the links there: an item of either is in some link of the result, so
//! the union has no false negative. A position only one chain reaches is copied from it.
//!
//! # Items
//!
//! A plain link's item count is what BF.CARD sums. For the union of links holding `n_1 .. n_s`
//! items, the distinct items behind it are at least `max n_i` and at most `Σ n_i` (the sum counts
//! items present in several sources more than once). The count is taken from the union's bits
//! instead (`Link<Bits>::items_for_set_bits`), which estimates the distinct items behind them the
//! way BF.CARD's own count would have grown had every add gone to one filter, and held between
//! those two bounds. Growth then happens when the union's distinct items fill a link, not before
//! and not after, within the estimate's error (about 1% at half fill).
//!
//! A counting link's count is a multiset's: the union of counting filters is their sum, counters
//! added (saturating as adds do) and counts added, exact. Only counting chains of one link are
//! merged: `counting.rs` shows that a delete finds the link that holds an item because an item
//! absent from an older link when added there stays absent from it; after a merge of longer
//! chains, an item one source holds in link 2 may look present in link 1 because of another
//! source's items there, and deleting it would take counts from those. A single link has no older
//! link, and once the merged link has a successor, the rule holds from then on.

use super::blocked_sizing::BLOCK_BITS;
use super::bloom::Bits;
use super::chain::{allocate_links, Chain};
use super::link::{Link, LinkArray};
use super::sizing::{format_g, Layout};
use super::FilterError;
use std::convert::identity;

/// The first property in which a chain differs from another it was to be merged with: its name
/// and the two values, as an error message shows them.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeMismatch {
    pub field: &'static str,
    pub ours: String,
    pub theirs: String,
}

/// What two chains must share to be merged, as (property, value) pairs in the order they are
/// compared.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeShape(Vec<(&'static str, String)>);

impl MergeShape {
    /// The first property in which `other` differs from this shape, None when it has it.
    pub fn mismatch(&self, other: &MergeShape) -> Option<MergeMismatch> {
        self.0
            .iter()
            .zip(&other.0)
            .find(|(ours, theirs)| ours.1 != theirs.1)
            .map(|((field, ours), (_, theirs))| MergeMismatch {
                field,
                ours: ours.clone(),
                theirs: theirs.clone(),
            })
    }
}

impl<A: LinkArray> Chain<A> {
    pub fn merge_shape(&self) -> MergeShape {
        let first = &self.links[0];
        let mut fields = A::kind_fields(self.kind());
        fields.push((
            "expansion",
            match self.expansion {
                0 => "none (non-scaling)".to_string(),
                expansion => expansion.to_string(),
            },
        ));
        fields.push(("capacity", first.capacity().to_string()));
        fields.push(("error rate", format_g(self.error_rate())));
        fields.push(("bits", first.bits().to_string()));
        fields.push(("hashes", first.hashes().to_string()));
        MergeShape(fields)
    }

    /// An empty chain of this one's shape with `links` links, refused before anything is
    /// allocated if its arrays would be over `limit_bytes`.
    pub fn empty_like(&self, links: usize, limit_bytes: u64) -> Result<Chain<A>, FilterError> {
        let first = &self.links[0];
        let mut chain = Chain {
            links: Vec::new(),
            items: 0,
            expansion: self.expansion,
            stated_expansion: self.stated_expansion,
        };
        let mut link = Link::with_size(
            self.kind(),
            first.size(),
            first.capacity(),
            first.error_rate(),
            limit_bytes,
        )?;
        link.set_items(0);
        chain.links.push(link);
        chain.extend_to(links, limit_bytes)?;
        Ok(chain)
    }

    /// Appends empty links, each grown from the one before as `grow` would, until the chain has
    /// `links`; all or nothing, refused before allocating if the chain would then be over
    /// `limit_bytes` or a non-scaling chain would have more than one link.
    pub fn extend_to(&mut self, links: usize, limit_bytes: u64) -> Result<(), FilterError> {
        if links <= self.links.len() {
            return Ok(());
        }
        if !self.is_scaling() {
            return Err(FilterError::CannotScale);
        }
        let kind = self.kind();
        let newest = self.links.last().expect("a chain always has a link");
        let (mut capacity, mut error_rate) = (newest.capacity(), newest.error_rate());
        let mut total = self.payload_bytes();
        let mut shapes = Vec::new();
        for _ in self.links.len()..links {
            capacity = capacity
                .checked_mul(u64::from(self.expansion))
                .ok_or(FilterError::CannotScale)?;
            error_rate *= 0.5;
            let size = A::size_for(kind, capacity, error_rate).ok_or(FilterError::CannotScale)?;
            let bytes = A::bytes_for(kind, size).ok_or(FilterError::CannotScale)?;
            total = total.saturating_add(bytes);
            shapes.push((size, capacity, error_rate));
        }
        let added = allocate_links(kind, shapes.into_iter(), total, limit_bytes, identity)?;
        self.links
            .try_reserve_exact(added.len())
            .map_err(|_| FilterError::OutOfMemory)?;
        self.links.extend(added);
        Ok(())
    }

    /// Bytes of link `link`'s array.
    pub fn link_len(&self, link: usize) -> u64 {
        self.links[link].bytes()
    }

    /// Appends `len` bytes of link `link`'s array from byte `from`; false, with nothing
    /// appended, if the link or the range is not there.
    pub fn read_link(&self, link: usize, from: u64, len: u64, out: &mut Vec<u8>) -> bool {
        match self.links.get(link) {
            Some(link) if from.checked_add(len).is_some_and(|end| end <= link.bytes()) => {
                link.read_bytes(from, len, out);
                true
            }
            _ => false,
        }
    }

    /// Folds bytes read with `read_link` from link `link` of a chain of the same shape into the
    /// same bytes here; false, with nothing changed, if the link or the range is not there.
    pub fn merge_link(&mut self, link: usize, from: u64, data: &[u8]) -> bool {
        match self.links.get_mut(link) {
            Some(link)
                if from
                    .checked_add(data.len() as u64)
                    .is_some_and(|end| end <= link.bytes()) =>
            {
                link.merge_bytes(from, data);
                true
            }
            _ => false,
        }
    }

    /// Sets each link's item count, and the chain's as their sum; links beyond `items` keep
    /// theirs.
    pub fn set_link_items(&mut self, items: &[u64]) {
        for (link, &items) in self.links.iter_mut().zip(items) {
            link.set_items(items);
        }
        self.items = self
            .links
            .iter()
            .fold(0u64, |sum, link| sum.saturating_add(link.items()));
    }
}

impl Link<Bits> {
    /// The distinct items behind `set` bits of an array of this link's shape, estimated from
    /// what a uniform hash leaves unset. In a classic link each of the `k` probes of an item
    /// lands on any of the `m` bits, so after `n` items a bit is clear with probability
    /// `(1 − 1/m)^(kn)`; in a blocked one an item picks one of `b` blocks and sets `k` of its 512
    /// bits, so a bit is clear with probability `(1 − (1 − x)/b)^n`, `x = (1 − 1/512)^k`. Setting
    /// that to the fraction clear, `1 − set/m`, and solving for `n` gives the estimate (BF.CARD's
    /// formula, −m/k·ln(1 − X/m), to first order). Infinite for a full array.
    pub(crate) fn items_for_set_bits(&self, set: u64) -> f64 {
        let bits = self.bits() as f64;
        let clear = (-(set.min(self.bits()) as f64) / bits).ln_1p();
        let hashes = f64::from(self.hashes());
        // The log of the chance that one item leaves a given bit clear.
        let per_item = match self.kind().layout() {
            Layout::Classic => hashes * (-1.0 / bits).ln_1p(),
            Layout::Blocked => {
                let blocks = bits / BLOCK_BITS as f64;
                // ln x, and x − 1 = expm1(ln x), without cancellation.
                let ln_x = hashes * (-1.0 / BLOCK_BITS as f64).ln_1p();
                (ln_x.exp_m1() / blocks).ln_1p()
            }
        };
        clear / per_item
    }
}

/// An estimated count held between what is certain: at least `lowest`, at most `highest`.
pub fn bounded_estimate(estimate: f64, lowest: u64, highest: u64) -> u64 {
    let highest = highest.max(lowest);
    if estimate.is_nan() || estimate >= highest as f64 {
        highest
    } else {
        (estimate.round() as u64).clamp(lowest, highest)
    }
}

#[cfg(test)]
mod tests {
    use super::super::bloom::{BloomChain, ChainOptions};
    use super::super::counter_array::{CounterBits, CountingOptions};
    use super::super::counting::CountingChain;
    use super::super::item_hash::HashScheme;
    use super::*;

    fn bloom(layout: Layout, hash: HashScheme, capacity: u64) -> BloomChain {
        let options = ChainOptions {
            error_rate: 0.01,
            capacity,
            expansion: 2,
            non_scaling: false,
            layout,
            hash,
        };
        BloomChain::new(options, u64::MAX).unwrap()
    }

    /// `into` ∪ `from` the way BF.MERGE does it: grown to the longer length, every link folded
    /// in small pieces.
    fn merge<A: LinkArray>(into: &mut Chain<A>, from: &Chain<A>) {
        assert_eq!(into.merge_shape().mismatch(&from.merge_shape()), None);
        into.extend_to(from.links.len(), u64::MAX).unwrap();
        for link in 0..from.links.len() {
            let len = from.link_len(link);
            let mut at = 0;
            while at < len {
                let mut piece = Vec::new();
                let take = 37.min(len - at);
                assert!(from.read_link(link, at, take, &mut piece));
                assert!(into.merge_link(link, at, &piece));
                at += take;
            }
        }
    }

    #[test]
    fn a_union_holds_every_item_of_both_whatever_their_lengths() {
        for layout in [Layout::Classic, Layout::Blocked] {
            for hash in [HashScheme::Murmur, HashScheme::Xxh3] {
                let (mut a, mut b) = (bloom(layout, hash, 100), bloom(layout, hash, 100));
                for i in 0..150u32 {
                    a.add(format!("a{i}").as_bytes(), u64::MAX).unwrap();
                }
                for i in 0..1000u32 {
                    b.add(format!("b{i}").as_bytes(), u64::MAX).unwrap();
                }
                assert!(a.links.len() < b.links.len());
                merge(&mut a, &b);
                assert_eq!(a.links.len(), b.links.len());
                assert!((0..150u32).all(|i| a.contains(format!("a{i}").as_bytes())));
                assert!((0..1000u32).all(|i| a.contains(format!("b{i}").as_bytes())));
            }
        }
    }

    #[test]
    fn the_first_difference_is_named() {
        let classic = bloom(Layout::Classic, HashScheme::Murmur, 100);
        let cases = [
            (bloom(Layout::Classic, HashScheme::Xxh3, 100), "hash scheme"),
            (bloom(Layout::Blocked, HashScheme::Xxh3, 100), "layout"),
            (bloom(Layout::Classic, HashScheme::Murmur, 200), "capacity"),
        ];
        for (other, field) in cases {
            assert_eq!(
                classic
                    .merge_shape()
                    .mismatch(&other.merge_shape())
                    .unwrap()
                    .field,
                field
            );
        }
        let mut non_scaling = ChainOptions {
            error_rate: 0.01,
            capacity: 100,
            expansion: 2,
            non_scaling: true,
            layout: Layout::Classic,
            hash: HashScheme::Murmur,
        };
        let other = BloomChain::new(non_scaling, u64::MAX).unwrap();
        assert_eq!(
            classic.merge_shape().mismatch(&other.merge_shape()),
            Some(MergeMismatch {
                field: "expansion",
                ours: "2".into(),
                theirs: "none (non-scaling)".into()
            })
        );
        non_scaling.non_scaling = false;
        non_scaling.error_rate = 0.001;
        let stricter = BloomChain::new(non_scaling, u64::MAX).unwrap();
        assert_eq!(
            classic
                .merge_shape()
                .mismatch(&stricter.merge_shape())
                .unwrap()
                .field,
            "error rate"
        );
    }

    #[test]
    fn extending_is_all_or_nothing_within_the_limit() {
        let mut chain = bloom(Layout::Classic, HashScheme::Murmur, 100);
        // 144 + 312 + 696 + 1536 bytes for four links.
        assert!(matches!(
            chain.extend_to(4, 2000),
            Err(FilterError::TooLarge { bytes: 2688, .. })
        ));
        assert_eq!(chain.links.len(), 1);
        chain.extend_to(4, 2688).unwrap();
        let grown: Vec<u64> = chain.links.iter().map(|l| l.bytes()).collect();
        assert_eq!(grown, [144, 312, 696, 1536]);
        let empty = chain.empty_like(2, u64::MAX).unwrap();
        assert_eq!((empty.links.len(), empty.items()), (2, 0));
        assert_eq!(empty.merge_shape(), chain.merge_shape());
    }

    #[test]
    fn counters_add_and_saturate() {
        let options = CountingOptions {
            error_rate: 0.01,
            capacity: 100,
            expansion: 0,
            counter_bits: CounterBits::Four,
        };
        let mut a = CountingChain::new(options, u64::MAX).unwrap();
        let mut b = CountingChain::new(options, u64::MAX).unwrap();
        for _ in 0..10 {
            a.add(b"hot", u64::MAX).unwrap();
            b.add(b"hot", u64::MAX).unwrap();
        }
        b.add(b"cold", u64::MAX).unwrap();
        merge(&mut a, &b);
        assert_eq!((a.count(b"hot"), a.count(b"cold")), (15, 1));
        let hashes = a.links[0].hashes() as u64;
        assert!((1..=hashes).contains(&a.saturated_counters()));
        let mut wide = CountingChain::new(
            CountingOptions {
                counter_bits: CounterBits::Eight,
                ..options
            },
            u64::MAX,
        )
        .unwrap();
        let mut other = wide.clone();
        for _ in 0..200 {
            wide.add(b"hot", u64::MAX).unwrap();
            other.add(b"hot", u64::MAX).unwrap();
        }
        merge(&mut wide, &other);
        assert_eq!(wide.count(b"hot"), 255);
    }

    #[test]
    fn the_union_count_estimates_distinct_items() {
        for layout in [Layout::Classic, Layout::Blocked] {
            let mut chain = bloom(layout, HashScheme::Xxh3, 100_000);
            for i in 0..50_000u32 {
                chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
            }
            let link = &chain.links[0];
            let estimate = link.items_for_set_bits(link.used_slots());
            // σ of the estimate is well under 1% here; 3% is far outside it.
            assert!(
                (estimate / 50_000.0 - 1.0).abs() < 0.03,
                "{layout:?}: {estimate}"
            );
            assert_eq!(link.items_for_set_bits(0), 0.0);
            assert!(link.items_for_set_bits(link.bits()).is_infinite());
        }
        assert_eq!(bounded_estimate(f64::INFINITY, 5, 9), 9);
        assert_eq!(bounded_estimate(6.4, 5, 9), 6);
        assert_eq!(bounded_estimate(2.0, 5, 9), 5);
        assert_eq!(bounded_estimate(f64::NAN, 5, 3), 5);
    }
}
