//! Client-visible error strings, each exactly as Redis or RedisBloom sends it (without the leading
//! `-`). Kept in one place so a compatibility check reads one file.

use crate::filter::{FilterError, MergeMismatch, SketchError};

/// Scripting (EVAL, FCALL, SCRIPT, FUNCTION), as Redis 7.4 words them.
pub const SCRIPTING_UNAVAILABLE: &str = "ERR scripting is not available";
pub const NUMKEYS_TOO_MANY: &str = "ERR Number of keys can't be greater than number of args";
pub const NUMKEYS_NEGATIVE: &str = "ERR Number of keys can't be negative";
pub const SCRIPT_WRITE_FLAG_RO: &str =
    "ERR Can not execute a script with write flag using *_ro command.";
pub const FUNCTION_NOT_FOUND: &str = "ERR Function not found";
pub const SCRIPT_UNEXPECTED_REPLY: &str = "ERR unexpected reply";
pub const SCRIPT_UNKNOWN_COMMAND: &str = "ERR Unknown Redis command called from script";
pub const SCRIPT_WRONG_ARGS: &str = "ERR Wrong number of args calling Redis command from script";
pub const SCRIPT_NOT_ALLOWED: &str = "ERR This Redis command is not allowed from script";
pub const SCRIPT_READ_ONLY: &str = "ERR Write commands are not allowed from read-only scripts.";
pub const SCRIPT_FLUSH_MODE: &str = "ERR SCRIPT FLUSH only support SYNC|ASYNC option";
pub const FUNCTION_FLUSH_MODE: &str = "ERR FUNCTION FLUSH only supports SYNC|ASYNC option";
pub const FUNCTION_LIST_NO_NAME: &str = "ERR library name argument was not given";
/// A logged FUNCTION LOAD whose code names no library (it compiled when it was logged).
pub const LIBRARY_UNNAMED: &str = "ERR Missing library metadata";
pub const FUNCTION_LOAD_UNKNOWN_OPTION: &str = "ERR Unknown option given: ";
pub const FUNCTION_LIST_UNKNOWN: &str = "ERR Unknown argument ";
pub const SCRIPT_KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const SYNTAX: &str = "ERR syntax error";
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub const NO_SUCH_KEY: &str = "ERR no such key";
pub const DB_INDEX: &str = "ERR DB index is out of range";
pub const INVALID_DB: &str = "ERR invalid DB index";
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";
pub const EXPIRE_NX_AND_OTHERS: &str =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
pub const EXPIRE_GT_AND_LT: &str = "ERR GT and LT options at the same time are not compatible";
/// EXPIRE's and its siblings' for a word that is none of their options, shown in full.
pub fn unsupported_option(option: &[u8]) -> CmdError {
    CmdError::Owned(format!(
        "ERR Unsupported option {}",
        String::from_utf8_lossy(option)
    ))
}
pub const NOPROTO: &str = "NOPROTO unsupported protocol version";
pub const PROTO_NOT_INTEGER: &str = "ERR Protocol version is not an integer or out of range";
pub const AUTH_NOT_CONFIGURED: &str = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?";
pub const NOAUTH: &str = "NOAUTH Authentication required.";
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
pub const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time";
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
/// Followed by the operating system's reason, as Redis words it.
pub const MISCONF_AOF: &str = "MISCONF Errors writing to the AOF file: ";
pub const MISCONF_RDB: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";
pub const SHUTDOWN_FAILED: &str = "ERR Errors trying to SHUTDOWN. Check logs.";
pub const READONLY: &str = "READONLY You can't write against a read only replica.";
pub const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
/// Redis's answer to a command not flagged `loading` while start-up loads the data.
pub const LOADING: &str = "LOADING Redis is loading the dataset in memory";
pub const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
pub const NOMASTERLINK: &str = "NOMASTERLINK Can't SYNC while not connected with my master";
pub const WAIT_ON_REPLICA: &str = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.";
pub const TIMEOUT_NOT_INTEGER: &str = "ERR timeout is not an integer or out of range";
pub const TIMEOUT_NOT_FLOAT: &str = "ERR timeout is not a float or out of range";
pub const TIMEOUT_RANGE: &str = "ERR timeout is out of range";
pub const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
pub const MAX_CLIENTS: &str = "ERR max number of clients reached";
pub const DENIED: &str = "DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.";
/// SET's, SETEX's, PSETEX's and EXPIRE's, naming the command.
pub fn invalid_expire_time(command: &str) -> CmdError {
    CmdError::Owned(format!("ERR invalid expire time in '{command}' command"))
}
pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
pub const BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
pub const BIT_VALUE: &str = "ERR bit is not an integer or out of range";
pub const BITPOS_BIT: &str = "ERR The bit argument must be 1 or 0.";
pub const BITOP_NOT_ONE_SOURCE: &str = "ERR BITOP NOT must be called with a single source key.";
pub const BITFIELD_BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";
pub const BITFIELD_BAD_OVERFLOW: &str = "ERR Invalid OVERFLOW type specified";
pub const BITFIELD_RO_WRITES: &str = "ERR BITFIELD_RO only supports the GET subcommand";
pub const OFFSET_RANGE: &str = "ERR offset is out of range";
pub const INCR_OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const DECR_OVERFLOW: &str = "ERR decrement would overflow";
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
pub const VALUE_NAN_OR_INF: &str = "ERR value is NaN or Infinity";
pub const FLOAT_NAN_OR_INF: &str = "ERR increment would produce NaN or Infinity";
pub const VALUE_OUT_OF_RANGE: &str = "ERR value is out of range";
pub const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
pub const INVALID_CURSOR: &str = "ERR invalid cursor";
pub const NOVALUES_NOT_HSCAN: &str = "ERR NOVALUES option can only be used in HSCAN";
pub const NOSCORES_NOT_ZSCAN: &str = "ERR NOSCORES option can only be used in ZSCAN";
pub const INDEX_RANGE: &str = "ERR index out of range";
pub const MIN_MAX_FLOAT: &str = "ERR min or max is not a float";
pub const ZSET_NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";
pub const ZADD_XX_AND_NX: &str = "ERR XX and NX options at the same time are not compatible";
pub const ZADD_GT_LT_NX: &str = "ERR GT, LT, and/or NX options at the same time are not compatible";
pub const ZADD_INCR_PAIRS: &str = "ERR INCR option supports a single increment-element pair";
pub const LEX_RANGE_ITEM: &str = "ERR min or max not valid string range item";
pub const ZRANGE_LIMIT: &str =
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
pub const ZRANGE_WITHSCORES_BYLEX: &str =
    "ERR syntax error, WITHSCORES not supported in combination with BYLEX";
