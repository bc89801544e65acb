//! Settings: command-line flags (each also a `SIEVED_*` environment variable), the configuration
//! file, and the table of parameters CONFIG GET and CONFIG SET read and change at run time.
//!
//! Sources, later ones winning: built-in defaults, the configuration file, environment
//! variables, command-line flags.

mod file;
mod fsync;

pub use fsync::Fsync;

use crate::filter::Layout;
use crate::store::glob_match;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser};
use file::Update;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

/// Largest initial capacity a filter may ask for, as RedisBloom 8.
pub const MAX_CAPACITY: u64 = 1 << 30;
/// Largest growth factor of a scaling filter, as RedisBloom 8.
pub const MAX_EXPANSION: u32 = 32768;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "sieved",
    version,
    about = "A Redis-protocol server for Bloom filters"
)]
pub struct Flags {
    /// Address to listen on.
    #[arg(long, env = "SIEVED_BIND", default_value = "127.0.0.1")]
    pub bind: String,
    /// TCP port to listen on; 0 picks a free one.
    #[arg(long, env = "SIEVED_PORT", default_value_t = 6390)]
    pub port: u16,
    /// TLS port to listen on, beside the TCP port; 0 serves no TLS.
    #[arg(long, env = "SIEVED_TLS_PORT", default_value_t = 0)]
    pub tls_port: u16,
    /// The server's certificate chain, PEM.
    #[arg(long, env = "SIEVED_TLS_CERT_FILE", default_value = "")]
    pub tls_cert_file: String,
    /// The private key of the certificate, PEM (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "SIEVED_TLS_KEY_FILE", default_value = "")]
    pub tls_key_file: String,
    /// The certificate authorities that sign client certificates, PEM.
    #[arg(long, env = "SIEVED_TLS_CA_CERT_FILE", default_value = "")]
    pub tls_ca_cert_file: String,
    /// yes: TLS clients must show a certificate signed by tls-ca-cert-file; optional: one is
    /// checked if shown; no: none is asked for.
    #[arg(long, env = "SIEVED_TLS_AUTH_CLIENTS", default_value = "yes")]
    pub tls_auth_clients: String,
    /// Data directory.
    #[arg(long, env = "SIEVED_DIR", default_value = "./data")]
    pub dir: PathBuf,
    /// Worker threads; defaults to the number of cores.
    #[arg(long, env = "SIEVED_THREADS")]
    pub threads: Option<usize>,
    /// Shards per database (rounded up to a power of two).
    #[arg(long, env = "SIEVED_SHARDS", default_value_t = 64)]
    pub shards: usize,
    /// error, warn, info, debug or trace.
    #[arg(long, env = "SIEVED_LOG_LEVEL", default_value = "info")]
    pub log_level: String,
    /// Number of databases, selected with SELECT.
    #[arg(long, env = "SIEVED_DATABASES", default_value_t = 16)]
    pub databases: usize,
    /// Error rate of filters created implicitly (BF.ADD on a missing key).
    #[arg(long, env = "SIEVED_BF_ERROR_RATE", default_value_t = 0.01)]
    pub bf_error_rate: f64,
    /// Capacity of filters created implicitly.
    #[arg(long, env = "SIEVED_BF_INITIAL_SIZE", default_value_t = 100)]
    pub bf_initial_size: u64,
    /// Growth factor of filters created implicitly; 0 makes them non-scaling.
    #[arg(long, env = "SIEVED_BF_EXPANSION_FACTOR", default_value_t = 2)]
    pub bf_expansion_factor: u32,
    /// Bit layout of Bloom filters created from now on: classic (RedisBloom's sizes) or blocked
    /// (one cache line per item: faster, a few more bits per item).
    #[arg(long, env = "SIEVED_BF_LAYOUT", default_value = "classic")]
    pub bf_layout: String,
    /// Largest size of one filter, in bytes; creating or growing past it is refused.
    #[arg(long, env = "SIEVED_MAX_FILTER_MEMORY", default_value_t = 1 << 30)]
    pub max_filter_memory: u64,
    /// Longest bulk string a request may carry, in bytes.
    #[arg(long, env = "SIEVED_PROTO_MAX_BULK_LEN", default_value_t = 512 * 1024 * 1024)]
    pub proto_max_bulk_len: u64,
    /// Most bytes one client's unfinished request may hold; past it the client is closed, as in
    /// Redis.
    #[arg(long, env = "SIEVED_CLIENT_QUERY_BUFFER_LIMIT", default_value_t = 1024 * 1024 * 1024)]
    pub client_query_buffer_limit: u64,
    /// Most bytes the request buffers of all clients may hold together; a client whose request
    /// would take them past it is closed. 0 for no limit.
    #[arg(
        long,
        env = "SIEVED_MAX_QUERY_BUFFERS_MEMORY",
        default_value_t = 2 * 1024 * 1024 * 1024
    )]
    pub max_query_buffers_memory: u64,
    /// Snapshot rules as in Redis: "<seconds> <changes> ...", a snapshot when at least <changes>
    /// writes happened within <seconds>; "" turns periodic snapshots off.
    #[arg(long, env = "SIEVED_SAVE", default_value = "3600 1 300 100 60 10000")]
    pub save: String,
    /// Password clients must give with AUTH or HELLO ... AUTH; empty for none.
    #[arg(
        long,
        env = "SIEVED_REQUIREPASS",
        default_value = "",
        hide_env_values = true
    )]
    pub requirepass: String,
    /// yes: without a password, accept clients from the loopback interface only.
    #[arg(long, env = "SIEVED_PROTECTED_MODE", default_value = "yes")]
    pub protected_mode: String,
    /// Most clients connected at once.
    #[arg(long, env = "SIEVED_MAXCLIENTS", default_value_t = 10000)]
    pub maxclients: u64,
    /// Close a client idle for this many seconds; 0 never does.
    #[arg(long, env = "SIEVED_TIMEOUT", default_value_t = 0)]
    pub timeout: u64,
    /// Refuse writes that may allocate once the server uses this many bytes; 0 for no limit.
    #[arg(long, env = "SIEVED_MAXMEMORY", default_value_t = 0)]
    pub maxmemory: u64,
    /// Commands slower than this many microseconds go to the SLOWLOG; negative turns it off.
    #[arg(
        long,
        env = "SIEVED_SLOWLOG_LOG_SLOWER_THAN",
        default_value_t = 10000,
        allow_negative_numbers = true
    )]
    pub slowlog_log_slower_than: i64,
    /// Entries the SLOWLOG keeps.
    #[arg(long, env = "SIEVED_SLOWLOG_MAX_LEN", default_value_t = 128)]
    pub slowlog_max_len: u64,
    /// Serve Prometheus metrics over HTTP at this address (host:port), under /metrics; off
    /// when empty.
    #[arg(long, env = "SIEVED_METRICS_ADDR", default_value = "")]
    pub metrics_addr: String,
    /// yes: log every write to an append-only file, replayed on top of the snapshot at start-up.
    #[arg(long, env = "SIEVED_APPENDONLY", default_value = "no")]
    pub appendonly: String,
    /// When the append-only file is synced: always (before a write is acknowledged), everysec
    /// (at most about a second of writes at risk) or no (when the operating system decides).
    #[arg(long, env = "SIEVED_APPENDFSYNC", default_value = "everysec")]
    pub appendfsync: String,
    /// Compact the append-only file (a new snapshot and a fresh file) when it has grown by
    /// this percentage since the last compaction; 0 never does.
    #[arg(
        long,
        env = "SIEVED_AUTO_AOF_REWRITE_PERCENTAGE",
        default_value_t = 100
    )]
    pub auto_aof_rewrite_percentage: u64,
    /// ... and is at least this many bytes.
    #[arg(long, env = "SIEVED_AUTO_AOF_REWRITE_MIN_SIZE", default_value_t = 64 * 1024 * 1024)]
    pub auto_aof_rewrite_min_size: u64,
    /// yes: when the append-only file is damaged before its end, keep the writes before the
    /// damage and start, setting the damaged file aside; no: refuse to start.
    #[arg(long, env = "SIEVED_AOF_LOAD_DAMAGED", default_value = "no")]
    pub aof_load_damaged: String,
    /// Configuration file, in redis.conf's `directive value` style; environment variables and
    /// flags override what it says.
    #[arg(long, env = "SIEVED_CONFIG")]
    pub config: Option<PathBuf>,
}

