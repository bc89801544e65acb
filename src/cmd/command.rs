//! COMMAND and its subcommands: what clients (redis-cli's hints, cluster clients, redis-py)
//! learn about the command table, in Redis 7's reply shapes.

use super::args::{keyword, Args, Items};
use super::errors::*;
use super::spec::{
    bits, find_subcommand, one_of, pattern, string, Acl, Arg, ArgType, CommandSpec, DocFlags, Docs,
    Group, KeySpec,
};
use super::{lookup, Ctx, COMMANDS};
use crate::protocol::{Reply, Request};
use crate::store::glob_match;

fn write_info(reply: &mut Reply, spec: &CommandSpec) {
    reply.array(10);
    reply.bulk(spec.name.as_bytes());
    reply.int(i64::from(spec.arity));
    write_names(reply, spec.flags.names());
    reply.int(i64::from(spec.first_key));
    reply.int(i64::from(spec.last_key));
    reply.int(i64::from(spec.step));
    write_names(reply, spec.acl_categories().names());
    reply.set(spec.tips.len());
    spec.tips.iter().for_each(|tip| reply.bulk(tip.as_bytes()));
    reply.set(spec.key_specs.len());
    spec.key_specs
        .iter()
        .for_each(|key| write_key_spec(reply, key));
    // Container commands are described whole, without subcommands.
    reply.set(0);
}

fn write_key_spec(reply: &mut Reply, key: &KeySpec) {
    reply.map(3 + key.notes.is_some() as usize);
    if let Some(notes) = key.notes {
        reply.bulk(b"notes");
        reply.bulk(notes.as_bytes());
    }
    reply.bulk(b"flags");
    write_names(reply, key.flags.names());
    write_search(reply, b"begin_search", b"index", &[(b"index", key.index)]);
    let range: [(&[u8], i32); 3] = [
        (b"lastkey", key.last_key),
        (b"keystep", key.step),
        (b"limit", 0),
    ];
    write_search(reply, b"find_keys", b"range", &range);
}

/// One step of a key specification: its kind and its numeric parameters.
fn write_search(reply: &mut Reply, step: &[u8], kind: &[u8], parameters: &[(&[u8], i32)]) {
    reply.bulk(step);
    reply.map(2);
    reply.bulk(b"type");
    reply.bulk(kind);
    reply.bulk(b"spec");
    reply.map(parameters.len());
    for (name, value) in parameters {
        reply.bulk(name);
        reply.int(i64::from(*value));
    }
}

/// A set of flag or category names, as simple strings.
fn write_names(reply: &mut Reply, names: impl Iterator<Item = &'static str> + Clone) {
    reply.set(names.clone().count());
    names.for_each(|name| reply.simple(name));
}

/// One command's entry in COMMAND DOCS: its name, then its documentation.
fn write_docs(reply: &mut Reply, spec: &CommandSpec) {
    reply.bulk(spec.name.as_bytes());
    write_doc_map(reply, &spec.docs, spec.group, spec.subcommands);
}