pub const NUMKEYS_NOT_POSITIVE: &str = "ERR numkeys should be greater than 0";
pub const LIMIT_NEGATIVE: &str = "ERR LIMIT can't be negative";
pub const COUNT_NOT_POSITIVE: &str = "ERR count should be greater than 0";
pub const LPOS_RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 \
                                  from the second ... or use negative to start from the end of \
                                  the list";
pub const LPOS_RANK_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
pub const LPOS_COUNT_NEGATIVE: &str = "ERR COUNT can't be negative";
pub const LPOS_MAXLEN_NEGATIVE: &str = "ERR MAXLEN can't be negative";
pub const HASH_NOT_INTEGER: &str = "ERR hash value is not an integer";
pub const HASH_NOT_FLOAT: &str = "ERR hash value is not a float";
/// OBJECT FREQ without an LFU `maxmemory-policy`, and OBJECT IDLETIME with one.
pub const NOT_LFU: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
pub const LFU: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
pub const BUSYKEY: &str = "BUSYKEY Target key name already exists.";
pub const RESTORE_BAD_TTL: &str = "ERR Invalid TTL value, must be >= 0";
pub const RESTORE_BAD_IDLETIME: &str = "ERR Invalid IDLETIME value, must be >= 0";
pub const RESTORE_BAD_FREQ: &str = "ERR Invalid FREQ value, must be >= 0 and <= 255";
pub const RESTORE_PAYLOAD_CHECK: &str = "ERR DUMP payload version or checksum are wrong";
pub const RESTORE_BAD_DATA: &str = "ERR Bad data format";
pub const MIGRATE_KEYS_WITH_KEY: &str =
    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string";
pub const MIGRATE_CONNECTING: &str = "IOERR error or timeout connecting to the client";
pub const MIGRATE_WRITING: &str = "IOERR error or timeout writing to target instance";
pub const MIGRATE_READING: &str = "IOERR error or timeout reading to target instance";
pub const CLIENT_NAME_SPACES: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";
/// A command only the write log and the replication stream hold, sent by a client: sieved's
/// own (Redis has no such commands), one error for all of them.
pub fn log_only(name: &str) -> CmdError {
    CmdError::Owned(format!(
        "ERR {} is written only by the server, to its append-only file and replicas; clients cannot send it",
        name.to_uppercase()
    ))
}

