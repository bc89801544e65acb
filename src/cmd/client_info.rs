//! What the server knows about one connection, kept where commands can reach it: CLIENT
//! SETNAME and HELLO change it, CLIENT LIST reads every client's, CLIENT KILL picks clients by it.

use super::COMMANDS;
use crate::protocol::Protocol;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// What a connection is for, as CLIENT LIST's flags and CLIENT KILL TYPE name it. A Pub/Sub
/// client is a normal one with subscriptions; that is read from its subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ClientKind {
    Normal = 0,
    /// A replica, served the replication stream on this connection (flag `S`).
    Replica = 1,
    /// This server's link to its primary (flag `M`).
    Primary = 2,
}

/// A client's type as CLIENT KILL TYPE and CLIENT LIST TYPE select it: its kind, with normal
/// clients in the Pub/Sub context told apart, as Redis's client types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientType {
    Normal,
    Replica,
    Primary,
    PubSub,
}

impl ClientType {
    /// Redis's names for the types, in any case; `slave` is the old name of `replica`.
    pub fn from_name(name: &[u8]) -> Option<ClientType> {
        let types = [
            ("normal", ClientType::Normal),
            ("replica", ClientType::Replica),
            ("slave", ClientType::Replica),
            ("master", ClientType::Primary),
            ("pubsub", ClientType::PubSub),
        ];
        types
            .into_iter()
            .find(|(known, _)| name.eq_ignore_ascii_case(known.as_bytes()))
            .map(|(_, kind)| kind)
    }
}

/// Which clients CLIENT LIST shows and CLIENT KILL closes: those that pass every test set.
#[derive(Debug, Default)]
pub struct ClientFilter {
    pub ids: Option<Vec<u64>>,
    pub client_type: Option<ClientType>,
    /// The client's address, `ip:port` as CLIENT LIST prints it.
    pub addr: Option<Vec<u8>>,
    /// The address the client connected to.
    pub local_addr: Option<Vec<u8>>,
    /// Only clients connected for at least this many seconds (CLIENT KILL MAXAGE).
    pub min_age_secs: Option<u64>,
}

impl ClientFilter {
    pub fn matches(&self, client: &ClientInfo, now: u64) -> bool {
        let same_addr = |wanted: &Option<Vec<u8>>, addr: SocketAddr| {
            wanted
                .as_deref()
                .is_none_or(|wanted| wanted == addr.to_string().as_bytes())
        };
        self.ids.as_ref().is_none_or(|ids| ids.contains(&client.id))
            && self
                .client_type
                .is_none_or(|kind| client.client_type() == kind)
            && same_addr(&self.addr, client.addr)
            && same_addr(&self.local_addr, client.local_addr)
            && self
                .min_age_secs
                .is_none_or(|min_age| client.age_secs(now) >= min_age)
    }
}

#[derive(Default)]
struct Names {
    name: Option<Vec<u8>>,
    lib_name: Vec<u8>,
    lib_version: Vec<u8>,
}

/// What the server knows about one connection. Updated by its own task; read by CLIENT LIST.
pub struct ClientInfo {
    pub id: u64,
    addr: SocketAddr,
    local_addr: SocketAddr,
    created_ms: u64,
    names: Mutex<Names>,
    db: AtomicUsize,
    protocol: AtomicU8,
    last_active_ms: AtomicU64,
    last_command: AtomicUsize,
    /// Pub/Sub channels and patterns subscribed to.
    channels: AtomicUsize,
    patterns: AtomicUsize,
    kind: AtomicU8,
    /// Commands queued since MULTI, or -1 outside a transaction (CLIENT LIST's `multi`).
    queued: AtomicI64,
    /// Set by CLIENT KILL (or by the server, for a replica it drops): the connection closes
    /// once the batch it is running ends.
    killed: AtomicBool,
    kill_notice: Notify,
    /// Parked by a blocking command (CLIENT LIST's flag `b`).
    blocked: AtomicBool,
}

