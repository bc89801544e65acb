//! A primary's side of a replica's link, once the replica asked PSYNC: a partial resync from
//! the backlog (+CONTINUE), or a full sync (+FULLRESYNC, then a snapshot of the data set as it
//! stood at an exact offset, then the stream from that offset on); then the stream, live, and
//! the replica's REPLCONF ACKs.
//!
//! The full sync streams the data set as it stood at the replica's starting offset (see `cut`):
//! a private keyspace rebuilt from the log, or the live one as a forked child sees it, never the
//! live one itself, so no command waits for the network.

#[cfg(target_os = "linux")]
use super::forked::{self, SnapshotChild};
use super::{Behind, Follower};
use crate::cmd::{ClientInfo, ClientKind, Psync};
#[cfg(not(target_os = "linux"))]
use crate::persist::snapshot::{self, Expired};
use crate::protocol::{Limits, RequestParser};
use crate::server::Shared;
use crate::store::{now_ms, Store};
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Most bytes of a full sync's snapshot sent to a replica with one write.
const SEND_CHUNK: usize = 1024 * 1024;
/// Most bytes of the stream sent to a replica with one write. Small: the buffer stays as large
/// as its largest write, and counts towards `maxmemory` (a megabyte per replica had made a
/// primary just under its limit evict every key once a lagging replica caught up).
const STREAM_CHUNK: usize = 64 * 1024;
/// Pieces of the snapshot in flight between the thread that writes it and the socket.
const PAYLOAD_PIECES: usize = 4;

