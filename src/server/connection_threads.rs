//! The threads that serve client connections (`--threads`): one tokio runtime of one worker
//! each, and a connection stays on the thread it was handed to when it was accepted.
//!
//! Why not one runtime whose workers steal each other's tasks: a connection's task steps aside
//! before writing its replies (`client_io::WriteLast`), and in a runtime of several workers each
//! such step, like every task woken, wakes an idle worker to come and steal it. On this project's
//! two cores that hand-off made a pipelined BF.ADD cost 0.52 µs of server CPU instead of 0.44
//! with one worker. With one worker per runtime no task ever moves and no thread wakes another
//! on a request's path; the kernel spreads the threads over the cores.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::runtime::{Builder, Handle, Runtime};

pub(super) struct ConnectionThreads {
    threads: Vec<Thread>,
}

struct Thread {
    runtime: Runtime,
    /// Connections it serves now.
    connections: Arc<AtomicUsize>,
}

/// A connection's place on its thread, held by its task for as long as it lives.
pub(super) struct Seat(Arc<AtomicUsize>);

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ConnectionThreads {
    pub(super) fn start(count: usize) -> io::Result<ConnectionThreads> {
        let threads = (0..count.max(1))
            .map(|index| {
                let runtime = Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name(format!("sieved-conn-{index}"))
                    .enable_all()
                    .build()?;
                Ok(Thread {
                    runtime,
                    connections: Arc::new(AtomicUsize::new(0)),
                })
            })
            .collect::<io::Result<_>>()?;
        Ok(ConnectionThreads { threads })
    }

    /// The thread serving the fewest connections, and a seat on it. Only the accepting task
    /// adds connections, so the count it reads is not raced by another accept.
    pub(super) fn least_busy(&self) -> (&Handle, Seat) {
        let thread = self
            .threads
            .iter()
            .min_by_key(|thread| thread.connections.load(Ordering::Relaxed))
            .expect("at least one connection thread");
        thread.connections.fetch_add(1, Ordering::Relaxed);
        (
            thread.runtime.handle(),
            Seat(Arc::clone(&thread.connections)),
        )
    }

    /// Stops the threads without waiting for them: called once every connection has ended or
    /// been aborted, from within the accepting runtime, where a runtime may not block to stop.
    pub(super) fn stop(self) {
        for thread in self.threads {
            thread.runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_connection_goes_to_the_thread_with_the_fewest() {
        let threads = ConnectionThreads::start(2).expect("threads");
        let (_, first) = threads.least_busy();
        let (_, second) = threads.least_busy();
        assert!(!Arc::ptr_eq(&first.0, &second.0));
        let first_thread = Arc::clone(&first.0);
        drop(first);
        // The first thread has a free seat again; the second still serves its connection.
        let (_, third) = threads.least_busy();
        assert!(Arc::ptr_eq(&first_thread, &third.0));
        assert_eq!(second.0.load(Ordering::Relaxed), 1);
        drop((second, third));
        threads.stop();
    }
}
