//! Server commands: INFO, CONFIG, TIME, SHUTDOWN, SAVE, BGSAVE, BGREWRITEAOF, LASTSAVE. They
//! act through the `Server` trait; the server decides what a save or a shutdown means.

use super::args::{keyword, Args, Items};
use super::errors::*;
use super::spec::{bits, block, one_of, pure_token, string, CommandSpec, Docs, Group};
use super::{After, Ctx, ExitSave, SaveError};
use crate::protocol::Request;

/// Every section, in the order INFO prints them, and whether a plain INFO includes it: those
/// left out cost more or say more than it should (as Redis leaves commandstats out).
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("cluster", true),
    ("keyspace", true),
    ("bloom", false),
];

/// INFO [section ...]: the sections asked for, in the order INFO prints them. Unknown names are
/// left out, as Redis leaves them.
struct Info {
    sections: Vec<&'static str>,
}

impl Info {
    fn parse(request: Request) -> Info {
        let mut args = Args::new(request, 1);
        let mut all = false;
        let mut defaults = args.remaining() == 0;
        let mut named: Vec<&str> = Vec::new();
        for arg in args.rest() {
            match keyword(
                arg,
                &[("all", true), ("everything", true), ("default", false)],
            ) {
                Some(true) => all = true,
                Some(false) => defaults = true,
                None => named.extend(
                    SECTIONS
                        .iter()
                        .map(|(name, _)| *name)
                        .find(|name| arg.eq_ignore_ascii_case(name.as_bytes())),
                ),
            }
        }
        let sections = SECTIONS
            .iter()
            .filter(|(name, default)| all || (defaults && *default) || named.contains(name))
            .map(|(name, _)| *name)
            .collect();
        Info { sections }
    }
}

pub(super) fn info(ctx: &mut Ctx, request: Request) -> CmdResult {
    let info = Info::parse(request);
    let text = ctx.server.info(&info.sections, ctx.now);
    ctx.reply.verbatim(&text);
    Ok(())
}

/// CONFIG GET pattern [pattern ...] | SET name value [name value ...] | RESETSTAT | REWRITE |
/// HELP.
enum Config<'a> {
    Get(Items<'a>),
    Set(Vec<(&'a [u8], &'a [u8])>),
    ResetStat,
    Rewrite,
    Help,
}

#[derive(Clone, Copy)]
enum ConfigSubcommand {
    Get,
    Set,
    ResetStat,
    Rewrite,
    Help,
}

impl<'a> Config<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        const SUBCOMMANDS: &[(&str, ConfigSubcommand)] = &[
            ("GET", ConfigSubcommand::Get),
            ("SET", ConfigSubcommand::Set),
            ("RESETSTAT", ConfigSubcommand::ResetStat),
            ("REWRITE", ConfigSubcommand::Rewrite),
            ("HELP", ConfigSubcommand::Help),
        ];
        let mut args = Args::new(request, 1);
        let sub = args.required()?;
        match keyword(sub, SUBCOMMANDS) {
            Some(ConfigSubcommand::Get) => match args.remaining() {
                0 => Err(CmdError::arity("config|get")),
                _ => Ok(Config::Get(args.items())),
            },
            Some(ConfigSubcommand::Set) => {
                if args.remaining() < 2 || args.remaining() % 2 != 0 {
                    return Err(CmdError::arity("config|set"));
                }
                let mut pairs = Vec::new();
                while let (Some(name), Some(value)) = (args.next(), args.next()) {
                    pairs.push((name, value));
                }
                Ok(Config::Set(pairs))
            }
            Some(ConfigSubcommand::ResetStat) => Ok(Config::ResetStat),
            Some(ConfigSubcommand::Rewrite) => Ok(Config::Rewrite),
            Some(ConfigSubcommand::Help) => Ok(Config::Help),
            None => Err(CmdError::unknown_subcommand(sub, "CONFIG")),
        }
    }
}

pub(super) fn config(ctx: &mut Ctx, request: Request) -> CmdResult {
    match Config::parse(request)? {
        Config::Get(patterns) => {
            let mut found: Vec<(&str, String)> = Vec::new();
            for pattern in patterns.iter() {
                for pair in ctx.config().get_matching(pattern) {
                    if !found.iter().any(|(name, _)| *name == pair.0) {
                        found.push(pair);
                    }
                }
            }
            ctx.reply.map(found.len());
            for (name, value) in found {
                ctx.reply.bulk(name.as_bytes());
                ctx.reply.bulk(value.as_bytes());
            }
        }
        Config::Set(pairs) => {
            ctx.config().set_many(&pairs).map_err(CmdError::Owned)?;
            ctx.server.settings_changed();
            ctx.reply.ok();
        }
        Config::ResetStat => {
            ctx.server.reset_stats();
            ctx.reply.ok();
        }
        Config::Rewrite => {
            ctx.config().rewrite().map_err(CmdError::Owned)?;
            ctx.reply.ok();
        }
        Config::Help => {
            let lines = [
                "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET <pattern>",
                "    Return parameters matching the glob-like <pattern> and their values.",
                "SET <directive> <value>",
                "    Set the configuration <directive> to <value>.",
                "RESETSTAT",
                "    Reset statistics reported by the INFO command.",
                "REWRITE",
                "    Rewrite the configuration file.",
                "HELP",
                "    Print this help.",
            ];
            ctx.reply.array(lines.len());
            lines.iter().for_each(|line| ctx.reply.simple(line));
        }
    }
    Ok(())
}

