//! Everything that runs beside the connections, started in one place. Each piece of work has a
//! name, ends when shutdown is requested (the log writer when it is closed, after the
//! connections), and shows its state in INFO server as `background_<name>`.

use super::saver::Keyspace;
use super::{expiry, metrics_endpoint, panics, replication, sampler, shutdown, Shared};
use crate::cmd::SaveError;
use crate::persist::aof::OpenSegment;
use crate::store::now_ms;
use std::io;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// The background work, in the order INFO lists it.
#[derive(Debug, Clone, Copy)]
pub enum Work {
    /// Thread `sieved-aof`: moves appended writes to the append-only file and syncs it.
    AofWriter,
    /// Thread `sieved-save`, while a snapshot or a compaction runs, at a lower priority.
    Save,
    /// Starts a background save when the save rules or the log's growth call for one.
    SaveSchedule,
    /// Removes expired keys nobody reads again, a few shards per tick.
    Expiry,
    /// Samples the command counter for INFO's instantaneous rate.
    OpsSampler,
    /// The Prometheus endpoint: serves while `metrics-addr` is set, and follows CONFIG SET of it.
    Metrics,
    /// SIGTERM and SIGINT, which request shutdown.
    Signals,
    /// Heartbeats to replicas, the backlog's lifetime, and the link to a configured primary.
    Replication,
}

const WORK: [(Work, &str); 8] = [
    (Work::AofWriter, "aof_writer"),
    (Work::Save, "save"),
    (Work::SaveSchedule, "save_schedule"),
    (Work::Expiry, "expiry"),
    (Work::OpsSampler, "ops_sampler"),
    (Work::Metrics, "metrics"),
    (Work::Signals, "signals"),
    (Work::Replication, "replication"),
];

/// 0, the default, is "off": not started.
const RUNNING: u8 = 1;
const STOPPED: u8 = 2;

/// What each piece of background work is doing.
#[derive(Default)]
pub struct Background {
    states: [AtomicU8; WORK.len()],
}

impl Background {
    /// Marks `work` running until the returned guard is dropped, when it ends however it ends.
    pub fn running(&self, work: Work) -> Running<'_> {
        self.states[work as usize].store(RUNNING, Ordering::Relaxed);
        Running {
            background: self,
            work,
        }
    }

    /// Each piece of work's name and state (`off` while it has not run), for INFO.
    pub fn states(&self) -> Vec<(&'static str, &'static str)> {
        WORK.iter()
            .map(|&(work, name)| {
                let state = match self.states[work as usize].load(Ordering::Relaxed) {
                    RUNNING => "running",
                    STOPPED => "stopped",
                    _ => "off",
                };
                (name, state)
            })
            .collect()
    }
}

pub struct Running<'a> {
    background: &'a Background,
    work: Work,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.background.states[self.work as usize].store(STOPPED, Ordering::Relaxed);
    }
}

/// Starts the append-only file's writer on its own thread: it blocks on the disk, which no
/// runtime worker should.
pub(super) fn start_log_writer(shared: &Arc<Shared>, open: OpenSegment) -> io::Result<()> {
    let Some(aof) = shared.aof.as_ref() else {
        return Ok(());
    };
    aof.will_run_writer(&open);
    let writer = shared.clone();
    std::thread::Builder::new()
        .name("sieved-aof".into())
        .spawn(move || {
            let _running = writer.background.running(Work::AofWriter);
            if let Some(aof) = writer.aof.as_ref() {
                on_thread(&writer, Work::AofWriter, || aof.run_writer(open));
            }
        })
        .map(|_| ())
}

/// Starts the tasks that run on the runtime beside the connections and work on the data:
/// once it is loaded, since they expire, save and replicate it. Each returns once shutdown is
/// requested.
pub(super) fn start_data_tasks(shared: &Arc<Shared>, tasks: &mut JoinSet<()>) {
    spawn(tasks, shared, Work::Expiry, expiry::run);
    spawn(tasks, shared, Work::SaveSchedule, run_save_schedule);
    spawn(tasks, shared, Work::OpsSampler, sampler::run_sampler);
    spawn(tasks, shared, Work::Replication, replication::run);
}

/// Starts the tasks that serve from the start, while the data loads too: the metrics endpoint
/// and the signals, which may stop a server that is still loading.
pub(super) fn start_serving_tasks(
    shared: &Arc<Shared>,
    tasks: &mut JoinSet<()>,
    metrics: Option<TcpListener>,
    handle_signals: bool,
) {
    spawn(tasks, shared, Work::Metrics, move |shared| {
        metrics_endpoint::serve(shared, metrics)
    });
    if handle_signals {
        spawn(
            tasks,
            shared,
            Work::Signals,
            |shared: Arc<Shared>| async move { shutdown::on_signals(&shared.shutdown).await },
        );
    }
}

fn spawn<F, Fut>(tasks: &mut JoinSet<()>, shared: &Arc<Shared>, work: Work, run: F)
where
    F: FnOnce(Arc<Shared>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let task = run(shared.clone());
    let shared = shared.clone();
    tasks.spawn(async move {
        let _running = shared.background.running(work);
        let consequence = format!("it has stopped (INFO background_{}:stopped)", name(work));
        panics::logged(&shared, name(work), &consequence, task).await
    });
}

fn name(work: Work) -> &'static str {
    WORK[work as usize].1
}

/// Runs a background thread's work, noting a panic (logged, counted) before the thread ends.
fn on_thread(shared: &Shared, work: Work, run: impl FnOnce()) {
    if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        let consequence = format!("it has stopped (INFO background_{}:stopped)", name(work));
        panics::note(
            shared,
            name(work),
            &panics::message(payload.as_ref()),
            &consequence,
        );
    }
}

/// Starts a snapshot (a compaction, with the log on) on a thread of its own and returns at once.
/// The thread runs at a lower priority than the workers: on a busy machine the snapshot takes
/// longer rather than taking CPU time from clients.
pub(super) fn start_save(shared: &Arc<Shared>) -> Result<(), SaveError> {
    shared.saver.claim()?;
    let worker = shared.clone();
    let started = std::thread::Builder::new()
        .name("sieved-save".into())
        .spawn(move || {
            let _running = worker.background.running(Work::Save);
            lower_this_threads_priority();
            on_thread(&worker, Work::Save, || {
                let _ = worker.saver.save_claimed(&worker, Keyspace::Changing);
            });
        });
    if let Err(error) = started {
        shared.saver.unclaim();
        return Err(SaveError::Failed(error));
    }
    Ok(())
}

/// Checks the save rules once a second and starts a background snapshot when one is due.
async fn run_save_schedule(shared: Arc<Shared>) {
    let mut interval = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = shared.shutdown.requested() => return,
        }
        if shared.saver.due(&shared, now_ms()) {
            let _ = start_save(&shared);
        }
    }
}

#[cfg(target_os = "linux")]
fn lower_this_threads_priority() {
    const NICENESS: libc::c_int = 10;
    // On Linux, 0 names the calling thread, not the whole process.
    // SAFETY: setpriority reads only its integer arguments.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, NICENESS);
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_this_threads_priority() {}
