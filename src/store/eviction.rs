//! Which key to evict when memory is over `maxmemory`: Redis's policies, and its approximation
//! of LRU, LFU and TTL order by sampling. Each round samples `maxmemory-samples` keys of every
//! database into a pool of the 16 best candidates seen so far, kept between evictions, and
//! evicts the best of the pool that still exists; a key sampled once stays a candidate until a
//! better one pushes it out, which brings the result close to true LRU at a fixed cost.

use super::access::Tracking;
use super::Store;
use std::sync::Mutex;

/// `maxmemory-policy`: what goes when memory is over `maxmemory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictionPolicy {
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
    AllKeysLru,
    AllKeysLfu,
    AllKeysRandom,
    /// Nothing: commands that may allocate are refused instead.
    NoEviction,
}

impl EvictionPolicy {
    /// In Redis's order, which its error message lists.
    pub const ALL: [EvictionPolicy; 8] = [
        EvictionPolicy::VolatileLru,
        EvictionPolicy::VolatileLfu,
        EvictionPolicy::VolatileRandom,
        EvictionPolicy::VolatileTtl,
        EvictionPolicy::AllKeysLru,
        EvictionPolicy::AllKeysLfu,
        EvictionPolicy::AllKeysRandom,
        EvictionPolicy::NoEviction,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EvictionPolicy::VolatileLru => "volatile-lru",
            EvictionPolicy::VolatileLfu => "volatile-lfu",
            EvictionPolicy::VolatileRandom => "volatile-random",
            EvictionPolicy::VolatileTtl => "volatile-ttl",
            EvictionPolicy::AllKeysLru => "allkeys-lru",
            EvictionPolicy::AllKeysLfu => "allkeys-lfu",
            EvictionPolicy::AllKeysRandom => "allkeys-random",
            EvictionPolicy::NoEviction => "noeviction",
        }
    }

    pub fn parse(text: &str) -> Option<EvictionPolicy> {
        Self::ALL
            .into_iter()
            .find(|policy| policy.name().eq_ignore_ascii_case(text))
    }

    /// Whether keys keep LFU counters rather than access times.
    pub fn is_lfu(self) -> bool {
        matches!(
            self,
            EvictionPolicy::VolatileLfu | EvictionPolicy::AllKeysLfu
        )
    }

    /// Whether only keys with an expiry time may go.
    fn volatile_only(self) -> bool {
        matches!(
            self,
            EvictionPolicy::VolatileLru
                | EvictionPolicy::VolatileLfu
                | EvictionPolicy::VolatileRandom
                | EvictionPolicy::VolatileTtl
        )
    }

    /// How good a candidate a key is: higher goes first.
    fn score(self, tracking: &Tracking, expires_at: u64, bits: u32) -> u64 {
        match self {
            EvictionPolicy::VolatileTtl => u64::MAX - expires_at,
            policy if policy.is_lfu() => u64::from(255 - tracking.frequency(bits).min(255)),
            _ => tracking.idle_secs(bits),
        }
    }
}

/// Candidates the pool keeps, as Redis's EVPOOL_SIZE.
const POOL_SIZE: usize = 16;

/// Pool refills one eviction may take before it gives up: each refill samples every database,
/// so only keys removed by other clients as fast as they are sampled could use them all.
const MAX_REFILLS: usize = 16;

struct Candidate {
    score: u64,
    db: usize,
    key: Box<[u8]>,
}

/// The eviction state of a store: the pool, and the next database a random policy takes from.
#[derive(Default)]
pub(super) struct Evictor {
    state: Mutex<EvictorState>,
}

#[derive(Default)]
struct EvictorState {
    /// Ascending by score: the best candidate is last.
    pool: Vec<Candidate>,
    next_db: usize,
}

impl EvictorState {
    /// Redis's `evictionPoolPopulate` for one key: kept if the pool has room or the key beats
    /// its worst, which then drops out.
    fn offer(&mut self, candidate: Candidate) {
        let pool = &mut self.pool;
        if pool
            .iter()
            .any(|c| c.db == candidate.db && c.key == candidate.key)
        {
            return;
        }
        let at = pool.partition_point(|c| c.score < candidate.score);
        if pool.len() < POOL_SIZE {
            pool.insert(at, candidate);
        } else if at > 0 {
            pool.remove(0);
            pool.insert(at - 1, candidate);
        }
    }
}

