//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT.

use super::args::{int, keyword, parse_i64, Args, UpToError};
use super::errors::*;
use super::spec::{bits, block, integer, one_of, pure_token, string, CommandSpec, Docs, Group};
use super::{After, ClientFilter, ClientType, Ctx};
use crate::protocol::{Protocol, Request};

/// PING [message].
fn parse_ping(request: Request<'_>) -> Result<Option<&[u8]>, CmdError> {
    let mut args = Args::new(request, 1);
    args.words_at_most(2)?;
    Ok(args.next())
}

pub(super) fn ping(ctx: &mut Ctx, request: Request) -> CmdResult {
    let message = parse_ping(request)?;
    if ctx.session.client.subscribed() && !ctx.reply.is_resp3() {
        // Shaped like a message, as Redis, so that a RESP2 subscriber can tell it apart.
        ctx.reply.array(2);
        ctx.reply.bulk(b"pong");
        ctx.reply.bulk(message.unwrap_or_default());
        return Ok(());
    }
    match message {
        None => ctx.reply.simple("PONG"),
        Some(message) => ctx.reply.bulk(message),
    }
    Ok(())
}

pub(super) fn echo(ctx: &mut Ctx, request: Request) -> CmdResult {
    let message = Args::new(request, 1).required()?;
    ctx.reply.bulk(message);
    Ok(())
}

/// AUTH user pass and HELLO's AUTH: only the default user exists; without a configured password
/// it accepts any password, as in Redis.
fn check_credentials(ctx: &mut Ctx, username: &[u8], password: &[u8]) -> CmdResult {
    let config = ctx.config();
    let accepted = username == b"default"
        && (!config.requires_password() || config.password_matches(password));
    if !accepted {
        return Err(WRONGPASS.into());
    }
    ctx.session.authenticated = true;
    Ok(())
}

/// AUTH [username] password.
struct Auth<'a> {
    username: Option<&'a [u8]>,
    password: &'a [u8],
}

impl<'a> Auth<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let first = args.required()?;
        let second = args.next();
        args.finish(SYNTAX)?;
        Ok(match second {
            Some(password) => Auth {
                username: Some(first),
                password,
            },
            None => Auth {
                username: None,
                password: first,
            },
        })
    }
}

pub(super) fn auth(ctx: &mut Ctx, request: Request) -> CmdResult {
    match Auth::parse(request)? {
        Auth { username: None, .. } if !ctx.config().requires_password() => {
            Err(AUTH_NOT_CONFIGURED.into())
        }
        Auth { username, password } => {
            check_credentials(ctx, username.unwrap_or(b"default"), password)
        }
    }?;
    ctx.reply.ok();
    Ok(())
}

fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

/// HELLO [protover [AUTH username password] [SETNAME clientname]]. Redis authenticates at AUTH
/// as it reads the options, so a wrong password named before a wrong option is the error given,
/// and a right one counts even when a later option is wrong: the options read before the first
/// wrong one are applied, then its error given.
struct Hello<'a> {
    protocol: Option<Protocol>,
    options: UpToError<HelloOption<'a>>,
}

#[derive(Clone, Copy)]
enum HelloOption<'a> {
    Auth {
        username: &'a [u8],
        password: &'a [u8],
    },
    SetName(&'a [u8]),
}

impl<'a> Hello<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let protocol = match args.next() {
            None => None,
            Some(version) => Some(match int(version, PROTO_NOT_INTEGER)? {
                2 => Protocol::Resp2,
                3 => Protocol::Resp3,
                _ => return Err(NOPROTO.into()),
            }),
        };
        let options = UpToError::read(&mut args, Self::option, |_| false);
        Ok(Hello { protocol, options })
    }

    fn option(args: &mut Args<'a>) -> Result<HelloOption<'a>, CmdError> {
        let option = args.required()?;
        let keywords = [
            ("AUTH", HelloKeyword::Auth),
            ("SETNAME", HelloKeyword::SetName),
        ];
        match keyword(option, &keywords) {
            Some(HelloKeyword::Auth) if args.remaining() >= 2 => Ok(HelloOption::Auth {
                username: args.required()?,
                password: args.required()?,
            }),
            Some(HelloKeyword::SetName) if args.remaining() >= 1 => {
                let name = args.required()?;
                match valid_client_name(name) {
                    true => Ok(HelloOption::SetName(name)),
                    false => Err(CLIENT_NAME_SPACES.into()),
                }
            }
            _ => Err(hello_option_syntax(option)),
        }
    }
}

