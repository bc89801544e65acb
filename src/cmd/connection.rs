//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT.

use super::args::{is, parse_i64, Cursor};
use super::errors::*;
use super::spec::{bits, block, integer, one_of, pure_token, string, CommandSpec, Docs, Group};
use super::{After, ClientFilter, ClientType, Ctx};
use crate::protocol::{Protocol, Request};

pub(super) fn ping(ctx: &mut Ctx, request: Request) -> CmdResult {
    if ctx.session.client.subscribed() && !ctx.reply.is_resp3() && request.len() <= 2 {
        // Shaped like a message, as Redis, so that a RESP2 subscriber can tell it apart.
        ctx.reply.array(2);
        ctx.reply.bulk(b"pong");
        ctx.reply.bulk(request.args().nth(1).unwrap_or_default());
        return Ok(());
    }
    match request.len() {
        1 => ctx.reply.simple("PONG"),
        2 => ctx.reply.bulk(request.arg(1)),
        _ => return Err(CmdError::arity("ping")),
    }
    Ok(())
}

pub(super) fn echo(ctx: &mut Ctx, request: Request) -> CmdResult {
    ctx.reply.bulk(request.arg(1));
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

pub(super) fn auth(ctx: &mut Ctx, request: Request) -> CmdResult {
    match request.len() {
        2 if !ctx.config().requires_password() => Err(AUTH_NOT_CONFIGURED.into()),
        2 => check_credentials(ctx, b"default", request.arg(1)),
        3 => check_credentials(ctx, request.arg(1), request.arg(2)),
        _ => Err(SYNTAX.into()),
    }?;
    ctx.reply.ok();
    Ok(())
}

fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

pub(super) fn hello(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut protocol = ctx.reply.protocol();
    let mut cursor = Cursor::new(request, 1);
    if let Some(version) = cursor.next() {
        protocol = match parse_i64(version).ok_or(PROTO_NOT_INTEGER)? {
            2 => Protocol::Resp2,
            3 => Protocol::Resp3,
            _ => return Err(NOPROTO.into()),
        };
    }
    let mut name = None;
    while let Some(option) = cursor.next() {
        let syntax = || hello_option_syntax(option);
        if is(option, "AUTH") && cursor.remaining() >= 2 {
            let (username, password) = (cursor.next().unwrap(), cursor.next().unwrap());
            check_credentials(ctx, username, password)?;
        } else if is(option, "SETNAME") && cursor.remaining() >= 1 {
            let value = cursor.next().unwrap();
            if !valid_client_name(value) {
                return Err(CLIENT_NAME_SPACES.into());
            }
            name = Some(value);
        } else {
            return Err(syntax());
        }
    }
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

pub(super) fn select(ctx: &mut Ctx, request: Request) -> CmdResult {
    let index = parse_i64(request.arg(1)).ok_or(NOT_INTEGER)?;
    if index < 0 || index as usize >= ctx.store.databases() {
        return Err(DB_INDEX.into());
    }
    ctx.session.db = index as usize;
    ctx.session.client.set_db(index as usize);
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

pub(super) fn client(ctx: &mut Ctx, request: Request) -> CmdResult {
    let sub = request.arg(1);
    let arity = |n: usize, name: &str| {
        if request.len() == n {
            Ok(())
        } else {
            Err(CmdError::arity(&format!("client|{name}")))
        }
    };
    if is(sub, "ID") {
        arity(2, "id")?;
        ctx.reply.int(ctx.session.client.id as i64);
    } else if is(sub, "SETNAME") {
        arity(3, "setname")?;
        if !valid_client_name(request.arg(2)) {
            return Err(CLIENT_NAME_SPACES.into());
        }
        ctx.session.client.set_name(request.arg(2));
        ctx.reply.ok();
    } else if is(sub, "GETNAME") {
        arity(2, "getname")?;
        match ctx.session.client.name() {
            Some(name) => ctx.reply.bulk(&name),
            None => ctx.reply.null(),
        }
    } else if is(sub, "SETINFO") {
        arity(4, "setinfo")?;
        let (attribute, value) = (request.arg(2), request.arg(3));
        if !valid_client_name(value) && !value.is_empty() {
            return Err(client_info_characters(attribute));
        }
        if is(attribute, "LIB-NAME") {
            ctx.session.client.set_lib_name(value);
        } else if is(attribute, "LIB-VER") {
            ctx.session.client.set_lib_version(value);
        } else {
            return Err(unrecognized_option(attribute));
        }
        ctx.reply.ok();
    } else if is(sub, "INFO") {
        arity(2, "info")?;
        let line = ctx.session.client.describe(ctx.now);
        ctx.reply.verbatim(&line);
    } else if is(sub, "LIST") {
        let mut filter = ClientFilter::default();
        let mut cursor = Cursor::new(request, 2);
        while let Some(option) = cursor.next() {
            if is(option, "TYPE") {
                filter.client_type = Some(client_type(cursor.next_or(SYNTAX)?)?);
            } else if is(option, "ID") && cursor.remaining() > 0 {
                let list: Option<Vec<u64>> = cursor
                    .rest()
                    .map(|id| parse_i64(id).map(|id| id.max(0) as u64))
                    .collect();
                filter.ids = Some(list.ok_or(INVALID_CLIENT_ID)?);
            } else {
                return Err(SYNTAX.into());
            }
        }
        let text = ctx.server.client_list(&filter, ctx.now);
        ctx.reply.verbatim(&text);
    } else if is(sub, "KILL") {
        client_kill(ctx, request)?;
    } else if is(sub, "UNBLOCK") {
        if request.len() < 3 {
            return Err(CmdError::arity("client|unblock"));
        }
        if request.len() > 4 {
            // As Redis words a subcommand whose own arity check fails.
            return Err(subcommand_arity(sub, "CLIENT"));
        }
        let error = match request.len() {
            4 if is(request.arg(3), "TIMEOUT") => false,
            4 if is(request.arg(3), "ERROR") => true,
            4 => return Err(UNBLOCK_REASON.into()),
            _ => false,
        };
        let id = parse_i64(request.arg(2)).ok_or(NOT_INTEGER)?;
        let unblocked = u64::try_from(id).is_ok_and(|id| ctx.server.unblock_client(id, error));
        ctx.reply.int(unblocked as i64);
    } else if is(sub, "HELP") {
        ctx.reply.array(CLIENT_HELP.len());
        for line in CLIENT_HELP {
            ctx.reply.simple(line);
        }
    } else {
        return Err(CmdError::unknown_subcommand(sub, "CLIENT"));
    }
    Ok(())
}

fn client_type(name: &[u8]) -> Result<ClientType, CmdError> {
    ClientType::from_name(name).ok_or_else(|| unknown_client_type(name))
}

/// CLIENT KILL in Redis's two forms. `CLIENT KILL ip:port` answers OK or an error, and may name
/// the caller itself. Filters (`ID`, `TYPE`, `ADDR`, `LADDR`, `USER`, `MAXAGE`, `SKIPME`), all
/// of which a client must pass, answer how many were killed and spare the caller unless
/// `SKIPME no`. A caller that kills itself gets its reply first, then its connection closes.
fn client_kill(ctx: &mut Ctx, request: Request) -> CmdResult {
    if request.len() < 3 {
        return Err(CmdError::arity("client|kill"));
    }
    let old_form = request.len() == 3;
    let mut filter = ClientFilter::default();
    let mut skip_me = !old_form;
    if old_form {
        filter.addr = Some(request.arg(2).to_vec());
    }
    let mut cursor = Cursor::new(request, if old_form { 3 } else { 2 });
    while let Some(option) = cursor.next() {
        let value = cursor.next_or(SYNTAX)?;
        if is(option, "ID") {
            let id = parse_i64(value)
                .filter(|&id| id > 0)
                .ok_or(CLIENT_ID_NOT_POSITIVE)?;
            filter.ids = Some(vec![id as u64]);
        } else if is(option, "TYPE") {
            filter.client_type = Some(client_type(value)?);
        } else if is(option, "ADDR") {
            filter.addr = Some(value.to_vec());
        } else if is(option, "LADDR") {
            filter.local_addr = Some(value.to_vec());
        } else if is(option, "USER") {
            // `default` is the only user, and every client is authenticated as it.
            if value != b"default" {
                return Err(no_such_user(value));
            }
        } else if is(option, "MAXAGE") {
            let max_age = parse_i64(value).ok_or(MAXAGE_NOT_INTEGER)?;
            if max_age <= 0 {
                return Err(MAXAGE_NOT_POSITIVE.into());
            }
            filter.min_age_secs = Some(max_age as u64);
        } else if is(option, "SKIPME") && (is(value, "yes") || is(value, "no")) {
            skip_me = is(value, "yes");
        } else {
            return Err(SYNTAX.into());
        }
    }
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
