//! One client connection: read what has arrived, parse and execute every complete request in it,
//! and send all their replies with one write. Nothing here holds a lock across an await.

use super::{ClientInfo, Shared, Stats};
use crate::cmd::{self, Ctx, Session};
use crate::protocol::{Limits, Protocol, Reply, Request, RequestParser};
use crate::store::now_ms;
use bytes::{Buf, BytesMut};
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Room made before each read; enough for a deep pipeline of small requests.
const READ_CHUNK: usize = 16 * 1024;
/// Most that is reserved ahead for a large bulk string the client has announced: the buffer then
/// grows with what actually arrives, so an announced size costs nothing until it is sent.
const MAX_READ_AHEAD: usize = 1024 * 1024;
/// Buffers that grew past this for one large request or reply are released once it is done.
const KEEP_BUFFER: usize = 256 * 1024;
/// Most bytes one client may have buffered for an unfinished request, like Redis's
/// client-query-buffer-limit.
const MAX_QUERY_BUFFER: usize = 1024 * 1024 * 1024;
/// Replies are written once this much is pending, before the rest of a pipeline executes, so a
/// pipeline of large replies (SCANDUMP chunks, say) never piles up in memory: a client that does
/// not read holds the server to this much.
const MAX_PENDING_REPLY: usize = 16 * 1024 * 1024;

pub async fn serve(
    shared: &Arc<Shared>,
    mut stream: TcpStream,
    client: Arc<ClientInfo>,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let settings = shared.config.settings();
    let mut parser = RequestParser::new(Limits {
        max_bulk_len: settings.proto_max_bulk_len.min(usize::MAX as u64) as usize,
        ..Limits::default()
    });
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut reply = Reply::new(Protocol::Resp2);
    let mut session = Session::new(client, !shared.config.requires_password());
    // Requests already read but not yet run, left by a batch that stopped to write its replies.
    let mut unfinished = false;
    // The append-only file position this connection's replies were last known durable to.
    let mut durable_seen = 0;
    loop {
        if !unfinished {
            let room = READ_CHUNK.max(parser.bytes_wanted().min(MAX_READ_AHEAD));
            if input.capacity() - input.len() < room / 2 {
                input.reserve(room);
            }
            let idle_limit = shared.config.settings().timeout_secs;
            let idle = async {
                match idle_limit {
                    0 => std::future::pending().await,
                    secs => tokio::time::sleep(Duration::from_secs(secs)).await,
                }
            };
            let read = tokio::select! {
                read = stream.read_buf(&mut input) => read?,
                _ = shared.shutdown.requested() => return Ok(()),
                _ = idle => {
                    tracing::debug!(client = session.client.id, "idle timeout; closing");
                    return Ok(());
                }
            };
            if read == 0 {
                return Ok(());
            }
            Stats::add(&shared.stats.net_input_bytes, read as u64);
        }

        let (commands, failure) =
            execute_all(shared, &mut parser, &mut input, &mut session, &mut reply);
        unfinished = failure.is_none() && !session.close && reply.len() >= MAX_PENDING_REPLY;
        Stats::add(&shared.stats.commands_processed, commands);
        session.tally.flush(&shared.commands);
        shared
            .saver
            .add_changes(std::mem::take(&mut session.writes));
        if input.len() > MAX_QUERY_BUFFER && failure.is_none() {
            reply.error("ERR Protocol error: query buffer limit reached");
        }
        if let Some(aof) = shared.aof.as_ref() {
            // With appendfsync always, no write is acknowledged before it is on disk.
            if session.logged_up_to > durable_seen {
                aof.wait_durable(session.logged_up_to).await;
                durable_seen = session.logged_up_to;
            }
        }
        if !reply.is_empty() {
            stream.write_all(reply.bytes()).await?;
            Stats::add(&shared.stats.net_output_bytes, reply.len() as u64);
            reply.clear();
            reply.shrink(KEEP_BUFFER);
        }
        if let Some(error) = failure {
            tracing::debug!(client = session.client.id, %error, "protocol error; closing");
            return Ok(());
        }
        if session.close || input.len() > MAX_QUERY_BUFFER {
            return Ok(());
        }
        if input.is_empty() && input.capacity() > KEEP_BUFFER {
            input = BytesMut::with_capacity(READ_CHUNK);
        }
    }
}

/// Executes every complete request in `input`, appending replies; returns how many ran and the
/// protocol error that ended the batch, if one did (its reply is already appended).
///
/// Each command is timed from the end of the one before (from the start of the batch for the
/// first), so the clock is read once per command; the time includes framing the request, which
/// is small next to running it.
fn execute_all(
    shared: &Arc<Shared>,
    parser: &mut RequestParser,
    input: &mut BytesMut,
    session: &mut Session,
    reply: &mut Reply,
) -> (u64, Option<String>) {
    let now = now_ms();
    let mut commands = 0;
    // Held for the whole batch, so that a transaction elsewhere never interleaves with it.
    let mut batch = Some(shared.isolation.shared());
    let mut started = Instant::now();
    loop {
        let parsed = parser.parse(input);
        let more = match parsed {
            Ok(Some(request)) => {
                let exclusive = cmd::is_exec(session, &request);
                let everyone = exclusive.then(|| {
                    batch = None;
                    shared.isolation.exclusive()
                });
                let mut ctx = Ctx {
                    shared,
                    store: &shared.store,
                    session: &mut *session,
                    reply: &mut *reply,
                    now,
                };
                let outcome = cmd::execute(&mut ctx, request);
                if exclusive {
                    drop(everyone);
                    batch = Some(shared.isolation.shared());
                }
                let finished = Instant::now();
                let micros = finished.duration_since(started).as_micros() as u64;
                started = finished;
                session.tally.record(outcome, micros);
                let threshold = shared.config.slowlog_threshold_us();
                if threshold >= 0 && micros >= threshold as u64 {
                    log_slow(shared, session, request, micros);
                }
                commands += 1;
                true
            }
            Ok(None) => false,
            Err(error) => {
                let message = error.to_string();
                reply.error(&message);
                return (commands, Some(message));
            }
        };
        input.advance(parser.take_consumed());
        if !more || session.close || reply.len() >= MAX_PENDING_REPLY {
            return (commands, None);
        }
    }
}

fn log_slow(shared: &Shared, session: &Session, request: Request, micros: u64) {
    let client = &session.client;
    let name = client.name().unwrap_or_default();
    shared.slowlog.push(
        request,
        micros,
        now_ms() / 1000,
        (client.addr().to_string(), name),
        shared.config.settings().slowlog_max_len,
    );
}
