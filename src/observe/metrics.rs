//! /metrics in Prometheus's text exposition format, rendered from a `Report`.

use super::{CommandTotals, Report, Stats, LATENCY_BOUNDS_US};
use crate::store::summarize;
use std::fmt::Write as _;

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

fn command_samples(used: &[(&str, CommandTotals)]) -> (Samples, Samples) {
    let mut histogram = Vec::new();
    let mut errors = Vec::new();
    for (name, totals) in used {
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

pub(crate) fn render(report: &Report) -> String {
    let now = report.now_ms;
    let stats = report.stats;
    let snapshots = &report.snapshots;
    let summary = summarize(report.store, now);
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
        &one(report.uptime_secs),
    );
    family(
        out,
        "sieved_connected_clients",
        "gauge",
        "Client connections open now.",
        &one(report.connected_clients),
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

    let (histogram, errors) = command_samples(&report.commands);
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
        &one(report.slowlog_len),
    );

    for (name, help, value) in [
        (
            "sieved_memory_used_bytes",
            "Bytes allocated by the process.",
            report.memory.used,
        ),
        (
            "sieved_memory_peak_bytes",
            "Highest allocation seen.",
            report.memory.peak,
        ),
        (
            "sieved_memory_rss_bytes",
            "Resident set size.",
            report.memory.rss,
        ),
        (
            "sieved_query_buffers_bytes",
            "Bytes the clients' request buffers hold.",
            report.stats.query_buffer_bytes(),
        ),
    ] {
        family(out, name, "gauge", help, &one(value));
    }

    let mut keys = Vec::new();
    let mut expiring = Vec::new();
    for ((index, db), store_db) in summary.dbs.iter().enumerate().zip(report.store.dbs()) {
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

    let last_save_ms = snapshots.last_save_ms;
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
        &one(snapshots.last_duration_ms as f64 / 1000.0),
    );
    family(
        out,
        "sieved_snapshot_in_progress",
        "gauge",
        "1 while a snapshot is being written.",
        &one(snapshots.in_progress as u8),
    );
    family(
        out,
        "sieved_snapshot_last_ok",
        "gauge",
        "0 when the last snapshot attempt failed.",
        &one(snapshots.last_ok as u8),
    );
    family(
        out,
        "sieved_snapshots_total",
        "counter",
        "Snapshots written.",
        &one(snapshots.saves),
    );
    family(
        out,
        "sieved_snapshot_file_bytes",
        "gauge",
        "Size of the snapshot file on disk, 0 without one.",
        &one(snapshots.file_bytes),
    );
    family(
        out,
        "sieved_changes_since_snapshot",
        "gauge",
        "Writes since the last snapshot: what a crash now would lose.",
        &one(snapshots.changes_since_last),
    );
    out.to_string()
}
