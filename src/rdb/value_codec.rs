//! One value in RDB encoding: a type byte, then the value as that type lays it out. This is
//! what a DUMP payload holds before its trailer, and what follows each key in an RDB file.
//!
//! Written: strings (type 0), lists (1), sets (2), sorted sets (5, scores as binary doubles),
//! hashes (4), each in its plain form, which every Redis from 2.x on reads (and packs into its
//! compact encodings as it loads them); filters as modules (`module_values.rs`).
//!
//! Read: all of those, and every encoding Redis 3.2 to 8 writes: ziplists (10, 12, 13),
//! quicklists (14, 18), intsets (11), listpacks (16, 17, 20), zipmaps (9), sorted sets with
//! text scores (3). Streams (15, 19, 21), hashes with field expiry (22 to 25) and modules other
//! than the filters are passed over and reported as skipped: sieved has no such values.

use super::module_values;
use super::packed;
use super::primitives::{
    parse_double, read_binary_double, read_count, read_length, read_string, read_text_double,
    skip_string, write_binary_double, write_length, write_string, Input, RdbError, RdbResult,
};
use super::types::{
    Decoded, Limits, TYPE_HASH, TYPE_HASH_LISTPACK, TYPE_HASH_LISTPACK_EX,
    TYPE_HASH_LISTPACK_EX_PRE_GA, TYPE_HASH_METADATA, TYPE_HASH_METADATA_PRE_GA, TYPE_HASH_ZIPLIST,
    TYPE_HASH_ZIPMAP, TYPE_LIST, TYPE_LIST_QUICKLIST, TYPE_LIST_QUICKLIST_2, TYPE_LIST_ZIPLIST,
    TYPE_MODULE_2, TYPE_MODULE_PRE_GA, TYPE_SET, TYPE_SET_INTSET, TYPE_SET_LISTPACK,
    TYPE_STREAM_LISTPACKS, TYPE_STREAM_LISTPACKS_2, TYPE_STREAM_LISTPACKS_3, TYPE_STRING,
    TYPE_ZSET, TYPE_ZSET_2, TYPE_ZSET_LISTPACK, TYPE_ZSET_ZIPLIST,
};
use crate::store::{Hash, List, Set, Value, ZSet};

/// A quicklist 2 node: one element stored as it is, or a listpack of several.
const QUICKLIST_PLAIN: u64 = 1;
const QUICKLIST_PACKED: u64 = 2;
/// What an element costs besides its bytes, counted against the limit.
const ELEMENT_OVERHEAD: u64 = 16;

/// Elements as a collection's are read: each counted against the limit.
struct Elements<'a, I: ?Sized> {
    input: &'a mut I,
    budget: u64,
}

impl<I: Input + ?Sized> Elements<'_, I> {
    fn charge(&mut self, len: u64) -> RdbResult<()> {
        let cost = len + ELEMENT_OVERHEAD;
        self.budget = self.budget.checked_sub(cost).ok_or(RdbError::TooLarge {
            bytes: cost,
            limit: self.budget,
        })?;
        Ok(())
    }

    fn string(&mut self) -> RdbResult<Vec<u8>> {
        let bytes = read_string(self.input, self.budget)?;
        self.charge(bytes.len() as u64)?;
        Ok(bytes)
    }

    /// A packed blob's elements.
    fn packed(&mut self, decode: fn(&[u8]) -> RdbResult<Vec<Vec<u8>>>) -> RdbResult<Vec<Vec<u8>>> {
        let elements = decode(&self.string()?)?;
        for element in &elements {
            self.charge(element.len() as u64)?;
        }
        Ok(elements)
    }

    fn count(&mut self) -> RdbResult<u64> {
        read_count(self.input, 1)
    }
}

fn invalid(what: &'static str) -> RdbError {
    RdbError::Invalid(what)
}

fn list_of(elements: impl IntoIterator<Item = Vec<u8>>) -> List {
    elements.into_iter().map(Vec::into_boxed_slice).collect()
}

fn set_of(members: impl IntoIterator<Item = Vec<u8>>) -> RdbResult<Set> {
    let mut set = Set::default();
    for member in members {
        if !set.insert(&member) {
            return Err(invalid("a set member appears twice"));
        }
    }
    Ok(set)
}

fn zset_of(entries: impl IntoIterator<Item = (Vec<u8>, f64)>) -> RdbResult<ZSet> {
    let mut zset = ZSet::default();
    for (member, score) in entries {
        if score.is_nan() {
            return Err(invalid("a score is not a number"));
        }
        if !zset.insert(&member, score) {
            return Err(invalid("a sorted set member appears twice"));
        }
    }
    Ok(zset)
}

