//! A command's outcome as commandstats counts it, in the tally of the connection that ran it:
//! its own commands (`client_io`), or a parked client's run again when a write served it
//! (`blocking`).

use crate::cmd::Outcome;
use crate::observe::{Call, Tally};

/// Counts a command's outcome in the connection's tally.
pub(super) fn count(tally: &mut Tally, outcome: Outcome, micros: u64) {
    let (index, call) = match outcome {
        Outcome::Unknown | Outcome::Queued | Outcome::Blocked => return,
        Outcome::Succeeded(index) => (index, Call::Succeeded),
        Outcome::Failed(index) => (index, Call::Failed),
        Outcome::Rejected(index) => (index, Call::Rejected),
    };
    tally.record(index, call, micros);
}
