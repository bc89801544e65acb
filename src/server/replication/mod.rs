//! Replication, as Redis does it: a primary streams its write records to replicas, which apply
//! them. This module holds the state both ends share (the role, the history IDs, the stream and
//! its backlog, the replicas and their acknowledgements) and renders INFO replication;
//! `primary.rs` serves a replica's PSYNC, `replica.rs` runs the link to a primary.

#[cfg(target_os = "linux")]
mod forked;
mod primary;
mod replica;
mod stream;

pub(in crate::server) use primary::serve as serve_replica;
pub(in crate::server) use replica::follow;
pub(crate) use stream::{Behind, Stream};

use crate::cmd::errors;
use crate::config::Settings;
use crate::persist::aof::format;
use crate::persist::snapshot::ReplPosition;
use crate::protocol::Request;
use crate::server::Shared;
use crate::store::now_ms;
use std::collections::hash_map::RandomState;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::watch;

/// Redis's size of an ID: 40 hexadecimal characters.
pub(crate) const ID_LEN: usize = 40;

/// 40 random hexadecimal characters, as Redis's run IDs and replication IDs. Each call draws new
/// keys from the operating system (through `RandomState`), so two servers started in the same
/// instant still differ.
pub(crate) fn random_id() -> String {
    let mut id = String::with_capacity(ID_LEN + 8);
    while id.len() < ID_LEN {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos()),
        );
        id.push_str(&format!("{:016x}", hasher.finish()));
    }
    id.truncate(ID_LEN);
    id
}

/// The second ID of a server that never was a replica, as Redis prints it.
pub(crate) const NO_ID: &str = "0000000000000000000000000000000000000000";

/// Which history this server's stream continues, and which it continued before.
struct Ids {
    replid: String,
    replid2: String,
    /// The first offset that is not `replid2`'s; -1 for none.
    second_offset: i64,
}

/// What a replica's link to its primary is doing, as INFO and ROLE name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkState {
    Connecting,
    Handshake,
    Sync,
    Connected,
}

impl LinkState {
    /// ROLE's name for the state.
    pub(crate) fn role_name(self) -> &'static str {
        match self {
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Sync => "sync",
            LinkState::Connected => "connected",
        }
    }
}

/// A replica's primary, and how the link to it stands.
#[derive(Debug, Clone)]
pub(crate) struct Primary {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) state: LinkState,
    /// When the link last received anything, Unix milliseconds.
    pub(crate) last_io_ms: u64,
    /// When the link went down (or the server became a replica), Unix milliseconds.
    pub(crate) down_since_ms: u64,
    /// Why the last attempt failed, for INFO.
    pub(crate) last_error: Option<String>,
    /// How long the link waits before its next attempt, for INFO.
    pub(crate) retry_delay_ms: u64,
    /// The full sync's payload as it arrives: its size (-1 while unknown, as Redis shows the
    /// diskless form's) and the bytes received; None outside a transfer.
    pub(crate) transfer: Option<(i64, u64)>,
}

/// A replica this server streams to.
#[derive(Debug, Clone)]
pub(crate) struct Follower {
    pub(crate) ip: String,
    pub(crate) port: u16,
    /// Redis's names: `wait_bgsave` (the cut), `send_bulk` (the snapshot), `online`.
    pub(crate) state: &'static str,
    /// The offset the replica last acknowledged; 0 until it does, as Redis shows it.
    pub(crate) acked: u64,
    /// When it last acknowledged, Unix milliseconds; None until its first `REPLCONF ACK` on
    /// this link. A replica sends one only once it holds the data (after a full sync, once it
    /// has loaded the payload and swapped it in), so until then WAIT and min-replicas-to-write
    /// do not count it, whatever was sent to it.
    pub(crate) last_ack_ms: Option<u64>,
    /// When the primary took the replica on, Unix milliseconds: its lag until its first ACK.
    pub(crate) since_ms: u64,
}

impl Follower {
    /// Seconds since the replica last acknowledged (or since it was taken on, before that).
    fn lag_secs(&self, now: u64) -> u64 {
        now.saturating_sub(self.last_ack_ms.unwrap_or(self.since_ms)) / 1000
    }

    /// Whether WAIT and min-replicas-to-write may count it: online, and heard from.
    fn counts(&self) -> bool {
        self.state == "online" && self.last_ack_ms.is_some()
    }
}

