//! Periodic samples for INFO: the counters' instantaneous rates and the keyspace's access clock,
//! ten times a second as Redis's `serverCron` takes them; and the process's CPU time.

use super::Shared;
use crate::observe::{CpuTimes, SAMPLE_EVERY};
use crate::store::now_ms;
use std::sync::Arc;

pub(super) async fn run_sampler(shared: Arc<Shared>) {
    let mut interval = tokio::time::interval(SAMPLE_EVERY);
    let samples_a_second = (1000 / SAMPLE_EVERY.as_millis()).max(1);
    for sample in 1u128.. {
        tokio::select! {
            _ = interval.tick() => {}
            _ = shared.shutdown.requested() => return,
        }
        let now = now_ms();
        shared.stats.sample_ops(now);
        shared.store.tick(now);
        if sample % samples_a_second == 0 {
            shared.clock.check_source();
        }
    }
}

/// CPU time of the process and of the children it waited for, as INFO cpu reports it.
pub(super) fn cpu_times() -> CpuTimes {
    let usage = |who| {
        // SAFETY: an all-zero rusage is a valid value of the plain C struct getrusage fills.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: getrusage writes one rusage into the struct it is given, which outlives the
        // call; on failure it is left zeroed.
        unsafe { libc::getrusage(who, &mut usage) };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        (seconds(usage.ru_utime), seconds(usage.ru_stime))
    };
    let (user, sys) = usage(libc::RUSAGE_SELF);
    let (user_children, sys_children) = usage(libc::RUSAGE_CHILDREN);
    CpuTimes {
        user,
        sys,
        user_children,
        sys_children,
    }
}
