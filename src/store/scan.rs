//! Walking a database: KEYS, SCAN and RANDOMKEY.

use super::db::{split_mix, Db, Entry};
use super::key_table::ScanBudget;
use super::{glob_match, read};

/// Which keys SCAN returns.
pub struct ScanFilter<'a> {
    pub pattern: Option<&'a [u8]>,
    pub type_name: Option<&'a [u8]>,
}

impl ScanFilter<'_> {
    fn accepts(&self, key: &[u8], entry: &Entry) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, key, false))
            && self.type_name.is_none_or(|wanted| {
                read(&entry.value)
                    .type_name()
                    .as_bytes()
                    .eq_ignore_ascii_case(wanted)
            })
    }
}

/// SCAN's cursor holds the shard in its bits from this one up, and the cursor within the shard's
/// table (32 bits) below.
const SHARD_CURSOR_SHIFT: u32 = 32;

/// How many buckets a SCAN step may read per key of COUNT: empty buckets are cheap, but a
/// sparse table must not make one step walk all of them (Redis allows the same ten).
const SCAN_BUCKETS_PER_KEY: usize = 10;

/// How many random picks RANDOMKEY makes looking for a live key. Should they all land on expired
/// keys the sweeper has not yet removed, it answers the last one, as Redis does on a replica:
/// a client must expect a key from RANDOMKEY to be gone by the time it asks, anyway.
const RANDOM_KEY_PICKS: usize = 100;

impl Db {
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

    /// One SCAN step: the next cursor (0 when the scan is done) and the keys found.
    ///
    /// A step reads about `count` entries (whole buckets, so a few more) or `count` times ten
    /// buckets, whichever comes first, then filters what it read: a MATCH that hits nothing
    /// costs as little per step as one that hits everything, and answers with an empty page.
    /// Shards are scanned one after the other, each with its table's cursor (see
    /// `KeyTable::scan`), so every key present for the whole scan is returned at least once.
    /// A cursor this server never gave (another server's, say) continues from where it points,
    /// or ends the scan if it names no shard.
    pub fn scan(
        &self,
        cursor: u64,
        count: usize,
        filter: &ScanFilter,
        now: u64,
    ) -> (u64, Vec<Vec<u8>>) {
        let (next, keys, _) = self.scan_counting(cursor, count, filter, now);
        (next, keys)
    }

    /// `scan`, also telling how many entries it read.
    fn scan_counting(
        &self,
        cursor: u64,
        count: usize,
        filter: &ScanFilter,
        now: u64,
    ) -> (u64, Vec<Vec<u8>>, usize) {
        let mut shard = (cursor >> SHARD_CURSOR_SHIFT) as usize;
        let mut table_cursor = cursor as u32;
        let mut budget = ScanBudget {
            entries: count.max(1),
            buckets: count.max(1).saturating_mul(SCAN_BUCKETS_PER_KEY),
        };
        let (mut keys, mut read_entries) = (Vec::new(), 0);
        while shard < self.shards.len() {
            let map = read(&self.shards[shard].map);
            table_cursor = map.scan(table_cursor, &mut budget, |key, entry| {
                read_entries += 1;
                if entry.is_live(now) && filter.accepts(key, entry) {
                    keys.push(key.to_vec());
                }
            });
            drop(map);
            if table_cursor == 0 {
                shard += 1;
            }
            if budget.is_spent() {
                break;
            }
        }
        let next = if shard < self.shards.len() {
            (shard as u64) << SHARD_CURSOR_SHIFT | u64::from(table_cursor)
        } else {
            0
        };
        (next, keys, read_entries)
    }

    /// A key chosen at random, None if there is none: live, unless `RANDOM_KEY_PICKS` picks
    /// found only expired keys. A pick is a random shard (the next one with keys, if it has
    /// none) and a random entry of it: a key's chance follows its shard's size, which the hash
    /// keeps about even (Redis is not uniform either).
    pub fn random_key(&self, now: u64, random: u64) -> Option<Vec<u8>> {
        self.random_key_counting(now, random).0
    }

