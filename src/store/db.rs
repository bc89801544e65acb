use super::access::{AccessBits, Tracking};
use super::key_table::KeyTable;
use super::waits::Waits;
use super::{read, write, Value};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use xxhash_rust::xxh3::xxh3_64_with_seed;

fn random_seed() -> u64 {
    std::collections::hash_map::RandomState::new().hash_one(0u64)
}

/// A value and its lock, shareable: a snapshot holds it while it copies a large filter in
/// pieces, without holding the shard's map lock.
pub type ValueHandle = Arc<RwLock<Value>>;

/// One key's slot. `expires_at` is Unix milliseconds, 0 for none. `version` counts the writes
/// to this entry, for WATCH. `access` is when it was last used, or how often (see `access.rs`).
pub(super) struct Entry {
    pub(super) value: ValueHandle,
    expires_at: AtomicU64,
    version: AtomicU64,
    access: AccessBits,
}

/// What WATCH remembers of a key: the entry it saw (held, so that its identity cannot be reused
/// by a new entry) and that entry's version; None if the key did not exist.
pub struct WatchToken(Option<(ValueHandle, u64)>);

impl Entry {
    fn new(value: Value, expires_at: u64, access: u32) -> Entry {
        Entry {
            value: Arc::new(RwLock::new(value)),
            expires_at: AtomicU64::new(expires_at),
            version: AtomicU64::new(0),
            access: AccessBits::new(access),
        }
    }

    fn touch(&self) {
        self.version.fetch_add(1, Ordering::Relaxed);
    }

    /// The value, for whoever holds the map's write lock (and so the only reference that
    /// commands can reach; a snapshot may still hold its own handle, hence the lock).
    fn value_mut(&mut self) -> std::sync::RwLockWriteGuard<'_, Value> {
        write(&self.value)
    }

    pub(super) fn is_live(&self, now: u64) -> bool {
        let at = self.expires_at.load(Ordering::Relaxed);
        at == 0 || at > now
    }

    /// Whether eviction may take it: live, and with an expiry time if only those may go.
    fn evictable(&self, now: u64, volatile_only: bool) -> bool {
        self.is_live(now) && (!volatile_only || self.expires_at.load(Ordering::Relaxed) != 0)
    }
}

pub(super) struct Shard {
    pub(super) map: RwLock<KeyTable<Entry>>,
    /// Keys in this shard that have an expiry time, so the sweeper can skip shards without any.
    volatile: AtomicUsize,
    /// Whether the shard may hold a time-windowed filter, whose slices the sweeper clears as they
    /// age out: set when one is stored, cleared by a sweep that finds none.
    windowed: AtomicBool,
}

impl Shard {
    /// Notes what a new entry holds, before it goes into the map.
    fn note(&self, value: &Value) {
        if matches!(value, Value::Windowed(_)) {
            self.windowed.store(true, Ordering::Relaxed);
        }
    }
}

pub struct Db {
    pub(super) shards: Box<[Shard]>,
    /// Keys are chosen by clients, so the hash is seeded per process to keep collisions
    /// unpredictable. One hash serves twice: its high half picks the shard, its low half the
    /// bucket within the shard's table.
    seed: u64,
    /// The access clock and policy, shared by every database of the store.
    tracking: Arc<Tracking>,
    /// The keys blocked clients wait on: a key created or replaced is signalled ready.
    waits: Waits,
}

impl Db {
    pub fn new(shards: usize) -> Db {
        Db::with_tracking(shards, Arc::new(Tracking::new(super::now_ms())))
    }

    pub(super) fn with_tracking(shards: usize, tracking: Arc<Tracking>) -> Db {
        let count = shards.max(1).next_power_of_two();
        Db {
            shards: (0..count)
                .map(|_| Shard {
                    map: RwLock::new(KeyTable::new()),
                    volatile: AtomicUsize::new(0),
                    windowed: AtomicBool::new(false),
                })
                .collect(),
            seed: random_seed(),
            tracking,
            waits: Waits::default(),
        }
    }

    /// An empty database of the same shape and seed (see `Store::empty_like`).
    pub(super) fn empty_like(&self) -> Db {
        let mut db = Db::with_tracking(self.shards.len(), self.tracking.clone());
        db.seed = self.seed;
        db
    }