pub const BF_NOT_FOUND: &str = "ERR not found";
pub const BF_ITEM_EXISTS: &str = "ERR item exists";
pub const BF_FULL: &str = "ERR non scaling filter is full";
pub const BF_BAD_ERROR_RATE: &str = "ERR bad error rate";
pub const BF_ERROR_RATE_RANGE: &str = "ERR error rate must be in the range (0.000000, 1.000000)";
pub const BF_BAD_CAPACITY: &str = "ERR bad capacity";
pub const BF_CAPACITY_RANGE: &str = "ERR capacity must be in the range [1, 1073741824]";
/// `BF_CAPACITY_RANGE` for a `bf-max-capacity` other than RedisBloom's 2^30.
pub fn bf_capacity_range(max: u64) -> CmdError {
    CmdError::Owned(format!("ERR capacity must be in the range [1, {max}]"))
}
pub const BF_NO_EXPANSION: &str = "ERR no expansion";
pub const BF_BAD_EXPANSION: &str = "ERR bad expansion";
pub const BF_EXPANSION_RANGE: &str = "ERR expansion must be in the range [0, 32768]";
pub const BF_NONSCALING_EXPAND: &str = "Nonscaling filters cannot expand";
pub const BF_INSERT_BAD_ERROR_RATE: &str = "Bad error rate";
pub const BF_INSERT_BAD_CAPACITY: &str = "Bad capacity";
pub const BF_INSERT_BAD_EXPANSION: &str = "Bad expansion";
pub const BF_UNKNOWN_ARGUMENT: &str = "Unknown argument received";
pub const BF_INVALID_INFO: &str = "Invalid information value";
pub const BF_SCANDUMP_NOT_NUMERIC: &str = "Second argument must be numeric";
pub const BF_LOADCHUNK_NOT_NUMERIC: &str = "ERR Second argument must be numeric";
pub const BF_BAD_DATA: &str = "ERR received bad data";
pub const BF_BAD_OFFSET: &str = "ERR invalid offset - no link found";
/// Creating a filter whose first link cannot be sized: only a rate below what the layout
/// supports does that (the blocked layout's floor), since capacities are capped.
pub const BF_RATE_UNREACHABLE: &str =
    "ERR error rate too small: no filter of this layout can meet it";
pub const BF_NO_MEMORY: &str = "ERR Insufficient memory to create filter";
pub const BF_CANNOT_SCALE: &str = "ERR filter cannot grow any further";

/// The CBF.* family reuses the BF strings where the situation is the same; these are its own.
pub const CBF_NO_COUNTER_BITS: &str = "ERR no counter bits";
pub const CBF_BAD_COUNTER_BITS: &str = "ERR bad counter bits";
pub const CBF_COUNTER_BITS_VALUE: &str = "ERR counter bits must be 4 or 8";
pub const CBF_INSERT_BAD_COUNTER_BITS: &str = "Bad counter bits";

// TBF.*: sieved's own, in RedisBloom's style.
pub const TBF_BAD_WINDOW: &str = "ERR bad window";
pub const TBF_WINDOW_RANGE: &str = "ERR window must be at least one millisecond per slice";
pub const TBF_NO_SLICES: &str = "ERR no slices";
pub const TBF_BAD_SLICES: &str = "ERR bad slices";
pub const TBF_SLICES_RANGE: &str = "ERR slices must be in the range [1, 64]";
pub const TBF_FULL: &str = "ERR the window holds its capacity already";

// CF.*: RedisBloom 8.8's words, most without an error code.
pub const CF_BAD_CAPACITY: &str = "Bad capacity";
pub const CF_RESERVE_CAPACITY_RANGE: &str =
    "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]";
pub const CF_INSERT_CAPACITY_RANGE: &str =
    "Capacity must be in the range [cf-bucket-size * 2, 1073741824]";