/// Periodic snapshot rules: (seconds, changes) pairs, at most `SaveRules::MAX`. Kept in a fixed
/// array so that `Settings` stays `Copy` and reading it never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SaveRules {
    rules: [(u64, u64); SaveRules::MAX],
    len: usize,
}

impl SaveRules {
    pub const MAX: usize = 8;

    pub fn parse(text: &str) -> Result<SaveRules, String> {
        let numbers: Vec<u64> = text
            .split_whitespace()
            .map(|word| {
                word.parse()
                    .map_err(|_| format!("invalid save parameter '{word}'"))
            })
            .collect::<Result<_, _>>()?;
        if numbers.len() % 2 != 0 {
            return Err("save rules come in pairs: <seconds> <changes>".into());
        }
        if numbers.len() / 2 > Self::MAX {
            return Err(format!("at most {} save rules", Self::MAX));
        }
        let mut rules = SaveRules::default();
        for pair in numbers.chunks(2) {
            rules.rules[rules.len] = (pair[0], pair[1]);
            rules.len += 1;
        }
        Ok(rules)
    }

    pub fn rules(&self) -> &[(u64, u64)] {
        &self.rules[..self.len]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether a snapshot is due, `elapsed_secs` after the last one with `changes` since.
    pub fn due(&self, elapsed_secs: u64, changes: u64) -> bool {
        changes > 0
            && self
                .rules()
                .iter()
                .any(|&(seconds, min_changes)| elapsed_secs >= seconds && changes >= min_changes)
    }
}

impl std::fmt::Display for SaveRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words: Vec<String> = self
            .rules()
            .iter()
            .map(|(s, c)| format!("{s} {c}"))
            .collect();
        f.write_str(&words.join(" "))
    }
}

