//! Per-command counts and latencies, for INFO commandstats and the metrics endpoint.
//!
//! A connection counts into its own `Tally` while it runs a batch of requests, with plain adds,
//! and flushes the tally into the shared `CommandStats` once per batch (before the replies are
//! sent, so a client that has its reply sees its commands counted). A pipeline of a thousand
//! BF.ADDs costs a handful of atomic adds, not thousands; and those go to its thread's stripe of
//! the totals (see `stripes`), so threads running the same command never write the same line.

use crate::stripes::{this_thread_stripe, STRIPES};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Upper bounds of the latency histogram's buckets, in microseconds; one more bucket holds the
/// rest. From the cost of a single probe up to a SAVE of a large dataset.
pub(crate) const LATENCY_BOUNDS_US: [u64; 12] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 100_000, 1_000_000,
];
const BUCKETS: usize = LATENCY_BOUNDS_US.len() + 1;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandTotals {
    pub calls: u64,
    pub usec: u64,
    pub failed: u64,
    pub rejected: u64,
    /// Calls per latency bucket (not cumulative), the last one past every bound.
    pub buckets: [u64; BUCKETS],
}

fn bucket(micros: u64) -> usize {
    LATENCY_BOUNDS_US
        .iter()
        .position(|&bound| micros <= bound)
        .unwrap_or(LATENCY_BOUNDS_US.len())
}

/// How a call of a command ended, for its counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    Succeeded,
    /// Ran and replied with an error.
    Failed,
    /// Refused before running: as in Redis, not a call, since it never ran.
    Rejected,
}

/// One connection's counts since its last flush; usually one or two distinct commands.
#[derive(Default)]
pub(crate) struct Tally {
    counts: Vec<(usize, CommandTotals)>,
}

impl Tally {
    /// Counts a call of the command at `index` in the command table.
    pub(crate) fn record(&mut self, index: usize, call: Call, micros: u64) {
        let totals = match self.counts.iter().position(|(i, _)| *i == index) {
            Some(at) => &mut self.counts[at].1,
            None => {
                self.counts.push((index, CommandTotals::default()));
                &mut self.counts.last_mut().expect("just pushed").1
            }
        };
        if call == Call::Rejected {
            totals.rejected += 1;
            return;
        }
        totals.calls += 1;
        totals.usec += micros;
        totals.failed += (call == Call::Failed) as u64;
        totals.buckets[bucket(micros)] += 1;
    }

    pub(crate) fn flush(&mut self, into: &CommandStats) {
        for (index, totals) in self.counts.drain(..) {
            into.add(index, &totals);
        }
    }
}

#[derive(Default)]
struct SharedTotals {
    calls: AtomicU64,
    usec: AtomicU64,
    failed: AtomicU64,
    rejected: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

/// Totals since start-up (or CONFIG RESETSTAT), one entry per command of the table in each
/// stripe of threads. A stripe's table is made when one of its threads first flushes, so a
/// server keeps about as many as it has threads.
pub struct CommandStats {
    commands: usize,
    stripes: Box<[OnceLock<Box<[SharedTotals]>>]>,
}

impl CommandStats {
    /// Totals for a table of `commands` commands.
    pub fn new(commands: usize) -> CommandStats {
        CommandStats {
            commands,
            stripes: (0..STRIPES).map(|_| OnceLock::new()).collect(),
        }
    }

    fn made_stripes(&self) -> impl Iterator<Item = &[SharedTotals]> {
        self.stripes
            .iter()
            .filter_map(|stripe| stripe.get().map(|table| &**table))
    }
}

fn add(counter: &AtomicU64, n: u64) {
    if n > 0 {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

impl CommandStats {
    fn add(&self, index: usize, totals: &CommandTotals) {
        let table = self.stripes[this_thread_stripe()].get_or_init(|| {
            (0..self.commands)
                .map(|_| SharedTotals::default())
                .collect()
        });
        let shared = &table[index];
        add(&shared.calls, totals.calls);
        add(&shared.usec, totals.usec);
        add(&shared.failed, totals.failed);
        add(&shared.rejected, totals.rejected);
        for (counter, &n) in shared.buckets.iter().zip(&totals.buckets) {
            add(counter, n);
        }
    }

    /// Every command that has been called or rejected, by its index in the command table.
    pub fn used(&self) -> Vec<(usize, CommandTotals)> {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let mut sums = vec![CommandTotals::default(); self.commands];
        for table in self.made_stripes() {
            for (sum, shared) in sums.iter_mut().zip(table) {
                sum.calls += load(&shared.calls);
                sum.usec += load(&shared.usec);
                sum.failed += load(&shared.failed);
                sum.rejected += load(&shared.rejected);
                for (bucket, counter) in sum.buckets.iter_mut().zip(&shared.buckets) {
                    *bucket += load(counter);
                }
            }
        }
        sums.into_iter()
            .enumerate()
            .filter(|(_, totals)| totals.calls + totals.rejected > 0)
            .collect()
    }

    pub fn reset(&self) {
        for shared in self.made_stripes().flatten() {
            let counters = [
                &shared.calls,
                &shared.usec,
                &shared.failed,
                &shared.rejected,
            ];
            for counter in counters.into_iter().chain(&shared.buckets) {
                counter.store(0, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_merge_per_command() {
        let stats = CommandStats::new(4);
        let mut tally = Tally::default();
        tally.record(3, Call::Succeeded, 5);
        tally.record(3, Call::Failed, 30);
        tally.record(3, Call::Rejected, 0);
        tally.record(1, Call::Succeeded, 2_000_000);
        tally.flush(&stats);
        tally.record(3, Call::Succeeded, 10);
        tally.flush(&stats);
        let used = stats.used();
        assert_eq!(used.len(), 2);
        let (index, three) = used[1];
        assert_eq!(index, 3);
        assert_eq!(
            (three.calls, three.usec, three.failed, three.rejected),
            (3, 45, 1, 1)
        );
        assert_eq!(three.buckets[0], 2);
        assert_eq!(three.buckets[2], 1);
        assert_eq!(used[0].1.buckets[BUCKETS - 1], 1);
        stats.reset();
        assert!(stats.used().is_empty());
    }
}