pub const CF_BAD_MAX_ITERATIONS: &str = "Couldn't parse MAXITERATIONS";
pub const CF_MAX_ITERATIONS_RANGE: &str = "MAXITERATIONS: value must be in the range [1, 65535]";
pub const CF_BAD_BUCKET_SIZE: &str = "Couldn't parse BUCKETSIZE";
pub const CF_BUCKET_SIZE_RANGE: &str = "BUCKETSIZE: value must be in the range [1, 255]";
pub const CF_BAD_EXPANSION: &str = "Couldn't parse EXPANSION";
pub const CF_EXPANSION_RANGE: &str = "EXPANSION: value must be in the range [0, 32768]";
pub const CF_CANNOT_CREATE: &str = "ERR Could not create filter";
pub const CF_MAX_EXPANSIONS: &str = "Maximum expansions reached";
pub const CF_FULL: &str = "Filter is full";
pub const CF_NO_MEMORY: &str = "ERR Insufficient memory";
pub const CF_DEL_NOT_FOUND: &str = "Not found";
pub const CF_COMPACT_NOT_FOUND: &str = "Cuckoo filter was not found";
pub const CF_INVALID_POSITION: &str = "Invalid position";
pub const CF_INVALID_HEADER: &str = "Invalid header";
pub const CF_BAD_HEADER: &str = "Couldn't create filter!";
pub const CF_BAD_CHUNK: &str = "Couldn't load chunk!";

/// The FQ.* family (the crawl frontier) reuses the BF strings for its seen-set; these are its own.
pub const FQ_BAD_LEASE: &str = "ERR bad lease";
pub const FQ_BAD_RETRIES: &str = "ERR bad retries";
pub const FQ_BAD_DELAY: &str = "ERR bad delay";
pub const FQ_BAD_INFLIGHT: &str = "ERR bad inflight";
pub const FQ_BAD_PRIORITY: &str = "ERR bad priority";
pub const FQ_BAD_TIME: &str = "ERR bad time";
pub const FQ_BAD_COUNT: &str = "ERR bad count";
pub const FQ_BAD_TIMEOUT: &str = "ERR bad timeout";
pub const FQ_BAD_ID: &str = "ERR bad id";
pub const FQ_BAD_GROUP: &str = "ERR bad group";
pub const FQ_URL_TOO_LONG: &str = "ERR url too long";
/// FQ.LEASE names an item that is not at the head of its group's queue: a log that does not
/// fit the frontier it is replayed on.
pub const FQ_NOT_QUEUED: &str = "ERR item not queued";

/// BF.MERGE and CBF.MERGE: a source whose shape is not the first filter's (`filter/merge.rs`
/// names the field and both values).
pub fn merge_mismatch(key: &[u8], reference: &[u8], mismatch: &MergeMismatch) -> CmdError {
    CmdError::Owned(format!(
        "ERR cannot merge '{}' with '{}': its {} is {}, not {}",
        shown(key),
        shown(reference),
        mismatch.field,
        mismatch.theirs,
        mismatch.ours
    ))
}
/// CBF.MERGE of a counting filter that has grown (`filter/merge.rs` says why it cannot be).
pub fn merge_grown(key: &[u8], links: usize) -> CmdError {
    CmdError::Owned(format!(
        "ERR cannot merge '{}': counting filters merge only before they grow, and it has {links} \
         sub-filters",
        shown(key)
    ))
}

pub const SLOWLOG_COUNT: &str = "ERR count should be greater than or equal to -1";
pub const MODULE_LOAD: &str = "ERR Error loading the extension: sieved does not load modules; \
                               RedisBloom's commands (module bf) are built in";
pub const MODULE_UNLOAD_BUILT_IN: &str =
    "ERR Error unloading module: bf is built into sieved, not a loaded module";
pub const MODULE_UNLOAD_UNKNOWN: &str = "ERR Error unloading module: no such module with that name";

// RedisBloom's Count-Min sketch (src/rm_cms.c); the sketch's own refusals are `SketchError`s.
pub const CMS_KEY_EXISTS: &str = "CMS: key already exists";
pub const CMS_KEY_MISSING: &str = "CMS: key does not exist";
pub const CMS_CANNOT_PARSE: &str = "CMS: Cannot parse number";
pub const CMS_NEGATIVE: &str = "CMS: Number cannot be negative";
pub const CMS_INVALID_NUMKEYS: &str = "CMS: invalid numkeys";
pub const CMS_KEYS_NOT_POSITIVE: &str = "CMS: Number of keys must be positive";
pub const CMS_WRONG_KEYS: &str = "CMS: wrong number of keys";
pub const CMS_WRONG_KEYS_WEIGHTS: &str = "CMS: wrong number of keys/weights";
pub const CMS_INVALID_WEIGHT: &str = "CMS: invalid weight value";
pub use crate::filter::{
    CMS_DIMENSIONS_DIFFER, CMS_INCRBY_OVERFLOW, CMS_INVALID_DEPTH, CMS_INVALID_OVERESTIMATION,
    CMS_INVALID_PROBABILITY, CMS_INVALID_WIDTH,
};

