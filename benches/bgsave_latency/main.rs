//! Latency while a 2 GB snapshot is written, sieved beside redis-server.
//!
//! Starts release sieved and Debian's redis-server in turn, each on a free loopback port with a
//! temporary data directory and no periodic snapshots, and fills each with about 2 GB that is
//! really resident: four NONSCALING Bloom filters of 512 MiB on sieved (one million items per
//! filter touches every page), four 512 MiB strings on redis-server (SETRANGE writes the zeros).
//! Eight closed-loop connections then send one request at a time: BF.ADD / BF.EXISTS of random
//! items on the big filters and on a small one; on redis-server, SETBIT / GETBIT at random
//! offsets of the big strings and SET / GET of random small keys. After a warm-up, a baseline
//! window without a snapshot, then BGSAVE and a second window until INFO persistence reports
//! `rdb_bgsave_in_progress:0`. Every request's latency is recorded; the table gives both windows.
//!
//! Run with `cargo bench --bench bgsave_latency`. Environment: `SERVERS` (order, default
//! "sieved redis"), `CLIENTS` (8), `BIG_VALUES` (4), `BIG_MIB` (512), `BASELINE_SECS` (10),
//! `SIEVED_BIN` (another sieved binary to measure).

// The tests' RESP client and generator (see their files). Both servers are measured through
// the client, so its own cost is the same on both sides.
#[allow(dead_code)]
#[path = "../../tests/it/support/client.rs"]
mod client;
#[allow(dead_code)]
#[path = "../../tests/it/support/rng.rs"]
mod rng;

mod daemon;
mod load;

use client::{escape, loopback, try_info_field, RawClient};
use daemon::Daemon;
use load::{Clients, Summary, Workload, BASELINE, SLOW, SNAPSHOT};
use rng::Rng;
use std::io;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
const WARM_UP: Duration = Duration::from_secs(2);
const STARTUP_PATIENCE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(20);
/// A snapshot still running after this long is taken for a hung one.
const SNAPSHOT_PATIENCE: Duration = Duration::from_secs(600);
/// Items added to each big filter per 512 MiB: with 7 probes each, every 4 KiB page is hit.
const FILL_ITEMS_PER_512_MIB: u64 = 1_000_000;
const FILL_BATCH: u64 = 1000;
/// Bits per item of a NONSCALING filter at 1%: -ln(0.01) / ln²2.
const BITS_PER_ITEM: f64 = 9.585_058_377_367_439;

struct Settings {
    servers: Vec<String>,
    clients: usize,
    big_values: u64,
    big_bytes: u64,
    baseline: Duration,
}

impl Settings {
    fn from_env() -> io::Result<Settings> {
        fn number(name: &str, default: u64) -> io::Result<u64> {
            match std::env::var(name) {
                Ok(text) => text
                    .parse()
                    .map_err(|_| io::Error::other(format!("{name}={text:?} is not a number"))),
                Err(_) => Ok(default),
            }
        }
        let servers = std::env::var("SERVERS").unwrap_or_else(|_| "sieved redis".to_owned());
        Ok(Settings {
            servers: servers.split_whitespace().map(str::to_owned).collect(),
            clients: number("CLIENTS", 8)? as usize,
            big_values: number("BIG_VALUES", 4)?,
            big_bytes: number("BIG_MIB", 512)? * MIB,
            baseline: Duration::from_secs(number("BASELINE_SECS", 10)?),
        })
    }
}

/// What one server's snapshot cost, beside the latencies.
struct Outcome {
    server: &'static str,
    workload: &'static str,
    resident: u64,
    baseline: Summary,
    during: Summary,
    snapshot_bytes: u64,
    snapshot_wall: Duration,
    reported_seconds: String,
    bgsave_reply: Duration,
    fork_usec: Option<String>,
}

fn main() {
    // `cargo test --benches` runs bench targets without `--bench`; this one takes minutes and GBs.
    if !std::env::args().any(|arg| arg == "--bench") {
        eprintln!("bgsave_latency: run it with `cargo bench --bench bgsave_latency`");
        return;
    }
    if let Err(error) = run() {
        eprintln!("bgsave_latency: {error}");
        std::process::exit(1);
    }
}

fn run() -> io::Result<()> {
    let settings = Settings::from_env()?;
    let load_before = load_average();
    let mut outcomes = Vec::new();
    for server in &settings.servers {
        let outcome = match server.as_str() {
            "sieved" => measure_sieved(&settings)?,
            "redis" => measure_redis(&settings)?,
            other => return Err(io::Error::other(format!("unknown server {other:?}"))),
        };
        outcomes.push(outcome);
    }
    print_table(&settings, &outcomes, &load_before, &load_average());
    Ok(())
}

