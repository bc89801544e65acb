//! The table behind large sets, hashes and sorted sets: entries in one dense vector, found
//! through an open-addressing index of their positions (linear probing, four bytes a bucket).
//! An entry costs its key, its value and some six bytes of index, about what std's map costs,
//! and the dense vector gives SSCAN, HSCAN and ZSCAN a real cursor.
//!
//! The cursor counts positions down: a step returns the `count` entries below it, and the next
//! cursor is the lowest position it returned (0 once it reaches the bottom, so a scan ends).
//! Removing an entry moves the last one into its place, so an entry only ever moves down, and
//! one the scan has not reached yet stays below the cursor: every entry present for the whole
//! scan is returned at least once, whatever is added or removed meanwhile (an entry moved down
//! from above the cursor may be returned twice, which a scan allows). New entries go on top,
//! where a scan under way no longer looks, as Redis allows. Growing or shrinking the index
//! never moves an entry.

use super::members::Bytes;
use std::sync::OnceLock;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The fewest buckets an index with entries has.
const MIN_BUCKETS: usize = 8;

/// Members are chosen by clients, so their hash is seeded per process.
fn hash(key: &[u8]) -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(0u64)
    });
    xxh3_64_with_seed(key, seed)
}

#[derive(Clone)]
pub(crate) struct DenseMap<V> {
    entries: Vec<(Bytes, V)>,
    /// Each bucket: an entry's position plus one, or 0 for none. Empty, or a power of two
    /// long and at most three quarters full.
    index: Box<[u32]>,
}

impl<V: std::fmt::Debug> std::fmt::Debug for DenseMap<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

impl<V> Default for DenseMap<V> {
    fn default() -> Self {
        DenseMap {
            entries: Vec::new(),
            index: Box::new([]),
        }
    }
}

impl<V> FromIterator<(Bytes, V)> for DenseMap<V> {
    fn from_iter<I: IntoIterator<Item = (Bytes, V)>>(iter: I) -> Self {
        let mut map = DenseMap::default();
        for (key, value) in iter {
            map.insert(key, value);
        }
        map
    }
}

impl<V> DenseMap<V> {
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn mask(&self) -> usize {
        self.index.len() - 1
    }

