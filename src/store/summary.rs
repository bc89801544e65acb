//! The keyspace counted by type, for INFO bloom and the metrics endpoint. It visits every live
//! key, so it costs time in proportion to the keyspace: it is computed on request, never kept.

use super::{Store, Value};

/// Totals over every filter of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterTotals {
    pub filters: u64,
    /// What the filters occupy, their structures included (as MEMORY USAGE counts them).
    pub bytes: u64,
    pub items: u64,
    pub capacity: u64,
    pub links: u64,
    /// Counting filters only: counters stuck at their maximum.
    pub saturated_counters: u64,
}

/// Keys of one database by type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbKeys {
    pub strings: u64,
    pub bloom: u64,
    pub counting: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// One entry per database, empty ones included.
    pub dbs: Vec<DbKeys>,
    pub bloom: FilterTotals,
    pub counting: FilterTotals,
}

pub fn summarize(store: &Store, now: u64) -> Summary {
    let mut summary = Summary::default();
    for db in store.dbs() {
        let mut keys = DbKeys::default();
        db.fold_values(now, (), |(), _key, value| match value {
            Value::String(_) => keys.strings += 1,
            Value::Bloom(chain) => {
                keys.bloom += 1;
                let totals = &mut summary.bloom;
                totals.filters += 1;
                totals.bytes += value.memory_bytes();
                totals.items += chain.items();
                totals.capacity += chain.capacity();
                totals.links += chain.links().len() as u64;
            }
            Value::Counting(chain) => {
                keys.counting += 1;
                let totals = &mut summary.counting;
                totals.filters += 1;
                totals.bytes += value.memory_bytes();
                totals.items += chain.items();
                totals.capacity += chain.capacity();
                totals.links += chain.links().len() as u64;
                totals.saturated_counters += chain.saturated_counters();
            }
            // Collections, cuckoo filters, windowed filters, frontiers, JSON documents and
            // sketches have no filter totals; INFO keyspace counts them with every key.
            Value::List(_)
            | Value::Set(_)
            | Value::ZSet(_)
            | Value::Hash(_)
            | Value::Cuckoo(_)
            | Value::Windowed(_)
            | Value::Frontier(_)
            | Value::Json(_)
            | Value::CountMin(_)
            | Value::TopK(_)
            | Value::TDigest(_) => {}
        });
        summary.dbs.push(keys);
    }
    summary
}
