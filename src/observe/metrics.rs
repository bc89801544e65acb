//! /metrics in Prometheus's text exposition format, rendered from a `Report`.
//!
//! Replication's figures are read from INFO replication's fields, which the report carries as
//! Redis prints them, so that the two cannot disagree. deploy/grafana/ and deploy/prometheus/
//! use these names; tests/it/metrics_prometheus.rs checks the page with promtool and has a real
//! Prometheus query each metric the dashboard uses.

use super::{CommandTotals, Report, Stats, Timings, LATENCY_BOUNDS_US};
use crate::store::Value;
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

    let keyspace = Keyspace::tally(report);
    family(
        out,
        "sieved_keys",
        "gauge",
        "Keys by database and type (databases without keys left out).",
        &keyspace.per_db(|tally| tally.keys),
    );
    family(
        out,
        "sieved_key_memory_bytes",
        "gauge",
        "Memory the values of each type hold, by database (as MEMORY USAGE counts them).",
        &keyspace.per_db(|tally| tally.bytes),
    );
    family(
        out,
        "sieved_expiring_keys",
        "gauge",
        "Keys with a time to live, by database.",
        &keyspace.expiring,
    );
    let filters = &keyspace.filters;
    let by_type = |pick: fn(&FilterTally) -> u64| {
        FILTER_TYPES
            .iter()
            .zip(filters)
            .map(|(name, tally)| (format!("{{type=\"{name}\"}}"), pick(tally).to_string()))
            .collect::<Samples>()
    };
    for (name, help, pick) in [
        (
            "sieved_filters",
            "Filters by type.",
            (|t| t.filters) as fn(&FilterTally) -> u64,
        ),
        (
            "sieved_filter_bytes",
            "Memory the filters use, by type.",
            |t| t.bytes,
        ),
        (
            "sieved_filter_items",
            "Items the filters hold, by type.",
            |t| t.items,
        ),
        (
            "sieved_filter_capacity",
            "Items the filters' current links are built for, by type.",
            |t| t.capacity,
        ),
        (
            "sieved_filters_full",
            "Non-scaling filters holding as many items as their capacity: adds to them are refused.",
            |t| t.full,
        ),
        (
            "sieved_filters_over_error_rate",
            "Filters whose false-positive rate, estimated from how full each link is, exceeds the \
             error rate they were created with (items past a link's capacity, as after a merge \
             or a load of chunks).",
            |t| t.over_error_rate,
        ),
    ] {
        family(out, name, "gauge", help, &by_type(pick));
    }
    family(
        out,
        "sieved_counting_saturated_counters",
        "gauge",
        "Counters of counting filters stuck at their maximum.",
        &one(keyspace.saturated_counters),
    );
    let frontier = &keyspace.frontier;
    family(
        out,
        "sieved_frontiers",
        "gauge",
        "Crawl frontiers (FQ.*).",
        &one(frontier.frontiers),
    );
    family(
        out,
        "sieved_frontier_items",
        "gauge",
        "Items of all crawl frontiers by state: queued (waiting, due or not), due (may be popped \
         now), leased (popped, not yet acknowledged), dead (out of retries).",
        &[
            ("queued", frontier.queued),
            ("due", frontier.due),
            ("leased", frontier.leased),
            ("dead", frontier.dead),
        ]
        .map(|(state, n)| (format!("{{state=\"{state}\"}}"), n.to_string())),
    );
    family(
        out,
        "sieved_frontier_done_total",
        "counter",
        "Items of all crawl frontiers acknowledged (FQ.ACK) since each was created.",
        &one(frontier.done),
    );
    family(
        out,
        "sieved_frontier_seen",
        "gauge",
        "URLs in the seen-sets of all crawl frontiers.",
        &one(frontier.seen),
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
    clients_and_keys(out, report);
    log(out, report);
    replication(out, report);
    out.to_string()
}

