//! MODULE: what a server with RedisBloom loaded answers, so that tools which look for RedisBloom
//! by its module name `bf` (RedisInsight, client libraries, redis-py's test suite) find it. sieved
//! loads no modules: the BF.* and CF.* commands are its own, so MODULE LIST names `bf` at the
//! RedisBloom version whose behaviour they follow (and `ReJSON` for the JSON.* commands, at
//! RedisJSON's), and LOAD and UNLOAD refuse, saying why.

use super::args::{keyword, Args};
use super::errors::*;
use super::module_list::{write_module_list, BLOOM_MODULE, JSON_MODULE};
use super::spec::{block, command_table, find_subcommand, string, CommandSpec, Docs};
use super::Ctx;
use crate::protocol::Request;

enum Subcommand {
    List,
    Load,
    Unload,
    Help,
}

/// Each subcommand's name, arity (for Redis's `module|<sub>` arity error) and what it is.
const SUBCOMMANDS: &[(&str, i32, Subcommand)] = &[
    ("list", 2, Subcommand::List),
    ("load", -3, Subcommand::Load),
    ("loadex", -3, Subcommand::Load),
    ("unload", 3, Subcommand::Unload),
    ("help", 2, Subcommand::Help),
];

const HELP: &[&str] = &[
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Prints this help.",
];

/// MODULE LIST | LOAD path [arg ...] | LOADEX path ... | UNLOAD name | HELP
#[derive(Clone, Copy)]
enum Module {
    List,
    Load,
    /// UNLOAD of the module sieved has built in.
    UnloadBuiltIn,
    UnloadUnknown,
    Help,
}

impl Module {
    fn parse(request: Request) -> Result<Self, CmdError> {
        Ok(match find_subcommand(&request, "MODULE", SUBCOMMANDS)? {
            Subcommand::List => Module::List,
            Subcommand::Load => Module::Load,
            Subcommand::Unload => {
                let name = Args::new(request, 2).required()?;
                let built_in = [
                    (BLOOM_MODULE, Module::UnloadBuiltIn),
                    (JSON_MODULE, Module::UnloadBuiltIn),
                ];
                keyword(name, &built_in).unwrap_or(Module::UnloadUnknown)
            }
            Subcommand::Help => Module::Help,
        })
    }
}

fn module(ctx: &mut Ctx, request: Request) -> CmdResult {
    let reply = &mut *ctx.reply;
    match Module::parse(request)? {
        // The path it was loaded from: none here.
        Module::List => write_module_list(reply, b""),
        Module::Load => return Err(MODULE_LOAD.into()),
        Module::UnloadBuiltIn => return Err(MODULE_UNLOAD_BUILT_IN.into()),
        Module::UnloadUnknown => return Err(MODULE_UNLOAD_UNKNOWN.into()),
        Module::Help => {
            reply.array(HELP.len());
            HELP.iter().for_each(|line| reply.simple(line));
        }
    }
    Ok(())
}

/// MODULE as Redis 7 declares the container; its subcommands are not listed apart.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Server:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "module", -2, [], &[], [], module, MODULE, subcommands(MODULE_SUBCOMMANDS);
};

const MODULE: Docs = Docs::new("A container for module commands.")
    .since("4.0.0")
    .complexity("Depends on subcommand.");

/// MODULE's subcommands, as COMMAND DOCS lists them.
const MODULE_SUBCOMMANDS: &[(&str, Docs)] = &[
    (
        "module|help",
        Docs::new("Returns helpful text about the different subcommands.")
            .since("5.0.0")
            .complexity("O(1)"),
    ),
    (
        "module|list",
        Docs::new("Returns all loaded modules.")
            .since("4.0.0")
            .complexity("O(N) where N is the number of loaded modules."),
    ),
    (
        "module|load",
        Docs::new("Loads a module.")
            .since("4.0.0")
            .complexity("O(1)")
            .args(&[string("path"), string("arg").optional().multiple()]),
    ),
    (
        "module|loadex",
        Docs::new("Loads a module using extended parameters.")
            .since("7.0.0")
            .complexity("O(1)")
            .args(&[
                string("path"),
                block("configs", &[string("name"), string("value")])
                    .token("CONFIG")
                    .optional()
                    .multiple_token(),
                string("args").token("ARGS").optional().multiple(),
            ]),
    ),
    (
        "module|unload",
        Docs::new("Unloads a module.")
            .since("4.0.0")
            .complexity("O(1)")
            .args(&[string("name")]),
    ),
];
