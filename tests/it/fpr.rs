//! Statistical guarantees of the Bloom filter: no false negatives, and a false-positive rate at
//! capacity within the requested rate.
//!
//! Items come from a fixed-seed generator, so every run measures the same numbers; the margins are
//! there so that the tests state what a correct filter guarantees, not what one seed happened to
//! give. Members and probes are disjoint by construction (different tag bytes).
//!
//! What is bounded is the rate a filter has on average over the ways its items can fall, which is
//! what sizing promises; one filter's own rate varies around it. Each test therefore measures
//! several filters, each with its own items and probes, and compares the mean with p plus four
//! standard errors: the standard error measured across the filters, or, if larger, the one that
//! the probes alone would give, sqrt(p(1-p)/Q) for Q probes in all. A mean above that bound would
//! happen by chance less than once in thousands of runs.
//!
//! Every test runs on both layouts, and the classic one under both hash schemes: RedisBloom's
//! (MurmurHash64A, plain double hashing, the default) and sieved's own (xxh3, mixed probes). A
//! classic filter pools its bits over the whole array, so one filter's rate hardly moves from
//! the mean; at exactly its capacity a non-scaling classic filter
//! has a true rate about 0.3% (relative) above p, because its hash count is rounded up from
//! ln2 · bits per item, a hundredth of the margin. A blocked filter's rate varies more from one
//! filter to the next, since its blocks fill unevenly: about 12% (one standard deviation) for a
//! filter of 50 blocks, shrinking with the square root of the block count. Its expected rate at
//! capacity is at most p (filter/blocked_sizing.rs); the textbook blocked formula it replaced
//! would have put it 0.9%, 2.2% and 3.9% above p at 1e-2, 1e-3 and 1e-4.

use sieved::filter::{BloomChain, ChainOptions, HashScheme, Layout};

const NO_LIMIT: u64 = u64::MAX;

struct Items {
    state: u64,
    tag: u8,
}

/// splitmix64: a tiny, well-mixed, reproducible stream of 64-bit values.
impl Items {
    fn new(seed: u64, tag: u8) -> Items {
        Items { state: seed, tag }
    }

    fn next_item(&mut self) -> [u8; 9] {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let mut item = [self.tag; 9];
        item[1..].copy_from_slice(&z.to_le_bytes());
        item
    }
}

/// Each layout, and for the classic one each hash scheme (a blocked filter always uses xxh3).
const LAYOUTS: [(Layout, HashScheme); 3] = [
    (Layout::Classic, HashScheme::Murmur),
    (Layout::Classic, HashScheme::Xxh3),
    (Layout::Blocked, HashScheme::Xxh3),
];

fn filter(
    (layout, hash): (Layout, HashScheme),
    error_rate: f64,
    capacity: u64,
    expansion: u32,
) -> BloomChain {
    let options = ChainOptions {
        error_rate,
        capacity,
        expansion,
        non_scaling: false,
        layout,
        hash,
    };
    BloomChain::new(options, NO_LIMIT).expect("filter")
}

/// Fills `chain` with `count` members, then returns the measured false-positive rate over
/// `probes` non-members, asserting on the way that every member is found. `seed` picks the
/// members and the probes.
fn fill_and_measure(chain: &mut BloomChain, count: u64, probes: u64, seed: u64) -> f64 {
    let mut members = Items::new(seed, b'm');
    for _ in 0..count {
        chain.add(&members.next_item(), NO_LIMIT).expect("add");
    }
    let mut members = Items::new(seed, b'm');
    for i in 0..count {
        assert!(
            chain.contains(&members.next_item()),
            "false negative for member {i}"
        );
    }
    let mut others = Items::new(seed, b'x');
    let positives = (0..probes)
        .filter(|_| chain.contains(&others.next_item()))
        .count();
    positives as f64 / probes as f64
}

/// The mean rate over `filters` filters that share `probes` probes, and the bound it must meet.
struct Measured {
    mean: f64,
    bound: f64,
}

/// Runs `measure_one(seed, probes)` for `filters` seeds, each with an equal share of `probes`.
fn over_filters(
    p: f64,
    filters: u64,
    probes: u64,
    mut measure_one: impl FnMut(u64, u64) -> f64,
) -> Measured {
    let rates: Vec<f64> = (0..filters)
        .map(|run| measure_one(1 + run, probes / filters))
        .collect();
    let n = filters as f64;
    let mean = rates.iter().sum::<f64>() / n;
    let across = if filters > 1 {
        let variance = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (variance / n).sqrt()
    } else {
        0.0
    };
    let from_probes = (p * (1.0 - p) / probes as f64).sqrt();
    Measured {
        mean,
        bound: p + 4.0 * across.max(from_probes),
    }
}

/// How far above `p` RedisBloom's scheme is allowed to be where its probes correlate: plain
/// double hashing ((h1 + i·h2) mod bits, unmixed) makes two items that share h1 and h2 nearly
/// share many bits, which shows with many hashes in a small array. Measured here at 1,000 items:
/// 1.22 p at 1e-4 and 1.30 p at 5e-5; a seven-link chain at 1e-4, 1.28 p. RedisBloom has the
/// same rates (its bits are identical); xxh3's mixed probes stay within the usual margin.
const MURMUR_EXCESS: f64 = 1.5;

