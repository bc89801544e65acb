//! Add and contains per item for sieved's plain filters (classic and blocked layouts) and counting
//! filters, and for the fastbloom crate with the same bit count and hash count: on a filter that
//! fits in cache and on a 1 GiB one, one item per call and batches of 100.
//!
//! Every filter is a non-scaling one at 1%. The cache-sized plain filters hold 100,000 items
//! (117 KiB classic, 121 KiB blocked); look-ups run on a copy filled to capacity, adds start empty
//! and start over whenever the filter is full. The 1 GiB arrays are filled with random bits at the
//! density of a filter at capacity (half the bits set; half the counters non-zero): filling them
//! by adding 900 million items would take minutes. Look-ups are of items mostly not in the filter,
//! the common case when de-duplicating, so they stop at the first clear probe; adds always touch
//! every probe. The blocked 1 GiB filter holds fewer items (866 million) in the same bytes.
//!
//! fastbloom gets exactly the bits sieved holds, and is run with its default hasher (SipHash-1-3)
//! and with foldhash, the fastest it documents. fastbloom lays its bits out in 512-bit blocks
//! itself, so it is the like-for-like comparison for the blocked layout. Run with
//! `cargo bench --bench filters`, or `cargo bench --bench filters -- cache` (or `1GiB`,
//! `blocked`, `counting`) for a part.
//!
//! `tbf-*` puts a time-windowed filter (TBF.*, four slices each sized for the window's items) beside
//! the Bloom filter for the same items at the same rate, in one group: a look-up probes every slice
//! inside the window, an add one slice after checking the others. `tbf-cache`: 100,000 items a
//! window, 25,000 added in each slice's time (469 KiB of slices); `tbf-1GiB`: four slices of 256 MiB
//! against the 1 GiB filter, half their bits set at random. `cargo bench --bench filters -- tbf`.

// The tests' generator (see its file); this benchmark draws only `next`.
#[allow(dead_code)]
#[path = "../tests/it/support/rng.rs"]
mod rng;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rng::Rng;
use sieved::filter::{
    BloomChain, ChainOptions, CounterBits, CountingChain, CountingOptions, FilterError, HashScheme,
    HashedChain, Layout, Retired, WindowOptions, WindowedFilter, MAX_CHUNK_BYTES,
};
use std::hint::black_box;
use std::time::Duration;

const BATCH: usize = 100;
/// Distinct items cycled through; a power of two so that the next index is a mask.
const POOL: usize = 1 << 20;
const ERROR_RATE: f64 = 0.01;
const CACHE_CAPACITY: u64 = 100_000;
/// Counters take four times the room of bits: 25,000 items is again 117 KiB.
const CACHE_COUNTING_CAPACITY: u64 = 25_000;
/// The capacity whose non-scaling 1% filter is just under 1 GiB of bits.
const GIB_CAPACITY: u64 = 896_000_000;
/// The same for the blocked layout, 9.92 bits per item at 1% instead of 9.59.
const GIB_BLOCKED_CAPACITY: u64 = 866_000_000;
const GIB_COUNTING_CAPACITY: u64 = GIB_CAPACITY / 4;

/// Items shaped like redis-benchmark's `__rand_int__`: twelve decimal digits.
fn item_pool(seed: u64) -> Vec<[u8; 12]> {
    let mut rng = Rng(seed);
    (0..POOL)
        .map(|_| {
            let mut item = [0u8; 12];
            item.copy_from_slice(format!("{:012}", rng.next() % 1_000_000_000_000).as_bytes());
            item
        })
        .collect()
}

/// Cycles through the pool, one item or one batch at a time.
struct Items {
    pool: Vec<[u8; 12]>,
    next: usize,
}

impl Items {
    fn new(seed: u64) -> Items {
        Items {
            pool: item_pool(seed),
            next: 0,
        }
    }

