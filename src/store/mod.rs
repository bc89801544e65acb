//! The keyspace: sixteen databases, each a sharded map from binary key to typed value with an
//! optional expiry time.
//!
//! Locking has two levels. A shard's map lock is held for reading by every lookup and for writing
//! only to add or remove keys. Each entry has its own lock around its value, so commands on
//! different keys never wait for each other, and many clients can read one filter at once.

mod db;
mod glob;
mod summary;
mod table;
mod value;

pub use db::{Db, ScanFilter, ValueHandle, WatchToken};
pub use glob::glob_match;
pub use summary::{summarize, DbKeys, FilterTotals, Summary};
pub use value::{Value, ValueKind};

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Store {
    dbs: Vec<Db>,
}

impl Store {
    pub fn new(databases: usize, shards: usize) -> Store {
        Store {
            dbs: (0..databases).map(|_| Db::new(shards)).collect(),
        }
    }

    pub fn db(&self, index: usize) -> &Db {
        &self.dbs[index]
    }

    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    pub fn dbs(&self) -> impl Iterator<Item = &Db> {
        self.dbs.iter()
    }
}

/// Milliseconds since the Unix epoch, the unit of every expiry time.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A panic elsewhere must not make a key unusable for everyone: ignore lock poisoning. The data
/// behind a lock is only ever changed by whole operations that cannot leave it half-written.
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
