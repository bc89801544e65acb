//! Replication's commands: REPLICAOF (and SLAVEOF), ROLE and WAIT for operators and clients;
//! REPLCONF and PSYNC, which a replica sends its primary. PSYNC and WAIT hand what they ask to
//! the connection (`After`), which carries it out once the replies before them are ready (PSYNC
//! turns the connection into the replica's stream; WAIT waits without holding the batch's
//! locks).

use super::args::{is, parse_i64};
use super::errors::*;
use super::spec::{bits, block, integer, one_of, pure_token, string, CommandSpec, Group};
use super::{After, Ctx, Psync, Replicating, RoleView, WaitForReplicas};
use crate::protocol::Request;

/// REPLICAOF host port | NO ONE.
fn replicaof(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (host, port) = (request.arg(1), request.arg(2));
    if is(host, "no") && is(port, "one") {
        ctx.server.replicate(None);
        ctx.reply.ok();
        return Ok(());
    }
    let port = parse_i64(port)
        .and_then(|port| u16::try_from(port).ok())
        .filter(|&port| port > 0)
        .ok_or(NOT_INTEGER)?;
    let host = String::from_utf8_lossy(host).into_owned();
    match ctx.server.replicate(Some((host, port))) {
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

/// REPLCONF option value [option value ...]: what a replica says of itself before PSYNC.
/// `sieved <run id>` is sieved's own: a sieved primary accepts it unless the run ID is its own
/// (a replica pointed at itself), and any other server refuses it, so a replica learns early
/// that its primary cannot send what it expects.
fn replconf(ctx: &mut Ctx, request: Request) -> CmdResult {
    if request.len() % 2 == 0 {
        return Err(SYNTAX.into());
    }
    let mut handshake = ctx.session.replica_handshake.take().unwrap_or_default();
    let mut result: CmdResult = Ok(());
    for pair in request.args().skip(1).collect::<Vec<_>>().chunks(2) {
        let (option, value) = (pair[0], pair[1]);
        if is(option, "listening-port") {
            match parse_i64(value).and_then(|port| u16::try_from(port).ok()) {
                Some(port) => handshake.listening_port = port,
                None => {
                    result = Err(NOT_INTEGER.into());
                    break;
                }
            }
        } else if is(option, "ip-address") {
            handshake.announced_ip = Some(String::from_utf8_lossy(value).into_owned());
        } else if is(option, "sieved") {
            if value == ctx.server.run_id().as_bytes() {
                result = Err(REPLICATE_FROM_ITSELF.into());
                break;
            }
        } else if is(option, "capa") || is(option, "ack") || is(option, "getack") {
            // Capabilities sieved's stream always has (eof, psync2); ACKs outside a stream
            // are ignored, as Redis ignores them from a client that is no replica.
            if is(option, "ack") || is(option, "getack") {
                ctx.session.replica_handshake = Some(handshake);
                return Ok(());
            }
        } else {
            result = Err(unrecognized_replconf_option(option));
            break;
        }
    }
    ctx.session.replica_handshake = Some(handshake);
    result?;
    ctx.reply.ok();
    Ok(())
}

/// PSYNC replid offset: handed to the connection, with what REPLCONF said; the connection
/// replies (+FULLRESYNC or +CONTINUE) and streams.
fn psync(ctx: &mut Ctx, request: Request) -> CmdResult {
    if ctx.server.replica_link_down() {
        return Err(NOMASTERLINK.into());
    }
    let replid = String::from_utf8_lossy(request.arg(1)).into_owned();
    let offset = parse_i64(request.arg(2)).ok_or(NOT_INTEGER)?;
    let handshake = ctx.session.replica_handshake.take().unwrap_or_default();
    ctx.session.after = Some(After::BecomeReplicaStream(Box::new(Psync {
        replid,
        offset,
        handshake: *handshake,
    })));
    Ok(())
}

/// WAIT numreplicas timeout.
fn wait(ctx: &mut Ctx, request: Request) -> CmdResult {
    if matches!(ctx.server.role(), RoleView::Replica { .. }) {
        return Err(WAIT_ON_REPLICA.into());
    }
    let replicas = parse_i64(request.arg(1)).ok_or(NOT_INTEGER)?;
    let timeout_ms = parse_i64(request.arg(2)).ok_or(TIMEOUT_NOT_INTEGER)?;
    if timeout_ms < 0 {
        return Err(TIMEOUT_NEGATIVE.into());
    }
    let offset = ctx.session.streamed_up_to;
    let acked = ctx.server.acked_replicas(offset);
    // Inside EXEC nothing may block, as in Redis: the count so far.
    if ctx.session.in_exec || acked as i64 >= replicas {
        ctx.reply.int(acked as i64);
        return Ok(());
    }
    ctx.session.after = Some(After::Wait(WaitForReplicas {
        replicas: replicas.clamp(0, i64::from(u32::MAX)) as usize,
        timeout_ms: timeout_ms as u64,
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
