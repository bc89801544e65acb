//! The keyspace: sixteen databases, each a sharded map from binary key to typed value with an
//! optional expiry time.
//!
//! Locking has two levels. A shard's map lock is held for reading by every lookup and for writing
//! only to add or remove keys. Each entry has its own lock around its value, so commands on
//! different keys never wait for each other, and many clients can read one filter at once.

mod access;
mod collection_encoding;
mod db;
mod dense;
mod eviction;
mod functions;
mod glob;
mod hash;
mod key_table;
mod list;
mod members;
mod scan;
mod set;
pub(crate) mod sketch;
mod summary;
mod value;
mod waits;
mod zset;

pub use access::{Tracking, LFU_INIT_VAL, LRU_CLOCK_MAX};
pub use db::{Db, ValueHandle, WatchToken};
pub use eviction::EvictionPolicy;
pub use functions::{FunctionLibraries, LibraryCode};
pub use glob::glob_match;
pub use hash::Hash;
pub use list::List;
pub use members::Bytes;
pub use scan::ScanFilter;
pub use set::Set;
pub use sketch::TopKValue;
pub use summary::{summarize, DbKeys, FilterTotals, Summary};
pub use value::{Value, ValueKind};
pub use zset::{Score, ZSet};

#[cfg(feature = "scaling-bench")]
use crate::stripes::lock_waits;
use eviction::Evictor;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Store {
    dbs: Vec<Db>,
    /// The access clock and policy every database's keys are stamped by.
    tracking: Arc<Tracking>,
    evictor: Evictor,
    /// FUNCTION's libraries, which are data as the keys are.
    functions: FunctionLibraries,
}

impl Store {
    pub fn new(databases: usize, shards: usize) -> Store {
        let tracking = Arc::new(Tracking::new(now_ms()));
        Store {
            dbs: (0..databases)
                .map(|_| Db::with_tracking(shards, tracking.clone()))
                .collect(),
            tracking,
            evictor: Evictor::default(),
            functions: FunctionLibraries::default(),
        }
    }

    pub fn functions(&self) -> &FunctionLibraries {
        &self.functions
    }

    pub fn tracking(&self) -> &Tracking {
        &self.tracking
    }

    /// Moves the access clock to `now_ms`; the server calls it ten times a second.
    pub fn tick(&self, now_ms: u64) {
        self.tracking.tick(now_ms);
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

    /// An empty store of the same shape and hash seeds, whose contents `replace_contents` can
    /// take over.
    pub fn empty_like(&self) -> Store {
        Store {
            dbs: self.dbs.iter().map(Db::empty_like).collect(),
            tracking: self.tracking.clone(),
            evictor: Evictor::default(),
            functions: FunctionLibraries::default(),
        }
    }

    /// Swaps this store's keys and function libraries with those of `other`, made by
    /// `empty_like`, shard by shard:
    /// a replica's full sync loads beside the live keyspace, then takes it over at once. The
    /// caller keeps commands out meanwhile, so that none sees some shards swapped.
    pub fn swap_contents(&self, other: &Store) {
        for (mine, theirs) in self.dbs.iter().zip(&other.dbs) {
            mine.swap_contents(theirs);
        }
        self.functions.swap(&other.functions);
    }

    /// A copy of every key (expired or not) and value, and the function libraries, taken one shard at a time: exact only
    /// while no command changes the store, which the caller sees to.
    pub fn deep_copy(&self) -> Store {
        let mut copy = self.empty_like();
        copy.functions = self.functions.copy();
        for (mine, theirs) in self.dbs.iter().zip(&copy.dbs) {
            for shard in 0..mine.shard_count() {
                for (key, expires_at, value) in mine.shard_entries(shard, 0) {
                    theirs.insert(&key, read(&value).clone(), expires_at);
                }
            }
        }
        copy
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
    #[cfg(feature = "scaling-bench")]
    if let Some(guard) = lock_waits::uncontended(lock.try_read(), &lock_waits::KEYSPACE) {
        return guard;
    }
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    #[cfg(feature = "scaling-bench")]
    if let Some(guard) = lock_waits::uncontended(lock.try_write(), &lock_waits::KEYSPACE) {
        return guard;
    }
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
