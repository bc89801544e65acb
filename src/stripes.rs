//! State that every thread writes on every batch of requests, split into one stripe per thread.
//!
//! A counter or lock word that every core writes moves its cache line from core to core on each
//! write; on a machine of many cores that transfer, not the add, is the cost, and it serializes
//! the writers. So each thread writes a stripe of its own, on a cache line of its own, and the
//! rare reader (INFO, EXEC) visits them all.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Threads beyond this share stripes (the thread after the last takes the first again): still
/// correct, only less private.
pub(crate) const STRIPES: usize = 64;

/// Keeps its value on a cache line of its own: 128 bytes, since some processors fetch lines in
/// pairs.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Padded<T>(pub(crate) T);

/// This thread's stripe: threads take stripes in the order they first ask.
pub(crate) fn this_thread_stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<Option<usize>> = const { Cell::new(None) };
    }
    STRIPE.with(|stripe| {
        *stripe.get().get_or_insert_with(|| {
            let assigned = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
            stripe.set(Some(assigned));
            assigned
        })
    })
}

/// A counter that threads add to without sharing a cache line; reading it sums the stripes.
pub struct Counter {
    stripes: Box<[Padded<AtomicU64>]>,
}

impl Default for Counter {
    fn default() -> Self {
        Counter {
            stripes: (0..STRIPES).map(|_| Padded::default()).collect(),
        }
    }
}

impl Counter {
    pub(crate) fn add(&self, n: u64) {
        self.stripes[this_thread_stripe()]
            .0
            .fetch_add(n, Ordering::Relaxed);
    }

    /// Takes `n` away. A stripe may wrap below zero; the sum, taken modulo 2^64 as well, is
    /// still right.
    pub(crate) fn sub(&self, n: u64) {
        self.stripes[this_thread_stripe()]
            .0
            .fetch_sub(n, Ordering::Relaxed);
    }

    /// The total. Adds that race with the reading may or may not be in it, as with one atomic.
    pub(crate) fn get(&self) -> u64 {
        self.stripes.iter().fold(0u64, |sum, stripe| {
            sum.wrapping_add(stripe.0.load(Ordering::Relaxed))
        })
    }

    pub(crate) fn reset(&self) {
        for stripe in self.stripes.iter() {
            stripe.0.store(0, Ordering::Relaxed);
        }
    }
}

/// Lock acquisitions that found the lock held and had to wait, counted only for the scaling
/// measurement (benches/scaling.rs, feature `scaling-bench`): the keyspace's shard and value
/// locks, the isolation stripes, and the append-only file's lock, which also sums how long
/// writes held it.
#[cfg(feature = "scaling-bench")]
pub(crate) mod lock_waits {
    use super::Counter;
    use std::sync::{LazyLock, TryLockError, TryLockResult};

    pub(crate) static KEYSPACE: LazyLock<Counter> = LazyLock::new(Counter::default);
    pub(crate) static ISOLATION: LazyLock<Counter> = LazyLock::new(Counter::default);
    pub(crate) static LOG: LazyLock<Counter> = LazyLock::new(Counter::default);
    /// Nanoseconds write commands held the append-only file's lock (`aof::Appender`).
    pub(crate) static LOG_HELD_NS: LazyLock<Counter> = LazyLock::new(Counter::default);

    /// The guard if the lock was free (or poisoned, which the callers ignore); None if it was
    /// held, counted in `waits`, and the caller then waits for it as usual.
    pub(crate) fn uncontended<G>(attempt: TryLockResult<G>, waits: &Counter) -> Option<G> {
        match attempt {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => {
                waits.add(1);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_sums_what_every_thread_added_and_took_away() {
        let counter = Counter::default();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..1000 {
                        counter.add(3);
                    }
                });
            }
        });
        // Taken away on another thread than the one that added: its stripe wraps.
        std::thread::scope(|scope| {
            scope.spawn(|| counter.sub(2000));
        });
        assert_eq!(counter.get(), 10_000);
        counter.reset();
        assert_eq!(counter.get(), 0);
    }
}
