//! The table of settings: each written once, as one entry of `parameters!` below. From it come
//! the `Settings` struct (the entries CONFIG SET may change), the values fixed at start-up, the
//! command-line flags and environment variables, the configuration file's directives,
//! CONFIG GET / SET / REWRITE, `--help` and the README's table of settings.
//!
//! An entry reads `<access> <field>: <type> [as <reader>] { name, [flag,] default, check, [get,]
//! help }`:
//! - access: `runtime` (CONFIG SET may change it; a field of `Settings`, and adding the entry
//!   is all it takes), `fixed` (read at start-up into `Startup`; the server reads it from a
//!   field of `Config` that `Config::from_values` fills, and `get` says which, for CONFIG GET),
//!   or `password` (requirepass, which CONFIG SET may set to any bytes, so it is kept outside
//!   `Settings`);
//! - name: CONFIG GET's name and the file's directive. The flag is `--<name>` unless `flag`
//!   keeps an older one (`--threads`, `--log-level`); the environment variable is `SIEVED_`
//!   and the flag in upper case, dashes as underscores;
//! - reader: the `Value` that reads the text, when it is not the field's type itself: `as Bytes`
//!   for a memory value (`100mb`), which the field holds as a `u64` of bytes;
//! - default: as text, read by the type like any other value;
//! - check: what the type's values must also satisfy (`any` for nothing more).
//!
//! CONFIG GET lists the entries in the order written here.

use super::values::{any, within, Bytes, Invalid, Value};
use super::{
    ClientAuth, Config, Fsync, ReplicaOf, SaveRules, CAPACITY_CEILING, MAX_CAPACITY, MAX_EXPANSION,
};
use crate::filter::{HashScheme, Layout};
use crate::store::EvictionPolicy;
use std::path::PathBuf;
use std::sync::OnceLock;

/// One setting, as the table declares it.
pub(crate) struct Param {
    /// CONFIG GET's name, and the directive of the configuration file.
    pub(crate) name: &'static str,
    /// The flag, without its dashes; also clap's id for the argument.
    pub(crate) flag: &'static str,
    pub(crate) default: &'static str,
    /// What a value looks like (`integer`, `yes|no`, ...).
    pub(crate) kind: &'static str,
    /// Whether the value is a list of words (`save`); see `Value::LIST`.
    pub(crate) list: bool,
    /// Whether an empty value is no directive at all; see `Value::ABSENT_WHEN_EMPTY`.
    pub(crate) absent_when_empty: bool,
    pub(crate) help: &'static str,
    /// Reads and checks `text`, storing it among the values gathered at start-up.
    pub(crate) load: fn(&mut Values, &str) -> Result<(), Invalid>,
    pub(crate) access: Access,
}

/// Where a setting lives once the server runs, and so how CONFIG reaches it.
pub(crate) enum Access {
    /// In `Settings`: CONFIG SET may change it.
    Runtime {
        get: fn(&Settings) -> String,
        set: fn(&mut Settings, &str) -> Result<(), Invalid>,
        /// The value as CONFIG REWRITE writes it (`100mb` where CONFIG GET shows 104857600).
        written: fn(&Settings) -> String,
    },
    /// Fixed at start-up; CONFIG GET reads it back from the `Config`.
    Fixed { get: fn(&Config) -> String },
    /// `requirepass`: CONFIG SET may change it, to bytes that need not be text.
    Password,
}

impl Param {
    /// `SIEVED_` and the flag, upper-cased, dashes as underscores.
    pub(crate) fn env(&self) -> &'static str {
        static NAMES: OnceLock<Vec<String>> = OnceLock::new();
        let names = NAMES.get_or_init(|| {
            PARAMS
                .iter()
                .map(|p| format!("SIEVED_{}", p.flag.to_ascii_uppercase().replace('-', "_")))
                .collect()
        });
        let index = PARAMS
            .iter()
            .position(|p| std::ptr::eq(p, self))
            .expect("a parameter of the table");
        &names[index]
    }
}

