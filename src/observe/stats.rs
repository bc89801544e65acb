//! Server-wide counters for INFO stats. Connections add their counts once per batch of requests,
//! not once per command, so the counters' cache line is not fought over.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Like Redis: the commands-processed counter is sampled every 100 ms, and the instantaneous
/// rate is the mean of the last 16 samples' rates (1.6 s of history).
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(100);
const SAMPLES: usize = 16;

#[derive(Default)]
pub struct Stats {
    pub connections_received: AtomicU64,
    pub commands_processed: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub expired_keys: AtomicU64,
    pub rejected_connections: AtomicU64,
    /// Bytes the connections' request buffers hold now: a gauge, which RESETSTAT leaves alone.
    pub query_buffers: AtomicU64,
    ops_samples: Mutex<OpsSamples>,
}

#[derive(Default)]
struct OpsSamples {
    rates: [u64; SAMPLES],
    next: usize,
    last_ms: u64,
    last_total: u64,
}

impl Stats {
    pub fn add(counter: &AtomicU64, n: u64) {
        if n > 0 {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub fn sample_ops(&self, now_ms: u64) {
        let total = Self::get(&self.commands_processed);
        let mut samples = self.ops_samples.lock().unwrap_or_else(|p| p.into_inner());
        if samples.last_ms != 0 && now_ms > samples.last_ms {
            let ops = total.saturating_sub(samples.last_total);
            let index = samples.next;
            samples.rates[index] = ops * 1000 / (now_ms - samples.last_ms);
            samples.next = (index + 1) % SAMPLES;
        }
        samples.last_ms = now_ms;
        samples.last_total = total;
    }

    pub fn instantaneous_ops_per_sec(&self) -> u64 {
        let samples = self.ops_samples.lock().unwrap_or_else(|p| p.into_inner());
        samples.rates.iter().sum::<u64>() / SAMPLES as u64
    }

    /// CONFIG RESETSTAT: the counters start again from zero.
    pub fn reset(&self) {
        for counter in [
            &self.connections_received,
            &self.commands_processed,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.expired_keys,
            &self.rejected_connections,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        *self.ops_samples.lock().unwrap_or_else(|p| p.into_inner()) = OpsSamples::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instantaneous_rate_averages_the_samples() {
        let stats = Stats::default();
        stats.sample_ops(1_000);
        for step in 1..=SAMPLES as u64 {
            Stats::add(&stats.commands_processed, 50);
            stats.sample_ops(1_000 + step * 100);
        }
        assert_eq!(stats.instantaneous_ops_per_sec(), 500);
        stats.reset();
        assert_eq!(stats.instantaneous_ops_per_sec(), 0);
    }
}