impl Store {
    /// Evicts one key as `policy` chooses, sampling `samples` keys of each database, and says
    /// which (its database and name); None if no key may be evicted. `random` seeds the
    /// sampling.
    pub fn evict_one(
        &self,
        policy: EvictionPolicy,
        samples: usize,
        now: u64,
        random: u64,
    ) -> Option<(usize, Vec<u8>)> {
        let volatile_only = policy.volatile_only();
        let mut state = self.evictor.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut random = random;
        if matches!(
            policy,
            EvictionPolicy::AllKeysRandom | EvictionPolicy::VolatileRandom
        ) {
            // One key of the next database that has any, as Redis visits them in turn.
            for _ in 0..self.dbs.len() {
                state.next_db = (state.next_db + 1) % self.dbs.len();
                let index = state.next_db;
                let db = &self.dbs[index];
                let mut found = None;
                db.sample(volatile_only, 1, now, &mut random, |key, _, _| {
                    found = Some(key.to_vec());
                });
                if let Some(key) = found {
                    if db.evict(&key, now, volatile_only) {
                        return Some((index, key));
                    }
                }
            }
            return None;
        }
        if policy == EvictionPolicy::NoEviction {
            return None;
        }
        let tracking = self.tracking();
        for _ in 0..MAX_REFILLS {
            let mut any = false;
            for (index, db) in self.dbs.iter().enumerate() {
                let keys = if volatile_only {
                    db.volatile_len()
                } else {
                    db.len()
                };
                if keys == 0 {
                    continue;
                }
                any = true;
                db.sample(
                    volatile_only,
                    samples,
                    now,
                    &mut random,
                    |key, expires_at, bits| {
                        state.offer(Candidate {
                            score: policy.score(tracking, expires_at, bits),
                            db: index,
                            key: key.into(),
                        });
                    },
                );
            }
            if !any {
                return None;
            }
            // The best first; a candidate gone since it was sampled is passed over.
            while let Some(candidate) = state.pool.pop() {
                if self.dbs[candidate.db].evict(&candidate.key, now, volatile_only) {
                    return Some((candidate.db, candidate.key.into()));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Value;

    const START: u64 = 1_000_000_000;

    fn string() -> Value {
        Value::String(b"v".to_vec())
    }

    fn key(name: &str, i: usize) -> Vec<u8> {
        format!("{name}:{i}").into_bytes()
    }

    /// Evicts `count` keys and returns their names.
    fn evict(store: &Store, policy: EvictionPolicy, samples: usize, count: usize) -> Vec<String> {
        (0..count)
            .map(|i| {
                let (_, key) = store
                    .evict_one(policy, samples, START, i as u64)
                    .expect("a key to evict");
                String::from_utf8(key).unwrap()
            })
            .collect()
    }

    #[test]
    fn lru_evicts_the_keys_idle_longest() {
        let store = Store::new(2, 8);
        store.tick(START);
        for i in 0..500 {
            store.db(i % 2).insert(&key("cold", i), string(), 0);
            store.db(i % 2).insert(&key("hot", i), string(), 0);
        }
        store.tick(START + 100_000);
        for i in 0..500 {
            store
                .db(i % 2)
                .get(&key("hot", i), START, |v| assert!(v.is_some()));
        }
        let gone = evict(&store, EvictionPolicy::AllKeysLru, 10, 300);
        // Sampling is random: a first round of ten samples may all be hot (1 in 1024); after
        // it the pool holds cold candidates.
        let hot = gone.iter().filter(|k| k.starts_with("hot")).count();
        assert!(hot <= 2, "{hot} hot keys evicted");
        let left = store.db(0).len() + store.db(1).len();
        assert_eq!(left, 700);
    }

    #[test]
    fn lfu_evicts_the_keys_used_least() {
        let store = Store::new(1, 8);
        store.tick(START);
        store.tracking.configure(true, 0, 1);
        let db = store.db(0);
        for i in 0..400 {
            db.insert(&key("rare", i), string(), 0);
            db.insert(&key("frequent", i), string(), 0);
            (0..10).for_each(|_| db.get(&key("frequent", i), START, |_| ()));
        }
        let gone = evict(&store, EvictionPolicy::AllKeysLfu, 10, 300);
        let frequent = gone.iter().filter(|k| k.starts_with("frequent")).count();
        assert!(frequent <= 2, "{frequent} frequent keys evicted");
    }

    #[test]
    fn volatile_policies_take_only_keys_with_an_expiry_time() {
        for policy in [
            EvictionPolicy::VolatileLru,
            EvictionPolicy::VolatileLfu,
            EvictionPolicy::VolatileRandom,
            EvictionPolicy::VolatileTtl,
        ] {
            let store = Store::new(2, 8);
            store.tick(START);
            store.tracking.configure(policy.is_lfu(), 10, 1);
            // A few volatile keys among many others must still be found.
            for i in 0..2000 {
                store.db(0).insert(&key("kept", i), string(), 0);
            }
            for i in 0..5 {
                let expires_at = START + 3_600_000 + i as u64;
                store
                    .db(1)
                    .insert(&key("volatile", i), string(), expires_at);
            }
            let mut gone = evict(&store, policy, 5, 5);
            gone.sort();
            assert_eq!(
                gone,
                (0..5).map(|i| format!("volatile:{i}")).collect::<Vec<_>>()
            );
            assert_eq!(store.evict_one(policy, 5, START, 9), None, "{policy:?}");
            assert_eq!(store.db(0).len(), 2000);
            assert_eq!(store.db(1).volatile_len(), 0);
        }
    }

    #[test]
    fn volatile_ttl_evicts_the_nearest_expiry_first() {
        let store = Store::new(1, 8);
        store.tick(START);
        let db = store.db(0);
        for i in 0..200 {
            db.insert(&key("k", i), string(), START + 60_000 + i as u64 * 1000);
        }
        let gone = evict(&store, EvictionPolicy::VolatileTtl, 5, 50);
        let ranks: Vec<usize> = gone
            .iter()
            .map(|k| k["k:".len()..].parse().unwrap())
            .collect();
        // Exact order would evict 0..50 (mean rank 24.5); random order has mean 99.5. The
        // pool's approximation stays far closer to the first.
        let mean = ranks.iter().sum::<usize>() as f64 / ranks.len() as f64;
        assert!(mean < 60.0, "mean rank {mean}: {ranks:?}");
    }

    #[test]
    fn random_policies_visit_every_database_in_turn() {
        let store = Store::new(3, 4);
        store.tick(START);
        for db in 0..3 {
            for i in 0..100 {
                store.db(db).insert(&key("k", i), string(), 0);
            }
        }
        evict(&store, EvictionPolicy::AllKeysRandom, 5, 150);
        let sizes: Vec<usize> = (0..3).map(|db| store.db(db).len()).collect();
        assert_eq!(sizes, [50, 50, 50]);
    }

    #[test]
    fn nothing_goes_without_a_policy_or_keys() {
        let store = Store::new(1, 4);
        store.db(0).insert(b"k", string(), 0);
        assert_eq!(
            store.evict_one(EvictionPolicy::NoEviction, 5, START, 1),
            None
        );
        store.db(0).remove(b"k", START);
        for policy in EvictionPolicy::ALL {
            assert_eq!(store.evict_one(policy, 5, START, 1), None, "{policy:?}");
        }
    }

    #[test]
    fn policies_read_back_by_name() {
        for policy in EvictionPolicy::ALL {
            assert_eq!(EvictionPolicy::parse(policy.name()), Some(policy));
        }
        assert_eq!(
            EvictionPolicy::parse("ALLKEYS-LRU"),
            Some(EvictionPolicy::AllKeysLru)
        );
        assert_eq!(EvictionPolicy::parse("lru"), None);
    }
}
