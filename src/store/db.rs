use super::{glob_match, read, write, Value};
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Keys are chosen by clients, so the hash is seeded per process to keep collisions unpredictable.
#[derive(Clone)]
struct KeyHasherBuilder {
    seed: u64,
}

struct KeyHasher {
    state: u64,
}

impl BuildHasher for KeyHasherBuilder {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher { state: self.seed }
    }
}

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.state = xxh3_64_with_seed(bytes, self.state);
    }
    fn write_usize(&mut self, n: usize) {
        self.state = (self.state ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.state
    }
}

fn random_seed() -> u64 {
    std::collections::hash_map::RandomState::new().hash_one(0u64)
}

/// A value and its lock, shareable: a snapshot holds it while it copies a large filter in
/// pieces, without holding the shard's map lock.
pub type ValueHandle = Arc<RwLock<Value>>;

/// One key's slot. `expires_at` is Unix milliseconds, 0 for none. `version` counts the writes
/// to this entry, for WATCH.
pub struct Entry {
    value: ValueHandle,
    expires_at: AtomicU64,
    version: AtomicU64,
}

/// What WATCH remembers of a key: the entry it saw (held, so that its identity cannot be reused
/// by a new entry) and that entry's version; None if the key did not exist.
pub struct WatchToken(Option<(ValueHandle, u64)>);

impl Entry {
    fn new(value: Value, expires_at: u64) -> Entry {
        Entry {
            value: Arc::new(RwLock::new(value)),
            expires_at: AtomicU64::new(expires_at),
            version: AtomicU64::new(0),
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

    fn is_live(&self, now: u64) -> bool {
        let at = self.expires_at.load(Ordering::Relaxed);
        at == 0 || at > now
    }
}

type Map = HashMap<Box<[u8]>, Entry, KeyHasherBuilder>;

struct Shard {
    map: RwLock<Map>,
    /// Keys in this shard that have an expiry time, so the sweeper can skip shards without any.
    volatile: AtomicUsize,
}

/// Which keys SCAN returns.
pub struct ScanFilter<'a> {
    pub pattern: Option<&'a [u8]>,
    pub type_name: Option<&'a [u8]>,
}

pub struct Db {
    shards: Box<[Shard]>,
    shard_seed: u64,
}

impl Db {
    pub fn new(shards: usize) -> Db {
        let count = shards.max(1).next_power_of_two();
        let builder = KeyHasherBuilder {
            seed: random_seed(),
        };
        Db {
            shards: (0..count)
                .map(|_| Shard {
                    map: RwLock::new(HashMap::with_hasher(builder.clone())),
                    volatile: AtomicUsize::new(0),
                })
                .collect(),
            shard_seed: random_seed(),
        }
    }

    fn shard(&self, key: &[u8]) -> &Shard {
        let index = xxh3_64_with_seed(key, self.shard_seed) as usize & (self.shards.len() - 1);
        &self.shards[index]
    }

    /// Calls `f` with the live value at `key`, if any, read-locked.
    pub fn get<R>(&self, key: &[u8], now: u64, f: impl FnOnce(Option<&Value>) -> R) -> R {
        let map = read(&self.shard(key).map);
        match map.get(key).filter(|entry| entry.is_live(now)) {
            Some(entry) => f(Some(&read(&entry.value))),
            None => f(None),
        }
    }

    /// Calls `f` with the live value at `key`, if any, write-locked.
    pub fn get_mut<R>(&self, key: &[u8], now: u64, f: impl FnOnce(Option<&mut Value>) -> R) -> R {
        let map = read(&self.shard(key).map);
        match map.get(key).filter(|entry| entry.is_live(now)) {
            Some(entry) => {
                entry.touch();
                f(Some(&mut write(&entry.value)))
            }
            None => f(None),
        }
    }

    pub fn watch(&self, key: &[u8], now: u64) -> WatchToken {
        let map = read(&self.shard(key).map);
        WatchToken(
            map.get(key)
                .filter(|entry| entry.is_live(now))
                .map(|entry| (entry.value.clone(), entry.version.load(Ordering::Relaxed))),
        )
    }

    /// Whether `key` is still as WATCH saw it: same entry, no write since, not expired.
    pub fn unchanged_since(&self, key: &[u8], now: u64, token: &WatchToken) -> bool {
        let map = read(&self.shard(key).map);
        let current = map.get(key).filter(|entry| entry.is_live(now));
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
        let shard = self.shard(key);
        {
            let map = read(&shard.map);
            if let Some(entry) = map.get(key).filter(|entry| entry.is_live(now)) {
                entry.touch();
                return Ok(f(&mut write(&entry.value), false));
            }
        }
        let mut map = write(&shard.map);
        if let Some(entry) = map.get_mut(key) {
            if entry.is_live(now) {
                entry.touch();
                return Ok(f(&mut entry.value_mut(), false));
            }
        }
        let value = create()?;
        Self::forget_expiry(shard, map.remove(key));
        let entry = map.entry(key.into()).or_insert(Entry::new(value, 0));
        let result = f(&mut entry.value_mut(), true);
        Ok(result)
    }

