//! Server commands: COMMAND, INFO, CONFIG, TIME, SHUTDOWN.

use super::args::{is, Cursor};
use super::errors::*;
use super::observe;
use super::{lookup, CommandSpec, Ctx, COMMANDS};
use crate::memory;
use crate::protocol::{Reply, Request};
use crate::server::{ExitSave, SaveError, Saver, Stats};
use std::fmt::Write;

/// Module commands declare their ACL categories themselves; RedisBloom marks only these as fast.
const FAST_FILTER_COMMANDS: &[&str] = &[
    "bf.reserve",
    "bf.info",
    "bf.card",
    "cbf.reserve",
    "cbf.info",
    "cbf.card",
];

fn acl_categories(spec: &CommandSpec) -> Vec<&'static str> {
    if matches!(spec.group, "bf" | "cbf") {
        let access = if spec.writes { "@write" } else { "@read" };
        return if FAST_FILTER_COMMANDS.contains(&spec.name) {
            vec![access, "@fast", "@bloom"]
        } else {
            vec![access, "@bloom"]
        };
    }
    let mut categories = Vec::new();
    for (flag, category) in [
        ("write", "@write"),
        ("readonly", "@read"),
        ("fast", "@fast"),
        ("admin", "@admin"),
    ] {
        if spec.flags.contains(&flag) {
            categories.push(category);
        }
    }
    categories.push(match spec.group {
        "connection" => "@connection",
        "generic" => "@keyspace",
        "string" => "@string",
        "transactions" => "@transaction",
        _ => "@slow",
    });
    categories
}

fn write_command_info(reply: &mut Reply, spec: &CommandSpec) {
    reply.array(10);
    reply.bulk(spec.name.as_bytes());
    reply.int(spec.arity as i64);
    reply.set(spec.flags.len());
    spec.flags.iter().for_each(|flag| reply.simple(flag));
    reply.int(spec.first_key as i64);
    reply.int(spec.last_key as i64);
    reply.int(spec.step as i64);
    let categories = acl_categories(spec);
    reply.set(categories.len());
    categories.iter().for_each(|c| reply.simple(c));
    reply.array(0);
    reply.array(0);
    reply.array(0);
}

fn write_command_docs(reply: &mut Reply, spec: &CommandSpec) {
    reply.bulk(spec.name.as_bytes());
    let module = matches!(spec.group, "bf" | "cbf");
    reply.map(if module { 4 } else { 3 });
    reply.bulk(b"summary");
    reply.bulk(spec.summary.as_bytes());
    reply.bulk(b"since");
    reply.bulk(b"1.0.0");
    reply.bulk(b"group");
    reply.bulk(if module {
        b"module"
    } else {
        spec.group.as_bytes()
    });
    if module {
        reply.bulk(b"module");
        reply.bulk(b"bf");
    }
}

pub fn command(ctx: &mut Ctx, request: Request) -> CmdResult {
    let reply = &mut *ctx.reply;
    if request.len() == 1 {
        reply.array(COMMANDS.len());
        COMMANDS
            .iter()
            .for_each(|spec| write_command_info(reply, spec));
        return Ok(());
    }
    let sub = request.arg(1);
    let names = || request.args().skip(2);
    if is(sub, "COUNT") {
        reply.int(COMMANDS.len() as i64);
    } else if is(sub, "LIST") {
        reply.array(COMMANDS.len());
        COMMANDS
            .iter()
            .for_each(|spec| reply.bulk(spec.name.as_bytes()));
    } else if is(sub, "INFO") {
        if request.len() == 2 {
            reply.array(COMMANDS.len());
            COMMANDS
                .iter()
                .for_each(|spec| write_command_info(reply, spec));
        } else {
            reply.array(request.len() - 2);
            for name in names() {
                match lookup(name) {
                    Some(index) => write_command_info(reply, &COMMANDS[index]),
                    None => reply.null(),
                }
            }
        }
    } else if is(sub, "DOCS") {
        if request.len() == 2 {
            reply.map(COMMANDS.len());
            COMMANDS
                .iter()
                .for_each(|spec| write_command_docs(reply, spec));
        } else {
            let found: Vec<_> = names().filter_map(lookup).collect();
            reply.map(found.len());
            found
                .iter()
                .for_each(|&i| write_command_docs(reply, &COMMANDS[i]));
        }
    } else if is(sub, "HELP") {
        let lines = [
            "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "(no subcommand)",
            "    Return details about all commands.",
            "COUNT",
            "    Return the total number of commands in this server.",
            "LIST",
            "    Return a list of all commands in this server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple commands.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple commands.",
            "HELP",
            "    Print this help.",
        ];
        reply.array(lines.len());
        lines.iter().for_each(|line| reply.simple(line));
    } else {
        return Err(CmdError::unknown_subcommand(sub, "COMMAND"));
    }
    Ok(())
}

