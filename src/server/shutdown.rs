//! One shutdown signal for the whole server: SHUTDOWN, SIGTERM and SIGINT all raise it; the
//! listener stops accepting and every connection finishes the batch it is on, then closes.

use crate::cmd::ExitSave;
use std::sync::atomic::{AtomicU8, Ordering};
use tokio::sync::watch;

pub struct Shutdown {
    sender: watch::Sender<bool>,
    exit_save: AtomicU8,
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
            exit_save: AtomicU8::new(ExitSave::Default as u8),
        }
    }

    pub fn request(&self) {
        self.sender.send_replace(true);
    }

    pub fn request_with(&self, exit_save: ExitSave) {
        self.exit_save.store(exit_save as u8, Ordering::Relaxed);
        self.request();
    }

    pub fn exit_save(&self) -> ExitSave {
        match self.exit_save.load(Ordering::Relaxed) {
            1 => ExitSave::Save,
            2 => ExitSave::NoSave,
            _ => ExitSave::Default,
        }
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

/// Raises the shutdown signal on SIGTERM or SIGINT; returns once shutdown is requested.
pub async fn on_signals(shutdown: &Shutdown) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot install signal handlers; only SHUTDOWN will stop the server");
        return;
    };
    // Also ends when SHUTDOWN stopped the server, which otherwise waits for this task to drain.
    tokio::select! {
        _ = term.recv() => tracing::info!("received SIGTERM, shutting down"),
        _ = int.recv() => tracing::info!("received SIGINT, shutting down"),
        _ = shutdown.requested() => return,
    }
    shutdown.request();
}
