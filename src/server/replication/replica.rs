//! A replica's link to its primary, in Redis's order: PING, AUTH (masterauth), REPLCONF
//! (sieved's own check that the primary is a sieved server other than this one, the listening
//! port, capabilities), PSYNC with this server's history and offset; then either a full sync
//! (the primary's snapshot, received into a file, loaded beside the live keyspace and swapped in
//! at once, so that the previous data stays until a sync completes) or a partial one; then the
//! stream of write records, applied in order and acknowledged once a second. A link that fails
//! is retried every second until REPLICAOF changes the primary or the server stops.

use super::{LinkState, Primary};
use crate::cmd::{ClientKind, Replicating};
use crate::persist::aof::format::decode_record;
use crate::persist::recovery::{ApplyLogged, Logged};
use crate::persist::snapshot;
use crate::protocol::{encode_request, Request};
use crate::server::logged_writes::LoggedWrites;
use crate::server::{blocking, saver, tls, Shared};
use crate::store::now_ms;
use rustls::pki_types::ServerName;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest line the primary may answer the handshake with.
const MAX_LINE: usize = 64 * 1024;
/// Room made before each read from the primary: a read takes at most what there is room for.
const READ_CHUNK: usize = 256 * 1024;
/// The payload file's write buffer.
const WRITE_CHUNK: usize = 1024 * 1024;
/// Bytes of the snapshot's end marker in Redis's diskless form (`$EOF:<40 bytes>`).
const MARK_LEN: usize = 40;

/// REPLICAOF: follows `primary` (starting the link), or none (the server becomes a primary).
/// Also what a changed `replicaof` setting does, at start-up and on CONFIG SET.
pub(in crate::server) fn follow(
    shared: &Arc<Shared>,
    primary: Option<(String, u16)>,
) -> Replicating {
    let replication = &shared.replication;
    let current = replication.primary().map(|p| (p.host, p.port));
    if current.is_some() && current == primary {
        return Replicating::Already;
    }
    let setting = primary
        .as_ref()
        .map_or(String::new(), |(host, port)| format!("{host} {port}"));
    if let Err(error) = shared
        .config
        .set_many(&[(b"replicaof".as_slice(), setting.as_bytes())])
    {
        tracing::warn!(%error, "could not record the replicaof setting");
    }
    match primary {
        None => {
            if current.is_some() {
                replication.set_primary(None, now_ms());
                // A new history, which remembers the old one: replicas of the old primary
                // continue with a partial resync.
                replication.start_new_history();
                tracing::info!("this replica is now a primary");
                // They reconnect to learn the new history, and continue partially.
                shared.clients.kill_kind(ClientKind::Replica);
            }
        }
        Some((host, port)) => {
            tracing::info!(%host, port, "following a primary");
            let generation = replication.set_primary(Some((host, port)), now_ms());
            shared.clients.kill_kind(ClientKind::Primary);
            shared.blocking.disconnect_all(&shared.store);
            let shared = shared.clone();
            tokio::spawn(async move { run_link(shared, generation).await });
        }
    }
    Replicating::Started
}

async fn run_link(shared: Arc<Shared>, generation: u64) {
    let replication = &shared.replication;
    loop {
        if !replication.is_current(generation) || shared.shutdown.is_stopping() {
            return;
        }
        let result = link_once(&shared, generation).await;
        let was_up = replication.link_up();
        replication.update_link(generation, |primary| {
            if was_up || primary.state == LinkState::Connected {
                primary.down_since_ms = now_ms();
            }
            primary.state = LinkState::Connecting;
            if let Err(error) = &result {
                primary.last_error = Some(error.clone());
            }
        });
        if let Err(error) = result {
            tracing::warn!(%error, "replication link to the primary failed; retrying");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shared.shutdown.requested() => return,
        }
    }
}