#[derive(Clone, Copy)]
enum HelloKeyword {
    Auth,
    SetName,
}

pub(super) fn hello(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Hello { protocol, options } = Hello::parse(request)?;
    let protocol = protocol.unwrap_or(ctx.reply.protocol());
    let mut name = None;
    for option in &options.options {
        match *option {
            HelloOption::Auth { username, password } => check_credentials(ctx, username, password)?,
            HelloOption::SetName(value) => name = Some(value),
        }
    }
    options.result()?;
    if ctx.session.must_authenticate(ctx.config()) {
        return Err(HELLO_NOAUTH.into());
    }
    if let Some(name) = name {
        ctx.session.client.set_name(name);
    }
    ctx.reply.set_protocol(protocol);
    ctx.session.client.set_protocol(protocol);
    let reply = &mut *ctx.reply;
    reply.map(7);
    reply.bulk(b"server");
    reply.bulk(b"redis");
    reply.bulk(b"version");
    reply.bulk(crate::REDIS_VERSION.as_bytes());
    reply.bulk(b"proto");
    reply.int(if protocol == Protocol::Resp3 { 3 } else { 2 });
    reply.bulk(b"id");
    reply.int(ctx.session.client.id as i64);
    reply.bulk(b"mode");
    reply.bulk(b"standalone");
    reply.bulk(b"role");
    reply.bulk(b"master");
    reply.bulk(b"modules");
    super::module_list::write_module_list(reply, b"sieved");
    Ok(())
}

/// SELECT index: the database, one of `databases`.
fn parse_select(request: Request, databases: usize) -> Result<usize, CmdError> {
    let index = Args::new(request, 1).int(NOT_INTEGER)?;
    usize::try_from(index)
        .ok()
        .filter(|&index| index < databases)
        .ok_or_else(|| DB_INDEX.into())
}

pub(super) fn select(ctx: &mut Ctx, request: Request) -> CmdResult {
    let index = parse_select(request, ctx.store.databases())?;
    ctx.session.db = index;
    ctx.session.client.set_db(index);
    ctx.reply.ok();
    Ok(())
}

pub(super) fn quit(ctx: &mut Ctx, _request: Request) -> CmdResult {
    ctx.session.after = Some(After::Close);
    ctx.reply.ok();
    Ok(())
}

pub(super) fn reset(ctx: &mut Ctx, _request: Request) -> CmdResult {
    ctx.session.authenticated = !ctx.config().requires_password();
    ctx.session.transaction = None;
    ctx.session.watched.clear();
    ctx.leave_all_channels();
    ctx.session.db = 0;
    ctx.session.client.set_db(0);
    ctx.session.client.clear_name();
    ctx.reply.set_protocol(Protocol::Resp2);
    ctx.session.client.set_protocol(Protocol::Resp2);
    ctx.reply.simple("RESET");
    Ok(())
}

const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "    * MAXAGE <maxage>",
    "      Kill connections older than the specified age.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "    * ID <id> [<id>...]",
    "      Return clients with the specified IDs.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "HELP",
    "    Print this help.",
];