impl ClientInfo {
    pub fn new(id: u64, addr: SocketAddr, local_addr: SocketAddr, now: u64) -> Arc<ClientInfo> {
        Arc::new(ClientInfo {
            id,
            addr,
            local_addr,
            created_ms: now,
            names: Mutex::new(Names::default()),
            db: AtomicUsize::new(0),
            protocol: AtomicU8::new(2),
            last_active_ms: AtomicU64::new(now),
            last_command: AtomicUsize::new(usize::MAX),
            channels: AtomicUsize::new(0),
            patterns: AtomicUsize::new(0),
            kind: AtomicU8::new(ClientKind::Normal as u8),
            queued: AtomicI64::new(-1),
            killed: AtomicBool::new(false),
            kill_notice: Notify::new(),
            blocked: AtomicBool::new(false),
        })
    }

    fn names(&self) -> MutexGuard<'_, Names> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn note_command(&self, index: usize, now: u64) {
        self.last_command.store(index, Ordering::Relaxed);
        self.last_active_ms.store(now, Ordering::Relaxed);
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn set_name(&self, name: &[u8]) {
        self.names().name = (!name.is_empty()).then(|| name.to_vec());
    }

    pub fn clear_name(&self) {
        self.names().name = None;
    }

    pub fn name(&self) -> Option<Vec<u8>> {
        self.names().name.clone()
    }

    pub fn set_lib_name(&self, value: &[u8]) {
        self.names().lib_name = value.to_vec();
    }

    pub fn set_lib_version(&self, value: &[u8]) {
        self.names().lib_version = value.to_vec();
    }

    pub fn set_db(&self, db: usize) {
        self.db.store(db, Ordering::Relaxed);
    }

    pub fn set_protocol(&self, protocol: Protocol) {
        let value = if protocol == Protocol::Resp3 { 3 } else { 2 };
        self.protocol.store(value, Ordering::Relaxed);
    }

    pub fn set_subscriptions(&self, channels: usize, patterns: usize) {
        self.channels.store(channels, Ordering::Relaxed);
        self.patterns.store(patterns, Ordering::Relaxed);
    }

    /// Whether the client subscribes to any channel or pattern (Redis's Pub/Sub context).
    pub fn subscribed(&self) -> bool {
        self.channels.load(Ordering::Relaxed) + self.patterns.load(Ordering::Relaxed) > 0
    }

    pub fn kind(&self) -> ClientKind {
        match self.kind.load(Ordering::Relaxed) {
            1 => ClientKind::Replica,
            2 => ClientKind::Primary,
            _ => ClientKind::Normal,
        }
    }

    pub fn client_type(&self) -> ClientType {
        match self.kind() {
            ClientKind::Replica => ClientType::Replica,
            ClientKind::Primary => ClientType::Primary,
            ClientKind::Normal if self.subscribed() => ClientType::PubSub,
            ClientKind::Normal => ClientType::Normal,
        }
    }

    /// Seconds since the client connected, as CLIENT LIST's `age`.
    pub fn age_secs(&self, now: u64) -> u64 {
        now.saturating_sub(self.created_ms) / 1000
    }

    pub fn set_kind(&self, kind: ClientKind) {
        self.kind.store(kind as u8, Ordering::Relaxed);
    }

    /// How many commands the client's transaction holds, None outside MULTI.
    pub fn set_transaction(&self, queued: Option<usize>) {
        let queued = queued.map_or(-1, |queued| queued as i64);
        self.queued.store(queued, Ordering::Relaxed);
    }

