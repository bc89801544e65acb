//! Samples the commands-processed counter for INFO's instantaneous rate.

use super::Shared;
use crate::observe::SAMPLE_EVERY;
use crate::store::now_ms;
use std::sync::Arc;

pub(super) async fn run_sampler(shared: Arc<Shared>) {
    let mut interval = tokio::time::interval(SAMPLE_EVERY);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = shared.shutdown.requested() => return,
        }
        shared.stats.sample_ops(now_ms());
    }
}
