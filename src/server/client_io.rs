//! One client connection: read what has arrived, parse and execute every complete request in it,
//! send all their replies with one write, and do what a command handed the connection
//! (`cmd::After`: close, SHUTDOWN's answer, WAIT, a blocked client's wait, a replica's stream).
//! The same loop serves plain TCP and TLS streams. Nothing here holds a lock across an await.

use super::batch::{execute_all, MAX_PENDING_REPLY};
use super::blocking::{self, Ended, Parked};
use super::pubsub::{Inbox, INBOX_LIMIT};
use super::query_buffer::{OverCeiling, QueryBuffer};
use super::{replication, Shared};
use crate::cmd::{self, errors, After, BlockOn, ClientInfo, Session, WaitForReplicas};
use crate::config::Config;
use crate::observe::{Stats, Tally};
use crate::protocol::{Limits, Protocol, Reply, RequestParser};
use crate::store::now_ms;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Room made before each read; enough for a deep pipeline of small requests.
const READ_CHUNK: usize = 16 * 1024;
/// Most that is reserved ahead for a large bulk string the client has announced: the buffer then
/// grows with what actually arrives, so an announced size costs nothing until it is sent.
const MAX_READ_AHEAD: usize = 1024 * 1024;
/// Reply buffers that grew past this for one large reply are released once it is sent.
const KEEP_BUFFER: usize = 256 * 1024;

/// How long a closing connection may take to deliver its last bytes (TLS's close_notify too).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Serves the client until it leaves, breaks the protocol, idles past `timeout`, or the server
/// stops; then closes the stream in an orderly way, so that a TLS client sees the end as one.
pub(super) async fn serve<S>(
    shared: &Arc<Shared>,
    mut stream: S,
    client: Arc<ClientInfo>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    serve_until_closed(shared, &mut stream, client).await?;
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, stream.shutdown()).await;
    Ok(())
}