    /// Asks the connection to close; its task notices at once, even while it waits for input.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.kill_notice.notify_one();
    }

    pub fn set_blocked(&self, blocked: bool) {
        self.blocked.store(blocked, Ordering::Relaxed);
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Resolves once the client is killed (at once if it already was).
    pub async fn killed(&self) {
        while !self.is_killed() {
            self.kill_notice.notified().await;
        }
    }

    /// CLIENT LIST's flags, as far as they apply, in Redis's order: replica or primary link,
    /// Pub/Sub, inside MULTI, blocked; `N` for none.
    fn flags(&self) -> String {
        let mut flags = String::new();
        match self.kind() {
            ClientKind::Replica => flags.push('S'),
            ClientKind::Primary => flags.push('M'),
            ClientKind::Normal => {}
        }
        if self.subscribed() {
            flags.push('P');
        }
        if self.queued.load(Ordering::Relaxed) >= 0 {
            flags.push('x');
        }
        if self.blocked.load(Ordering::Relaxed) {
            flags.push('b');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        flags
    }

    /// One CLIENT LIST line, newline included, in Redis's field order.
    pub fn describe(&self, now: u64) -> String {
        let names = self.names();
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let command = COMMANDS
            .get(self.last_command.load(Ordering::Relaxed))
            .map_or("NULL", |spec| spec.name);
        let age = self.age_secs(now);
        let idle = now.saturating_sub(self.last_active_ms.load(Ordering::Relaxed)) / 1000;
        format!(
            "id={} addr={} laddr={} fd=-1 name={} age={age} idle={idle} flags={} db={} sub={} psub={} ssub=0 \
             multi={} watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 \
             tot-mem=0 events=r cmd={command} user=default redir=-1 resp={} lib-name={} lib-ver={}\n",
            self.id,
            self.addr,
            self.local_addr,
            text(names.name.as_deref().unwrap_or_default()),
            self.flags(),
            self.db.load(Ordering::Relaxed),
            self.channels.load(Ordering::Relaxed),
            self.patterns.load(Ordering::Relaxed),
            self.queued.load(Ordering::Relaxed),
            self.protocol.load(Ordering::Relaxed),
            text(&names.lib_name),
            text(&names.lib_version),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(id: u64, connected_ms: u64) -> Arc<ClientInfo> {
        let addr = SocketAddr::from(([127, 0, 0, 1], 5000 + id as u16));
        let local = SocketAddr::from(([127, 0, 0, 1], 6390));
        ClientInfo::new(id, addr, local, connected_ms)
    }

    fn of_type(name: &str) -> ClientFilter {
        ClientFilter {
            client_type: ClientType::from_name(name.as_bytes()),
            ..ClientFilter::default()
        }
    }

    #[test]
    fn types_follow_kind_then_subscriptions() {
        let normal = client(1, 0);
        let subscriber = client(2, 0);
        subscriber.set_subscriptions(0, 1);
        let replica = client(3, 0);
        replica.set_kind(ClientKind::Replica);
        let primary = client(4, 0);
        primary.set_kind(ClientKind::Primary);
        let cases = [
            ("normal", &normal),
            ("PUBSUB", &subscriber),
            ("replica", &replica),
            ("slave", &replica),
            ("Master", &primary),
        ];
        for (name, expected) in cases {
            let filter = of_type(name);
            for candidate in [&normal, &subscriber, &replica, &primary] {
                assert_eq!(
                    filter.matches(candidate, 0),
                    candidate.id == expected.id,
                    "TYPE {name} and client {}",
                    candidate.id
                );
            }
        }
        assert_eq!(ClientType::from_name(b"monitor"), None);
    }

    #[test]
    fn max_age_counts_whole_seconds_connected() {
        let client = client(1, 10_000);
        let older_than = |secs| ClientFilter {
            min_age_secs: Some(secs),
            ..ClientFilter::default()
        };
        assert!(older_than(5).matches(&client, 15_000));
        assert!(!older_than(5).matches(&client, 14_999));
        assert!(!older_than(1).matches(&client, 0), "a clock gone back");
    }

    #[test]
    fn addresses_compare_as_client_list_prints_them() {
        let client = client(1, 0);
        let by = |addr: &str, local: &str| ClientFilter {
            addr: (!addr.is_empty()).then(|| addr.as_bytes().to_vec()),
            local_addr: (!local.is_empty()).then(|| local.as_bytes().to_vec()),
            ..ClientFilter::default()
        };
        assert!(by("127.0.0.1:5001", "").matches(&client, 0));
        assert!(by("", "127.0.0.1:6390").matches(&client, 0));
        assert!(by("127.0.0.1:5001", "127.0.0.1:6390").matches(&client, 0));
        assert!(!by("127.0.0.1:05001", "").matches(&client, 0));
        assert!(!by("127.0.0.1:5001", "127.0.0.1:6391").matches(&client, 0));
    }
}
