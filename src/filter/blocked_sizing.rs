//! Sizing a cache-line-blocked link: how many 512-bit blocks, and how many probes per item, so
//! that the false-positive rate at capacity is at most the one requested.
//!
//! An item picks one block and sets `k` bits in it, each at a uniform, independent position (two
//! may coincide). With n items over b blocks, a block holds Binomial(n, 1/b) items; this is
//! bounded by Poisson(λ = n/b), which is wider, so the rate of a filter at capacity is at most
//!
//! ```text
//! FPR(λ, k) = Σ_i Pois(i; λ) · F_k(i)
//! ```
//!
//! where F_k(i) is the chance that all k probes of an item the filter never saw find set bits in
//! a block that holds i items. (Checked numerically for filters of 10 to 1,000 items over 1 to 44
//! blocks: the Binomial sum came to 4 to 99% of the Poisson one, never above.)
//!
//! The textbook F_k(i) = (1 − (1 − 1/512)^(k·i))^k takes the block's expected fill to the k-th
//! power. The fill of a block varies, x^k is convex, and so the true rate is higher than that:
//! by 0.9% at 1e-2, 2.2% at 1e-3 and 3.9% at 1e-4 for the shapes the textbook formula picks. So
//! F_k(i) here is exact for the probing above: if the query's k probes land on j distinct bits
//! (probability Q_k(j)), it is the chance that the k·i probes of the block's items cover those j
//! bits (H_j(k·i)); both come from small recurrences of probabilities, without cancellation.
//!
//! λ and k depend on the error rate only: a link gets ceil(capacity / λ) blocks. Shapes are cached
//! by error rate, since working one out takes a fraction of a millisecond (several at the smallest
//! rates) and every link of a scaling chain, every filter created with the defaults and every
//! header loaded asks again.

use std::sync::Mutex;

/// Bits in one block: a 64-byte cache line.
pub(super) const BLOCK_BITS: u64 = 512;
/// More probes than this would only be chosen for error rates far below any useful one.
const MAX_HASHES: u32 = 32;
/// At this rate a blocked filter already takes all `MAX_HASHES` probes and some 56,000 bits per
/// item; lower rates are refused rather than searched for.
const MIN_ERROR_RATE: f64 = 1e-30;
/// Below this many items per block (over 5·10^8 bits per item) no filter could be allocated.
const MIN_ITEMS_PER_BLOCK: f64 = 1e-6;
/// A block holding more items than it has bits is full to every probe.
const MAX_ITEMS_PER_BLOCK: f64 = BLOCK_BITS as f64;
/// The Poisson sum stops where what is left of it is below this fraction of the rate.
const TAIL: f64 = 1e-9;
/// Items per block the exact tables go up to; far beyond the tail of any λ searched.
const MAX_TABLE_ITEMS: usize = 2048;
const CACHED_SHAPES: usize = 64;

/// The blocked shape for one error rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct BlockedShape {
    pub hashes: u32,
    /// The most items per block, on average, at which the rate holds.
    pub items_per_block: f64,
}

/// Blocks for `capacity` items at `error_rate`, with the probes per item; None when no filter of
/// a representable size meets the rate.
pub(super) fn blocks_for(capacity: u64, error_rate: f64) -> Option<(u64, u32)> {
    if !(MIN_ERROR_RATE..1.0).contains(&error_rate) || capacity == 0 {
        return None;
    }
    let shape = cached_shape(error_rate)?;
    let blocks = (capacity as f64 / shape.items_per_block).ceil();
    if !(blocks >= 1.0 && blocks <= (u64::MAX / 2 / BLOCK_BITS) as f64) {
        return None;
    }
    Some((blocks as u64, shape.hashes))
}

static SHAPES: Mutex<Vec<(u64, Option<BlockedShape>)>> = Mutex::new(Vec::new());