/// CLIENT's subcommands, each with what it asks.
enum Client<'a> {
    Id,
    SetName(&'a [u8]),
    GetName,
    SetInfo(LibAttribute, &'a [u8]),
    Info,
    List(ClientFilter),
    Kill(Kill),
    Unblock { id: i64, error: bool },
    Help,
}

#[derive(Clone, Copy)]
enum ClientSubcommand {
    Id,
    SetName,
    GetName,
    SetInfo,
    Info,
    List,
    Kill,
    Unblock,
    Help,
}

/// What CLIENT SETINFO sets.
#[derive(Clone, Copy)]
enum LibAttribute {
    Name,
    Version,
}

/// CLIENT LIST's options.
#[derive(Clone, Copy)]
enum ListOption {
    Type,
    Id,
}

impl<'a> Client<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        const SUBCOMMANDS: &[(&str, ClientSubcommand)] = &[
            ("ID", ClientSubcommand::Id),
            ("SETNAME", ClientSubcommand::SetName),
            ("GETNAME", ClientSubcommand::GetName),
            ("SETINFO", ClientSubcommand::SetInfo),
            ("INFO", ClientSubcommand::Info),
            ("LIST", ClientSubcommand::List),
            ("KILL", ClientSubcommand::Kill),
            ("UNBLOCK", ClientSubcommand::Unblock),
            ("HELP", ClientSubcommand::Help),
        ];
        let mut args = Args::new(request, 1);
        let sub = args.required()?;
        let subcommand =
            keyword(sub, SUBCOMMANDS).ok_or_else(|| CmdError::unknown_subcommand(sub, "CLIENT"))?;
        let words = args.word_count();
        let arity = |n: usize, name: &str| match words == n {
            true => Ok(()),
            false => Err(CmdError::arity(&format!("client|{name}"))),
        };
        Ok(match subcommand {
            ClientSubcommand::Id => arity(2, "id").map(|()| Client::Id)?,
            ClientSubcommand::SetName => {
                arity(3, "setname")?;
                let name = args.required()?;
                if !valid_client_name(name) {
                    return Err(CLIENT_NAME_SPACES.into());
                }
                Client::SetName(name)
            }
            ClientSubcommand::GetName => arity(2, "getname").map(|()| Client::GetName)?,
            ClientSubcommand::SetInfo => {
                arity(4, "setinfo")?;
                let (attribute, value) = (args.required()?, args.required()?);
                if !valid_client_name(value) && !value.is_empty() {
                    return Err(client_info_characters(attribute));
                }
                let attributes = [
                    ("LIB-NAME", LibAttribute::Name),
                    ("LIB-VER", LibAttribute::Version),
                ];
                let attribute = keyword(attribute, &attributes)
                    .ok_or_else(|| unrecognized_option(attribute))?;
                Client::SetInfo(attribute, value)
            }
            ClientSubcommand::Info => arity(2, "info").map(|()| Client::Info)?,
            ClientSubcommand::List => Client::List(Self::list_filter(&mut args)?),
            ClientSubcommand::Kill => Client::Kill(Kill::parse(&mut args)?),
            ClientSubcommand::Unblock => {
                if words < 3 {
                    return Err(CmdError::arity("client|unblock"));
                }
                if words > 4 {
                    // As Redis words a subcommand whose own arity check fails.
                    return Err(subcommand_arity(sub, "CLIENT"));
                }
                let id = args.required()?;
                let error = match args.next() {
                    None => false,
                    Some(reason) => keyword(reason, &[("TIMEOUT", false), ("ERROR", true)])
                        .ok_or(UNBLOCK_REASON)?,
                };
                let id = int(id, NOT_INTEGER)?;
                Client::Unblock { id, error }
            }
            ClientSubcommand::Help => Client::Help,
        })
    }

    /// CLIENT LIST [TYPE type] [ID id [id ...]].
    fn list_filter(args: &mut Args) -> Result<ClientFilter, CmdError> {
        let mut filter = ClientFilter::default();
        while let Some(option) = args.next() {
            match keyword(
                option,
                &[("TYPE", ListOption::Type), ("ID", ListOption::Id)],
            ) {
                Some(ListOption::Type) => {
                    filter.client_type = Some(client_type(args.next_or(SYNTAX)?)?);
                }
                Some(ListOption::Id) if args.remaining() > 0 => {
                    let list: Option<Vec<u64>> = args
                        .rest()
                        .map(|id| parse_i64(id).map(|id| id.max(0) as u64))
                        .collect();
                    filter.ids = Some(list.ok_or(INVALID_CLIENT_ID)?);
                }
                _ => return Err(SYNTAX.into()),
            }
        }
        Ok(filter)
    }
}