/// The map of documentation, in Redis's order of fields, each present only when it has a
/// value (`group` always). A container's subcommands follow, each by its full name
/// (`config|get`), documented the same way and in the container's group.
fn write_doc_map(reply: &mut Reply, docs: &Docs, group: Group, subcommands: &[(&str, Docs)]) {
    let module = group.module();
    let fields = 1
        + !docs.summary.is_empty() as usize
        + !docs.since.is_empty() as usize
        + docs.complexity.is_some() as usize
        + module.is_some() as usize
        + (docs.doc_flags != DocFlags::NONE) as usize
        + docs.deprecated_since.is_some() as usize
        + docs.replaced_by.is_some() as usize
        + !docs.history.is_empty() as usize
        + !docs.args.is_empty() as usize
        + !subcommands.is_empty() as usize;
    reply.map(fields);
    for (name, text) in [(&b"summary"[..], docs.summary), (b"since", docs.since)] {
        if !text.is_empty() {
            reply.bulk(name);
            reply.bulk(text.as_bytes());
        }
    }
    reply.bulk(b"group");
    reply.bulk(group.name().as_bytes());
    write_text(reply, b"complexity", docs.complexity);
    write_text(reply, b"module", module);
    if docs.doc_flags != DocFlags::NONE {
        reply.bulk(b"doc_flags");
        write_names(reply, docs.doc_flags.names());
    }
    write_text(reply, b"deprecated_since", docs.deprecated_since);
    write_text(reply, b"replaced_by", docs.replaced_by);
    if !docs.history.is_empty() {
        reply.bulk(b"history");
        reply.set(docs.history.len());
        for (version, change) in docs.history {
            reply.array(2);
            reply.bulk(version.as_bytes());
            reply.bulk(change.as_bytes());
        }
    }
    if !docs.args.is_empty() {
        reply.bulk(b"arguments");
        write_args(reply, docs.args);
    }
    if !subcommands.is_empty() {
        reply.bulk(b"subcommands");
        reply.map(subcommands.len());
        for (name, docs) in subcommands {
            reply.bulk(name.as_bytes());
            write_doc_map(reply, docs, group, &[]);
        }
    }
}

/// A field whose value is a text, when there is one.
fn write_text(reply: &mut Reply, field: &[u8], text: Option<&str>) {
    if let Some(text) = text {
        reply.bulk(field);
        reply.bulk(text.as_bytes());
    }
}

fn write_args(reply: &mut Reply, args: &[Arg]) {
    reply.array(args.len());
    for arg in args {
        let flags = [
            (arg.optional, "optional"),
            (arg.multiple, "multiple"),
            (arg.multiple_token, "multiple_token"),
        ];
        let flag_count = flags.iter().filter(|(set, _)| *set).count();
        let (key_spec, children) = match arg.kind {
            ArgType::Key(index) => (Some(index), None),
            ArgType::OneOf(children) | ArgType::Block(children) => (None, Some(children)),
            _ => (None, None),
        };
        reply.map(
            2 + key_spec.is_some() as usize
                + arg.token.is_some() as usize
                + arg.summary.is_some() as usize
                + arg.since.is_some() as usize
                + arg.deprecated_since.is_some() as usize
                + (flag_count > 0) as usize
                + children.is_some() as usize,
        );
        reply.bulk(b"name");
        reply.bulk(arg.name.as_bytes());
        reply.bulk(b"type");
        reply.bulk(arg.kind.name().as_bytes());
        if let Some(index) = key_spec {
            reply.bulk(b"key_spec_index");
            reply.int(i64::from(index));
        }
        write_text(reply, b"token", arg.token);
        write_text(reply, b"summary", arg.summary);
        write_text(reply, b"since", arg.since);
        write_text(reply, b"deprecated_since", arg.deprecated_since);
        if flag_count > 0 {
            reply.bulk(b"flags");
            write_names(
                reply,
                flags.iter().filter(|(set, _)| *set).map(|(_, name)| *name),
            );
        }
        if let Some(children) = children {
            reply.bulk(b"arguments");
            write_args(reply, children);
        }
    }
}

