//! One politeness group's queue of one priority: items in increasing id order, packed as
//! variable-length records in byte chunks, so that a queued URL costs its bytes and a few more
//! rather than an allocation and a map entry of its own.
//!
//! A record is three LEB128 integers and the URL's bytes:
//!
//! ```text
//! id − id of the record before it (the first record's base is kept in the queue)
//! deliveries so far (0 for an item never leased)
//! length << 1 | 1 if the bytes are what follows the group's name (the URL starts with it)
//! bytes
//! ```
//!
//! Chunks hold up to `CHUNK` bytes (a record longer than that has a chunk of its own); the front
//! chunk is freed once read to its end, so a queue holds at most one chunk of consumed records.

use std::collections::VecDeque;

/// Large enough that the chunk list stays short, small enough that a group with few URLs does
/// not hold much slack: a chunk grows by doubling from `FIRST_CHUNK` up to this.
const CHUNK: usize = 4096;
const FIRST_CHUNK: usize = 64;

/// One item read from a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record<'a> {
    pub id: u64,
    pub deliveries: u32,
    /// The URL is the group's name followed by `bytes`.
    pub after_group: bool,
    pub bytes: &'a [u8],
}

#[derive(Debug, Clone, Default)]
pub(crate) struct UrlQueue {
    chunks: VecDeque<Vec<u8>>,
    /// Bytes of the front chunk already read.
    head: usize,
    len: usize,
    /// The id the front record's delta counts from: the last id read (or 0).
    head_base: u64,
    /// The last id pushed: what the next record's delta counts from.
    tail_id: u64,
    /// Capacity of every chunk, for memory accounting.
    capacity: usize,
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn varint_len(mut value: u64) -> usize {
    let mut len = 1;
    while value >= 0x80 {
        value >>= 7;
        len += 1;
    }
    len
}

/// Reads a varint written by `put_varint`: records are only ever read back from what this
/// module wrote, so a short or overlong one is a bug.
fn get_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = bytes[*at];
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return value;
        }
        shift += 7;
    }
}

impl UrlQueue {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The last id pushed; a new record's id must be above it.
    pub(crate) fn tail_id(&self) -> u64 {
        self.tail_id
    }

    /// Bytes held on the heap: every chunk's capacity and the chunk list's slots.
    pub(crate) fn heap_bytes(&self) -> u64 {
        (self.capacity + self.chunks.capacity() * std::mem::size_of::<Vec<u8>>()) as u64
    }

    /// Appends a record; `id` must be above every id pushed before.
    pub(crate) fn push(&mut self, id: u64, deliveries: u32, after_group: bool, bytes: &[u8]) {
        debug_assert!(id > self.tail_id, "ids rise along a queue");
        let delta = id - self.tail_id;
        let tag = (bytes.len() as u64) << 1 | u64::from(after_group);
        let size =
            varint_len(delta) + varint_len(u64::from(deliveries)) + varint_len(tag) + bytes.len();
        let fits = self
            .chunks
            .back()
            .is_some_and(|chunk| chunk.len() + size <= CHUNK.max(chunk.capacity()));
        if !fits {
            // A new chunk starts small only while the queue is small.
            let first = if self.chunks.is_empty() {
                FIRST_CHUNK
            } else {
                CHUNK
            };
            let chunk = Vec::with_capacity(size.max(first));
            self.capacity += chunk.capacity();
            // A queue of a few URLs has one chunk: no room for more until it is needed.
            self.chunks.reserve_exact(1);
            self.chunks.push_back(chunk);
        }
        let chunk = self.chunks.back_mut().expect("a chunk was just ensured");
        if chunk.capacity() < chunk.len() + size {
            let before = chunk.capacity();
            let wanted = (before * 2).clamp(chunk.len() + size, CHUNK.max(chunk.len() + size));
            chunk.reserve_exact(wanted - chunk.len());
            self.capacity += chunk.capacity() - before;
        }
        put_varint(chunk, delta);
        put_varint(chunk, u64::from(deliveries));
        put_varint(chunk, tag);
        chunk.extend_from_slice(bytes);
        self.tail_id = id;
        self.len += 1;
    }