pub(super) fn client(ctx: &mut Ctx, request: Request) -> CmdResult {
    match Client::parse(request)? {
        Client::Id => ctx.reply.int(ctx.session.client.id as i64),
        Client::SetName(name) => {
            ctx.session.client.set_name(name);
            ctx.reply.ok();
        }
        Client::GetName => match ctx.session.client.name() {
            Some(name) => ctx.reply.bulk(&name),
            None => ctx.reply.null(),
        },
        Client::SetInfo(attribute, value) => {
            match attribute {
                LibAttribute::Name => ctx.session.client.set_lib_name(value),
                LibAttribute::Version => ctx.session.client.set_lib_version(value),
            }
            ctx.reply.ok();
        }
        Client::Info => {
            let line = ctx.session.client.describe(ctx.now);
            ctx.reply.verbatim(&line);
        }
        Client::List(filter) => {
            let text = ctx.server.client_list(&filter, ctx.now);
            ctx.reply.verbatim(&text);
        }
        Client::Kill(kill) => client_kill(ctx, kill)?,
        Client::Unblock { id, error } => {
            let unblocked = u64::try_from(id).is_ok_and(|id| ctx.server.unblock_client(id, error));
            ctx.reply.int(unblocked as i64);
        }
        Client::Help => {
            ctx.reply.array(CLIENT_HELP.len());
            for line in CLIENT_HELP {
                ctx.reply.simple(line);
            }
        }
    }
    Ok(())
}

fn client_type(name: &[u8]) -> Result<ClientType, CmdError> {
    ClientType::from_name(name).ok_or_else(|| unknown_client_type(name))
}

/// CLIENT KILL in Redis's two forms. `CLIENT KILL ip:port` answers OK or an error, and may name
/// the caller itself. Filters (`ID`, `TYPE`, `ADDR`, `LADDR`, `USER`, `MAXAGE`, `SKIPME`), all
/// of which a client must pass, answer how many were killed and spare the caller unless
/// `SKIPME no`.
struct Kill {
    filter: ClientFilter,
    skip_me: bool,
    old_form: bool,
}

#[derive(Clone, Copy)]
enum KillOption {
    Id,
    Type,
    Addr,
    LocalAddr,
    User,
    MaxAge,
    SkipMe,
}

impl Kill {
    /// Reads from the word after KILL.
    fn parse(args: &mut Args) -> Result<Self, CmdError> {
        const OPTIONS: &[(&str, KillOption)] = &[
            ("ID", KillOption::Id),
            ("TYPE", KillOption::Type),
            ("ADDR", KillOption::Addr),
            ("LADDR", KillOption::LocalAddr),
            ("USER", KillOption::User),
            ("MAXAGE", KillOption::MaxAge),
            ("SKIPME", KillOption::SkipMe),
        ];
        if args.word_count() < 3 {
            return Err(CmdError::arity("client|kill"));
        }
        let old_form = args.word_count() == 3;
        let mut kill = Kill {
            filter: ClientFilter::default(),
            skip_me: !old_form,
            old_form,
        };
        if old_form {
            kill.filter.addr = Some(args.required()?.to_vec());
        }
        while let Some(option) = args.next() {
            let value = args.next_or(SYNTAX)?;
            let filter = &mut kill.filter;
            match keyword(option, OPTIONS) {
                Some(KillOption::Id) => {
                    let id = parse_i64(value)
                        .filter(|&id| id > 0)
                        .ok_or(CLIENT_ID_NOT_POSITIVE)?;
                    filter.ids = Some(vec![id as u64]);
                }
                Some(KillOption::Type) => filter.client_type = Some(client_type(value)?),
                Some(KillOption::Addr) => filter.addr = Some(value.to_vec()),
                Some(KillOption::LocalAddr) => filter.local_addr = Some(value.to_vec()),
                Some(KillOption::User) => {
                    // `default` is the only user, and every client is authenticated as it.
                    if value != b"default" {
                        return Err(no_such_user(value));
                    }
                }
                Some(KillOption::MaxAge) => {
                    let max_age = int(value, MAXAGE_NOT_INTEGER)?;
                    if max_age <= 0 {
                        return Err(MAXAGE_NOT_POSITIVE.into());
                    }
                    filter.min_age_secs = Some(max_age as u64);
                }
                Some(KillOption::SkipMe) => {
                    kill.skip_me = keyword(value, &[("yes", true), ("no", false)]).ok_or(SYNTAX)?;
                }
                None => return Err(SYNTAX.into()),
            }
        }
        Ok(kill)
    }
}