/// `tls-auth-clients`: what a TLS client has to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// A certificate signed by the CA: `yes`.
    Required,
    /// Checked against the CA when the client shows one: `optional`.
    Optional,
    /// Never asked for: `no`.
    Off,
}

impl ClientAuth {
    pub fn parse(value: &str) -> Result<ClientAuth, String> {
        match value.to_ascii_lowercase().as_str() {
            "yes" => Ok(ClientAuth::Required),
            "optional" => Ok(ClientAuth::Optional),
            "no" => Ok(ClientAuth::Off),
            _ => Err("argument must be 'yes', 'no' or 'optional'".into()),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::Required => "yes",
            ClientAuth::Optional => "optional",
            ClientAuth::Off => "no",
        }
    }
}

/// The TLS listener's settings, fixed at start-up.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// `None` serves no TLS. `Some(0)` picks a free port, which only embedding and tests can
    /// ask for: the tls-port flag's 0 means "off", as in Redis.
    pub port: Option<u16>,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub ca_cert_file: Option<PathBuf>,
    pub auth_clients: ClientAuth,
}

impl TlsSettings {
    fn from_flags(flags: &Flags) -> Result<TlsSettings, String> {
        let path = |value: &str| (!value.is_empty()).then(|| PathBuf::from(value));
        let settings = TlsSettings {
            port: (flags.tls_port != 0).then_some(flags.tls_port),
            cert_file: PathBuf::from(&flags.tls_cert_file),
            key_file: PathBuf::from(&flags.tls_key_file),
            ca_cert_file: path(&flags.tls_ca_cert_file),
            auth_clients: ClientAuth::parse(&flags.tls_auth_clients)
                .map_err(|e| format!("--tls-auth-clients: {e}"))?,
        };
        if settings.port.is_none() {
            return Ok(settings);
        }
        if flags.tls_port == flags.port {
            return Err("--tls-port: must differ from --port".into());
        }
        if flags.tls_cert_file.is_empty() || flags.tls_key_file.is_empty() {
            return Err("--tls-port: needs --tls-cert-file and --tls-key-file".into());
        }
        if settings.auth_clients != ClientAuth::Off && settings.ca_cert_file.is_none() {
            return Err(format!(
                "--tls-auth-clients {}: needs --tls-ca-cert-file, the authority that signs \
                 client certificates (or --tls-auth-clients no, to ask for none)",
                settings.auth_clients.name()
            ));
        }
        Ok(settings)
    }
}

static TEST_DIRS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The settings that may change while the server runs.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub bf_error_rate: f64,
    pub bf_initial_size: u64,
    pub bf_expansion_factor: u32,
    pub bf_layout: Layout,
    pub max_filter_memory: u64,
    pub proto_max_bulk_len: u64,
    pub client_query_buffer_limit: u64,
    pub max_query_buffers_memory: u64,
    pub save: SaveRules,
    pub protected_mode: bool,
    pub maxclients: u64,
    pub timeout_secs: u64,
    pub maxmemory: u64,
    pub slowlog_log_slower_than: i64,
    pub slowlog_max_len: u64,
    pub appendfsync: Fsync,
    pub auto_aof_rewrite_percentage: u64,
    pub auto_aof_rewrite_min_size: u64,
}

impl Settings {
    /// Placeholders, each overwritten by its parameter's setter before use.
    fn unset() -> Settings {
        Settings {
            bf_error_rate: 0.0,
            bf_initial_size: 0,
            bf_expansion_factor: 0,
            bf_layout: Layout::Classic,
            max_filter_memory: 0,
            proto_max_bulk_len: 0,
            client_query_buffer_limit: 0,
            max_query_buffers_memory: 0,
            save: SaveRules::default(),
            protected_mode: true,
            maxclients: 0,
            timeout_secs: 0,
            maxmemory: 0,
            slowlog_log_slower_than: 0,
            slowlog_max_len: 0,
            appendfsync: Fsync::EverySec,
            auto_aof_rewrite_percentage: 0,
            auto_aof_rewrite_min_size: 0,
        }
    }
}

pub struct Config {
    pub bind: String,
    pub port: u16,
    pub tls: TlsSettings,
    pub dir: PathBuf,
    pub threads: usize,
    pub shards: usize,
    pub databases: usize,
    pub log_level: String,
    /// Empty when metrics are off.
    pub metrics_addr: String,
    /// The configuration file read at start-up, as an absolute path: CONFIG REWRITE's target.
    pub file: Option<PathBuf>,
    pub appendonly: bool,
    pub aof_load_damaged: bool,
    settings: RwLock<Settings>,
    /// Read only by AUTH, HELLO and a connection's first command, so a lock of its own.
    requirepass: RwLock<Vec<u8>>,
    /// `slowlog-log-slower-than`, copied out of `settings` because every command reads it and a
    /// lock on that path would be shared by all connections.
    slowlog_threshold_us: AtomicI64,
    /// `maxmemory`, copied out of `settings` for the same reason: every write command checks it.
    maxmemory: AtomicU64,
    /// Wakes whoever waits on a setting (idle clients on `timeout`) when CONFIG SET changes any.
    changed: tokio::sync::Notify,
    rewriting: Mutex<()>,
}

