//! Settings: one table (`table.rs`) declares each of them once, and from it come the
//! command-line flags (each also a `SIEVED_*` environment variable), the configuration file's
//! directives, and the parameters CONFIG GET, SET and REWRITE read and change at run time.
//!
//! Sources, later ones winning: built-in defaults, the configuration file, environment
//! variables, command-line flags.

mod client_auth;
mod file;
mod fsync;
#[cfg(test)]
pub(crate) mod generated_text;
#[cfg(test)]
mod man_pages;
#[cfg(test)]
mod readme;
mod rewrite;
mod save;
mod sources;
mod table;
mod tls_settings;
mod values;

pub use client_auth::ClientAuth;
pub use fsync::Fsync;
pub use save::SaveRules;
pub use sources::command;
pub use table::Settings;
pub use tls_settings::TlsSettings;

use crate::store::glob_match;
use clap::ArgMatches;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use table::{Access, Values, PARAMS};

/// Largest initial capacity a filter may ask for, as RedisBloom 8: `bf-max-capacity`'s default.
pub const MAX_CAPACITY: u64 = 1 << 30;
/// The most `bf-max-capacity` may allow: 2^53, past which capacities stop being exact as the
/// doubles the sizing works in. `max-filter-memory` refuses far smaller filters anyway.
pub const CAPACITY_CEILING: u64 = 1 << 53;
/// Largest growth factor of a scaling filter, as RedisBloom 8.
pub const MAX_EXPANSION: u32 = 32768;

/// Numbers the data directories `default_for_tests` hands out.
static TEST_DIRS: AtomicUsize = AtomicUsize::new(0);

pub struct Config {
    pub bind: String,
    pub port: u16,
    pub tls: TlsSettings,
    pub dir: PathBuf,
    pub threads: usize,
    pub shards: usize,
    pub databases: usize,
    pub log_level: String,
    /// The configuration file read at start-up, as an absolute path: CONFIG REWRITE's target.
    pub file: Option<PathBuf>,
    pub appendonly: bool,
    pub aof_load_damaged: bool,
    settings: RwLock<Settings>,
    /// Read only by AUTH, HELLO and a connection's first command, so a lock of its own.
    requirepass: RwLock<Vec<u8>>,
    /// The settings read on every command or batch, copied out of `settings`: a lock on that
    /// path would be a cache line shared by every connection, and a clone of `Settings` per
    /// batch an allocation whenever a text setting is set.
    hot: HotSettings,
    /// Wakes whoever waits on a setting (idle clients on `timeout`) when CONFIG SET changes any.
    changed: tokio::sync::Notify,
    rewriting: Mutex<()>,
}

impl Config {
    /// Settings from parsed command-line arguments (see `command`) and, when they name one,
    /// the configuration file: a file directive applies only where neither a flag nor an
    /// environment variable set the same thing.
    pub fn from_matches(matches: &ArgMatches) -> Result<Config, String> {
        let (values, file) = sources::gather(matches)?;
        Config::from_values(values, file)
    }

