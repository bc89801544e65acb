//! One shutdown sequence for the whole server, asked for by SHUTDOWN, SIGTERM or SIGINT. The
//! listener takes each request in turn: it pauses every command, writes the exit snapshot, and
//! only if that worked (or was not wanted, or FORCE said to go anyway) stops: the listener stops
//! accepting and every connection closes after the batch it is on. A shutdown whose save fails
//! is refused, as in Redis: the server goes on serving, and a SHUTDOWN that asked gets an error.

use crate::cmd::ExitSave;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Serving,
    /// A request waits for the listener to act on it.
    Asked,
    /// For good: everything winds down.
    Stopping,
}

#[derive(Debug, Clone, Copy)]
struct State {
    phase: Phase,
    /// Requests made, and requests answered (by a stop or a refusal).
    asked: u64,
    answered: u64,
    exit_save: ExitSave,
    force: bool,
}

pub struct Shutdown {
    state: watch::Sender<State>,
    /// The phase is Stopping, copied out of `state`: every batch of every connection checks it,
    /// and reading the watch takes a lock all of them would share.
    stopping: AtomicBool,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

/// What the listener is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub exit_save: ExitSave,
    /// Stop even if the exit snapshot fails.
    pub force: bool,
}

impl Shutdown {
    pub fn new() -> Shutdown {
        Shutdown {
            state: watch::channel(State {
                phase: Phase::Serving,
                asked: 0,
                answered: 0,
                exit_save: ExitSave::Default,
                force: false,
            })
            .0,
            stopping: AtomicBool::new(false),
        }
    }

    /// Asks for a shutdown; returns its number, which `answer` waits on.
    pub fn request_with(&self, exit_save: ExitSave, force: bool) -> u64 {
        let mut number = 0;
        self.state.send_modify(|state| {
            state.asked += 1;
            number = state.asked;
            if state.phase == Phase::Serving {
                state.phase = Phase::Asked;
            }
            state.exit_save = exit_save;
            state.force = force;
        });
        number
    }

    /// Resolves when a request waits to be acted on, and says what it asks.
    pub async fn asked(&self) -> Request {
        let mut receiver = self.state.subscribe();
        // The sender lives as long as `self`, so waiting cannot fail.
        let _ = receiver.wait_for(|state| state.phase == Phase::Asked).await;
        let state = *self.state.borrow();
        Request {
            exit_save: state.exit_save,
            force: state.force,
        }
    }

    /// The server stops: called with every command paused, so none runs after it.
    pub fn proceed(&self) {
        self.stopping.store(true, Ordering::Release);
        self.state.send_modify(|state| {
            state.phase = Phase::Stopping;
            state.answered = state.asked;
        });
    }

    /// The requests so far are refused: the server goes on serving.
    pub fn refuse(&self) {
        self.state.send_modify(|state| {
            state.phase = Phase::Serving;
            state.answered = state.asked;
        });
    }

    /// Whether the server is stopping for good.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Resolves once the server is stopping for good (at once if it already is).
    pub async fn requested(&self) {
        let mut receiver = self.state.subscribe();
        let _ = receiver
            .wait_for(|state| state.phase == Phase::Stopping)
            .await;
    }

    /// Waits until request `number` is answered: true if the server is stopping, false if the
    /// shutdown was refused.
    pub async fn answer(&self, number: u64) -> bool {
        let mut receiver = self.state.subscribe();
        let _ = receiver
            .wait_for(|state| state.answered >= number || state.phase == Phase::Stopping)
            .await;
        self.is_stopping()
    }
}

/// Asks for a shutdown on each SIGTERM or SIGINT, until the server stops. A shutdown refused
/// (its exit snapshot failed) leaves the server running, as Redis does, and a later signal
/// tries again.
pub(super) async fn on_signals(shutdown: &Shutdown) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot install signal handlers; only SHUTDOWN will stop the server");
        return;
    };
    loop {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
            _ = shutdown.requested() => return,
        };
        tracing::info!("received {name}, shutting down");
        let number = shutdown.request_with(ExitSave::Default, false);
        if !shutdown.answer(number).await {
            tracing::error!(
                "{name} received but errors trying to shut down the server; still serving \
                 (check the logs above)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refused_shutdown_answers_its_request_and_serving_goes_on() {
        let shutdown = Shutdown::new();
        let first = shutdown.request_with(ExitSave::Save, false);
        assert_eq!(shutdown.asked().await.exit_save, ExitSave::Save);
        shutdown.refuse();
        assert!(!shutdown.answer(first).await);
        assert!(!shutdown.is_stopping());
        let second = shutdown.request_with(ExitSave::NoSave, true);
        let request = shutdown.asked().await;
        assert!(request.force);
        shutdown.proceed();
        assert!(shutdown.answer(second).await);
        shutdown.requested().await;
    }
}