/// One attempt: connect, handshake, sync, then apply the stream until the link ends.
async fn link_once(shared: &Arc<Shared>, generation: u64) -> Result<(), String> {
    let replication = &shared.replication;
    let Some(Primary { host, port, .. }) = replication.primary() else {
        return Ok(());
    };
    let settings = shared.config.settings();
    let timeout = Duration::from_secs(settings.repl_timeout);
    let tcp = tokio::time::timeout(timeout, TcpStream::connect((host.as_str(), port)))
        .await
        .map_err(|_| format!("connecting to {host}:{port} timed out"))?
        .map_err(|error| format!("cannot connect to {host}:{port}: {error}"))?;
    let _ = tcp.set_nodelay(true);
    let peer = tcp.peer_addr().map_err(|e| e.to_string())?;
    let local = tcp.local_addr().map_err(|e| e.to_string())?;
    let io: Box<dyn LinkIo> = match settings.tls_replication {
        false => Box::new(tcp),
        true => {
            let connector = tls::connector(&shared.config.tls).map_err(|e| e.to_string())?;
            let name = ServerName::try_from(host.clone())
                .map_err(|e| format!("tls-replication: {host} is no server name: {e}"))?;
            let handshake = tokio::time::timeout(timeout, connector.connect(name, tcp));
            Box::new(
                handshake
                    .await
                    .map_err(|_| "the TLS handshake with the primary timed out".to_string())?
                    .map_err(|e| format!("the TLS handshake with the primary failed: {e}"))?,
            )
        }
    };
    let registration = shared.clients.register(peer, local, now_ms());
    let client = registration.info.clone();
    client.set_kind(ClientKind::Primary);
    replication.update_link(generation, |p| p.state = LinkState::Handshake);
    let mut link = Link {
        io,
        input: Vec::new(),
        timeout,
    };
    let answer = link.ask(&[b"PING"]).await?;
    if answer.starts_with('-') && !answer.starts_with("-NOAUTH") {
        return Err(format!("the primary answered PING with {answer}"));
    }
    if !settings.masterauth.is_empty() {
        let mut auth: Vec<&[u8]> = vec![b"AUTH"];
        if !settings.masteruser.is_empty() {
            auth.push(settings.masteruser.as_bytes());
        }
        auth.push(settings.masterauth.as_bytes());
        let answer = link.ask(&auth).await?;
        if answer != "+OK" {
            return Err(format!("Unable to AUTH to MASTER: {answer}"));
        }
    }
    let answer = link
        .ask(&[b"REPLCONF", b"sieved", shared.run_id.as_bytes()])
        .await?;
    if answer.contains("Unrecognized REPLCONF option") {
        return Err(format!(
            "the primary at {host}:{port} is not a sieved server (it answered {answer})"
        ));
    }
    if answer != "+OK" {
        return Err(format!("the primary refused the link: {answer}"));
    }
    let port_text = match settings.replica_announce_port {
        0 => shared.addr.port().to_string(),
        announced => announced.to_string(),
    };
    let mut replconf: Vec<&[u8]> = vec![b"REPLCONF", b"listening-port", port_text.as_bytes()];
    if !settings.replica_announce_ip.is_empty() {
        replconf.extend([
            b"ip-address".as_slice(),
            settings.replica_announce_ip.as_bytes(),
        ]);
    }
    link.expect_ok(&replconf).await?;
    link.expect_ok(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])
        .await?;
    let (replid, next) = match replication.offers_history.load(Ordering::Relaxed) {
        true => (
            replication.replid(),
            (replication.stream.offset() + 1).to_string(),
        ),
        false => ("?".to_string(), "-1".to_string()),
    };
    let answer = link
        .ask(&[b"PSYNC", replid.as_bytes(), next.as_bytes()])
        .await?;
    let words: Vec<&str> = answer.split_whitespace().collect();
    match words.as_slice() {
        ["+FULLRESYNC", replid, offset] => {
            let offset: u64 = offset
                .parse()
                .map_err(|_| format!("the primary answered PSYNC with {answer}"))?;
            replication.update_link(generation, |p| p.state = LinkState::Sync);
            full_sync(shared, &mut link, replid, offset).await?;
        }
        ["+CONTINUE"] => {}
        ["+CONTINUE", replid] => replication.adopt_history(replid),
        _ => return Err(format!("the primary answered PSYNC with {answer}")),
    }
    replication.offers_history.store(true, Ordering::Relaxed);
    tracing::info!(%host, port, offset = replication.stream.offset(), "replication link up");
    replication.update_link(generation, |p| {
        p.state = LinkState::Connected;
        p.last_io_ms = now_ms();
        p.last_error = None;
    });
    stream(shared, &mut link, generation, &client).await
}

