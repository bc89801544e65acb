//! The Prometheus endpoint (`--metrics-addr`): `GET /metrics` in the text exposition format.
//!
//! A scraper sends one small request and reads one response, so this is HTTP/1.1 reduced to
//! that: read the request head, answer, close. A web framework would bring a dependency tree
//! larger than the server for no behaviour a scraper uses.

use super::{CommandTotals, Shared, Stats, LATENCY_BOUNDS_US};
use crate::cmd::COMMANDS;
use crate::store::{now_ms, summarize};
use std::fmt::Write as _;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request head longer than this is not a scraper's.
const MAX_HEAD: usize = 8 * 1024;
/// A client that has not sent its request by then is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

pub async fn serve(shared: Arc<Shared>, listener: TcpListener) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shared.shutdown.requested() => return,
        };
        match accepted {
            Ok((stream, addr)) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    if let Err(error) = answer(&shared, stream).await {
                        tracing::debug!(%addr, %error, "metrics request failed");
                    }
                });
            }
            Err(error) => {
                tracing::warn!(%error, "metrics: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn read_head(stream: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too long",
            ));
        }
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        head.extend_from_slice(&chunk[..read]);
    }
    Ok(head)
}

async fn answer(shared: &Arc<Shared>, mut stream: TcpStream) -> io::Result<()> {
    let head = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream))
        .await
        .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
    let head = String::from_utf8_lossy(&head);
    let mut words = head.lines().next().unwrap_or_default().split_whitespace();
    let (method, target) = (
        words.next().unwrap_or_default(),
        words.next().unwrap_or_default(),
    );
    let path = target.split('?').next().unwrap_or_default();
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let worker = shared.clone();
            // Counting keys by type visits the whole keyspace; keep it off the workers that
            // serve clients.
            let body = tokio::task::spawn_blocking(move || render(&worker))
                .await
                .map_err(io::Error::other)?;
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body)
        }
        (_, "/metrics") => ("405 Method Not Allowed", "text/plain", "GET only\n".into()),
        _ => (
            "404 Not Found",
            "text/plain",
            "not found; try /metrics\n".into(),
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        response.push_str(&body);
    }
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// Writes one metric family: its help and type lines, then each sample line given.
fn family(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(String, String)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{labels} {value}");
    }
}

/// Sample lines of one family: the labels (with their braces, or empty) and the value.
type Samples = Vec<(String, String)>;

fn one(value: impl ToString) -> Samples {
    vec![(String::new(), value.to_string())]
}

fn seconds(micros: u64) -> String {
    (micros as f64 / 1e6).to_string()
}

fn command_samples(used: &[(usize, CommandTotals)]) -> (Samples, Samples) {
    let mut histogram = Vec::new();
    let mut errors = Vec::new();
    for (index, totals) in used {
        let name = COMMANDS[*index].name;
        let mut cumulative = 0;
        for (bucket, count) in totals.buckets.iter().enumerate() {
            cumulative += count;
            let le = LATENCY_BOUNDS_US
                .get(bucket)
                .map_or("+Inf".to_string(), |&bound| seconds(bound));
            histogram.push((
                format!("_bucket{{command=\"{name}\",le=\"{le}\"}}"),
                cumulative.to_string(),
            ));
        }
        histogram.push((format!("_sum{{command=\"{name}\"}}"), seconds(totals.usec)));
        histogram.push((
            format!("_count{{command=\"{name}\"}}"),
            totals.calls.to_string(),
        ));
        for (reason, count) in [("failed", totals.failed), ("rejected", totals.rejected)] {
            errors.push((
                format!("{{command=\"{name}\",reason=\"{reason}\"}}"),
                count.to_string(),
            ));
        }
    }
    (histogram, errors)
}