    fn one(&mut self) -> &[u8] {
        self.next = (self.next + 1) & (POOL - 1);
        &self.pool[self.next]
    }

    fn batch(&mut self) -> &[[u8; 12]] {
        self.next = (self.next + BATCH) & (POOL - 1);
        let start = self.next.min(POOL - BATCH);
        &self.pool[start..start + BATCH]
    }
}

fn as_slices(batch: &[[u8; 12]]) -> impl Iterator<Item = &[u8]> {
    batch.iter().map(|item| &item[..])
}

fn chain((layout, hash): (Layout, HashScheme), capacity: u64) -> BloomChain {
    let options = ChainOptions {
        error_rate: ERROR_RATE,
        capacity,
        expansion: 0,
        non_scaling: false,
        layout,
        hash,
    };
    BloomChain::new(options, u64::MAX).expect("the filter fits")
}

fn counting_chain(capacity: u64) -> CountingChain {
    let options = CountingOptions {
        error_rate: ERROR_RATE,
        capacity,
        expansion: 0,
        counter_bits: CounterBits::Four,
    };
    CountingChain::new(options, u64::MAX).expect("the filter fits")
}

/// The filter's bits as words, as fastbloom takes them.
fn words_of(chain: &BloomChain) -> Vec<u64> {
    let bytes = chain.payload_bytes();
    let mut words = Vec::with_capacity((bytes / 8) as usize);
    let mut chunk = Vec::new();
    let mut offset = 0;
    while offset < bytes {
        let len = MAX_CHUNK_BYTES.min(bytes - offset);
        chunk.clear();
        assert!(chain.read_payload(offset, len, &mut chunk));
        words.extend(
            chunk
                .chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().expect("eight bytes"))),
        );
        offset += len;
    }
    words
}

/// Overwrites a filter's whole payload with bytes from `fill`, a chunk at a time.
fn fill_payload(bytes: u64, mut write: impl FnMut(u64, &[u8]), mut fill: impl FnMut(&mut [u8])) {
    let mut chunk = vec![0u8; MAX_CHUNK_BYTES as usize];
    let mut offset = 0;
    while offset < bytes {
        let len = MAX_CHUNK_BYTES.min(bytes - offset) as usize;
        fill(&mut chunk[..len]);
        write(offset, &chunk[..len]);
        offset += len as u64;
    }
}

/// Random bytes: half the bits set, like a Bloom filter at capacity.
fn random_bits(rng: &mut Rng) -> impl FnMut(&mut [u8]) + '_ {
    |chunk| {
        for word in chunk.chunks_mut(8) {
            let bits = rng.next().to_le_bytes();
            word.copy_from_slice(&bits[..word.len()]);
        }
    }
}

/// Random 4-bit counters, each 1 or 0 with even odds.
fn random_counters(rng: &mut Rng) -> impl FnMut(&mut [u8]) + '_ {
    |chunk| {
        let mut bits = 0;
        for (i, byte) in chunk.iter_mut().enumerate() {
            if i % 32 == 0 {
                bits = rng.next();
            }
            *byte = ((bits & 1) | ((bits >> 1) & 1) << 4) as u8;
            bits >>= 2;
        }
    }
}

type FastbloomSip = fastbloom::BloomFilter;
type FastbloomFold = fastbloom::BloomFilter<foldhash::fast::RandomState>;

fn fastbloom_pair(words: Vec<u64>, hashes: u32) -> (FastbloomSip, FastbloomFold) {
    let sip = fastbloom::BloomFilter::from_vec(words.clone()).hashes(hashes);
    let fold = fastbloom::BloomFilter::from_vec(words)
        .hasher(foldhash::fast::RandomState::default())
        .hashes(hashes);
    (sip, fold)
}

