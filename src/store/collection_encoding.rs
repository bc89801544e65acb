//! What the four collection types are to the rest of the keyspace: OBJECT ENCODING's answer
//! and the memory of a list, and the snapshot encoding of lists, sets, sorted sets and hashes.
//! The types themselves have their own modules; what they share is in `members.rs`.

use super::hash::Hash;
use super::list::List;
use super::members::Bytes;
use super::set::Set;
use super::zset::ZSet;

/// A list stays a single listpack up to 8 KiB (`list-max-listpack-size -2`).
const LIST_LISTPACK_BYTES: usize = 8 * 1024;

/// OBJECT ENCODING's answer, as Redis 8 picks it for the same contents: a size limit only
/// (about two bytes of overhead an element), no count.
pub(super) fn list_encoding(list: &List) -> &'static str {
    if list.packed_size() <= LIST_LISTPACK_BYTES {
        "listpack"
    } else {
        "quicklist"
    }
}

pub(super) fn list_memory(list: &List) -> u64 {
    list.memory_bytes()
}

/// Snapshot encoding: a count, then each element as a 4-byte length and its bytes (a sorted
/// set's member followed by its score's 8 bytes; a hash's field then its value), all
/// little-endian. Sets and hashes are written in byte order, so that equal contents always
/// encode alike (SIEVED.DIGEST compares nodes by it).
struct Encoder(Vec<u8>);

impl Encoder {
    fn new(count: usize) -> Encoder {
        Encoder((count as u64).to_le_bytes().to_vec())
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.0
            .extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.0.extend_from_slice(bytes);
    }

    fn score(&mut self, score: f64) {
        self.0.extend_from_slice(&score.to_bits().to_le_bytes());
    }

    fn finish(self) -> Vec<u8> {
        self.0
    }
}

pub(super) fn encode_list(list: &List) -> Vec<u8> {
    let mut out = Encoder::new(list.len());
    list.iter().for_each(|m| out.bytes(m));
    out.finish()
}

pub(super) fn encode_set(set: &Set) -> Vec<u8> {
    let mut members: Vec<&[u8]> = set.iter().collect();
    members.sort_unstable();
    let mut out = Encoder::new(members.len());
    members.into_iter().for_each(|m| out.bytes(m));
    out.finish()
}

pub(super) fn encode_zset(zset: &ZSet) -> Vec<u8> {
    let mut out = Encoder::new(zset.len());
    for (member, score) in zset.iter() {
        out.bytes(member);
        out.score(score);
    }
    out.finish()
}

pub(super) fn encode_hash(hash: &Hash) -> Vec<u8> {
    let mut pairs: Vec<(&[u8], &[u8])> = hash.iter().collect();
    pairs.sort_unstable();
    let mut out = Encoder::new(pairs.len());
    for (field, value) in pairs {
        out.bytes(field);
        out.bytes(value);
    }
    out.finish()
}

/// Reads what an `Encoder` wrote; every length is checked against the bytes left, so damage
/// cannot make it allocate more than the input holds.
struct Decoder<'a>(&'a [u8]);

impl<'a> Decoder<'a> {
    /// The decoder and the element count, which is at most the bytes left (each element takes
    /// four or more).
    fn new(bytes: &'a [u8]) -> Option<(Decoder<'a>, usize)> {
        let (count, rest) = bytes.split_first_chunk::<8>()?;
        let count = usize::try_from(u64::from_le_bytes(*count)).ok()?;
        (count <= rest.len() / 4).then_some((Decoder(rest), count))
    }

    fn bytes(&mut self) -> Option<Bytes> {
        let (len, rest) = self.0.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        let (bytes, rest) = (rest.len() >= len).then(|| rest.split_at(len))?;
        self.0 = rest;
        Some(Bytes::from(bytes))
    }

    fn score(&mut self) -> Option<f64> {
        let (bits, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(f64::from_bits(u64::from_le_bytes(*bits))).filter(|s| !s.is_nan())
    }

    fn is_done(&self) -> bool {
        self.0.is_empty()
    }
}

pub(super) fn decode_list(bytes: &[u8]) -> Option<List> {
    let (mut input, count) = Decoder::new(bytes)?;
    let mut list = List::default();
    for _ in 0..count {
        list.push_back(&input.bytes()?);
    }
    input.is_done().then_some(list)
}

pub(super) fn decode_set(bytes: &[u8]) -> Option<Set> {
    let (mut input, count) = Decoder::new(bytes)?;
    let mut set = Set::default();
    for _ in 0..count {
        if !set.insert(&input.bytes()?) {
            return None;
        }
    }
    input.is_done().then_some(set)
}

pub(super) fn decode_zset(bytes: &[u8]) -> Option<ZSet> {
    let (mut input, count) = Decoder::new(bytes)?;
    let mut zset = ZSet::default();
    for _ in 0..count {
        let member = input.bytes()?;
        let score = input.score()?;
        if !zset.insert(&member, score) {
            return None;
        }
    }
    input.is_done().then_some(zset)
}

pub(super) fn decode_hash(bytes: &[u8]) -> Option<Hash> {
    let (mut input, count) = Decoder::new(bytes)?;
    let mut hash = Hash::default();
    for _ in 0..count {
        let field = input.bytes()?;
        let value = input.bytes()?;
        if !hash.insert(&field, &value) {
            return None;
        }
    }
    input.is_done().then_some(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_round_trip() {
        let list: List = [&b"a"[..], b"", b"bc"].into_iter().collect();
        assert_eq!(decode_list(&encode_list(&list)), Some(list));
        let mut zset = ZSet::default();
        zset.insert(b"x", 2.0);
        zset.insert(b"y", f64::NEG_INFINITY);
        let back = decode_zset(&encode_zset(&zset)).unwrap();
        assert_eq!(
            back.iter().collect::<Vec<_>>(),
            zset.iter().collect::<Vec<_>>()
        );
        assert!(decode_set(&[255; 12]).is_none());
        assert!(decode_hash(&[1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0]).is_none());
    }

    #[test]
    fn rescoring_keeps_one_entry_per_member() {
        let mut zset = ZSet::default();
        assert!(zset.insert(b"m", 1.0));
        assert!(!zset.insert(b"m", 3.0));
        assert_eq!(zset.iter().collect::<Vec<_>>(), vec![(&b"m"[..], 3.0)]);
        assert_eq!(zset.rank(b"m"), Some(0));
        assert!(zset.remove(b"m") && zset.is_empty());
    }
}