/// Clients by what they do, and keys leaving the keyspace.
fn clients_and_keys(out: &mut String, report: &Report) {
    let stats = report.stats;
    for (name, help, value) in [
        (
            "sieved_blocked_clients",
            "Clients waiting in a blocking command.",
            report.blocked_clients as u64,
        ),
        (
            "sieved_pubsub_clients",
            "Clients subscribed to at least one channel or pattern.",
            report.pubsub_clients as u64,
        ),
        (
            "sieved_pubsub_channels",
            "Channels with at least one subscriber.",
            report.pubsub_channels as u64,
        ),
        (
            "sieved_pubsub_patterns",
            "Patterns with at least one subscriber.",
            report.pubsub_patterns as u64,
        ),
        (
            "sieved_maxclients",
            "Most clients that may be connected at once (maxclients).",
            report.maxclients,
        ),
        (
            "sieved_memory_max_bytes",
            "maxmemory: the memory past which keys are evicted or writes refused; 0 for no limit.",
            report.memory.maxmemory,
        ),
    ] {
        family(out, name, "gauge", help, &one(value));
    }
    for (name, help, counter) in [
        (
            "sieved_evicted_keys_total",
            "Keys evicted to bring memory under maxmemory.",
            &stats.evicted_keys,
        ),
        (
            "sieved_rejected_connections_total",
            "Connections refused (maxclients reached, or protected mode).",
            &stats.rejected_connections,
        ),
    ] {
        family(out, name, "counter", help, &one(Stats::get(counter)));
    }
}

/// The append-only file; its families are there with the log off too (enabled 0), so that a
/// dashboard's queries keep their shape.
fn log(out: &mut String, report: &Report) {
    let aof = report.aof.as_ref();
    family(
        out,
        "sieved_aof_enabled",
        "gauge",
        "1 when writes are logged to the append-only file (appendonly yes).",
        &one(u8::from(aof.is_some())),
    );
    family(
        out,
        "sieved_aof_last_write_ok",
        "gauge",
        "0 while writing or syncing the append-only file fails (writes are then refused).",
        &one(u8::from(aof.is_none_or(|aof| aof.failure.is_none()))),
    );
    family(
        out,
        "sieved_aof_size_bytes",
        "gauge",
        "Size of the append-only file's live segments.",
        &one(aof.map_or(0, |aof| aof.current_size)),
    );
    family(
        out,
        "sieved_aof_base_size_bytes",
        "gauge",
        "Size of the live segments right after the last compaction.",
        &one(aof.map_or(0, |aof| aof.base_size)),
    );
    family(
        out,
        "sieved_aof_rewrites_total",
        "counter",
        "Compactions that folded the append-only file into a snapshot.",
        &one(aof.map_or(0, |aof| aof.rewrites)),
    );
    let none = Timings::default();
    let fsyncs = aof.map_or(&none, |aof| &aof.fsyncs);
    family(
        out,
        "sieved_aof_fsync_duration_seconds",
        "histogram",
        "Time each sync of the append-only file took.",
        &histogram(fsyncs, ""),
    );
}

/// A histogram's sample lines, in seconds, with `labels` (inside braces, comma-ended) on each.
fn histogram(timings: &Timings, labels: &str) -> Samples {
    let mut samples = Vec::new();
    let mut cumulative = 0;
    for &(bound, count) in &timings.buckets {
        cumulative += count;
        let le = bound.map_or("+Inf".to_string(), seconds);
        samples.push((
            format!("_bucket{{{labels}le=\"{le}\"}}"),
            cumulative.to_string(),
        ));
    }
    let labels = labels.trim_end_matches(',');
    let braces = |labels: &str| match labels {
        "" => String::new(),
        labels => format!("{{{labels}}}"),
    };
    samples.push((format!("_sum{}", braces(labels)), seconds(timings.total_us)));
    samples.push((
        format!("_count{}", braces(labels)),
        timings.count.to_string(),
    ));
    samples
}

/// INFO replication's `name:value` fields.
fn info_fields(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .filter_map(|line| line.trim_end_matches('\r').split_once(':'))
        .collect()
}

/// A replica's line of INFO replication on its primary (`ip=...,port=...,state=...,offset=...,
/// lag=...`), as its `ip:port`, state, offset and lag.
fn replica_of_info(value: &str) -> Option<(String, String, u64, u64)> {
    let mut fields = value.split(',').filter_map(|pair| pair.split_once('='));
    let mut get = |name: &str| fields.find(|(key, _)| *key == name).map(|(_, v)| v);
    let ip = get("ip")?.to_string();
    let port = get("port")?;
    let state = get("state")?.to_string();
    let offset = get("offset")?.parse().ok()?;
    let lag = get("lag")?.parse().ok()?;
    Some((format!("{ip}:{port}"), state, offset, lag))
}