/// Look-ups on identical bits in sieved and in both fastbloom set-ups.
fn plain_contains(c: &mut Criterion, label: &str, chain: &BloomChain) {
    let hashes = chain.links()[0].hashes();
    let (sip, fold) = fastbloom_pair(words_of(chain), hashes);
    assert_eq!(sip.num_bits() as u64, chain.links()[0].bits());
    let mut items = Items::new(1);
    let mut group = c.benchmark_group(format!("bloom-{label}/contains"));
    group.throughput(Throughput::Elements(1));
    group.bench_function("sieved", |b| {
        b.iter(|| chain.contains(black_box(items.one())))
    });
    group.bench_function("fastbloom-sip", |b| {
        b.iter(|| sip.contains(black_box(items.one())))
    });
    group.bench_function("fastbloom-foldhash", |b| {
        b.iter(|| fold.contains(black_box(items.one())))
    });
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("sieved/batch100", |b| {
        b.iter(|| {
            let mut found = 0;
            chain.contains_all(as_slices(items.batch()), |hit| found += hit as u32);
            found
        })
    });
    group.bench_function("fastbloom-sip/batch100", |b| {
        b.iter(|| {
            let batch = items.batch();
            batch.iter().filter(|item| sip.contains(&item[..])).count()
        })
    });
    group.bench_function("fastbloom-foldhash/batch100", |b| {
        b.iter(|| {
            let batch = items.batch();
            batch.iter().filter(|item| fold.contains(&item[..])).count()
        })
    });
    group.finish();
}

/// Adds to sieved and to both fastbloom set-ups, starting from `sieved`'s bits. A filter that
/// can fill up during a run (the cache-sized one) is given `restart`, the state to go back to
/// when it is full; fastbloom starts over after as many adds.
fn plain_add(c: &mut Criterion, label: &str, mut sieved: BloomChain, restart: Option<BloomChain>) {
    let hashes = sieved.links()[0].hashes();
    let capacity = sieved.capacity();
    let (mut sip, mut fold) = fastbloom_pair(words_of(&sieved), hashes);
    let mut items = Items::new(3);
    let mut group = c.benchmark_group(format!("bloom-{label}/add"));
    let start_over = |sieved: &mut BloomChain, result: &Result<bool, FilterError>| {
        if result == &Err(FilterError::Full) {
            sieved.clone_from(restart.as_ref().expect("only small filters fill up"));
        }
    };
    group.throughput(Throughput::Elements(1));
    group.bench_function("sieved", |b| {
        b.iter(|| {
            let result = sieved.add(black_box(items.one()), u64::MAX);
            start_over(&mut sieved, &result);
            result
        })
    });
    let mut added = 0;
    let mut counted = |n: u64, filter: &mut dyn FnMut()| {
        added += n;
        if added >= capacity {
            added = 0;
            filter();
        }
    };
    group.bench_function("fastbloom-sip", |b| {
        b.iter(|| {
            counted(1, &mut || sip.clear());
            sip.insert(black_box(items.one()))
        })
    });
    group.bench_function("fastbloom-foldhash", |b| {
        b.iter(|| {
            counted(1, &mut || fold.clear());
            fold.insert(black_box(items.one()))
        })
    });
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("sieved/batch100", |b| {
        b.iter(|| {
            let mut new = 0;
            let mut last = Ok(true);
            sieved.add_all(as_slices(items.batch()), u64::MAX, |result| {
                new += matches!(result, Ok(true)) as u32;
                last = result;
            });
            start_over(&mut sieved, &last);
            new
        })
    });
    group.bench_function("fastbloom-sip/batch100", |b| {
        b.iter(|| {
            counted(BATCH as u64, &mut || sip.clear());
            let batch = items.batch();
            batch.iter().filter(|item| sip.insert(&item[..])).count()
        })
    });
    group.bench_function("fastbloom-foldhash/batch100", |b| {
        b.iter(|| {
            counted(BATCH as u64, &mut || fold.clear());
            let batch = items.batch();
            batch.iter().filter(|item| fold.insert(&item[..])).count()
        })
    });
    group.finish();
}