pub fn render(shared: &Shared) -> String {
    let now = now_ms();
    let stats = &shared.stats;
    let saver = &shared.saver;
    let summary = summarize(&shared.store, now);
    let mut out = String::new();
    let out = &mut out;

    family(
        out,
        "sieved_build_info",
        "gauge",
        "The running version, and the Redis version it follows.",
        &[(
            format!(
                "{{version=\"{}\",redis_version=\"{}\"}}",
                crate::VERSION,
                crate::REDIS_VERSION
            ),
            "1".into(),
        )],
    );
    family(
        out,
        "sieved_uptime_seconds",
        "gauge",
        "Seconds since start-up.",
        &one(shared.started.elapsed().as_secs()),
    );
    family(
        out,
        "sieved_connected_clients",
        "gauge",
        "Client connections open now.",
        &one(shared.clients.count()),
    );
    for (name, help, counter) in [
        (
            "sieved_connections_received_total",
            "Client connections accepted.",
            &stats.connections_received,
        ),
        (
            "sieved_commands_processed_total",
            "Requests executed, unknown commands included.",
            &stats.commands_processed,
        ),
        (
            "sieved_net_input_bytes_total",
            "Bytes read from clients.",
            &stats.net_input_bytes,
        ),
        (
            "sieved_net_output_bytes_total",
            "Bytes sent to clients.",
            &stats.net_output_bytes,
        ),
        (
            "sieved_expired_keys_total",
            "Keys removed because their time to live ran out.",
            &stats.expired_keys,
        ),
    ] {
        family(out, name, "counter", help, &one(Stats::get(counter)));
    }
    family(
        out,
        "sieved_instantaneous_ops_per_second",
        "gauge",
        "Commands per second over the last 1.6 seconds, as INFO reports it.",
        &one(stats.instantaneous_ops_per_sec()),
    );

    let (histogram, errors) = command_samples(&shared.commands.used());
    family(
        out,
        "sieved_command_duration_seconds",
        "histogram",
        "Time to execute each command, by name; _count is the number of calls.",
        &histogram,
    );
    family(
        out,
        "sieved_command_errors_total",
        "counter",
        "Calls that replied with an error (failed) or were refused before running (rejected).",
        &errors,
    );
    family(
        out,
        "sieved_slowlog_entries",
        "gauge",
        "Entries in the SLOWLOG.",
        &one(shared.slowlog.len()),
    );

    for (name, help, value) in [
        (
            "sieved_memory_used_bytes",
            "Bytes allocated by the process.",
            crate::memory::allocated() as u64,
        ),
        (
            "sieved_memory_peak_bytes",
            "Highest allocation seen.",
            crate::memory::peak() as u64,
        ),
        (
            "sieved_memory_rss_bytes",
            "Resident set size.",
            crate::memory::rss_bytes(),
        ),
    ] {
        family(out, name, "gauge", help, &one(value));
    }

    let mut keys = Vec::new();
    let mut expiring = Vec::new();
    for ((index, db), store_db) in summary.dbs.iter().enumerate().zip(shared.store.dbs()) {
        if db.strings + db.bloom + db.counting == 0 {
            continue;
        }
        for (kind, count) in [
            ("string", db.strings),
            ("bloom", db.bloom),
            ("counting", db.counting),
        ] {
            keys.push((
                format!("{{db=\"{index}\",type=\"{kind}\"}}"),
                count.to_string(),
            ));
        }
        expiring.push((
            format!("{{db=\"{index}\"}}"),
            store_db.volatile_len().to_string(),
        ));
    }
    family(
        out,
        "sieved_keys",
        "gauge",
        "Keys by database and type.",
        &keys,
    );
    family(
        out,
        "sieved_expiring_keys",
        "gauge",
        "Keys with a time to live, by database.",
        &expiring,
    );
    let by_type = |pick: fn(&crate::store::FilterTotals) -> u64| {
        vec![
            (
                "{type=\"bloom\"}".to_string(),
                pick(&summary.bloom).to_string(),
            ),
            (
                "{type=\"counting\"}".to_string(),
                pick(&summary.counting).to_string(),
            ),
        ]
    };
    family(
        out,
        "sieved_filters",
        "gauge",
        "Filters by type.",
        &by_type(|t| t.filters),
    );
    family(
        out,
        "sieved_filter_bytes",
        "gauge",
        "Memory the filters use, by type.",
        &by_type(|t| t.bytes),
    );
    family(
        out,
        "sieved_filter_items",
        "gauge",
        "Items the filters hold, by type.",
        &by_type(|t| t.items),
    );
    family(
        out,
        "sieved_filter_capacity",
        "gauge",
        "Items the filters' current links are built for, by type.",
        &by_type(|t| t.capacity),
    );
    family(
        out,
        "sieved_counting_saturated_counters",
        "gauge",
        "Counters of counting filters stuck at their maximum.",
        &one(summary.counting.saturated_counters),
    );

    let last_save_ms = saver.last_save_ms();
    let snapshot_bytes =
        std::fs::metadata(shared.config.dir.join(crate::persist::FILE_NAME)).map_or(0, |m| m.len());
    family(
        out,
        "sieved_snapshot_last_success_timestamp_seconds",
        "gauge",
        "When the last snapshot was written (start-up time before the first).",
        &one(last_save_ms / 1000),
    );
    family(
        out,
        "sieved_snapshot_age_seconds",
        "gauge",
        "Seconds since the last snapshot was written (since start-up before the first).",
        &one(now.saturating_sub(last_save_ms) / 1000),
    );
    family(
        out,
        "sieved_snapshot_last_duration_seconds",
        "gauge",
        "How long the last successful snapshot took.",
        &one(saver.last_duration_ms() as f64 / 1000.0),
    );
    family(
        out,
        "sieved_snapshot_in_progress",
        "gauge",
        "1 while a snapshot is being written.",
        &one(saver.in_progress() as u8),
    );
    family(
        out,
        "sieved_snapshot_last_ok",
        "gauge",
        "0 when the last snapshot attempt failed.",
        &one(saver.last_ok() as u8),
    );
    family(
        out,
        "sieved_snapshots_total",
        "counter",
        "Snapshots written.",
        &one(saver.saves()),
    );
    family(
        out,
        "sieved_snapshot_file_bytes",
        "gauge",
        "Size of the snapshot file on disk, 0 without one.",
        &one(snapshot_bytes),
    );
    family(
        out,
        "sieved_changes_since_snapshot",
        "gauge",
        "Writes since the last snapshot: what a crash now would lose.",
        &one(saver.changes()),
    );
    out.to_string()
}