/// The factor over `p` that `layout` is held to where probes correlate.
fn excess((_, hash): (Layout, HashScheme)) -> f64 {
    match hash {
        HashScheme::Murmur => MURMUR_EXCESS,
        HashScheme::Xxh3 => 1.0,
    }
}

fn check(label: &str, p: f64, measured: Measured) {
    check_with_excess(label, p, measured, 1.0);
}

/// `check`, with the bound raised by `excess - 1` times `p`.
fn check_with_excess(label: &str, p: f64, mut measured: Measured, excess: f64) {
    measured.bound += (excess - 1.0) * p;
    println!(
        "{label} p={p}: measured {:.7} ({:.3} p), bound {:.3} p",
        measured.mean,
        measured.mean / p,
        measured.bound / p
    );
    assert!(
        measured.mean <= measured.bound,
        "{label} p={p}: measured {}, bound {}",
        measured.mean,
        measured.bound
    );
}

#[test]
fn no_false_negatives_over_a_million_items() {
    for layout in LAYOUTS {
        let mut chain = filter(layout, 0.01, 1_000_000, 2);
        fill_and_measure(&mut chain, 1_000_000, 0, 1);
        assert_eq!(chain.links().len(), 1);
    }
}

#[test]
fn no_false_negatives_across_many_links() {
    for layout in LAYOUTS {
        let mut chain = filter(layout, 0.01, 1000, 2);
        fill_and_measure(&mut chain, 1_000_000, 0, 1);
        assert!(chain.links().len() >= 10, "{} links", chain.links().len());
    }
}

#[test]
fn non_scaling_filters_meet_their_rate_at_capacity() {
    for layout in LAYOUTS {
        for (p, probes) in [(0.01, 1_000_000), (0.001, 2_000_000), (0.0001, 4_000_000)] {
            let capacity = 100_000;
            let measured = over_filters(p, 4, probes, |seed, probes| {
                let mut chain = filter(layout, p, capacity, 0);
                fill_and_measure(&mut chain, capacity, probes, seed)
            });
            let bits = filter(layout, p, capacity, 0).links()[0].bits();
            let label = format!(
                "{layout:?} non-scaling, {:.3} bits per item,",
                bits as f64 / capacity as f64
            );
            check(&label, p, measured);
        }
    }
}

#[test]
fn scaled_chains_meet_their_rate() {
    for layout in LAYOUTS {
        for (p, probes) in [(0.01, 1_000_000), (0.001, 2_000_000), (0.0001, 4_000_000)] {
            // Start small so that 127,000 items make a chain of seven links, the last one full.
            // The first links are small, so sixteen chains.
            let measured = over_filters(p, 16, probes, |seed, probes| {
                let mut chain = filter(layout, p, 1000, 2);
                let rate = fill_and_measure(&mut chain, 127_000, probes, seed);
                assert_eq!(chain.links().len(), 7);
                rate
            });
            let label = format!("{layout:?} scaled, 7 links,");
            check_with_excess(&label, p, measured, excess(layout));
        }
    }
}

#[test]
fn autocreated_defaults_meet_their_rate() {
    for layout in LAYOUTS {
        let measured = over_filters(0.01, 4, 1_000_000, |seed, probes| {
            let mut chain = filter(layout, 0.01, 100, 2);
            fill_and_measure(&mut chain, 100_000, probes, seed)
        });
        check(&format!("{layout:?} auto-created"), 0.01, measured);
    }
}

/// A blocked filter of ten million items (two hundred thousand blocks), whose own rate is all but
/// its expected one: the sizing holds at scale, not only on average over small filters.
#[test]
fn a_large_blocked_filter_meets_its_rate() {
    let (p, capacity) = (0.01, 10_000_000);
    let measured = over_filters(p, 1, 2_000_000, |seed, probes| {
        let mut chain = filter((Layout::Blocked, HashScheme::Xxh3), p, capacity, 0);
        fill_and_measure(&mut chain, capacity, probes, seed)
    });
    check("Blocked non-scaling, 10 million items,", p, measured);
}

/// Small arrays probed many times are where correlated probe positions show: plain double hashing
/// measured 1.17 × p here (classic, 1e-4), RedisBloom's scheme 1.22 × p (`MURMUR_EXCESS`). Eight
/// filters of 1,000 items; a blocked one has 20 to 50 blocks.
#[test]
fn small_filters_meet_their_rate() {
    for layout in LAYOUTS {
        for p in [0.01, 0.001, 0.0001, 0.00005] {
            let measured = over_filters(p, 8, 10_000_000, |seed, probes| {
                let mut chain = filter(layout, p, 1000, 0);
                fill_and_measure(&mut chain, 1000, probes, 100 + seed)
            });
            let label = format!("{layout:?} small, 1,000 items,");
            check_with_excess(&label, p, measured, excess(layout));
        }
    }
}
