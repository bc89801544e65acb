//! What a command sees: its connection's `Session`, the keyspace, the reply it writes, and the
//! server behind two small traits. The server implements them; commands never name the server's
//! types, so this floor can be tested and fuzzed with any implementation and the server can grow
//! (replicas, new background work) without commands changing.

use super::client_info::{ClientFilter, ClientInfo};
use super::errors::CmdError;
use super::prefetch::HashedAhead;
use crate::config::Config;
use crate::protocol::{Reply, Request, RequestList};
use crate::store::{Db, Store, Value, WatchToken};
use std::sync::Arc;
use std::time::Duration;

/// How one request ended, as `execute` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Not a command this server knows: counted nowhere per command, as in Redis.
    Unknown,
    /// Refused before running (wrong number of arguments, not authenticated, out of memory).
    Rejected(usize),
    Succeeded(usize),
    /// Ran and replied with an error.
    Failed(usize),
    /// Queued inside MULTI: counted when EXEC runs it.
    Queued,
    /// Parked (see `BlockOn`): counted when it is served, times out or is unblocked, as in
    /// Redis.
    Blocked,
}

/// Queued arguments are copied (the read buffer moves on); past this many bytes the
/// transaction is refused rather than allowed to grow without bound.
const MAX_QUEUED_BYTES: usize = 512 * 1024 * 1024;

/// Between MULTI and EXEC or DISCARD: the commands queued, to run when EXEC comes.
#[derive(Default)]
pub struct Transaction {
    pub(super) queued: RequestList,
    /// A queued command was refused: EXEC will answer EXECABORT.
    pub(super) failed: bool,
}

impl Transaction {
    /// Queues a command; false (and the transaction marked failed) if it would exceed the cap.
    pub(super) fn queue(&mut self, request: Request) -> bool {
        let size: usize = request.args().map(<[u8]>::len).sum();
        if self.queued.arg_bytes() + size > MAX_QUEUED_BYTES {
            self.failed = true;
            return false;
        }
        self.queued.push(0, &request);
        true
    }

    pub(super) fn len(&self) -> usize {
        self.queued.len()
    }

    pub(super) fn fail(&mut self) {
        self.failed = true;
    }
}

/// Whether to write a snapshot on the way out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitSave {
    /// If save rules are configured, as Redis does.
    Default = 0,
    Save = 1,
    NoSave = 2,
}

/// Why a SAVE, BGSAVE or BGREWRITEAOF did not start or did not finish: the server's saver
/// gives it, and the commands answer from it.
#[derive(Debug)]
pub enum SaveError {
    InProgress,
    Failed(std::io::Error),
}

/// Where a logged write stands: the append-only file position its reply waits for (see
/// `durable`; 0 when nothing went to the file) and the replication stream's offset after it
/// (WAIT counts the replicas that acknowledged it; 0 when nothing was streamed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogPosition {
    pub durable_at: u64,
    pub stream_offset: u64,
}

/// Where writes go once they took effect: the append-only file today, replicas as well later.
/// One implementation fans out to every sink, so commands log once whatever listens.
pub trait WriteLog: Send + Sync {
    /// Runs `write` in the log's order and logs what it put in `batch` as one record stamped
    /// `time_ms`: the log's order is then the order the writes took effect, so replaying it
    /// rebuilds the same keyspace. `batch` is left empty.
    fn in_order(
        &self,
        time_ms: u64,
        batch: &mut RequestList,
        write: &mut dyn FnMut(&mut RequestList),
    ) -> LogPosition;
}

/// What a Pub/Sub subscription names: a channel, or a glob pattern of channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionKind {
    Channel,
    Pattern,
}