    /// The front record and its encoded length.
    fn decode_front(&self) -> Option<(Record<'_>, usize)> {
        if self.len == 0 {
            return None;
        }
        let chunk = &self.chunks[0];
        let mut at = self.head;
        let delta = get_varint(chunk, &mut at);
        let deliveries = get_varint(chunk, &mut at) as u32;
        let tag = get_varint(chunk, &mut at);
        let len = (tag >> 1) as usize;
        let record = Record {
            id: self.head_base + delta,
            deliveries,
            after_group: tag & 1 == 1,
            bytes: &chunk[at..at + len],
        };
        Some((record, at + len - self.head))
    }

    /// The id of the front record, without reading its bytes.
    pub(crate) fn front_id(&self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let mut at = self.head;
        Some(self.head_base + get_varint(&self.chunks[0], &mut at))
    }

    /// Removes the front record, handing it to `take` first.
    pub(crate) fn pop_front<R>(&mut self, take: impl FnOnce(Record<'_>) -> R) -> Option<R> {
        let (record, size) = self.decode_front()?;
        let id = record.id;
        let taken = take(record);
        self.head += size;
        self.head_base = id;
        self.len -= 1;
        if self.head == self.chunks[0].len() && (self.chunks.len() > 1 || self.len == 0) {
            let chunk = self.chunks.pop_front().expect("the front chunk");
            self.capacity -= chunk.capacity();
            self.head = 0;
        }
        if self.len == 0 {
            self.chunks = VecDeque::new();
        }
        Some(taken)
    }

    /// Every record, front to back.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Record<'_>> + '_ {
        let mut chunk = 0;
        let mut at = self.head;
        let mut base = self.head_base;
        (0..self.len).map(move |_| {
            if at == self.chunks[chunk].len() {
                chunk += 1;
                at = 0;
            }
            let bytes = &self.chunks[chunk];
            let delta = get_varint(bytes, &mut at);
            let deliveries = get_varint(bytes, &mut at) as u32;
            let tag = get_varint(bytes, &mut at);
            let len = (tag >> 1) as usize;
            base += delta;
            let record = Record {
                id: base,
                deliveries,
                after_group: tag & 1 == 1,
                bytes: &bytes[at..at + len],
            };
            at += len;
            record
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_out_in_order_with_their_fields() {
        let mut queue = UrlQueue::default();
        let mut model = std::collections::VecDeque::new();
        let mut id = 0u64;
        for round in 0..20_000u64 {
            if round % 3 != 2 {
                id += 1 + round % 1000 * (round % 7);
                let bytes = vec![b'a' + (round % 26) as u8; (round % 300) as usize];
                let deliveries = (round % 5) as u32;
                let after = round % 2 == 0;
                queue.push(id, deliveries, after, &bytes);
                model.push_back((id, deliveries, after, bytes));
            } else {
                let popped =
                    queue.pop_front(|r| (r.id, r.deliveries, r.after_group, r.bytes.to_vec()));
                assert_eq!(popped, model.pop_front());
            }
            assert_eq!(queue.len(), model.len());
            assert_eq!(queue.front_id(), model.front().map(|m| m.0));
            if round % 997 == 0 {
                let all: Vec<_> = queue
                    .iter()
                    .map(|r| (r.id, r.deliveries, r.after_group, r.bytes.to_vec()))
                    .collect();
                assert_eq!(all, model.iter().cloned().collect::<Vec<_>>());
            }
        }
        while let Some(popped) = queue.pop_front(|r| r.id) {
            assert_eq!(Some(popped), model.pop_front().map(|m| m.0));
        }
        assert_eq!(queue.heap_bytes(), 0);
    }

    #[test]
    fn a_record_costs_its_bytes_and_a_few_more() {
        let mut queue = UrlQueue::default();
        let url = [b'x'; 60];
        for id in 1..=100_000 {
            queue.push(id, 0, true, &url);
        }
        let per_record = queue.heap_bytes() as f64 / 100_000.0 - 60.0;
        assert!(
            per_record < 4.5,
            "{per_record} bytes of overhead per record"
        );
    }
}
