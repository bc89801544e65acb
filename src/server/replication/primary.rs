//! A primary's side of a replica's link, once the replica asked PSYNC: a partial resync from
//! the backlog (+CONTINUE), or a full sync (+FULLRESYNC, then a snapshot of the data set as it
//! stood at an exact offset, then the stream from that offset on); then the stream, live, and
//! the replica's REPLCONF ACKs.
//!
//! The full sync streams a private keyspace that holds exactly the writes before the replica's
//! starting offset (see `cut`), never the live one, so no command waits for the network.

use super::{Behind, Follower};
use crate::cmd::{ClientInfo, ClientKind, ReplicaHandshake};
use crate::persist::snapshot::{self, Expired};
use crate::protocol::{Limits, RequestParser};
use crate::server::Shared;
use crate::store::{now_ms, Store};
use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Most bytes of the stream sent to a replica with one write.
const SEND_CHUNK: usize = 1024 * 1024;
/// Pieces of the snapshot in flight between the thread that writes it and the socket.
const PAYLOAD_PIECES: usize = 4;

/// Serves the replica on this connection until it goes, is killed, lags past what the stream
/// keeps, falls silent past `repl-timeout`, or the server stops.
pub(in crate::server) async fn serve<S>(
    shared: &Arc<Shared>,
    stream: &mut S,
    client: &Arc<ClientInfo>,
    handshake: ReplicaHandshake,
    input: Vec<u8>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let replication = &shared.replication;
    let id = client.id;
    let (replid, offset) = handshake.psync.clone().unwrap_or_default();
    client.set_kind(ClientKind::Replica);
    let follower = Follower {
        ip: handshake
            .announced_ip
            .clone()
            .unwrap_or_else(|| client.addr().ip().to_string()),
        port: handshake.listening_port,
        state: "wait_bgsave",
        acked: 0,
        last_ack_ms: now_ms(),
    };
    // PSYNC names the next byte it wants, counting from 1.
    let wanted = u64::try_from(offset.saturating_sub(1)).unwrap_or(0);
    let continues = replid != "?"
        && offset > 0
        && replication.continues(&replid, wanted)
        && replication.stream.add_reader(id, wanted).is_ok();
    let served = if continues {
        replication.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
        replication.add_follower(
            id,
            Follower {
                state: "online",
                acked: wanted,
                ..follower
            },
        );
        tracing::info!(
            client = id,
            offset = wanted,
            "replica continues (partial resync)"
        );
        let line = format!("+CONTINUE {}\r\n", replication.replid());
        match stream.write_all(line.as_bytes()).await {
            Ok(()) => feed(shared, stream, client, wanted, input).await,
            Err(error) => Err(error),
        }
    } else {
        if replid != "?" {
            replication.sync_partial_err.fetch_add(1, Ordering::Relaxed);
        }
        replication.sync_full.fetch_add(1, Ordering::Relaxed);
        replication.add_follower(id, follower);
        full_sync(shared, stream, client, input).await
    };
    replication.remove_follower(id, now_ms());
    if let Err(error) = &served {
        tracing::info!(client = id, %error, "replica link ended");
    }
    served
}

async fn full_sync<S>(
    shared: &Arc<Shared>,
    stream: &mut S,
    client: &Arc<ClientInfo>,
    input: Vec<u8>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let id = client.id;
    let cut = {
        let shared = shared.clone();
        tokio::task::spawn_blocking(move || cut(&shared, id))
            .await
            .map_err(io::Error::other)??
    };
    let (copy, offset, replid) = cut;
    tracing::info!(
        client = id,
        offset,
        "replica needs a full sync; sending a snapshot"
    );
    let replication = &shared.replication;
    stream
        .write_all(format!("+FULLRESYNC {replid} {offset}\r\n").as_bytes())
        .await?;
    replication.update_follower(id, |f| f.state = "send_bulk");
    let started = Instant::now();
    let sent = send_snapshot(shared, stream, client, copy).await?;
    tracing::info!(
        client = id,
        bytes = sent,
        seconds = started.elapsed().as_secs_f64(),
        "snapshot sent to replica"
    );
    replication.update_follower(id, |f| {
        f.state = "online";
        f.acked = offset;
        f.last_ack_ms = now_ms();
    });
    feed(shared, stream, client, offset, input).await
}

/// The data set at an exact point of the stream, with the replica's reader placed there.
/// Blocks. With the append-only file on, the cut is a compaction's: the log rotates with writes
/// held back for an instant, and the keyspace is rebuilt from the files while commands go on.
/// Without it, every command pauses while the live keyspace is copied in memory.
fn cut(shared: &Arc<Shared>, id: u64) -> io::Result<(Store, u64, String)> {
    let replication = &shared.replication;
    if !replication.stream.is_active() {
        // Nothing was recorded while no replica listened: from now on every write is, and
        // none is in flight while the switch happens.
        let everyone = shared.isolation.exclusive();
        replication.stream.activate();
        drop(everyone);
    }
    let started = Instant::now();
    if let Some(aof) = shared.aof.as_ref() {
        let (rebuilt, (offset, replid)) = shared
            .saver
            .compact_for_replica(shared, aof, || {
                // Every write appends to the log and the stream under this lock.
                let _order = shared
                    .stream_order
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                let ended = aof.rotate();
                let offset = replication.stream.add_reader_at_end(id);
                (ended, (offset, replication.replid()))
            })
            .map_err(|error| io::Error::other(format!("{error:?}")))?;
        tracing::info!(
            millis = started.elapsed().as_millis() as u64,
            "the data set was rebuilt from the snapshot and the log for a full sync"
        );
        return Ok((rebuilt, offset, replid));
    }
    let everyone = shared.isolation.exclusive();
    let copy = shared.store.deep_copy();
    let offset = replication.stream.add_reader_at_end(id);
    let replid = replication.replid();
    drop(everyone);
    tracing::info!(
        millis = started.elapsed().as_millis() as u64,
        "commands paused while the data set was copied for a full sync"
    );
    Ok((copy, offset, replid))
}