/// A caller that kills itself gets its reply first, then its connection closes.
fn client_kill(ctx: &mut Ctx, kill: Kill) -> CmdResult {
    let Kill {
        filter,
        skip_me,
        old_form,
    } = kill;
    let caller = &ctx.session.client;
    let kills_caller = !skip_me && filter.matches(caller, ctx.now);
    let killed = ctx.server.kill_clients(&filter, caller.id, ctx.now) + kills_caller as usize;
    // Closed like QUIT, so the reply still goes out, as Redis's close-after-reply.
    if kills_caller {
        ctx.session.after = Some(After::Close);
    }
    match (old_form, killed) {
        (true, 0) => return Err(NO_SUCH_CLIENT.into()),
        (true, _) => ctx.reply.ok(),
        (false, _) => ctx.reply.int(killed as i64),
    }
    Ok(())
}

/// Connection commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "ping",
        -1,
        Group::Connection,
        "Returns the server's liveliness response.",
        ping,
    )
    .flags(bits![Flags: FAST])
    .acl(bits![Acl: CONNECTION])
    .complexity("O(1)")
    .args(&[string("message").optional()]),
    CommandSpec::new(
        "echo",
        2,
        Group::Connection,
        "Returns the given string.",
        echo,
    )
    .flags(bits![Flags: LOADING, STALE, FAST])
    .acl(bits![Acl: CONNECTION])
    .complexity("O(1)")
    .args(&[string("message")]),
    CommandSpec::new(
        "hello",
        -1,
        Group::Connection,
        "Handshakes with the Redis server.",
        hello,
    )
    .flags(bits![Flags: NOSCRIPT, LOADING, STALE, FAST, NO_AUTH, ALLOW_BUSY])
    .acl(bits![Acl: CONNECTION])
    .since("6.0.0")
    .complexity("O(1)")
    .history(&[
        ("6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context."),
    ])
    .args(&[block(
        "arguments",
        &[
            integer("protover"),
            block(
                "auth",
                &[string("username"), string("password")],
            )
            .token("AUTH")
            .optional(),
            string("clientname").token("SETNAME").optional(),
        ],
    )
    .optional()]),
    CommandSpec::new(
        "auth",
        -2,
        Group::Connection,
        "Authenticates the connection.",
        auth,
    )
    .flags(bits![Flags: NOSCRIPT, LOADING, STALE, FAST, NO_AUTH, ALLOW_BUSY])
    .acl(bits![Acl: CONNECTION])
    .complexity("O(N) where N is the number of passwords defined for the user")
    .history(&[
        ("6.0.0", "Added ACL style (username and password)."),
    ])
    .args(&[
        string("username").since("6.0.0").optional(),
        string("password"),
    ]),
    CommandSpec::new(
        "select",
        2,
        Group::Connection,
        "Changes the selected database.",
        select,
    )
    .flags(bits![Flags: LOADING, STALE, FAST])
    .acl(bits![Acl: CONNECTION])
    .complexity("O(1)")
    .args(&[integer("index")]),
    CommandSpec::new("quit", -1, Group::Connection, "Closes the connection.", quit)
        .flags(bits![Flags:
            NOSCRIPT, LOADING, STALE, FAST, NO_AUTH, ALLOW_BUSY, NOT_QUEUED
        ])
        .acl(bits![Acl: CONNECTION])
        .complexity("O(1)")
    .deprecated("7.2.0", "just closing the connection"),
    CommandSpec::new(
        "reset",
        1,
        Group::Connection,
        "Resets the connection.",
        reset,
    )
    .flags(bits![Flags:
        NOSCRIPT, LOADING, STALE, FAST, NO_AUTH, ALLOW_BUSY, NOT_QUEUED
    ])
    .acl(bits![Acl: CONNECTION])
    .since("6.2.0")
    .complexity("O(1)"),
    CommandSpec::new(
        "client",
        -2,
        Group::Connection,
        "A container for client connection commands.",
        client,
    )
    .since("2.4.0")
    .complexity("Depends on subcommand.")
    .subcommands(CLIENT_SUBCOMMANDS),
];