    /// Stores `value` unless a live key exists; false (and nothing changed) if one does.
    pub fn insert_new(&self, key: &[u8], value: Value, now: u64) -> bool {
        let shard = self.shard(key);
        let mut map = write(&shard.map);
        if map.get(key).is_some_and(|entry| entry.is_live(now)) {
            return false;
        }
        Self::forget_expiry(shard, map.insert(key.into(), Entry::new(value, 0)));
        true
    }

    /// Stores `value`, replacing whatever was there.
    pub fn insert(&self, key: &[u8], value: Value, expires_at: u64) {
        let shard = self.shard(key);
        let mut map = write(&shard.map);
        if expires_at != 0 {
            shard.volatile.fetch_add(1, Ordering::Relaxed);
        }
        Self::forget_expiry(shard, map.insert(key.into(), Entry::new(value, expires_at)));
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
        let shard = self.shard(key);
        let mut map = write(&shard.map);
        let entry = map.remove(key)?;
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

    pub fn contains(&self, key: &[u8], now: u64) -> bool {
        let map = read(&self.shard(key).map);
        map.get(key).is_some_and(|entry| entry.is_live(now))
    }

    /// None if the key is missing; Some(0) if it has no expiry; else the expiry time.
    pub fn expires_at(&self, key: &[u8], now: u64) -> Option<u64> {
        let map = read(&self.shard(key).map);
        let entry = map.get(key).filter(|entry| entry.is_live(now))?;
        Some(entry.expires_at.load(Ordering::Relaxed))
    }

    /// Sets (or with 0, clears) the expiry of a live key; false if there is none.
    pub fn set_expires_at(&self, key: &[u8], now: u64, at: u64) -> bool {
        let shard = self.shard(key);
        let map = read(&shard.map);
        let Some(entry) = map.get(key).filter(|entry| entry.is_live(now)) else {
            return false;
        };
        entry.touch();
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
            let empty = HashMap::with_hasher(map.hasher().clone());
            let old = std::mem::replace(&mut *map, empty);
            shard.volatile.store(0, Ordering::Relaxed);
            drop(map);
            // Freeing a large keyspace takes a while; do it after releasing the shard.
            drop(old);
        }
    }

    pub fn keys_matching(&self, pattern: &[u8], now: u64) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        for shard in self.shards.iter() {
            let map = read(&shard.map);
            keys.extend(
                map.iter()
                    .filter(|(key, entry)| entry.is_live(now) && glob_match(pattern, key, false))
                    .map(|(key, _)| key.to_vec()),
            );
        }
        keys
    }

    /// One SCAN step. The cursor is a shard index: each call returns whole shards until `count`
    /// keys are gathered, so a key present for the whole scan is returned exactly once.
    pub fn scan(
        &self,
        cursor: u64,
        count: usize,
        filter: &ScanFilter,
        now: u64,
    ) -> (u64, Vec<Vec<u8>>) {
        let mut keys = Vec::new();
        let mut index = cursor as usize;
        while index < self.shards.len() && keys.len() < count.max(1) {
            let map = read(&self.shards[index].map);
            for (key, entry) in map.iter() {
                if !entry.is_live(now) || filter.pattern.is_some_and(|p| !glob_match(p, key, false))
                {
                    continue;
                }
                if let Some(wanted) = filter.type_name {
                    if !read(&entry.value)
                        .type_name()
                        .as_bytes()
                        .eq_ignore_ascii_case(wanted)
                    {
                        continue;
                    }
                }
                keys.push(key.to_vec());
            }
            index += 1;
        }
        let next = if index >= self.shards.len() {
            0
        } else {
            index as u64
        };
        (next, keys)
    }

    /// A live key chosen at random, or None if there is none.
    pub fn random_key(&self, now: u64, random: u64) -> Option<Vec<u8>> {
        let count = self.shards.len();
        (0..count).find_map(|step| {
            let map = read(&self.shards[(random as usize + step) % count].map);
            let live: Vec<_> = map
                .iter()
                .filter(|(_, e)| e.is_live(now))
                .map(|(k, _)| k)
                .collect();
            (!live.is_empty()).then(|| live[(random >> 32) as usize % live.len()].to_vec())
        })
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

    /// Every live key of one shard with its expiry time and a handle on its value, taken under a
    /// brief read lock of the shard; the caller then reads the values at its own pace.
    pub fn shard_entries(&self, shard: usize, now: u64) -> Vec<(Box<[u8]>, u64, ValueHandle)> {
        let map = read(&self.shards[shard].map);
        map.iter()
            .filter(|(_, entry)| entry.is_live(now))
            .map(|(key, entry)| {
                (
                    key.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str) -> Value {
        Value::String(s.as_bytes().to_vec())
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

    #[test]
    fn scan_visits_every_key_once() {
        let db = Db::new(16);
        for i in 0..500 {
            db.insert(format!("k{i}").as_bytes(), string("v"), 0);
        }
        let filter = ScanFilter {
            pattern: None,
            type_name: None,
        };
        let (mut cursor, mut seen) = (0, Vec::new());
        loop {
            let (next, keys) = db.scan(cursor, 10, &filter, 0);
            seen.extend(keys);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 500);
    }
}