/// Resolves once the connection has been waiting for the `timeout` setting's seconds since
/// `waiting_since`, which the connection moves each time it starts to wait; never while
/// `timeout` is 0. Follows CONFIG SET timeout, so that a new limit reaches clients already
/// waiting, as Redis's periodic check does.
///
/// A connection keeps one of these for its whole life rather than one per wait: arming a timer
/// and joining the settings' change notice on every read cost each round trip a timer-wheel
/// insertion and a lock that every connection shares. A timer armed for an earlier wait that
/// fires finds the wait moved on and is armed again.
async fn idle(config: &Config, waiting_since: &WaitStart) {
    loop {
        let changed = config.changed();
        let limit = match config.timeout_secs() {
            0 => None,
            secs => Some(Duration::from_secs(secs)),
        };
        let expired = async {
            match limit {
                Some(limit) => {
                    tokio::time::sleep_until((waiting_since.get() + limit).into()).await;
                    waiting_since.get().elapsed() >= limit
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            expired = expired => if expired {
                return;
            },
            _ = changed => {}
        }
    }
}

/// `idle` from the moment it is first polled.
async fn idle_from_now(config: &Config) {
    idle(config, &WaitStart::now()).await
}

/// When a connection last started to wait, as an offset from a fixed instant: an atomic, for the
/// connection's future to be `Send`, though only its own task reads and writes it.
struct WaitStart {
    origin: Instant,
    nanos: AtomicU64,
}

impl WaitStart {
    fn now() -> WaitStart {
        WaitStart {
            origin: Instant::now(),
            nanos: AtomicU64::new(0),
        }
    }

    fn set_now(&self) {
        let nanos = self.origin.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        self.nanos.store(nanos, Ordering::Relaxed);
    }

    fn get(&self) -> Instant {
        self.origin + Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

/// Lets the other connections whose input is ready run their requests before this one writes
/// its replies, as Redis writes every client's replies together after its event loop has read
/// and run what each sent. Writing right after running woke a client (the load generator, or an
/// application serving several connections from one thread) once per reply; once it is awake,
/// the replies that follow reach it without another wake-up. That wake-up was the largest
/// single cost of a pipelined BF.ADD (15% of the server's CPU, in the kernel's `sendto`). Taken
/// before the append-only file's write as well, it lets the first connection back write the
/// records of all of them at once.
///
/// Waking its own task puts the connection at the back of its worker's run queue, behind the
/// connections the last poll for readiness found, without another such poll (which
/// `tokio::task::yield_now` waits for, and which cost a system call per round trip).
#[derive(Default)]
struct WriteLast {
    yielded: bool,
}

impl Future for WriteLast {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Writes all of `bytes` and flushes them. Like Redis's `timeout`, which counts a client that
/// accepts none of its replies as idle, gives up (returning false) once the client has taken
/// nothing for that long, unless it is a subscriber, which Redis never times out. Gives up too
/// when the client's Pub/Sub inbox overflows, as it is then to be closed.
async fn send<S>(
    stream: &mut S,
    mut bytes: &[u8],
    config: &Config,
    inbox: &Inbox,
    subscriber: bool,
) -> io::Result<bool>
where
    S: AsyncWrite + Unpin,
{
    loop {
        let progress = async {
            if bytes.is_empty() {
                stream.flush().await.map(|()| 0)
            } else {
                stream.write(bytes).await
            }
        };
        // Biased: a write that can go ahead at once never arms the idle timer.
        let written = tokio::select! {
            biased;
            written = progress => written?,
            _ = idle_from_now(config), if !subscriber => return Ok(false),
            _ = inbox.cut_off() => return Ok(false),
        };
        if bytes.is_empty() {
            return Ok(true);
        }
        if written == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        bytes = &bytes[written..];
    }
}

/// Serves the client: read what has arrived, execute it, flush (the batch's counts, and the
/// log's durability its replies wait for), then write the replies and act on what the last
/// command handed over (`cmd::After`), one case each. Returns when the connection is to close.
async fn serve_until_closed<S>(
    shared: &Arc<Shared>,
    stream: &mut S,
    client: Arc<ClientInfo>,
) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut conn = Connection::new(shared, Arc::clone(&client));
    let membership = shared.pubsub.join(client.id);
    let inbox = &*membership.inbox;
    // What ends or interrupts a wait for input, made once for the connection (see `idle`):
    // once registered, each is only checked again on later polls.
    let shutdown = shared.shutdown.requested();
    let killed = client.killed();
    let waiting_since = WaitStart::now();
    let idled = idle(&shared.config, &waiting_since);
    tokio::pin!(shutdown, killed, idled);
    let mut arrived = Box::pin(inbox.arrived());
    loop {
        if inbox.overflowed() {
            warn_overflow(&client);
            return Ok(());
        }
        // Read each time round, so that CONFIG SET reaches clients already connected.
        let (client_limit, ceiling) = input_limits(&shared.config);
        if conn.unfinished {
            conn.execute();
        } else {
            if !conn.make_room(client_limit, ceiling) {
                return Ok(());
            }
            // Biased: shutdown is noticed even by a client that never stops sending, and data
            // that is there already is read without arming the idle timer. As in Redis, a
            // subscriber is never idle: it waits for messages.
            // Bytes read, or None when messages arrived instead.
            waiting_since.set_now();
            let read = tokio::select! {
                biased;
                _ = &mut shutdown => return Ok(()),
                _ = &mut killed => return Ok(()),
                read = stream.read_buf(conn.input.for_reading()) => match read {
                    Ok(read) => Some(read),
                    // A TLS client that hangs up without close_notify, as most do: requests
                    // carry their own lengths, so nothing can have been cut short unnoticed.
                    Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => Some(0),
                    Err(error) => return Err(error),
                },
                _ = &mut arrived => {
                    arrived.set(inbox.arrived());
                    None
                }
                _ = &mut idled, if !client.subscribed() => {
                    tracing::debug!(client = client.id, "idle timeout; closing");
                    return Ok(());
                }
            };
            match read {
                Some(0) => return Ok(()),
                Some(read) => {
                    Stats::add(&shared.stats.net_input_bytes, read as u64);
                    conn.execute();
                }
                // Only Pub/Sub messages to send.
                None => {}
            }
        }
        conn.flush().await;
        let goes_on = match conn.session.after.take() {
            None => conn.write_replies(stream, inbox).await?,
            Some(After::Close) => {
                conn.write_replies(stream, inbox).await?;
                false
            }
            Some(After::Wait(wait)) => conn.wait_for_replicas(stream, inbox, wait).await?,
            Some(After::Shutdown(number)) => conn.shutdown(stream, inbox, number).await?,
            Some(After::Block(block)) => {
                match conn.park(stream, inbox, *block).await? {
                    Some(back) => conn = back,
                    None => return Ok(()),
                }
                // Its reply goes out with those of the requests that were sent after it.
                continue;
            }
            Some(After::BecomeReplicaStream(psync)) => {
                if !conn.write_replies(stream, inbox).await? {
                    return Ok(());
                }
                // From here on the connection carries the replication stream.
                let input = conn.input.pending().to_vec();
                drop(arrived);
                drop(membership);
                return replication::serve_replica(shared, stream, &client, *psync, input).await;
            }
        };
        if !goes_on || client.is_killed() || conn.over_limit(client_limit) {
            return Ok(());
        }
    }
}

/// One connection's state from batch to batch: what it read and has not run yet, its session,
/// the replies it has not written, and the counts it has not handed on.
struct Connection<'a> {
    shared: &'a Arc<Shared>,
    parser: RequestParser,
    input: QueryBuffer<'a>,
    session: Session,
    reply: Reply,
    tally: Tally,
    /// Requests already read but not yet run, left by a batch that stopped early: to write its
    /// replies, or to act on its `after`.
    unfinished: bool,
    /// The append-only file position this connection's replies were last known durable to.
    durable_seen: u64,
}

impl<'a> Connection<'a> {
    fn new(shared: &'a Arc<Shared>, client: Arc<ClientInfo>) -> Connection<'a> {
        let settings = shared.config.settings();
        Connection {
            shared,
            parser: RequestParser::new(Limits {
                max_bulk_len: settings.proto_max_bulk_len.min(usize::MAX as u64) as usize,
                ..Limits::default()
            }),
            input: QueryBuffer::new(READ_CHUNK, &shared.stats.query_buffers),
            session: Session::new(client, !shared.config.requires_password()),
            reply: Reply::new(Protocol::Resp2),
            tally: Tally::default(),
            unfinished: false,
            durable_seen: 0,
        }
    }

    /// Makes room to read into; false when the connection is to close, as the room would take
    /// every client's buffers together past `max-query-buffers-memory`.
    fn make_room(&mut self, client_limit: usize, ceiling: u64) -> bool {
        let room = READ_CHUNK.max(self.parser.bytes_wanted().min(MAX_READ_AHEAD));
        let Err(OverCeiling(held)) = self.input.make_room(room, client_limit, ceiling) else {
            return true;
        };
        tracing::warn!(
            client = self.session.client.id,
            addr = %self.session.client.addr(),
            pending = self.input.len(),
            held,
            ceiling,
            "closing client: its request would take the request buffers of all clients \
             past max-query-buffers-memory"
        );
        false
    }

    /// Whether what the client sent and is not run yet went past `client-query-buffer-limit`:
    /// as Redis does, the connection then closes with a warning in the log, and no reply.
    fn over_limit(&self, client_limit: usize) -> bool {
        let pending = self.input.len();
        if pending <= client_limit {
            return false;
        }
        let client = &self.session.client;
        tracing::warn!(
            client = client.id,
            addr = %client.addr(),
            pending,
            limit = client_limit,
            "closing client that reached client-query-buffer-limit"
        );
        true
    }

    /// Runs the complete requests read so far (see `execute_all`), up to one that hands the
    /// connection something to do (`Session::after`) or until the replies grow too large.
    fn execute(&mut self) {
        let (commands, consumed) = execute_all(
            self.shared,
            &mut self.parser,
            self.input.pending(),
            &mut self.session,
            &mut self.reply,
            &mut self.tally,
        );
        // The looks' hashes name items by their place in the input, which the next read
        // changes: none outlives its batch (nor reaches a command run while parked).
        self.session.hashed_ahead.clear();
        self.input.consume(consumed);
        self.unfinished = self.reply.len() >= MAX_PENDING_REPLY;
        Stats::add(&self.shared.stats.commands_processed, commands);
    }

    /// Hands the batch's counts to the server, and waits for what must come before its replies
    /// go out: the other connections' batches (`WriteLast`), then the log's durability.
    async fn flush(&mut self) {
        let shared = self.shared;
        self.tally.flush(&shared.commands);
        shared
            .saver
            .add_changes(std::mem::take(&mut self.session.writes));
        let logged_up_to = self.session.logged_up_to;
        // Before the log's write too: whoever writes the log first, once the others have run,
        // writes everyone's records in one `write`.
        if !self.reply.is_empty() || logged_up_to > self.durable_seen {
            WriteLast::default().await;
        }
        if let Some(aof) = shared.aof.as_ref() {
            // With appendfsync always, no write is acknowledged before it is on disk.
            if logged_up_to > self.durable_seen {
                aof.wait_durable(logged_up_to).await;
                self.durable_seen = logged_up_to;
            }
        }
    }

    /// Writes the replies so far, with the Pub/Sub messages that arrived meanwhile; false when
    /// the connection is to close: the client takes none of them, or its inbox overflowed.
    async fn write_replies<S>(&mut self, stream: &mut S, inbox: &Inbox) -> io::Result<bool>
    where
        S: AsyncWrite + Unpin,
    {
        inbox.drain_into(&mut self.reply);
        if self.reply.is_empty() {
            return Ok(true);
        }
        let (client, config) = (&self.session.client, &self.shared.config);
        let subscriber = client.subscribed();
        if !send(stream, self.reply.bytes(), config, inbox, subscriber).await? {
            if inbox.overflowed() {
                warn_overflow(client);
            } else {
                tracing::debug!(client = client.id, "takes no replies; closing");
            }
            return Ok(false);
        }
        Stats::add(&self.shared.stats.net_output_bytes, self.reply.len() as u64);
        self.reply.clear();
        self.reply.shrink(KEEP_BUFFER);
        Ok(true)
    }

    /// WAIT: waits for the replicas (the replies before it wait too), then replies with how
    /// many acknowledged; goes on with whatever the client sent after it.
    async fn wait_for_replicas<S>(
        &mut self,
        stream: &mut S,
        inbox: &Inbox,
        wait: WaitForReplicas,
    ) -> io::Result<bool>
    where
        S: AsyncWrite + Unpin,
    {
        let acked = wait_for_acks(self.shared, &self.session, wait).await;
        self.reply.int(acked as i64);
        self.unfinished = true;
        self.write_replies(stream, inbox).await
    }

    /// SHUTDOWN: waits for the server's answer (the replies before it wait too). The server
    /// stops: the replies go out and the connection closes, false. Refused (the exit snapshot
    /// failed): Redis's error follows them, and the connection goes on with whatever the client
    /// sent after SHUTDOWN.
    async fn shutdown<S>(&mut self, stream: &mut S, inbox: &Inbox, number: u64) -> io::Result<bool>
    where
        S: AsyncWrite + Unpin,
    {
        let stops = self.shared.shutdown.answer(number).await;
        if !stops {
            self.reply.error(errors::SHUTDOWN_FAILED);
            self.unfinished = true;
        }
        Ok(self.write_replies(stream, inbox).await? && !stops)
    }

    /// Parks the client on the keys its blocking command named (`blocking`), once the replies
    /// before it are written, until its wait ends. The connection comes back with its session
    /// and the command's reply, to go out with those of the requests sent after it; None when
    /// it is to close: the client left or was killed, the server stops, or the wait ended with
    /// the connection (`Ended::Disconnected`, whose error is written first).
    async fn park<S>(
        mut self,
        stream: &mut S,
        inbox: &Inbox,
        block: BlockOn,
    ) -> io::Result<Option<Connection<'a>>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        if !self.write_replies(stream, inbox).await? {
            return Ok(None);
        }
        let command = block
            .request
            .iter()
            .next()
            .and_then(|(_, request)| cmd::lookup(request.arg(0)));
        let Connection { session, reply, .. } = self;
        let parked = stay_parked(self.shared, stream, &mut self.input, session, reply, block);
        let Some(Parked {
            session,
            reply,
            ended,
        }) = parked.await?
        else {
            return Ok(None);
        };
        // A served command was counted by whoever ran it.
        if let (Some(index), Some(call)) = (command, ended.call()) {
            self.tally.record(index, call, 0);
        }
        let mut back = Connection {
            session,
            reply,
            unfinished: true,
            ..self
        };
        match ended {
            Ended::Withdrawn => Ok(None),
            Ended::Disconnected(_) => {
                back.write_replies(stream, inbox).await?;
                Ok(None)
            }
            _ => Ok(Some(back)),
        }
    }
}

/// Waits while the client is parked (see `blocking`), until its wait ends: served, timed out or
/// unblocked. Meanwhile the client's socket is read only to notice it leave (what it sends is
/// kept for later, as Redis does). None when the connection is to close: the client left or was
/// killed, or the server stops.
async fn stay_parked<S>(
    shared: &Arc<Shared>,
    stream: &mut S,
    input: &mut QueryBuffer<'_>,
    session: Session,
    reply: Reply,
    block: BlockOn,
) -> io::Result<Option<Parked>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let client = session.client.clone();
    let deadline = block
        .timeout
        .map(|timeout| tokio::time::Instant::now() + timeout);
    let mut done = shared.blocking.park(&shared.store, session, reply, block);
    let withdraw_on_drop = WithdrawOnDrop {
        shared,
        id: client.id,
    };
    {
        // A write may have come between the command's look at its keys and now.
        let _batch = shared.isolation.shared();
        blocking::serve_ready(shared);
    }
    let timed_out = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(timed_out);
    loop {
        // A command that waits for time as well as for writes (a frontier's leases) runs again
        // at the time it named, in its place among its keys' waiters.
        let wake_at = shared.blocking.wake_at_ms(client.id);
        let woken = async {
            match wake_at {
                Some(at) => {
                    // At least a millisecond, so that a command that names the present again
                    // cannot spin.
                    let wait = at.saturating_sub(now_ms()).max(1);
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
                None => std::future::pending().await,
            }
        };
        let (client_limit, ceiling) = input_limits(&shared.config);
        let mut closing = false;
        if input.make_room(READ_CHUNK, client_limit, ceiling).is_err() {
            tracing::warn!(
                client = client.id,
                "closing blocked client: its input would go past max-query-buffers-memory"
            );
            closing = true;
        } else {
            tokio::select! {
                biased;
                parked = &mut done => return Ok(parked.ok()),
                _ = woken => {
                    shared.blocking.signal_own_keys(&shared.store, client.id);
                    let _batch = shared.isolation.shared();
                    blocking::serve_ready(shared);
                    continue;
                }
                _ = &mut timed_out => {
                    let ended = withdraw_on_drop.withdraw(Ended::TimedOut);
                    // None: its command runs now, and the outcome comes through `done`.
                    return Ok(match ended {
                        Some(parked) => Some(parked),
                        None => done.await.ok(),
                    });
                }
                _ = shared.shutdown.requested() => closing = true,
                _ = client.killed() => closing = true,
                read = stream.read_buf(input.for_reading()) => match read {
                    Ok(0) => closing = true,
                    Ok(read) => {
                        Stats::add(&shared.stats.net_input_bytes, read as u64);
                        if input.len() > client_limit {
                            tracing::warn!(
                                client = client.id,
                                pending = input.len(),
                                limit = client_limit,
                                "closing blocked client that reached client-query-buffer-limit"
                            );
                            closing = true;
                        }
                    }
                    Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => closing = true,
                    Err(error) => return Err(error),
                },
            }
        }
        if closing {
            if withdraw_on_drop.withdraw(Ended::Withdrawn).is_none() {
                // Its command runs now: let it end, and drop its reply with the connection.
                let _ = done.await;
            }
            return Ok(None);
        }
    }
}

/// Ends a parked client's wait if its connection's task ends without seeing the end of it (an
/// error on its socket), so that nothing is left behind.
struct WithdrawOnDrop<'a> {
    shared: &'a Arc<Shared>,
    id: u64,
}

impl WithdrawOnDrop<'_> {
    /// Ends the wait now, for `ended`, and with it the guard's job.
    fn withdraw(self, ended: Ended) -> Option<Parked> {
        let this = std::mem::ManuallyDrop::new(self);
        this.shared
            .blocking
            .withdraw(&this.shared.store, this.id, ended)
    }
}