fn measure_sieved(settings: &Settings) -> io::Result<Outcome> {
    let daemon = Daemon::sieved(settings.big_bytes * 2)?;
    let mut control = connect_when_ready(daemon.port, STARTUP_PATIENCE)?;
    let capacity = (settings.big_bytes as f64 * 8.0 / BITS_PER_ITEM) as u64;
    for index in 0..settings.big_values {
        call(
            &mut control,
            &[
                b"BF.RESERVE",
                format!("big:{index}").as_bytes(),
                b"0.01",
                capacity.to_string().as_bytes(),
                b"NONSCALING",
            ],
        )?;
    }
    call(
        &mut control,
        &[b"BF.RESERVE", b"small", b"0.01", b"1000000"],
    )?;
    let items = settings.big_bytes * FILL_ITEMS_PER_512_MIB / (512 * MIB);
    eprintln!(
        "sieved: filling {} filters of capacity {capacity} with {items} items each",
        settings.big_values
    );
    let fills: Vec<_> = (0..settings.big_values)
        .map(|index| {
            let port = daemon.port;
            std::thread::spawn(move || fill_filter(port, index, items))
        })
        .collect();
    for fill in fills {
        fill.join()
            .map_err(|_| io::Error::other("a fill thread panicked"))??;
    }
    let workload = Workload::Bloom {
        big_keys: settings.big_values,
    };
    measure(settings, &daemon, &mut control, workload)
}

/// Adds `items` random items to `big:<index>` in BF.MADD batches.
fn fill_filter(port: u16, index: u64, items: u64) -> io::Result<()> {
    let mut connection = RawClient::try_connect(loopback(port))?;
    let key = format!("big:{index}");
    let mut rng = Rng::seeded(index);
    for _ in 0..items / FILL_BATCH {
        let batch: Vec<String> = (0..FILL_BATCH)
            .map(|_| format!("{:016x}", rng.next()))
            .collect();
        let mut args: Vec<&[u8]> = vec![b"BF.MADD", key.as_bytes()];
        args.extend(batch.iter().map(String::as_bytes));
        let added = call(&mut connection, &args)?;
        if !added.starts_with(format!("*{}\r\n", batch.len()).as_bytes()) {
            return Err(io::Error::other(format!(
                "BF.MADD answered {}",
                escape(&added)
            )));
        }
    }
    Ok(())
}

fn measure_redis(settings: &Settings) -> io::Result<Outcome> {
    let daemon = Daemon::redis()?;
    let mut control = connect_when_ready(daemon.port, STARTUP_PATIENCE)?;
    eprintln!(
        "redis: {} strings of {} MiB",
        settings.big_values,
        settings.big_bytes / MIB
    );
    for index in 0..settings.big_values {
        let length = call(
            &mut control,
            &[
                b"SETRANGE",
                format!("big:{index}").as_bytes(),
                (settings.big_bytes - 1).to_string().as_bytes(),
                b"x",
            ],
        )?;
        if length != format!(":{}\r\n", settings.big_bytes).as_bytes() {
            return Err(io::Error::other(format!(
                "SETRANGE answered {}",
                escape(&length)
            )));
        }
    }
    let workload = Workload::Strings {
        big_keys: settings.big_values,
        big_bits: settings.big_bytes * 8,
    };
    measure(settings, &daemon, &mut control, workload)
}

/// The two windows on a filled server: a baseline, then one BGSAVE from start to finish.
fn measure(
    settings: &Settings,
    daemon: &Daemon,
    control: &mut RawClient,
    workload: Workload,
) -> io::Result<Outcome> {
    let resident = daemon.rss_bytes()?;
    let expected = settings.big_values * settings.big_bytes;
    eprintln!(
        "{} (pid {}, port {}): resident {} MiB for {} MiB of values",
        daemon.name,
        daemon.pid(),
        daemon.port,
        resident / MIB,
        expected / MIB
    );
    if resident < expected / 100 * 95 {
        return Err(io::Error::other(format!(
            "{} holds only {} MiB in memory",
            daemon.name,
            resident / MIB
        )));
    }
    let clients = Clients::start(daemon.port, settings.clients, workload)?;
    std::thread::sleep(WARM_UP);
    clients.enter(BASELINE);
    let baseline_started = Instant::now();
    std::thread::sleep(settings.baseline);
    clients.enter(SNAPSHOT);
    let baseline_window = baseline_started.elapsed();
    eprintln!("{}: BGSAVE", daemon.name);
    let snapshot_started = Instant::now();
    let started = call(control, &[b"BGSAVE"])?;
    let bgsave_reply = snapshot_started.elapsed();
    if !started.starts_with(b"+Background saving started") {
        return Err(io::Error::other(format!(
            "BGSAVE answered {}",
            escape(&started)
        )));
    }
    while info_field(control, "persistence", "rdb_bgsave_in_progress")? != "0" {
        if snapshot_started.elapsed() > SNAPSHOT_PATIENCE {
            return Err(io::Error::other(format!(
                "{}: the snapshot did not finish in {} s",
                daemon.name,
                SNAPSHOT_PATIENCE.as_secs()
            )));
        }
        std::thread::sleep(POLL);
    }
    let snapshot_wall = snapshot_started.elapsed();
    let samples = clients.finish()?;
    let status = info_field(control, "persistence", "rdb_last_bgsave_status")?;
    if status != "ok" {
        return Err(io::Error::other(format!(
            "{}: the snapshot failed ({status})",
            daemon.name
        )));
    }
    Ok(Outcome {
        server: daemon.name,
        workload: workload.describe(),
        resident,
        baseline: Summary::of(samples.baseline, baseline_window),
        during: Summary::of(samples.snapshot, snapshot_wall),
        snapshot_bytes: daemon.snapshot_bytes(),
        snapshot_wall,
        reported_seconds: info_field(control, "persistence", "rdb_last_bgsave_time_sec")?,
        bgsave_reply,
        fork_usec: info_field(control, "stats", "latest_fork_usec").ok(),
    })
}

