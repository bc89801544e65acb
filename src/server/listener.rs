use super::background;
use super::connection_threads::{ConnectionThreads, Seat};
use super::logged_writes::LoggedWrites;
use super::panics::{self, Caught};
use super::tls::{self, HandshakeFailure, HANDSHAKE_TIMEOUT};
use super::{client_io, saver, shutdown, Disk, Shared, Stats};
use crate::cmd::errors;
use crate::cmd::ExitSave;
use crate::config::Config;
use crate::persist::recovery::{self, Recovery};
use crate::persist::{LoadError, LoadFailure};
use crate::store::now_ms;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

/// How long connections get to finish their current batch after shutdown is requested.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a refused client gets to take its refusal (and, on the TLS port, to shake hands
/// for it) before it is dropped.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);

/// Why a new connection is turned away, if it is: Redis's replies for a full server and for
/// protected mode (no password set, and the client is not on the loopback interface).
fn refusal(shared: &Shared, addr: &SocketAddr) -> Option<&'static str> {
    let settings = shared.config.settings();
    if shared.clients.count() as u64 >= settings.maxclients {
        return Some(errors::MAX_CLIENTS);
    }
    // An IPv4 client of a dual-stack (`::`) socket arrives as ::ffff:a.b.c.d; its canonical
    // form is the IPv4 address, so 127.0.0.1 stays loopback there too.
    let loopback = addr.ip().to_canonical().is_loopback();
    if settings.protected_mode && !loopback && !shared.config.requires_password() {
        return Some(errors::DENIED);
    }
    None
}