impl Drop for WithdrawOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self
            .shared
            .blocking
            .withdraw(&self.shared.store, self.id, Ended::Withdrawn);
    }
}

/// The connection's input limits as the settings stand now: its own query buffer's limit, and
/// the ceiling on every client's together.
fn input_limits(config: &Config) -> (usize, u64) {
    let client_limit = config.client_query_buffer_limit().min(usize::MAX as u64) as usize;
    (client_limit, config.max_query_buffers_memory())
}

/// WAIT: asks the replicas to acknowledge at once, then waits until enough did, the timeout
/// passes, or the client or the server goes; returns how many acknowledged.
async fn wait_for_acks(shared: &Shared, session: &Session, wait: WaitForReplicas) -> usize {
    let replication = &shared.replication;
    replication.append_control(&[b"REPLCONF", b"GETACK", b"*"], now_ms());
    let deadline = (wait.timeout_ms > 0)
        .then(|| tokio::time::Instant::now() + Duration::from_millis(wait.timeout_ms));
    tokio::select! {
        acked = replication.wait_for_acks(wait.offset, wait.replicas, deadline) => acked,
        _ = session.client.killed() => 0,
        _ = shared.shutdown.requested() => replication.acked_at_least(wait.offset),
    }
}

/// Redis's `client-output-buffer-limit pubsub`, simplified: one fixed cap, and a warning.
fn warn_overflow(client: &ClientInfo) {
    tracing::warn!(
        client = client.id,
        addr = %client.addr(),
        limit = INBOX_LIMIT,
        "closing subscriber whose undelivered Pub/Sub messages went over the limit"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::{Wake, Waker};

    #[derive(Default)]
    struct CountWakes(AtomicUsize);

    impl Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn write_last_steps_aside_once_and_asks_to_run_again() {
        let wakes = Arc::new(CountWakes::default());
        let waker = Waker::from(Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        let mut write_last = WriteLast::default();
        assert!(Pin::new(&mut write_last).poll(&mut cx).is_pending());
        // Without this wake-up the connection would never be polled again.
        assert_eq!(wakes.0.load(Ordering::Relaxed), 1);
        assert!(Pin::new(&mut write_last).poll(&mut cx).is_ready());
        assert_eq!(wakes.0.load(Ordering::Relaxed), 1);
    }
}