/// Sends the copy as a snapshot in Redis's diskless form: `$EOF:<40 bytes>\r\n`, the payload,
/// and the same 40 bytes, so that its length need not be known before it is written. Returns
/// the payload's size.
async fn send_snapshot<S>(
    shared: &Arc<Shared>,
    stream: &mut S,
    client: &Arc<ClientInfo>,
    copy: Store,
) -> io::Result<u64>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mark = super::random_id();
    stream
        .write_all(format!("$EOF:{mark}\r\n").as_bytes())
        .await?;
    let (pieces, mut received) = mpsc::channel::<Vec<u8>>(PAYLOAD_PIECES);
    let writer = tokio::task::spawn_blocking(move || {
        let out = PieceWriter {
            pieces,
            piece: Vec::with_capacity(SEND_CHUNK),
        };
        let written = snapshot::write_to(out, &copy, 0, Expired::Keep);
        // Freeing a large copy takes a while: here, off the runtime.
        drop(copy);
        written
    });
    loop {
        let piece = tokio::select! {
            piece = received.recv() => piece,
            _ = client.killed() => return Err(io::Error::other("killed during the full sync")),
            _ = shared.shutdown.requested() => return Err(io::Error::other("shutting down")),
        };
        match piece {
            Some(piece) => stream.write_all(&piece).await?,
            None => break,
        }
    }
    let (_, bytes) = writer.await.map_err(io::Error::other)??;
    stream.write_all(mark.as_bytes()).await?;
    Ok(bytes)
}

/// Hands the snapshot writer's output to the socket's task in pieces.
struct PieceWriter {
    pieces: mpsc::Sender<Vec<u8>>,
    piece: Vec<u8>,
}

impl Write for PieceWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.piece.extend_from_slice(data);
        if self.piece.len() >= SEND_CHUNK {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.piece.is_empty() {
            return Ok(());
        }
        let piece = std::mem::replace(&mut self.piece, Vec::with_capacity(SEND_CHUNK));
        self.pieces
            .blocking_send(piece)
            .map_err(|_| io::Error::other("the replica's link closed"))
    }
}

/// Sends the stream from `at` on as it grows, and reads the replica's acknowledgements.
async fn feed<S>(
    shared: &Arc<Shared>,
    stream: &mut S,
    client: &Arc<ClientInfo>,
    mut at: u64,
    mut input: Vec<u8>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let replication = &shared.replication;
    let id = client.id;
    let mut parser = RequestParser::new(Limits::default());
    let mut out = Vec::with_capacity(64 * 1024);
    let mut last_heard = Instant::now();
    loop {
        out.clear();
        if replication.stream.read(id, SEND_CHUNK, &mut out) == Err(Behind) {
            tracing::warn!(
                client = id,
                "dropping a replica that fell behind what the replication stream keeps"
            );
            return Ok(());
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            at += out.len() as u64;
            continue;
        }
        let timeout = Duration::from_secs(shared.config.settings().repl_timeout);
        let read = tokio::select! {
            _ = replication.stream.grown_past(at) => None,
            read = stream.read_buf(&mut input) => Some(read?),
            _ = client.killed() => return Ok(()),
            _ = shared.shutdown.requested() => return Ok(()),
            _ = tokio::time::sleep_until((last_heard + timeout).into()) => {
                tracing::warn!(client = id, "replica timed out (repl-timeout); dropping it");
                return Ok(());
            }
        };
        match read {
            None => {}
            Some(0) => return Ok(()),
            Some(_) => {
                last_heard = Instant::now();
                let consumed = read_acks(shared, id, &mut parser, &input)?;
                input.drain(..consumed);
            }
        }
    }
}

/// Applies the REPLCONF ACKs in `input`; returns the bytes they took.
fn read_acks(
    shared: &Shared,
    id: u64,
    parser: &mut RequestParser,
    input: &[u8],
) -> io::Result<usize> {
    let mut consumed = 0;
    loop {
        let request = parser
            .parse(&input[consumed..])
            .map_err(|error| io::Error::other(error.0))?;
        let Some(request) = request else {
            return Ok(consumed + parser.take_consumed());
        };
        let is_ack = request.len() >= 3
            && request.arg(0).eq_ignore_ascii_case(b"replconf")
            && request.arg(1).eq_ignore_ascii_case(b"ack");
        let acked = is_ack
            .then(|| crate::protocol::parse_i64(request.arg(2)))
            .flatten();
        if let Some(offset) = acked {
            shared
                .replication
                .acknowledged(id, offset.max(0) as u64, now_ms());
        }
        consumed += parser.take_consumed();
    }
}