/// Pub/Sub's registry of channels and subscribers, held by the server. Clients are named by
/// their id; counts returned are the client's subscriptions of both kinds, as Redis replies.
pub trait PubSub: Send + Sync {
    /// Returns the client's subscription count after adding this one.
    fn subscribe(&self, client: u64, kind: SubscriptionKind, name: &[u8]) -> usize;
    /// Returns the client's subscription count after removing this one.
    fn unsubscribe(&self, client: u64, kind: SubscriptionKind, name: &[u8]) -> usize;
    /// How many channels and patterns the client subscribes to.
    fn subscription_counts(&self, client: u64) -> (usize, usize);
    /// The client's subscriptions of this kind.
    fn subscriptions(&self, client: u64, kind: SubscriptionKind) -> Vec<Vec<u8>>;
    /// Queues the message for every subscriber; returns how many receive it.
    fn publish(&self, channel: &[u8], message: &[u8]) -> usize;
    /// Writes the client's own undelivered messages to `reply`, so that a client publishing
    /// to itself gets the message before PUBLISH's reply, as in Redis.
    fn deliver_pending(&self, client: u64, reply: &mut Reply);
    /// PUBSUB CHANNELS: channels with at least one subscriber, those matching `pattern`.
    fn channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>>;
    /// PUBSUB NUMSUB: the channel's subscribers.
    fn subscribers(&self, channel: &[u8]) -> usize;
    /// PUBSUB NUMPAT: patterns with at least one subscriber.
    fn patterns(&self) -> usize;
}

/// What ROLE reports.
pub enum RoleView {
    /// Its stream's offset, and each replica's address, listening port and acknowledged offset.
    Primary {
        offset: u64,
        replicas: Vec<(String, u16, u64)>,
    },
    Replica {
        host: String,
        port: u16,
        /// ROLE's word for the link: connect, connecting, sync or connected.
        state: &'static str,
        offset: u64,
    },
}

/// What REPLICAOF did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replicating {
    Started,
    /// The server already follows that primary.
    Already,
}

/// What a replica said of itself before its PSYNC (REPLCONF): the connection's state until
/// PSYNC takes it along (`Psync`).
#[derive(Debug, Clone, Default)]
pub struct ReplicaHandshake {
    pub listening_port: u16,
    pub announced_ip: Option<String>,
}

/// A replica's PSYNC: the history and offset it asks to continue from, and what it said of
/// itself before (REPLCONF).
#[derive(Debug)]
pub struct Psync {
    pub replid: String,
    pub offset: i64,
    pub handshake: ReplicaHandshake,
}

/// What a command hands back to its connection: something only the connection can do, once the
/// replies before it are ready. Set in `Session::after`; the batch stops there, and nothing
/// after the command runs until the connection has acted on it, one case each.
pub enum After {
    /// Close once the replies so far are written: QUIT, or CLIENT KILL of the caller itself.
    /// The connection asks it of itself on a protocol error, or when the server stops.
    Close,
    /// SHUTDOWN, with its request's number (`Server::shutdown`): the connection waits for the
    /// answer, then closes or (refused: the exit snapshot failed) replies with an error and
    /// goes on.
    Shutdown(u64),
    /// WAIT: the connection waits for replicas, without holding the batch's locks, and replies.
    Wait(WaitForReplicas),
    /// A blocking command found nothing: the connection parks the client (see `BlockOn`).
    Block(Box<BlockOn>),
    /// PSYNC: once the replies so far are written, the connection carries the replica's stream.
    BecomeReplicaStream(Box<Psync>),
}

/// A WAIT to carry out once the replies before it are written.
#[derive(Debug, Clone, Copy)]
pub struct WaitForReplicas {
    pub replicas: usize,
    /// 0 waits for as long as it takes.
    pub timeout_ms: u64,
    pub offset: u64,
}

/// A blocking command that found nothing to serve it: the connection parks the client until a
/// write makes one of `keys` (in the session's database) hold a value `serves` accepts, then
/// runs `request` again, with the client's session, right after that write, as Redis does; or
/// until the timeout passes, when the client gets `timed_out`'s reply. A command run again that
/// still finds nothing parks again, keeping its place and its original deadline. Nothing is
/// logged for a parked command: what it does once served is logged then.
pub struct BlockOn {
    pub keys: Vec<Vec<u8>>,
    /// None waits for as long as it takes.
    pub timeout: Option<Duration>,
    /// Whether a value can serve the command: the type it pops from, say. A key that holds
    /// another type when it is signalled leaves the client parked, as in Redis.
    pub serves: fn(&Value) -> bool,
    /// The reply when the timeout passes (or CLIENT UNBLOCK ... TIMEOUT).
    pub timed_out: fn(&mut Reply),
    /// The command, to run again.
    pub request: RequestList,
    /// When what it waits for may come without any write to its keys (a frontier's lease
    /// running out, a held item coming due): its command is run again then (Unix ms).
    pub wake_at_ms: Option<u64>,
}

