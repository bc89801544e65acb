//! A set: small ones packed in one buffer, as Redis keeps them (an intset while every member is
//! an integer, up to 512 of them; a listpack up to 128 members of 64 bytes), larger ones in a
//! hash table. As in Redis, a set never goes back to a more compact form.

use super::dense::DenseMap;
use super::members::{Bytes, LISTPACK_ENTRIES, LISTPACK_VALUE};

/// Redis's `set-max-intset-entries`.
const INTSET_ENTRIES: usize = 512;

#[derive(Debug, Clone)]
enum Repr {
    /// Members end to end, each a length byte and its bytes, in insertion order. `strings`
    /// once a member was not an integer: the set is a listpack from then on, not an intset.
    Packed {
        bytes: Vec<u8>,
        strings: bool,
    },
    Table(DenseMap<()>),
}

#[derive(Debug, Clone)]
pub struct Set(Repr);

impl Default for Set {
    fn default() -> Set {
        Set(Repr::Packed {
            bytes: Vec::new(),
            strings: false,
        })
    }
}

/// Whether Redis would keep `member` in an intset.
fn is_integer(member: &[u8]) -> bool {
    member.len() <= 20 && crate::protocol::parse_i64(member).is_some()
}

/// The members of a packed buffer, with where each starts and ends.
fn members(packed: &[u8]) -> impl Iterator<Item = (usize, usize, &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let start = at;
        let len = *packed.get(at)? as usize;
        let member = packed.get(at + 1..at + 1 + len)?;
        at += 1 + len;
        Some((start, at, member))
    })
}

impl Set {
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Packed { bytes, .. } => members(bytes).count(),
            Repr::Table(table) => table.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match &self.0 {
            Repr::Packed { bytes, .. } => bytes.is_empty(),
            Repr::Table(table) => table.is_empty(),
        }
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.0 {
            Repr::Packed { bytes, .. } => members(bytes).any(|(_, _, m)| m == member),
            Repr::Table(table) => table.contains_key(member),
        }
    }

    /// Adds a member; true if it is new.
    pub fn insert(&mut self, member: &[u8]) -> bool {
        if let Repr::Packed { bytes, strings } = &mut self.0 {
            if members(bytes).any(|(_, _, m)| m == member) {
                return false;
            }
            let strings_now = *strings || !is_integer(member);
            let count = members(bytes).count() + 1;
            let fits = if strings_now {
                // Redis turns an intset of more than 128 members into a table, not a listpack.
                count <= LISTPACK_ENTRIES
                    && member.len() <= LISTPACK_VALUE
                    && members(bytes).all(|(_, _, m)| m.len() <= LISTPACK_VALUE)
            } else {
                count <= INTSET_ENTRIES
            };
            if fits {
                bytes.push(member.len() as u8);
                bytes.extend_from_slice(member);
                *strings = strings_now;
                return true;
            }
            let table = members(bytes)
                .map(|(_, _, m)| (Bytes::from(m), ()))
                .collect();
            self.0 = Repr::Table(table);
        }
        match &mut self.0 {
            Repr::Table(table) => table.insert(Bytes::from(member), ()).is_none(),
            Repr::Packed { .. } => unreachable!("unpacked above"),
        }
    }

    /// Removes a member; true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.0 {
            Repr::Packed { bytes, .. } => {
                let found = members(bytes)
                    .find(|(_, _, m)| *m == member)
                    .map(|(start, end, _)| start..end);
                found.map(|range| bytes.drain(range)).is_some()
            }
            Repr::Table(table) => table.remove(member).is_some(),
        }
    }

    pub fn iter(&self) -> Box<dyn Iterator<Item = &[u8]> + '_> {
        match &self.0 {
            Repr::Packed { bytes, .. } => Box::new(members(bytes).map(|(_, _, m)| m)),
            Repr::Table(table) => Box::new(table.keys()),
        }
    }

    /// One SSCAN step: the members it covers and the cursor to continue from (0 when done).
    /// A packed set is returned whole, as Redis returns an intset or a listpack.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Box<dyn Iterator<Item = &[u8]> + '_>) {
        match &self.0 {
            Repr::Packed { .. } => (0, self.iter()),
            Repr::Table(table) => {
                let (next, found) = table.scan(cursor, count);
                (next, Box::new(found.iter().map(|(member, _)| &**member)))
            }
        }
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding(&self) -> &'static str {
        match &self.0 {
            Repr::Packed { strings: false, .. } => "intset",
            Repr::Packed { strings: true, .. } => "listpack",
            Repr::Table(_) => "hashtable",
        }
    }

    /// Bytes held beyond the value itself, counted as requested.
    pub fn memory_bytes(&self) -> u64 {
        match &self.0 {
            Repr::Packed { bytes, .. } => bytes.capacity() as u64,
            Repr::Table(table) => table.memory_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intset_then_listpack_then_table() {
        let mut set = Set::default();
        assert!(set.insert(b"1") && set.insert(b"-2") && !set.insert(b"1"));
        assert_eq!(set.encoding(), "intset");
        assert!(set.insert(b"a"));
        assert_eq!(set.encoding(), "listpack");
        assert!(set.remove(b"a") && !set.remove(b"a"));
        assert_eq!(set.encoding(), "listpack");
        assert!(set.insert(&[b'x'; 65]));
        assert_eq!(set.encoding(), "hashtable");
        assert!(set.contains(b"-2") && set.contains(&[b'x'; 65]) && !set.contains(b"a"));
        assert_eq!(set.len(), 3);

        let mut ints = Set::default();
        for i in 0..INTSET_ENTRIES {
            ints.insert(i.to_string().as_bytes());
        }
        assert_eq!(ints.encoding(), "intset");
        ints.insert(b"word");
        assert_eq!(
            (ints.encoding(), ints.len()),
            ("hashtable", INTSET_ENTRIES + 1)
        );
    }
}
