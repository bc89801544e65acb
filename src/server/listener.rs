use super::{connection, expiry, saver, shutdown, ExitSave, Shared, Stats};
use crate::config::Config;
use crate::persist::load::{self, LoadError, LoadLimits, LoadReport};
use crate::store::now_ms;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// How long connections get to finish their current batch after shutdown is requested.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Server {
    shared: Arc<Shared>,
    listener: TcpListener,
}

impl Server {
    pub async fn bind(config: Config) -> io::Result<Server> {
        std::fs::create_dir_all(&config.dir)?;
        let listener = TcpListener::bind((config.bind.as_str(), config.port)).await?;
        let addr = listener.local_addr()?;
        Ok(Server {
            shared: Arc::new(Shared::new(config, addr)),
            listener,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// Loads the snapshot in the data directory, if there is one, before any client is served.
    /// Progress is logged about once a second.
    pub fn load(&self) -> Result<Option<LoadReport>, LoadError> {
        let settings = self.shared.config.settings();
        let limits = LoadLimits {
            max_filter_bytes: settings.max_filter_memory,
            max_string_bytes: settings.proto_max_bulk_len,
        };
        let mut last_report = std::time::Instant::now();
        load::load(
            &self.shared.store,
            &self.shared.config.dir,
            limits,
            |done, total| {
                if last_report.elapsed() >= Duration::from_secs(1) {
                    last_report = std::time::Instant::now();
                    tracing::info!(
                        "loading: {done} of {total} bytes ({:.0}%)",
                        done as f64 * 100.0 / total.max(1) as f64
                    );
                }
            },
        )
    }

    /// Accepts connections until shutdown is requested, waits for them to finish, then writes
    /// the exit snapshot (unless told not to).
    pub async fn run(self, handle_signals: bool) -> io::Result<()> {
        let shared = self.shared;
        let mut tasks = JoinSet::new();
        tasks.spawn(expiry::run(shared.clone()));
        tasks.spawn(saver::run_schedule(shared.clone()));
        if handle_signals {
            let shared = shared.clone();
            tasks.spawn(async move { shutdown::on_signals(&shared.shutdown).await });
        }
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                _ = shared.shutdown.requested() => break,
            };
            match accepted {
                Ok((stream, addr)) => {
                    Stats::add(&shared.stats.connections_received, 1);
                    let shared = shared.clone();
                    tasks.spawn(async move {
                        let local = stream.local_addr().unwrap_or(addr);
                        let registration = shared.clients.register(addr, local, now_ms());
                        let info = registration.info.clone();
                        if let Err(error) = connection::serve(&shared, stream, info).await {
                            tracing::debug!(%addr, %error, "connection closed with an error");
                        }
                    });
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
        let save = match shared.shutdown.exit_save() {
            ExitSave::Save => true,
            ExitSave::NoSave => false,
            ExitSave::Default => !shared.config.settings().save.is_empty(),
        };
        if save {
            saver::save_at_exit(&shared).await?;
        }
        Ok(())
    }
}