/// Role, offsets, each replica's lag and state on a primary, the link on a replica, and the
/// resyncs served.
fn replication(out: &mut String, report: &Report) {
    let state = &report.replication;
    let fields = info_fields(&state.fields);
    let field = |name: &str| fields.iter().find(|(key, _)| *key == name).map(|(_, v)| *v);
    let number = |name: &str| field(name).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    let replica = field("role") == Some("slave");
    family(
        out,
        "sieved_replication_role",
        "gauge",
        "1 for the role this server has: primary or replica.",
        &[("primary", !replica), ("replica", replica)]
            .map(|(role, on)| (format!("{{role=\"{role}\"}}"), u8::from(on).to_string())),
    );
    family(
        out,
        "sieved_replication_offset_bytes",
        "gauge",
        "Replication offset: bytes of the replication stream this server has produced or \
         received (master_repl_offset).",
        &one(number("master_repl_offset")),
    );
    family(
        out,
        "sieved_replication_backlog_bytes",
        "gauge",
        "Bytes of the replication stream the backlog holds for partial resyncs.",
        &one(number("repl_backlog_histlen")),
    );
    let replicas: Vec<_> = fields
        .iter()
        .filter(|(key, _)| key.starts_with("slave") && key[5..].parse::<u32>().is_ok())
        .filter_map(|(_, value)| replica_of_info(value))
        .collect();
    family(
        out,
        "sieved_connected_replicas",
        "gauge",
        "Replicas connected to this server (connected_slaves).",
        &one(replicas.len()),
    );
    let label = |address: &str| format!("{{replica=\"{}\"}}", escape_label(address));
    family(
        out,
        "sieved_replica_offset_bytes",
        "gauge",
        "The replication offset each replica has acknowledged, by its address.",
        &replicas
            .iter()
            .map(|(address, _, offset, _)| (label(address), offset.to_string()))
            .collect::<Samples>(),
    );
    family(
        out,
        "sieved_replica_lag_seconds",
        "gauge",
        "Seconds since each replica last acknowledged the stream, by its address.",
        &replicas
            .iter()
            .map(|(address, _, _, lag)| (label(address), lag.to_string()))
            .collect::<Samples>(),
    );
    family(
        out,
        "sieved_replica_online",
        "gauge",
        "1 for a replica that follows the stream (state online), 0 while it syncs.",
        &replicas
            .iter()
            .map(|(address, state, _, _)| (label(address), u8::from(state == "online").to_string()))
            .collect::<Samples>(),
    );
    if replica {
        for (name, help, value) in [
            (
                "sieved_replication_link_up",
                "On a replica: 1 while the link to its primary is up (master_link_status).",
                i64::from(field("master_link_status") == Some("up")),
            ),
            (
                "sieved_replication_sync_in_progress",
                "On a replica: 1 while it loads a full sync from its primary.",
                number("master_sync_in_progress"),
            ),
            (
                "sieved_replication_last_io_seconds",
                "On a replica: seconds since anything came from its primary; -1 before anything \
                 did.",
                field("master_last_io_seconds_ago")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(-1),
            ),
            (
                "sieved_replication_link_down_seconds",
                "On a replica: seconds the link to its primary has been down; 0 while it is up.",
                number("master_link_down_since_seconds"),
            ),
        ] {
            family(out, name, "gauge", help, &one(value));
        }
    }
    family(
        out,
        "sieved_replication_full_syncs_total",
        "counter",
        "Full syncs served to replicas (sync_full).",
        &one(state.sync_full),
    );
    family(
        out,
        "sieved_replication_partial_syncs_total",
        "counter",
        "Partial resyncs asked of this server, accepted (ok) or refused for a full sync (err).",
        &[
            ("ok", state.sync_partial_ok),
            ("err", state.sync_partial_err),
        ]
        .map(|(result, n)| (format!("{{result=\"{result}\"}}"), n.to_string())),
    );
}

/// A label value as the exposition format writes it.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The types a key may hold, as the metrics label them.
const KEY_TYPES: [&str; 14] = [
    "string", "list", "set", "zset", "hash", "bloom", "counting", "cuckoo", "windowed", "frontier",
    "json", "cms", "topk", "tdigest",
];

/// The filters whose totals the metrics give: Bloom and counting Bloom filters.
const FILTER_TYPES: [&str; 2] = ["bloom", "counting"];