    /// Settings from command-line arguments, the program's name first.
    pub fn from_args<I, T>(args: I) -> Result<Config, String>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = command()
            .try_get_matches_from(args)
            .map_err(|e| e.to_string())?;
        Config::from_matches(&matches)
    }

    /// Defaults for tests and embedding: an ephemeral port, no periodic snapshots, and a data
    /// directory nobody else uses.
    pub fn default_for_tests() -> Config {
        let dir = std::env::temp_dir().join(format!(
            "sieved-test-{}-{}",
            std::process::id(),
            TEST_DIRS.fetch_add(1, Ordering::Relaxed)
        ));
        let dir = dir.display().to_string();
        Config::from_args([
            "sieved",
            "--port",
            "0",
            "--threads",
            "2",
            "--save",
            "",
            "--dir",
            &dir,
        ])
        .expect("defaults are valid")
    }

    /// The settings the table gathered, checked against each other, with the number of
    /// threads worked out when none was given.
    fn from_values(values: Values, file: Option<PathBuf>) -> Result<Config, String> {
        let Values { settings, startup } = values;
        let tls = TlsSettings::from_startup(&startup)?;
        let threads = startup
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Ok(Config {
            bind: startup.bind,
            port: startup.port,
            tls,
            dir: startup.dir,
            threads,
            shards: startup.shards,
            databases: startup.databases,
            log_level: startup.log_level,
            file,
            appendonly: startup.appendonly,
            aof_load_damaged: startup.aof_load_damaged,
            hot: HotSettings::new(&settings),
            settings: RwLock::new(settings),
            requirepass: RwLock::new(startup.requirepass.into_bytes()),
            changed: tokio::sync::Notify::new(),
            rewriting: Mutex::new(()),
        })
    }

    pub fn settings(&self) -> Settings {
        self.settings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn requires_password(&self) -> bool {
        !self
            .requirepass
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// Compares in time that depends on the lengths only, not on where the bytes differ.
    pub fn password_matches(&self, given: &[u8]) -> bool {
        let expected = self.requirepass.read().unwrap_or_else(|p| p.into_inner());
        let mut difference = (expected.len() ^ given.len()) as u64;
        for i in 0..given.len().max(expected.len()) {
            let a = expected.get(i).copied().unwrap_or(0);
            let b = given.get(i).copied().unwrap_or(0);
            difference |= u64::from(a ^ b);
        }
        !expected.is_empty() && std::hint::black_box(difference) == 0
    }

    fn set_requirepass(&self, password: &[u8]) {
        *self.requirepass.write().unwrap_or_else(|p| p.into_inner()) = password.to_vec();
    }

    /// CONFIG GET: every parameter whose name matches the glob, with its current value.
    pub fn get_matching(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let settings = self.settings();
        PARAMS
            .iter()
            .filter(|p| glob_match(pattern, p.name.as_bytes(), true))
            .map(|p| {
                let value = match p.access {
                    Access::Runtime { get, .. } => get(&settings),
                    Access::Fixed { get } => get(self),
                    Access::Password => {
                        let password = self.requirepass.read().unwrap_or_else(|p| p.into_inner());
                        String::from_utf8_lossy(&password).into_owned()
                    }
                };
                (p.name, value)
            })
            .collect()
    }

    /// CONFIG SET of several parameters at once: all are applied, or none.
    pub fn set_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<(), String> {
        let mut guard = self.settings.write().unwrap_or_else(|p| p.into_inner());
        let mut updated = guard.clone();
        let mut password = None;
        for (name, value) in pairs {
            let param = table::find(name).ok_or_else(|| {
                format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                    String::from_utf8_lossy(name)
                )
            })?;
            let fail = |why: &str| {
                format!(
                    "ERR CONFIG SET failed (possibly related to argument '{}') - {why}",
                    param.name
                )
            };
            let set = match param.access {
                Access::Runtime { set, .. } => set,
                Access::Fixed { .. } => return Err(fail("can't set immutable config")),
                Access::Password => {
                    password = Some(*value);
                    continue;
                }
            };
            let value = std::str::from_utf8(value).map_err(|_| fail("argument must be text"))?;
            set(&mut updated, value).map_err(|why| fail(&why.for_client()))?;
        }
        self.hot.store(&updated);
        *guard = updated;
        if let Some(password) = password {
            self.set_requirepass(password);
        }
        self.changed.notify_waiters();
        Ok(())
    }

    /// Completes at the next successful CONFIG SET; create it before reading the settings it
    /// is to watch, so that no change slips in between.
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Bytes of memory past which commands that may allocate are refused; 0 for no limit.
    pub fn maxmemory(&self) -> u64 {
        self.hot.maxmemory.load(Ordering::Relaxed)
    }

    /// `timeout`: seconds a client may idle; 0 for ever.
    pub fn timeout_secs(&self) -> u64 {
        self.hot.timeout_secs.load(Ordering::Relaxed)
    }

    /// `max-filter-memory`, as set (0: derived from the machine).
    pub fn max_filter_memory(&self) -> u64 {
        self.hot.max_filter_memory.load(Ordering::Relaxed)
    }

    /// `bf-max-capacity`: the largest capacity a RESERVE or INSERT may ask for.
    pub fn bf_max_capacity(&self) -> u64 {
        self.hot.bf_max_capacity.load(Ordering::Relaxed)
    }

    /// `client-query-buffer-limit`.
    pub fn client_query_buffer_limit(&self) -> u64 {
        self.hot.client_query_buffer_limit.load(Ordering::Relaxed)
    }

    /// `max-query-buffers-memory`; 0 for no limit.
    pub fn max_query_buffers_memory(&self) -> u64 {
        self.hot.max_query_buffers_memory.load(Ordering::Relaxed)
    }

    /// Microseconds past which a command is logged as slow; negative when the log is off.
    pub fn slowlog_threshold_us(&self) -> i64 {
        self.hot.slowlog_threshold_us.load(Ordering::Relaxed)
    }
}

/// Copies of the settings that hot paths read (see `Config::hot`), kept in step by CONFIG SET.
struct HotSettings {
    slowlog_threshold_us: AtomicI64,
    maxmemory: AtomicU64,
    timeout_secs: AtomicU64,
    client_query_buffer_limit: AtomicU64,
    max_query_buffers_memory: AtomicU64,
    max_filter_memory: AtomicU64,
    bf_max_capacity: AtomicU64,
}