/// The replication side of the server: its role, its stream, its replicas.
pub(crate) struct Replication {
    pub(crate) stream: Stream,
    ids: Mutex<Ids>,
    /// Some while this server is a replica.
    primary: Mutex<Option<Primary>>,
    /// Mirrors `primary.is_some()`, read by every command.
    replica: AtomicBool,
    /// Bumped whenever REPLICAOF changes the primary (under `primary`'s lock and
    /// `link_gate`): a link whose number is old stops, and nothing it does takes effect.
    generation: AtomicU64,
    /// Held while a link makes anything take effect (a record applied, a data set swapped in,
    /// the history it continues), and by REPLICAOF while it changes the primary: once
    /// REPLICAOF has answered, nothing of the link it ended can change this server.
    link_gate: Mutex<()>,
    /// The current link's task, aborted by REPLICAOF: its socket and its transfer end at once.
    link_task: Mutex<Option<tokio::task::AbortHandle>>,
    followers: Mutex<BTreeMap<u64, Follower>>,
    /// Bumped on every acknowledgement, for WAIT.
    acks: watch::Sender<u64>,
    pub(crate) sync_full: AtomicU64,
    pub(crate) sync_partial_ok: AtomicU64,
    pub(crate) sync_partial_err: AtomicU64,
    /// The settings every command's admission reads, copied out of the configuration (see
    /// `apply_settings`) so that reading them takes no lock.
    read_only: AtomicBool,
    serve_stale: AtomicBool,
    min_replicas: AtomicU64,
    max_lag_secs: AtomicU64,
    /// Whether this server's history is worth offering a primary in PSYNC: not when it
    /// started as a replica and has not synced yet (it then asks `PSYNC ? -1`, as Redis),
    /// unless its snapshot named the position its data holds (`restore`).
    pub(crate) offers_history: AtomicBool,
    /// Whether start-up restored the history from the snapshot (`restore`).
    restored: AtomicBool,
    /// On a replica, the primary's published clock (see `published_clock_ms`) as the newest
    /// control record applied (a heartbeat PING, a GETACK) carries it; 0 until the link's
    /// first. Write records do not move it: their times are their batches' clocks, and a batch
    /// that began earlier may log after one that began later.
    pub(crate) primary_clock_ms: AtomicU64,
    /// On a primary, a time no batch still running (or to come) began before: what the expiry
    /// sweeper removes keys and ages windowed filters by, and the time control records carry
    /// to replicas, which sweep by it too. A key removed by it is one every write still to
    /// come would find expired anyway, here and on every replica, so removing it (which is
    /// logged nowhere) changes nothing any write sees. `publish_clock` moves it.
    published_clock_ms: AtomicU64,
    /// The published clock the last control record carried.
    announced_clock_ms: AtomicU64,
    /// When the last replica went away, Unix milliseconds (for `repl-backlog-ttl`); 0 while
    /// any is connected.
    pub(crate) alone_since_ms: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Replication {
    pub(crate) fn new(backlog_size: u64) -> Replication {
        Replication {
            stream: Stream::new(backlog_size),
            ids: Mutex::new(Ids {
                replid: random_id(),
                replid2: NO_ID.to_string(),
                second_offset: -1,
            }),
            primary: Mutex::new(None),
            replica: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            link_gate: Mutex::new(()),
            link_task: Mutex::new(None),
            followers: Mutex::new(BTreeMap::new()),
            acks: watch::channel(0).0,
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
            alone_since_ms: AtomicU64::new(0),
            primary_clock_ms: AtomicU64::new(0),
            published_clock_ms: AtomicU64::new(0),
            announced_clock_ms: AtomicU64::new(0),
            offers_history: AtomicBool::new(true),
            restored: AtomicBool::new(false),
            read_only: AtomicBool::new(true),
            serve_stale: AtomicBool::new(true),
            min_replicas: AtomicU64::new(0),
            max_lag_secs: AtomicU64::new(10),
        }
    }

    /// Takes the settings replication reads on every command, and the backlog's size.
    pub(crate) fn apply_settings(&self, settings: &Settings) {
        self.read_only
            .store(settings.replica_read_only, Ordering::Relaxed);
        self.serve_stale
            .store(settings.replica_serve_stale_data, Ordering::Relaxed);
        self.min_replicas
            .store(settings.min_replicas_to_write, Ordering::Relaxed);
        self.max_lag_secs
            .store(settings.min_replicas_max_lag, Ordering::Relaxed);
        self.stream.set_backlog_size(settings.repl_backlog_size);
    }

    /// See `cmd::Server::role_refusal`; in Redis's order.
    pub(crate) fn refusal(&self, writes: bool, runs_when_stale: bool) -> Option<&'static str> {
        if self.is_replica() {
            if writes && self.read_only.load(Ordering::Relaxed) {
                return Some(errors::READONLY);
            }
            if !runs_when_stale && !self.serve_stale.load(Ordering::Relaxed) && !self.link_up() {
                return Some(errors::MASTERDOWN);
            }
            return None;
        }
        let wanted = self.min_replicas.load(Ordering::Relaxed);
        let lag = self.max_lag_secs.load(Ordering::Relaxed);
        (writes && wanted > 0 && self.good_followers(now_ms(), lag) < wanted)
            .then_some(errors::NOREPLICAS)
    }