fn hash_of(pairs: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>) -> RdbResult<Hash> {
    let mut hash = Hash::default();
    for (field, value) in pairs {
        if !hash.insert(&field, &value) {
            return Err(invalid("a hash field appears twice"));
        }
    }
    Ok(hash)
}

/// Alternate elements of a packed blob as pairs.
fn pairs(elements: Vec<Vec<u8>>) -> RdbResult<Vec<(Vec<u8>, Vec<u8>)>> {
    if elements.len() % 2 != 0 {
        return Err(invalid("a packed map has an odd number of elements"));
    }
    let mut iter = elements.into_iter();
    Ok(std::iter::from_fn(|| Some((iter.next()?, iter.next()?))).collect())
}

fn scored(pairs: Vec<(Vec<u8>, Vec<u8>)>) -> RdbResult<Vec<(Vec<u8>, f64)>> {
    pairs
        .into_iter()
        .map(|(member, score)| {
            parse_double(&score)
                .map(|score| (member, score))
                .ok_or(invalid("a score is not a number"))
        })
        .collect()
}

/// Reads a value of `rdb_type` (its type byte already read).
pub fn read_value(
    input: &mut (impl Input + ?Sized),
    rdb_type: u8,
    limits: &Limits,
) -> RdbResult<Decoded> {
    let mut elements = Elements {
        input,
        budget: limits.string_bytes,
    };
    let value = match rdb_type {
        TYPE_STRING => Value::String(read_string(elements.input, limits.string_bytes)?),
        TYPE_LIST => {
            let count = elements.count()?;
            let mut list = List::new();
            for _ in 0..count {
                list.push_back(elements.string()?.into_boxed_slice());
            }
            Value::List(Box::new(list))
        }
        TYPE_LIST_ZIPLIST => Value::List(Box::new(list_of(elements.packed(packed::ziplist)?))),
        TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
            let nodes = elements.count()?;
            let mut list = List::new();
            for _ in 0..nodes {
                let container = if rdb_type == TYPE_LIST_QUICKLIST_2 {
                    read_length(elements.input)?
                } else {
                    QUICKLIST_PACKED
                };
                match container {
                    QUICKLIST_PLAIN => list.push_back(elements.string()?.into_boxed_slice()),
                    QUICKLIST_PACKED if rdb_type == TYPE_LIST_QUICKLIST => {
                        list.extend(list_of(elements.packed(packed::ziplist)?))
                    }
                    QUICKLIST_PACKED => list.extend(list_of(elements.packed(packed::listpack)?)),
                    _ => return Err(invalid("unknown quicklist node container")),
                }
            }
            Value::List(Box::new(list))
        }
        TYPE_SET => {
            let count = elements.count()?;
            let mut members = Vec::new();
            for _ in 0..count {
                members.push(elements.string()?);
            }
            Value::Set(Box::new(set_of(members)?))
        }
        TYPE_SET_INTSET => Value::Set(Box::new(set_of(elements.packed(packed::intset)?)?)),
        TYPE_SET_LISTPACK => Value::Set(Box::new(set_of(elements.packed(packed::listpack)?)?)),
        TYPE_ZSET | TYPE_ZSET_2 => {
            let count = elements.count()?;
            let mut entries = Vec::new();
            for _ in 0..count {
                let member = elements.string()?;
                let score = if rdb_type == TYPE_ZSET_2 {
                    read_binary_double(elements.input)?
                } else {
                    read_text_double(elements.input)?
                };
                entries.push((member, score));
            }
            Value::ZSet(Box::new(zset_of(entries)?))
        }
        TYPE_ZSET_ZIPLIST => Value::ZSet(Box::new(zset_of(scored(pairs(
            elements.packed(packed::ziplist)?,
        )?)?)?)),
        TYPE_ZSET_LISTPACK => Value::ZSet(Box::new(zset_of(scored(pairs(
            elements.packed(packed::listpack)?,
        )?)?)?)),
        TYPE_HASH => {
            let count = elements.count()?;
            let mut entries = Vec::new();
            for _ in 0..count {
                entries.push((elements.string()?, elements.string()?));
            }
            Value::Hash(Box::new(hash_of(entries)?))
        }
        TYPE_HASH_ZIPMAP => {
            Value::Hash(Box::new(hash_of(pairs(elements.packed(packed::zipmap)?)?)?))
        }
        TYPE_HASH_ZIPLIST => Value::Hash(Box::new(hash_of(pairs(
            elements.packed(packed::ziplist)?,
        )?)?)),
        TYPE_HASH_LISTPACK => Value::Hash(Box::new(hash_of(pairs(
            elements.packed(packed::listpack)?,
        )?)?)),
        TYPE_HASH_METADATA_PRE_GA..=TYPE_HASH_LISTPACK_EX => {
            skip_hash_with_expiry(elements.input, rdb_type)?;
            return Ok(Decoded::Skipped("hash with field expiration".into()));
        }
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 | TYPE_STREAM_LISTPACKS_3 => {
            skip_stream(elements.input, rdb_type)?;
            return Ok(Decoded::Skipped("stream".into()));
        }
        TYPE_MODULE_2 => return module_values::read(elements.input, limits),
        TYPE_MODULE_PRE_GA => {
            return Err(invalid("a module value of Redis 4.0's release candidates"))
        }
        _ => return Err(invalid("unknown value type")),
    };
    Ok(if value.is_empty_collection() {
        Decoded::Empty
    } else {
        Decoded::Value(value)
    })
}

