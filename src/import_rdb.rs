//! `sieved import-rdb FILE`: brings the data of a Redis RDB file (or of a Redis 7 multi-part
//! AOF, through its manifest's base file) into sieved: RedisBloom's Bloom and cuckoo filters,
//! strings (bitmaps included), lists, sets, sorted sets and hashes, with their TTLs and
//! databases, and its function libraries. Keys of other types are listed as skipped, by
//! database, key and type.
//!
//! Where the data goes:
//! - `--dir DIR`: a snapshot, `DIR/sieved.snap`, for a server to start from. DIR must not hold
//!   one already (nor append-only file segments), so that nothing is ever overwritten.
//! - `--to HOST:PORT`: a running server, each key sent as `RESTORE key ttl payload ABSTTL`
//!   (with `--replace`, REPLACE), pipelined; the server checks and logs each as any RESTORE.
//!   Each function library is sent as `FUNCTION LOAD` (REPLACE with `--replace`).
//! - Neither: the file is read and checked, and the report says what an import would bring.
//!
//! The input is only ever read. Keys already expired are left out. A progress line goes to
//! standard error every second for files that take longer than that.

use crate::persist::fs;
use crate::persist::snapshot;
use crate::protocol::encode_request;
use crate::rdb::file::Entry;
use crate::rdb::{self, Decoded, Limits};
use crate::store::{now_ms, Store, Value};
use clap::{Arg, ArgAction, ArgMatches, Command};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Commands sent to a server before their replies are read.
const PIPELINE: usize = 64;
/// The shards of the keyspace built for a snapshot; its file does not depend on them.
const SHARDS: usize = 64;

/// The subcommand's name, which `sieved` takes as the subcommand rather than as a
/// configuration file.
pub const NAME: &str = "import-rdb";

/// The subcommand's arguments, for `sieved`'s command line.
pub fn command() -> Command {
    Command::new(NAME)
        .about(
            "Imports a Redis RDB file (or a Redis 7 AOF manifest's base file): RedisBloom \
             filters, strings, lists, sets, sorted sets and hashes, with TTLs and databases",
        )
        .arg(
            Arg::new("file").required(true).value_name("FILE").help(
                "The RDB file, or the manifest of a multi-part AOF (appendonly.aof.manifest)",
            ),
        )
        .arg(Arg::new("dir").long("dir").value_name("DIR").help(
            "Write a snapshot, DIR/sieved.snap, for sieved to start from (DIR must hold none)",
        ))
        .arg(
            Arg::new("to")
                .long("to")
                .value_name("HOST:PORT")
                .help("Send each key to a running server with RESTORE"),
        )
        .arg(
            Arg::new("user")
                .long("user")
                .value_name("USER")
                .help("The user to authenticate as with --to"),
        )
        .arg(
            Arg::new("password")
                .long("password")
                .value_name("PASSWORD")
                .env("SIEVED_IMPORT_PASSWORD")
                .hide_env_values(true)
                .help("The password to authenticate with --to"),
        )
        .arg(
            Arg::new("replace")
                .long("replace")
                .action(ArgAction::SetTrue)
                .help("With --to, replace keys the server already has (RESTORE ... REPLACE)"),
        )
        .arg(
            Arg::new("databases")
                .long("databases")
                .value_name("N")
                .default_value("16")
                .value_parser(clap::value_parser!(u16).range(1..=1024))
                .help("Databases of the snapshot written; the file's must be below it"),
        )
}

struct Options {
    file: PathBuf,
    dir: Option<PathBuf>,
    to: Option<String>,
    auth: Option<(Option<String>, String)>,
    replace: bool,
    databases: usize,
}

impl Options {
    fn from(matches: &ArgMatches) -> Options {
        let text = |name: &str| matches.get_one::<String>(name).cloned();
        Options {
            file: PathBuf::from(text("file").unwrap_or_default()),
            dir: text("dir").map(PathBuf::from),
            to: text("to"),
            auth: text("password").map(|password| (text("user"), password)),
            replace: matches.get_flag("replace"),
            databases: usize::from(*matches.get_one::<u16>("databases").unwrap_or(&16)),
        }
    }
}

/// Runs the subcommand with the arguments `command` parsed.
pub fn run(matches: &ArgMatches) -> ExitCode {
    match import(&Options::from(matches)) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("sieved import-rdb: {error}");
            ExitCode::FAILURE
        }
    }
}

/// A running server that keys are sent to.
struct Sender {
    stream: TcpStream,
    replies: BufReader<TcpStream>,
    /// What each command waiting for its reply was: the key of a RESTORE, None otherwise.
    pending: Vec<Option<String>>,
    db: Option<usize>,
    refused: Vec<String>,
}

