//! What INFO and /metrics print, gathered by the server in one struct: the renderers read only
//! this, so both always agree and neither knows where a figure comes from.

use super::{CommandTotals, Stats};
use crate::store::Store;
use std::path::PathBuf;

pub struct Report<'a> {
    /// When the report was taken, in Unix milliseconds.
    pub now_ms: u64,
    pub run_id: &'a str,
    pub tcp_port: u16,
    pub uptime_secs: u64,
    pub threads: usize,
    /// The keyspace's access clock (Redis's `lru_clock`): seconds, in 24 bits.
    pub lru_clock: u32,
    pub config_file: Option<PathBuf>,
    pub connected_clients: usize,
    pub maxclients: u64,
    /// Clients parked by blocking commands.
    pub blocked_clients: usize,
    /// Clients subscribed to at least one channel or pattern.
    pub pubsub_clients: usize,
    pub memory: Memory,
    pub cpu: CpuTimes,
    pub snapshots: Snapshots,
    /// None while the append-only file is off.
    pub aof: Option<AofState>,
    /// Start-up's load, while it runs.
    pub loading: Option<LoadingState>,
    pub stats: &'a Stats,
    /// Every command called or rejected since the counts were reset, with its name.
    pub commands: Vec<(&'static str, CommandTotals)>,
    pub slowlog_len: usize,
    pub replication: ReplicationState,
    /// Channels and patterns with at least one subscriber.
    pub pubsub_channels: usize,
    pub pubsub_patterns: usize,
    /// Each piece of background work and its state (running, stopped, off).
    pub background: Vec<(&'static str, &'static str)>,
    /// The keyspace: the key counts and the filter summary are read from it when a section
    /// asks, since that visits every key.
    pub store: &'a Store,
}

pub struct Memory {
    pub used: u64,
    pub peak: u64,
    pub rss: u64,
    pub maxmemory: u64,
    /// `maxmemory-policy`, as Redis names it.
    pub policy: &'static str,
    pub total_system: u64,
    /// What `maxmemory` leaves out (`Server::memory_not_counted`).
    pub not_counted_for_evict: u64,
    pub scripts: ScriptMemory,
}

/// The Lua engines' figures, as Redis 7.4's INFO memory names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptMemory {
    /// EVAL's Lua heap (`used_memory_vm_eval`, also `used_memory_lua`).
    pub vm_eval: u64,
    /// EVAL's script cache itself: bodies and SHA1s (`used_memory_scripts_eval`).
    pub scripts_eval: u64,
    pub cached_scripts: u64,
    /// Scripts evicted from EVAL's cache (INFO stats `evicted_scripts`).
    pub evicted_scripts: u64,
    pub functions: u64,
    pub libraries: u64,
    /// FUNCTION's Lua heap (`used_memory_vm_functions`).
    pub vm_functions: u64,
    /// The libraries kept: their names, code and functions (`used_memory_functions`).
    pub functions_memory: u64,
}

/// CPU time the process has used, in seconds: its own threads, and children it waited for.
pub struct CpuTimes {
    pub user: f64,
    pub sys: f64,
    pub user_children: f64,
    pub sys_children: f64,
}

/// Start-up's load of the snapshot and the log, as Redis's INFO describes a load.
pub struct LoadingState {
    pub start_time_secs: u64,
    pub total_bytes: u64,
    pub loaded_bytes: u64,
    pub loaded_perc: f64,
    pub eta_secs: u64,
}

pub struct Snapshots {
    pub changes_since_last: u64,
    pub in_progress: bool,
    pub last_save_ms: u64,
    pub last_ok: bool,
    pub last_duration_ms: u64,
    pub saves: u64,
    /// Size of the snapshot file on disk, 0 without one.
    pub file_bytes: u64,
}

/// INFO replication's fields, rendered by the replication side (they differ by role), and the
/// resyncs counted in INFO stats.
pub struct ReplicationState {
    pub fields: String,
    pub sync_full: u64,
    pub sync_partial_ok: u64,
    pub sync_partial_err: u64,
}

pub struct AofState {
    /// Why the last write to the file failed, while it is failing.
    pub failure: Option<String>,
    pub current_size: u64,
    pub base_size: u64,
    /// Compactions that folded the log into a snapshot since start-up.
    pub rewrites: u64,
    /// How long the syncs of the file took.
    pub fsyncs: Timings,
}

/// How long one kind of operation took, each time: the count, the total, the last one, and a
/// histogram.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings {
    pub count: u64,
    pub total_us: u64,
    pub last_us: u64,
    /// Each bucket's upper bound in microseconds (none for the last, past every bound) and the
    /// operations in it (not cumulative).
    pub buckets: Vec<(Option<u64>, u64)>,
}