// RedisBloom's t-digest (src/rm_tdigest.c).
pub const TDIGEST_KEY_EXISTS: &str = "ERR T-Digest: key already exists";
pub const TDIGEST_KEY_MISSING: &str = "ERR T-Digest: key does not exist";
pub const TDIGEST_WRONG_KEYWORD: &str = "ERR T-Digest: wrong keyword";
pub const TDIGEST_BAD_COMPRESSION: &str = "ERR T-Digest: error parsing compression parameter";
pub const TDIGEST_BAD_VALUE: &str = "ERR T-Digest: error parsing val parameter";
pub const TDIGEST_VALUE_NOT_FINITE: &str =
    "ERR T-Digest: val parameter needs to be a finite number";
pub const TDIGEST_BAD_NUMKEYS: &str = "ERR T-Digest: error parsing numkeys";
pub const TDIGEST_NUMKEYS_NOT_POSITIVE: &str =
    "ERR T-Digest: numkeys needs to be a positive integer";
pub const TDIGEST_BAD_QUANTILE: &str = "ERR T-Digest: error parsing quantile";
pub const TDIGEST_QUANTILE_RANGE: &str = "ERR T-Digest: quantile should be in [0,1]";
pub const TDIGEST_BAD_CDF: &str = "ERR T-Digest: error parsing cdf";
pub const TDIGEST_BAD_RANK_VALUE: &str = "ERR T-Digest: error parsing value";
pub const TDIGEST_BAD_RANK: &str = "ERR T-Digest: error parsing rank";
pub const TDIGEST_RANK_NEGATIVE: &str = "ERR T-Digest: rank needs to be non negative";
pub const TDIGEST_BAD_LOW_CUT: &str = "ERR T-Digest: error parsing low_cut_percentile";
pub const TDIGEST_BAD_HIGH_CUT: &str = "ERR T-Digest: error parsing high_cut_percentile";
pub const TDIGEST_CUTS_RANGE: &str =
    "ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]";
pub const TDIGEST_CUTS_ORDER: &str =
    "ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile";
pub use crate::filter::TDIGEST_COMPRESSION_NOT_POSITIVE;

// RedisBloom's Top-K (src/rm_topk.c).
pub const TOPK_KEY_EXISTS: &str = "TopK: key already exists";
pub const TOPK_KEY_MISSING: &str = "TopK: key does not exist";
pub const TOPK_WITHCOUNT_EXPECTED: &str = "WITHCOUNT keyword expected";
pub use crate::filter::{
    TOPK_INVALID_DECAY, TOPK_INVALID_DEPTH, TOPK_INVALID_INCREMENT, TOPK_INVALID_K,
    TOPK_INVALID_WIDTH,
};
pub const NOT_IN_MULTI: &str = "ERR Command not allowed inside a transaction";
pub const QUEUE_TOO_LARGE: &str =
    "ERR transaction too large: more than 512 MiB of queued arguments";
pub const MULTI_NESTED: &str = "ERR MULTI calls can not be nested";
pub const DISCARD_WITHOUT_MULTI: &str = "ERR DISCARD without MULTI";
pub const EXEC_WITHOUT_MULTI: &str = "ERR EXEC without MULTI";
pub const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";
pub const WATCH_IN_MULTI: &str = "ERR WATCH inside MULTI is not allowed";
/// Replay of a logged command that does not write: a log this server did not write.
pub const NOT_A_WRITE_COMMAND: &str = "ERR not a write command";
/// Redis's words for a command it does not know: `name` and the first arguments, as `dispatch`
/// quotes and cuts them.
pub fn unknown_command(name: &[u8], args: &str) -> String {
    format!(
        "ERR unknown command '{}', with args beginning with: {args}",
        String::from_utf8_lossy(name)
    )
}
/// Redis 7's refusal of other commands to a RESP2 client in the Pub/Sub context.
pub fn pubsub_refusal(name: &str) -> CmdError {
    CmdError::Owned(format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET \
         are allowed in this context"
    ))
}
/// As Redis words a subcommand whose own arity check fails (CLIENT, PUBSUB); the word in full.
pub fn subcommand_arity(sub: &[u8], command: &str) -> CmdError {
    CmdError::Owned(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {command} HELP.",
        String::from_utf8_lossy(sub)
    ))
}

