use super::{connection, expiry, shutdown, Shared, Stats};
use crate::config::Config;
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

    /// Accepts connections until shutdown is requested, then waits for them to finish.
    pub async fn run(self, handle_signals: bool) -> io::Result<()> {
        let shared = self.shared;
        let mut tasks = JoinSet::new();
        tasks.spawn(expiry::run(shared.clone()));
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
        Ok(())
    }
}
