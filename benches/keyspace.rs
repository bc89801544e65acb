//! The keyspace on its own: memory per key, and the lookups every command starts with (hit,
//! miss, write lookup) plus insert-and-remove, in a database of 200,000 keys. Run with
//! `cargo bench --bench keyspace`; the memory figures are printed first.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sieved::memory::{allocated, CountingAllocator};
use sieved::store::{Db, Value};
use std::hint::black_box;
use std::time::Duration;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const KEYS: usize = 200_000;
const SHARDS: usize = 64;

/// Twelve-digit keys, as redis-benchmark's `__rand_int__` makes them.
fn key(i: usize) -> Vec<u8> {
    format!(
        "{:012}",
        (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000_000_000
    )
    .into_bytes()
}

fn filled(keys: usize) -> Db {
    let db = Db::new(SHARDS);
    for i in 0..keys {
        db.insert(&key(i), Value::String(b"v".to_vec()), 0);
    }
    db
}

/// Bytes the database holds per key, keys and values included. Tables sit at different fill
/// levels between two resizes, so the figure is taken at sizes from 100,000 to 400,000 keys in
/// steps of 25,000 and summarized.
fn report_memory() {
    let mut figures = Vec::new();
    for keys in (100_000..=400_000).step_by(25_000) {
        let before = allocated();
        let db = filled(keys);
        figures.push((allocated() - before) as f64 / keys as f64);
        drop(db);
    }
    let mean = figures.iter().sum::<f64>() / figures.len() as f64;
    let least = figures.iter().copied().fold(f64::MAX, f64::min);
    let most = figures.iter().copied().fold(0.0, f64::max);
    println!(
        "memory per key (12-byte key, 1-byte string), 100k to 400k keys: \
         mean {mean:.1} bytes, least {least:.1}, most {most:.1}"
    );
}

/// This thread's CPU time in nanoseconds: unlike wall time, it leaves out the time other
/// processes take the core, so the figures hold on a busy machine.
#[cfg(target_os = "linux")]
fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill in.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// CPU nanoseconds per lookup, the least and the median of 31 rounds of 200 passes over the
/// 1,024 keys.
#[cfg(target_os = "linux")]
fn report_cpu_time(operations: &[(&str, &dyn Fn() -> usize)]) {
    for (name, operation) in operations {
        let mut rounds: Vec<f64> = (0..31)
            .map(|_| {
                let start = thread_cpu_ns();
                (0..200).for_each(|_| _ = black_box(operation()));
                (thread_cpu_ns() - start) as f64 / (200.0 * 1024.0)
            })
            .collect();
        rounds.sort_by(f64::total_cmp);
        println!(
            "cpu time: {name}: least {:.1} ns per key, median {:.1}",
            rounds[0], rounds[15]
        );
    }
}

fn lookups(c: &mut Criterion) {
    report_memory();
    let db = filled(KEYS);
    let hits: Vec<Vec<u8>> = (0..1024).map(|i| key(i * 193)).collect();
    let misses: Vec<Vec<u8>> = (0..1024).map(|i| key(KEYS + i * 193)).collect();
    #[cfg(target_os = "linux")]
    report_cpu_time(&[
        ("contains-hit", &|| {
            hits.iter().filter(|k| db.contains(k, 1)).count()
        }),
        ("contains-miss", &|| {
            misses.iter().filter(|k| db.contains(k, 1)).count()
        }),
        ("get-mut-hit", &|| {
            hits.iter()
                .filter(|k| db.get_mut(k, 1, |v| v.is_some()))
                .count()
        }),
    ]);
    let mut group = c.benchmark_group("keyspace");
    group.throughput(Throughput::Elements(hits.len() as u64));
    group.bench_function("contains-hit", |b| {
        b.iter(|| hits.iter().filter(|k| db.contains(k, 1)).count())
    });
    group.bench_function("contains-miss", |b| {
        b.iter(|| misses.iter().filter(|k| db.contains(k, 1)).count())
    });
    group.bench_function("get-mut-hit", |b| {
        b.iter(|| {
            hits.iter()
                .filter(|k| db.get_mut(k, 1, |v| v.is_some()))
                .count()
        })
    });
    group.bench_function("insert-remove", |b| {
        b.iter(|| {
            for k in &misses {
                db.insert(k, Value::String(Vec::new()), 0);
            }
            misses.iter().filter(|k| db.remove(k, 1)).count()
        })
    });
    group.finish();
    black_box(db);
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = lookups
}
criterion_main!(benches);
