//! One shutdown signal for the whole server: SHUTDOWN, SIGTERM and SIGINT all raise it; the
//! listener stops accepting and every connection finishes the batch it is on, then closes.

use tokio::sync::watch;

pub struct Shutdown {
    sender: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    pub fn new() -> Shutdown {
        Shutdown {
            sender: watch::channel(false).0,
        }
    }

    pub fn request(&self) {
        self.sender.send_replace(true);
    }

    pub fn is_requested(&self) -> bool {
        *self.sender.borrow()
    }

    /// Resolves once shutdown has been requested (at once if it already was).
    pub async fn requested(&self) {
        let mut receiver = self.sender.subscribe();
        // The sender lives as long as `self`, so waiting cannot fail.
        let _ = receiver.wait_for(|&requested| requested).await;
    }
}

/// Raises the shutdown signal on SIGTERM or SIGINT.
pub async fn on_signals(shutdown: &Shutdown) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot install signal handlers; only SHUTDOWN will stop the server");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("received SIGTERM, shutting down"),
        _ = int.recv() => tracing::info!("received SIGINT, shutting down"),
    }
    shutdown.request();
}