    pub(crate) fn is_replica(&self) -> bool {
        self.replica.load(Ordering::Acquire)
    }

    pub(crate) fn replid(&self) -> String {
        lock(&self.ids).replid.clone()
    }

    /// Whether a replica asking to continue `replid` from `offset` may: the offset lies in
    /// this server's history under that ID (Redis's PSYNC2 rule).
    pub(crate) fn continues(&self, replid: &str, offset: u64) -> bool {
        let ids = lock(&self.ids);
        replid == ids.replid
            || (replid == ids.replid2
                && i64::try_from(offset).is_ok_and(|o| o <= ids.second_offset))
    }

    /// Where the history named `replid` ends in this server's stream: None while it is the
    /// current one; the offset at which its ID changed for the second ID; 0 for one this
    /// server no longer knows. A replica fed under an ID is never sent a byte past its end, so
    /// that it names no byte of another history by that ID.
    pub(crate) fn history_end(&self, replid: &str) -> Option<u64> {
        let ids = lock(&self.ids);
        if ids.replid == replid {
            return None;
        }
        Some(match ids.replid2 == replid {
            true => u64::try_from(ids.second_offset - 1).unwrap_or(0),
            false => 0,
        })
    }

    /// A replica promoted, or a primary whose stream the replicas cannot continue: a new
    /// history, which remembers the old one up to here so that replicas of the old primary
    /// continue partially.
    pub(crate) fn start_new_history(&self) {
        self.adopt_history(&random_id());
    }

    /// A replica that synced or continued from a primary: its history is the primary's.
    /// Returns whether that changed its ID.
    pub(crate) fn adopt_history(&self, replid: &str) -> bool {
        let mut ids = lock(&self.ids);
        if ids.replid == replid {
            return false;
        }
        let old = std::mem::replace(&mut ids.replid, replid.to_string());
        ids.replid2 = old;
        ids.second_offset = self.stream.offset() as i64 + 1;
        true
    }

    /// Where this server's data stands in its history, for a snapshot taken while no write
    /// runs: None while that is in doubt (a replica that has not synced, or whose link failed
    /// part-way through a record) or while the stream records nothing (a primary that never had
    /// a replica, whose ID no one has seen).
    pub(crate) fn position(&self) -> Option<ReplPosition> {
        if !self.offers_history.load(Ordering::Relaxed) || !self.stream.is_active() {
            return None;
        }
        let ids = lock(&self.ids);
        ReplPosition::new(&ids.replid, self.stream.offset())
    }

    /// Start-up, from the position the loaded data holds exactly (see `persist::recovery`), as
    /// Redis 7 restores it from its RDB's `repl-id` and `repl-offset`. A replica continues that
    /// history: its first PSYNC asks for the byte after it, and a primary whose backlog still
    /// holds it continues partially. A primary starts a new history at that offset and keeps
    /// the old ID as its second, valid up to there, with a backlog from there: its replicas at
    /// that offset continue partially. One whose data is behind what others saw under the old
    /// ID (a log that lost its tail) has a smaller offset than theirs, so they sync in full.
    pub(crate) fn restore(&self, position: ReplPosition, as_replica: bool, now: u64) {
        let id = position.id();
        let mut ids = lock(&self.ids);
        match as_replica {
            true => {
                ids.replid = id;
                ids.replid2 = NO_ID.to_string();
                ids.second_offset = -1;
            }
            false => {
                ids.replid = random_id();
                ids.replid2 = id;
                ids.second_offset = position.offset as i64 + 1;
                self.alone_since_ms.store(now, Ordering::Relaxed);
            }
        }
        drop(ids);
        self.stream.restart_at(position.offset);
        self.offers_history.store(true, Ordering::Relaxed);
        self.restored.store(true, Ordering::Relaxed);
    }