impl Config {
    /// Validates flags the way CONFIG SET validates the same parameters.
    pub fn from_flags(flags: Flags) -> Result<Config, String> {
        let mut settings = Settings::unset();
        for (name, value) in [
            ("bf-error-rate", flags.bf_error_rate.to_string()),
            ("bf-initial-size", flags.bf_initial_size.to_string()),
            ("bf-expansion-factor", flags.bf_expansion_factor.to_string()),
            ("bf-layout", flags.bf_layout.clone()),
            ("max-filter-memory", flags.max_filter_memory.to_string()),
            ("proto-max-bulk-len", flags.proto_max_bulk_len.to_string()),
            (
                "client-query-buffer-limit",
                flags.client_query_buffer_limit.to_string(),
            ),
            (
                "max-query-buffers-memory",
                flags.max_query_buffers_memory.to_string(),
            ),
            ("save", flags.save.clone()),
            ("protected-mode", flags.protected_mode.clone()),
            ("maxclients", flags.maxclients.to_string()),
            ("timeout", flags.timeout.to_string()),
            ("maxmemory", flags.maxmemory.to_string()),
            (
                "slowlog-log-slower-than",
                flags.slowlog_log_slower_than.to_string(),
            ),
            ("slowlog-max-len", flags.slowlog_max_len.to_string()),
            ("appendfsync", flags.appendfsync.clone()),
            (
                "auto-aof-rewrite-percentage",
                flags.auto_aof_rewrite_percentage.to_string(),
            ),
            (
                "auto-aof-rewrite-min-size",
                flags.auto_aof_rewrite_min_size.to_string(),
            ),
        ] {
            let param = PARAMS
                .iter()
                .find(|p| p.name == name)
                .expect("known parameter");
            (param.set.expect("mutable"))(&mut settings, &value)
                .map_err(|e| format!("--{name}: {e}"))?;
        }
        if flags.databases == 0 || flags.databases > 1024 {
            return Err("--databases: must be between 1 and 1024".into());
        }
        if flags.shards == 0 || flags.shards > 1 << 16 {
            return Err("--shards: must be between 1 and 65536".into());
        }
        let tls = TlsSettings::from_flags(&flags)?;
        let threads = flags
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        if threads == 0 || threads > 1024 {
            return Err("--threads: must be between 1 and 1024".into());
        }
        let appendonly = yes_or_no(&flags.appendonly).map_err(|e| format!("--appendonly: {e}"))?;
        let aof_load_damaged =
            yes_or_no(&flags.aof_load_damaged).map_err(|e| format!("--aof-load-damaged: {e}"))?;
        Ok(Config {
            appendonly,
            aof_load_damaged,
            bind: flags.bind,
            port: flags.port,
            tls,
            dir: flags.dir,
            threads,
            shards: flags.shards,
            databases: flags.databases,
            log_level: flags.log_level,
            metrics_addr: flags.metrics_addr,
            file: flags.config,
            slowlog_threshold_us: AtomicI64::new(settings.slowlog_log_slower_than),
            maxmemory: AtomicU64::new(settings.maxmemory),
            settings: RwLock::new(settings),
            requirepass: RwLock::new(flags.requirepass.into_bytes()),
            changed: tokio::sync::Notify::new(),
            rewriting: Mutex::new(()),
        })
    }