    pub(super) fn swap_contents(&self, other: &Db) {
        for (mine, theirs) in self.shards.iter().zip(other.shards.iter()) {
            std::mem::swap(&mut *write(&mine.map), &mut *write(&theirs.map));
            let volatile = mine.volatile.load(Ordering::Relaxed);
            mine.volatile
                .store(theirs.volatile.load(Ordering::Relaxed), Ordering::Relaxed);
            theirs.volatile.store(volatile, Ordering::Relaxed);
            let windowed = mine.windowed.load(Ordering::Relaxed);
            mine.windowed
                .store(theirs.windowed.load(Ordering::Relaxed), Ordering::Relaxed);
            theirs.windowed.store(windowed, Ordering::Relaxed);
        }
        self.waits.signal_all();
    }

    /// Notes that a client waits on `key` (see `take_ready`); once per client and key.
    pub fn add_waiter(&self, key: &[u8]) {
        self.waits.add_waiter(key);
    }

    pub fn remove_waiter(&self, key: &[u8]) {
        self.waits.remove_waiter(key);
    }

    /// Notes that the value at `key` may now serve a client that waits on it. Creating or
    /// replacing a key does this by itself; a command that makes an existing value able to
    /// serve (a push onto a value that stays when empty) calls it.
    pub fn signal_ready(&self, key: &[u8]) {
        self.waits.signal(key);
    }

    /// The waited keys signalled since the last call, in the order they were, each once.
    pub fn take_ready(&self) -> Vec<Box<[u8]>> {
        self.waits.take_ready()
    }

    /// The key's shard and hash.
    fn locate(&self, key: &[u8]) -> (&Shard, u64) {
        let hash = xxh3_64_with_seed(key, self.seed);
        let index = (hash >> 32) as usize & (self.shards.len() - 1);
        (&self.shards[index], hash)
    }

    /// Calls `f` with the live value at `key`, if any, read-locked, and counts an access to it.
    pub fn get<R>(&self, key: &[u8], now: u64, f: impl FnOnce(Option<&Value>) -> R) -> R {
        self.get_for(key, now, 1, f)
    }

    /// `get` without counting an access: for commands that only inspect a key (TYPE, OBJECT,
    /// MEMORY USAGE), which Redis's LOOKUP_NOTOUCH leaves its access time alone for.
    pub fn peek<R>(&self, key: &[u8], now: u64, f: impl FnOnce(Option<&Value>) -> R) -> R {
        self.get_for(key, now, 0, f)
    }

    /// `get` for a run of `accesses` commands on the key (`cmd::runs`): one look-up, as many
    /// accesses counted as commands ran, as they would have been one by one.
    pub fn get_for<R>(
        &self,
        key: &[u8],
        now: u64,
        accesses: usize,
        f: impl FnOnce(Option<&Value>) -> R,
    ) -> R {
        let (shard, hash) = self.locate(key);
        let map = read(&shard.map);
        match map.get(hash, key).filter(|entry| entry.is_live(now)) {
            Some(entry) => {
                entry.access.touch_times(&self.tracking, accesses);
                f(Some(&read(&entry.value)))
            }
            None => f(None),
        }
    }

    /// Counts an access to `key` (TOUCH); false if there is no live key.
    pub fn touch(&self, key: &[u8], now: u64) -> bool {
        self.get_for(key, now, 1, |value| value.is_some())
    }

    /// The access bits of the live key (see `access.rs`), without counting an access.
    pub fn access_bits(&self, key: &[u8], now: u64) -> Option<u32> {
        let (shard, hash) = self.locate(key);
        let map = read(&shard.map);
        map.get(hash, key)
            .filter(|entry| entry.is_live(now))
            .map(|entry| entry.access.get())
    }

    /// Sets the live key's access bits (RESTORE's IDLETIME and FREQ, `Tracking::restored`).
    pub fn set_access_bits(&self, key: &[u8], now: u64, bits: u32) {
        let (shard, hash) = self.locate(key);
        let map = read(&shard.map);
        if let Some(entry) = map.get(hash, key).filter(|entry| entry.is_live(now)) {
            entry.access.set(bits);
        }
    }

    pub fn tracking(&self) -> &Tracking {
        &self.tracking
    }

    /// The live entry at `key`: its expiry time (0 for none) and a handle on its value, for a
    /// reader that reads the value at its own pace, as `shard_entries` gives them.
    pub fn entry(&self, key: &[u8], now: u64) -> Option<(u64, ValueHandle)> {
        let (shard, hash) = self.locate(key);
        let map = read(&shard.map);
        map.get(hash, key)
            .filter(|entry| entry.is_live(now))
            .map(|entry| {
                (
                    entry.expires_at.load(Ordering::Relaxed),
                    entry.value.clone(),
                )
            })
    }

