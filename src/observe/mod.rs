//! What the server tells about itself: one `Report` rendered as INFO's text and as /metrics,
//! the per-command counts, the SLOWLOG and the server-wide counters beside it. Nothing here
//! touches a socket or a file; the server gathers the report and serves it.

mod clock;
mod commandstats;
mod info;
mod metrics;
mod report;
mod slowlog;
mod stats;

pub(crate) use clock::{CommandClock, CommandTime, Tick};
pub(crate) use commandstats::{Call, CommandStats, CommandTotals, Tally, LATENCY_BOUNDS_US};
pub(crate) use info::render as info;
pub(crate) use metrics::render as metrics;
pub(crate) use report::{
    AofState, CpuTimes, LoadingState, Memory, ReplicationState, Report, ScriptMemory, Snapshots,
    Timings,
};
pub(crate) use slowlog::SlowLog;
pub(crate) use stats::{Stats, SAMPLE_EVERY};