    /// `random_key`, also telling how many picks it made.
    fn random_key_counting(&self, now: u64, random: u64) -> (Option<Vec<u8>>, usize) {
        let mut state = random;
        let mut expired = None;
        let shard_mask = self.shards.len() - 1;
        for pick in 1..=RANDOM_KEY_PICKS {
            let random = split_mix(&mut state);
            let first = (random >> 32) as usize & shard_mask;
            // Empty shards hand the pick on to the next one, so a small keyspace is found
            // without many picks.
            let found = (0..self.shards.len()).find_map(|step| {
                let map = read(&self.shards[(first + step) & shard_mask].map);
                let index = random % map.len().max(1) as u64;
                let (key, entry) = map.at(index as usize)?;
                let live = entry.is_live(now);
                Some((live, (live || expired.is_none()).then(|| key.to_vec())))
            });
            match found {
                None => return (None, pick),
                Some((true, key)) => return (key, pick),
                Some((false, key)) => expired = expired.or(key),
            }
        }
        (expired, RANDOM_KEY_PICKS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Value;

    fn string(s: &str) -> Value {
        Value::String(s.as_bytes().to_vec())
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

    const NO_FILTER: ScanFilter = ScanFilter {
        pattern: None,
        type_name: None,
    };

    #[test]
    fn a_full_scan_returns_every_key_present_throughout_despite_churn() {
        let db = Db::new(4);
        let stable: Vec<Vec<u8>> = (0..400)
            .map(|i| format!("stable:{i}").into_bytes())
            .collect();
        stable.iter().for_each(|key| db.insert(key, string("v"), 0));
        let (mut cursor, mut calls, mut seen) = (0, 0, std::collections::HashSet::new());
        let mut sizes = std::collections::HashSet::new();
        loop {
            let (next, keys) = db.scan(cursor, 10, &NO_FILTER, 0);
            seen.extend(keys);
            calls += 1;
            // Bursts of 400 new keys a call for 25 calls, then their removal: the shards' tables
            // grow to a hundred times their size and shrink back while the scan goes on.
            let burst = calls / 50;
            for i in 0..400 {
                let key = format!("churn:{burst}:{}", (calls % 25) * 400 + i);
                if calls % 50 < 25 {
                    db.insert(key.as_bytes(), string("v"), 0);
                } else {
                    db.remove(key.as_bytes(), 0);
                }
            }
            sizes.insert(read(&db.shards[0].map).bucket_count());
            if next == 0 {
                break;
            }
            cursor = next;
            assert!(calls < 100_000, "the scan does not end");
        }
        assert!(sizes.len() >= 3, "the tables did not resize: {sizes:?}");
        let missing = stable.iter().filter(|key| !seen.contains(*key)).count();
        assert_eq!(missing, 0);
    }

    #[test]
    fn each_scan_step_reads_about_count_entries() {
        let db = Db::new(16);
        for i in 0..50_000 {
            db.insert(format!("k{i}").as_bytes(), string("v"), 0);
        }
        let nothing = ScanFilter {
            pattern: Some(b"no-such-key*"),
            type_name: None,
        };
        for (count, filter) in [(10, &NO_FILTER), (10, &nothing), (100, &nothing)] {
            let (mut cursor, mut calls, mut read_total) = (0, 0, 0);
            loop {
                let (next, keys, read) = db.scan_counting(cursor, count, filter, 0);
                // Whole buckets are read: a step can overshoot by one chain, which at a fill
                // of at most one key a bucket is never sixteen long.
                assert!(read < count + 16, "{read} entries read for COUNT {count}");
                assert!(keys.len() <= read);
                if filter.pattern.is_some() {
                    assert!(keys.is_empty());
                }
                read_total += read;
                calls += 1;
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            assert_eq!(read_total, 50_000);
            // About one call per COUNT keys, and a few more where shards end mid-step.
            assert!(calls >= 50_000 / (count + 16), "{calls} calls");
            assert!(calls <= 50_000 / count * 2, "{calls} calls");
        }
    }

    #[test]
    fn any_cursor_is_answered() {
        let db = Db::new(4);
        (0..100).for_each(|i| db.insert(format!("k{i}").as_bytes(), string("v"), 0));
        let past_the_shards = 4u64 << SHARD_CURSOR_SHIFT;
        assert_eq!(db.scan(past_the_shards, 10, &NO_FILTER, 0), (0, vec![]));
        assert_eq!(db.scan(u64::MAX, 10, &NO_FILTER, 0), (0, vec![]));
        // Within the shards, any cursor continues to the end.
        let (mut cursor, mut calls) = ((3u64 << SHARD_CURSOR_SHIFT) | 12_345, 0);
        while cursor != 0 && calls < 1_000 {
            cursor = db.scan(cursor, 10, &NO_FILTER, 0).0;
            calls += 1;
        }
        assert_eq!(cursor, 0);
    }

    #[test]
    fn scan_filters_by_type_and_skips_expired_keys() {
        let db = Db::new(4);
        db.insert(b"live", string("v"), 0);
        db.insert(b"gone", string("v"), 10);
        let strings = ScanFilter {
            pattern: None,
            type_name: Some(b"STRING"),
        };
        assert_eq!(db.scan(0, 100, &strings, 20), (0, vec![b"live".to_vec()]));
        let filters = ScanFilter {
            pattern: None,
            type_name: Some(b"MBbloom--"),
        };
        assert_eq!(db.scan(0, 100, &filters, 20), (0, vec![]));
    }

    #[test]
    fn random_key_finds_live_keys_among_many_expired_ones() {
        let db = Db::new(64);
        for i in 0..10_000 {
            // One key in five is live.
            let expires_at = if i % 5 == 0 { 0 } else { 10 };
            db.insert(format!("k{i}").as_bytes(), string("v"), expires_at);
        }
        let mut total_picks = 0;
        for seed in 0..500 {
            let (key, picks) = db.random_key_counting(20, seed);
            let key = key.expect("a key");
            assert!(db.contains(&key, 20), "an expired key was picked");
            assert!(picks <= RANDOM_KEY_PICKS);
            total_picks += picks;
        }
        // Each pick is live with a chance of one in five.
        assert!(total_picks < 500 * 10, "{total_picks} picks");
    }

    #[test]
    fn random_key_work_is_bounded_when_every_key_has_expired() {
        let db = Db::new(16);
        assert_eq!(db.random_key_counting(20, 1), (None, 1));
        for i in 0..1_000 {
            db.insert(format!("k{i}").as_bytes(), string("v"), 10);
        }
        let (key, picks) = db.random_key_counting(20, 1);
        assert_eq!(picks, RANDOM_KEY_PICKS);
        assert!(key.is_some_and(|key| db.contains(&key, 0)));
    }

    #[test]
    fn random_key_reaches_every_key_of_a_sparse_keyspace() {
        let db = Db::new(64);
        (0..5).for_each(|i| db.insert(format!("k{i}").as_bytes(), string("v"), 0));
        let mut seen = std::collections::HashSet::new();
        for seed in 0..1_000 {
            let (key, picks) = db.random_key_counting(0, seed);
            assert_eq!(picks, 1);
            seen.insert(key.expect("a key"));
        }
        assert_eq!(seen.len(), 5);
    }
}