/// Sends the refusal and closes, without waiting long for a client that does not read.
async fn refuse(mut stream: impl AsyncWrite + Unpin, message: &'static str) {
    let line = format!("-{message}\r\n");
    let _ = tokio::time::timeout(REFUSAL_TIMEOUT, async {
        stream.write_all(line.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// A refusal on the TLS port has to be encrypted to be read at all.
async fn refuse_tls(acceptor: TlsAcceptor, stream: TcpStream, message: &'static str) {
    if let Ok(stream) = tls::handshake(&acceptor, stream, REFUSAL_TIMEOUT).await {
        refuse(stream, message).await;
    }
}

/// The TLS port, when it is on.
struct TlsListener {
    listener: TcpListener,
    acceptor: TlsAcceptor,
}

/// The next connection on the TLS port, with its acceptor; never, when the port is off.
async fn accept_tls(
    tls: Option<&TlsListener>,
) -> (io::Result<(TcpStream, SocketAddr)>, Option<TlsAcceptor>) {
    match tls {
        Some(tls) => (tls.listener.accept().await, Some(tls.acceptor.clone())),
        None => std::future::pending().await,
    }
}

/// The handshake may take as long as an idle client is allowed, up to HANDSHAKE_TIMEOUT.
fn handshake_limit(shared: &Shared) -> Duration {
    match shared.config.settings().timeout_secs {
        0 => HANDSHAKE_TIMEOUT,
        secs => HANDSHAKE_TIMEOUT.min(Duration::from_secs(secs)),
    }
}

/// Serves one accepted connection, over TLS when it came to the TLS port, holding a client
/// slot from the first byte of the handshake to the end.
async fn serve(
    shared: Arc<Shared>,
    stream: std::net::TcpStream,
    addr: SocketAddr,
    acceptor: Option<TlsAcceptor>,
    _seat: Seat,
) {
    // Accepted on the listener's runtime, served on this connection thread's: the socket moves
    // to this thread's poller.
    let stream = match TcpStream::from_std(stream) {
        Ok(stream) => stream,
        Err(error) => {
            tracing::warn!(%addr, %error, "cannot serve the connection");
            return;
        }
    };
    // Replies go out in one write per batch; Nagle's delay would only hold the last one back.
    let _ = stream.set_nodelay(true);
    let local = stream.local_addr().unwrap_or(addr);
    let registration = shared.clients.register(addr, local, now_ms());
    let info = registration.info.clone();
    // A panic ends the connection (its socket goes as the panic unwinds), visibly.
    let served = Caught::new(async {
        match acceptor {
            None => client_io::serve(&shared, stream, info).await,
            Some(acceptor) => {
                let handshake = tokio::select! {
                    handshake = tls::handshake(&acceptor, stream, handshake_limit(&shared)) => handshake,
                    _ = shared.shutdown.requested() => return Ok(()),
                };
                match handshake {
                    Ok(stream) => client_io::serve(&shared, stream, info).await,
                    Err(HandshakeFailure::TimedOut) => {
                        tracing::debug!(%addr, "TLS handshake timed out; closing");
                        Ok(())
                    }
                    Err(HandshakeFailure::Failed(error)) => {
                        tracing::debug!(%addr, %error, "TLS handshake failed; closing");
                        Ok(())
                    }
                }
            }
        }
    });
    match served.await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::debug!(%addr, %error, "connection closed with an error"),
        Err(panic) => panics::note(
            &shared,
            &format!("the connection of {addr}"),
            &panic,
            "the connection is closed",
        ),
    }
}

/// Acts on a shutdown request: pauses every command, writes the exit snapshot if one is wanted,
/// and says whether to stop. The server stops while commands are still paused, so that no write
/// is acknowledged after the snapshot; a save that fails refuses the request (unless FORCE), as
/// Redis does, and serving goes on.
async fn stops(shared: &Arc<Shared>, request: shutdown::Request) -> bool {
    let save = match request.exit_save {
        // As Redis: a snapshot now would hold part of the data.
        _ if shared.loading.active() => false,
        ExitSave::Save => true,
        ExitSave::NoSave => false,
        ExitSave::Default => !shared.config.settings().save.is_empty(),
    };
    let worker = shared.clone();
    let decided = tokio::task::spawn_blocking(move || {
        let _paused = worker.isolation.exclusive();
        let saved = if save {
            saver::save_paused(&worker)
        } else {
            Ok(())
        };
        match saved {
            Ok(()) => {
                worker.shutdown.proceed();
                true
            }
            Err(error) if request.force => {
                tracing::error!(%error, "the exit snapshot failed; stopping anyway (FORCE)");
                worker.shutdown.proceed();
                true
            }
            Err(error) => {
                tracing::error!(%error, "the exit snapshot failed, so the server does not stop");
                worker.shutdown.refuse();
                false
            }
        }
    })
    .await;
    decided.unwrap_or_else(|_| {
        shared.shutdown.refuse();
        false
    })
}

pub struct Server {
    shared: Arc<Shared>,
    listener: TcpListener,
    tls: Option<TlsListener>,
    metrics: Option<TcpListener>,
}

impl Server {
    pub async fn bind(config: Config) -> io::Result<Server> {
        Server::bind_with(config, Disk::real()).await
    }

    /// `bind`, keeping the data on `disk`: tests give a file system that fails on demand.
    pub async fn bind_with(config: Config, disk: Disk) -> io::Result<Server> {
        std::fs::create_dir_all(&config.dir)?;
        let listener = TcpListener::bind((config.bind.as_str(), config.port)).await?;
        let addr = listener.local_addr()?;
        let tls = match config.tls.port {
            None => None,
            Some(port) => {
                let acceptor = tls::acceptor(&config.tls)?;
                let listener = TcpListener::bind((config.bind.as_str(), port))
                    .await
                    .map_err(|e| io::Error::new(e.kind(), format!("tls-port {port}: {e}")))?;
                Some(TlsListener { listener, acceptor })
            }
        };
        let metrics = match config.settings().metrics_addr.as_str() {
            "" => None,
            metrics_addr => Some(TcpListener::bind(metrics_addr).await.map_err(|e| {
                io::Error::new(e.kind(), format!("metrics-addr {metrics_addr}: {e}"))
            })?),
        };
        let mut shared = Shared::with_disk(config, addr, disk);
        shared.metrics_addr = metrics.as_ref().map(TcpListener::local_addr).transpose()?;
        shared.tls_addr = tls.as_ref().map(|t| t.listener.local_addr()).transpose()?;
        Ok(Server {
            shared: Arc::new(shared),
            listener,
            tls,
            metrics,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Where the TLS port listens, when it is on.
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.shared.tls_addr
    }

    pub fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// Loads the snapshot in the data directory, if there is one, and replays the append-only
    /// file after it, before any client is served; then starts the log's writer. Progress is
    /// logged about once a second.
    pub fn load(&self) -> Result<Recovery, LoadError> {
        load(&self.shared)
    }

    /// Serves clients while the data loads on a thread of its own, as Redis does: commands
    /// flagged `loading` run, every other is answered `-LOADING` (`Loading`); once the data is
    /// in, the background work starts, `loaded` is told what was loaded, and serving goes on
    /// until shutdown. A load that fails stops the server without an exit snapshot and is the
    /// error returned. A shutdown during the load saves nothing either (the snapshot would hold
    /// part of the data), as Redis's, and leaves the load to end with the process.
    pub async fn load_and_run(
        self,
        handle_signals: bool,
        loaded: impl FnOnce(&Recovery) + Send + 'static,
    ) -> io::Result<()> {
        let shared = self.shared.clone();
        let config = &shared.config;
        let snapshot_bytes =
            std::fs::metadata(config.dir.join(crate::persist::snapshot::FILE_NAME))
                .map_or(0, |m| m.len());
        let log_bytes: u64 = crate::persist::aof::list_segments(&config.dir)
            .unwrap_or_default()
            .iter()
            .map(|(_, path)| std::fs::metadata(path).map_or(0, |m| m.len()))
            .sum();
        shared
            .loading
            .begin(snapshot_bytes, snapshot_bytes + log_bytes);
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let loader = shared.clone();
        // A thread of its own rather than the runtime's blocking pool: a shutdown during the
        // load ends the process without waiting for it.
        std::thread::Builder::new()
            .name("sieved-load".into())
            .spawn(move || {
                let _ = sender.send(load(&loader));
            })?;
        let load = PendingLoad {
            result: receiver,
            loaded: Box::new(loaded),
        };
        self.serve(handle_signals, Some(load)).await
    }

    /// Accepts connections until shutdown is requested, waits for them to finish, then writes
    /// the exit snapshot (unless told not to).
    pub async fn run(self, handle_signals: bool) -> io::Result<()> {
        self.serve(handle_signals, None).await
    }

    /// `run`, with the data still loading when `load` is given.
    async fn serve(self, handle_signals: bool, mut load: Option<PendingLoad>) -> io::Result<()> {
        let shared = self.shared;
        let connection_threads = ConnectionThreads::start(shared.config.threads)?;
        let mut tasks = JoinSet::new();
        background::start_serving_tasks(&shared, &mut tasks, self.metrics, handle_signals);
        if load.is_none() {
            background::start_data_tasks(&shared, &mut tasks);
        }
        let mut failed = None;
        loop {
            let (accepted, acceptor) = tokio::select! {
                accepted = self.listener.accept() => (accepted, None),
                accepted = accept_tls(self.tls.as_ref()) => accepted,
                request = shared.shutdown.asked() => {
                    if stops(&shared, request).await {
                        break;
                    }
                    continue;
                }
                result = loaded(&mut load) => {
                    let pending = load.take().expect("a load was pending");
                    match result {
                        Ok(recovery) => {
                            background::start_data_tasks(&shared, &mut tasks);
                            shared.loading.end();
                            (pending.loaded)(&recovery);
                        }
                        Err(error) => {
                            tracing::error!("{error}; the file is left as it is");
                            failed = Some(io::Error::other("the data could not be loaded"));
                            // No write ran while it loaded: nothing to save, nothing to wait for.
                            shared.shutdown.proceed();
                            break;
                        }
                    }
                    continue;
                }
            };
            match accepted {
                Ok((stream, addr)) => {
                    Stats::add(&shared.stats.connections_received, 1);
                    if let Some(refusal) = refusal(&shared, &addr) {
                        Stats::add(&shared.stats.rejected_connections, 1);
                        match acceptor {
                            None => tasks.spawn(refuse(stream, refusal)),
                            Some(acceptor) => tasks.spawn(refuse_tls(acceptor, stream, refusal)),
                        };
                        continue;
                    }
                    let stream = match stream.into_std() {
                        Ok(stream) => stream,
                        Err(error) => {
                            tracing::warn!(%addr, %error, "cannot hand the connection over");
                            continue;
                        }
                    };
                    let (thread, seat) = connection_threads.least_busy();
                    tasks.spawn_on(serve(shared.clone(), stream, addr, acceptor, seat), thread);
                }
                // Out of descriptors and similar: back off briefly instead of spinning.
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            while tasks.try_join_next().is_some() {}
        }
        drop(self.listener);
        drop(self.tls);
        tracing::info!("no longer accepting connections; draining");
        if tokio::time::timeout(DRAIN_TIMEOUT, async {
            while tasks.join_next().await.is_some() {}
        })
        .await
        .is_err()
        {
            tracing::warn!("connections still open after {DRAIN_TIMEOUT:?}; closing them");
            tasks.abort_all();
        }
        connection_threads.stop();
        // Everything appended reaches the file, synced, whatever the fsync policy.
        if let Some(aof) = shared.aof.as_ref() {
            aof.close();
        }
        failed.map_or(Ok(()), Err)
    }
}

/// Start-up's load on its thread, and what to tell once it is in.
struct PendingLoad {
    result: tokio::sync::oneshot::Receiver<Result<Recovery, LoadError>>,
    loaded: Box<dyn FnOnce(&Recovery) + Send>,
}

/// The pending load's outcome once it is there; never, when none is pending.
async fn loaded(load: &mut Option<PendingLoad>) -> Result<Recovery, LoadError> {
    let Some(load) = load.as_mut() else {
        return std::future::pending().await;
    };
    match (&mut load.result).await {
        Ok(result) => result,
        // The thread ended without an answer: it panicked, which its own message told.
        Err(_) => Err(LoadError {
            path: PathBuf::new(),
            offset: 0,
            reason: LoadFailure::Io(io::Error::other("the load stopped with a panic")),
        }),
    }
}

/// Loads the snapshot and replays the log after it (see `Server::load`), telling `Loading`
/// how far it is.
fn load(shared: &Arc<Shared>) -> Result<Recovery, LoadError> {
    let config = &shared.config;
    let options = recovery::Options {
        dir: &config.dir,
        fs: shared.fs.as_ref(),
        log_on: shared.aof.is_some(),
        load_damaged: config.aof_load_damaged,
    };
    let mut last_report = std::time::Instant::now();
    let mut applier = LoggedWrites::new(shared);
    let mut recovery = recovery::recover(
        &options,
        &shared.store,
        &mut applier,
        |what, done, total| {
            shared.loading.progress(what == "snapshot", done, total);
            #[cfg(debug_assertions)]
            hold_for_test();
            if last_report.elapsed() >= Duration::from_secs(1) {
                last_report = std::time::Instant::now();
                let percent = done as f64 * 100.0 / total.max(1) as f64;
                tracing::info!("loading the {what}: {done} of {total} bytes ({percent:.0}%)");
                // Progress buys more time from systemd's start timeout.
                crate::notify::tell(&format!(
                    "STATUS=loading the {what}: {percent:.0}%\nEXTEND_TIMEOUT_USEC=30000000"
                ));
            }
        },
    )?;
    shared.saver.set_first_segment(recovery.first_segment);
    if let Some(position) = recovery.position {
        let as_replica = shared.config.settings().replicaof.0.is_some();
        shared.replication.restore(position, as_replica, now_ms());
        tracing::info!(
            id = %position.id(),
            offset = position.offset,
            "replication history restored from the snapshot"
        );
    }
    if let Some(open) = recovery.append_to.take() {
        background::start_log_writer(shared, open).map_err(|e| LoadError {
            path: config.dir.clone(),
            offset: 0,
            reason: LoadFailure::LogWriter(e),
        })?;
    }
    Ok(recovery)
}

/// Debug builds only, for tests against the real binary: with `SIEVED_TEST_LOAD_HOLD` naming a
/// file, start-up's load stops at each step of its progress while that file exists, so that a
/// test sees the server loading for as long as it needs, whatever the machine's speed.
#[cfg(debug_assertions)]
fn hold_for_test() {
    static HOLD: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let hold = HOLD.get_or_init(|| std::env::var_os("SIEVED_TEST_LOAD_HOLD").map(PathBuf::from));
    if let Some(path) = hold {
        while path.exists() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared_with(requirepass: &str, protected_mode: &str) -> Shared {
        let config = Config::default_for_tests();
        config
            .set_many(&[
                (b"requirepass", requirepass.as_bytes()),
                (b"protected-mode", protected_mode.as_bytes()),
            ])
            .expect("settings");
        Shared::new(config, "127.0.0.1:0".parse().expect("address"))
    }

    #[test]
    fn protected_mode_refuses_remote_clients_without_a_password() {
        let remote: SocketAddr = "10.1.2.3:5000".parse().expect("address");
        let local: SocketAddr = "127.0.0.1:5000".parse().expect("address");
        let local6: SocketAddr = "[::1]:5000".parse().expect("address");
        let mapped_local: SocketAddr = "[::ffff:127.0.0.1]:5000".parse().expect("address");
        let mapped_remote: SocketAddr = "[::ffff:10.1.2.3]:5000".parse().expect("address");
        let open = shared_with("", "yes");
        assert_eq!(refusal(&open, &remote), Some(errors::DENIED));
        assert_eq!(refusal(&open, &local), None);
        assert_eq!(refusal(&open, &local6), None);
        assert_eq!(refusal(&open, &mapped_local), None);
        assert_eq!(refusal(&open, &mapped_remote), Some(errors::DENIED));
        assert_eq!(refusal(&shared_with("pw", "yes"), &remote), None);
        assert_eq!(refusal(&shared_with("", "no"), &remote), None);
    }
}
