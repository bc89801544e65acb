//! The network side: the listener, one task per connection, background housekeeping, and an
//! orderly shutdown. Protocol and command logic live elsewhere; this module moves bytes.

mod background;
mod batch;
/// The hooks of benches/scaling.rs, public only to it.
#[cfg(feature = "scaling-bench")]
pub mod bench_support;
mod blocking;
mod client_io;
mod clients;
mod command_host;
mod connection_threads;
mod expiry;
mod isolation;
mod listener;
mod loading;
mod logged_writes;
mod metrics_endpoint;
mod outcomes;
mod panics;
mod pubsub;
mod query_buffer;
mod replication;
mod sampler;
mod saver;
mod shutdown;
mod tls;

pub use clients::Clients;
pub use isolation::Isolation;
pub use listener::Server;
pub use saver::Saver;
pub use shutdown::Shutdown;

use crate::cmd::COMMANDS;
use crate::config::Config;
use crate::observe::{self, CommandClock, CommandStats, SlowLog, Stats};
use crate::persist::aof::{Aof, OnFatal};
use crate::persist::fs::{self, FileSystem};
use crate::persist::snapshot;
use crate::store::{now_ms, Store};
use background::Background;
use replication::Replication;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Everything connections share.
pub struct Shared {
    pub config: Config,
    /// Where the server actually listens (the configured port may be 0).
    pub addr: SocketAddr,
    pub store: Store,
    pub stats: Stats,
    pub commands: CommandStats,
    pub slowlog: SlowLog,
    /// Times each command for commandstats and SLOWLOG.
    pub(crate) clock: CommandClock,
    /// Where the TLS port listens, when it is on.
    pub tls_addr: Option<SocketAddr>,
    /// Where the metrics endpoint listened at start-up, when it was on (CONFIG SET of
    /// `metrics-addr` may move it since).
    pub metrics_addr: Option<SocketAddr>,
    pub saver: Saver,
    /// The append-only file, when `appendonly` is on.
    pub aof: Option<Aof>,
    /// Where snapshots and the log are written: the operating system's files, or a test's.
    pub fs: Arc<dyn FileSystem>,
    pub background: Background,
    pub isolation: Isolation,
    pub clients: Clients,
    pub(crate) pubsub: pubsub::PubSub,
    pub shutdown: Shutdown,
    pub started: Instant,
    pub started_ms: u64,
    pub run_id: String,
    pub(crate) replication: Replication,
    /// Held while a write runs and its record goes to the log and the replication stream, so
    /// that both hold writes in the order they took effect; the record is encoded into it.
    pub(crate) stream_order: Mutex<Vec<u8>>,
    /// Clients parked by blocking commands.
    pub(crate) blocking: blocking::Blocking,
    /// Start-up's load, while it runs beside the clients.
    pub(crate) loading: loading::Loading,
    /// The Lua engines of EVAL and FCALL, with their script cache and function libraries.
    pub scripts: crate::cmd::Scripts,
}

/// The log's sync times as the report gives them.
fn fsync_timings(figures: crate::persist::aof::SyncFigures) -> observe::Timings {
    use crate::persist::aof::SYNC_BOUNDS_US;
    let bounds = SYNC_BOUNDS_US
        .iter()
        .map(|&bound| Some(bound))
        .chain([None]);
    observe::Timings {
        count: figures.count,
        total_us: figures.total_us,
        last_us: figures.last_us,
        buckets: bounds.zip(figures.buckets).collect(),
    }
}

/// Where a server keeps its data, and what it does when the log cannot be written under
/// `appendfsync always`.
pub struct Disk {
    pub fs: Arc<dyn FileSystem>,
    pub on_fatal: OnFatal,
}

impl Disk {
    /// The operating system's files; a log that cannot be written stops the process, as Redis.
    pub fn real() -> Disk {
        Disk {
            fs: fs::real(),
            on_fatal: Box::new(|_| {
                tracing::error!("exiting: acknowledged writes could not be made durable");
                std::process::exit(1)
            }),
        }
    }
}

impl Shared {
    pub fn new(config: Config, addr: SocketAddr) -> Shared {
        Shared::with_disk(config, addr, Disk::real())
    }

