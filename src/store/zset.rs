//! A sorted set: small ones packed in one buffer in (score, member) order, as Redis's listpack
//! keeps them; larger ones as a table by member beside a tree by (score, member). As in Redis,
//! a set that outgrows the packed form never goes back to it.

use super::dense::DenseMap;
use super::members::{Bytes, LISTPACK_ENTRIES, LISTPACK_VALUE};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// A score: a float that is never NaN, so that it has a total order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score(pub f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Score) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Score) -> Ordering {
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

#[derive(Debug, Clone)]
enum Repr {
    /// Entries end to end, in order: the score's 8 bytes, a length byte, the member.
    Packed(Vec<u8>),
    Tree {
        scores: DenseMap<f64>,
        order: BTreeSet<(Score, Bytes)>,
    },
}

#[derive(Debug, Clone)]
pub struct ZSet(Repr);

impl Default for ZSet {
    fn default() -> ZSet {
        ZSet(Repr::Packed(Vec::new()))
    }
}

/// The entries of a packed buffer: where each starts and ends, its member and score.
fn entries(packed: &[u8]) -> impl Iterator<Item = (usize, usize, &[u8], f64)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let start = at;
        let score = f64::from_le_bytes(*packed.get(at..at + 8)?.first_chunk::<8>()?);
        let len = *packed.get(at + 8)? as usize;
        let member = packed.get(at + 9..at + 9 + len)?;
        at += 9 + len;
        Some((start, at, member, score))
    })
}

