//! The network side: the listener, one task per connection, background housekeeping, and an
//! orderly shutdown. Protocol and command logic live elsewhere; this module moves bytes.

mod clients;
mod command_host;
mod commandstats;
mod connection;
mod expiry;
mod info;
mod isolation;
mod listener;
mod metrics;
mod saver;
mod shutdown;
mod slowlog;
mod stats;
mod tls;

pub use clients::Clients;
pub use commandstats::{CommandStats, CommandTotals, Tally, LATENCY_BOUNDS_US};
pub use isolation::Isolation;
pub use listener::Server;
pub use saver::{SaveError, Saver};
pub use shutdown::Shutdown;
pub use slowlog::{SlowEntry, SlowLog};
pub use stats::Stats;

use crate::config::Config;
use crate::persist::aof::Aof;
use crate::store::{now_ms, Store};
use std::net::SocketAddr;
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
    /// Where the TLS port listens, when it is on.
    pub tls_addr: Option<SocketAddr>,
    /// Where the metrics endpoint listens, when it is on.
    pub metrics_addr: Option<SocketAddr>,
    pub saver: Saver,
    /// The append-only file, when `appendonly` is on.
    pub aof: Option<Aof>,
    pub isolation: Isolation,
    pub clients: Clients,
    pub shutdown: Shutdown,
    pub started: Instant,
    pub started_ms: u64,
    pub run_id: String,
}

impl Shared {
    pub fn new(config: Config, addr: SocketAddr) -> Shared {
        let store = Store::new(config.databases, config.shards);
        let aof = config
            .appendonly
            .then(|| Aof::new(config.dir.clone(), config.settings().appendfsync));
        let started_ms = now_ms();
        let run_id = (0..5)
            .map(|i| xxhash_rust::xxh3::xxh3_64_with_seed(&started_ms.to_le_bytes(), i))
            .map(|h| format!("{h:016x}"))
            .collect::<String>()[..40]
            .to_string();
        Shared {
            config,
            addr,
            store,
            stats: Stats::default(),
            commands: CommandStats::default(),
            slowlog: SlowLog::default(),
            tls_addr: None,
            metrics_addr: None,
            saver: Saver::new(started_ms),
            aof,
            isolation: Isolation::default(),
            clients: Clients::default(),
            shutdown: Shutdown::new(),
            started: Instant::now(),
            started_ms,
            run_id,
        }
    }
}