/// Look-ups on `full`, then adds, starting from `restart` and going back to it whenever the
/// filter is full, or without one going on in `full` itself.
fn counting(c: &mut Criterion, label: &str, full: CountingChain, restart: Option<CountingChain>) {
    let mut items = Items::new(1);
    let mut group = c.benchmark_group(format!("counting-{label}"));
    group.throughput(Throughput::Elements(1));
    group.bench_function("contains", |b| {
        b.iter(|| full.contains(black_box(items.one())))
    });
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("contains/batch100", |b| {
        b.iter(|| {
            let mut found = 0;
            full.contains_all(as_slices(items.batch()), |hit| found += hit as u32);
            found
        })
    });
    group.throughput(Throughput::Elements(1));
    let mut sieved = restart.clone().unwrap_or(full);
    let start_over = |sieved: &mut CountingChain, result: &Result<bool, FilterError>| {
        if result == &Err(FilterError::Full) {
            sieved.clone_from(restart.as_ref().expect("only small filters fill up"));
        }
    };
    group.bench_function("add", |b| {
        b.iter(|| {
            let result = sieved.add(black_box(items.one()), u64::MAX);
            start_over(&mut sieved, &result);
            result
        })
    });
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("add/batch100", |b| {
        b.iter(|| {
            let mut new = 0;
            let mut last = Ok(true);
            sieved.add_all(as_slices(items.batch()), u64::MAX, |result| {
                new += matches!(result, Ok(true)) as u32;
                last = result;
            });
            start_over(&mut sieved, &last);
            new
        })
    });
    group.finish();
}

fn cache_sized(c: &mut Criterion) {
    let mut filler = Items::new(2);
    for (layout, label) in [
        ((Layout::Classic, HashScheme::Murmur), "cache"),
        ((Layout::Classic, HashScheme::Xxh3), "cache-xxh3"),
        ((Layout::Blocked, HashScheme::Xxh3), "cache-blocked"),
    ] {
        let empty = chain(layout, CACHE_CAPACITY);
        let mut full = empty.clone();
        while full.items() < CACHE_CAPACITY {
            full.add(filler.one(), u64::MAX).expect("room left");
        }
        plain_contains(c, label, &full);
        plain_add(c, label, empty.clone(), Some(empty));
    }

    let empty = counting_chain(CACHE_COUNTING_CAPACITY);
    let mut full = empty.clone();
    while full.items() < CACHE_COUNTING_CAPACITY {
        full.add(filler.one(), u64::MAX).expect("room left");
    }
    counting(c, "cache", full, Some(empty));
}

fn gib_sized(c: &mut Criterion) {
    let mut rng = Rng(5);
    for (layout, capacity, label) in [
        ((Layout::Classic, HashScheme::Murmur), GIB_CAPACITY, "1GiB"),
        (
            (Layout::Classic, HashScheme::Xxh3),
            GIB_CAPACITY,
            "1GiB-xxh3",
        ),
        (
            (Layout::Blocked, HashScheme::Xxh3),
            GIB_BLOCKED_CAPACITY,
            "1GiB-blocked",
        ),
    ] {
        let mut half_full = chain(layout, capacity);
        fill_payload(
            half_full.payload_bytes(),
            |offset, data| half_full.write_payload(offset, data).expect("in range"),
            random_bits(&mut rng),
        );
        plain_contains(c, label, &half_full);
        plain_add(c, label, half_full, None);
    }

    let mut half_full = counting_chain(GIB_COUNTING_CAPACITY);
    fill_payload(
        half_full.payload_bytes(),
        |offset, data| half_full.write_payload(offset, data).expect("in range"),
        random_counters(&mut rng),
    );
    counting(c, "1GiB", half_full, None);
}

/// A start of the window far from 0 and on a slice boundary; the window is a minute.
const T0: u64 = 1_700_000_040_000;
const WINDOW_MS: u64 = 60_000;