const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "keyspace",
];
/// Every section, in the order INFO prints them: the default ones, then those that cost more
/// or say more than a plain INFO should (as Redis leaves commandstats out of its default).
const ALL_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "commandstats",
    "keyspace",
    "bloom",
];

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes}B")
    } else {
        format!("{value:.2}{}", UNITS[unit])
    }
}

fn info_section(ctx: &Ctx, name: &str, out: &mut String) {
    let shared = ctx.shared;
    let stats = &shared.stats;
    let uptime = shared.started.elapsed().as_secs();
    // Writing to a String cannot fail.
    let _ = match name {
        "server" => write!(
            out,
            "# Server\r\nredis_version:{}\r\nsieved_version:{}\r\nredis_mode:standalone\r\nos:{} {}\r\n\
             arch_bits:{}\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\n\
             server_time_usec:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nio_threads_active:{}\r\n\
             executable:{}\r\nconfig_file:{}\r\n",
            crate::REDIS_VERSION,
            crate::VERSION,
            std::env::consts::OS,
            std::env::consts::ARCH,
            usize::BITS,
            std::process::id(),
            shared.run_id,
            shared.addr.port(),
            ctx.now * 1000,
            uptime / 86400,
            shared.config.threads,
            std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            shared.config.file.as_deref().map(|p| p.display().to_string()).unwrap_or_default(),
        ),
        "clients" => write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:0\r\n",
            shared.clients.count(),
            shared.config.settings().maxclients
        ),
        "memory" => {
            let used = memory::allocated() as u64;
            let peak = memory::peak() as u64;
            write!(
                out,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{}\r\n\
                 used_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\nmaxmemory:{}\r\n\
                 maxmemory_human:{}\r\nmaxmemory_policy:noeviction\r\n",
                human_bytes(used),
                memory::rss_bytes(),
                human_bytes(peak),
                shared.config.settings().maxmemory,
                human_bytes(shared.config.settings().maxmemory),
            )
        }
        "persistence" => write!(
            out,
            "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:{}\r\n\
             rdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\n\
             rdb_last_bgsave_time_sec:{}\r\nrdb_saves:{}\r\naof_enabled:{}\r\naof_rewrite_in_progress:{}\r\n\
             aof_last_bgrewrite_status:{}\r\naof_last_write_status:{}\r\naof_current_size:{}\r\n\
             aof_base_size:{}\r\n",
            shared.saver.changes(),
            shared.saver.in_progress() as u8,
            shared.saver.last_save_ms() / 1000,
            if shared.saver.last_ok() { "ok" } else { "err" },
            shared.saver.last_duration_ms() / 1000,
            shared.saver.saves(),
            shared.aof.is_some() as u8,
            (shared.aof.is_some() && shared.saver.in_progress()) as u8,
            if shared.aof.is_none() || shared.saver.last_ok() { "ok" } else { "err" },
            match shared.aof.as_ref().map(|aof| aof.failure()) {
                Some(Some(_)) => "err",
                _ => "ok",
            },
            shared.aof.as_ref().map_or(0, |aof| aof.live_bytes()),
            shared.aof.as_ref().map_or(0, |aof| aof.base_bytes()),
        ),
        "stats" => write!(
            out,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
             instantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\n\
             rejected_connections:{}\r\nexpired_keys:{}\r\nevicted_keys:0\r\n",
            Stats::get(&stats.connections_received),
            Stats::get(&stats.commands_processed),
            stats.instantaneous_ops_per_sec(),
            Stats::get(&stats.net_input_bytes),
            Stats::get(&stats.net_output_bytes),
            Stats::get(&stats.rejected_connections),
            Stats::get(&stats.expired_keys),
        ),
        "keyspace" => {
            out.push_str("# Keyspace\r\n");
            for (index, db) in shared.store.dbs().enumerate() {
                let keys = db.len();
                if keys > 0 {
                    let _ = write!(out, "db{index}:keys={keys},expires={},avg_ttl=0\r\n", db.volatile_len());
                }
            }
            Ok(())
        }
        "commandstats" => {
            observe::commandstats_section(ctx, out);
            Ok(())
        }
        "bloom" => {
            observe::bloom_section(ctx, out);
            Ok(())
        }
        _ => Ok(()),
    };
}

pub fn info(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut sections: Vec<&str> = Vec::new();
    if request.len() == 1 {
        sections.extend(DEFAULT_SECTIONS);
    }
    for arg in request.args().skip(1) {
        if ["all", "everything"].iter().any(|s| is(arg, s)) {
            sections.extend(ALL_SECTIONS);
        } else if is(arg, "default") {
            sections.extend(DEFAULT_SECTIONS);
        } else if let Some(known) = ALL_SECTIONS.iter().find(|s| is(arg, s)) {
            sections.push(known);
        }
    }
    let mut text = String::new();
    for (i, section) in ALL_SECTIONS
        .iter()
        .filter(|s| sections.contains(s))
        .enumerate()
    {
        if i > 0 {
            text.push_str("\r\n");
        }
        info_section(ctx, section, &mut text);
    }
    ctx.reply.verbatim(&text);
    Ok(())
}

