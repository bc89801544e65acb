//! Panics in the server's tasks. A panic is a bug, but one task's bug must not leave the server
//! pretending: a connection whose task panicked is closed, a replica's link is marked down and
//! tried again, a background task shows `stopped`; and each is logged as an error and counted
//! in INFO stats (`panicked_tasks`), where a runtime would have dropped the task with a line on
//! stderr and nothing else.

use super::Shared;
use crate::observe::Stats;
use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future whose panic, where it is polled, becomes `Err(message)`: the task polling it goes
/// on. What the future held across its awaits (its socket, say) is dropped as the panic
/// unwinds, as when a runtime drops a panicked task.
pub(crate) struct Caught<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Caught<F> {
    pub(crate) fn new(future: F) -> Caught<F> {
        Caught {
            inner: Box::pin(future),
        }
    }
}

impl<F: Future> Future for Caught<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.inner.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(payload) => Poll::Ready(Err(message(payload.as_ref()))),
        }
    }
}

/// What `panic!` was given, when it was text.
pub(crate) fn message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// Logs a panic of `task` and counts it; `consequence` says what became of its work.
pub(crate) fn note(shared: &Shared, task: &str, panic: &str, consequence: &str) {
    Stats::add(&shared.stats.panicked_tasks, 1);
    tracing::error!(task, panic, "a task panicked: {consequence}");
}

/// Runs a task to its end, noting a panic (see `note`); for tasks whose end is the whole of
/// what a panic should do (a connection, closed by its task's end).
pub(crate) async fn logged(
    shared: &Shared,
    task: &str,
    consequence: &str,
    future: impl Future<Output = ()>,
) {
    if let Err(panic) = Caught::new(future).await {
        note(shared, task, &panic, consequence);
    }
}

/// Debug builds only, for tests against the real binary: with `SIEVED_TEST_PANIC` set to
/// `<site>:<bytes>`, the task at `site` panics when what it handles contains those bytes
/// (`apply`: a replica applying its primary's record; `feed`: a primary streaming to a
/// replica), or whatever it handles when the bytes are empty.
#[cfg(debug_assertions)]
pub(crate) fn test_panic(site: &str, handled: &[u8]) {
    static WANTED: std::sync::OnceLock<Option<(String, Vec<u8>)>> = std::sync::OnceLock::new();
    let wanted = WANTED.get_or_init(|| {
        let value = std::env::var("SIEVED_TEST_PANIC").ok()?;
        let (site, bytes) = value.split_once(':')?;
        Some((site.to_string(), bytes.as_bytes().to_vec()))
    });
    if let Some((wanted_site, bytes)) = wanted {
        let found = bytes.is_empty() || handled.windows(bytes.len()).any(|w| w == bytes);
        if wanted_site == site && found {
            panic!("SIEVED_TEST_PANIC at {site}");
        }
    }
}