/// CLIENT's subcommands, as COMMAND DOCS lists them.
const CLIENT_SUBCOMMANDS: &[(&str, Docs)] = &[
    (
        "client|getname",
        Docs::new("Returns the name of the connection.")
            .since("2.6.9")
            .complexity("O(1)"),
    ),
    (
        "client|help",
        Docs::new("Returns helpful text about the different subcommands.")
            .since("5.0.0")
            .complexity("O(1)"),
    ),
    (
        "client|id",
        Docs::new("Returns the unique client ID of the connection.")
            .since("5.0.0")
            .complexity("O(1)"),
    ),
    (
        "client|info",
        Docs::new("Returns information about the connection.")
            .since("6.2.0")
            .complexity("O(1)"),
    ),
    (
        "client|kill",
        Docs::new("Terminates open connections.")
            .since("2.4.0")
            .complexity("O(N) where N is the number of client connections")
            .history(&[
                ("2.8.12", "Added new filter format."),
                ("2.8.12", "`ID` option."),
                ("3.2.0", "Added `master` type in for `TYPE` option."),
                ("5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."),
                ("6.2.0", "`LADDR` option."),
                ("7.4.0", "`MAXAGE` option."),
            ])
            .args(&[
                one_of(
                    "filter",
                    &[
                        string("old-format").deprecated_since("2.8.12"),
                        one_of(
                            "new-format",
                            &[
                                integer("client-id").token("ID").since("2.8.12").optional(),
                                one_of(
                                    "client-type",
                                    &[
                                        pure_token("normal", "normal"),
                                        pure_token("master", "master").since("3.2.0"),
                                        pure_token("slave", "slave"),
                                        pure_token("replica", "replica").since("5.0.0"),
                                        pure_token("pubsub", "pubsub"),
                                    ],
                                ).token("TYPE").since("2.8.12").optional(),
                                string("username").token("USER").optional(),
                                string("addr").token("ADDR").optional(),
                                string("laddr").token("LADDR").since("6.2.0").optional(),
                                one_of(
                                    "skipme",
                                    &[
                                        pure_token("yes", "YES"),
                                        pure_token("no", "NO"),
                                    ],
                                ).token("SKIPME").optional(),
                                integer("maxage").token("MAXAGE").since("7.4.0").optional(),
                            ],
                        ).multiple(),
                    ],
                ),
            ]),
    ),
    (
        "client|list",
        Docs::new("Lists open connections.")
            .since("2.4.0")
            .complexity("O(N) where N is the number of client connections")
            .history(&[
                ("2.8.12", "Added unique client `id` field."),
                ("5.0.0", "Added optional `TYPE` filter."),
                ("6.0.0", "Added `user` field."),
                ("6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."),
                ("7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."),
                ("7.0.3", "Added `ssub` field."),
            ])
            .args(&[
                one_of(
                    "client-type",
                    &[
                        pure_token("normal", "normal"),
                        pure_token("master", "master"),
                        pure_token("replica", "replica"),
                        pure_token("pubsub", "pubsub"),
                    ],
                ).token("TYPE").since("5.0.0").optional(),
                integer("client-id").token("ID").since("6.2.0").optional().multiple(),
            ]),
    ),
    (
        "client|setinfo",
        Docs::new("Sets information specific to the client or connection.")
            .since("7.2.0")
            .complexity("O(1)")
            .args(&[
                one_of(
                    "attr",
                    &[
                        string("libname").token("lib-name"),
                        string("libver").token("lib-ver"),
                    ],
                ),
            ]),
    ),
    (
        "client|setname",
        Docs::new("Sets the connection name.")
            .since("2.6.9")
            .complexity("O(1)")
            .args(&[
                string("connection-name"),
            ]),
    ),
    (
        "client|unblock",
        Docs::new("Unblocks a client blocked by a blocking command from a different connection.")
            .since("5.0.0")
            .complexity("O(log N) where N is the number of client connections")
            .args(&[
                integer("client-id"),
                one_of(
                    "unblock-type",
                    &[
                        pure_token("timeout", "TIMEOUT"),
                        pure_token("error", "ERROR"),
                    ],
                ).optional(),
            ]),
    ),
];