/// The link's byte stream: TCP, or TLS over it.
trait LinkIo: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> LinkIo for T {}

struct Link {
    io: Box<dyn LinkIo>,
    /// Bytes read and not yet used.
    input: Vec<u8>,
    timeout: Duration,
}

impl Link {
    /// Sends a command and reads the one-line answer.
    async fn ask(&mut self, args: &[&[u8]]) -> Result<String, String> {
        let mut request = Vec::new();
        encode_request(&mut request, args);
        self.io
            .write_all(&request)
            .await
            .map_err(|e| format!("writing to the primary: {e}"))?;
        self.line().await
    }

    async fn expect_ok(&mut self, args: &[&[u8]]) -> Result<(), String> {
        match self.ask(args).await? {
            answer if answer == "+OK" => Ok(()),
            answer => Err(format!(
                "the primary answered {} with {answer}",
                String::from_utf8_lossy(&args[..2.min(args.len())].join(&b' '))
            )),
        }
    }

    /// The next line the primary sends, without its CRLF. Newlines alone (which Redis sends
    /// to keep a replica waiting for a snapshot) are skipped.
    async fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(end) = self.input.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.input.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line).trim_end().to_string();
                if line.is_empty() {
                    continue;
                }
                return Ok(line);
            }
            if self.input.len() > MAX_LINE {
                return Err("the primary sent an overlong line".into());
            }
            self.fill().await?;
        }
    }

    /// Reads more into `input`; a link silent past `repl-timeout`, or closed, is an error.
    async fn fill(&mut self) -> Result<usize, String> {
        self.input.reserve(READ_CHUNK);
        match tokio::time::timeout(self.timeout, self.io.read_buf(&mut self.input)).await {
            Err(_) => Err("the primary fell silent (repl-timeout)".into()),
            Ok(Err(error)) => Err(format!("reading from the primary: {error}")),
            Ok(Ok(0)) => Err("the primary closed the link".into()),
            Ok(Ok(read)) => Ok(read),
        }
    }
}

/// Receives the primary's snapshot into a file, loads it beside the live keyspace, and swaps it
/// in with commands paused; the stream then continues from `offset`, under the primary's
/// history. Until the swap, the previous data is served and kept, whatever fails.
async fn full_sync(
    shared: &Arc<Shared>,
    link: &mut Link,
    replid: &str,
    offset: u64,
) -> Result<(), String> {
    let path = snapshot::sync_payload_path(&shared.config.dir);
    let received = receive_payload(link, &path).await;
    let loaded = match received {
        Ok(bytes) => {
            tracing::info!(bytes, "snapshot received from the primary; loading it");
            let shared = shared.clone();
            let path = path.clone();
            tokio::task::spawn_blocking(move || {
                let side = shared.store.empty_like();
                snapshot::load_file(&side, &path, |_, _| {})
                    .map_err(|error| format!("the primary's snapshot cannot be loaded: {error}"))
                    .map(|_| side)
            })
            .await
            .map_err(|error| error.to_string())
            .and_then(|loaded| loaded)
        }
        Err(error) => Err(error),
    };
    let _ = std::fs::remove_file(&path);
    let side = loaded?;
    let shared = shared.clone();
    let replid = replid.to_string();
    tokio::task::spawn_blocking(move || take_over(&shared, side, &replid, offset))
        .await
        .map_err(|error| error.to_string())?
}

