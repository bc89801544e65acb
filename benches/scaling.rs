//! The many-core measurement (docs/architecture.md, "Many cores"). Each thread does what a
//! connection does for one batch of pipelined requests, minus the socket
//! (`server::bench_support::Connection::run_batch`: the isolation guard, every request through
//! `cmd::execute`, blocked clients served, the server's counters and the commandstats tally).
//! Run from 1, 2, 4 and 8 threads, it counts the lock acquisitions that had to wait, and
//! measures what a cache line that two cores write costs; the model in the document predicts
//! 16 to 64 cores from these.
//!
//! The feature `scaling-bench` opens the server's hooks and counts the lock waits; it is a
//! bench target of its own, run in the bench (release) profile, about 3 minutes to build and
//! 17 s to run:
//! `cargo bench --bench scaling --features scaling-bench`

use sieved::config::Config;
use sieved::protocol::encode_request;
use sieved::server::bench_support::{self, Connection, StripedCounter};
use sieved::server::Shared;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const THREADS: [usize; 4] = [1, 2, 4, 8];
/// Requests per batch: a modest pipeline, so that per-batch costs still show.
const PIPELINE: usize = 16;
/// Distinct batches each thread cycles through: 16,384 items per thread, which every filter has
/// room for, so adds never grow a filter during a run.
const BATCHES: usize = 1024;
const RUN: Duration = Duration::from_millis(1000);
const FILTER_CAPACITY: &str = "200000";

struct Workload {
    name: &'static str,
    command: &'static str,
    filters: usize,
    appendonly: bool,
}

const WORKLOADS: [Workload; 4] = [
    Workload {
        name: "BF.EXISTS over 16 filters",
        command: "BF.EXISTS",
        filters: 16,
        appendonly: false,
    },
    Workload {
        name: "BF.ADD over 16 filters",
        command: "BF.ADD",
        filters: 16,
        appendonly: false,
    },
    Workload {
        name: "BF.ADD to 1 filter",
        command: "BF.ADD",
        filters: 1,
        appendonly: false,
    },
    Workload {
        name: "BF.ADD over 16 filters, appendonly",
        command: "BF.ADD",
        filters: 16,
        appendonly: true,
    },
];

/// This thread's CPU time: unlike wall time, it leaves out the time other threads and processes
/// had the core, which on a 2-core machine with 8 threads is most of it.
fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the struct it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

fn server(workload: &Workload) -> Arc<Shared> {
    let mut config = Config::default_for_tests();
    config.appendonly = workload.appendonly;
    let shared = Arc::new(Shared::new(config, "127.0.0.1:0".parse().expect("address")));
    let mut input = Vec::new();
    for filter in 0..workload.filters {
        let key = format!("filter:{filter}");
        encode_request(
            &mut input,
            &[
                b"BF.RESERVE",
                key.as_bytes(),
                b"0.01",
                FILTER_CAPACITY.as_bytes(),
            ],
        );
    }
    Connection::new(&shared).run_batch(&shared, &input);
    shared
}

/// The pipelines one thread sends: its own items, spread over the filters.
fn pipelines(workload: &Workload, thread: usize) -> Vec<Vec<u8>> {
    (0..BATCHES)
        .map(|batch| {
            let mut input = Vec::new();
            for request in 0..PIPELINE {
                let n = batch * PIPELINE + request;
                let key = format!("filter:{}", n % workload.filters);
                let item = format!("item:{thread}:{n}");
                encode_request(
                    &mut input,
                    &[workload.command.as_bytes(), key.as_bytes(), item.as_bytes()],
                );
            }
            input
        })
        .collect()
}

/// What one thread did in a run.
#[derive(Default)]
struct Done {
    commands: u64,
    cpu_ns: u64,
}

fn serve_batches(
    shared: &Arc<Shared>,
    workload: &Workload,
    thread: usize,
    start: &Barrier,
    stop: &AtomicBool,
) -> Done {
    let inputs = pipelines(workload, thread);
    let mut connection = Connection::new(shared);
    let mut done = Done::default();
    start.wait();
    let cpu_started = thread_cpu_ns();
    for input in inputs.iter().cycle() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        done.commands += connection.run_batch(shared, input);
    }
    done.cpu_ns = thread_cpu_ns() - cpu_started;
    done
}