fn key_type(value: &Value) -> usize {
    match value {
        Value::String(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Bloom(_) => 5,
        Value::Counting(_) => 6,
        Value::Cuckoo(_) => 7,
        Value::Windowed(_) => 8,
        Value::Frontier(_) => 9,
        Value::Json(_) => 10,
        Value::CountMin(_) => 11,
        Value::TopK(_) => 12,
        Value::TDigest(_) => 13,
    }
}

#[derive(Default, Clone, Copy)]
struct TypeTally {
    keys: u64,
    bytes: u64,
}

#[derive(Default)]
struct FilterTally {
    filters: u64,
    bytes: u64,
    items: u64,
    capacity: u64,
    full: u64,
    over_error_rate: u64,
}

#[derive(Default)]
struct FrontierTally {
    frontiers: u64,
    queued: u64,
    due: u64,
    leased: u64,
    dead: u64,
    done: u64,
    seen: u64,
}

/// One link of a filter, as far as its fill goes.
struct LinkFill {
    hashes: u32,
    bits: u64,
    items: u64,
    capacity: u64,
    error_rate: f64,
}

/// A filter's false-positive rate estimated from its links' fill: each link's chance is the
/// rate it was built for, scaled by how the classic formula (1 - e^(-kn/m))^k grows from its
/// capacity to the items it holds. The scaling keeps the estimate right for the blocked layout
/// too, whose own formula differs but grows alike.
fn estimated_error_rate(links: impl Iterator<Item = LinkFill>) -> f64 {
    let classic = |hashes: u32, bits: u64, items: u64| {
        let k = f64::from(hashes);
        (1.0 - (-k * items as f64 / bits as f64).exp()).powf(k)
    };
    let pass = links
        .filter(|link| link.bits > 0 && link.capacity > 0 && link.hashes > 0)
        .map(|link| {
            let at_capacity = classic(link.hashes, link.bits, link.capacity);
            let now = classic(link.hashes, link.bits, link.items);
            let rate = match at_capacity > 0.0 {
                true => (link.error_rate * now / at_capacity).min(1.0),
                false => 0.0,
            };
            1.0 - rate
        })
        .product::<f64>();
    1.0 - pass
}

/// The keyspace counted in one pass: keys and memory by database and type, the filters, and
/// the crawl frontiers.
struct Keyspace {
    /// Each database that has keys, with its tally per `KEY_TYPES`.
    dbs: Vec<(usize, [TypeTally; KEY_TYPES.len()])>,
    expiring: Samples,
    filters: [FilterTally; FILTER_TYPES.len()],
    saturated_counters: u64,
    frontier: FrontierTally,
}

impl Keyspace {
    fn tally(report: &Report) -> Keyspace {
        let now = report.now_ms;
        let mut keyspace = Keyspace {
            dbs: Vec::new(),
            expiring: Vec::new(),
            filters: Default::default(),
            saturated_counters: 0,
            frontier: FrontierTally::default(),
        };
        for (index, db) in report.store.dbs().enumerate() {
            if db.is_empty() {
                continue;
            }
            let mut types = [TypeTally::default(); KEY_TYPES.len()];
            db.fold_values(now, (), |(), _key, value| {
                let bytes = value.memory_bytes();
                let tally = &mut types[key_type(value)];
                tally.keys += 1;
                tally.bytes += bytes;
                keyspace.count_value(value, bytes, now);
            });
            keyspace
                .expiring
                .push((format!("{{db=\"{index}\"}}"), db.volatile_len().to_string()));
            keyspace.dbs.push((index, types));
        }
        keyspace
    }

    fn count_value(&mut self, value: &Value, bytes: u64, now: u64) {
        macro_rules! filter {
            ($slot:expr, $chain:expr) => {{
                let chain = $chain;
                let tally = &mut self.filters[$slot];
                tally.filters += 1;
                tally.bytes += bytes;
                tally.items += chain.items();
                tally.capacity += chain.capacity();
                tally.full += u64::from(!chain.is_scaling() && chain.items() >= chain.capacity());
                let links = chain.links().iter().map(|link| LinkFill {
                    hashes: link.hashes(),
                    bits: link.bits(),
                    items: link.items(),
                    capacity: link.capacity(),
                    error_rate: link.error_rate(),
                });
                tally.over_error_rate +=
                    u64::from(estimated_error_rate(links) > chain.error_rate());
            }};
        }
        match value {
            Value::Bloom(chain) => filter!(0, chain),
            Value::Counting(chain) => {
                filter!(1, chain.as_ref());
                self.saturated_counters += chain.saturated_counters();
            }
            Value::Frontier(frontier) => {
                let info = frontier.info(now);
                let tally = &mut self.frontier;
                tally.frontiers += 1;
                tally.queued += info.queued;
                tally.due += info.due;
                tally.leased += info.leased;
                tally.dead += info.dead;
                tally.done += info.done;
                tally.seen += info.seen;
            }
            _ => {}
        }
    }

    /// One figure of every type of every database with keys.
    fn per_db(&self, pick: fn(&TypeTally) -> u64) -> Samples {
        let mut samples = Vec::new();
        for (index, types) in &self.dbs {
            for (name, tally) in KEY_TYPES.iter().zip(types) {
                samples.push((
                    format!("{{db=\"{index}\",type=\"{name}\"}}"),
                    pick(tally).to_string(),
                ));
            }
        }
        samples
    }
}