/// Reads the payload that follows +FULLRESYNC into `path`: `$EOF:<mark>` and the bytes up to
/// the mark, or `$<length>` and that many bytes. Returns its size.
async fn receive_payload(link: &mut Link, path: &std::path::Path) -> Result<u64, String> {
    let header = link.line().await?;
    let file = tokio::fs::File::create(path)
        .await
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut file = tokio::io::BufWriter::with_capacity(WRITE_CHUNK, file);
    let write_error = |e: io::Error| format!("writing {}: {e}", path.display());
    let mut written = 0u64;
    if let Some(mark) = header.strip_prefix("$EOF:") {
        let mark = mark.as_bytes().to_vec();
        if mark.len() != MARK_LEN {
            return Err(format!(
                "the primary's payload header is malformed: {header}"
            ));
        }
        loop {
            // The stream follows the mark at once, often in the same read: what comes after
            // the mark stays in `input` for it.
            if let Some(at) = link
                .input
                .windows(MARK_LEN)
                .position(|window| window == mark.as_slice())
            {
                file.write_all(&link.input[..at])
                    .await
                    .map_err(write_error)?;
                written += at as u64;
                link.input.drain(..at + MARK_LEN);
                break;
            }
            // Everything but the last MARK_LEN bytes is payload for sure: the mark, not yet
            // whole, can only begin there.
            let sure = link.input.len().saturating_sub(MARK_LEN);
            if sure > 0 {
                file.write_all(&link.input[..sure])
                    .await
                    .map_err(write_error)?;
                written += sure as u64;
                link.input.drain(..sure);
            }
            link.fill().await?;
        }
    } else if let Some(length) = header.strip_prefix('$').and_then(|n| n.parse::<u64>().ok()) {
        while written < length {
            if link.input.is_empty() {
                link.fill().await?;
            }
            let take = link.input.len().min((length - written) as usize);
            file.write_all(&link.input[..take])
                .await
                .map_err(write_error)?;
            written += take as u64;
            link.input.drain(..take);
        }
    } else {
        return Err(format!(
            "the primary answered with {header} instead of a snapshot"
        ));
    }
    file.flush().await.map_err(write_error)?;
    file.get_ref().sync_all().await.map_err(write_error)?;
    Ok(written)
}

/// Swaps the loaded data set in, with every command paused. With the append-only file on, the
/// old log no longer describes the data: a snapshot of the new data set replaces it before
/// commands resume.
fn take_over(
    shared: &Arc<Shared>,
    side: crate::store::Store,
    replid: &str,
    offset: u64,
) -> Result<(), String> {
    let everyone = shared.isolation.exclusive();
    shared.store.swap_contents(&side);
    let replication = &shared.replication;
    replication.stream.restart_at(offset);
    replication.reset_history(replid);
    // Replicas of this replica follow a history that just ended.
    shared.clients.kill_kind(ClientKind::Replica);
    let saved = match shared.aof {
        Some(_) => saver::save_paused(shared).map_err(|e| e.to_string()),
        None => Ok(()),
    };
    drop(everyone);
    // Freeing the old data set takes a while: after commands resume.
    drop(side);
    tracing::info!(offset, "full sync done");
    saved.map_err(|error| format!("the synced data set could not be saved: {error}"))
}

/// Applies the stream as it arrives, acknowledging once a second and whenever asked.
async fn stream(
    shared: &Arc<Shared>,
    link: &mut Link,
    generation: u64,
    client: &crate::cmd::ClientInfo,
) -> Result<(), String> {
    let replication = &shared.replication;
    let mut applier = LoggedWrites::new(shared);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut last_io = Instant::now();
    // The append-only file's position after the last record applied: an acknowledgement
    // waits until the file holds it (written, or synced under appendfsync always), so that
    // WAIT counts a replica only for what its disk has.
    let mut logged_up_to = 0;
    loop {
        let (ack_wanted, position) = apply_records(shared, &mut applier, &mut link.input)?;
        logged_up_to = logged_up_to.max(position);
        if ack_wanted {
            send_ack(shared, link, logged_up_to).await?;
        } else if let Some(aof) = shared.aof.as_ref().filter(|_| position > 0) {
            // Under everysec and no nobody wakes the writer thread for an append: the
            // records reach the file now, as a primary's clients' writes do before a reply.
            aof.write_through(position);
        }
        link.input.reserve(READ_CHUNK);
        tokio::select! {
            read = link.io.read_buf(&mut link.input) => match read {
                Ok(0) => return Err("the primary closed the link".into()),
                Ok(_) => {
                    last_io = Instant::now();
                    replication.update_link(generation, |p| p.last_io_ms = now_ms());
                }
                Err(error) => return Err(format!("reading from the primary: {error}")),
            },
            _ = tick.tick() => {
                if !replication.is_current(generation) {
                    return Ok(());
                }
                if last_io.elapsed() > link.timeout {
                    return Err("the primary fell silent (repl-timeout)".into());
                }
                send_ack(shared, link, logged_up_to).await?;
            }
            _ = client.killed() => return Err("the link was killed (CLIENT KILL)".into()),
            _ = shared.shutdown.requested() => return Ok(()),
        }
    }
}