pub const GETKEYS_INVALID_COMMAND: &str = "ERR Invalid command specified";
pub const GETKEYS_NO_KEYS: &str = "ERR The command has no key arguments";
pub const GETKEYS_BAD_ARITY: &str = "ERR Invalid number of arguments specified for command";
pub const GETKEYS_BAD_ARGUMENTS: &str = "ERR Invalid arguments specified for command";

pub const NO_SHUTDOWN_IN_PROGRESS: &str = "ERR No shutdown in progress.";
pub const SAVE_IN_PROGRESS: &str = "ERR Background save already in progress";
pub fn snapshot_failed(error: &impl std::fmt::Display) -> CmdError {
    CmdError::Owned(format!("ERR snapshot failed: {error}"))
}

pub const REPLICATE_FROM_ITSELF: &str = "ERR a server cannot replicate from itself";
pub fn unrecognized_replconf_option(option: &[u8]) -> CmdError {
    CmdError::Owned(format!(
        "ERR Unrecognized REPLCONF option: {}",
        String::from_utf8_lossy(option)
    ))
}
/// MIGRATE's target answered with an error: its line, without the `-` and CRLF.
pub fn migrate_target_error(text: &str) -> CmdError {
    CmdError::Owned(format!("ERR Target instance replied with error: {text}"))
}

pub fn hello_option_syntax(option: &[u8]) -> CmdError {
    CmdError::Owned(format!(
        "ERR Syntax error in HELLO option '{}'",
        String::from_utf8_lossy(option)
    ))
}
/// CLIENT SETINFO of a value with spaces or newlines, naming the attribute in upper case.
pub fn client_info_characters(attribute: &[u8]) -> CmdError {
    CmdError::Owned(format!(
        "ERR {} cannot contain spaces, newlines or special characters.",
        String::from_utf8_lossy(attribute).to_ascii_uppercase()
    ))
}
/// CLIENT SETINFO of an attribute other than LIB-NAME and LIB-VER.
pub fn unrecognized_option(attribute: &[u8]) -> CmdError {
    CmdError::Owned(format!(
        "ERR Unrecognized option '{}'",
        String::from_utf8_lossy(attribute)
    ))
}
pub fn unknown_client_type(name: &[u8]) -> CmdError {
    CmdError::Owned(format!(
        "ERR Unknown client type '{}'",
        String::from_utf8_lossy(name)
    ))
}
pub fn no_such_user(name: &[u8]) -> CmdError {
    CmdError::Owned(format!(
        "ERR No such user '{}'",
        String::from_utf8_lossy(name)
    ))
}
pub const INVALID_CLIENT_ID: &str = "ERR Invalid client ID";
pub const UNBLOCK_REASON: &str = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR";
pub const CLIENT_ID_NOT_POSITIVE: &str = "ERR client-id should be greater than 0";
pub const MAXAGE_NOT_INTEGER: &str = "ERR maxage is not an integer or out of range";
pub const MAXAGE_NOT_POSITIVE: &str = "ERR maxage should be greater than 0";
pub const NO_SUCH_CLIENT: &str = "ERR No such client";
/// CLIENT UNBLOCK ... ERROR's reply to the client it unblocks, as Redis words it.
pub const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";
/// What a parked client gets, before its connection closes, when the server becomes a replica.
pub const NOW_REPLICA: &str =
    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)";

/// A key or word as an error message shows it: its first 128 bytes, invalid UTF-8 replaced.
fn shown(word: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(&word[..word.len().min(128)])
}

/// A command's failure: the whole error line it sends.
#[derive(Debug, Clone, PartialEq)]
pub enum CmdError {
    Static(&'static str),
    Owned(String),
}

impl CmdError {
    pub fn message(&self) -> &str {
        match self {
            CmdError::Static(text) => text,
            CmdError::Owned(text) => text,
        }
    }

    pub fn arity(name: &str) -> CmdError {
        CmdError::Owned(format!(
            "ERR wrong number of arguments for '{name}' command"
        ))
    }