pub(super) fn time(ctx: &mut Ctx, _request: Request) -> CmdResult {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.reply.array(2);
    ctx.reply.bulk(now.as_secs().to_string().as_bytes());
    ctx.reply.bulk(now.subsec_micros().to_string().as_bytes());
    Ok(())
}

/// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE]: the server pauses every command and writes the exit
/// snapshot; if that works (or FORCE) it stops and this connection closes without a reply, else
/// the connection replies with Redis's error and serving goes on. NOW asks not to wait for
/// replicas, which sieved does not have.
struct Shutdown {
    exit_save: ExitSave,
    force: bool,
}

#[derive(Clone, Copy)]
enum ShutdownOption {
    Abort,
    NoSave,
    Save,
    Force,
    Now,
}

impl Shutdown {
    fn parse(request: Request) -> Result<Self, CmdError> {
        const OPTIONS: &[(&str, ShutdownOption)] = &[
            ("ABORT", ShutdownOption::Abort),
            ("NOSAVE", ShutdownOption::NoSave),
            ("SAVE", ShutdownOption::Save),
            ("FORCE", ShutdownOption::Force),
            ("NOW", ShutdownOption::Now),
        ];
        let mut args = Args::new(request, 1);
        let mut shutdown = Shutdown {
            exit_save: ExitSave::Default,
            force: false,
        };
        for option in args.rest() {
            match keyword(option, OPTIONS) {
                Some(ShutdownOption::Abort) => return Err(NO_SHUTDOWN_IN_PROGRESS.into()),
                Some(ShutdownOption::NoSave) => shutdown.exit_save = ExitSave::NoSave,
                Some(ShutdownOption::Save) => shutdown.exit_save = ExitSave::Save,
                Some(ShutdownOption::Force) => shutdown.force = true,
                Some(ShutdownOption::Now) => {}
                None => return Err(SYNTAX.into()),
            }
        }
        Ok(shutdown)
    }
}

pub(super) fn shutdown(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Shutdown { exit_save, force } = Shutdown::parse(request)?;
    tracing::info!(
        client = ctx.session.client.id,
        "SHUTDOWN requested by a client"
    );
    ctx.session.after = Some(After::Shutdown(ctx.server.shutdown(exit_save, force)));
    Ok(())
}

/// SAVE: blocks this connection (and only it) until the snapshot is on disk.
pub(super) fn save(ctx: &mut Ctx, _request: Request) -> CmdResult {
    let server = ctx.server;
    match tokio::task::block_in_place(|| server.save()) {
        Ok(()) => {
            ctx.reply.ok();
            Ok(())
        }
        Err(SaveError::InProgress) => Err(SAVE_IN_PROGRESS.into()),
        Err(SaveError::Failed(error)) => Err(snapshot_failed(&error)),
    }
}

/// BGSAVE [SCHEDULE]: whether to schedule the save when one is running already.
fn parse_bgsave(request: Request) -> Result<bool, CmdError> {
    let mut args = Args::new(request, 1);
    let schedule = args.check("SCHEDULE");
    args.finish(SYNTAX)?;
    Ok(schedule)
}

pub(super) fn bgsave(ctx: &mut Ctx, request: Request) -> CmdResult {
    let schedule = parse_bgsave(request)?;
    match ctx.server.save_in_background(schedule) {
        Ok(true) => ctx.reply.simple("Background saving started"),
        Ok(false) => ctx.reply.simple("Background saving scheduled"),
        Err(_) => return Err(SAVE_IN_PROGRESS.into()),
    }
    Ok(())
}

/// BGREWRITEAOF: compacts the append-only file, which here is the same work as BGSAVE (a new
/// snapshot, then a fresh file); without one, it takes a snapshot.
pub(super) fn bgrewriteaof(ctx: &mut Ctx, _request: Request) -> CmdResult {
    match ctx.server.save_in_background(true) {
        Ok(true) => ctx
            .reply
            .simple("Background append only file rewriting started"),
        _ => ctx
            .reply
            .simple("Background append only file rewriting scheduled"),
    }
    Ok(())
}