    /// Settings from parsed command-line arguments and, when they name one, the configuration
    /// file: a file directive applies only where neither a flag nor an environment variable
    /// set the same thing.
    pub fn from_matches(matches: &ArgMatches) -> Result<Config, String> {
        let mut flags = Flags::from_arg_matches(matches).map_err(|e| e.to_string())?;
        if let Some(path) = flags.config.clone() {
            let path = std::path::absolute(&path).unwrap_or(path);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                format!("cannot read the configuration file {}: {e}", path.display())
            })?;
            apply_file(&mut flags, matches, &text)
                .map_err(|e| format!("{}:{e}", path.display()))?;
            flags.config = Some(path);
        }
        Config::from_flags(flags)
    }

    /// Defaults for tests and embedding: an ephemeral port, no periodic snapshots, and a data
    /// directory nobody else uses.
    pub fn default_for_tests() -> Config {
        let dir = std::env::temp_dir().join(format!(
            "sieved-test-{}-{}",
            std::process::id(),
            TEST_DIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let dir = dir.display().to_string();
        let flags = Flags::parse_from([
            "sieved",
            "--port",
            "0",
            "--threads",
            "2",
            "--save",
            "",
            "--dir",
            &dir,
        ]);
        Config::from_flags(flags).expect("defaults are valid")
    }

    pub fn settings(&self) -> Settings {
        *self.settings.read().unwrap_or_else(|p| p.into_inner())
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
        let mut found: Vec<_> = PARAMS
            .iter()
            .filter(|p| glob_match(pattern, p.name.as_bytes(), true))
            .map(|p| (p.name, (p.get)(self, &settings)))
            .collect();
        if glob_match(pattern, b"requirepass", true) {
            let password = self.requirepass.read().unwrap_or_else(|p| p.into_inner());
            found.push((
                "requirepass",
                String::from_utf8_lossy(&password).into_owned(),
            ));
        }
        found
    }

    /// CONFIG SET of several parameters at once: all are applied, or none.
    pub fn set_many(&self, pairs: &[(&[u8], &[u8])]) -> Result<(), String> {
        let mut guard = self.settings.write().unwrap_or_else(|p| p.into_inner());
        let mut updated = *guard;
        let mut password = None;
        for (name, value) in pairs {
            if name.eq_ignore_ascii_case(b"requirepass") {
                password = Some(*value);
                continue;
            }
            let param = PARAMS
                .iter()
                .find(|p| p.name.as_bytes().eq_ignore_ascii_case(name))
                .ok_or_else(|| {
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
            let set = param
                .set
                .ok_or_else(|| fail("can't set immutable config"))?;
            let value = std::str::from_utf8(value).map_err(|_| fail("argument must be text"))?;
            set(&mut updated, value).map_err(|why| fail(&why))?;
        }
        *guard = updated;
        self.slowlog_threshold_us
            .store(updated.slowlog_log_slower_than, Ordering::Relaxed);
        self.maxmemory.store(updated.maxmemory, Ordering::Relaxed);
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
        self.maxmemory.load(Ordering::Relaxed)
    }

    /// Microseconds past which a command is logged as slow; negative when the log is off.
    pub fn slowlog_threshold_us(&self) -> i64 {
        self.slowlog_threshold_us.load(Ordering::Relaxed)
    }

    /// CONFIG REWRITE: writes the parameters CONFIG SET can change back into the configuration
    /// file. Fixed parameters are left as the file has them, so that a `--port` or `SIEVED_DIR`
    /// given for one run does not become permanent.
    pub fn rewrite(&self) -> Result<(), String> {
        let path = self
            .file
            .as_deref()
            .ok_or("ERR The server is running without a config file")?;
        let _one_at_a_time = self.rewriting.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |why: String| format!("ERR Rewriting config file: {why}");
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(fail(e.to_string())),
        };
        let directives = file::parse(&text).map_err(|e| fail(format!("{}:{e}", path.display())))?;
        let settings = self.settings();
        let canonical = |param: &Param, value: &str| {
            let mut scratch = settings;
            (param.set?)(&mut scratch, value).ok()?;
            Some((param.get)(self, &scratch))
        };
        let mut updates: Vec<Update> = PARAMS
            .iter()
            .filter(|param| param.set.is_some())
            .map(|param| {
                let current = (param.get)(self, &settings);
                let written = file_value(&directives, param.name);
                let unchanged = written
                    .as_ref()
                    .is_some_and(|(value, _)| canonical(param, value).as_ref() == Some(&current));
                let default = default_value(param.name).and_then(|d| canonical(param, &d));
                Update {
                    name: param.name,
                    line: (!unchanged).then(|| directive_line(param.name, &current)),
                    add_if_missing: default.as_ref() != Some(&current),
                }
            })
            .collect();
        updates.push(self.requirepass_update(&directives).map_err(fail)?);
        let rewritten = file::rewrite_text(&text, &directives, &updates);
        file::write_atomically(path, &rewritten).map_err(|e| fail(e.to_string()))?;
        tracing::info!(file = %path.display(), "configuration rewritten");
        Ok(())
    }

    /// CONFIG REWRITE's line for `requirepass`, which lives outside the parameter table. A
    /// password that is not UTF-8 cannot be written so that it reads back the same: it stops
    /// the rewrite rather than lock every client out at the next start.
    fn requirepass_update(&self, directives: &[file::Directive]) -> Result<Update, String> {
        let password = self
            .requirepass
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let password = String::from_utf8(password)
            .map_err(|_| "requirepass is not UTF-8 text, which the file cannot hold".to_string())?;
        let unchanged =
            file_value(directives, "requirepass").is_some_and(|(written, _)| written == password);
        Ok(Update {
            name: "requirepass",
            line: (!unchanged).then(|| directive_line("requirepass", &password)),
            add_if_missing: !password.is_empty(),
        })
    }
}

/// A directive of the configuration file: the flag (by clap id) that overrides it, and how its
/// value is stored among the flags.
struct Directive {
    name: &'static str,
    flag: &'static str,
    apply: fn(&mut Flags, &str) -> Result<(), String>,
}

fn yes_or_no(value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

fn parsed<T: std::str::FromStr>(value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("invalid value '{value}'"))
}

const DIRECTIVES: &[Directive] = &[
    Directive {
        name: "bind",
        flag: "bind",
        apply: |f, v| {
            f.bind = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "port",
        flag: "port",
        apply: |f, v| {
            f.port = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "tls-port",
        flag: "tls_port",
        apply: |f, v| {
            f.tls_port = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "tls-cert-file",
        flag: "tls_cert_file",
        apply: |f, v| {
            f.tls_cert_file = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "tls-key-file",
        flag: "tls_key_file",
        apply: |f, v| {
            f.tls_key_file = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "tls-ca-cert-file",
        flag: "tls_ca_cert_file",
        apply: |f, v| {
            f.tls_ca_cert_file = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "tls-auth-clients",
        flag: "tls_auth_clients",
        apply: |f, v| {
            ClientAuth::parse(v)?;
            f.tls_auth_clients = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "dir",
        flag: "dir",
        apply: |f, v| {
            f.dir = PathBuf::from(v);
            Ok(())
        },
    },
    Directive {
        name: "databases",
        flag: "databases",
        apply: |f, v| {
            f.databases = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "io-threads",
        flag: "threads",
        apply: |f, v| {
            f.threads = Some(parsed(v)?);
            Ok(())
        },
    },
    Directive {
        name: "shards",
        flag: "shards",
        apply: |f, v| {
            f.shards = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "loglevel",
        flag: "log_level",
        apply: |f, v| {
            f.log_level = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "save",
        flag: "save",
        apply: |f, v| {
            f.save = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "bf-error-rate",
        flag: "bf_error_rate",
        apply: |f, v| {
            f.bf_error_rate = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "bf-initial-size",
        flag: "bf_initial_size",
        apply: |f, v| {
            f.bf_initial_size = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "bf-expansion-factor",
        flag: "bf_expansion_factor",
        apply: |f, v| {
            f.bf_expansion_factor = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "bf-layout",
        flag: "bf_layout",
        apply: |f, v| {
            f.bf_layout = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "max-filter-memory",
        flag: "max_filter_memory",
        apply: |f, v| {
            f.max_filter_memory = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "proto-max-bulk-len",
        flag: "proto_max_bulk_len",
        apply: |f, v| {
            f.proto_max_bulk_len = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "client-query-buffer-limit",
        flag: "client_query_buffer_limit",
        apply: |f, v| {
            f.client_query_buffer_limit = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "max-query-buffers-memory",
        flag: "max_query_buffers_memory",
        apply: |f, v| {
            f.max_query_buffers_memory = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "slowlog-log-slower-than",
        flag: "slowlog_log_slower_than",
        apply: |f, v| {
            f.slowlog_log_slower_than = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "slowlog-max-len",
        flag: "slowlog_max_len",
        apply: |f, v| {
            f.slowlog_max_len = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "requirepass",
        flag: "requirepass",
        apply: |f, v| {
            f.requirepass = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "protected-mode",
        flag: "protected_mode",
        apply: |f, v| {
            f.protected_mode = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "maxclients",
        flag: "maxclients",
        apply: |f, v| {
            f.maxclients = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "timeout",
        flag: "timeout",
        apply: |f, v| {
            f.timeout = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "maxmemory",
        flag: "maxmemory",
        apply: |f, v| {
            f.maxmemory = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "appendonly",
        flag: "appendonly",
        apply: |f, v| {
            f.appendonly = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "appendfsync",
        flag: "appendfsync",
        apply: |f, v| {
            f.appendfsync = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "auto-aof-rewrite-percentage",
        flag: "auto_aof_rewrite_percentage",
        apply: |f, v| {
            f.auto_aof_rewrite_percentage = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "auto-aof-rewrite-min-size",
        flag: "auto_aof_rewrite_min_size",
        apply: |f, v| {
            f.auto_aof_rewrite_min_size = parsed(v)?;
            Ok(())
        },
    },
    Directive {
        name: "aof-load-damaged",
        flag: "aof_load_damaged",
        apply: |f, v| {
            f.aof_load_damaged = v.to_string();
            Ok(())
        },
    },
    Directive {
        name: "metrics-addr",
        flag: "metrics_addr",
        apply: |f, v| {
            f.metrics_addr = v.to_string();
            Ok(())
        },
    },
];

/// The value the file gives a directive, with the 1-based line that settles it: the last line
/// wins, except for `save`, whose lines add rules until one (`save ""`) clears them, as in Redis.
fn file_value(directives: &[file::Directive], name: &str) -> Option<(String, usize)> {
    let mut found: Option<(String, usize)> = None;
    for directive in directives.iter().filter(|d| d.name == name) {
        let words = directive.args.join(" ");
        let value = match found {
            Some((rules, _)) if name == "save" && !words.trim().is_empty() && !rules.is_empty() => {
                format!("{rules} {words}")
            }
            _ => words,
        };
        found = Some((value, directive.line + 1));
    }
    found
}

fn apply_file(flags: &mut Flags, matches: &ArgMatches, text: &str) -> Result<(), String> {
    let directives = file::parse(text)?;
    for directive in &directives {
        let known = DIRECTIVES.iter().find(|d| d.name == directive.name);
        let line = directive.line + 1;
        if known.is_none() {
            return Err(format!("{line}: unknown directive '{}'", directive.name));
        }
        if directive.name != "save" && directive.args.len() != 1 {
            return Err(format!("{line}: '{}' takes one value", directive.name));
        }
    }
    for known in DIRECTIVES {
        let Some((value, line)) = file_value(&directives, known.name) else {
            continue;
        };
        let fail = |why: String| format!("{line}: {}: {why}", known.name);
        if let Some(set) = PARAMS
            .iter()
            .find(|p| p.name == known.name)
            .and_then(|p| p.set)
        {
            let mut scratch = Settings::unset();
            set(&mut scratch, &value).map_err(fail)?;
        }
        // Checked even where a flag overrides it, so that the file is known good for the day
        // the flag goes.
        let mut applied = flags.clone();
        (known.apply)(&mut applied, &value).map_err(fail)?;
        let overridden = matches!(
            matches.value_source(known.flag),
            Some(ValueSource::EnvVariable | ValueSource::CommandLine)
        );
        if !overridden {
            *flags = applied;
        }
    }
    Ok(())
}

/// A parameter's built-in default, as the flag declares it.
fn default_value(name: &str) -> Option<String> {
    let flag = DIRECTIVES.iter().find(|d| d.name == name)?.flag;
    let command = Flags::command();
    let arg = command.get_arguments().find(|a| a.get_id() == flag)?;
    Some(
        arg.get_default_values()
            .first()?
            .to_string_lossy()
            .into_owned(),
    )
}

/// How a directive is written into the file: `save` as bare numbers, like Redis writes it.
fn directive_line(name: &str, value: &str) -> String {
    if name == "save" && !value.is_empty() {
        format!("save {value}")
    } else {
        format!("{name} {}", file::quote(value))
    }
}

type Getter = fn(&Config, &Settings) -> String;
type Setter = fn(&mut Settings, &str) -> Result<(), String>;

/// A parameter CONFIG knows; `set` is None for those fixed at start-up.
struct Param {
    name: &'static str,
    get: Getter,
    set: Option<Setter>,
}

fn parse_number<T: std::str::FromStr + PartialOrd + std::fmt::Display>(
    value: &str,
    min: T,
    max: T,
) -> Result<T, String> {
    let parsed: T = value
        .parse()
        .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
    if parsed < min || parsed > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(parsed)
}

const PARAMS: &[Param] = &[
    Param {
        name: "bind",
        get: |c, _| c.bind.clone(),
        set: None,
    },
    Param {
        name: "port",
        get: |c, _| c.port.to_string(),
        set: None,
    },
    Param {
        name: "tls-port",
        get: |c, _| c.tls.port.unwrap_or(0).to_string(),
        set: None,
    },
    Param {
        name: "tls-cert-file",
        get: |c, _| c.tls.cert_file.display().to_string(),
        set: None,
    },
    Param {
        name: "tls-key-file",
        get: |c, _| c.tls.key_file.display().to_string(),
        set: None,
    },
    Param {
        name: "tls-ca-cert-file",
        get: |c, _| {
            c.tls
                .ca_cert_file
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        },
        set: None,
    },
    Param {
        name: "tls-auth-clients",
        get: |c, _| c.tls.auth_clients.name().into(),
        set: None,
    },
    Param {
        name: "dir",
        get: |c, _| c.dir.display().to_string(),
        set: None,
    },
    Param {
        name: "databases",
        get: |c, _| c.databases.to_string(),
        set: None,
    },
    Param {
        name: "io-threads",
        get: |c, _| c.threads.to_string(),
        set: None,
    },
    Param {
        name: "shards",
        get: |c, _| c.shards.to_string(),
        set: None,
    },
    Param {
        name: "loglevel",
        get: |c, _| c.log_level.clone(),
        set: None,
    },
    Param {
        name: "save",
        get: |_, s| s.save.to_string(),
        set: Some(|s, v| {
            s.save = SaveRules::parse(v)?;
            Ok(())
        }),
    },
    Param {
        name: "maxmemory",
        get: |_, s| s.maxmemory.to_string(),
        set: Some(|s, v| {
            s.maxmemory = parse_number(v, 0, u64::MAX / 2)?;
            Ok(())
        }),
    },
    Param {
        name: "maxclients",
        get: |_, s| s.maxclients.to_string(),
        set: Some(|s, v| {
            s.maxclients = parse_number(v, 1, 1_000_000)?;
            Ok(())
        }),
    },
    Param {
        name: "timeout",
        get: |_, s| s.timeout_secs.to_string(),
        set: Some(|s, v| {
            s.timeout_secs = parse_number(v, 0, i32::MAX as u64)?;
            Ok(())
        }),
    },
    Param {
        name: "protected-mode",
        get: |_, s| if s.protected_mode { "yes" } else { "no" }.into(),
        set: Some(|s, v| {
            s.protected_mode = match v.to_ascii_lowercase().as_str() {
                "yes" => true,
                "no" => false,
                _ => return Err("argument must be 'yes' or 'no'".into()),
            };
            Ok(())
        }),
    },
    Param {
        name: "metrics-addr",
        get: |c, _| c.metrics_addr.clone(),
        set: None,
    },
    Param {
        name: "slowlog-log-slower-than",
        get: |_, s| s.slowlog_log_slower_than.to_string(),
        set: Some(|s, v| {
            s.slowlog_log_slower_than = parse_number(v, i64::MIN, i64::MAX)?;
            Ok(())
        }),
    },
    Param {
        name: "slowlog-max-len",
        get: |_, s| s.slowlog_max_len.to_string(),
        set: Some(|s, v| {
            s.slowlog_max_len = parse_number(v, 0, i64::MAX as u64)?;
            Ok(())
        }),
    },
    Param {
        name: "appendonly",
        get: |c, _| if c.appendonly { "yes" } else { "no" }.into(),
        set: None,
    },
    Param {
        name: "aof-load-damaged",
        get: |c, _| if c.aof_load_damaged { "yes" } else { "no" }.into(),
        set: None,
    },
    Param {
        name: "appendfsync",
        get: |_, s| s.appendfsync.name().into(),
        set: Some(|s, v| {
            s.appendfsync = Fsync::parse(v).ok_or_else(|| {
                "argument must be one of 'always', 'everysec' or 'no'".to_string()
            })?;
            Ok(())
        }),
    },
    Param {
        name: "auto-aof-rewrite-percentage",
        get: |_, s| s.auto_aof_rewrite_percentage.to_string(),
        set: Some(|s, v| {
            s.auto_aof_rewrite_percentage = parse_number(v, 0, i32::MAX as u64)?;
            Ok(())
        }),
    },
    Param {
        name: "auto-aof-rewrite-min-size",
        get: |_, s| s.auto_aof_rewrite_min_size.to_string(),
        set: Some(|s, v| {
            s.auto_aof_rewrite_min_size = parse_number(v, 0, i64::MAX as u64)?;
            Ok(())
        }),
    },
    Param {
        name: "bf-error-rate",
        get: |_, s| s.bf_error_rate.to_string(),
        set: Some(|s, v| {
            let rate: f64 = v
                .parse()
                .map_err(|_| "argument couldn't be parsed into a number".to_string())?;
            if !(rate > 0.0 && rate < 1.0) {
                return Err("argument must be between 0 and 1 exclusive".into());
            }
            s.bf_error_rate = rate;
            Ok(())
        }),
    },
    Param {
        name: "bf-initial-size",
        get: |_, s| s.bf_initial_size.to_string(),
        set: Some(|s, v| {
            s.bf_initial_size = parse_number(v, 1, MAX_CAPACITY)?;
            Ok(())
        }),
    },
    Param {
        name: "bf-expansion-factor",
        get: |_, s| s.bf_expansion_factor.to_string(),
        set: Some(|s, v| {
            s.bf_expansion_factor = parse_number(v, 0, MAX_EXPANSION)?;
            Ok(())
        }),
    },
    Param {
        name: "bf-layout",
        get: |_, s| s.bf_layout.name().into(),
        set: Some(|s, v| {
            s.bf_layout =
                Layout::parse(v).ok_or("argument must be 'classic' or 'blocked'".to_string())?;
            Ok(())
        }),
    },
    Param {
        name: "max-filter-memory",
        get: |_, s| s.max_filter_memory.to_string(),
        set: Some(|s, v| {
            s.max_filter_memory = parse_number(v, 1024, u64::MAX / 2)?;
            Ok(())
        }),
    },
    Param {
        name: "proto-max-bulk-len",
        get: |_, s| s.proto_max_bulk_len.to_string(),
        set: Some(|s, v| {
            s.proto_max_bulk_len = parse_number(v, 1024 * 1024, i64::MAX as u64)?;
            Ok(())
        }),
    },
    Param {
        name: "client-query-buffer-limit",
        get: |_, s| s.client_query_buffer_limit.to_string(),
        set: Some(|s, v| {
            s.client_query_buffer_limit = parse_number(v, 1024 * 1024, i64::MAX as u64)?;
            Ok(())
        }),
    },
    Param {
        name: "max-query-buffers-memory",
        get: |_, s| s.max_query_buffers_memory.to_string(),
        set: Some(|s, v| {
            let limit = parse_number(v, 0, i64::MAX as u64)?;
            if limit != 0 && limit < 1024 * 1024 {
                return Err("argument must be 0 (no limit) or at least 1048576".into());
            }
            s.max_query_buffers_memory = limit;
            Ok(())
        }),
    },
];

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
        assert_eq!(config.get_matching(b"bf-*").len(), 4);
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

    #[test]
    fn save_rules_parse_like_redis() {
        let rules = SaveRules::parse("3600 1 300 100 60 10000").unwrap();
        assert_eq!(rules.to_string(), "3600 1 300 100 60 10000");
        assert!(rules.due(61, 10000));
        assert!(!rules.due(59, 10000));
        assert!(rules.due(3600, 1));
        assert!(!rules.due(3600, 0));
        assert!(SaveRules::parse("").unwrap().is_empty());
        assert!(SaveRules::parse("60").is_err());
        assert!(SaveRules::parse("60 x").is_err());
    }
}
