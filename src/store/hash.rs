//! A hash: small ones packed in one buffer, as Redis's listpack keeps them (a field and a value
//! cost their bytes and two length bytes, not two allocations and a table slot), larger ones
//! in a hash table. As in Redis, a hash that outgrows the packed form never goes back to it,
//! and packed fields keep their insertion order, which HGETALL shows.

use super::dense::DenseMap;
use super::members::Bytes;

/// Redis's `hash-max-listpack-entries` and `hash-max-listpack-value`.
const PACKED_ENTRIES: usize = 128;
const PACKED_VALUE: usize = 64;

#[derive(Debug, Clone)]
enum Repr {
    /// Entries end to end: a length byte and the field, a length byte and the value.
    Packed(Vec<u8>),
    Table(DenseMap<Bytes>),
}

#[derive(Debug, Clone)]
pub struct Hash(Repr);

impl Default for Hash {
    fn default() -> Hash {
        Hash(Repr::Packed(Vec::new()))
    }
}

/// One packed entry: where it starts and ends, and where its value is.
struct Slot {
    start: usize,
    value: std::ops::Range<usize>,
}

/// The entries of a packed buffer, with their positions.
fn slots(packed: &[u8]) -> impl Iterator<Item = (Slot, &[u8], &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let start = at;
        let field_len = *packed.get(at)? as usize;
        let field = packed.get(at + 1..at + 1 + field_len)?;
        at += 1 + field_len;
        let value_len = *packed.get(at)? as usize;
        let value = at + 1..at + 1 + value_len;
        at = value.end;
        let bytes = packed.get(value.clone())?;
        Some((Slot { start, value }, field, bytes))
    })
}

impl Hash {
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Packed(packed) => slots(packed).count(),
            Repr::Table(table) => table.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        match &self.0 {
            Repr::Packed(packed) => packed.is_empty(),
            Repr::Table(table) => table.is_empty(),
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.0 {
            Repr::Packed(packed) => slots(packed).find(|(_, f, _)| *f == field).map(|e| e.2),
            Repr::Table(table) => table.get(field).map(|value| &**value),
        }
    }

    pub fn contains_key(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets a field; true if it is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Repr::Packed(packed) = &mut self.0 {
            let found = slots(packed)
                .find(|(_, f, _)| *f == field)
                .map(|(slot, _, _)| slot);
            let fits = field.len() <= PACKED_VALUE && value.len() <= PACKED_VALUE;
            match found {
                Some(slot) if fits => {
                    let length_byte = slot.value.start - 1;
                    let replacement =
                        std::iter::once(value.len() as u8).chain(value.iter().copied());
                    packed.splice(length_byte..slot.value.end, replacement);
                    return false;
                }
                None if fits && slots(packed).count() < PACKED_ENTRIES => {
                    packed.push(field.len() as u8);
                    packed.extend_from_slice(field);
                    packed.push(value.len() as u8);
                    packed.extend_from_slice(value);
                    return true;
                }
                _ => self.unpack(),
            }
        }
        match &mut self.0 {
            Repr::Table(table) => table
                .insert(Bytes::from(field), Bytes::from(value))
                .is_none(),
            Repr::Packed(_) => unreachable!("unpacked above"),
        }
    }

    /// Removes a field; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.0 {
            Repr::Packed(packed) => {
                let found = slots(packed)
                    .find(|(_, f, _)| *f == field)
                    .map(|(slot, _, _)| slot);
                found
                    .map(|slot| packed.drain(slot.start..slot.value.end))
                    .is_some()
            }
            Repr::Table(table) => table.remove(field).is_some(),
        }
    }

    /// Fields and values: in insertion order while packed, in table order after.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match &self.0 {
            Repr::Packed(packed) => Box::new(slots(packed).map(|(_, f, v)| (f, v))),
            Repr::Table(table) => Box::new(table.iter().map(|(f, v)| (f, &**v))),
        }
    }

    /// One HSCAN step: the fields and values it covers and the cursor to continue from (0 when
    /// done). A packed hash is returned whole, as Redis returns a listpack.
    #[allow(clippy::type_complexity)]
    pub fn scan(
        &self,
        cursor: u64,
        count: usize,
    ) -> (u64, Box<dyn Iterator<Item = (&[u8], &[u8])> + '_>) {
        match &self.0 {
            Repr::Packed(_) => (0, self.iter()),
            Repr::Table(table) => {
                let (next, found) = table.scan(cursor, count);
                (next, Box::new(found.iter().map(|(f, v)| (&**f, &**v))))
            }
        }
    }

    fn unpack(&mut self) {
        if let Repr::Packed(packed) = &self.0 {
            let table = slots(packed)
                .map(|(_, f, v)| (Bytes::from(f), Bytes::from(v)))
                .collect();
            self.0 = Repr::Table(table);
        }
    }

    /// OBJECT ENCODING's answer.
    pub fn encoding(&self) -> &'static str {
        match &self.0 {
            Repr::Packed(_) => "listpack",
            Repr::Table(_) => "hashtable",
        }
    }

    /// Bytes held beyond the value itself, counted as requested.
    pub fn memory_bytes(&self) -> u64 {
        match &self.0 {
            Repr::Packed(packed) => packed.capacity() as u64,
            Repr::Table(table) => {
                let values: u64 = table.iter().map(|(_, v)| v.len() as u64).sum();
                table.memory_bytes() + values
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_until_too_many_or_too_long_then_a_table() {
        let mut hash = Hash::default();
        assert!(hash.insert(b"a", b"1"));
        assert!(hash.insert(b"b", b""));
        assert!(!hash.insert(b"a", b"longer value"));
        assert_eq!(hash.get(b"a"), Some(&b"longer value"[..]));
        assert_eq!(
            hash.iter().collect::<Vec<_>>(),
            vec![(&b"a"[..], &b"longer value"[..]), (b"b", b"")]
        );
        assert_eq!(hash.encoding(), "listpack");
        assert!(hash.remove(b"a") && !hash.remove(b"a"));
        assert_eq!(hash.len(), 1);
        assert!(hash.insert(b"long", &[b'x'; 65]));
        assert_eq!(hash.encoding(), "hashtable");
        assert_eq!(hash.get(b"b"), Some(&b""[..]));
        assert!(hash.remove(b"long") && hash.remove(b"b") && hash.is_empty());
        assert_eq!(hash.encoding(), "hashtable");

        let mut many = Hash::default();
        for i in 0..PACKED_ENTRIES {
            many.insert(i.to_string().as_bytes(), b"v");
        }
        assert_eq!(many.encoding(), "listpack");
        many.insert(b"one more", b"v");
        assert_eq!(
            (many.encoding(), many.len()),
            ("hashtable", PACKED_ENTRIES + 1)
        );
    }
}
