//! What the filter families (BF, CBF, CF, TBF, FQ, SIEVED.STATS) declare alike: the key
//! specifications RedisBloom gives its commands, the documented arguments of a command on one
//! key and its items, and the complexities they share. No family imports another; they all
//! import this.

use super::spec::{bits, key, string, Arg, KeySpec};

/// A module command declared with a first key gets this key specification from Redis, which
/// cannot know better: read-write, full access. RedisBloom 8.8 declares its own for the
/// documented BF.* and CF.* commands (below); the others keep this one.
pub(super) const FILTER_KEY: &[KeySpec] =
    &[KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE], 1, 0, 1)];
/// The key specifications RedisBloom 8.8 declares: read-only for lookups, read-write for the
/// rest (SCANDUMP included).
pub(super) const READ_KEY: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RO], 1, 0, 1)];
pub(super) const WRITE_KEY: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RW], 1, 0, 1)];
/// sieved's own lookups that read a value and nothing else: FQ.SEEN, FQ.DEAD, FQ.INFO.
pub(super) const READ_ACCESS_KEY: &[KeySpec] =
    &[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, 0, 1)];
/// Every key from the first on, each read (BF.UNIONCARD).
pub(super) const READ_ACCESS_KEYS: &[KeySpec] =
    &[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, -1, 1)];
/// A merge's destination, which it reads and writes, then its sources, which it only reads.
pub(super) const MERGE_KEYS: &[KeySpec] = &[
    KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE, INSERT], 1, 0, 1),
    KeySpec::range(bits![KeyFlags: RO, ACCESS], 2, -1, 1),
];

pub(super) const MERGE_ARGS: &[Arg] = &[key("destkey"), key("sourcekey").key_spec(1).multiple()];
pub(super) const KEY_ITEM: &[Arg] = &[key("key"), string("item")];
pub(super) const KEY_ITEMS: &[Arg] = &[key("key"), string("item").multiple()];
pub(super) const KEY_ITERATOR: &[Arg] = &[key("key"), super::spec::integer("iterator")];
pub(super) const KEY_ITERATOR_DATA: &[Arg] =
    &[key("key"), super::spec::integer("iterator"), string("data")];

pub(super) const HASHES_OF_LAST_LINK: &str =
    "O(k), where k is the number of hash functions used by the last sub-filter";
pub(super) const HASHES_TIMES_ITEMS: &str =
    "O(k * n), where k is the number of hash functions and n is the number of items";
pub(super) const DUMP_COMPLEXITY: &str = "O(n), where n is the capacity";
pub(super) const MERGE_COMPLEXITY: &str = "O(m), where m is the size of the filters in bytes";
