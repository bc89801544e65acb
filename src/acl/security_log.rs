//! ACL LOG: the recent denials and failed logins, newest first, at most `acllog-max-len` of them.
//! A denial like one of the ten newest (same reason, context, object and user, within a minute)
//! bumps that entry's count instead of adding one, as in Redis. Times are Unix milliseconds the
//! caller passes in; the client's description is the caller's text (CLIENT LIST's line).

use std::collections::VecDeque;

/// Redis merges an entry into an earlier one up to this far apart.
const GROUPING_WINDOW_MS: i64 = 60_000;
/// How many of the newest entries a new one is compared with.
const GROUPING_SCAN: usize = 10;
/// `acllog-max-len`'s default.
pub const DEFAULT_MAX_LEN: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

impl From<super::Denial> for Reason {
    fn from(denial: super::Denial) -> Reason {
        match denial {
            super::Denial::Command => Reason::Command,
            super::Denial::Key { .. } => Reason::Key,
            super::Denial::Channel { .. } => Reason::Channel,
        }
    }
}

/// Where the denied command came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
    Module,
}

impl Context {
    pub fn as_str(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
            Context::Module => "module",
        }
    }
}

/// One entry, with the fields ACL LOG shows in its order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    /// The command's full name, the key or channel, or for a login the command's name as sent.
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    pub client_info: Vec<u8>,
    pub entry_id: u64,
    pub created_ms: i64,
    pub updated_ms: i64,
}

impl Entry {
    /// `age-seconds`: since the last update, as Redis computes it.
    pub fn age_seconds(&self, now_ms: i64) -> f64 {
        (now_ms - self.updated_ms) as f64 / 1000.0
    }
}

/// A new event for the log.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    pub reason: Reason,
    pub context: Context,
    pub object: &'a [u8],
    pub username: &'a [u8],
    pub client_info: &'a [u8],
    pub now_ms: i64,
}

#[derive(Debug)]
pub struct SecurityLog {
    entries: VecDeque<Entry>,
    max_len: usize,
    /// Entries created since start (RESET does not rewind it): the next entry's id.
    next_id: u64,
    /// INFO's acl_access_denied_{auth,cmd,key,channel}: every event counts, logged or not.
    denied: [u64; 4],
}

impl Default for SecurityLog {
    fn default() -> Self {
        SecurityLog::new(DEFAULT_MAX_LEN)
    }
}

impl SecurityLog {
    pub fn new(max_len: usize) -> SecurityLog {
        SecurityLog {
            entries: VecDeque::new(),
            max_len,
            next_id: 0,
            denied: [0; 4],
        }
    }

    /// `acllog-max-len`: as in Redis, a shorter limit trims the log at the next event.
    pub fn set_max_len(&mut self, max_len: usize) {
        self.max_len = max_len;
    }

    pub fn add(&mut self, event: Event) {
        self.denied[event.reason as usize] += 1;
        if self.max_len == 0 {
            self.entries.clear();
            return;
        }
        let similar = self.entries.iter().take(GROUPING_SCAN).position(|entry| {
            entry.reason == event.reason
                && entry.context == event.context
                && (event.now_ms - entry.updated_ms).abs() <= GROUPING_WINDOW_MS
                && entry.object == event.object
                && entry.username == event.username
        });
        if let Some(at) = similar {
            let mut entry = self.entries.remove(at).expect("found above");
            entry.count += 1;
            entry.updated_ms = event.now_ms;
            entry.client_info = event.client_info.to_vec();
            self.entries.push_front(entry);
            return;
        }
        self.entries.push_front(Entry {
            count: 1,
            reason: event.reason,
            context: event.context,
            object: event.object.to_vec(),
            username: event.username.to_vec(),
            client_info: event.client_info.to_vec(),
            entry_id: self.next_id,
            created_ms: event.now_ms,
            updated_ms: event.now_ms,
        });
        self.next_id += 1;
        self.entries.truncate(self.max_len);
    }

    /// `ACL LOG [count]`: the newest entries first (ten unless said; a negative count is 0).
    pub fn newest(&self, count: Option<i64>) -> impl Iterator<Item = &Entry> {
        let count = count.unwrap_or(10).max(0);
        self.entries
            .iter()
            .take(usize::try_from(count).unwrap_or(usize::MAX))
    }

    /// `ACL LOG RESET`.
    pub fn reset(&mut self) {
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many events of this reason happened since start, for INFO.
    pub fn denied(&self, reason: Reason) -> u64 {
        self.denied[reason as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(object: &'static [u8], now_ms: i64) -> Event<'static> {
        Event {
            reason: Reason::Key,
            context: Context::Toplevel,
            object,
            username: b"worker",
            client_info: b"id=1",
            now_ms,
        }
    }

    #[test]
    fn similar_events_within_a_minute_bump_one_entry() {
        let mut log = SecurityLog::default();
        log.add(event(b"a", 1_000));
        log.add(event(b"b", 2_000));
        log.add(event(b"a", 61_000));
        let entries: Vec<_> = log.newest(None).collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            (entries[0].object.as_slice(), entries[0].count),
            (b"a".as_slice(), 2)
        );
        assert_eq!(
            (
                entries[0].entry_id,
                entries[0].created_ms,
                entries[0].updated_ms
            ),
            (0, 1_000, 61_000)
        );
        assert_eq!(entries[0].age_seconds(62_500), 1.5);
        log.add(event(b"a", 121_001));
        assert_eq!(log.len(), 3);
        assert_eq!(log.newest(Some(1)).next().unwrap().entry_id, 2);
        assert_eq!(log.newest(Some(-1)).count(), 0);
        assert_eq!(log.denied(Reason::Key), 4);
    }

    #[test]
    fn the_log_keeps_at_most_its_length_and_ids_survive_reset() {
        let mut log = SecurityLog::new(2);
        for (i, object) in [b"a", b"b", b"c"].into_iter().enumerate() {
            log.add(event(object, i as i64 * 100_000));
        }
        assert_eq!(
            log.newest(None)
                .map(|e| e.object.clone())
                .collect::<Vec<_>>(),
            [b"c".to_vec(), b"b".to_vec()]
        );
        log.set_max_len(0);
        log.add(event(b"d", 1));
        assert!(log.is_empty());
        log.set_max_len(DEFAULT_MAX_LEN);
        log.reset();
        log.add(event(b"e", 1));
        assert_eq!(log.newest(None).next().unwrap().entry_id, 3);
    }
}
