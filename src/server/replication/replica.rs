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
use crate::server::panics::{self, Caught};
use crate::server::{blocking, saver, tls, Shared};
use crate::store::now_ms;
use rustls::pki_types::ServerName;
use std::io;
use std::path::{Path, PathBuf};
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

/// The wait before trying again after a failure that a new attempt may mend (a connection
/// refused, lost or silent), as Redis's once a second.
const RETRY: Duration = Duration::from_secs(1);
/// The longest wait after failures that a new attempt would meet again (a refusal, a record or
/// payload that cannot be applied, a panic): the wait doubles from `RETRY` up to this, so that
/// a primary is not made to fork and send its data set every second for nothing.
const RETRY_MAX: Duration = Duration::from_secs(64);

/// Why an attempt ended.
struct LinkError {
    why: String,
    cause: Cause,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// The connection failed or was lost: tried again after `RETRY`.
    Lost,
    /// The primary, or what it sent, cannot be followed as things stand: tried again after a
    /// growing wait.
    Refused,
}

impl From<String> for LinkError {
    fn from(why: String) -> LinkError {
        LinkError {
            why,
            cause: Cause::Lost,
        }
    }
}

fn refused(why: impl Into<String>) -> LinkError {
    LinkError {
        why: why.into(),
        cause: Cause::Refused,
    }
}

/// REPLICAOF: follows `primary` (starting the link), or none (the server becomes a primary).
/// Also what a changed `replicaof` setting does, at start-up and on CONFIG SET. Either way the
/// previous link has ended when this returns: nothing it started takes effect any more (see
/// `Replication::set_primary`).
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
            let link = tokio::spawn(run_link(shared.clone(), generation));
            replication.link_started(generation, link.abort_handle());
        }
    }
    Replicating::Started
}

/// Attempts after attempt, until REPLICAOF ends the link or the server stops. A panic in an
/// attempt ends that attempt only, visibly: the link is down, INFO says why, and it is tried
/// again, from a full sync.
async fn run_link(shared: Arc<Shared>, generation: u64) {
    let replication = &shared.replication;
    // Refusals in a row: a link that comes up and then meets the same refusal at once (a
    // record it cannot apply, say) still waits longer each time.
    let mut refusals = 0u32;
    loop {
        if !replication.is_current(generation) || shared.shutdown.is_stopping() {
            return;
        }
        let mut up_since = None;
        let attempt = Caught::new(link_once(&shared, generation, &mut up_since)).await;
        let result = attempt.unwrap_or_else(|panic| {
            panics::note(
                &shared,
                "replication link",
                &panic,
                "the link is closed and tried again",
            );
            // It may have applied part of a record: what this server holds is in doubt.
            replication.if_current(generation, || {
                replication.offers_history.store(false, Ordering::Relaxed)
            });
            Err(refused(format!("the link's task panicked: {panic}")))
        });
        // A link that served a while, or ended for another cause, is healthy again.
        let served = up_since.is_some_and(|since: Instant| since.elapsed() >= RETRY_MAX);
        if served || (up_since.is_some() && !matches!(&result, Err(e) if e.cause == Cause::Refused))
        {
            refusals = 0;
        }
        let wait = match &result {
            Err(LinkError {
                cause: Cause::Refused,
                ..
            }) => {
                refusals += 1;
                RETRY
                    .saturating_mul(1 << (refusals - 1).min(16))
                    .min(RETRY_MAX)
            }
            _ => RETRY,
        };
        let now = now_ms();
        replication.update_link(generation, |primary| {
            if primary.state == LinkState::Connected {
                primary.down_since_ms = now;
            }
            primary.state = LinkState::Connecting;
            primary.transfer = None;
            primary.retry_delay_ms = wait.as_millis() as u64;
            if let Err(error) = &result {
                primary.last_error = Some(error.why.clone());
            }
        });
        match &result {
            Err(LinkError {
                why,
                cause: Cause::Refused,
            }) => tracing::error!(
                error = %why,
                retry_in_ms = wait.as_millis() as u64,
                "replication link to the primary refused; trying again after a longer wait each time"
            ),
            Err(LinkError { why, .. }) => {
                tracing::warn!(error = %why, "replication link to the primary failed; retrying")
            }
            Ok(()) => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shared.shutdown.requested() => return,
        }
    }
}