    /// The bucket that holds `key`'s position, if it is there.
    fn bucket_of(&self, key: &[u8]) -> Option<usize> {
        if self.index.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut bucket = hash(key) as usize & mask;
        loop {
            match self.index[bucket] {
                0 => return None,
                held if *self.entries[held as usize - 1].0 == *key => return Some(bucket),
                _ => bucket = (bucket + 1) & mask,
            }
        }
    }

    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        let bucket = self.bucket_of(key)?;
        Some(&self.entries[self.index[bucket] as usize - 1].1)
    }

    pub(crate) fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let bucket = self.bucket_of(key)?;
        let at = self.index[bucket] as usize - 1;
        Some(&mut self.entries[at].1)
    }

    pub(crate) fn contains_key(&self, key: &[u8]) -> bool {
        self.bucket_of(key).is_some()
    }

    /// Sets `key`'s value; returns the value it replaced.
    pub(crate) fn insert(&mut self, key: Bytes, value: V) -> Option<V> {
        if let Some(bucket) = self.bucket_of(&key) {
            let at = self.index[bucket] as usize - 1;
            return Some(std::mem::replace(&mut self.entries[at].1, value));
        }
        if (self.entries.len() + 1) * 4 > self.index.len() * 3 {
            self.rebuild_index((self.index.len() * 2).max(MIN_BUCKETS));
        }
        if self.entries.len() == self.entries.capacity() {
            // Half as much again rather than double, as the keyspace's table does: the
            // entries are most of the memory, and their slack stays about a fifth.
            self.entries
                .reserve_exact((self.entries.len() / 2).max(MIN_BUCKETS / 2));
        }
        self.entries.push((key, value));
        let position = self.entries.len() - 1;
        self.place(position);
        None
    }

    /// Removes `key`; returns its value.
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        let bucket = self.bucket_of(key)?;
        let at = self.index[bucket] as usize - 1;
        self.clear_bucket(bucket);
        let last = self.entries.len() - 1;
        if at != last {
            // The last entry moves down into the hole: repoint its bucket.
            let mask = self.mask();
            let mut probe = hash(&self.entries[last].0) as usize & mask;
            while self.index[probe] as usize != last + 1 {
                probe = (probe + 1) & mask;
            }
            self.index[probe] = at as u32 + 1;
        }
        let (_, value) = self.entries.swap_remove(at);
        let buckets = self.index.len();
        if buckets > MIN_BUCKETS && self.entries.len() * 8 < buckets {
            self.rebuild_index(buckets / 2);
            if self.entries.len() * 4 < self.entries.capacity() {
                self.entries.shrink_to(self.entries.len() * 2);
            }
        } else if self.entries.is_empty() {
            *self = DenseMap::default();
        }
        Some(value)
    }

    /// Empties a bucket, shifting the entries probed past it back so that every entry stays
    /// reachable from its home bucket (deletion without tombstones).
    fn clear_bucket(&mut self, bucket: usize) {
        let mask = self.mask();
        let mut hole = bucket;
        let mut next = (bucket + 1) & mask;
        loop {
            let held = self.index[next];
            if held == 0 {
                break;
            }
            let home = hash(&self.entries[held as usize - 1].0) as usize & mask;
            // It may move back to the hole unless its home lies after the hole, up to it.
            if next.wrapping_sub(home) & mask >= next.wrapping_sub(hole) & mask {
                self.index[hole] = held;
                hole = next;
            }
            next = (next + 1) & mask;
        }
        self.index[hole] = 0;
    }

    /// Puts the entry at `position` in the first free bucket from its home.
    fn place(&mut self, position: usize) {
        let mask = self.mask();
        let mut bucket = hash(&self.entries[position].0) as usize & mask;
        while self.index[bucket] != 0 {
            bucket = (bucket + 1) & mask;
        }
        self.index[bucket] = position as u32 + 1;
    }

    fn rebuild_index(&mut self, buckets: usize) {
        self.index = vec![0; buckets].into_boxed_slice();
        for position in 0..self.entries.len() {
            self.place(position);
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &V)> + '_ {
        self.entries.iter().map(|(key, value)| (&**key, value))
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.entries.iter().map(|(key, _)| &**key)
    }

    /// One step of a scan (see the module's comment): the entries below `cursor` (below the
    /// top for 0), at most `count` of them, and the cursor to continue from (0 when done).
    pub(crate) fn scan(&self, cursor: u64, count: usize) -> (u64, &[(Bytes, V)]) {
        let len = self.entries.len();
        let end = match cursor {
            0 => len,
            cursor => usize::try_from(cursor).map_or(len, |cursor| cursor.min(len)),
        };
        let start = end.saturating_sub(count.max(1));
        (start as u64, &self.entries[start..end])
    }

    /// Bytes held beyond the map itself, keys' heap bytes included, values' own heap not.
    pub(crate) fn memory_bytes(&self) -> u64 {
        let entry = std::mem::size_of::<(Bytes, V)>() as u64;
        let keys: u64 = self.entries.iter().map(|(key, _)| key.len() as u64).sum();
        self.entries.capacity() as u64 * entry + self.index.len() as u64 * 4 + keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn key(i: u64) -> Bytes {
        format!("member:{i}").into_bytes().into_boxed_slice()
    }

    /// Steps of a little generator, so the test needs no crate.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn behaves_as_a_map_through_growth_and_shrinking() {
        let mut ours: DenseMap<u64> = DenseMap::default();
        let mut model = HashMap::new();
        let mut state = 0x9E37_79B9_7F4A_7C15;
        for round in 0..60_000u64 {
            let k = next(&mut state) % if round < 30_000 { 5_000 } else { 500 };
            let grow = round < 30_000 || round % 3 == 0;
            if next(&mut state) % 3 != 0 && grow {
                assert_eq!(ours.insert(key(k), round), model.insert(key(k), round));
            } else {
                assert_eq!(ours.remove(&key(k)), model.remove(&key(k)));
            }
            if round % 997 == 0 {
                assert_eq!(ours.len(), model.len());
                for (k, v) in &model {
                    assert_eq!(ours.get(k), Some(v));
                }
            }
        }
        for k in 0..5_000 {
            assert_eq!(ours.get(&key(k)), model.get(&key(k)));
        }
        let keys: Vec<Bytes> = model.keys().cloned().collect();
        for k in keys {
            assert_eq!(ours.remove(&k), model.remove(&k));
        }
        assert!(ours.is_empty() && ours.index.is_empty());
    }

    #[test]
    fn a_scan_returns_every_entry_present_throughout_despite_churn() {
        let mut map: DenseMap<()> = DenseMap::default();
        let stable: HashSet<Bytes> = (0..2_000).map(key).collect();
        stable.iter().for_each(|k| _ = map.insert(k.clone(), ()));
        let mut state = 7;
        let (mut cursor, mut seen, mut calls) = (0, HashSet::new(), 0);
        loop {
            let (next_cursor, found) = map.scan(cursor, 10);
            seen.extend(found.iter().map(|(k, _)| k.clone()));
            calls += 1;
            // Churn: adds and removes of other entries, enough to grow and shrink the index.
            for _ in 0..40 {
                let k = key(10_000 + next(&mut state) % 20_000);
                if calls % 40 < 20 {
                    map.insert(k, ());
                } else {
                    map.remove(&k);
                }
            }
            if next_cursor == 0 {
                break;
            }
            cursor = next_cursor;
        }
        assert!(stable.is_subset(&seen));
        assert!(calls < 2_000, "{calls} calls");
    }

    #[test]
    fn any_cursor_is_answered() {
        let map: DenseMap<()> = (0..100).map(|i| (key(i), ())).collect();
        assert_eq!(map.scan(u64::MAX, 10).1.len(), 10);
        assert_eq!(map.scan(5, 10), (0, &map.entries[..5]));
        let empty: DenseMap<()> = DenseMap::default();
        assert_eq!(empty.scan(0, 10).0, 0);
        assert_eq!(empty.scan(42, 10).0, 0);
    }
}