/// Connects once the server answers PING, trying for up to `patience`.
fn connect_when_ready(port: u16, patience: Duration) -> io::Result<RawClient> {
    let deadline = Instant::now() + patience;
    loop {
        let attempt = RawClient::try_connect(loopback(port)).and_then(|mut client| {
            call(&mut client, &[b"PING"])?;
            Ok(client)
        });
        match attempt {
            Ok(client) => return Ok(client),
            Err(error) if Instant::now() >= deadline => return Err(error),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Sends one command and returns its reply; an error reply becomes an `io::Error`.
fn call(client: &mut RawClient, args: &[&[u8]]) -> io::Result<Vec<u8>> {
    let reply = client.try_command(args)?;
    if reply.starts_with(b"-") {
        return Err(io::Error::other(format!(
            "{} answered {}",
            String::from_utf8_lossy(args[0]),
            escape(&reply)
        )));
    }
    Ok(reply)
}

/// The value of `field` in the reply to `INFO section`.
fn info_field(client: &mut RawClient, section: &str, field: &str) -> io::Result<String> {
    let reply = call(client, &[b"INFO", section.as_bytes()])?;
    let text = String::from_utf8_lossy(&reply);
    try_info_field(&text, field)
        .map(str::to_owned)
        .ok_or_else(|| io::Error::other(format!("INFO {section} has no {field}")))
}

fn print_table(settings: &Settings, outcomes: &[Outcome], before: &str, after: &str) {
    println!(
        "{} client connections, closed loop, one request in flight each; {} values of {} MiB",
        settings.clients,
        settings.big_values,
        settings.big_bytes / MIB
    );
    println!(
        "{} cores; load average before {before}, after {after}",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    println!(
        "| server | workload | window | requests | req/s | p50 ms | p99 ms | p99.9 ms | max ms | > {} ms | snapshot | duration s |",
        SLOW.as_millis()
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for outcome in outcomes {
        for (window, summary, snapshot) in [
            ("baseline", &outcome.baseline, None),
            ("BGSAVE", &outcome.during, Some(outcome)),
        ] {
            let (size, duration) = match snapshot {
                Some(o) => (
                    format!("{} MiB", o.snapshot_bytes / MIB),
                    format!(
                        "{:.1} ({})",
                        o.snapshot_wall.as_secs_f64(),
                        o.reported_seconds
                    ),
                ),
                None => ("-".to_owned(), "-".to_owned()),
            };
            println!(
                "| {} | {} | {window} | {} | {:.0} | {} | {} | {} | {} | {} | {size} | {duration} |",
                outcome.server,
                outcome.workload,
                summary.requests,
                summary.per_second,
                millis(summary.p50),
                millis(summary.p99),
                millis(summary.p999),
                millis(summary.max),
                summary.slow,
            );
        }
    }
    println!();
    println!(
        "duration: wall time from BGSAVE to rdb_bgsave_in_progress:0 (rdb_last_bgsave_time_sec)"
    );
    for outcome in outcomes {
        println!(
            "{}: resident {} MiB; BGSAVE answered in {} ms; latest_fork_usec {}",
            outcome.server,
            outcome.resident / MIB,
            millis(outcome.bgsave_reply),
            outcome.fork_usec.as_deref().unwrap_or("-"),
        );
    }
}

fn millis(duration: Duration) -> String {
    format!("{:.2}", duration.as_secs_f64() * 1000.0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "?".to_owned())
}