/// COMMAND LIST's FILTERBY: which commands to list.
enum Filter<'a> {
    All,
    Module(&'a [u8]),
    Category(Option<Acl>),
    Pattern(&'a [u8]),
}

#[derive(Clone, Copy)]
enum FilterKind {
    Module,
    Category,
    Pattern,
}

impl<'a> Filter<'a> {
    /// Reads from the word after LIST.
    fn parse(args: &mut Args<'a>) -> Result<Filter<'a>, CmdError> {
        const KINDS: &[(&str, FilterKind)] = &[
            ("MODULE", FilterKind::Module),
            ("ACLCAT", FilterKind::Category),
            ("PATTERN", FilterKind::Pattern),
        ];
        match args.remaining() {
            0 => Ok(Filter::All),
            3 if args.check("FILTERBY") => {
                let (kind, value) = (args.required()?, args.required()?);
                match keyword(kind, KINDS) {
                    Some(FilterKind::Module) => Ok(Filter::Module(value)),
                    Some(FilterKind::Category) => Ok(Filter::Category(Acl::find(value))),
                    Some(FilterKind::Pattern) => Ok(Filter::Pattern(value)),
                    None => Err(SYNTAX.into()),
                }
            }
            _ => Err(SYNTAX.into()),
        }
    }

    fn admits(&self, spec: &CommandSpec) -> bool {
        match *self {
            Filter::All => true,
            Filter::Module(name) => spec
                .group
                .module()
                .is_some_and(|module| module.as_bytes().eq_ignore_ascii_case(name)),
            Filter::Category(category) => {
                category.is_some_and(|category| spec.acl_categories().contains(category))
            }
            Filter::Pattern(pattern) => glob_match(pattern, spec.name.as_bytes(), true),
        }
    }
}

/// COMMAND GETKEYS and GETKEYSANDFLAGS: the keys of `command` (a full command, its name
/// first), found by its key specifications, checked as Redis checks them.
fn write_keys(reply: &mut Reply, command: Items, with_flags: bool) -> CmdResult {
    let spec = command
        .get(0)
        .and_then(lookup)
        .map(|index| &COMMANDS[index])
        .ok_or(GETKEYS_INVALID_COMMAND)?;
    if spec.key_specs.is_empty() {
        return Err(GETKEYS_NO_KEYS.into());
    }
    let argc = command.len();
    if !spec.arity_fits(argc) {
        return Err(GETKEYS_BAD_ARITY.into());
    }
    let mut count = 0;
    for key in spec.key_specs {
        count += key.positions(argc).ok_or(GETKEYS_BAD_ARGUMENTS)?.count();
    }
    reply.array(count);
    for key in spec.key_specs {
        for position in key.positions(argc).into_iter().flatten() {
            let name = command.get(position).unwrap_or_default();
            if with_flags {
                reply.array(2);
                reply.bulk(name);
                write_names(reply, key.flags.names());
            } else {
                reply.bulk(name);
            }
        }
    }
    Ok(())
}

enum Subcommand {
    Count,
    List,
    Info,
    Docs,
    GetKeys,
    GetKeysAndFlags,
    Help,
}

/// Each subcommand's name, arity (for Redis's `command|<sub>` arity error) and what it is.
const SUBCOMMANDS: &[(&str, i32, Subcommand)] = &[
    ("count", 2, Subcommand::Count),
    ("list", -2, Subcommand::List),
    ("info", -2, Subcommand::Info),
    ("docs", -2, Subcommand::Docs),
    ("getkeys", -4, Subcommand::GetKeys),
    ("getkeysandflags", -4, Subcommand::GetKeysAndFlags),
    ("help", 2, Subcommand::Help),
];

const HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all commands.",
    "COUNT",
    "    Return the total number of commands in this server.",
    "LIST",
    "    Return a list of all commands in this server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full command.",
    "HELP",
    "    Prints this help.",
];

/// COMMAND [subcommand [argument ...]], each with what it asks.
enum Query<'a> {
    Count,
    List(Filter<'a>),
    /// COMMAND alone, and INFO: the commands named (every one if none is).
    Info(Items<'a>),
    /// The commands named (every one if none is).
    Docs(Items<'a>),
    /// A full command, its name first; with each key's flags or not.
    GetKeys(Items<'a>, bool),
    Help,
}

impl<'a> Query<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        if Args::new(request, 1).remaining() == 0 {
            return Ok(Query::Info(Args::new(request, 1).items()));
        }
        let subcommand = find_subcommand(&request, "COMMAND", SUBCOMMANDS)?;
        let mut args = Args::new(request, 2);
        Ok(match subcommand {
            Subcommand::Count => Query::Count,
            Subcommand::List => Query::List(Filter::parse(&mut args)?),
            Subcommand::Info => Query::Info(args.items()),
            Subcommand::Docs => Query::Docs(args.items()),
            Subcommand::GetKeys => Query::GetKeys(args.items(), false),
            Subcommand::GetKeysAndFlags => Query::GetKeys(args.items(), true),
            Subcommand::Help => Query::Help,
        })
    }
}

pub(super) fn command(ctx: &mut Ctx, request: Request) -> CmdResult {
    let reply = &mut *ctx.reply;
    match Query::parse(request)? {
        Query::Count => reply.int(COMMANDS.len() as i64),
        Query::List(filter) => {
            let listed = || COMMANDS.iter().filter(|spec| filter.admits(spec));
            reply.array(listed().count());
            listed().for_each(|spec| reply.bulk(spec.name.as_bytes()));
        }
        Query::Info(names) if names.is_empty() => {
            reply.array(COMMANDS.len());
            COMMANDS.iter().for_each(|spec| write_info(reply, spec));
        }
        Query::Info(names) => {
            reply.array(names.len());
            for name in names.iter() {
                match lookup(name) {
                    Some(index) => write_info(reply, &COMMANDS[index]),
                    None => reply.null(),
                }
            }
        }
        Query::Docs(names) if names.is_empty() => {
            reply.map(COMMANDS.len());
            COMMANDS.iter().for_each(|spec| write_docs(reply, spec));
        }
        Query::Docs(names) => {
            reply.map(names.iter().filter_map(lookup).count());
            names
                .iter()
                .filter_map(lookup)
                .for_each(|index| write_docs(reply, &COMMANDS[index]));
        }
        Query::GetKeys(command, with_flags) => write_keys(reply, command, with_flags)?,
        Query::Help => {
            reply.array(HELP.len());
            HELP.iter().for_each(|line| reply.simple(line));
        }
    }
    Ok(())
}

/// COMMAND as Redis 7 declares it; its subcommands are not listed apart.
pub(super) const SPECS: &[CommandSpec] = &[CommandSpec::new(
    "command",
    -1,
    Group::Server,
    "Returns detailed information about all commands.",
    command,
)
.flags(bits![Flags: LOADING, STALE])
.acl(bits![Acl: CONNECTION])
.since("2.8.13")
.complexity("O(N) where N is the total number of Redis commands")
.subcommands(COMMAND_SUBCOMMANDS)];

/// COMMAND's subcommands, as COMMAND DOCS lists them.
const COMMAND_SUBCOMMANDS: &[(&str, Docs)] = &[
    (
        "command|count",
        Docs::new("Returns a count of commands.")
            .since("2.8.13")
            .complexity("O(1)"),
    ),
    (
        "command|docs",
        Docs::new("Returns documentary information about one, multiple or all commands.")
            .since("7.0.0")
            .complexity("O(N) where N is the number of commands to look up")
            .args(&[string("command-name").optional().multiple()]),
    ),
    (
        "command|getkeys",
        Docs::new("Extracts the key names from an arbitrary command.")
            .since("2.8.13")
            .complexity("O(N) where N is the number of arguments to the command")
            .args(&[string("command"), string("arg").optional().multiple()]),
    ),
    (
        "command|getkeysandflags",
        Docs::new("Extracts the key names and access flags for an arbitrary command.")
            .since("7.0.0")
            .complexity("O(N) where N is the number of arguments to the command")
            .args(&[string("command"), string("arg").optional().multiple()]),
    ),
    (
        "command|help",
        Docs::new("Returns helpful text about the different subcommands.")
            .since("5.0.0")
            .complexity("O(1)"),
    ),
    (
        "command|info",
        Docs::new("Returns information about one, multiple or all commands.")
            .since("2.8.13")
            .complexity("O(N) where N is the number of commands to look up")
            .history(&[(
                "7.0.0",
                "Allowed to be called with no argument to get info on all commands.",
            )])
            .args(&[string("command-name").optional().multiple()]),
    ),
    (
        "command|list",
        Docs::new("Returns a list of command names.")
            .since("7.0.0")
            .complexity("O(N) where N is the total number of Redis commands")
            .args(&[one_of(
                "filterby",
                &[
                    string("module-name").token("MODULE"),
                    string("category").token("ACLCAT"),
                    pattern("pattern").token("PATTERN"),
                ],
            )
            .token("FILTERBY")
            .optional()]),
    ),
];