    /// A replica after a full sync: nothing before it is shared with anyone.
    pub(crate) fn reset_history(&self, replid: &str) {
        let mut ids = lock(&self.ids);
        ids.replid = replid.to_string();
        ids.replid2 = NO_ID.to_string();
        ids.second_offset = -1;
    }

    pub(crate) fn primary(&self) -> Option<Primary> {
        lock(&self.primary).clone()
    }

    /// Sets or clears the primary, ending the link to the previous one: from its return on,
    /// nothing that link started (a transfer, a load, a swap, a record) takes effect, and its
    /// task is aborted. Returns the new link's generation number. The caller (REPLICAOF) may
    /// hold a batch's isolation: a link takes the gate only inside one, so it never waits
    /// for it while holding the gate.
    pub(crate) fn set_primary(&self, primary: Option<(String, u16)>, now: u64) -> u64 {
        let _gate = lock(&self.link_gate);
        let mut current = lock(&self.primary);
        *current = primary.map(|(host, port)| Primary {
            host,
            port,
            state: LinkState::Connecting,
            last_io_ms: 0,
            down_since_ms: now,
            last_error: None,
            retry_delay_ms: 0,
            transfer: None,
        });
        self.replica.store(current.is_some(), Ordering::Release);
        if let Some(task) = lock(&self.link_task).take() {
            task.abort();
        }
        self.generation.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Notes the task of link `generation`, for the REPLICAOF that ends it; a link already
    /// ended meanwhile is aborted at once.
    pub(crate) fn link_started(&self, generation: u64, task: tokio::task::AbortHandle) {
        let mut current = lock(&self.link_task);
        match self.is_current(generation) {
            true => *current = Some(task),
            false => task.abort(),
        }
    }

    /// Runs `effect` if link `generation` is still the current one, under the gate that
    /// REPLICAOF takes: None, and nothing done, for a link REPLICAOF ended. Callers take a
    /// batch's isolation (if any) before, never inside.
    pub(crate) fn if_current<T>(&self, generation: u64, effect: impl FnOnce() -> T) -> Option<T> {
        let _gate = lock(&self.link_gate);
        self.is_current(generation).then(effect)
    }

    /// The time the expiry sweeper removes keys and ages windowed filters by: a primary's
    /// published clock, or a replica's primary's as its control records carry it.
    pub(crate) fn expiry_clock(&self) -> u64 {
        match self.is_replica() {
            true => self.primary_clock_ms.load(Ordering::Relaxed),
            false => self.published_clock_ms.load(Ordering::Relaxed),
        }
    }

    /// Publishes `now`, read before every batch then in progress had ended (the caller waits
    /// for them: `Isolation::wait_for_batches_in_progress`): the batches still running, and
    /// all to come, began after it.
    pub(crate) fn publish_clock(&self, now: u64) {
        self.published_clock_ms.fetch_max(now, Ordering::Relaxed);
    }

    /// Sends replicas the published clock (a PING, as a heartbeat) if it moved since a control
    /// record last carried it: the sweeper calls it once it removed or aged something by that
    /// clock, so that replicas do the same within a sweep rather than a heartbeat period.
    pub(crate) fn announce_clock(&self) {
        let published = self.published_clock_ms.load(Ordering::Relaxed);
        if self.announced_clock_ms.load(Ordering::Relaxed) < published {
            self.append_control(&[b"PING"], published);
        }
    }

    /// Whether a link started as `generation` is still wanted.
    pub(crate) fn is_current(&self, generation: u64) -> bool {
        self.generation.load(Ordering::Acquire) == generation
    }

    /// Updates the link's state, if `generation` is still the current one (checked under the
    /// lock REPLICAOF changes it under, so an ended link never writes its successor's state).
    pub(crate) fn update_link(&self, generation: u64, update: impl FnOnce(&mut Primary)) -> bool {
        let mut current = lock(&self.primary);
        if self.generation.load(Ordering::Acquire) != generation {
            return false;
        }
        match current.as_mut() {
            Some(primary) => {
                update(primary);
                true
            }
            None => false,
        }
    }

    /// Whether a replica's link is up (a primary has no link to be down).
    pub(crate) fn link_up(&self) -> bool {
        lock(&self.primary)
            .as_ref()
            .is_none_or(|p| p.state == LinkState::Connected)
    }

    pub(crate) fn add_follower(&self, id: u64, follower: Follower) {
        lock(&self.followers).insert(id, follower);
        self.alone_since_ms.store(0, Ordering::Relaxed);
    }

    pub(crate) fn update_follower(&self, id: u64, update: impl FnOnce(&mut Follower)) {
        if let Some(follower) = lock(&self.followers).get_mut(&id) {
            update(follower);
        }
    }

    pub(crate) fn acknowledged(&self, id: u64, offset: u64, now: u64) {
        self.update_follower(id, |follower| {
            follower.acked = follower.acked.max(offset);
            follower.last_ack_ms = Some(now);
        });
        self.acks.send_modify(|n| *n += 1);
    }

    pub(crate) fn remove_follower(&self, id: u64, now: u64) {
        let mut followers = lock(&self.followers);
        followers.remove(&id);
        if followers.is_empty() {
            self.alone_since_ms.store(now, Ordering::Relaxed);
        }
        drop(followers);
        self.stream.remove_reader(id);
        self.acks.send_modify(|n| *n += 1);
    }

    pub(crate) fn followers(&self) -> Vec<Follower> {
        lock(&self.followers).values().cloned().collect()
    }

    /// Replicas online that acknowledged at least `offset` themselves (WAIT's count).
    pub(crate) fn acked_at_least(&self, offset: u64) -> usize {
        lock(&self.followers)
            .values()
            .filter(|f| f.counts() && f.acked >= offset)
            .count()
    }

    /// Replicas online whose last acknowledgement is at most `max_lag_secs` old
    /// (min-replicas-to-write's count). Redis counts a replica from the end of its transfer;
    /// here only from its first ACK, sent once it has loaded what it was sent, so that a
    /// write admitted by the setting is never on a primary alone.
    pub(crate) fn good_followers(&self, now: u64, max_lag_secs: u64) -> u64 {
        lock(&self.followers)
            .values()
            .filter(|f| f.counts() && f.lag_secs(now) <= max_lag_secs)
            .count() as u64
    }

    /// WAIT: until `wanted` replicas acknowledged `offset` or `deadline` passes (never, when
    /// None); returns how many did.
    pub(crate) async fn wait_for_acks(
        &self,
        offset: u64,
        wanted: usize,
        deadline: Option<tokio::time::Instant>,
    ) -> usize {
        let mut acks = self.acks.subscribe();
        loop {
            let acked = self.acked_at_least(offset);
            if acked >= wanted {
                return acked;
            }
            let changed = acks.changed();
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, changed).await.is_err() {
                        return self.acked_at_least(offset);
                    }
                }
                None => {
                    let _ = changed.await;
                }
            }
        }
    }

    /// Appends a record that is no write (a heartbeat PING, a REPLCONF GETACK) to the stream,
    /// if anyone reads it: replicas see it at its place, and it counts in the offsets. Its time
    /// is never past the published clock, whatever `now` the caller read: replicas sweep by it.
    pub(crate) fn append_control(&self, args: &[&[u8]], now: u64) {
        if !self.stream.is_active() || self.is_replica() || lock(&self.followers).is_empty() {
            return;
        }
        let now = now.min(self.published_clock_ms.load(Ordering::Relaxed));
        self.announced_clock_ms.fetch_max(now, Ordering::Relaxed);
        let mut body = Vec::new();
        let mut ranges = Vec::new();
        for arg in args {
            ranges.push(body.len()..body.len() + arg.len());
            body.extend_from_slice(arg);
        }
        let mut record = Vec::new();
        format::encode_single(&mut record, now, 0, &Request::new(&body, &ranges));
        self.stream.append(&record);
    }

    /// Frees the backlog of a primary that had no replica for `repl-backlog-ttl`, as Redis: its
    /// history then starts anew, so that no replica could continue from what was freed.
    fn free_backlog(&self) {
        self.stream.deactivate();
        self.reset_history(&random_id());
    }

    /// INFO replication's fields after `role`, as Redis prints them.
    pub(crate) fn info(&self, now: u64, settings: &Settings) -> String {
        let mut out = String::new();
        if let Some(primary) = self.primary() {
            let up = primary.state == LinkState::Connected;
            let offset = self.stream.offset();
            let _ = write!(
                out,
                "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\n\
                 master_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\n\
                 slave_read_repl_offset:{offset}\r\nslave_repl_offset:{offset}\r\n",
                primary.host,
                primary.port,
                if up { "up" } else { "down" },
                match primary.last_io_ms {
                    0 => -1,
                    at => (now.saturating_sub(at) / 1000) as i64,
                },
                u8::from(primary.state == LinkState::Sync),
            );
            if let (LinkState::Sync, Some((total, read))) = (primary.state, primary.transfer) {
                let left = if total < 0 { -1 } else { total - read as i64 };
                let perc = if total > 0 {
                    read as f64 * 100.0 / total as f64
                } else {
                    0.0
                };
                let _ = write!(
                    out,
                    "master_sync_total_bytes:{total}\r\nmaster_sync_read_bytes:{read}\r\n\
                     master_sync_left_bytes:{left}\r\nmaster_sync_perc:{perc:.2}\r\n\
                     master_sync_last_io_seconds_ago:{}\r\n",
                    now.saturating_sub(primary.last_io_ms) / 1000
                );
            }
            if !up {
                let _ = write!(
                    out,
                    "master_link_down_since_seconds:{}\r\n",
                    now.saturating_sub(primary.down_since_ms) / 1000
                );
                // sieved's own: why the link is down, as the log says it.
                if let Some(error) = &primary.last_error {
                    let _ = write!(
                        out,
                        "master_link_last_error:{}\r\nmaster_link_retry_delay_ms:{}\r\n",
                        error.replace(['\r', '\n'], " "),
                        primary.retry_delay_ms,
                    );
                }
            }
            let _ = write!(
                out,
                "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:1\r\n",
                settings.replica_priority,
                u8::from(settings.replica_read_only),
            );
        } else {
            out.push_str("role:master\r\n");
        }
        let followers = self.followers();
        let _ = write!(out, "connected_slaves:{}\r\n", followers.len());
        for (index, follower) in followers.iter().enumerate() {
            let _ = write!(
                out,
                "slave{index}:ip={},port={},state={},offset={},lag={}\r\n",
                follower.ip,
                follower.port,
                follower.state,
                follower.acked,
                follower.lag_secs(now),
            );
        }
        let ids = lock(&self.ids);
        let (first, histlen) = self.stream.held();
        let active = self.stream.is_active();
        let _ = write!(
            out,
            "master_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\n\
             master_repl_offset:{}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{}\r\n\
             repl_backlog_size:{}\r\nrepl_backlog_first_byte_offset:{}\r\n\
             repl_backlog_histlen:{}\r\n",
            ids.replid,
            ids.replid2,
            self.stream.offset(),
            ids.second_offset,
            u8::from(active),
            settings.repl_backlog_size,
            if active { first + 1 } else { 0 },
            histlen,
        );
        out
    }
}