pub(super) fn lastsave(ctx: &mut Ctx, _request: Request) -> CmdResult {
    ctx.reply.int(ctx.server.last_save_secs() as i64);
    Ok(())
}

/// Server administration commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "info",
        -1,
        Group::Server,
        "Returns information and statistics about the server.",
        info,
    )
    .flags(bits![Flags: LOADING, STALE])
    .acl(bits![Acl: DANGEROUS])
    .complexity("O(1)")
    .history(&[(
        "7.0.0",
        "Added support for taking multiple section arguments.",
    )])
    .args(&[string("section").optional().multiple()]),
    CommandSpec::new(
        "config",
        -2,
        Group::Server,
        "A container for server configuration commands.",
        config,
    )
    .since("2.0.0")
    .complexity("Depends on subcommand.")
    .subcommands(CONFIG_SUBCOMMANDS),
    CommandSpec::new("time", 1, Group::Server, "Returns the server time.", time)
        .flags(bits![Flags: LOADING, STALE, FAST])
        .since("2.6.0")
        .complexity("O(1)"),
    CommandSpec::new(
        "shutdown",
        -1,
        Group::Server,
        "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        shutdown,
    )
    .flags(bits![Flags:
        ADMIN, NOSCRIPT, LOADING, STALE, NO_MULTI, ALLOW_BUSY
    ])
    .complexity(
        "O(N) when saving, where N is the total number of keys in all databases when \
            saving data, otherwise O(1)",
    )
    .history(&[("7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers.")])
    .args(&[
        one_of(
            "save-selector",
            &[pure_token("nosave", "NOSAVE"), pure_token("save", "SAVE")],
        )
        .optional(),
        pure_token("now", "NOW").since("7.0.0").optional(),
        pure_token("force", "FORCE").since("7.0.0").optional(),
        pure_token("abort", "ABORT").since("7.0.0").optional(),
    ]),
    CommandSpec::new(
        "save",
        1,
        Group::Server,
        "Synchronously saves the database(s) to disk.",
        save,
    )
    .flags(bits![Flags: ADMIN, NOSCRIPT, NO_ASYNC_LOADING, NO_MULTI])
    .complexity("O(N) where N is the total number of keys in all databases"),
    CommandSpec::new(
        "bgsave",
        -1,
        Group::Server,
        "Asynchronously saves the database(s) to disk.",
        bgsave,
    )
    .flags(bits![Flags: ADMIN, NOSCRIPT, NO_ASYNC_LOADING])
    .complexity("O(1)")
    .history(&[("3.2.2", "Added the `SCHEDULE` option.")])
    .args(&[pure_token("schedule", "SCHEDULE").since("3.2.2").optional()]),
    CommandSpec::new(
        "bgrewriteaof",
        1,
        Group::Server,
        "Asynchronously rewrites the append-only file to disk.",
        bgrewriteaof,
    )
    .flags(bits![Flags: ADMIN, NOSCRIPT, NO_ASYNC_LOADING])
    .complexity("O(1)"),
    CommandSpec::new(
        "lastsave",
        1,
        Group::Server,
        "Returns the Unix timestamp of the last successful save to disk.",
        lastsave,
    )
    .flags(bits![Flags: LOADING, STALE, FAST])
    .acl(bits![Acl: ADMIN, DANGEROUS])
    .complexity("O(1)"),
];

/// CONFIG's subcommands, as COMMAND DOCS lists them.
const CONFIG_SUBCOMMANDS: &[(&str, Docs)] = &[
    (
        "config|get",
        Docs::new("Returns the effective values of configuration parameters.")
            .since("2.0.0")
            .complexity("O(N) when N is the number of configuration parameters provided")
            .history(&[(
                "7.0.0",
                "Added the ability to pass multiple pattern parameters in one call",
            )])
            .args(&[string("parameter").multiple()]),
    ),
    (
        "config|help",
        Docs::new("Returns helpful text about the different subcommands.")
            .since("5.0.0")
            .complexity("O(1)"),
    ),
    (
        "config|resetstat",
        Docs::new("Resets the server's statistics.")
            .since("2.0.0")
            .complexity("O(1)"),
    ),
    (
        "config|rewrite",
        Docs::new("Persists the effective configuration to file.")
            .since("2.8.0")
            .complexity("O(1)"),
    ),
    (
        "config|set",
        Docs::new("Sets configuration parameters in-flight.")
            .since("2.0.0")
            .complexity("O(N) when N is the number of configuration parameters provided")
            .history(&[(
                "7.0.0",
                "Added the ability to set multiple parameters in one call.",
            )])
            .args(&[block("data", &[string("parameter"), string("value")]).multiple()]),
    ),
];