/// The server as commands see it: its settings, its write log, and the actions of admin
/// commands. Implemented by the server; a test can implement it with stubs.
pub trait Server: Send + Sync {
    fn config(&self) -> &Config;
    /// The write log, when anything listens (the append-only file is on).
    fn write_log(&self) -> Option<&dyn WriteLog>;
    /// INFO's text for these sections (already validated, in the order to print them).
    fn info(&self, sections: &[&'static str], now: u64) -> String;
    /// CLIENT LIST: the clients the filter matches, in id order.
    fn client_list(&self, filter: &ClientFilter, now: u64) -> String;
    /// CLIENT KILL: closes every client the filter matches but the caller, and says how many.
    /// Each ends at once, or after the batch of commands it is running.
    fn kill_clients(&self, filter: &ClientFilter, caller: u64, now: u64) -> usize;
    /// SLOWLOG GET: writes the newest `count` entries as Redis's reply.
    fn slowlog_get(&self, count: usize, reply: &mut Reply);
    fn slowlog_len(&self) -> usize;
    fn slowlog_reset(&self);
    /// Logs a command a script called, if it took long enough for the SLOWLOG: as in Redis,
    /// with no client address or name.
    fn slowlog_script_call(&self, _request: Request, _micros: u64) {}
    /// CONFIG RESETSTAT.
    fn reset_stats(&self);
    /// Counts keys evicted for `maxmemory` (INFO stats evicted_keys).
    fn count_evictions(&self, keys: u64);
    /// Bytes in use that `maxmemory` leaves out: what the replication stream holds for replicas
    /// that lag (INFO memory `mem_not_counted_for_evict`).
    fn memory_not_counted(&self) -> u64;
    /// Called after CONFIG SET changed settings, for whatever caches one.
    fn settings_changed(&self);
    /// SAVE: blocks the calling thread until the snapshot is on disk.
    fn save(&self) -> Result<(), SaveError>;
    /// BGSAVE and BGREWRITEAOF: starts a snapshot (a compaction, with the append-only file on)
    /// in the background; with `schedule`, one already running schedules another instead.
    /// Ok(true) if it started, Ok(false) if it was scheduled.
    fn save_in_background(&self, schedule: bool) -> Result<bool, SaveError>;
    /// LASTSAVE, in Unix seconds.
    fn last_save_secs(&self) -> u64;
    /// Asks the server to stop; returns the request's number, which the connection waits on
    /// to learn whether the server stops or refused (its exit snapshot failed).
    fn shutdown(&self, exit_save: ExitSave, force: bool) -> u64;
    /// ROLE's view of the server's replication.
    fn role(&self) -> RoleView;
    /// REPLICAOF: follows `primary`, or (None) becomes a primary.
    fn replicate(&self, primary: Option<(String, u16)>) -> Replicating;
    /// Why a command cannot run in the server's replication role now: a write on a read-only
    /// replica (READONLY), or on a primary short of good replicas (NOREPLICAS); anything not
    /// flagged `stale` on a replica whose link is down, if it must not serve stale data
    /// (MASTERDOWN).
    fn role_refusal(&self, writes: bool, runs_when_stale: bool) -> Option<&'static str>;
    /// Whether this is a replica whose link to its primary is not up (PSYNC is refused then).
    fn replica_link_down(&self) -> bool;
    /// This process's run ID (INFO server).
    fn run_id(&self) -> &str;
    /// How many replicas acknowledged the stream up to `offset` (WAIT, at once).
    fn acked_replicas(&self, offset: u64) -> usize;
    /// Why write commands (and PING, as Redis) are refused now, as the error to send: the
    /// server cannot keep what they would change (Redis's MISCONF).
    fn write_refusal(&self) -> Option<String>;
    fn pubsub(&self) -> &dyn PubSub;
    /// Whether start-up is still loading the data: only commands flagged `loading` run.
    fn loading(&self) -> bool {
        false
    }
    /// CLIENT UNBLOCK: ends the wait of a client parked by a blocking command (see `BlockOn`),
    /// with its timeout reply or, with `error`, Redis's UNBLOCKED error; false if that client
    /// is not parked.
    fn unblock_client(&self, _id: u64, _error: bool) -> bool {
        false
    }
    /// The Lua engines EVAL and FCALL run on; None where scripting is not set up (a test's
    /// server), which scripting commands answer with an error.
    fn scripts(&self) -> Option<&super::Scripts> {
        None
    }
}

/// One connection's state, as commands see it.
pub struct Session {
    pub db: usize,
    pub client: Arc<ClientInfo>,
    /// What the connection is to do once the replies so far are ready (see `After`): set by a
    /// command, it ends the batch.
    pub after: Option<After>,
    /// Reused by commands that gather results before replying, so they need not allocate.
    pub scratch: Vec<Result<bool, CmdError>>,
    /// Write commands run since the connection last reported them (for snapshot scheduling).
    pub writes: u64,
    /// Between MULTI and EXEC/DISCARD: the queued commands.
    pub transaction: Option<Transaction>,
    /// Keys under WATCH: their database, name, and what they were.
    pub watched: Vec<(usize, Vec<u8>, WatchToken)>,
    /// False until AUTH succeeds, when a password is required.
    pub authenticated: bool,
    /// How each command that EXEC ran ended, with its time in microseconds: the connection
    /// counts them as it counts its own commands.
    pub exec_outcomes: Vec<(Outcome, u64)>,
    /// The write log's position after this connection's last logged write: with
    /// `appendfsync always`, replies wait until the log is durable that far.
    pub logged_up_to: u64,
    /// The replication stream's offset after this connection's last logged write: what WAIT
    /// waits for replicas to acknowledge.
    pub streamed_up_to: u64,
    /// The writes of the command running now (all of an EXEC's), on their way to the log;
    /// kept between commands so that logging does not allocate.
    pub(super) batch: RequestList,
    /// True while EXEC runs its queued commands (inside the log's order, when it is on).
    pub(super) in_exec: bool,
    /// What the running command did that its own words do not pin down, to be logged before
    /// it: the exact shape of a filter it created, so that replay never depends on the
    /// settings in force when it runs.
    pub(super) effects: RequestList,
    /// The running command is logged as its `effects` alone (a RESERVE, whose effect is all
    /// in the filter it created).
    pub(super) effects_only: bool,
    /// What a replica said of itself on this connection (REPLCONF), for its PSYNC.
    pub replica_handshake: Option<Box<ReplicaHandshake>>,
    /// Running a write read back from the log or received from a primary: it was admitted
    /// when it first ran, so no limit refuses it now.
    pub replaying: bool,
    /// The items the connection's look ahead hashed in the batch being run (`cmd::prefetch`).
    pub(crate) hashed_ahead: HashedAhead,
}

impl Session {
    /// Remembers where the connection's last logged write stands.
    pub(super) fn note_logged(&mut self, position: LogPosition) {
        if position.durable_at > 0 {
            self.logged_up_to = position.durable_at;
        }
        if position.stream_offset > 0 {
            self.streamed_up_to = position.stream_offset;
        }
    }

    /// Whether the client must still authenticate. Like Redis, a password is asked for only while
    /// one is set: clearing `requirepass` lets in the connections that never gave it.
    pub fn must_authenticate(&self, config: &Config) -> bool {
        !self.authenticated && config.requires_password()
    }

    pub fn new(client: Arc<ClientInfo>, authenticated: bool) -> Session {
        Session {
            db: 0,
            client,
            after: None,
            scratch: Vec::new(),
            writes: 0,
            transaction: None,
            watched: Vec::new(),
            authenticated,
            exec_outcomes: Vec::new(),
            logged_up_to: 0,
            streamed_up_to: 0,
            batch: RequestList::default(),
            in_exec: false,
            effects: RequestList::default(),
            effects_only: false,
            replica_handshake: None,
            replaying: false,
            hashed_ahead: HashedAhead::default(),
        }
    }
}

pub struct Ctx<'a> {
    pub server: &'a dyn Server,
    /// The keyspace commands act on: the server's, or a private one being rebuilt from the
    /// append-only file by a compaction.
    pub store: &'a Store,
    pub session: &'a mut Session,
    pub reply: &'a mut Reply,
    /// The time of this command, in Unix milliseconds: one clock read serves every expiry check.
    pub now: u64,
}

impl Ctx<'_> {
    pub fn db(&self) -> &Db {
        self.store.db(self.session.db)
    }