impl Sender {
    fn connect(address: &str, auth: Option<&(Option<String>, String)>) -> Result<Sender, String> {
        let stream = TcpStream::connect(address)
            .map_err(|error| format!("cannot connect to {address}: {error}"))?;
        let _ = stream.set_nodelay(true);
        let replies = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
        let mut sender = Sender {
            stream,
            replies,
            pending: Vec::new(),
            db: None,
            refused: Vec::new(),
        };
        if let Some((user, password)) = auth {
            let mut out = Vec::new();
            match user {
                Some(user) => {
                    encode_request(&mut out, &[b"AUTH", user.as_bytes(), password.as_bytes()])
                }
                None => encode_request(&mut out, &[b"AUTH", password.as_bytes()]),
            }
            sender.send(&out, None)?;
            sender.drain()?;
            if let Some(refusal) = sender.refused.pop() {
                return Err(format!("{address} refused AUTH: {refusal}"));
            }
        }
        Ok(sender)
    }

    fn send(&mut self, command: &[u8], key: Option<String>) -> Result<(), String> {
        self.stream
            .write_all(command)
            .map_err(|error| format!("cannot send to the server: {error}"))?;
        self.pending.push(key);
        if self.pending.len() >= PIPELINE {
            self.drain()?;
        }
        Ok(())
    }

    /// Reads the reply of every command sent; refusals are kept for the report.
    fn drain(&mut self) -> Result<(), String> {
        for key in std::mem::take(&mut self.pending) {
            let mut line = Vec::new();
            self.replies
                .read_until(b'\n', &mut line)
                .map_err(|error| format!("cannot read the server's reply: {error}"))?;
            if line.is_empty() {
                return Err("the server closed the connection".into());
            }
            if line.starts_with(b"-") {
                let error = String::from_utf8_lossy(&line[1..]).trim_end().to_string();
                self.refused.push(match key {
                    Some(key) => format!("{key}: {error}"),
                    None => error,
                });
            }
        }
        Ok(())
    }

    fn restore(
        &mut self,
        db: usize,
        key: &[u8],
        expires_at: u64,
        value: &Value,
        replace: bool,
    ) -> Result<(), String> {
        if self.db != Some(db) {
            let mut out = Vec::new();
            encode_request(&mut out, &[b"SELECT", db.to_string().as_bytes()]);
            self.send(&out, None)?;
            self.db = Some(db);
        }
        let payload = rdb::dump(value);
        let ttl = expires_at.to_string();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", key, ttl.as_bytes(), &payload, b"ABSTTL"];
        if replace {
            args.push(b"REPLACE");
        }
        let mut out = Vec::new();
        encode_request(&mut out, &args);
        self.send(&out, Some(describe_key(db, key)))
    }

    /// A function library, as `FUNCTION LOAD [REPLACE] code`.
    fn function_load(&mut self, name: &[u8], code: &[u8], replace: bool) -> Result<(), String> {
        let mut args: Vec<&[u8]> = vec![b"FUNCTION", b"LOAD"];
        if replace {
            args.push(b"REPLACE");
        }
        args.push(code);
        let mut out = Vec::new();
        encode_request(&mut out, &args);
        let what = format!("function library {}", String::from_utf8_lossy(name));
        self.send(&out, Some(what))
    }
}

fn describe_key(db: usize, key: &[u8]) -> String {
    let key = &key[..key.len().min(200)];
    format!("db {db} '{}'", String::from_utf8_lossy(key))
}

/// Refuses a directory that holds a snapshot or log segments: an import never overwrites data.
fn check_empty_data_dir(dir: &Path) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == snapshot::FILE_NAME || (name.starts_with("sieved-") && name.ends_with(".aof")) {
            return Err(format!(
                "{} already holds sieved data ({name}); import into an empty directory",
                dir.display()
            ));
        }
    }
    Ok(())
}

