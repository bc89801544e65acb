//! COMMAND and its subcommands: what clients (redis-cli's hints, cluster clients, redis-py)
//! learn about the command table.

use super::args::is;
use super::errors::*;
use super::{lookup, CommandSpec, Ctx, COMMANDS};
use crate::protocol::{Reply, Request};

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