/// One run's figures.
struct Run {
    threads: usize,
    /// CPU time over wall time: how many cores the run really had, on a shared machine.
    cores_used: f64,
    commands_per_sec: f64,
    cpu_ns_per_command: f64,
    keyspace_waits: u64,
    isolation_waits: u64,
    log_waits: u64,
    log_held_ns_per_command: f64,
}

fn run(workload: &Workload, threads: usize) -> Run {
    let shared = server(workload);
    bench_support::reset_lock_waits();
    let start = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    let (done, elapsed) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let (shared, start, stop) = (&shared, &start, &stop);
                scope.spawn(move || serve_batches(shared, workload, thread, start, stop))
            })
            .collect();
        start.wait();
        let began = Instant::now();
        std::thread::sleep(RUN);
        stop.store(true, Ordering::Relaxed);
        let done: Vec<Done> = workers
            .into_iter()
            .map(|worker| worker.join().expect("worker"))
            .collect();
        (done, began.elapsed())
    });
    let commands: u64 = done.iter().map(|d| d.commands).sum();
    let cpu_ns: u64 = done.iter().map(|d| d.cpu_ns).sum();
    let waits = bench_support::lock_waits();
    Run {
        threads,
        cores_used: cpu_ns as f64 / elapsed.as_nanos() as f64,
        commands_per_sec: commands as f64 / elapsed.as_secs_f64(),
        cpu_ns_per_command: cpu_ns as f64 / commands as f64,
        keyspace_waits: waits.keyspace,
        isolation_waits: waits.isolation,
        log_waits: waits.log,
        log_held_ns_per_command: waits.log_held_ns as f64 / commands as f64,
    }
}

/// One atomic on a cache line of its own, as `stripes::Padded` keeps each stripe.
#[repr(align(128))]
struct Padded(AtomicU64);

/// Nanoseconds of CPU per atomic add when two threads add to one counter, and when each adds to
/// a line of its own (the server's striped counter), with the cores each had: the difference
/// is what moving a cache line between these two cores costs.
fn line_transfer_ns() -> ((f64, f64), (f64, f64)) {
    const ADDS: u64 = 4_000_000;
    let shared_line = Padded(AtomicU64::new(0));
    let striped = StripedCounter::default();
    // Unless both threads had a core at once, the figures say nothing: the CPU time over the
    // wall time tells.
    let per_add = |add: &(dyn Fn() + Sync)| {
        let began = Instant::now();
        let start = Barrier::new(2);
        let cpu_ns: u64 = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let start = &start;
                    scope.spawn(move || {
                        start.wait();
                        let began = thread_cpu_ns();
                        (0..ADDS).for_each(|_| add());
                        thread_cpu_ns() - began
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().expect("thread")).sum()
        });
        let cores = cpu_ns as f64 / began.elapsed().as_nanos() as f64;
        (cpu_ns as f64 / (2 * ADDS) as f64, cores)
    };
    let shared_ns = per_add(&|| {
        shared_line.0.fetch_add(1, Ordering::Relaxed);
    });
    let striped_ns = per_add(&|| striped.add(1));
    (shared_ns, striped_ns)
}

fn main() {
    println!("\nper batch of {PIPELINE} pipelined requests; {RUN:?} per run; CPU time per thread");
    let ((shared_ns, shared_cores), (striped_ns, striped_cores)) = line_transfer_ns();
    println!(
        "atomic add from 2 threads: one shared line {shared_ns:.1} ns ({shared_cores:.2} cores \
         used), one line each {striped_ns:.1} ns ({striped_cores:.2} cores used)"
    );
    for workload in &WORKLOADS {
        println!("\n{}", workload.name);
        println!(
            "threads  cores used  commands/s  per thread  CPU ns/cmd  keyspace waits  isolation waits  \
             log waits  log held ns/cmd"
        );
        for threads in THREADS {
            let run = run(workload, threads);
            println!(
                "{:>7}  {:>10.2}  {:>10.0}  {:>10.0}  {:>10.1}  {:>14}  {:>15}  {:>9}  {:>15.1}",
                run.threads,
                run.cores_used,
                run.commands_per_sec,
                run.commands_per_sec / run.threads as f64,
                run.cpu_ns_per_command,
                run.keyspace_waits,
                run.isolation_waits,
                run.log_waits,
                run.log_held_ns_per_command,
            );
        }
    }
}