impl HotSettings {
    fn new(settings: &Settings) -> HotSettings {
        let hot = HotSettings {
            slowlog_threshold_us: AtomicI64::new(0),
            maxmemory: AtomicU64::new(0),
            timeout_secs: AtomicU64::new(0),
            client_query_buffer_limit: AtomicU64::new(0),
            max_query_buffers_memory: AtomicU64::new(0),
            max_filter_memory: AtomicU64::new(0),
            bf_max_capacity: AtomicU64::new(0),
        };
        hot.store(settings);
        hot
    }

    fn store(&self, settings: &Settings) {
        let relaxed = Ordering::Relaxed;
        self.slowlog_threshold_us
            .store(settings.slowlog_log_slower_than, relaxed);
        self.maxmemory.store(settings.maxmemory, relaxed);
        self.timeout_secs.store(settings.timeout_secs, relaxed);
        self.client_query_buffer_limit
            .store(settings.client_query_buffer_limit, relaxed);
        self.max_query_buffers_memory
            .store(settings.max_query_buffers_memory, relaxed);
        self.max_filter_memory
            .store(settings.max_filter_memory, relaxed);
        self.bf_max_capacity
            .store(settings.bf_max_capacity, relaxed);
    }
}

/// `replicaof`: the primary to follow, if any. Written `<host> <port>`, two words, as in Redis's
/// configuration files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaOf(pub Option<(String, u16)>);

impl ReplicaOf {
    pub(crate) fn parse(text: &str) -> Result<ReplicaOf, String> {
        let mut words = text.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (None, _, _) => Ok(ReplicaOf(None)),
            (Some(host), Some(port), None) => match port.parse::<u16>() {
                Ok(port) if port > 0 => Ok(ReplicaOf(Some((host.to_string(), port)))),
                _ => Err("argument must be '<host> <port>' with a port from 1 to 65535".into()),
            },
            _ => Err("argument must be '<host> <port>'".into()),
        }
    }

    pub(crate) fn show(&self) -> String {
        self.0
            .as_ref()
            .map_or(String::new(), |(host, port)| format!("{host} {port}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_is_all_or_nothing() {
        let config = Config::default_for_tests();
        let err = config
            .set_many(&[(b"bf-error-rate", b"0.5"), (b"bf-initial-size", b"0")])
            .unwrap_err();
        assert!(err.contains("bf-initial-size"), "{err}");
        assert_eq!(config.settings().bf_error_rate, 0.01);
        config.set_many(&[(b"BF-ERROR-RATE", b"0.5")]).unwrap();
        assert_eq!(config.settings().bf_error_rate, 0.5);
        assert!(config
            .set_many(&[(b"port", b"1")])
            .unwrap_err()
            .contains("immutable"));
        assert_eq!(config.get_matching(b"bf-*").len(), 6);
    }

    #[test]
    fn stop_writes_on_bgsave_error_reads_from_flags_and_config_set() {
        let config = Config::default_for_tests();
        assert!(config.settings().stop_writes_on_bgsave_error);
        config
            .set_many(&[(b"stop-writes-on-bgsave-error", b"no")])
            .unwrap();
        assert!(!config.settings().stop_writes_on_bgsave_error);
        assert_eq!(
            config.get_matching(b"stop-writes-*"),
            [("stop-writes-on-bgsave-error", "no".to_string())]
        );
        assert_eq!(
            config
                .set_many(&[(b"stop-writes-on-bgsave-error", b"maybe")])
                .unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'stop-writes-on-bgsave-error') \
             - argument must be 'yes' or 'no'"
        );
        let flagged = Config::from_args([
            "sieved",
            "--port",
            "0",
            "--stop-writes-on-bgsave-error",
            "NO",
        ])
        .unwrap();
        assert!(!flagged.settings().stop_writes_on_bgsave_error);
    }

    #[test]
    fn passwords_compare_exactly() {
        let config = Config::default_for_tests();
        assert!(!config.requires_password());
        assert!(!config.password_matches(b""));
        config.set_many(&[(b"requirepass", b"s3cret")]).unwrap();
        assert!(config.requires_password());
        assert!(config.password_matches(b"s3cret"));
        for wrong in [&b"s3cre"[..], b"s3crett", b"S3cret", b""] {
            assert!(!config.password_matches(wrong));
        }
        assert_eq!(
            config.get_matching(b"requirepass"),
            [("requirepass", "s3cret".to_string())]
        );
    }
}
