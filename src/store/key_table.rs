//! One shard's map from key to entry: a chained hash table whose buckets SCAN can walk.
//!
//! The std map hides its buckets and moves entries between probe positions, so a cursor into it
//! means nothing after a resize. Here a key lives in the chain of bucket `hash & mask`, as in
//! Redis's dict, and the bucket count is a power of two, so a cursor that counts through bucket
//! indexes in reverse-binary order stays valid while the table grows and shrinks (see `scan`).
//!
//! The entries themselves sit in one dense vector and the chains link them by index: no
//! allocation per entry beyond the key, four bytes per bucket, and a random entry is one index
//! away (RANDOMKEY). Removing swaps the last entry into the hole and repoints the one link that
//! named it.

/// No entry: the end of a chain, or an empty bucket.
const NIL: u32 = u32::MAX;

/// The fewest buckets a table with entries has, so small tables do not resize at every insert.
const MIN_BUCKETS: usize = 4;

struct Slot<V> {
    key: Box<[u8]>,
    value: V,
    /// The low half of the key's hash: enough to pick a bucket (at most 2^32 of them) and to
    /// skip most mismatching keys without reading them.
    hash: u32,
    /// The next entry in this bucket's chain, or NIL.
    next: u32,
}

/// How much a SCAN step may still do: entries read and buckets read (empty ones cost too, or a
/// sparse table would make one step walk it all).
pub(crate) struct ScanBudget {
    pub(crate) entries: usize,
    pub(crate) buckets: usize,
}

impl ScanBudget {
    pub(crate) fn is_spent(&self) -> bool {
        self.entries == 0 || self.buckets == 0
    }
}

/// Keys are byte strings; the caller hashes them (with its seed) and passes the hash along, so
/// the one hash also picks the shard. Holds fewer than 2^32 entries, which at about 100 bytes an
/// entry is far beyond any one shard's memory.
pub(crate) struct KeyTable<V> {
    slots: Vec<Slot<V>>,
    /// The first entry of each bucket's chain; empty, or a power of two long.
    buckets: Box<[u32]>,
}