fn mebibytes(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn import(options: &Options) -> Result<String, String> {
    let path = if rdb::file::is_manifest(&options.file) {
        rdb::file::manifest_base(&options.file)?
    } else {
        options.file.clone()
    };
    if let Some(dir) = &options.dir {
        check_empty_data_dir(dir)?;
    }
    let store = options
        .dir
        .as_ref()
        .map(|_| Store::new(options.databases, SHARDS));
    let mut sender = match &options.to {
        Some(address) => Some(Sender::connect(address, options.auth.as_ref())?),
        None => None,
    };
    let now = now_ms();
    let started = Instant::now();
    let mut last_progress = started;
    let mut imported: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut databases = BTreeSet::new();
    let (mut expired, mut keys_seen) = (0u64, 0u64);
    let mut skipped = Vec::new();
    let mut failure = None;
    let progress = |read: u64, size: u64| {
        if last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            eprintln!(
                "import-rdb: {:.1} of {:.1} MiB read ({:.0}%)",
                mebibytes(read),
                mebibytes(size),
                read as f64 * 100.0 / size.max(1) as f64
            );
        }
    };
    let summary =
        rdb::file::read_file(&path, options.databases, &Limits::NONE, progress, |entry| {
            keys_seen += 1;
            let Entry {
                db,
                key,
                expires_at,
                value,
            } = entry;
            match value {
                Decoded::Value(_) if expires_at != 0 && expires_at <= now => expired += 1,
                Decoded::Value(value) => {
                    *imported.entry(value.type_name()).or_default() += 1;
                    databases.insert(db);
                    if let Some(sender) = sender.as_mut() {
                        if let Err(error) =
                            sender.restore(db, &key, expires_at, &value, options.replace)
                        {
                            failure = Some(error.clone());
                            return Err(error);
                        }
                    }
                    if let Some(store) = &store {
                        store.db(db).insert(&key, value, expires_at);
                    }
                }
                Decoded::Skipped(what) => {
                    skipped.push(format!("{}: {what}", describe_key(db, &key)))
                }
                Decoded::Empty => {
                    skipped.push(format!("{}: an empty collection", describe_key(db, &key)))
                }
            }
            Ok(())
        });
    let summary = match (summary, failure) {
        (_, Some(error)) => return Err(error),
        (Err(error), None) => return Err(error.to_string()),
        (Ok(summary), None) => summary,
    };
    let mut libraries = Vec::new();
    for code in &summary.functions {
        let name = crate::lua::library_name(code)
            .ok_or("a function library of the file names no library (`#!lua name=...`)")?;
        if let Some(sender) = sender.as_mut() {
            sender.function_load(&name, code, options.replace)?;
        }
        if let Some(store) = &store {
            store.functions().insert(&name, code);
        }
        libraries.push(String::from_utf8_lossy(&name).into_owned());
    }
    let mut refused = Vec::new();
    if let Some(mut sender) = sender {
        sender.drain()?;
        refused = sender.refused;
    }
    let mut written = None;
    if let (Some(store), Some(dir)) = (&store, &options.dir) {
        std::fs::create_dir_all(dir)
            .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
        let stats = snapshot::write(&*fs::real(), store, dir, 0, snapshot::Expired::Drop)
            .map_err(|error| format!("cannot write the snapshot in {}: {error}", dir.display()))?;
        written = Some((dir.join(snapshot::FILE_NAME), stats.bytes));
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut report = String::new();
    let _ = writeln!(
        report,
        "read {}: RDB version {}{}, {} bytes, {} keys in {seconds:.2} s ({:.1} MB/s)",
        path.display(),
        summary.version,
        summary
            .redis_version
            .as_ref()
            .map(|v| format!(" (Redis {v})"))
            .unwrap_or_default(),
        summary.bytes,
        keys_seen,
        summary.bytes as f64 / 1e6 / seconds.max(1e-9),
    );
    let total: u64 = imported.values().sum();
    let kinds: Vec<String> = imported
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    let dbs: Vec<String> = databases.iter().map(usize::to_string).collect();
    let verb = match (&options.dir, &options.to) {
        (None, None) => "would import",
        _ => "imported",
    };
    let _ = writeln!(
        report,
        "{verb} {total} keys ({}) in databases {}; {expired} already expired, left out",
        kinds.join(", "),
        if dbs.is_empty() {
            "none".to_string()
        } else {
            dbs.join(", ")
        },
    );
    if !libraries.is_empty() {
        let _ = writeln!(
            report,
            "{verb} {} function libraries: {}",
            libraries.len(),
            libraries.join(", ")
        );
    }
    if let Some((file, bytes)) = written {
        let _ = writeln!(report, "wrote {} ({bytes} bytes)", file.display());
    }
    if let Some(address) = &options.to {
        let _ = writeln!(
            report,
            "sent {} keys to {address}",
            total - refused.len() as u64
        );
    }
    let _ = writeln!(
        report,
        "skipped {} keys sieved has no type for:",
        skipped.len()
    );
    skipped.iter().for_each(|line| {
        let _ = writeln!(report, "  {line}");
    });
    for extra in &summary.skipped_extras {
        let _ = writeln!(report, "skipped {extra}");
    }
    if !refused.is_empty() {
        let mut message = format!("the server refused {} keys:\n", refused.len());
        refused.iter().for_each(|line| {
            let _ = writeln!(message, "  {line}");
        });
        return Err(format!("{report}{message}"));
    }
    Ok(report)
}