/// The parameter CONFIG and the file call `name`, in any case.
pub(crate) fn find(name: &[u8]) -> Option<&'static Param> {
    PARAMS
        .iter()
        .find(|p| p.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Everything the table describes, gathered at start-up before `Config` is built from it.
pub(crate) struct Values {
    pub(crate) settings: Settings,
    pub(crate) startup: Startup,
}

impl Values {
    pub(crate) fn defaults() -> Values {
        Values {
            settings: Settings::defaults(),
            startup: Startup::defaults(),
        }
    }
}

/// Empty, or `<host>:<port>` with a port number (an IPv6 host in brackets, `[::1]:9121`).
/// Takes `&String` because a check's type is `fn(&T)` of the setting's own type.
#[allow(clippy::ptr_arg)]
fn host_and_port(address: &String) -> Result<(), String> {
    if address.is_empty() {
        return Ok(());
    }
    match address.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => Ok(()),
        _ => Err("argument must be <host>:<port>, or empty".into()),
    }
}

/// `text` read by the reader `R` as a `T` that passes `check`.
fn checked<T, R: Value + Into<T>>(
    text: &str,
    check: fn(&T) -> Result<(), String>,
) -> Result<T, Invalid> {
    let value = R::parse(text)?.into();
    check(&value)?;
    Ok(value)
}

/// A default of the table; `defaults_pass_their_own_checks` below proves each one reads.
fn default_of<T, R: Value + Into<T>>(name: &str, text: &str) -> T {
    R::parse(text)
        .unwrap_or_else(|e| panic!("the default of {name} does not read: {e:?}"))
        .into()
}