    /// Whether the running command may park its client: never inside EXEC (where Redis's
    /// blocking commands answer as if the timeout had passed at once) nor on replay.
    pub fn may_block(&self) -> bool {
        !self.session.in_exec && !self.session.replaying
    }

    /// Parks the client (see `BlockOn`) instead of replying, when `may_block`. The command
    /// then writes no reply and logs nothing.
    pub fn block_on(
        &mut self,
        request: &Request,
        keys: Vec<Vec<u8>>,
        timeout: Option<Duration>,
        serves: fn(&Value) -> bool,
        timed_out: fn(&mut Reply),
    ) {
        let mut copy = RequestList::default();
        copy.push(self.session.db, request);
        self.session.after = Some(After::Block(Box::new(BlockOn {
            keys,
            timeout,
            serves,
            timed_out,
            request: copy,
            wake_at_ms: None,
        })));
        self.session.effects.clear();
        self.log_effects_only();
    }

    /// Whether a write log is on. Without one, what a command notes for it is dropped unread,
    /// so it need not be built.
    pub(super) fn logging(&self) -> bool {
        self.server.write_log().is_some()
    }

    /// Notes `args`, a command in the session's database, for the log to record before the
    /// running command (see `Session::effects`); nothing without a log.
    pub(super) fn note_effect<'a>(&mut self, args: impl IntoIterator<Item = &'a [u8]>) {
        if self.logging() {
            let db = self.session.db;
            self.session.effects.push_args(db, args);
        }
    }

    /// Logs the running command as the effects it noted alone: not at all if it noted none.
    pub(super) fn log_effects_only(&mut self) {
        self.session.effects_only = true;
    }

    /// For a command that just parked its client (`block_on`): run it again at `at_ms` too,
    /// whether or not a write signals one of its keys by then.
    pub fn wake_blocked_at(&mut self, at_ms: Option<u64>) {
        if let Some(After::Block(block)) = self.session.after.as_mut() {
            block.wake_at_ms = at_ms;
        }
    }

    pub fn config(&self) -> &Config {
        self.server.config()
    }

    /// Leaves every channel and pattern without a word, as Redis's RESET does.
    pub(super) fn leave_all_channels(&mut self) {
        let id = self.session.client.id;
        let pubsub = self.server.pubsub();
        for kind in [SubscriptionKind::Channel, SubscriptionKind::Pattern] {
            for name in pubsub.subscriptions(id, kind) {
                pubsub.unsubscribe(id, kind, &name);
            }
        }
        self.session.client.set_subscriptions(0, 0);
    }

    /// The largest filter a command may create or grow to: `max-filter-memory` (by default
    /// derived from the machine, `per_filter_limit`), except on replay, which applies
    /// what was logged whatever the limit is now (as Redis loads whatever it logged).
    pub fn filter_memory_limit(&self) -> u64 {
        if self.session.replaying {
            u64::MAX
        } else {
            let configured = self.config().max_filter_memory();
            per_filter_limit(configured, self.config().maxmemory())
        }
    }
}

/// The per-filter limit in force for a `max-filter-memory` of `configured`: that many bytes, or
/// for 0 (the default) `maxmemory` when it is set, else half the machine's physical memory.
/// A fixed default either refused what users reserve for crawler-sized sets (10^9 URLs at 0.01%
/// is 2.2 GiB) on large machines or let one filter reserve more than a small machine has; a
/// filter's pages are only taken as its bits are set, so the limit is about what a filter could
/// grow to hold, and half leaves room for the rest of the keyspace.
fn per_filter_limit(configured: u64, maxmemory: u64) -> u64 {
    match (configured, maxmemory) {
        (0, 0) => crate::memory::physical_bytes() / 2,
        (0, maxmemory) => maxmemory,
        (configured, _) => configured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_limit_follows_the_machine() {
        assert_eq!(per_filter_limit(4096, 1 << 30), 4096);
        assert_eq!(per_filter_limit(0, 1 << 30), 1 << 30);
        let physical = crate::memory::physical_bytes();
        assert!(physical >= 64 << 20, "{physical} bytes of memory");
        assert_eq!(per_filter_limit(0, 0), physical / 2);
    }
}