    /// Calls `f` with the live value at `key`, if any, write-locked.
    pub fn get_mut<R>(&self, key: &[u8], now: u64, f: impl FnOnce(Option<&mut Value>) -> R) -> R {
        let (shard, hash) = self.locate(key);
        let map = read(&shard.map);
        match map.get(hash, key).filter(|entry| entry.is_live(now)) {
            Some(entry) => {
                entry.touch();
                entry.access.touch(&self.tracking);
                f(Some(&mut write(&entry.value)))
            }
            None => f(None),
        }
    }

    pub fn watch(&self, key: &[u8], now: u64) -> WatchToken {
        let (shard, hash) = self.locate(key);
        let map = read(&shard.map);
        WatchToken(
            map.get(hash, key)
                .filter(|entry| entry.is_live(now))
                .map(|entry| (entry.value.clone(), entry.version.load(Ordering::Relaxed))),
        )
    }

    /// Whether `key` is still as WATCH saw it: same entry, no write since, not expired.
    pub fn unchanged_since(&self, key: &[u8], now: u64, token: &WatchToken) -> bool {
        let (shard, hash) = self.locate(key);
        let map = read(&shard.map);
        let current = map.get(hash, key).filter(|entry| entry.is_live(now));
        match (current, &token.0) {
            (None, None) => true,
            (Some(entry), Some((value, version))) => {
                Arc::ptr_eq(&entry.value, value)
                    && entry.version.load(Ordering::Relaxed) == *version
            }
            _ => false,
        }
    }

    /// Calls `f` with the value at `key`, creating it with `create` first if there is none.
    /// The flag tells `f` whether the value was just created.
    pub fn get_or_create<R, E>(
        &self,
        key: &[u8],
        now: u64,
        create: impl FnOnce() -> Result<Value, E>,
        f: impl FnOnce(&mut Value, bool) -> R,
    ) -> Result<R, E> {
        self.get_or_create_for(key, now, 1, create, f)
    }

    /// `get_or_create` for a run of `accesses` commands on the key (`cmd::runs`): one look-up,
    /// as many accesses counted as commands ran after the first, which may create the key.
    pub fn get_or_create_for<R, E>(
        &self,
        key: &[u8],
        now: u64,
        accesses: usize,
        create: impl FnOnce() -> Result<Value, E>,
        f: impl FnOnce(&mut Value, bool) -> R,
    ) -> Result<R, E> {
        let (shard, hash) = self.locate(key);
        {
            let map = read(&shard.map);
            if let Some(entry) = map.get(hash, key).filter(|entry| entry.is_live(now)) {
                entry.touch();
                entry.access.touch_times(&self.tracking, accesses);
                return Ok(f(&mut write(&entry.value), false));
            }
        }
        let mut map = write(&shard.map);
        if let Some(entry) = map.get_mut(hash, key) {
            if entry.is_live(now) {
                entry.touch();
                entry.access.touch_times(&self.tracking, accesses);
                return Ok(f(&mut entry.value_mut(), false));
            }
        }
        let value = create()?;
        shard.note(&value);
        Self::forget_expiry(shard, map.remove(hash, key));
        let fresh = Entry::new(value, 0, self.tracking.fresh());
        let (entry, _) = map.insert(hash, key, fresh);
        entry
            .access
            .touch_times(&self.tracking, accesses.saturating_sub(1));
        let result = f(&mut entry.value_mut(), true);
        self.waits.signal(key);
        Ok(result)
    }

    /// Stores `value` unless a live key exists; false (and nothing changed) if one does.
    pub fn insert_new(&self, key: &[u8], value: Value, now: u64) -> bool {
        let (shard, hash) = self.locate(key);
        let mut map = write(&shard.map);
        if map.get(hash, key).is_some_and(|entry| entry.is_live(now)) {
            return false;
        }
        shard.note(&value);
        let entry = Entry::new(value, 0, self.tracking.fresh());
        Self::forget_expiry(shard, map.insert(hash, key, entry).1);
        self.waits.signal(key);
        true
    }