impl<V> KeyTable<V> {
    pub(crate) fn new() -> KeyTable<V> {
        KeyTable {
            slots: Vec::new(),
            buckets: Box::new([]),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    fn bucket_of(&self, hash: u32) -> usize {
        hash as usize & (self.buckets.len() - 1)
    }

    fn find(&self, hash: u64, key: &[u8]) -> Option<usize> {
        if self.buckets.is_empty() {
            return None;
        }
        let hash = hash as u32;
        let mut index = self.buckets[self.bucket_of(hash)];
        while index != NIL {
            let slot = &self.slots[index as usize];
            if slot.hash == hash && *slot.key == *key {
                return Some(index as usize);
            }
            index = slot.next;
        }
        None
    }

    pub(crate) fn get(&self, hash: u64, key: &[u8]) -> Option<&V> {
        self.find(hash, key).map(|index| &self.slots[index].value)
    }

    pub(crate) fn get_mut(&mut self, hash: u64, key: &[u8]) -> Option<&mut V> {
        self.find(hash, key)
            .map(|index| &mut self.slots[index].value)
    }

    /// Stores `value` at `key`, keeping the stored key if there is one; returns the new value
    /// in place and the value it replaced.
    pub(crate) fn insert(&mut self, hash: u64, key: &[u8], value: V) -> (&mut V, Option<V>) {
        if let Some(index) = self.find(hash, key) {
            let old = std::mem::replace(&mut self.slots[index].value, value);
            return (&mut self.slots[index].value, Some(old));
        }
        if self.slots.len() >= self.buckets.len() {
            self.rebucket((self.buckets.len() * 2).max(MIN_BUCKETS));
        }
        if self.slots.len() == self.slots.capacity() {
            // Half as much again rather than double: the entries are most of the table's
            // memory, and this keeps their vector's slack at about a fifth on average rather
            // than a third, as dense as the std map's slots.
            self.slots
                .reserve_exact((self.slots.len() / 2).max(MIN_BUCKETS));
        }
        let hash = hash as u32;
        let bucket = self.bucket_of(hash);
        let index = self.slots.len();
        self.slots.push(Slot {
            key: key.into(),
            value,
            hash,
            next: self.buckets[bucket],
        });
        self.buckets[bucket] = index as u32;
        (&mut self.slots[index].value, None)
    }

    pub(crate) fn remove(&mut self, hash: u64, key: &[u8]) -> Option<V> {
        let index = self.unlink(hash, key)?;
        let removed = self.slots.swap_remove(index);
        if index < self.slots.len() {
            self.repoint(self.slots.len() as u32, index as u32);
        }
        self.shrink_if_sparse();
        Some(removed.value)
    }

    /// Takes the entry at `key` out of its chain, leaving the slot itself in place.
    fn unlink(&mut self, hash: u64, key: &[u8]) -> Option<usize> {
        if self.buckets.is_empty() {
            return None;
        }
        let hash = hash as u32;
        let bucket = self.bucket_of(hash);
        let mut previous = NIL;
        let mut index = self.buckets[bucket];
        while index != NIL {
            let slot = &self.slots[index as usize];
            let next = slot.next;
            if slot.hash == hash && *slot.key == *key {
                match previous {
                    NIL => self.buckets[bucket] = next,
                    _ => self.slots[previous as usize].next = next,
                }
                return Some(index as usize);
            }
            previous = index;
            index = next;
        }
        None
    }

    /// The entry that was at index `from` is now at `to`: fixes the link that named it.
    fn repoint(&mut self, from: u32, to: u32) {
        let bucket = self.bucket_of(self.slots[to as usize].hash);
        if self.buckets[bucket] == from {
            self.buckets[bucket] = to;
            return;
        }
        let mut index = self.buckets[bucket];
        while index != NIL {
            let slot = &mut self.slots[index as usize];
            if slot.next == from {
                slot.next = to;
                return;
            }
            index = slot.next;
        }
    }

    /// Keeps the entries for which `keep` says so.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&[u8], &V) -> bool) {
        let before = self.slots.len();
        self.slots.retain(|slot| keep(&slot.key, &slot.value));
        if self.slots.len() != before {
            // Entries moved down to fill the holes: every chain has to be built again anyway.
            let count = self.fitting_bucket_count();
            self.rebucket(count);
            self.shrink_if_sparse();
        }
    }

    /// The bucket count to have for the entries there are: the present one, unless the table
    /// is an eighth full (where Redis shrinks too); the fewest buckets then, which leaves room
    /// to grow again before resizing.
    fn fitting_bucket_count(&self) -> usize {
        let (len, count) = (self.slots.len(), self.buckets.len());
        if len * 8 < count && count > MIN_BUCKETS {
            len.next_power_of_two().max(MIN_BUCKETS)
        } else {
            count
        }
    }

    /// Gives memory back once the table is sparse: buckets as `fitting_bucket_count` says, and
    /// the vector of entries when it is a quarter full.
    fn shrink_if_sparse(&mut self) {
        let len = self.slots.len();
        if len == 0 {
            *self = KeyTable::new();
            return;
        }
        let count = self.fitting_bucket_count();
        if count != self.buckets.len() {
            self.rebucket(count);
        }
        if len * 4 < self.slots.capacity() {
            self.slots.shrink_to(len * 2);
        }
    }

    /// Rebuilds every chain over `count` buckets (a power of two).
    fn rebucket(&mut self, count: usize) {
        let mut buckets = vec![NIL; count].into_boxed_slice();
        let mask = count - 1;
        for (index, slot) in self.slots.iter_mut().enumerate() {
            let bucket = slot.hash as usize & mask;
            slot.next = buckets[bucket];
            buckets[bucket] = index as u32;
        }
        self.buckets = buckets;
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &V)> {
        self.slots.iter().map(|slot| (&*slot.key, &slot.value))
    }

    /// The entry at position `index` of the dense vector (below `len()`), for random picks.
    pub(crate) fn at(&self, index: usize) -> Option<(&[u8], &V)> {
        self.slots.get(index).map(|slot| (&*slot.key, &slot.value))
    }

    /// Shows `visit` every entry of whole buckets, starting at `cursor`, until `budget` is spent
    /// or the last bucket is done; returns the cursor to continue from, 0 when done.
    ///
    /// The cursor counts through bucket indexes with their bits reversed, as Redis's `dictScan`
    /// does. A key lives in bucket `hash & mask`; doubling the table splits bucket `b` into `b`
    /// and `b + size`, which differ in the new top bit, and that bit is the cursor's lowest: both
    /// halves come after every bucket already done. Halving merges them back, and the merged
    /// bucket is visited whole, so a key present throughout is seen at least once whatever the
    /// resizes between calls; merged buckets may show a key twice. Bits of a cursor above the
    /// mask (from a larger table, or another server) are dropped, never an error.
    pub(crate) fn scan(
        &self,
        cursor: u32,
        budget: &mut ScanBudget,
        mut visit: impl FnMut(&[u8], &V),
    ) -> u32 {
        if self.buckets.is_empty() {
            budget.buckets = budget.buckets.saturating_sub(1);
            return 0;
        }
        let mask = (self.buckets.len() - 1) as u32;
        let mut cursor = cursor;
        loop {
            let mut index = self.buckets[(cursor & mask) as usize];
            while index != NIL {
                let slot = &self.slots[index as usize];
                visit(&slot.key, &slot.value);
                budget.entries = budget.entries.saturating_sub(1);
                index = slot.next;
            }
            budget.buckets = budget.buckets.saturating_sub(1);
            cursor = (cursor | !mask)
                .reverse_bits()
                .wrapping_add(1)
                .reverse_bits();
            if cursor == 0 || budget.is_spent() {
                return cursor;
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    #[cfg(test)]
    fn longest_chain(&self) -> usize {
        let mut longest = 0;
        for &head in self.buckets.iter() {
            let (mut length, mut index) = (0, head);
            while index != NIL {
                length += 1;
                index = self.slots[index as usize].next;
            }
            longest = longest.max(length);
        }
        longest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};
    use xxhash_rust::xxh3::xxh3_64;

    fn key(i: u64) -> Vec<u8> {
        format!("key:{i}").into_bytes()
    }

    fn put(table: &mut KeyTable<u64>, i: u64) {
        table.insert(xxh3_64(&key(i)), &key(i), i);
    }

    fn take(table: &mut KeyTable<u64>, i: u64) -> Option<u64> {
        table.remove(xxh3_64(&key(i)), &key(i))
    }

    /// A small deterministic generator, so that failures replay.
    struct Steps(u64);

    impl Steps {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            xxh3_64(&self.0.to_le_bytes())
        }
    }

    #[test]
    fn agrees_with_a_map_through_inserts_replaces_and_removes() {
        let (mut table, mut model) = (KeyTable::new(), HashMap::new());
        let mut steps = Steps(7);
        for round in 0..20_000 {
            // Mostly inserts at first, mostly removes later: the table grows, then shrinks.
            let i = steps.next() % 3_000;
            let grow = round < 10_000;
            if (steps.next() % 4 != 0) == grow {
                let hash = xxh3_64(&key(i));
                let (value, old) = table.insert(hash, &key(i), round);
                assert_eq!(*value, round);
                assert_eq!(old, model.insert(i, round));
            } else {
                assert_eq!(take(&mut table, i), model.remove(&i));
            }
            assert_eq!(table.len(), model.len());
        }
        for i in 0..3_000 {
            assert_eq!(table.get(xxh3_64(&key(i)), &key(i)), model.get(&i));
        }
        let mut listed: Vec<u64> = table.iter().map(|(_, v)| *v).collect();
        let mut expected: Vec<u64> = model.values().copied().collect();
        listed.sort_unstable();
        expected.sort_unstable();
        assert_eq!(listed, expected);
        assert!(table.buckets.len() <= (table.len() * 8).max(MIN_BUCKETS));
    }

    #[test]
    fn retain_keeps_lookups_working_and_gives_memory_back() {
        let mut table = KeyTable::new();
        (0..10_000).for_each(|i| put(&mut table, i));
        table.retain(|_, v| v % 100 == 0);
        assert_eq!(table.len(), 100);
        assert!(table.buckets.len() <= 128);
        for i in 0..10_000 {
            let found = table.get(xxh3_64(&key(i)), &key(i)).copied();
            assert_eq!(found, (i % 100 == 0).then_some(i));
        }
        table.retain(|_, _| false);
        assert_eq!((table.len(), table.buckets.len()), (0, 0));
    }

    #[test]
    fn full_scan_sees_every_key_present_throughout_while_the_table_resizes() {
        let mut table = KeyTable::new();
        let stable: HashSet<u64> = (0..2_000).collect();
        stable.iter().for_each(|&i| put(&mut table, i));
        let mut steps = Steps(11);
        let (mut seen, mut cursor, mut calls) = (HashSet::new(), 0, 0);
        let mut sizes = HashSet::new();
        loop {
            let mut budget = ScanBudget {
                entries: 10,
                buckets: 100,
            };
            cursor = table.scan(cursor, &mut budget, |_, v| {
                seen.insert(*v);
            });
            calls += 1;
            // Churn between calls: a burst of new keys (the table doubles a few times), later
            // their removal (it shrinks back), so the scan meets both directions.
            let phase = calls % 60;
            for _ in 0..1_000 {
                let extra = 10_000 + steps.next() % 20_000;
                if phase < 30 {
                    put(&mut table, extra);
                } else {
                    take(&mut table, extra);
                }
            }
            if phase == 59 {
                (10_000..30_000).for_each(|i| _ = take(&mut table, i));
            }
            sizes.insert(table.buckets.len());
            if cursor == 0 {
                break;
            }
            assert!(calls < 100_000, "the scan does not end");
        }
        assert!(sizes.len() >= 3, "the table did not resize: {sizes:?}");
        assert!(stable.is_subset(&seen));
    }

    #[test]
    fn each_scan_step_reads_about_its_budget() {
        let mut table = KeyTable::new();
        (0..50_000).for_each(|i| put(&mut table, i));
        let longest = table.longest_chain();
        let mut cursor = 0;
        loop {
            let mut budget = ScanBudget {
                entries: 10,
                buckets: 100,
            };
            let mut read = 0;
            cursor = table.scan(cursor, &mut budget, |_, _| read += 1);
            // A step ends after the bucket in which its budget ran out, which holds at most
            // `longest` entries.
            assert!(read < 10 + longest, "{read} entries read in one step");
            if cursor == 0 {
                break;
            }
        }
    }

    #[test]
    fn a_sparse_table_costs_buckets_not_a_whole_walk() {
        let mut table = KeyTable::new();
        (0..40_000).for_each(|i| put(&mut table, i));
        // One key in 5,000 left: the table shrinks, but every step still has a bucket bound.
        (0..40_000).filter(|i| i % 5_000 != 0).for_each(|i| {
            take(&mut table, i);
        });
        let mut budget = ScanBudget {
            entries: 10,
            buckets: 3,
        };
        let mut read = 0;
        table.scan(0, &mut budget, |_, _| read += 1);
        assert!(read <= 8);
        assert_eq!(budget.buckets, 0);
    }

    #[test]
    fn any_cursor_is_safe() {
        let mut table = KeyTable::new();
        (0..100).for_each(|i| put(&mut table, i));
        for cursor in [1, 12_345, u32::MAX, 1 << 31] {
            let mut budget = ScanBudget {
                entries: usize::MAX,
                buckets: usize::MAX,
            };
            assert_eq!(table.scan(cursor, &mut budget, |_, _| {}), 0);
        }
        let empty: KeyTable<u64> = KeyTable::new();
        let mut budget = ScanBudget {
            entries: 10,
            buckets: 100,
        };
        assert_eq!(empty.scan(99, &mut budget, |_, _| {}), 0);
    }
}
