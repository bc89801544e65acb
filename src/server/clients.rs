//! The registry of connected clients, for CLIENT LIST, CLIENT KILL, CLIENT INFO and INFO clients.

use crate::cmd::{ClientFilter, ClientInfo, ClientKind};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Default)]
pub struct Clients {
    next_id: AtomicU64,
    connected: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
}

/// Removes its client from the registry when the connection ends, however it ends.
pub struct Registration<'a> {
    clients: &'a Clients,
    pub info: Arc<ClientInfo>,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.clients.lock().remove(&self.info.id);
    }
}

impl Clients {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<ClientInfo>>> {
        self.connected.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn register(&self, addr: SocketAddr, local_addr: SocketAddr, now: u64) -> Registration<'_> {
        let info = self.new_client(addr, local_addr, now);
        self.lock().insert(info.id, info.clone());
        Registration {
            clients: self,
            info,
        }
    }

    /// A client no connection stands for and CLIENT LIST does not show: the server itself,
    /// replaying the append-only file.
    /// Its id is 0, which no connection gets, so connections are numbered as if it did not exist.
    pub fn detached(&self, addr: SocketAddr, now: u64) -> Arc<ClientInfo> {
        ClientInfo::new(0, addr, addr, now)
    }

    fn new_client(&self, addr: SocketAddr, local_addr: SocketAddr, now: u64) -> Arc<ClientInfo> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        ClientInfo::new(id, addr, local_addr, now)
    }

    /// Kills every client of this kind (replicas when the history changes, the link to the
    /// primary when REPLICAOF changes it).
    pub(crate) fn kill_kind(&self, kind: ClientKind) {
        for client in self.lock().values().filter(|c| c.kind() == kind) {
            client.kill();
        }
    }

    pub fn count(&self) -> usize {
        self.lock().len()
    }

    /// CLIENT LIST: the clients the filter matches, in id order. A killed client is gone, as
    /// in Redis, even while its task still winds down.
    pub fn list(&self, filter: &ClientFilter, now: u64) -> String {
        let clients: Vec<_> = self
            .lock()
            .values()
            .filter(|c| !c.is_killed() && filter.matches(c, now))
            .cloned()
            .collect();
        clients.iter().map(|c| c.describe(now)).collect()
    }

    /// CLIENT KILL: kills every client the filter matches but `caller`; returns how many.
    /// Clients killed already are not counted again.
    pub fn kill(&self, filter: &ClientFilter, caller: u64, now: u64) -> usize {
        self.lock()
            .values()
            .filter(|c| c.id != caller && !c.is_killed() && filter.matches(c, now))
            .inspect(|c| c.kill())
            .count()
    }
}