/// One attempt: connect, handshake, sync, then apply the stream until the link ends. Sets
/// `up_since` once the link is up.
async fn link_once(
    shared: &Arc<Shared>,
    generation: u64,
    up_since: &mut Option<Instant>,
) -> Result<(), LinkError> {
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
                .map_err(|e| refused(format!("tls-replication: {host} is no server name: {e}")))?;
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
        return Err(refused(format!("the primary answered PING with {answer}")));
    }
    if !settings.masterauth.is_empty() {
        let mut auth: Vec<&[u8]> = vec![b"AUTH"];
        if !settings.masteruser.is_empty() {
            auth.push(settings.masteruser.as_bytes());
        }
        auth.push(settings.masterauth.as_bytes());
        let answer = link.ask(&auth).await?;
        if answer != "+OK" {
            return Err(refused(format!("Unable to AUTH to MASTER: {answer}")));
        }
    }
    let answer = link
        .ask(&[b"REPLCONF", b"sieved", shared.run_id.as_bytes()])
        .await?;
    if answer.contains("Unrecognized REPLCONF option") {
        return Err(refused(format!(
            "the primary at {host}:{port} is not a sieved server (it answered {answer})"
        )));
    }
    if answer != "+OK" {
        return Err(refused(format!("the primary refused the link: {answer}")));
    }
    // A primary with more databases could send a write to one this replica lacks, which could
    // never be applied: refused now, with the remedy, rather than at the first such write.
    let theirs = link.config_get("databases").await?;
    let ours = shared.store.databases();
    if let Some(theirs) = theirs.and_then(|n| n.parse::<usize>().ok()) {
        if theirs > ours {
            return Err(refused(format!(
                "the primary has {theirs} databases and this replica {ours}: a write to \
                 database {ours} or above could not be applied here (start this replica with \
                 --databases {theirs} or more)"
            )));
        }
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
                .map_err(|_| refused(format!("the primary answered PSYNC with {answer}")))?;
            replication.update_link(generation, |p| p.state = LinkState::Sync);
            if !full_sync(shared, &mut link, generation, replid, offset).await? {
                return Ok(());
            }
        }
        ["+CONTINUE"] => {}
        ["+CONTINUE", replid] => {
            // Another primary (promoted): the clock to sweep by is its own, once it sends it.
            let adopted = replication.if_current(generation, || {
                if replication.adopt_history(replid) {
                    // As Redis: this server's own replicas reconnect to learn the new ID (and
                    // continue partially), or a chain would name one history by two IDs.
                    shared.clients.kill_kind(ClientKind::Replica);
                }
                replication.primary_clock_ms.store(0, Ordering::Relaxed);
            });
            if adopted.is_none() {
                return Ok(());
            }
        }
        // A chained primary whose own link is down, or one still loading: soon mended.
        [first, ..] if first.starts_with("-NOMASTERLINK") || first.starts_with("-LOADING") => {
            return Err(format!("the primary answered PSYNC with {answer}").into())
        }
        _ => return Err(refused(format!("the primary answered PSYNC with {answer}"))),
    }
    let connected = replication.update_link(generation, |p| {
        p.state = LinkState::Connected;
        p.last_io_ms = now_ms();
        p.last_error = None;
        p.transfer = None;
    });
    if !connected {
        return Ok(());
    }
    *up_since = Some(Instant::now());
    tracing::info!(%host, port, offset = replication.stream.offset(), "replication link up");
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

    async fn expect_ok(&mut self, args: &[&[u8]]) -> Result<(), LinkError> {
        match self.ask(args).await? {
            answer if answer == "+OK" => Ok(()),
            answer => Err(refused(format!(
                "the primary answered {} with {answer}",
                String::from_utf8_lossy(&args[..2.min(args.len())].join(&b' '))
            ))),
        }
    }

    /// CONFIG GET `name`'s value, when the primary answers with it; None when it answers
    /// otherwise (refused by its ACL, say), which says nothing either way.
    async fn config_get(&mut self, name: &str) -> Result<Option<String>, String> {
        if self.ask(&[b"CONFIG", b"GET", name.as_bytes()]).await? != "*2" {
            return Ok(None);
        }
        // `$<len>`, the name, `$<len>`, the value: none of them empty, so each is a line.
        let mut lines = Vec::with_capacity(4);
        for _ in 0..4 {
            lines.push(self.line().await?);
        }
        Ok(lines[1]
            .eq_ignore_ascii_case(name)
            .then(|| lines[3].clone()))
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

/// The file a link receives its full sync's payload in, removed when dropped: after the load,
/// or when REPLICAOF aborts the link mid-transfer. Each link has its own (its generation is in
/// the name), so no link reads, truncates or removes another's.
struct PayloadFile(PathBuf);

impl Drop for PayloadFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Receives the primary's snapshot into a file, loads it beside the live keyspace, and swaps it
/// in with commands paused; the stream then continues from `offset`, under the primary's
/// history. Until the swap, the previous data is served and kept, whatever fails: a payload
/// cut short, damaged, or missing is an error, never an empty data set. False when REPLICAOF
/// ended the link before the swap, which then never happens.
async fn full_sync(
    shared: &Arc<Shared>,
    link: &mut Link,
    generation: u64,
    replid: &str,
    offset: u64,
) -> Result<bool, LinkError> {
    let file = PayloadFile(snapshot::sync_payload_path(&shared.config.dir, generation));
    let bytes = receive_payload(shared, generation, link, &file.0).await?;
    tracing::info!(bytes, "snapshot received from the primary; loading it");
    let (loader, path) = (shared.clone(), file.0.clone());
    let side = tokio::task::spawn_blocking(move || {
        let side = loader.store.empty_like();
        match snapshot::load_file(&side, &path, |_, _| {}) {
            Ok(Some(_)) => Ok(side),
            Ok(None) => Err(format!(
                "the primary's snapshot is missing: {} was not found",
                path.display()
            )),
            Err(error) => Err(format!("the primary's snapshot cannot be loaded: {error}")),
        }
    })
    .await
    .map_err(|error| blocking_failed(shared, "loading the primary's snapshot", error))?
    .map_err(refused)?;
    drop(file);
    let (taker, replid) = (shared.clone(), replid.to_string());
    tokio::task::spawn_blocking(move || take_over(&taker, generation, side, &replid, offset))
        .await
        .map_err(|error| blocking_failed(shared, "swapping the synced data set in", error))?
        .map_err(refused)
}

/// A blocking step of a full sync that did not finish; a panic there is noted as any task's.
fn blocking_failed(shared: &Shared, step: &str, error: tokio::task::JoinError) -> LinkError {
    if !error.is_panic() {
        return refused(format!("{step} failed: {error}"));
    }
    let panic = panics::message(error.into_panic().as_ref());
    panics::note(
        shared,
        step,
        &panic,
        "the full sync failed and is tried again",
    );
    refused(format!("{step} panicked: {panic}"))
}

/// Reads the payload that follows +FULLRESYNC into `path`: `$EOF:<mark>` and the bytes up to
/// the mark, or `$<length>` and that many bytes. Returns its size. INFO shows its progress.
async fn receive_payload(
    shared: &Shared,
    generation: u64,
    link: &mut Link,
    path: &Path,
) -> Result<u64, LinkError> {
    let header = link.line().await?;
    let file = tokio::fs::File::create(path)
        .await
        .map_err(|e| refused(format!("cannot create {}: {e}", path.display())))?;
    let mut file = tokio::io::BufWriter::with_capacity(WRITE_CHUNK, file);
    let write_error = |e: io::Error| refused(format!("writing {}: {e}", path.display()));
    let progress = |total: i64, written: u64| {
        shared.replication.update_link(generation, |p| {
            p.transfer = Some((total, written));
            p.last_io_ms = now_ms();
        });
    };
    let mut written = 0u64;
    if let Some(mark) = header.strip_prefix("$EOF:") {
        let mark = mark.as_bytes().to_vec();
        if mark.len() != MARK_LEN {
            return Err(refused(format!(
                "the primary's payload header is malformed: {header}"
            )));
        }
        loop {
            progress(-1, written);
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
            progress(length as i64, written);
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
        return Err(refused(format!(
            "the primary answered with {header} instead of a snapshot"
        )));
    }
    file.flush().await.map_err(write_error)?;
    file.get_ref().sync_all().await.map_err(write_error)?;
    Ok(written)
}

/// Swaps the loaded data set in, with every command paused, unless REPLICAOF ended link
/// `generation` meanwhile (false: nothing changed). With the append-only file on, the old log no
/// longer describes the data: a snapshot of the new data set replaces it before commands
/// resume.
fn take_over(
    shared: &Arc<Shared>,
    generation: u64,
    side: crate::store::Store,
    replid: &str,
    offset: u64,
) -> Result<bool, String> {
    let everyone = shared.isolation.exclusive();
    let replication = &shared.replication;
    let taken = replication.if_current(generation, || {
        shared.store.swap_contents(&side);
        // The clock to sweep by is this primary's, once it sends it.
        replication.primary_clock_ms.store(0, Ordering::Relaxed);
        replication.stream.restart_at(offset);
        replication.reset_history(replid);
        replication.offers_history.store(true, Ordering::Relaxed);
        // Replicas of this replica follow a history that just ended.
        shared.clients.kill_kind(ClientKind::Replica);
        match shared.aof {
            Some(_) => saver::save_paused(shared).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    });
    drop(everyone);
    // Freeing the old data set (or the one thrown away) takes a while: after commands resume.
    drop(side);
    match taken {
        None => {
            tracing::info!("a full sync that REPLICAOF ended was thrown away");
            Ok(false)
        }
        Some(saved) => {
            tracing::info!(offset, "full sync done");
            saved
                .map(|()| true)
                .map_err(|error| format!("the synced data set could not be saved: {error}"))
        }
    }
}

/// Applies the stream as it arrives, acknowledging once a second and whenever asked. Ends
/// with Ok when REPLICAOF ended the link (or the server stops).
async fn stream(
    shared: &Arc<Shared>,
    link: &mut Link,
    generation: u64,
    client: &crate::cmd::ClientInfo,
) -> Result<(), LinkError> {
    let replication = &shared.replication;
    let mut applier = LoggedWrites::new(shared);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut last_io = Instant::now();
    // The append-only file's position after the last record applied: an acknowledgement
    // waits until the file holds it (written, or synced under appendfsync always), so that
    // WAIT counts a replica only for what its disk has.
    let mut logged_up_to = 0;
    loop {
        let Some(applied) = apply_records(shared, generation, &mut applier, &mut link.input)?
        else {
            return Ok(());
        };
        logged_up_to = logged_up_to.max(applied.logged_up_to);
        if applied.ack_wanted {
            send_ack(shared, link, logged_up_to).await?;
        } else if let Some(aof) = shared.aof.as_ref().filter(|_| applied.logged_up_to > 0) {
            // Under everysec and no nobody wakes the writer thread for an append: the
            // records reach the file now, as a primary's clients' writes do before a reply.
            aof.write_through(applied.logged_up_to);
        }
        link.input.reserve(READ_CHUNK);
        tokio::select! {
            read = link.io.read_buf(&mut link.input) => match read {
                Ok(0) => return Err("the primary closed the link".to_string().into()),
                Ok(_) => {
                    last_io = Instant::now();
                    replication.update_link(generation, |p| p.last_io_ms = now_ms());
                }
                Err(error) => return Err(format!("reading from the primary: {error}").into()),
            },
            _ = tick.tick() => {
                if !replication.is_current(generation) {
                    return Ok(());
                }
                if last_io.elapsed() > link.timeout {
                    return Err("the primary fell silent (repl-timeout)".to_string().into());
                }
                send_ack(shared, link, logged_up_to).await?;
            }
            _ = client.killed() => {
                return Err("the link was killed (CLIENT KILL)".to_string().into())
            }
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

/// What `apply_records` did.
struct Applied {
    /// The primary asked for an acknowledgement (REPLCONF GETACK).
    ack_wanted: bool,
    /// The append-only file's position after the last record (0 if none went there).
    logged_up_to: u64,
}

/// Applies every whole record in `input` and removes them from it. Each record is checked as
/// start-up checks a logged one (every database it names exists here), then applied, then
/// logged to this server's append-only file (unless it is a heartbeat) and its own stream, in
/// one order. A record that cannot be applied ends the link: this replica would no longer hold
/// what its primary does, so it syncs in full on the next attempt. None when REPLICAOF ended
/// the link: nothing more is applied.
fn apply_records(
    shared: &Arc<Shared>,
    generation: u64,
    applier: &mut LoggedWrites,
    input: &mut Vec<u8>,
) -> Result<Option<Applied>, LinkError> {
    let replication = &shared.replication;
    let max_body = shared
        .config
        .settings()
        .proto_max_bulk_len
        .saturating_mul(2)
        .max(1 << 30);
    let databases = shared.store.databases();
    let mut consumed = 0;
    let mut applied = Applied {
        ack_wanted: false,
        logged_up_to: 0,
    };
    let mut ended = false;
    while let Some((record, len)) = decode_record(&input[consumed..], max_body)
        .map_err(|error| refused(format!("the primary's stream is damaged: {error}")))?
    {
        let raw = &input[consumed..consumed + len];
        if let Some((db, _)) = record.commands.iter().find(|(db, _)| *db >= databases) {
            return Err(refused(format!(
                "the primary sent a write to database {db}, but this replica has {databases} \
                 databases (start it with --databases {} or more)",
                db + 1
            )));
        }
        let control = match record.commands.as_slice() {
            [(_, ranges)] => {
                let request = Request::new(&record.body, ranges);
                let name = request.arg(0);
                if name.eq_ignore_ascii_case(b"replconf") {
                    applied.ack_wanted |=
                        request.len() > 1 && request.arg(1).eq_ignore_ascii_case(b"getack");
                    true
                } else {
                    name.eq_ignore_ascii_case(b"ping")
                }
            }
            _ => false,
        };
        // A transaction is applied while no command runs, as EXEC's are.
        let exclusive = (record.commands.len() > 1).then(|| shared.isolation.exclusive());
        let batch = (record.commands.len() == 1).then(|| shared.isolation.shared());
        let outcome = replication.if_current(generation, || {
            if control {
                replication
                    .primary_clock_ms
                    .fetch_max(record.time_ms, Ordering::Relaxed);
            } else {
                #[cfg(debug_assertions)]
                panics::test_panic("apply", &record.body);
                for (db, ranges) in &record.commands {
                    let request = Request::new(&record.body, ranges);
                    let write = Logged {
                        db: *db,
                        request,
                        time_ms: record.time_ms,
                    };
                    if let Err(error) = applier.apply(&shared.store, write) {
                        // Part of a transaction may have taken effect: in doubt, the next
                        // attempt syncs in full.
                        replication.offers_history.store(false, Ordering::Relaxed);
                        return Err(refused(format!(
                            "the primary's write {} to database {db} cannot be applied: {error}",
                            String::from_utf8_lossy(request.arg(0))
                        )));
                    }
                }
            }
            let _order = shared
                .stream_order
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let (Some(aof), false) = (shared.aof.as_ref(), control) {
                applied.logged_up_to = aof.order().append_with(|out| out.extend_from_slice(raw));
            }
            replication.stream.append(raw);
            Ok(())
        });
        drop((exclusive, batch));
        match outcome {
            None => {
                ended = true;
                break;
            }
            Some(outcome) => outcome?,
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
    Ok((!ended).then_some(applied))
}