fn cached_shape(error_rate: f64) -> Option<BlockedShape> {
    let key = error_rate.to_bits();
    let lookup = |shapes: &Vec<(u64, Option<BlockedShape>)>| {
        shapes.iter().find(|(k, _)| *k == key).map(|(_, s)| *s)
    };
    if let Some(shape) = lookup(&SHAPES.lock().unwrap_or_else(|p| p.into_inner())) {
        return shape;
    }
    let shape = shape_for(error_rate);
    let mut shapes = SHAPES.lock().unwrap_or_else(|p| p.into_inner());
    if lookup(&shapes).is_none() {
        if shapes.len() == CACHED_SHAPES {
            shapes.remove(0);
        }
        shapes.push((key, shape));
    }
    shape
}

/// The shape with the most items per block (the fewest bits) that meets `error_rate`. The best k
/// is 75 to 85% of the classic filter's, log2(1/p); the search starts there and climbs to the
/// best.
fn shape_for(error_rate: f64) -> Option<BlockedShape> {
    let start = (-0.8 * error_rate.log2())
        .round()
        .clamp(1.0, MAX_HASHES as f64) as u32;
    let shape = |hashes: u32| {
        PerBlock::new(hashes)
            .items_per_block(error_rate)
            .map(|items_per_block| BlockedShape {
                hashes,
                items_per_block,
            })
    };
    let better = |a: Option<BlockedShape>, b: Option<BlockedShape>| match (a, b) {
        (Some(a), Some(b)) => b.items_per_block > a.items_per_block,
        (None, Some(_)) => true,
        _ => false,
    };
    let mut best = shape(start);
    let mut hashes = start;
    while hashes > 1 {
        let lower = shape(hashes - 1);
        if !better(best, lower) {
            break;
        }
        best = lower;
        hashes -= 1;
    }
    if hashes == start {
        while hashes < MAX_HASHES {
            let higher = shape(hashes + 1);
            if !better(best, higher) {
                break;
            }
            best = higher;
            hashes += 1;
        }
    }
    best
}

/// F_k(i) for one k, for i = 0, 1, 2, ... as far as asked, extended on demand.
struct PerBlock {
    hashes: usize,
    /// Q_k(j): the chance that k probes land on exactly j distinct bits, j = 0..=k.
    distinct: Vec<f64>,
    /// For each j, the chance that the probes so far have covered 0..=j of j given bits.
    covered: Vec<Vec<f64>>,
    /// F_k(i) for the i worked out so far.
    rates: Vec<f64>,
}

impl PerBlock {
    fn new(hashes: u32) -> PerBlock {
        let hashes = hashes as usize;
        let bits = BLOCK_BITS as f64;
        let mut distinct = vec![0.0; hashes + 1];
        distinct[0] = 1.0;
        for _ in 0..hashes {
            for j in (0..=hashes).rev() {
                let stay = distinct[j] * j as f64 / bits;
                let arrive = if j > 0 {
                    distinct[j - 1] * (bits - (j - 1) as f64) / bits
                } else {
                    0.0
                };
                distinct[j] = stay + arrive;
            }
        }
        let covered = (0..=hashes)
            .map(|j| {
                let mut states = vec![0.0; j + 1];
                states[0] = 1.0;
                states
            })
            .collect();
        PerBlock {
            hashes,
            distinct,
            covered,
            rates: vec![0.0],
        }
    }

    /// F_k(i), or None past `MAX_TABLE_ITEMS`.
    fn rate(&mut self, items: usize) -> Option<f64> {
        if items > MAX_TABLE_ITEMS {
            return None;
        }
        let bits = BLOCK_BITS as f64;
        while self.rates.len() <= items {
            let mut rate = 0.0;
            for (j, states) in self.covered.iter_mut().enumerate().skip(1) {
                for _ in 0..self.hashes {
                    for h in (0..=j).rev() {
                        let stay = states[h] * (1.0 - (j - h) as f64 / bits);
                        let arrive = if h > 0 {
                            states[h - 1] * (j - h + 1) as f64 / bits
                        } else {
                            0.0
                        };
                        states[h] = stay + arrive;
                    }
                }
                rate += self.distinct[j] * states[j];
            }
            self.rates.push(rate.min(1.0));
        }
        Some(self.rates[items])
    }

