//! How full a filter is and what that means for its answers, for SIEVED.STATS.
//!
//! The error rate a filter was built for holds at its capacity, if the items hash uniformly. The
//! estimate here comes from the bits themselves instead: a link with a fraction `f` of its bits
//! set (counters above zero, for a counting filter) and `k` probes per item answers "present"
//! for an item it never saw with probability `f^k`, the probes being independent and uniform; in
//! a blocked link, whose probes stay in one block, it is the mean of `f_b^k` over its blocks.
//! A chain answers "present" when any link does, so its estimated rate is
//! `1 - Π (1 - f_i^k_i)` over its links. This tracks what the filter really holds: it is below
//! the target while the filter fills, and shows the damage when a non-scaling filter is
//! overfilled or a counting filter's deletions left counters behind.

use super::chain::Chain;
use super::link::LinkArray;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Health {
    pub links: usize,
    pub capacity: u64,
    pub items: u64,
    /// The error rate the filter was created for.
    pub target_error_rate: f64,
    /// Set bits (or non-zero counters) over all bits (or counters), all links together.
    pub fill_ratio: f64,
    /// The same for the newest link, the only one still taking items.
    pub newest_fill_ratio: f64,
    pub estimated_error_rate: f64,
    /// Items the newest link takes before the filter adds a link, or, if it does not scale,
    /// before it refuses new items.
    pub items_until_scale_out: u64,
    pub scaling: bool,
    pub bytes: u64,
}

impl Health {
    pub(crate) fn of<A: LinkArray>(chain: &Chain<A>) -> Health {
        let links = chain.links();
        let (mut slots, mut used, mut none_answer) = (0u64, 0u64, 1.0f64);
        let mut newest_fill_ratio = 0.0;
        for link in links {
            let link_used = link.used_slots();
            none_answer *= 1.0 - link.estimated_pass_rate(link_used);
            slots += link.bits();
            used += link_used;
            newest_fill_ratio = link_used as f64 / link.bits().max(1) as f64;
        }
        let newest = links.last().expect("a chain always has a link");
        Health {
            links: links.len(),
            capacity: chain.capacity(),
            items: chain.items(),
            target_error_rate: chain.error_rate(),
            fill_ratio: used as f64 / slots.max(1) as f64,
            newest_fill_ratio,
            estimated_error_rate: 1.0 - none_answer,
            items_until_scale_out: newest.capacity().saturating_sub(newest.items()),
            scaling: chain.is_scaling(),
            bytes: chain.payload_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{
        BloomChain, ChainOptions, CounterBits, CountingChain, CountingOptions, HashScheme, Layout,
    };

    #[test]
    fn estimate_follows_the_fill() {
        let options = ChainOptions {
            error_rate: 0.01,
            capacity: 10_000,
            expansion: 0,
            non_scaling: false,
            layout: Layout::Classic,
            hash: HashScheme::Xxh3,
        };
        let mut chain = BloomChain::new(options, u64::MAX).unwrap();
        let empty = Health::of(&chain);
        assert_eq!((empty.fill_ratio, empty.estimated_error_rate), (0.0, 0.0));
        assert_eq!(empty.items_until_scale_out, 10_000);
        for i in 0..10_000u32 {
            chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
        }
        let full = Health::of(&chain);
        // At capacity a filter sized by the usual formulas is about half full, and the estimate
        // lands on the rate it was built for.
        assert!((full.fill_ratio - 0.5).abs() < 0.02, "{full:?}");
        assert!(
            (full.estimated_error_rate / 0.01 - 1.0).abs() < 0.15,
            "{full:?}"
        );
        // Adds that met a false positive were not counted, so a little room is left.
        assert_eq!(full.items_until_scale_out, 10_000 - chain.items());
        assert_eq!(full.target_error_rate, 0.01);
    }

    #[test]
    fn blocked_estimate_follows_the_fill_of_each_block() {
        let options = ChainOptions {
            error_rate: 0.01,
            capacity: 100_000,
            expansion: 0,
            non_scaling: false,
            layout: Layout::Blocked,
            hash: HashScheme::Murmur,
        };
        let mut chain = BloomChain::new(options, u64::MAX).unwrap();
        for i in 0..100_000u32 {
            chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
        }
        // At capacity the expected rate is just under 1%; the estimate from the whole filter's
        // fill alone, fill^k, would say 0.85%.
        let full = Health::of(&chain);
        let from_fill = full.fill_ratio.powi(chain.links()[0].hashes() as i32);
        assert!(from_fill < 0.0087, "{from_fill}");
        assert!(
            (full.estimated_error_rate / 0.01 - 1.0).abs() < 0.05,
            "{full:?}"
        );
    }

    #[test]
    fn counting_fill_counts_nonzero_counters() {
        for bits in [4, 8] {
            let options = CountingOptions {
                error_rate: 0.01,
                capacity: 1000,
                expansion: 2,
                counter_bits: CounterBits::from_bits(bits).unwrap(),
            };
            let mut chain = CountingChain::new(options, u64::MAX).unwrap();
            chain.add(b"one", u64::MAX).unwrap();
            let link = &chain.links()[0];
            let health = Health::of(&chain);
            assert_eq!(link.used_slots(), u64::from(link.hashes()), "{bits} bits");
            assert!(health.scaling);
            assert_eq!(health.items_until_scale_out, 999);
            assert_eq!(health.target_error_rate, 0.01);
            chain.delete(b"one");
            assert_eq!(chain.links()[0].used_slots(), 0);
        }
    }
}
