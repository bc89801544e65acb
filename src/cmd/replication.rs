//! Replication's commands: REPLICAOF (and SLAVEOF), ROLE and WAIT for operators and clients;
//! REPLCONF and PSYNC, which a replica sends its primary. PSYNC and WAIT hand what they ask to
//! the connection (`After`), which carries it out once the replies before them are ready (PSYNC
//! turns the connection into the replica's stream; WAIT waits without holding the batch's
//! locks).

use super::args::{int_in, keyword, Args, UpToError};
use super::errors::*;
use super::spec::{bits, block, integer, one_of, pure_token, string, CommandSpec, Group};
use super::{After, Ctx, Psync, Replicating, RoleView, WaitForReplicas};
use crate::protocol::Request;

/// REPLICAOF host port | NO ONE: the primary to follow, or none.
fn parse_replicaof(request: Request) -> Result<Option<(String, u16)>, CmdError> {
    let mut args = Args::new(request, 1);
    let (host, port) = (args.required()?, args.required()?);
    if keyword(host, &[("no", ())]).is_some() && keyword(port, &[("one", ())]).is_some() {
        return Ok(None);
    }
    let port = int_in(port, 1..=u16::MAX, NOT_INTEGER)?;
    Ok(Some((String::from_utf8_lossy(host).into_owned(), port)))
}

fn replicaof(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Some(primary) = parse_replicaof(request)? else {
        ctx.server.replicate(None);
        ctx.reply.ok();
        return Ok(());
    };
    match ctx.server.replicate(Some(primary)) {
        Replicating::Started => ctx.reply.ok(),
        Replicating::Already => ctx.reply.simple("OK Already connected to specified master"),
    }
    Ok(())
}

/// ROLE: a primary's offset and replicas, or a replica's primary and link.
fn role(ctx: &mut Ctx, _request: Request) -> CmdResult {
    match ctx.server.role() {
        RoleView::Primary { offset, replicas } => {
            ctx.reply.array(3);
            ctx.reply.bulk(b"master");
            ctx.reply.int(offset as i64);
            ctx.reply.array(replicas.len());
            for (ip, port, acked) in replicas {
                ctx.reply.array(3);
                ctx.reply.bulk(ip.as_bytes());
                ctx.reply.bulk(port.to_string().as_bytes());
                ctx.reply.bulk(acked.to_string().as_bytes());
            }
        }
        RoleView::Replica {
            host,
            port,
            state,
            offset,
        } => {
            ctx.reply.array(5);
            ctx.reply.bulk(b"slave");
            ctx.reply.bulk(host.as_bytes());
            ctx.reply.int(i64::from(port));
            ctx.reply.bulk(state.as_bytes());
            ctx.reply.int(offset as i64);
        }
    }
    Ok(())
}

/// One REPLCONF option, read.
#[derive(Clone, Copy)]
enum Setting<'a> {
    ListeningPort(u16),
    AnnouncedIp(&'a [u8]),
    /// A sieved replica's run ID: refused if it is this server's own.
    Sieved(&'a [u8]),
    /// Capabilities sieved's stream always has (eof, psync2).
    Capability,
    /// An ACK outside a stream: ignored, as Redis ignores one from a client that is no replica;
    /// nothing after it is read, and nothing is answered.
    Ack,
}

#[derive(Clone, Copy)]
enum ReplconfOption {
    ListeningPort,
    IpAddress,
    Sieved,
    Capa,
    Ack,
}

/// REPLCONF option value [option value ...]: what a replica says of itself before PSYNC. Redis
/// takes each option as it reads it, so the options before a wrong one are kept.
fn parse_replconf(request: Request<'_>) -> Result<UpToError<Setting<'_>>, CmdError> {
    let mut args = Args::new(request, 1);
    if args.remaining() % 2 != 0 {
        return Err(SYNTAX.into());
    }
    Ok(UpToError::read(&mut args, replconf_setting, |setting| {
        matches!(setting, Setting::Ack)
    }))
}

fn replconf_setting<'a>(args: &mut Args<'a>) -> Result<Setting<'a>, CmdError> {
    const OPTIONS: &[(&str, ReplconfOption)] = &[
        ("listening-port", ReplconfOption::ListeningPort),
        ("ip-address", ReplconfOption::IpAddress),
        ("sieved", ReplconfOption::Sieved),
        ("capa", ReplconfOption::Capa),
        ("ack", ReplconfOption::Ack),
        ("getack", ReplconfOption::Ack),
    ];
    let (option, value) = (args.required()?, args.required()?);
    match keyword(option, OPTIONS) {
        Some(ReplconfOption::ListeningPort) => {
            int_in(value, 0..=u16::MAX, NOT_INTEGER).map(Setting::ListeningPort)
        }
        Some(ReplconfOption::IpAddress) => Ok(Setting::AnnouncedIp(value)),
        Some(ReplconfOption::Sieved) => Ok(Setting::Sieved(value)),
        Some(ReplconfOption::Capa) => Ok(Setting::Capability),
        Some(ReplconfOption::Ack) => Ok(Setting::Ack),
        None => Err(unrecognized_replconf_option(option)),
    }
}