pub fn config(ctx: &mut Ctx, request: Request) -> CmdResult {
    let sub = request.arg(1);
    if is(sub, "GET") {
        if request.len() < 3 {
            return Err(CmdError::arity("config|get"));
        }
        let mut found: Vec<(&str, String)> = Vec::new();
        for pattern in request.args().skip(2) {
            for pair in ctx.shared.config.get_matching(pattern) {
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
    } else if is(sub, "SET") {
        if request.len() < 4 || request.len() % 2 != 0 {
            return Err(CmdError::arity("config|set"));
        }
        let mut cursor = Cursor::new(request, 2);
        let mut pairs = Vec::new();
        while let (Some(name), Some(value)) = (cursor.next(), cursor.next()) {
            pairs.push((name, value));
        }
        ctx.shared
            .config
            .set_many(&pairs)
            .map_err(CmdError::Owned)?;
        if let Some(aof) = ctx.shared.aof.as_ref() {
            aof.set_fsync(ctx.shared.config.settings().appendfsync);
        }
        ctx.reply.ok();
    } else if is(sub, "RESETSTAT") {
        ctx.shared.stats.reset();
        ctx.shared.commands.reset();
        ctx.reply.ok();
    } else if is(sub, "REWRITE") {
        ctx.shared.config.rewrite().map_err(CmdError::Owned)?;
        ctx.reply.ok();
    } else if is(sub, "HELP") {
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
    } else {
        return Err(CmdError::unknown_subcommand(sub, "CONFIG"));
    }
    Ok(())
}

pub fn time(ctx: &mut Ctx, _request: Request) -> CmdResult {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.reply.array(2);
    ctx.reply.bulk(now.as_secs().to_string().as_bytes());
    ctx.reply.bulk(now.subsec_micros().to_string().as_bytes());
    Ok(())
}

/// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE]: on success the connection closes without a reply;
/// the server stops accepting, lets connections finish, then writes the exit snapshot.
pub fn shutdown(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut exit_save = ExitSave::Default;
    for option in request.args().skip(1) {
        if is(option, "ABORT") {
            return Err("ERR No shutdown in progress.".into());
        } else if is(option, "NOSAVE") {
            exit_save = ExitSave::NoSave;
        } else if is(option, "SAVE") {
            exit_save = ExitSave::Save;
        } else if !is(option, "NOW") && !is(option, "FORCE") {
            return Err(SYNTAX.into());
        }
    }
    tracing::info!(
        client = ctx.session.client.id,
        "SHUTDOWN requested by a client"
    );
    ctx.shared.shutdown.request_with(exit_save);
    ctx.session.close = true;
    Ok(())
}

const SAVE_IN_PROGRESS: &str = "ERR Background save already in progress";

/// SAVE: blocks this connection (and only it) until the snapshot is on disk.
pub fn save(ctx: &mut Ctx, _request: Request) -> CmdResult {
    let shared = ctx.shared;
    match tokio::task::block_in_place(|| shared.saver.save(shared)) {
        Ok(_) => {
            ctx.reply.ok();
            Ok(())
        }
        Err(SaveError::InProgress) => Err(SAVE_IN_PROGRESS.into()),
        Err(SaveError::Failed(error)) => {
            Err(CmdError::Owned(format!("ERR snapshot failed: {error}")))
        }
    }
}

pub fn bgsave(ctx: &mut Ctx, request: Request) -> CmdResult {
    if request.len() > 2 || (request.len() == 2 && !is(request.arg(1), "SCHEDULE")) {
        return Err(SYNTAX.into());
    }
    match Saver::save_in_background(ctx.shared) {
        Ok(()) => ctx.reply.simple("Background saving started"),
        Err(_) if request.len() == 2 => {
            ctx.shared.saver.schedule();
            ctx.reply.simple("Background saving scheduled");
        }
        Err(_) => return Err(SAVE_IN_PROGRESS.into()),
    }
    Ok(())
}

/// BGREWRITEAOF: compacts the append-only file, which here is the same work as BGSAVE (a new
/// snapshot, then a fresh file); without one, it takes a snapshot.
pub fn bgrewriteaof(ctx: &mut Ctx, _request: Request) -> CmdResult {
    match Saver::save_in_background(ctx.shared) {
        Ok(()) => ctx
            .reply
            .simple("Background append only file rewriting started"),
        Err(_) => {
            ctx.shared.saver.schedule();
            ctx.reply
                .simple("Background append only file rewriting scheduled");
        }
    }
    Ok(())
}

pub fn lastsave(ctx: &mut Ctx, _request: Request) -> CmdResult {
    ctx.reply
        .int((ctx.shared.saver.last_save_ms() / 1000) as i64);
    Ok(())
}