/// Replication's housekeeping, once a second: the primary's heartbeat PING to its replicas
/// every `repl-ping-replica-period`, and the backlog freed after `repl-backlog-ttl` alone. Also
/// starts the link when the configuration names a primary.
pub(in crate::server) async fn run(shared: Arc<Shared>) {
    let replication = &shared.replication;
    let settings = shared.config.settings();
    replication.apply_settings(&settings);
    if let Some(primary) = settings.replicaof.0 {
        if !replication.restored.load(Ordering::Relaxed) {
            replication.offers_history.store(false, Ordering::Relaxed);
        }
        follow(&shared, Some(primary));
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut last_ping_ms = now_ms();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shared.shutdown.requested() => return,
        }
        let now = now_ms();
        let settings = shared.config.settings();
        if now.saturating_sub(last_ping_ms) >= settings.repl_ping_replica_period * 1000 {
            replication.append_control(&[b"PING"], now);
            last_ping_ms = now;
        }
        let alone_since = replication.alone_since_ms.load(Ordering::Relaxed);
        let ttl_ms = settings.repl_backlog_ttl * 1000;
        if ttl_ms > 0
            && alone_since > 0
            && now.saturating_sub(alone_since) >= ttl_ms
            && !replication.is_replica()
            && replication.stream.is_active()
        {
            tracing::info!("no replica for repl-backlog-ttl; freeing the replication backlog");
            replication.free_backlog();
            replication.alone_since_ms.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_forty_hex_characters_and_differ() {
        let (a, b) = (random_id(), random_id());
        for id in [&a, &b] {
            assert_eq!(id.len(), ID_LEN);
            assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        assert_ne!(a, b);
    }
}