    /// Σ_i Pois(i; λ)·F_k(i), plus a bound on the tail it leaves out; None if the table would
    /// have to grow past its limit.
    fn false_positive_rate(&mut self, lambda: f64, error_rate: f64) -> Option<f64> {
        let mut term = (-lambda).exp();
        let mut sum = 0.0;
        let mut items = 0usize;
        loop {
            sum += term * self.rate(items)?;
            items += 1;
            term *= lambda / items as f64;
            if items as f64 > lambda {
                // Past the mode the terms shrink at least geometrically, by λ/(i+1) each.
                let tail = term / (1.0 - lambda / (items + 1) as f64);
                if tail < error_rate * TAIL {
                    return Some(sum + tail);
                }
            }
        }
    }

    /// The largest λ whose rate is at most `error_rate`, found by bisection; the rate only
    /// grows with λ. None if even `MIN_ITEMS_PER_BLOCK` is too many.
    fn items_per_block(&mut self, error_rate: f64) -> Option<f64> {
        let meets = |lambda: f64, this: &mut Self| {
            this.false_positive_rate(lambda, error_rate)
                .is_some_and(|rate| rate <= error_rate)
        };
        let (mut low, mut high) = (1.0, 2.0);
        if meets(low, self) {
            while high <= MAX_ITEMS_PER_BLOCK && meets(high, self) {
                (low, high) = (high, high * 2.0);
            }
        } else {
            (low, high) = (0.5, 1.0);
            while !meets(low, self) {
                if low < MIN_ITEMS_PER_BLOCK {
                    return None;
                }
                (low, high) = (low / 2.0, low);
            }
        }
        while (high - low) > low * 1e-12 {
            let middle = 0.5 * (low + high);
            if meets(middle, self) {
                low = middle;
            } else {
                high = middle;
            }
        }
        Some(low)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook F_k(i), the block's expected fill to the k-th power.
    fn textbook(hashes: u32, items: usize) -> f64 {
        let unset = (1.0 - 1.0 / BLOCK_BITS as f64).powi((hashes as usize * items) as i32);
        (1.0 - unset).powi(hashes as i32)
    }

    #[test]
    fn exact_per_block_rate_is_above_the_textbook_one() {
        let mut table = PerBlock::new(6);
        assert_eq!(table.rate(0), Some(0.0));
        // One item of one probe: the query hits its bit with probability 1/512.
        assert!((PerBlock::new(1).rate(1).unwrap() - 1.0 / 512.0).abs() < 1e-15);
        for items in [10, 50, 100] {
            let exact = table.rate(items).unwrap();
            let mean_fill = textbook(6, items);
            assert!(exact > mean_fill && exact < mean_fill * 1.1, "{items}");
        }
    }

    #[test]
    fn shapes_at_common_rates() {
        // (error rate, hashes, bits per item). 0.01 matches an independent computation of the
        // exact rate (Python, by the occupancy distribution of a block): 51.6234 items per block.
        for (rate, hashes, bits_per_item) in [
            (0.01, 6, 9.918),
            (0.005, 7, 11.536),
            (0.001, 9, 15.546),
            (0.0001, 12, 22.030),
        ] {
            let shape = shape_for(rate).unwrap();
            let per_item = BLOCK_BITS as f64 / shape.items_per_block;
            assert_eq!(shape.hashes, hashes, "{rate}");
            assert!(
                (per_item - bits_per_item).abs() < 0.0005,
                "{rate}: {per_item}"
            );
        }
    }

    #[test]
    fn the_search_finds_the_best_hash_count() {
        for rate in [0.2, 0.05, 0.01, 0.003, 1e-4, 1e-6] {
            let found = shape_for(rate).unwrap();
            for hashes in 1..=24 {
                if let Some(other) = PerBlock::new(hashes).items_per_block(rate) {
                    assert!(other <= found.items_per_block, "{rate}: {hashes}");
                }
            }
        }
    }

    #[test]
    fn absurd_rates_have_no_shape() {
        assert_eq!(blocks_for(100, 5e-301), None);
        assert_eq!(blocks_for(0, 0.01), None);
        assert_eq!(blocks_for(100, 1.0), None);
        assert_eq!(blocks_for(u64::MAX, 0.01), None);
        assert_eq!(blocks_for(1, 0.01), Some((1, 6)));
    }
}