/// `sieved <run id>` is sieved's own: a sieved primary accepts it unless the run ID is its own
/// (a replica pointed at itself), and any other server refuses it, so a replica learns early
/// that its primary cannot send what it expects.
fn replconf(ctx: &mut Ctx, request: Request) -> CmdResult {
    let settings = parse_replconf(request)?;
    let mut handshake = ctx.session.replica_handshake.take().unwrap_or_default();
    let mut result: CmdResult = Ok(());
    for setting in &settings.options {
        match *setting {
            Setting::ListeningPort(port) => handshake.listening_port = port,
            Setting::AnnouncedIp(ip) => {
                handshake.announced_ip = Some(String::from_utf8_lossy(ip).into_owned());
            }
            Setting::Sieved(run_id) if run_id == ctx.server.run_id().as_bytes() => {
                result = Err(REPLICATE_FROM_ITSELF.into());
                break;
            }
            Setting::Sieved(_) | Setting::Capability => {}
            Setting::Ack => {
                ctx.session.replica_handshake = Some(handshake);
                return Ok(());
            }
        }
    }
    ctx.session.replica_handshake = Some(handshake);
    result.and(settings.result())?;
    ctx.reply.ok();
    Ok(())
}

/// PSYNC replid offset.
fn parse_psync(request: Request) -> Result<(String, i64), CmdError> {
    let mut args = Args::new(request, 1);
    let replid = String::from_utf8_lossy(args.required()?).into_owned();
    Ok((replid, args.int(NOT_INTEGER)?))
}

/// PSYNC: handed to the connection, with what REPLCONF said; the connection replies
/// (+FULLRESYNC or +CONTINUE) and streams. A replica whose own link is down refuses it before
/// reading the request, as Redis.
fn psync(ctx: &mut Ctx, request: Request) -> CmdResult {
    if ctx.server.replica_link_down() {
        return Err(NOMASTERLINK.into());
    }
    let (replid, offset) = parse_psync(request)?;
    let handshake = ctx.session.replica_handshake.take().unwrap_or_default();
    ctx.session.after = Some(After::BecomeReplicaStream(Box::new(Psync {
        replid,
        offset,
        handshake: *handshake,
    })));
    Ok(())
}

/// WAIT numreplicas timeout: how many replicas, and for how many milliseconds.
fn parse_wait(request: Request) -> Result<(i64, u64), CmdError> {
    let mut args = Args::new(request, 1);
    let replicas = args.int(NOT_INTEGER)?;
    let timeout_ms = args.int(TIMEOUT_NOT_INTEGER)?;
    let timeout_ms = u64::try_from(timeout_ms).map_err(|_| TIMEOUT_NEGATIVE)?;
    Ok((replicas, timeout_ms))
}

/// WAIT, which a replica refuses before reading the request, as Redis.
fn wait(ctx: &mut Ctx, request: Request) -> CmdResult {
    if matches!(ctx.server.role(), RoleView::Replica { .. }) {
        return Err(WAIT_ON_REPLICA.into());
    }
    let (replicas, timeout_ms) = parse_wait(request)?;
    let offset = ctx.session.streamed_up_to;
    let acked = ctx.server.acked_replicas(offset);
    // Inside EXEC nothing may block, as in Redis: the count so far.
    if ctx.session.in_exec || acked as i64 >= replicas {
        ctx.reply.int(acked as i64);
        return Ok(());
    }
    ctx.session.after = Some(After::Wait(WaitForReplicas {
        replicas: replicas.clamp(0, i64::from(u32::MAX)) as usize,
        timeout_ms,
        offset,
    }));
    Ok(())
}

const REPLICAOF_ARGS: &[super::spec::Arg] = &[one_of(
    "args",
    &[
        block("host-port", &[string("host"), integer("port")]),
        block(
            "no-one",
            &[pure_token("no", "NO"), pure_token("one", "ONE")],
        ),
    ],
)];

pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "replicaof",
        3,
        Group::Server,
        "Configures a server as replica of another, or promotes it to a master.",
        replicaof,
    )
    .flags(bits![Flags: ADMIN, NOSCRIPT, STALE, NO_ASYNC_LOADING])
    .since("5.0.0")
    .complexity("O(1)")
    .args(REPLICAOF_ARGS),
    CommandSpec::new(
        "slaveof",
        3,
        Group::Server,
        "Sets a Redis server as a replica of another, or promotes it to being a master.",
        replicaof,
    )
    .flags(bits![Flags: ADMIN, NOSCRIPT, STALE, NO_ASYNC_LOADING])
    .since("1.0.0")
    .complexity("O(1)")
    .deprecated("5.0.0", "`REPLICAOF`")
    .args(REPLICAOF_ARGS),
    CommandSpec::new(
        "role",
        1,
        Group::Server,
        "Returns the replication role.",
        role,
    )
    .flags(bits![Flags: NOSCRIPT, LOADING, STALE, FAST])
    .acl(bits![Acl: ADMIN, DANGEROUS])
    .since("2.8.12")
    .complexity("O(1)"),
    CommandSpec::new(
        "replconf",
        -1,
        Group::Server,
        "An internal command for configuring the replication stream.",
        replconf,
    )
    .flags(bits![Flags: ADMIN, NOSCRIPT, LOADING, STALE, ALLOW_BUSY])
    .since("3.0.0")
    .complexity("O(1)")
    .doc_flags(bits![DocFlags: SYSCMD]),
    CommandSpec::new(
        "psync",
        -3,
        Group::Server,
        "An internal command used in replication.",
        psync,
    )
    .flags(bits![Flags: ADMIN, NOSCRIPT, NO_ASYNC_LOADING, NO_MULTI])
    .since("2.8.0")
    .args(&[string("replicationid"), integer("offset")]),
    CommandSpec::new(
        "wait",
        3,
        Group::Generic,
        "Blocks until the asynchronous replication of all preceding write commands sent by \
         the connection is completed.",
        wait,
    )
    .flags(bits![Flags: NOSCRIPT])
    .acl(bits![Acl: CONNECTION])
    .since("3.0.0")
    .complexity("O(1)")
    .args(&[integer("numreplicas"), integer("timeout")]),
];