    pub fn with_disk(config: Config, addr: SocketAddr, disk: Disk) -> Shared {
        let store = Store::new(config.databases, config.shards);
        let Disk { fs, on_fatal } = disk;
        let aof = config.appendonly.then(|| {
            Aof::new(
                config.dir.clone(),
                config.settings().appendfsync,
                fs.clone(),
                on_fatal,
            )
        });
        let started_ms = now_ms();
        let run_id = replication::random_id();
        let backlog_size = config.settings().repl_backlog_size;
        let shared = Shared {
            config,
            addr,
            store,
            stats: Stats::default(),
            commands: CommandStats::new(COMMANDS.len()),
            slowlog: SlowLog::default(),
            clock: CommandClock::new(),
            tls_addr: None,
            metrics_addr: None,
            saver: Saver::new(started_ms),
            aof,
            fs,
            background: Background::default(),
            isolation: Isolation::default(),
            clients: Clients::default(),
            pubsub: pubsub::PubSub::default(),
            shutdown: Shutdown::new(),
            started: Instant::now(),
            started_ms,
            run_id,
            replication: Replication::new(backlog_size),
            stream_order: Mutex::new(Vec::new()),
            blocking: blocking::Blocking::default(),
            loading: loading::Loading::default(),
            scripts: crate::cmd::Scripts::default(),
        };
        shared.apply_eviction_settings();
        shared
    }
}

impl Shared {
    /// Makes the keyspace keep LFU counters or access times, as `maxmemory-policy` says.
    pub(crate) fn apply_eviction_settings(&self) {
        let settings = self.config.settings();
        let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        self.store.tracking().configure(
            settings.maxmemory_policy.is_lfu(),
            clamp(settings.lfu_log_factor),
            clamp(settings.lfu_decay_time),
        );
    }

    /// The Lua engines' figures for INFO memory.
    fn script_memory(&self) -> observe::ScriptMemory {
        let figures = self.scripts.figures(&self.store);
        observe::ScriptMemory {
            vm_eval: figures.vm_eval,
            scripts_eval: figures.scripts_eval,
            cached_scripts: figures.cached_scripts,
            evicted_scripts: figures.evicted_scripts,
            functions: figures.functions,
            libraries: figures.libraries,
            vm_functions: figures.vm_functions,
            functions_memory: figures.functions_memory,
        }
    }

    /// Everything INFO and /metrics print, read now.
    pub fn report(&self) -> observe::Report<'_> {
        let settings = self.config.settings();
        let (pubsub_channels, pubsub_patterns) = self.pubsub.counts();
        let now_ms = now_ms();
        observe::Report {
            now_ms,
            run_id: &self.run_id,
            tcp_port: self.addr.port(),
            uptime_secs: self.started.elapsed().as_secs(),
            threads: self.config.threads,
            lru_clock: self.store.tracking().lru_clock(),
            config_file: self.config.file.clone(),
            connected_clients: self.clients.count(),
            blocked_clients: self.blocking.parked(),
            pubsub_clients: self.pubsub.subscribed_clients(),
            maxclients: settings.maxclients,
            memory: observe::Memory {
                used: crate::memory::allocated() as u64,
                peak: crate::memory::peak() as u64,
                rss: crate::memory::rss_bytes(),
                maxmemory: settings.maxmemory,
                policy: settings.maxmemory_policy.name(),
                total_system: crate::memory::physical_bytes(),
                not_counted_for_evict: self.replication.stream.beyond_backlog(),
                scripts: self.script_memory(),
            },
            cpu: sampler::cpu_times(),
            snapshots: observe::Snapshots {
                changes_since_last: self.saver.changes(),
                in_progress: self.saver.in_progress(),
                last_save_ms: self.saver.last_save_ms(),
                last_ok: self.saver.last_ok(),
                last_duration_ms: self.saver.last_duration_ms(),
                saves: self.saver.saves(),
                file_bytes: std::fs::metadata(self.config.dir.join(snapshot::FILE_NAME))
                    .map_or(0, |m| m.len()),
            },
            aof: self.aof.as_ref().map(|aof| observe::AofState {
                failure: aof.failure(),
                current_size: aof.live_bytes(),
                base_size: aof.base_bytes(),
                rewrites: aof.compactions(),
                fsyncs: fsync_timings(aof.sync_times.read()),
            }),
            loading: self.loading.state(now_ms),
            stats: &self.stats,
            commands: self
                .commands
                .used()
                .into_iter()
                .map(|(index, totals)| (COMMANDS[index].name, totals))
                .collect(),
            slowlog_len: self.slowlog.len(),
            pubsub_channels,
            pubsub_patterns,
            background: self.background.states(),
            replication: observe::ReplicationState {
                fields: self.replication.info(now_ms, &settings),
                sync_full: self.replication.sync_full.load(Ordering::Relaxed),
                sync_partial_ok: self.replication.sync_partial_ok.load(Ordering::Relaxed),
                sync_partial_err: self.replication.sync_partial_err.load(Ordering::Relaxed),
            },
            store: &self.store,
        }
    }
}
