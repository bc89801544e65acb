//! The measured traffic: closed-loop client threads, one request in flight each, recording every
//! request's latency into the window (baseline or snapshot) that was open when its reply arrived.

use crate::rng::Rng;
use crate::{call, loopback, RawClient};
use std::io;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const WARM_UP: u8 = 0;
pub const BASELINE: u8 = 1;
pub const SNAPSHOT: u8 = 2;
pub const STOP: u8 = 3;

/// Where a request goes: one of the big values (whose pages the snapshot copies while they are
/// being written to) or the small one.
#[derive(Clone, Copy)]
pub enum Workload {
    /// sieved: BF.ADD / BF.EXISTS of random items on `big:<i>` and `small`.
    Bloom { big_keys: u64 },
    /// redis-server: SETBIT / GETBIT at random offsets of the big strings `big:<i>`, the writes
    /// that copy-on-write after its fork has to pay for, and SET / GET of random small keys.
    Strings { big_keys: u64, big_bits: u64 },
}

/// Keys the small-value requests of `Workload::Strings` choose from.
const SMALL_KEYS: u64 = 1_000_000;

impl Workload {
    pub fn describe(&self) -> &'static str {
        match self {
            Workload::Bloom { .. } => "BF.ADD/BF.EXISTS",
            Workload::Strings { .. } => "SETBIT/GETBIT + SET/GET",
        }
    }

    /// Half writes, half reads; each key (the big ones and the small one) equally likely.
    fn request(&self, rng: &mut Rng) -> Vec<Vec<u8>> {
        let write = rng.next() & 1 == 0;
        match *self {
            Workload::Bloom { big_keys } => {
                let target = rng.next() % (big_keys + 1);
                let key = if target < big_keys {
                    format!("big:{target}")
                } else {
                    "small".to_owned()
                };
                let command = if write { "BF.ADD" } else { "BF.EXISTS" };
                let item = format!("{:016x}", rng.next());
                vec![command.into(), key.into(), item.into()]
            }
            Workload::Strings { big_keys, big_bits } => {
                let target = rng.next() % (big_keys + 1);
                if target < big_keys {
                    let offset = (rng.next() % big_bits).to_string();
                    let key = format!("big:{target}");
                    if write {
                        vec!["SETBIT".into(), key.into(), offset.into(), "1".into()]
                    } else {
                        vec!["GETBIT".into(), key.into(), offset.into()]
                    }
                } else {
                    let key = format!("key:{}", rng.next() % SMALL_KEYS);
                    if write {
                        vec!["SET".into(), key.into(), "x".into()]
                    } else {
                        vec!["GET".into(), key.into()]
                    }
                }
            }
        }
    }
}

/// Latencies in nanoseconds, per window.
#[derive(Default)]
pub struct Samples {
    pub baseline: Vec<u64>,
    pub snapshot: Vec<u64>,
}

pub struct Clients {
    pub phase: Arc<AtomicU8>,
    threads: Vec<JoinHandle<io::Result<Samples>>>,
}

impl Clients {
    /// Starts `count` connections to `port`, each sending requests until the phase is `STOP`.
    pub fn start(port: u16, count: usize, workload: Workload) -> io::Result<Clients> {
        let phase = Arc::new(AtomicU8::new(WARM_UP));
        let mut threads = Vec::with_capacity(count);
        for index in 0..count {
            let mut connection = RawClient::try_connect(loopback(port))?;
            let phase = phase.clone();
            let mut rng = Rng::seeded(0x5EED_0000 + index as u64);
            threads.push(std::thread::spawn(move || {
                let mut samples = Samples::default();
                loop {
                    let request = workload.request(&mut rng);
                    let args: Vec<&[u8]> = request.iter().map(Vec::as_slice).collect();
                    let sent = Instant::now();
                    call(&mut connection, &args)?;
                    let latency = sent.elapsed().as_nanos() as u64;
                    match phase.load(Ordering::Relaxed) {
                        BASELINE => samples.baseline.push(latency),
                        SNAPSHOT => samples.snapshot.push(latency),
                        STOP => return Ok(samples),
                        _ => {}
                    }
                }
            }));
        }
        Ok(Clients { phase, threads })
    }

    pub fn enter(&self, phase: u8) {
        self.phase.store(phase, Ordering::Relaxed);
    }

    /// Stops every client and merges what they recorded.
    pub fn finish(self) -> io::Result<Samples> {
        self.enter(STOP);
        let mut all = Samples::default();
        for thread in self.threads {
            let samples = thread
                .join()
                .map_err(|_| io::Error::other("a client thread panicked"))??;
            all.baseline.extend(samples.baseline);
            all.snapshot.extend(samples.snapshot);
        }
        Ok(all)
    }
}

/// The figures of one window.
pub struct Summary {
    pub requests: usize,
    pub per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
    pub p999: Duration,
    pub max: Duration,
    /// Requests that took longer than `SLOW`.
    pub slow: usize,
}

pub const SLOW: Duration = Duration::from_millis(10);

impl Summary {
    pub fn of(mut latencies: Vec<u64>, window: Duration) -> Summary {
        latencies.sort_unstable();
        let rank = |q: f64| {
            let index = ((q * latencies.len() as f64).ceil() as usize).saturating_sub(1);
            Duration::from_nanos(latencies.get(index).copied().unwrap_or(0))
        };
        let slow_ns = SLOW.as_nanos() as u64;
        Summary {
            requests: latencies.len(),
            per_second: latencies.len() as f64 / window.as_secs_f64().max(1e-9),
            p50: rank(0.50),
            p99: rank(0.99),
            p999: rank(0.999),
            max: Duration::from_nanos(latencies.last().copied().unwrap_or(0)),
            slow: latencies.len() - latencies.partition_point(|&ns| ns <= slow_ns),
        }
    }
}