fn windowed_filter(capacity: u64, layout: Layout) -> WindowedFilter {
    let options = WindowOptions {
        error_rate: ERROR_RATE,
        capacity,
        window_ms: WINDOW_MS,
        slices: 4,
        layout,
    };
    WindowedFilter::new(options, u64::MAX).expect("the filter fits")
}

/// Look-ups and adds of the windowed filter and of the Bloom filter for the same items, one
/// group each, at a time when all four slices are inside the window.
fn windowed_against_plain(
    c: &mut Criterion,
    label: &str,
    (tbf, plain): (&WindowedFilter, &BloomChain),
    restart: Option<(WindowedFilter, BloomChain)>,
) {
    let now = T0 + 3 * WINDOW_MS / 4;
    let mut items = Items::new(3);
    let mut group = c.benchmark_group(format!("tbf-{label}/contains"));
    group.throughput(Throughput::Elements(1));
    group.bench_function("bf", |b| b.iter(|| black_box(plain.contains(items.one()))));
    group.bench_function("tbf", |b| {
        b.iter(|| black_box(tbf.contains(items.one(), now)))
    });
    group.finish();

    let mut group = c.benchmark_group(format!("tbf-{label}/add"));
    group.throughput(Throughput::Elements(1));
    let (mut tbf, mut plain) = (tbf.clone(), plain.clone());
    let mut retired = Retired::default();
    group.bench_function("bf", |b| {
        b.iter(|| match plain.add(items.one(), u64::MAX) {
            Err(FilterError::Full) => plain = restart.as_ref().expect("room").1.clone(),
            added => {
                black_box(added.ok());
            }
        })
    });
    group.bench_function("tbf", |b| {
        b.iter(|| match tbf.add(items.one(), now, &mut retired) {
            Err(FilterError::Full) => tbf = restart.as_ref().expect("room").0.clone(),
            added => {
                black_box(added.ok());
            }
        })
    });
    group.finish();
}

fn windowed(c: &mut Criterion) {
    let mut filler = Items::new(4);
    let mut retired = Retired::default();
    let empty = windowed_filter(CACHE_CAPACITY, Layout::Classic);
    let mut tbf = empty.clone();
    for slice in 0..3 {
        for _ in 0..CACHE_CAPACITY / 4 {
            let at = T0 + slice * WINDOW_MS / 4;
            tbf.add(filler.one(), at, &mut retired).expect("room left");
        }
    }
    let plain_empty = chain((Layout::Classic, HashScheme::Murmur), CACHE_CAPACITY);
    let mut plain = plain_empty.clone();
    while plain.items() < CACHE_CAPACITY * 3 / 4 {
        plain.add(filler.one(), u64::MAX).expect("room left");
    }
    // The last quarter of the window's items is what the add benchmark adds, to both.
    windowed_against_plain(
        c,
        "cache",
        (&tbf, &plain),
        Some((tbf.clone(), plain.clone())),
    );

    let mut rng = Rng(6);
    let mut tbf = windowed_filter(GIB_CAPACITY / 4, Layout::Classic);
    for slice in 0..4 {
        tbf.add(b"opens the slice", T0 + slice * WINDOW_MS / 4, &mut retired)
            .expect("room left");
    }
    fill_payload(
        tbf.payload_bytes(),
        |offset, data| tbf.write_payload(offset, data).expect("in range"),
        random_bits(&mut rng),
    );
    let mut plain = chain((Layout::Classic, HashScheme::Murmur), GIB_CAPACITY);
    fill_payload(
        plain.payload_bytes(),
        |offset, data| plain.write_payload(offset, data).expect("in range"),
        random_bits(&mut rng),
    );
    windowed_against_plain(c, "1GiB", (&tbf, &plain), None);
}

criterion_group! {
    name = filter_benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = cache_sized, gib_sized, windowed
}
criterion_main!(filter_benches);