impl ZSet {
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Packed(packed) => entries(packed).count(),
            Repr::Tree { scores, .. } => scores.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match &self.0 {
            Repr::Packed(packed) => packed.is_empty(),
            Repr::Tree { scores, .. } => scores.is_empty(),
        }
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.0 {
            Repr::Packed(packed) => entries(packed).find(|e| e.2 == member).map(|e| e.3),
            Repr::Tree { scores, .. } => scores.get(member).copied(),
        }
    }

    /// Sets a member's score (never NaN); true if the member is new.
    pub fn insert(&mut self, member: &[u8], score: f64) -> bool {
        if let Repr::Packed(packed) = &mut self.0 {
            let old = entries(packed)
                .find(|e| e.2 == member)
                .map(|(start, end, ..)| start..end);
            let new = old.is_none();
            let count = entries(packed).count() + new as usize;
            if member.len() <= LISTPACK_VALUE && count <= LISTPACK_ENTRIES {
                if let Some(old) = old {
                    packed.drain(old);
                }
                let key = (Score(score), member);
                let at = entries(packed)
                    .find(|&(_, _, m, s)| (Score(s), m) > key)
                    .map_or(packed.len(), |e| e.0);
                let mut entry = score.to_le_bytes().to_vec();
                entry.push(member.len() as u8);
                entry.extend_from_slice(member);
                packed.splice(at..at, entry);
                return new;
            }
            self.unpack();
        }
        let Repr::Tree { scores, order } = &mut self.0 else {
            unreachable!("unpacked above");
        };
        match scores.get_mut(member) {
            Some(old) => {
                if *old != score {
                    let key = order.take(&(Score(*old), Bytes::from(member)));
                    let member = key.map_or_else(|| Bytes::from(member), |(_, m)| m);
                    *old = score;
                    order.insert((Score(score), member));
                }
                false
            }
            None => {
                scores.insert(Bytes::from(member), score);
                order.insert((Score(score), Bytes::from(member)));
                true
            }
        }
    }

    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.0 {
            Repr::Packed(packed) => {
                let found = entries(packed)
                    .find(|e| e.2 == member)
                    .map(|(start, end, ..)| start..end);
                found.map(|range| packed.drain(range)).is_some()
            }
            Repr::Tree { scores, order } => match scores.remove(member) {
                Some(score) => {
                    order.remove(&(Score(score), Bytes::from(member)));
                    true
                }
                None => false,
            },
        }
    }

    fn unpack(&mut self) {
        if let Repr::Packed(packed) = &self.0 {
            let scores = entries(packed)
                .map(|(_, _, m, s)| (Bytes::from(m), s))
                .collect();
            let order = entries(packed)
                .map(|(_, _, m, s)| (Score(s), Bytes::from(m)))
                .collect();
            self.0 = Repr::Tree { scores, order };
        }
    }

    /// Members in order, lowest score first, with their scores. A packed set is listed first
    /// (at most 128 entries), so that it can be walked from either end.
    pub fn iter(&self) -> Box<dyn DoubleEndedIterator<Item = (&[u8], f64)> + '_> {
        match &self.0 {
            Repr::Packed(packed) => {
                let listed: Vec<(&[u8], f64)> = entries(packed).map(|e| (e.2, e.3)).collect();
                Box::new(listed.into_iter())
            }
            Repr::Tree { order, .. } => {
                Box::new(order.iter().map(|(score, member)| (&**member, score.0)))
            }
        }
    }

    /// Members whose score is at least `min`, in order.
    pub fn from_score(&self, min: f64) -> Box<dyn Iterator<Item = (&[u8], f64)> + '_> {
        match &self.0 {
            Repr::Packed(_) => Box::new(self.iter().skip_while(move |(_, s)| *s < min)),
            Repr::Tree { order, .. } => Box::new(
                order
                    .range((Score(min), Bytes::default())..)
                    .map(|(score, member)| (&**member, score.0)),
            ),
        }
    }

    /// Members whose score is at most `max`, highest first.
    pub fn down_from_score(&self, max: f64) -> impl Iterator<Item = (&[u8], f64)> {
        self.iter().rev().skip_while(move |(_, score)| *score > max)
    }

    /// One ZSCAN step: the members and scores it covers and the cursor to continue from (0
    /// when done). A packed set is returned whole, as Redis returns a listpack.
    #[allow(clippy::type_complexity)]
    pub fn scan(
        &self,
        cursor: u64,
        count: usize,
    ) -> (u64, Box<dyn Iterator<Item = (&[u8], f64)> + '_>) {
        match &self.0 {
            Repr::Packed(_) => (0, self.iter()),
            Repr::Tree { scores, .. } => {
                let (next, found) = scores.scan(cursor, count);
                (next, Box::new(found.iter().map(|(m, s)| (&**m, *s))))
            }
        }
    }

    /// The 0-based position of `member`, lowest score first.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.0 {
            Repr::Packed(packed) => entries(packed).position(|e| e.2 == member),
            Repr::Tree { scores, order } => {
                let score = *scores.get(member)?;
                Some(order.range(..(Score(score), Bytes::from(member))).count())
            }
        }
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding(&self) -> &'static str {
        match &self.0 {
            Repr::Packed(_) => "listpack",
            Repr::Tree { .. } => "skiplist",
        }
    }

    /// Bytes held beyond the value itself, counted as requested.
    pub fn memory_bytes(&self) -> u64 {
        match &self.0 {
            Repr::Packed(packed) => packed.capacity() as u64,
            Repr::Tree { scores, .. } => {
                // Each member is held twice: in the table with its score, and in the tree. A
                // B-tree leaf holds 11 entries of 24 bytes in about 280 bytes, and entries
                // added in order (a queue's usual case) leave it about half full: 48 bytes an
                // entry, as measured.
                let member_heap: u64 = scores.keys().map(|m| m.len() as u64).sum();
                scores.memory_bytes() + member_heap + scores.len() as u64 * 48
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(zset: &ZSet) -> Vec<(Vec<u8>, f64)> {
        zset.iter().map(|(m, s)| (m.to_vec(), s)).collect()
    }

    #[test]
    fn both_forms_keep_score_then_member_order() {
        let mut packed = ZSet::default();
        for (member, score) in [(&b"b"[..], 2.0), (b"a", 2.0), (b"c", -1.0), (b"b", 0.5)] {
            packed.insert(member, score);
        }
        assert_eq!(packed.encoding(), "listpack");
        let mut tree = packed.clone();
        tree.insert(&[b'x'; 65], 9.0);
        tree.remove(&[b'x'; 65]);
        assert_eq!(tree.encoding(), "skiplist");
        for zset in [&packed, &tree] {
            assert_eq!(
                listed(zset),
                vec![
                    (b"c".to_vec(), -1.0),
                    (b"b".to_vec(), 0.5),
                    (b"a".to_vec(), 2.0)
                ]
            );
            assert_eq!(zset.rank(b"a"), Some(2));
            assert_eq!(zset.score(b"b"), Some(0.5));
            assert_eq!(zset.from_score(0.5).count(), 2);
            assert_eq!(zset.down_from_score(0.5).count(), 2);
        }
        assert!(!packed.insert(b"c", 3.0));
        assert_eq!(packed.rank(b"c"), Some(2));
        assert!(packed.remove(b"c") && !packed.remove(b"c"));
        assert_eq!(packed.len(), 2);
    }

    #[test]
    fn a_129th_member_unpacks() {
        let mut zset = ZSet::default();
        for i in 0..LISTPACK_ENTRIES {
            assert!(zset.insert(i.to_string().as_bytes(), i as f64));
        }
        assert_eq!(zset.encoding(), "listpack");
        assert!(zset.insert(b"more", -1.0));
        assert_eq!(
            (zset.encoding(), zset.len()),
            ("skiplist", LISTPACK_ENTRIES + 1)
        );
        assert_eq!(zset.rank(b"more"), Some(0));
    }
}