    /// Stores `value`, replacing whatever was there. Under an LFU policy a replaced key's
    /// counter carries over, as Redis's overwrite keeps it (the lookup before the write, which
    /// counts the access, is the caller's).
    pub fn insert(&self, key: &[u8], value: Value, expires_at: u64) {
        let (shard, hash) = self.locate(key);
        let mut map = write(&shard.map);
        if expires_at != 0 {
            shard.volatile.fetch_add(1, Ordering::Relaxed);
        }
        shard.note(&value);
        let entry = Entry::new(value, expires_at, self.tracking.fresh());
        let (entry, old) = map.insert(hash, key, entry);
        if let Some(old) = old.as_ref().filter(|_| self.tracking.is_lfu()) {
            entry.access.set(old.access.get());
        }
        Self::forget_expiry(shard, old);
        self.waits.signal(key);
    }

    fn forget_expiry(shard: &Shard, old: Option<Entry>) {
        if old.is_some_and(|entry| entry.expires_at.load(Ordering::Relaxed) != 0) {
            shard.volatile.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Removes the key; true if a live one was there.
    pub fn remove(&self, key: &[u8], now: u64) -> bool {
        self.take(key, now).is_some()
    }

    /// Removes the key and hands back its value and expiry time.
    pub fn take(&self, key: &[u8], now: u64) -> Option<(Value, u64)> {
        let (shard, hash) = self.locate(key);
        let mut map = write(&shard.map);
        let entry = map.remove(hash, key)?;
        let expires_at = entry.expires_at.load(Ordering::Relaxed);
        if expires_at != 0 {
            shard.volatile.fetch_sub(1, Ordering::Relaxed);
        }
        if !entry.is_live(now) {
            return None;
        }
        // A snapshot in progress may share the value; then it gets a copy and the snapshot
        // keeps writing the original.
        let value = match Arc::try_unwrap(entry.value) {
            Ok(lock) => lock.into_inner().unwrap_or_else(|p| p.into_inner()),
            Err(shared) => read(&shared).clone(),
        };
        Some((value, expires_at))
    }

    /// Removes the key if `doomed` says so of its live value, deciding under the shard's write
    /// lock so that no write lands between the check and the removal; true if it was removed.
    pub fn remove_if(&self, key: &[u8], now: u64, doomed: impl FnOnce(&Value) -> bool) -> bool {
        let (shard, hash) = self.locate(key);
        let mut map = write(&shard.map);
        let remove = map
            .get(hash, key)
            .filter(|entry| entry.is_live(now))
            .is_some_and(|entry| doomed(&read(&entry.value)));
        if remove {
            Self::forget_expiry(shard, map.remove(hash, key));
        }
        remove
    }

    pub fn contains(&self, key: &[u8], now: u64) -> bool {
        let (shard, hash) = self.locate(key);
        let map = read(&shard.map);
        map.get(hash, key).is_some_and(|entry| entry.is_live(now))
    }

    /// None if the key is missing; Some(0) if it has no expiry; else the expiry time.
    pub fn expires_at(&self, key: &[u8], now: u64) -> Option<u64> {
        let (shard, hash) = self.locate(key);
        let map = read(&shard.map);
        let entry = map.get(hash, key).filter(|entry| entry.is_live(now))?;
        Some(entry.expires_at.load(Ordering::Relaxed))
    }

    /// Sets (or with 0, clears) the expiry of a live key; false if there is none.
    pub fn set_expires_at(&self, key: &[u8], now: u64, at: u64) -> bool {
        let (shard, hash) = self.locate(key);
        let map = read(&shard.map);
        let Some(entry) = map.get(hash, key).filter(|entry| entry.is_live(now)) else {
            return false;
        };
        entry.touch();
        entry.access.touch(&self.tracking);
        let before = entry.expires_at.swap(at, Ordering::Relaxed);
        match (before == 0, at == 0) {
            (true, false) => _ = shard.volatile.fetch_add(1, Ordering::Relaxed),
            (false, true) => _ = shard.volatile.fetch_sub(1, Ordering::Relaxed),
            _ => {}
        }
        true
    }

    /// Keys stored, including expired ones not yet swept (as Redis's DBSIZE counts them).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| read(&s.map).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn volatile_len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.volatile.load(Ordering::Relaxed))
            .sum()
    }

    pub fn clear(&self) {
        for shard in self.shards.iter() {
            let mut map = write(&shard.map);
            let old = std::mem::replace(&mut *map, KeyTable::new());
            shard.volatile.store(0, Ordering::Relaxed);
            drop(map);
            // Freeing a large keyspace takes a while; do it after releasing the shard.
            drop(old);
        }
    }

    /// Offers `f` up to `count` live keys picked at random for eviction (only keys with an
    /// expiry time, if `volatile_only`), with their expiry time and access bits. A pick is a
    /// random entry of a random shard, as RANDOMKEY's; should a few picks per key wanted find
    /// nothing to offer (volatile keys few among many), one shard's entries are walked from a
    /// random one instead, so that a volatile key is found if there is one.
    pub(super) fn sample(
        &self,
        volatile_only: bool,
        count: usize,
        now: u64,
        random: &mut u64,
        mut f: impl FnMut(&[u8], u64, u32),
    ) {
        let mask = self.shards.len() - 1;
        let eligible = |entry: &Entry, now| entry.evictable(now, volatile_only);
        let mut offer = |key: &[u8], entry: &Entry| {
            f(
                key,
                entry.expires_at.load(Ordering::Relaxed),
                entry.access.get(),
            )
        };
        let has_candidates = |shard: &Shard| {
            if volatile_only {
                shard.volatile.load(Ordering::Relaxed) > 0
            } else {
                read(&shard.map).len() > 0
            }
        };
        let mut offered = 0;
        for _ in 0..count.saturating_mul(3) {
            if offered == count {
                return;
            }
            let pick = split_mix(random);
            let first = (pick >> 32) as usize & mask;
            let Some(shard) = (0..self.shards.len())
                .map(|step| &self.shards[(first + step) & mask])
                .find(|shard| has_candidates(shard))
            else {
                return;
            };
            let map = read(&shard.map);
            if let Some((key, entry)) = map.at(pick as usize % map.len().max(1)) {
                if eligible(entry, now) {
                    offer(key, entry);
                    offered += 1;
                }
            }
        }
        if offered > 0 || count == 0 {
            return;
        }
        let pick = split_mix(random);
        let first = (pick >> 32) as usize & mask;
        for step in 0..self.shards.len() {
            let shard = &self.shards[(first + step) & mask];
            if !has_candidates(shard) {
                continue;
            }
            let map = read(&shard.map);
            let start = pick as usize % map.len().max(1);
            for index in (start..map.len()).chain(0..start) {
                if let Some((key, entry)) = map.at(index).filter(|(_, e)| eligible(e, now)) {
                    offer(key, entry);
                    offered += 1;
                    if offered == count {
                        return;
                    }
                }
            }
            if offered > 0 {
                return;
            }
        }
    }

    /// Removes the live key for eviction (if `volatile_only`, only if it has an expiry time);
    /// false if there is no such key. The value is dropped here, not copied out, even if a
    /// snapshot shares it.
    pub(super) fn evict(&self, key: &[u8], now: u64, volatile_only: bool) -> bool {
        let (shard, hash) = self.locate(key);
        let mut map = write(&shard.map);
        let evictable = map
            .get(hash, key)
            .is_some_and(|entry| entry.evictable(now, volatile_only));
        if evictable {
            let entry = map.remove(hash, key);
            Self::forget_expiry(shard, entry);
        }
        evictable
    }

    /// Removes expired keys from at most `max_shards` shards that have volatile keys, starting at
    /// `start`; returns how many keys were removed.
    pub fn sweep_expired(&self, now: u64, start: usize, max_shards: usize) -> usize {
        let mut removed = 0;
        for step in 0..max_shards.min(self.shards.len()) {
            let shard = &self.shards[(start + step) % self.shards.len()];
            if shard.volatile.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let mut map = write(&shard.map);
            let before = map.len();
            map.retain(|_, entry| entry.is_live(now));
            let gone = before - map.len();
            shard.volatile.fetch_sub(gone, Ordering::Relaxed);
            removed += gone;
        }
        removed
    }

    /// Calls `age` on each time-windowed filter in at most `max_shards` shards from `start` for
    /// which `needs_aging` (asked under a read lock) says so; shards known to hold none are
    /// skipped. Aging changes no answer (it clears what no look-up sees any more), so WATCH is
    /// not told.
    pub fn sweep_windowed(
        &self,
        start: usize,
        max_shards: usize,
        needs_aging: impl Fn(&Value) -> bool,
        mut age: impl FnMut(&mut Value),
    ) {
        for step in 0..max_shards.min(self.shards.len()) {
            let shard = &self.shards[(start + step) % self.shards.len()];
            if !shard.windowed.load(Ordering::Relaxed) {
                continue;
            }
            let map = read(&shard.map);
            let mut found = false;
            for (_, entry) in map.iter() {
                let aging = {
                    let value = read(&entry.value);
                    found |= matches!(*value, Value::Windowed(_));
                    needs_aging(&value)
                };
                if aging {
                    age(&mut write(&entry.value));
                }
            }
            if !found {
                shard.windowed.store(false, Ordering::Relaxed);
            }
        }
    }

    /// Every live key of one shard with its expiry time and a handle on its value, taken under a
    /// brief read lock of the shard; the caller then reads the values at its own pace.
    pub fn shard_entries(&self, shard: usize, now: u64) -> Vec<(Box<[u8]>, u64, ValueHandle)> {
        let map = read(&self.shards[shard].map);
        map.iter()
            .filter(|(_, entry)| entry.is_live(now))
            .map(|(key, entry)| {
                (
                    Box::from(key),
                    entry.expires_at.load(Ordering::Relaxed),
                    entry.value.clone(),
                )
            })
            .collect()
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Sums `f` over every live value, for memory and filter statistics.
    pub fn fold_values<T>(&self, now: u64, init: T, mut f: impl FnMut(T, &[u8], &Value) -> T) -> T {
        let mut acc = init;
        for shard in self.shards.iter() {
            let map = read(&shard.map);
            for (key, entry) in map.iter().filter(|(_, e)| e.is_live(now)) {
                acc = f(acc, key, &read(&entry.value));
            }
        }
        acc
    }
}

/// The next number of a SplitMix64 sequence: cheap, and good enough to spread RANDOMKEY's
/// picks from one seed.
pub(super) fn split_mix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str) -> Value {
        Value::String(s.as_bytes().to_vec())
    }