    pub fn unknown_subcommand(sub: &[u8], command: &str) -> CmdError {
        CmdError::Owned(format!(
            "ERR unknown subcommand '{}'. Try {command} HELP.",
            shown(sub)
        ))
    }
}

impl From<&'static str> for CmdError {
    fn from(text: &'static str) -> Self {
        CmdError::Static(text)
    }
}

impl From<FilterError> for CmdError {
    fn from(error: FilterError) -> Self {
        match error {
            FilterError::Full => BF_FULL.into(),
            FilterError::TooLarge { bytes, limit } => CmdError::Owned(format!(
                "ERR filter would use {bytes} bytes, over max-filter-memory ({limit} bytes)"
            )),
            FilterError::OutOfMemory => BF_NO_MEMORY.into(),
            FilterError::CannotScale => BF_CANNOT_SCALE.into(),
            FilterError::BadDump => BF_BAD_DATA.into(),
            FilterError::BadOffset => BF_BAD_OFFSET.into(),
        }
    }
}

/// A sketch's refusal, in RedisBloom's words (`filter/sketch_error.rs` holds them, below the
/// commands, as the sketches' own tests compare them with RedisBloom's replies).
impl From<SketchError> for CmdError {
    fn from(error: SketchError) -> Self {
        CmdError::Static(error.text())
    }
}

pub type CmdResult = Result<(), CmdError>;

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// The first words of Redis's error replies, as a literal starts with them.
    const CODES: &[&str] = &[
        "ERR",
        "WRONGTYPE",
        "NOAUTH",
        "WRONGPASS",
        "NOPROTO",
        "OOM",
        "MISCONF",
        "READONLY",
        "MASTERDOWN",
        "NOREPLICAS",
        "NOMASTERLINK",
        "BUSYKEY",
        "IOERR",
        "EXECABORT",
        "NOSCRIPT",
        "BUSY",
        "LOADING",
        "UNBLOCKED",
        "DENIED",
        "NOPERM",
        "NOTBUSY",
        "UNKILLABLE",
        "CROSSSLOT",
        "MOVED",
        "ASK",
        "TRYAGAIN",
        "CLUSTERDOWN",
    ];

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                out.push(path);
            }
        }
    }

    /// The inline error strings of one file's code (its tests and comments left out): literals
    /// that start with an error code, and in `cmd` any literal a command fails with, since
    /// RedisBloom's errors mostly have no code.
    fn inline_errors(text: &str, in_cmd: bool) -> Vec<String> {
        let mut found = Vec::new();
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("#[cfg(test)]") {
                break;
            }
            if code.starts_with("//") {
                continue;
            }
            let coded = line.split('"').skip(1).step_by(2).any(|literal| {
                CODES.iter().any(|error| {
                    literal
                        .strip_prefix(error)
                        .is_some_and(|rest| rest.starts_with(' '))
                })
            });
            let failing = ["Err(\"", ".error(\"", "Owned(format!(\""]
                .iter()
                .any(|call| line.contains(call));
            if coded || (in_cmd && failing) {
                found.push(line.trim().to_string());
            }
        }
        found
    }

    #[test]
    fn client_visible_errors_are_written_here_only() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        rust_files(&root.join("src/cmd"), &mut files);
        rust_files(&root.join("src/server"), &mut files);
        let mut inline = Vec::new();
        for path in files {
            let name = path.strip_prefix(root).expect("under the root");
            let name = name.to_string_lossy().replace('\\', "/");
            if name == "src/cmd/errors.rs" || name.starts_with("src/cmd/tests") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            let found = inline_errors(&text, name.starts_with("src/cmd/"));
            inline.extend(found.iter().map(|line| format!("{name}: {line}")));
        }
        assert!(
            inline.is_empty(),
            "client-visible errors belong in src/cmd/errors.rs:\n{}",
            inline.join("\n")
        );
    }

    #[test]
    fn the_check_finds_what_it_looks_for() {
        let code = "fn f() -> CmdResult {\n    Err(\"Bad thing\".into())\n}\n";
        assert_eq!(inline_errors(code, true).len(), 1);
        assert_eq!(inline_errors(code, false).len(), 0);
        assert_eq!(inline_errors("const X: &str = \"ERR no\";", false).len(), 1);
        assert_eq!(inline_errors("// \"ERR in a comment\"", true).len(), 0);
        assert_eq!(inline_errors("let a = \"ERRATA x\";", true).len(), 0);
        assert_eq!(
            inline_errors("#[cfg(test)]\nmod tests { \"ERR expected\" }", true).len(),
            0
        );
    }
}