fn skip_hash_with_expiry(input: &mut (impl Input + ?Sized), rdb_type: u8) -> RdbResult<()> {
    if matches!(rdb_type, TYPE_HASH_METADATA | TYPE_HASH_LISTPACK_EX) {
        input.skip(8)?;
    }
    if matches!(
        rdb_type,
        TYPE_HASH_LISTPACK_EX_PRE_GA | TYPE_HASH_LISTPACK_EX
    ) {
        return skip_string(input);
    }
    let count = read_count(input, 3)?;
    for _ in 0..count {
        read_length(input)?;
        skip_string(input)?;
        skip_string(input)?;
    }
    Ok(())
}

/// Passes over a stream: its listpacks, its IDs and counters, its consumer groups with their
/// pending entries and consumers.
fn skip_stream(input: &mut (impl Input + ?Sized), rdb_type: u8) -> RdbResult<()> {
    let listpacks = read_count(input, 2)?;
    for _ in 0..listpacks {
        skip_string(input)?;
        skip_string(input)?;
    }
    // Length, last ID; then first ID, max deleted ID, entries added.
    let fields = if rdb_type >= TYPE_STREAM_LISTPACKS_2 {
        8
    } else {
        3
    };
    for _ in 0..fields {
        read_length(input)?;
    }
    let groups = read_count(input, 3)?;
    for _ in 0..groups {
        skip_string(input)?;
        read_length(input)?;
        read_length(input)?;
        if rdb_type >= TYPE_STREAM_LISTPACKS_2 {
            read_length(input)?;
        }
        let pending = read_count(input, 25)?;
        for _ in 0..pending {
            input.skip(16 + 8)?;
            read_length(input)?;
        }
        let consumers = read_count(input, 10)?;
        for _ in 0..consumers {
            skip_string(input)?;
            input.skip(8)?;
            if rdb_type >= TYPE_STREAM_LISTPACKS_3 {
                input.skip(8)?;
            }
            let owned = read_count(input, 16)?;
            input.skip(owned * 16)?;
        }
    }
    Ok(())
}

/// Writes `value` with its type byte.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::String(bytes) => {
            out.push(TYPE_STRING);
            write_string(out, bytes);
        }
        Value::List(list) => {
            out.push(TYPE_LIST);
            write_length(out, list.len() as u64);
            list.iter().for_each(|element| write_string(out, element));
        }
        Value::Set(set) => {
            out.push(TYPE_SET);
            write_length(out, set.len() as u64);
            set.iter().for_each(|member| write_string(out, member));
        }
        Value::ZSet(zset) => {
            out.push(TYPE_ZSET_2);
            write_length(out, zset.len() as u64);
            for (member, score) in zset.iter() {
                write_string(out, member);
                write_binary_double(out, score);
            }
        }
        Value::Hash(hash) => {
            out.push(TYPE_HASH);
            write_length(out, hash.len() as u64);
            for (field, value) in hash.iter() {
                write_string(out, field);
                write_string(out, value);
            }
        }
        Value::Bloom(chain) => match chain.redisbloom_shape() {
            Some(shape) => module_values::write_bloom(out, chain, &shape),
            None => module_values::write_sieved(out, value),
        },
        Value::Cuckoo(filter) => module_values::write_cuckoo(out, filter),
        Value::Json(document) => module_values::write_json(out, document),
        Value::CountMin(_) | Value::TopK(_) | Value::TDigest(_) => {
            module_values::write_sketch(out, value);
        }
        // Counting filters, and the kinds added later.
        other => module_values::write_sieved(out, other),
    }
}