    #[test]
    fn reads_and_writes_count_as_accesses_but_inspecting_does_not() {
        let db = Db::new(4);
        let idle = |db: &Db| {
            let bits = db.access_bits(b"k", 0).expect("the key");
            db.tracking().idle_secs(bits)
        };
        let clock = AtomicU64::new(1_000_000);
        let wait = |db: &Db| {
            let now = clock.fetch_add(30_000, Ordering::Relaxed) + 30_000;
            db.tracking().tick(now);
        };
        db.tracking().tick(1_000_000);
        db.insert(b"k", string("v"), 0);
        wait(&db);
        // What TYPE, OBJECT, EXISTS and TTL use leaves the access time alone.
        db.peek(b"k", 0, |v| assert!(v.is_some()));
        assert!(db.contains(b"k", 0));
        assert_eq!(db.expires_at(b"k", 0), Some(0));
        assert_eq!(idle(&db), 30);
        db.get(b"k", 0, |_| ());
        assert_eq!(idle(&db), 0);
        for access in [
            &|db: &Db| db.get_mut(b"k", 0, |_| ()),
            &|db: &Db| _ = db.set_expires_at(b"k", 0, 0),
            &|db: &Db| _ = db.touch(b"k", 0),
            &|db: &Db| {
                db.get_or_create(b"k", 0, || Ok::<_, ()>(string("x")), |_, _| ())
                    .unwrap()
            },
            &|db: &Db| db.insert(b"k", string("w"), 0),
        ] as [&dyn Fn(&Db); 5]
        {
            wait(&db);
            assert_eq!(idle(&db), 30);
            access(&db);
            assert_eq!(idle(&db), 0);
        }
    }

    #[test]
    fn expiry_hides_and_sweeps() {
        let db = Db::new(4);
        db.insert(b"a", string("1"), 100);
        db.insert(b"b", string("2"), 0);
        assert!(db.contains(b"a", 99));
        assert!(!db.contains(b"a", 100));
        assert_eq!(db.volatile_len(), 1);
        assert_eq!(db.sweep_expired(100, 0, 4), 1);
        assert_eq!((db.len(), db.volatile_len()), (1, 0));
    }

    #[test]
    fn create_replaces_an_expired_key() {
        let db = Db::new(1);
        db.insert(b"k", string("old"), 10);
        let created = db
            .get_or_create(
                b"k",
                20,
                || Ok::<_, ()>(string("new")),
                |_, created| created,
            )
            .unwrap();
        assert!(created);
        assert_eq!(db.expires_at(b"k", 20), Some(0));
        assert_eq!(db.volatile_len(), 0);
    }
}