/// Serves the replica on this connection until it goes, is killed, lags past what the stream
/// keeps, falls silent past `repl-timeout`, or the server stops.
pub(in crate::server) async fn serve<S>(
    shared: &Arc<Shared>,
    stream: &mut S,
    client: &Arc<ClientInfo>,
    psync: Psync,
    input: Vec<u8>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let replication = &shared.replication;
    let id = client.id;
    let Psync {
        replid,
        offset,
        handshake,
    } = psync;
    client.set_kind(ClientKind::Replica);
    let follower = Follower {
        ip: handshake
            .announced_ip
            .unwrap_or_else(|| client.addr().ip().to_string()),
        port: handshake.listening_port,
        state: "wait_bgsave",
        acked: 0,
        last_ack_ms: None,
        since_ms: now_ms(),
    };
    // PSYNC names the next byte it wants, counting from 1.
    let wanted = u64::try_from(offset.saturating_sub(1)).unwrap_or(0);
    let continues = replid != "?"
        && offset > 0
        && replication.continues(&replid, wanted)
        && replication.stream.add_reader(id, wanted).is_ok();
    let served = if continues {
        replication.sync_partial_ok.fetch_add(1, Ordering::Relaxed);
        // Counted for WAIT from its first ACK, which it sends at once: what it holds is what
        // its own log holds, which the ACK (not PSYNC's offset) answers for.
        replication.add_follower(
            id,
            Follower {
                state: "online",
                ..follower
            },
        );
        tracing::info!(
            client = id,
            offset = wanted,
            "replica continues (partial resync)"
        );
        let history = replication.replid();
        let line = format!("+CONTINUE {history}\r\n");
        match stream.write_all(line.as_bytes()).await {
            Ok(()) => feed(shared, stream, client, (&history, wanted), input).await,
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
    let (snapshot, offset, replid) = cut;
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
    let sent = send_snapshot(shared, stream, client, snapshot).await?;
    tracing::info!(
        client = id,
        bytes = sent,
        seconds = started.elapsed().as_secs_f64(),
        "snapshot sent to replica"
    );
    // Online, but counted by WAIT and min-replicas-to-write only from its first ACK: what was
    // sent may still be in flight, and the replica holds it only once it has loaded it.
    replication.update_follower(id, |f| f.state = "online");
    feed(shared, stream, client, (&replid, offset), input).await
}

/// What a full sync sends: the output of a child process forked at the cut (`forked.rs`), or
/// on other systems a copy of the keyspace.
enum Snapshot {
    #[cfg(not(target_os = "linux"))]
    Copied(Store),
    #[cfg(target_os = "linux")]
    Forked(SnapshotChild),
}

/// The data set at an exact point of the stream, with the replica's reader placed there. Blocks.
/// Every command pauses while the process forks (about a millisecond for a 1.2 GB filter), and
/// the child writes the keyspace as it stood then; on other systems than Linux they pause while
/// the keyspace is copied in memory. The pause also turns the stream on, if this is the first
/// replica: nothing was recorded while no replica listened.
fn cut(shared: &Arc<Shared>, id: u64) -> io::Result<(Snapshot, u64, String)> {
    let replication = &shared.replication;
    let started = Instant::now();
    // Every write takes effect and reaches the stream inside a batch, so none is half-way here.
    let everyone = shared.isolation.exclusive();
    replication.stream.activate();
    let snapshot = paused_snapshot(&shared.store);
    let offset = replication.stream.add_reader_at_end(id);
    let replid = replication.replid();
    drop(everyone);
    let snapshot = snapshot?;
    tracing::info!(
        micros = started.elapsed().as_micros() as u64,
        "commands paused while the data set was cut for a full sync"
    );
    Ok((snapshot, offset, replid))
}

/// The keyspace as it stands while every command is paused.
#[cfg(target_os = "linux")]
fn paused_snapshot(store: &Store) -> io::Result<Snapshot> {
    forked::fork_snapshot(store)
        .map(Snapshot::Forked)
        .map_err(|error| io::Error::other(format!("cannot fork for a full sync: {error}")))
}

#[cfg(not(target_os = "linux"))]
fn paused_snapshot(store: &Store) -> io::Result<Snapshot> {
    Ok(Snapshot::Copied(store.deep_copy()))
}

/// Sends the snapshot in Redis's diskless form: `$EOF:<40 bytes>\r\n`, the payload, and the
/// same 40 bytes, so that its length need not be known before it is written. Returns the
/// payload's size.
async fn send_snapshot<S>(
    shared: &Arc<Shared>,
    stream: &mut S,
    client: &Arc<ClientInfo>,
    snapshot: Snapshot,
) -> io::Result<u64>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mark = super::random_id();
    stream
        .write_all(format!("$EOF:{mark}\r\n").as_bytes())
        .await?;
    let (pieces, mut received) = mpsc::channel::<Vec<u8>>(PAYLOAD_PIECES);
    #[cfg(target_os = "linux")]
    let child = match &snapshot {
        Snapshot::Forked(child) => Some(child.handle()),
    };
    let writer = tokio::task::spawn_blocking(move || match snapshot {
        #[cfg(not(target_os = "linux"))]
        Snapshot::Copied(copy) => {
            let out = PieceWriter {
                pieces,
                piece: Vec::with_capacity(SEND_CHUNK),
            };
            let written = snapshot::write_to(out, &copy, 0, Expired::Keep, None);
            // Freeing a large copy takes a while: here, off the runtime.
            drop(copy);
            written.map(|(_, bytes)| bytes)
        }
        #[cfg(target_os = "linux")]
        Snapshot::Forked(child) => {
            child.read_all(SEND_CHUNK, |piece| pieces.blocking_send(piece).is_ok())
        }
    });
    // A child that stops producing (it cannot take a lock, say) is ended rather than waited for.
    let timeout = Duration::from_secs(shared.config.settings().repl_timeout);
    let ended = loop {
        let piece = tokio::select! {
            piece = received.recv() => piece,
            _ = client.killed() => break Err(io::Error::other("killed during the full sync")),
            _ = shared.shutdown.requested() => break Err(io::Error::other("shutting down")),
            _ = tokio::time::sleep(timeout) => {
                break Err(io::Error::other("the snapshot stalled for repl-timeout"))
            }
        };
        match piece {
            Some(piece) => {
                if let Err(error) = send(shared, stream, client, &piece).await {
                    break Err(error);
                }
            }
            None => break Ok(()),
        }
    };
    if let Err(error) = ended {
        #[cfg(target_os = "linux")]
        if let Some(child) = child {
            child.kill();
        }
        // The writer sees the channel closed and stops.
        drop(received);
        return Err(error);
    }
    let bytes = writer.await.map_err(io::Error::other)??;
    stream.write_all(mark.as_bytes()).await?;
    Ok(bytes)
}

/// Writes `bytes` to the replica, unless it is killed, the server stops, or it takes nothing
/// for `repl-timeout`: a replica that stops reading must not hold its task, and the stream it
/// pins, forever.
async fn send<S>(
    shared: &Shared,
    stream: &mut S,
    client: &ClientInfo,
    bytes: &[u8],
) -> io::Result<()>
where
    S: AsyncWrite + Unpin,
{
    let timeout = Duration::from_secs(shared.config.settings().repl_timeout);
    tokio::select! {
        written = stream.write_all(bytes) => written,
        _ = client.killed() => Err(io::Error::other("killed")),
        _ = shared.shutdown.requested() => Err(io::Error::other("shutting down")),
        _ = tokio::time::sleep(timeout) => {
            Err(io::Error::other("the replica took nothing for repl-timeout"))
        }
    }
}

/// Hands the snapshot writer's output to the socket's task in pieces.
#[cfg(not(target_os = "linux"))]
struct PieceWriter {
    pieces: mpsc::Sender<Vec<u8>>,
    piece: Vec<u8>,
}

#[cfg(not(target_os = "linux"))]
impl io::Write for PieceWriter {
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
    (history, mut at): (&str, u64),
    mut input: Vec<u8>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let replication = &shared.replication;
    let id = client.id;
    let mut parser = RequestParser::new(Limits::default());
    let mut out = Vec::with_capacity(STREAM_CHUNK);
    let mut last_heard = Instant::now();
    loop {
        out.clear();
        if replication.stream.read(id, STREAM_CHUNK, &mut out) == Err(Behind) {
            tracing::warn!(
                client = id,
                "dropping a replica that fell behind what the replication stream keeps"
            );
            return Ok(());
        }
        // This server took another ID (it continued under a promoted or restarted primary):
        // the replica gets the old history's bytes only, then reconnects to learn the new ID
        // and continues partially. Checked after the read: the ID changes before any byte of
        // the new history is appended.
        if let Some(end) = replication.history_end(history) {
            out.truncate(end.saturating_sub(at) as usize);
            if out.is_empty() {
                tracing::info!(
                    client = id,
                    offset = at,
                    "the history this replica follows ended; it reconnects to learn the new one"
                );
                return Ok(());
            }
        }
        if !out.is_empty() {
            #[cfg(debug_assertions)]
            crate::server::panics::test_panic("feed", &out);
            send(shared, stream, client, &out).await?;
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