/// Acknowledges every record applied, once the append-only file (if on) holds them.
async fn send_ack(shared: &Shared, link: &mut Link, logged_up_to: u64) -> Result<(), String> {
    // Read before the wait: records applied meanwhile are not yet in the file.
    let offset = shared.replication.stream.offset();
    if let Some(aof) = shared.aof.as_ref() {
        aof.wait_durable(logged_up_to).await;
    }
    let offset = offset.to_string();
    let ack = format!(
        "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n${}\r\n{offset}\r\n",
        offset.len()
    );
    link.io
        .write_all(ack.as_bytes())
        .await
        .map_err(|e| format!("writing to the primary: {e}"))
}

/// Applies every whole record in `input` and removes them from it; returns whether the primary
/// asked for an acknowledgement (REPLCONF GETACK), and the append-only file's position after
/// the last record (0 if none went there). Each record is applied, then logged to this server's
/// append-only file (unless it is a heartbeat) and its own stream, in one order.
fn apply_records(
    shared: &Arc<Shared>,
    applier: &mut LoggedWrites,
    input: &mut Vec<u8>,
) -> Result<(bool, u64), String> {
    let max_body = shared
        .config
        .settings()
        .proto_max_bulk_len
        .saturating_mul(2)
        .max(1 << 30);
    let mut consumed = 0;
    let mut ack_wanted = false;
    let mut logged_up_to = 0;
    while let Some((record, len)) = decode_record(&input[consumed..], max_body)
        .map_err(|error| format!("the primary's stream is damaged: {error}"))?
    {
        let raw = &input[consumed..consumed + len];
        shared
            .replication
            .primary_clock_ms
            .fetch_max(record.time_ms, Ordering::Relaxed);
        let control = match record.commands.as_slice() {
            [(_, ranges)] => {
                let request = Request::new(&record.body, ranges);
                let name = request.arg(0);
                if name.eq_ignore_ascii_case(b"replconf") {
                    ack_wanted |=
                        request.len() > 1 && request.arg(1).eq_ignore_ascii_case(b"getack");
                    true
                } else {
                    name.eq_ignore_ascii_case(b"ping")
                }
            }
            _ => false,
        };
        {
            // A transaction is applied while no command runs, as EXEC's are.
            let _exclusive = (record.commands.len() > 1).then(|| shared.isolation.exclusive());
            let _batch = (record.commands.len() == 1).then(|| shared.isolation.shared());
            if !control {
                for (db, ranges) in &record.commands {
                    let write = Logged {
                        db: *db,
                        request: Request::new(&record.body, ranges),
                        time_ms: record.time_ms,
                    };
                    if let Err(error) = applier.apply(&shared.store, write) {
                        tracing::warn!(%error, "a write from the primary could not be applied");
                    }
                }
            }
            let _order = shared
                .stream_order
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let (Some(aof), false) = (shared.aof.as_ref(), control) {
                logged_up_to = aof.order().append_with(|out| out.extend_from_slice(raw));
            }
            shared.replication.stream.append(raw);
        }
        if !control {
            // Clients blocked on this replica (replica-read-only no) are served by its
            // primary's writes, as by any.
            let _batch = shared.isolation.shared();
            blocking::serve_ready(shared);
        }
        consumed += len;
    }
    input.drain(..consumed);
    Ok((ack_wanted, logged_up_to))
}
