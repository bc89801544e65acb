//! Server-wide counters for INFO stats. Connections add their counts once per batch of requests,
//! not once per command, each thread into a stripe of its own (`stripes::Counter`), so no cache
//! line is fought over however many cores serve; INFO sums the stripes.

use crate::stripes::Counter;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Like Redis: the commands-processed counter is sampled every 100 ms, and the instantaneous
/// rate is the mean of the last 16 samples' rates (1.6 s of history).
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(100);
const SAMPLES: usize = 16;

#[derive(Default)]
pub struct Stats {
    pub connections_received: Counter,
    pub commands_processed: Counter,
    pub net_input_bytes: Counter,
    pub net_output_bytes: Counter,
    pub expired_keys: Counter,
    /// Keys removed to bring memory under `maxmemory`.
    pub evicted_keys: Counter,
    pub rejected_connections: Counter,
    /// Tasks (connections, replication links, background work) that panicked and were ended.
    pub panicked_tasks: Counter,
    /// Bytes the connections' request buffers hold now: a gauge, which RESETSTAT leaves alone.
    pub query_buffers: AtomicU64,
    ops_samples: Mutex<OpsSamples>,
}

/// The last samples of the counters INFO gives instantaneous rates of, as Redis keeps them.
#[derive(Default)]
struct OpsSamples {
    commands: Series,
    input_bytes: Series,
    output_bytes: Series,
    last_ms: u64,
}

/// One counter's rates per second over the last `SAMPLES` samples.
#[derive(Default)]
struct Series {
    rates: [u64; SAMPLES],
    next: usize,
    last_total: u64,
}

impl Series {
    /// Notes the counter's `total` now, `elapsed_ms` after the previous sample (0: the first).
    fn sample(&mut self, total: u64, elapsed_ms: u64) {
        let grown = total.saturating_sub(self.last_total) * 1000;
        if let Some(rate) = grown.checked_div(elapsed_ms) {
            self.rates[self.next] = rate;
            self.next = (self.next + 1) % SAMPLES;
        }
        self.last_total = total;
    }

    fn mean(&self) -> u64 {
        self.rates.iter().sum::<u64>() / SAMPLES as u64
    }
}

impl Stats {
    pub fn add(counter: &Counter, n: u64) {
        if n > 0 {
            counter.add(n);
        }
    }

    pub fn get(counter: &Counter) -> u64 {
        counter.get()
    }

    /// Bytes the connections' request buffers hold now.
    pub fn query_buffer_bytes(&self) -> u64 {
        self.query_buffers.load(Ordering::Relaxed)
    }

    pub fn sample_ops(&self, now_ms: u64) {
        let mut samples = self.samples();
        let elapsed_ms = match samples.last_ms {
            0 => 0,
            last => now_ms.saturating_sub(last),
        };
        if samples.last_ms != 0 && elapsed_ms == 0 {
            return;
        }
        samples
            .commands
            .sample(Self::get(&self.commands_processed), elapsed_ms);
        samples
            .input_bytes
            .sample(Self::get(&self.net_input_bytes), elapsed_ms);
        samples
            .output_bytes
            .sample(Self::get(&self.net_output_bytes), elapsed_ms);
        samples.last_ms = now_ms;
    }

    fn samples(&self) -> std::sync::MutexGuard<'_, OpsSamples> {
        self.ops_samples.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn instantaneous_ops_per_sec(&self) -> u64 {
        self.samples().commands.mean()
    }

    /// Network input and output in KiB per second, as INFO's instantaneous_*_kbps.
    pub fn instantaneous_kbps(&self) -> (f64, f64) {
        let samples = self.samples();
        let kbps = |series: &Series| series.mean() as f64 / 1024.0;
        (kbps(&samples.input_bytes), kbps(&samples.output_bytes))
    }

    /// CONFIG RESETSTAT: the counters start again from zero.
    pub fn reset(&self) {
        for counter in [
            &self.connections_received,
            &self.commands_processed,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.expired_keys,
            &self.evicted_keys,
            &self.rejected_connections,
            &self.panicked_tasks,
        ] {
            counter.reset();
        }
        *self.samples() = OpsSamples::default();
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
        assert_eq!(stats.instantaneous_kbps(), (0.0, 0.0));
        stats.reset();
        assert_eq!(stats.instantaneous_ops_per_sec(), 0);
    }
}