/// Turns the entries into the `Settings` and `Startup` structs and the `PARAMS` slice. The
/// entries are munched one at a time, so that each lands in its struct while the slice keeps
/// the order they are written in.
macro_rules! parameters {
    (@munch [$($sf:ident: $st:ty as $sr:ty = $sn:literal $sd:literal $sh:literal;)*]
            [$($ff:ident: $ft:ty as $fr:ty = $fn_:literal $fd:literal;)*]
            [$($param:expr,)*]) => {
        /// The settings that may change while the server runs: the table's runtime entries.
        /// Cloned by every reader: the text ones are empty, so free to clone, unless set.
        #[derive(Debug, Clone)]
        pub struct Settings {
            $(#[doc = $sh] pub $sf: $st,)*
        }

        impl Settings {
            fn defaults() -> Settings {
                Settings { $($sf: default_of::<$st, $sr>($sn, $sd),)* }
            }
        }

        /// The values fixed at start-up, as given, before `Config` is built from them.
        pub(crate) struct Startup {
            $(pub(crate) $ff: $ft,)*
        }

        impl Startup {
            fn defaults() -> Startup {
                Startup { $($ff: default_of::<$ft, $fr>($fn_, $fd),)* }
            }
        }

        pub(crate) static PARAMS: &[Param] = &[$($param,)*];
    };
    (@munch [$($s:tt)*] [$($f:tt)*] [$($p:tt)*]
        runtime $field:ident: $ty:ty $(as $reader:ty)? {
            name: $name:literal, $(flag: $flag:literal,)? default: $default:literal,
            check: $check:expr, help: $help:literal $(,)?
        }
        $($rest:tt)*) => {
        parameters!(@munch
            [$($s)* $field: $ty as parameters!(@reader $ty $(, $reader)?) = $name $default $help;]
            [$($f)*]
            [$($p)* parameters!(@param $name [$($flag)?] $default, $ty,
                parameters!(@reader $ty $(, $reader)?), $help, settings.$field, $check,
                Access::Runtime {
                    get: |settings| {
                        <parameters!(@reader $ty $(, $reader)?)>::from(settings.$field.clone())
                            .show()
                    },
                    set: |settings, text| {
                        settings.$field = checked::<$ty, parameters!(@reader $ty $(, $reader)?)>(
                            text, $check,
                        )?;
                        Ok(())
                    },
                    written: |settings| {
                        <parameters!(@reader $ty $(, $reader)?)>::from(settings.$field.clone())
                            .written()
                    },
                }),]
            $($rest)*);
    };
    (@munch [$($s:tt)*] [$($f:tt)*] [$($p:tt)*]
        $access:ident $field:ident: $ty:ty $(as $reader:ty)? {
            name: $name:literal, $(flag: $flag:literal,)? default: $default:literal,
            check: $check:expr, $(get: $get:expr,)? help: $help:literal $(,)?
        }
        $($rest:tt)*) => {
        parameters!(@munch
            [$($s)*]
            [$($f)* $field: $ty as parameters!(@reader $ty $(, $reader)?) = $name $default;]
            [$($p)* parameters!(@param $name [$($flag)?] $default, $ty,
                parameters!(@reader $ty $(, $reader)?), $help, startup.$field, $check,
                parameters!(@access $access $($get)?)),]
            $($rest)*);
    };
    (@param $name:literal [$($flag:literal)?] $default:literal, $ty:ty, $reader:ty,
        $help:literal, $store:ident.$field:ident, $check:expr, $access:expr) => {
        Param {
            name: $name,
            flag: parameters!(@flag $name $($flag)?),
            default: $default,
            kind: <$reader as Value>::KIND,
            list: <$reader as Value>::LIST,
            absent_when_empty: <$reader as Value>::ABSENT_WHEN_EMPTY,
            help: $help,
            load: |values, text| {
                values.$store.$field = checked::<$ty, $reader>(text, $check)?;
                Ok(())
            },
            access: $access,
        }
    };
    (@reader $ty:ty) => { $ty };
    (@reader $ty:ty, $reader:ty) => { $reader };
    (@flag $name:literal) => { $name };
    (@flag $name:literal $flag:literal) => { $flag };
    (@access fixed $get:expr) => { Access::Fixed { get: $get } };
    (@access password) => { Access::Password };
    ($($entries:tt)*) => { parameters!(@munch [] [] [] $($entries)*); };
}

parameters! {
    fixed bind: String {
        name: "bind", default: "127.0.0.1", check: any,
        get: |c| c.bind.show(),
        help: "Address to listen on.",
    }
    fixed port: u16 {
        name: "port", default: "6390", check: any,
        get: |c| c.port.show(),
        help: "TCP port to listen on; 0 picks a free one.",
    }
    fixed tls_port: u16 {
        name: "tls-port", default: "0", check: any,
        get: |c| c.tls.port.unwrap_or(0).show(),
        help: "TLS port to listen on, beside the TCP port; 0 serves no TLS.",
    }
    fixed tls_cert_file: PathBuf {
        name: "tls-cert-file", default: "", check: any,
        get: |c| c.tls.cert_file.show(),
        help: "The server's certificate chain, PEM.",
    }
    fixed tls_key_file: PathBuf {
        name: "tls-key-file", default: "", check: any,
        get: |c| c.tls.key_file.show(),
        help: "The private key of the certificate, PEM (PKCS#8, PKCS#1 or SEC1).",
    }
    fixed tls_ca_cert_file: PathBuf {
        name: "tls-ca-cert-file", default: "", check: any,
        get: |c| c.tls.ca_cert_file.clone().unwrap_or_default().show(),
        help: "The certificate authorities that sign client certificates, PEM.",
    }
    fixed tls_auth_clients: ClientAuth {
        name: "tls-auth-clients", default: "yes", check: any,
        get: |c| c.tls.auth_clients.show(),
        help: "yes: TLS clients must show a certificate signed by tls-ca-cert-file; optional: \
               one is checked if shown; no: none is asked for.",
    }
    fixed tls_client_cert_file: PathBuf {
        name: "tls-client-cert-file", default: "", check: any,
        get: |c| c.tls.client_cert_file.clone().unwrap_or_default().show(),
        help: "The certificate chain this server shows as a TLS client (a replica reaching its \
               primary), PEM; tls-cert-file when empty.",
    }
    fixed tls_client_key_file: PathBuf {
        name: "tls-client-key-file", default: "", check: any,
        get: |c| c.tls.client_key_file.clone().unwrap_or_default().show(),
        help: "The private key of tls-client-cert-file, PEM; tls-key-file when empty.",
    }
    fixed dir: PathBuf {
        name: "dir", default: "./data", check: any,
        get: |c| c.dir.show(),
        help: "Data directory.",
    }
    fixed databases: usize {
        name: "databases", default: "16", check: |n| within(*n, 1, 1024),
        get: |c| c.databases.show(),
        help: "Number of databases, selected with SELECT.",
    }
    fixed threads: Option<usize> {
        name: "io-threads", flag: "threads", default: "",
        check: |n| n.map_or(Ok(()), |n| within(n, 1, 1024)),
        get: |c| c.threads.show(),
        help: "Threads serving client connections; one per core when not given.",
    }
    fixed shards: usize {
        name: "shards", default: "64", check: |n| within(*n, 1, 1 << 16),
        get: |c| c.shards.show(),
        help: "Shards per database (rounded up to a power of two).",
    }
    fixed log_level: String {
        name: "loglevel", flag: "log-level", default: "info",
        check: |level| match level.parse::<tracing::Level>() {
            Ok(_) => Ok(()),
            Err(_) => Err("expected error, warn, info, debug or trace".into()),
        },
        get: |c| c.log_level.show(),
        help: "error, warn, info, debug or trace.",
    }
    runtime save: SaveRules {
        name: "save", default: "3600 1 300 100 60 10000", check: any,
        help: "Snapshot rules as in Redis: pairs of seconds and changes, a snapshot when at \
               least that many writes happened within that many seconds; \"\" turns periodic \
               snapshots off.",
    }
    runtime stop_writes_on_bgsave_error: bool {
        name: "stop-writes-on-bgsave-error", default: "yes", check: any,
        help: "yes: refuse writes with -MISCONF while save points are configured and the last \
               background save failed",
    }
    runtime maxmemory: u64 as Bytes {
        name: "maxmemory", default: "0", check: |n| within(*n, 0, u64::MAX / 2),
        help: "Once the server uses more than this many bytes, evict keys as maxmemory-policy \
               says before each command, and refuse commands that may allocate when none can go; \
               0 for no limit.",
    }
    runtime maxmemory_policy: EvictionPolicy {
        name: "maxmemory-policy", default: "noeviction", check: any,
        help: "What goes when memory is over maxmemory, before each command: noeviction \
               (nothing; commands that may allocate are refused), allkeys-lru, allkeys-lfu, \
               allkeys-random (any key: least recently used, least frequently used, random), \
               volatile-lru, volatile-lfu, volatile-random, volatile-ttl (keys with an expiry \
               time only; volatile-ttl the nearest to expire). As in Redis.",
    }
    runtime maxmemory_samples: u64 {
        name: "maxmemory-samples", default: "5", check: |n| within(*n, 1, i32::MAX as u64),
        help: "Keys sampled per database each time an LRU, LFU or TTL policy picks a key to \
               evict: more is closer to the exact order and costs more.",
    }
    runtime lfu_log_factor: u64 {
        name: "lfu-log-factor", default: "10", check: |n| within(*n, 0, i32::MAX as u64),
        help: "How slowly a key's LFU counter grows: an access increments a counter c with a \
               chance of 1 / ((c - 5) * factor + 1).",
    }
    runtime lfu_decay_time: u64 {
        name: "lfu-decay-time", default: "1", check: |n| within(*n, 0, i32::MAX as u64),
        help: "Minutes without access after which a key's LFU counter loses one; 0 never.",
    }
    runtime maxclients: u64 {
        name: "maxclients", default: "10000", check: |n| within(*n, 1, 1_000_000),
        help: "Most clients connected at once.",
    }
    runtime timeout_secs: u64 {
        name: "timeout", default: "0", check: |n| within(*n, 0, i32::MAX as u64),
        help: "Close a client idle for this many seconds; 0 never does.",
    }
    runtime protected_mode: bool {
        name: "protected-mode", default: "yes", check: any,
        help: "yes: without a password, accept clients from the loopback interface only.",
    }
    runtime metrics_addr: String {
        name: "metrics-addr", default: "", check: host_and_port,
        help: "Serve Prometheus metrics over HTTP at this address (host:port), under /metrics; \
               off when empty. CONFIG SET turns the endpoint on, moves it or turns it off.",
    }
    runtime slowlog_log_slower_than: i64 {
        name: "slowlog-log-slower-than", default: "10000", check: any,
        help: "Commands slower than this many microseconds go to the SLOWLOG; negative turns it \
               off.",
    }
    runtime slowlog_max_len: u64 {
        name: "slowlog-max-len", default: "128", check: |n| within(*n, 0, i64::MAX as u64),
        help: "Entries the SLOWLOG keeps.",
    }
    fixed appendonly: bool {
        name: "appendonly", default: "no", check: any,
        get: |c| c.appendonly.show(),
        help: "yes: log every write to an append-only file, replayed on top of the snapshot at \
               start-up.",
    }
    fixed aof_load_damaged: bool {
        name: "aof-load-damaged", default: "no", check: any,
        get: |c| c.aof_load_damaged.show(),
        help: "yes: when the append-only file is damaged before its end, keep the writes before \
               the damage and start, setting the damaged file aside; no: refuse to start.",
    }
    runtime appendfsync: Fsync {
        name: "appendfsync", default: "everysec", check: any,
        help: "When the append-only file is synced: always (before a write is acknowledged), \
               everysec (at most about a second of writes at risk) or no (when the operating \
               system decides).",
    }
    runtime auto_aof_rewrite_percentage: u64 {
        name: "auto-aof-rewrite-percentage", default: "100",
        check: |n| within(*n, 0, i32::MAX as u64),
        help: "Compact the append-only file (a new snapshot and a fresh file) when it has grown \
               by this percentage since the last compaction; 0 never does.",
    }
    runtime auto_aof_rewrite_min_size: u64 as Bytes {
        name: "auto-aof-rewrite-min-size", default: "67108864",
        check: |n| within(*n, 0, i64::MAX as u64),
        help: "... and is at least this many bytes.",
    }
    runtime bf_error_rate: f64 {
        name: "bf-error-rate", default: "0.01",
        check: |rate| match *rate > 0.0 && *rate < 1.0 {
            true => Ok(()),
            false => Err("argument must be between 0 and 1 exclusive".into()),
        },
        help: "Error rate of filters created implicitly (BF.ADD on a missing key).",
    }
    runtime bf_initial_size: u64 {
        name: "bf-initial-size", default: "100", check: |n| within(*n, 1, MAX_CAPACITY),
        help: "Capacity of filters created implicitly.",
    }
    runtime bf_max_capacity: u64 {
        name: "bf-max-capacity", default: "1073741824",
        check: |n| within(*n, 1, CAPACITY_CEILING),
        help: "Largest capacity BF.RESERVE, BF.INSERT and their CBF.* forms accept. The default, \
               2^30, is RedisBloom's, with its error; raise it for filters of more items (10^10 \
               and more), which max-filter-memory still bounds.",
    }
    runtime bf_expansion_factor: u32 {
        name: "bf-expansion-factor", default: "2", check: |n| within(*n, 0, MAX_EXPANSION),
        help: "Growth factor of filters created implicitly; 0 makes them non-scaling.",
    }
    runtime bf_layout: Layout {
        name: "bf-layout", default: "classic", check: any,
        help: "Bit layout of Bloom filters created from now on: classic (RedisBloom's sizes) or \
               blocked (one cache line per item: faster, a few more bits per item).",
    }
    runtime bf_hash_scheme: HashScheme {
        name: "bf-hash-scheme", default: "murmur", check: any,
        help: "Hash of classic Bloom filters created from now on: murmur (RedisBloom's: identical \
               bits, answers and SCANDUMP) or xxh3 (sieved's own: slightly fewer false positives). \
               Blocked filters always use xxh3; each filter keeps the scheme it was created with.",
    }
    runtime cf_bucket_size: u16 {
        name: "cf-bucket-size", default: "2", check: |n| within(*n, 1, 255),
        help: "Fingerprints per bucket of cuckoo filters created implicitly (CF.ADD, CF.INSERT on \
               a missing key).",
    }
    runtime cf_initial_size: u64 {
        name: "cf-initial-size", default: "1024", check: |n| within(*n, 4, MAX_CAPACITY),
        help: "Capacity of cuckoo filters created implicitly.",
    }
    runtime cf_max_iterations: u16 {
        name: "cf-max-iterations", default: "20", check: |n| within(*n, 1, 65535),
        help: "Evictions a cuckoo filter created implicitly tries before it counts as full.",
    }
    runtime cf_expansion_factor: u16 {
        name: "cf-expansion-factor", default: "1", check: |n| within(*n, 0, 32768),
        help: "Growth factor of cuckoo filters created implicitly (rounded up to a power of two); \
               0 makes them non-scaling.",
    }
    runtime cf_max_expansions: u32 {
        name: "cf-max-expansions", default: "32", check: |n| within(*n, 1, 65536),
        help: "Sub-filters a cuckoo filter may have before adds to it are refused.",
    }
    runtime fq_error_rate: f64 {
        name: "fq-error-rate", default: "0.001",
        check: |rate| match *rate > 0.0 && *rate < 1.0 {
            true => Ok(()),
            false => Err("argument must be between 0 and 1 exclusive".into()),
        },
        help: "Error rate of the seen-set of crawl frontiers created implicitly (FQ.PUSH on a \
               missing key): the share of new URLs dropped as seen.",
    }
    runtime fq_initial_size: u64 {
        name: "fq-initial-size", default: "1000000", check: |n| within(*n, 1, MAX_CAPACITY),
        help: "Capacity of the seen-set of crawl frontiers created implicitly.",
    }
    runtime fq_lease: u64 {
        name: "fq-lease", default: "300000", check: |n| within(*n, 1, 1_000_000_000_000),
        help: "Lease of crawl frontiers created implicitly, in milliseconds.",
    }
    runtime fq_retries: u32 {
        name: "fq-retries", default: "3", check: |n| within(*n, 0, 1_000_000),
        help: "Deliveries an item of a crawl frontier created implicitly gets before it is \
               dead-lettered; 0 never dead-letters.",
    }
    runtime fq_delay: u64 {
        name: "fq-delay", default: "0", check: |n| within(*n, 0, 1_000_000_000_000),
        help: "Least time between two leases from one host, in milliseconds, for crawl \
               frontiers created implicitly.",
    }
    runtime fq_inflight: u32 {
        name: "fq-inflight", default: "0", check: |n| within(*n, 0, 1_000_000),
        help: "Most items of one host leased at once, for crawl frontiers created implicitly; 0 \
               for no limit.",
    }
    runtime busy_reply_threshold: u64 {
        name: "busy-reply-threshold", default: "5000", check: |n| within(*n, 0, i64::MAX as u64),
        help: "Milliseconds a script (EVAL, FCALL) runs before other clients get -BUSY and SCRIPT \
               KILL or FUNCTION KILL may stop it; 0 never does (Redis's lua-time-limit).",
    }
    runtime max_filter_memory: u64 as Bytes {
        name: "max-filter-memory", default: "0",
        check: |n| match *n {
            0 => Ok(()),
            n => within(n, 1024, u64::MAX / 2),
        },
        help: "Largest size of one filter, in bytes; creating or growing past it is refused. \
               0: maxmemory when set, else half the machine's physical memory.",
    }
    runtime proto_max_bulk_len: u64 as Bytes {
        name: "proto-max-bulk-len", default: "536870912",
        check: |n| within(*n, 1024 * 1024, i64::MAX as u64),
        help: "Longest bulk string a request may carry, in bytes.",
    }
    runtime client_query_buffer_limit: u64 as Bytes {
        name: "client-query-buffer-limit", default: "1073741824",
        check: |n| within(*n, 1024 * 1024, i64::MAX as u64),
        help: "Most bytes one client's unfinished request may hold; past it the client is \
               closed, as in Redis.",
    }
    runtime max_query_buffers_memory: u64 as Bytes {
        name: "max-query-buffers-memory", default: "2147483648",
        check: |n| {
            within(*n, 0, i64::MAX as u64)?;
            match *n != 0 && *n < 1024 * 1024 {
                true => Err("argument must be 0 (no limit) or at least 1048576".into()),
                false => Ok(()),
            }
        },
        help: "Most bytes the request buffers of all clients may hold together; a client whose \
               request would take them past it is closed. 0 for no limit.",
    }
    runtime replicaof: ReplicaOf {
        name: "replicaof", default: "", check: any,
        help: "Follow the primary at \"<host> <port>\" as its replica; empty (or REPLICAOF NO \
               ONE) to be a primary. REPLICAOF changes it; CONFIG REWRITE keeps it.",
    }
    runtime masterauth: String {
        name: "masterauth", default: "", check: any,
        help: "Password a replica gives its primary (AUTH); empty for none.",
    }
    runtime masteruser: String {
        name: "masteruser", default: "", check: any,
        help: "User a replica authenticates as with masterauth; empty for AUTH with the \
               password alone.",
    }
    runtime repl_backlog_size: u64 as Bytes {
        name: "repl-backlog-size", default: "1048576",
        check: |n| within(*n, 16 * 1024, i64::MAX as u64),
        help: "Bytes of the replication stream a primary keeps, so that a replica that lost its \
               link can continue from where it was (a partial resync) instead of syncing anew.",
    }
    runtime repl_backlog_ttl: u64 {
        name: "repl-backlog-ttl", default: "3600", check: |n| within(*n, 0, i32::MAX as u64),
        help: "Seconds without any replica after which a primary frees its backlog; 0 never \
               does.",
    }
    runtime repl_timeout: u64 {
        name: "repl-timeout", default: "60", check: |n| within(*n, 1, i32::MAX as u64),
        help: "Seconds of silence after which either end of a replication link drops it.",
    }
    runtime repl_ping_replica_period: u64 {
        name: "repl-ping-replica-period", default: "10",
        check: |n| within(*n, 1, i32::MAX as u64),
        help: "Seconds between the PINGs a primary sends its replicas, so that they can tell a \
               quiet primary from a lost one.",
    }
    runtime replica_serve_stale_data: bool {
        name: "replica-serve-stale-data", default: "yes", check: any,
        help: "yes: a replica whose link is down still answers reads with the data it has; no: \
               it answers -MASTERDOWN.",
    }
    runtime replica_read_only: bool {
        name: "replica-read-only", default: "yes", check: any,
        help: "yes: a replica refuses writes from clients with -READONLY.",
    }
    runtime replica_priority: u64 {
        name: "replica-priority", default: "100", check: |n| within(*n, 0, i32::MAX as u64),
        help: "Sentinel promotes the replica with the lowest priority first; 0 never.",
    }
    runtime replica_announce_ip: String {
        name: "replica-announce-ip", default: "", check: any,
        help: "The address a replica tells its primary to list it under (behind NAT); empty for \
               the address the link comes from.",
    }
    runtime replica_announce_port: u64 {
        name: "replica-announce-port", default: "0", check: |n| within(*n, 0, 65535),
        help: "The port a replica tells its primary to list it under; 0 for its own.",
    }
    runtime min_replicas_to_write: u64 {
        name: "min-replicas-to-write", default: "0", check: |n| within(*n, 0, i32::MAX as u64),
        help: "A primary refuses writes (-NOREPLICAS) unless this many replicas acknowledged the \
               stream within min-replicas-max-lag seconds; 0 for no such check.",
    }
    runtime min_replicas_max_lag: u64 {
        name: "min-replicas-max-lag", default: "10", check: |n| within(*n, 0, i32::MAX as u64),
        help: "Seconds since its last acknowledgement within which a replica counts for \
               min-replicas-to-write.",
    }
    runtime tls_replication: bool {
        name: "tls-replication", default: "no", check: any,
        help: "yes: a replica reaches its primary over TLS, trusting tls-ca-cert-file and \
               showing tls-client-cert-file (or tls-cert-file).",
    }
    password requirepass: String {
        name: "requirepass", default: "", check: any,
        help: "Password clients must give with AUTH or HELLO ... AUTH; empty for none.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_their_own_checks() {
        let mut values = Values::defaults();
        for param in PARAMS {
            (param.load)(&mut values, param.default)
                .unwrap_or_else(|e| panic!("{}: {e:?}", param.name));
        }
    }

    #[test]
    fn flags_and_environment_variables_follow_from_the_name() {
        // Flags sieved had before the table, kept so that no command line breaks.
        let older_flags = [("io-threads", "threads"), ("loglevel", "log-level")];
        for param in PARAMS {
            let flag = older_flags
                .iter()
                .find(|(name, _)| *name == param.name)
                .map_or(param.name, |(_, flag)| flag);
            assert_eq!(param.flag, flag, "{}", param.name);
            let env = format!("SIEVED_{}", flag.to_uppercase().replace('-', "_"));
            assert_eq!(param.env(), env, "{}", param.name);
            assert_eq!(
                find(param.name.to_uppercase().as_bytes()).unwrap().name,
                param.name
            );
        }
        let names: std::collections::HashSet<_> = PARAMS.iter().map(|p| p.name).collect();
        assert_eq!(names.len(), PARAMS.len(), "a name written twice");
    }

    #[test]
    fn runtime_entries_print_what_they_read() {
        let mut settings = Settings::defaults();
        for param in PARAMS {
            if let Access::Runtime { get, set, .. } = param.access {
                let shown = get(&settings);
                set(&mut settings, &shown).unwrap_or_else(|e| panic!("{}: {e:?}", param.name));
                assert_eq!(get(&settings), shown, "{}", param.name);
            }
        }
    }
}
