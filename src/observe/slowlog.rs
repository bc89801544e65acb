//! SLOWLOG: the most recent commands that ran longer than `slowlog-log-slower-than`, kept as
//! Redis keeps them. Only slow commands take its lock, so it costs nothing on the fast path.

use crate::protocol::Request;
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

/// Redis keeps at most this many arguments of a logged command...
const MAX_ARGS: usize = 32;
/// ...and at most this many bytes of each.
const MAX_ARG_BYTES: usize = 128;

#[derive(Debug, Clone)]
pub struct SlowEntry {
    pub id: u64,
    /// Unix seconds when the command finished.
    pub timestamp: u64,
    pub micros: u64,
    pub args: Vec<Vec<u8>>,
    pub client_addr: String,
    pub client_name: Vec<u8>,
}

#[derive(Default)]
struct Log {
    /// Ids keep counting across SLOWLOG RESET, as in Redis.
    next_id: u64,
    /// Newest first.
    entries: VecDeque<SlowEntry>,
}

#[derive(Default)]
pub struct SlowLog {
    log: Mutex<Log>,
}

/// The arguments as Redis logs them: past 32, the last slot says how many more there were;
/// past 128 bytes, an argument says how many more bytes it had.
fn logged_args(request: Request) -> Vec<Vec<u8>> {
    let total = request.len();
    let kept = if total > MAX_ARGS {
        MAX_ARGS - 1
    } else {
        total
    };
    let mut args: Vec<Vec<u8>> = request
        .args()
        .take(kept)
        .map(|arg| {
            if arg.len() > MAX_ARG_BYTES {
                let mut cut = arg[..MAX_ARG_BYTES].to_vec();
                cut.extend_from_slice(
                    format!("... ({} more bytes)", arg.len() - MAX_ARG_BYTES).as_bytes(),
                );
                cut
            } else {
                arg.to_vec()
            }
        })
        .collect();
    if total > kept {
        args.push(format!("... ({} more arguments)", total - kept).into_bytes());
    }
    args
}

impl SlowLog {
    fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn push(
        &self,
        request: Request,
        micros: u64,
        timestamp: u64,
        client: (String, Vec<u8>),
        max_len: u64,
    ) {
        let args = logged_args(request);
        let mut log = self.lock();
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(SlowEntry {
            id,
            timestamp,
            micros,
            args,
            client_addr: client.0,
            client_name: client.1,
        });
        log.entries
            .truncate(usize::try_from(max_len).unwrap_or(usize::MAX));
    }

    /// The newest `count` entries, newest first.
    pub fn newest(&self, count: usize) -> Vec<SlowEntry> {
        self.lock().entries.iter().take(count).cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn reset(&self) {
        self.lock().entries.clear();
    }
}
