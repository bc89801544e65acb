//! A list, packed as Redis's quicklist packs it: a deque of chunks of at most 8 KiB (Redis's
//! `list-max-listpack-size -2`), each holding its elements end to end. A small element costs its
//! bytes and two bytes of length (one before it, one after, so that a chunk is walked from
//! either end), as in a listpack, rather than an allocation and a slot of its own.
//!
//! Both ends are cheap: a push or a pop touches only the first or the last chunk (at most 8 KiB
//! moved, as in Redis). An index is found by skipping whole chunks from the nearer end, then
//! walking one chunk. A chunk that fills is shrunk to its size, so only the end chunks carry
//! slack.

use super::members::Bytes;
use std::collections::VecDeque;

/// Largest chunk an element is added to (an element larger than this gets a chunk of its own).
const CHUNK_BYTES: usize = 8 * 1024;

/// Lengths up to this take one byte before and one after the element; longer ones five each.
const SHORT: usize = 0x7f;
const LONG_MARK: u8 = 0x80;

fn header_len(len: usize) -> usize {
    if len <= SHORT {
        1
    } else {
        5
    }
}

/// Bytes an element takes in a chunk.
fn entry_len(len: usize) -> usize {
    len + 2 * header_len(len)
}

fn write_entry(out: &mut Vec<u8>, element: &[u8]) {
    let len = element.len();
    if len <= SHORT {
        out.push(len as u8);
        out.extend_from_slice(element);
        out.push(len as u8);
    } else {
        let bytes = (len as u32).to_le_bytes();
        out.push(LONG_MARK);
        out.extend_from_slice(&bytes);
        out.extend_from_slice(element);
        out.extend_from_slice(&bytes);
        out.push(LONG_MARK);
    }
}

/// The element starting at `at`, and where the next one starts.
fn read_forward(bytes: &[u8], at: usize) -> (&[u8], usize) {
    let (len, start) = match bytes[at] {
        LONG_MARK => {
            let len = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().expect("4 bytes"));
            (len as usize, at + 5)
        }
        short => (short as usize, at + 1),
    };
    let end = start + len;
    (&bytes[start..end], end + header_len(len))
}

/// The element ending at `end`, and where it starts.
fn read_backward(bytes: &[u8], end: usize) -> (&[u8], usize) {
    let (len, stop) = match bytes[end - 1] {
        LONG_MARK => {
            let len = u32::from_le_bytes(bytes[end - 5..end - 1].try_into().expect("4 bytes"));
            (len as usize, end - 5)
        }
        short => (short as usize, end - 1),
    };
    let start = stop - len;
    (&bytes[start..stop], start - header_len(len))
}

#[derive(Clone, Default)]
struct Chunk {
    bytes: Vec<u8>,
    count: usize,
}

impl Chunk {
    fn elements(&self) -> Elements<'_> {
        Elements {
            bytes: &self.bytes,
            front: 0,
            back: self.bytes.len(),
            left: self.count,
        }
    }

    /// The byte range of element `index`, walking from the nearer end.
    fn span(&self, index: usize) -> std::ops::Range<usize> {
        if index < self.count / 2 {
            let mut at = 0;
            for _ in 0..index {
                at = read_forward(&self.bytes, at).1;
            }
            at..read_forward(&self.bytes, at).1
        } else {
            let mut end = self.bytes.len();
            for _ in 0..self.count - 1 - index {
                end = read_backward(&self.bytes, end).1;
            }
            read_backward(&self.bytes, end).1..end
        }
    }

    /// Whether `len` more bytes still fit, as Redis decides when to start a new node.
    fn has_room(&self, len: usize) -> bool {
        self.count == 0 || self.bytes.len() + len <= CHUNK_BYTES
    }

    /// Makes room for `len` more bytes, growing by half again rather than doubling: most
    /// lists are short, and a chunk's slack is most of what a short list costs beyond its
    /// elements (Redis reallocates a listpack to the byte).
    fn reserve(&mut self, len: usize) {
        let free = self.bytes.capacity() - self.bytes.len();
        if free < len {
            let grow = (self.bytes.capacity() / 2).min(CHUNK_BYTES / 2);
            self.bytes.reserve_exact(len.max(grow));
        }
    }
}

/// A chunk's elements, from either end.
struct Elements<'a> {
    bytes: &'a [u8],
    front: usize,
    back: usize,
    left: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (element, next) = read_forward(self.bytes, self.front);
        self.front = next;
        Some(element)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Elements<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (element, start) = read_backward(self.bytes, self.back);
        self.back = start;
        Some(element)
    }
}

#[derive(Clone, Default)]
pub struct List {
    chunks: VecDeque<Chunk>,
    len: usize,
}

impl std::fmt::Debug for List {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for List {
    fn eq(&self, other: &List) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<E: AsRef<[u8]>> FromIterator<E> for List {
    fn from_iter<I: IntoIterator<Item = E>>(elements: I) -> List {
        let mut list = List::default();
        list.extend(elements);
        list
    }
}

impl<E: AsRef<[u8]>> Extend<E> for List {
    fn extend<I: IntoIterator<Item = E>>(&mut self, elements: I) {
        elements
            .into_iter()
            .for_each(|element| self.push_back(element));
    }
}

/// A list's elements, by value, in order.
pub struct IntoIter {
    chunks: std::collections::vec_deque::IntoIter<Chunk>,
    chunk: Chunk,
    at: usize,
}

impl Iterator for IntoIter {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        while self.at == self.chunk.bytes.len() {
            self.chunk = self.chunks.next()?;
            self.at = 0;
        }
        let (element, next) = read_forward(&self.chunk.bytes, self.at);
        self.at = next;
        Some(Bytes::from(element))
    }
}

impl IntoIterator for List {
    type Item = Bytes;
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        IntoIter {
            chunks: self.chunks.into_iter(),
            chunk: Chunk::default(),
            at: 0,
        }
    }
}

impl List {
    pub fn new() -> List {
        List::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + '_ {
        self.chunks.iter().flat_map(Chunk::elements)
    }

    /// Elements `first..=last` (both within the list), in order, found from the nearer end.
    pub fn range(&self, first: usize, last: usize) -> impl Iterator<Item = &[u8]> + '_ {
        let (chunk, within) = self.locate(first);
        self.chunks
            .range(chunk..)
            .flat_map(Chunk::elements)
            .skip(within)
            .take(last + 1 - first)
    }

    /// The chunk holding element `index` and its place in it, skipping whole chunks from the
    /// nearer end of the list.
    fn locate(&self, index: usize) -> (usize, usize) {
        if index < self.len / 2 {
            let mut skipped = 0;
            for (at, chunk) in self.chunks.iter().enumerate() {
                if index < skipped + chunk.count {
                    return (at, index - skipped);
                }
                skipped += chunk.count;
            }
        } else {
            let mut after = self.len;
            for (at, chunk) in self.chunks.iter().enumerate().rev() {
                after -= chunk.count;
                if index >= after {
                    return (at, index - after);
                }
            }
        }
        (self.chunks.len(), 0)
    }

    pub fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.len {
            return None;
        }
        let (chunk, within) = self.locate(index);
        let chunk = &self.chunks[chunk];
        Some(read_forward(&chunk.bytes, chunk.span(within).start).0)
    }

    /// Replaces element `index` (which must be within the list).
    pub fn set(&mut self, index: usize, element: &[u8]) {
        let (chunk, within) = self.locate(index);
        let chunk = &mut self.chunks[chunk];
        let span = chunk.span(within);
        let mut entry = Vec::with_capacity(entry_len(element.len()));
        write_entry(&mut entry, element);
        chunk.bytes.splice(span, entry);
    }

    /// A new chunk at either end: the deque of chunks starts with room for one, as most lists
    /// need no more.
    fn new_chunk(&mut self, front: bool) {
        if self.chunks.capacity() == 0 {
            self.chunks.reserve_exact(1);
        }
        if front {
            if let Some(full) = self.chunks.front_mut() {
                full.bytes.shrink_to_fit();
            }
            self.chunks.push_front(Chunk::default());
        } else {
            if let Some(full) = self.chunks.back_mut() {
                full.bytes.shrink_to_fit();
            }
            self.chunks.push_back(Chunk::default());
        }
    }

    /// Makes room at one end for elements of these lengths about to be pushed, to the byte
    /// when they fit the end chunk, so that a list made by one push carries no slack.
    pub fn reserve(&mut self, front: bool, lens: impl Iterator<Item = usize>) {
        let bytes: usize = lens.map(entry_len).sum();
        let end = if front {
            self.chunks.front_mut()
        } else {
            self.chunks.back_mut()
        };
        match end {
            Some(chunk) if chunk.bytes.len() + bytes <= CHUNK_BYTES => {
                chunk.bytes.reserve_exact(bytes);
            }
            None if bytes <= CHUNK_BYTES => {
                self.new_chunk(front);
                self.chunks[0].bytes.reserve_exact(bytes);
            }
            _ => {}
        }
    }

    pub fn push_back(&mut self, element: impl AsRef<[u8]>) {
        let element = element.as_ref();
        let len = entry_len(element.len());
        if !self.chunks.back().is_some_and(|chunk| chunk.has_room(len)) {
            self.new_chunk(false);
        }
        let chunk = self.chunks.back_mut().expect("a chunk");
        chunk.reserve(len);
        write_entry(&mut chunk.bytes, element);
        chunk.count += 1;
        self.len += 1;
    }

    pub fn push_front(&mut self, element: impl AsRef<[u8]>) {
        let element = element.as_ref();
        let len = entry_len(element.len());
        if !self.chunks.front().is_some_and(|chunk| chunk.has_room(len)) {
            self.new_chunk(true);
        }
        let chunk = self.chunks.front_mut().expect("a chunk");
        chunk.reserve(len);
        let mut entry = Vec::with_capacity(len);
        write_entry(&mut entry, element);
        chunk.bytes.splice(0..0, entry);
        chunk.count += 1;
        self.len += 1;
    }

    /// Inserts `element` before element `index`, or at the end when `index` is the length
    /// (LINSERT). A chunk that this grows past its limit is split in two at its middle, so that
    /// inserts in one place cannot make one chunk that every later insert there moves whole.
    pub fn insert(&mut self, index: usize, element: &[u8]) {
        if index >= self.len {
            return self.push_back(element);
        }
        if index == 0 {
            return self.push_front(element);
        }
        let (at, within) = self.locate(index);
        let chunk = &mut self.chunks[at];
        let start = chunk.span(within).start;
        let mut entry = Vec::with_capacity(entry_len(element.len()));
        write_entry(&mut entry, element);
        chunk.bytes.splice(start..start, entry);
        chunk.count += 1;
        self.len += 1;
        if chunk.bytes.len() > CHUNK_BYTES && chunk.count > 1 {
            let keep = chunk.count / 2;
            let cut = chunk.span(keep).start;
            let rest = Chunk {
                bytes: chunk.bytes.split_off(cut),
                count: chunk.count - keep,
            };
            chunk.count = keep;
            chunk.bytes.shrink_to_fit();
            self.chunks.insert(at + 1, rest);
        }
    }

    pub fn pop_front(&mut self) -> Option<Bytes> {
        let chunk = self.chunks.front_mut()?;
        let (element, next) = read_forward(&chunk.bytes, 0);
        let element = Bytes::from(element);
        chunk.bytes.drain(..next);
        chunk.count -= 1;
        if chunk.count == 0 {
            self.chunks.pop_front();
        }
        self.len -= 1;
        Some(element)
    }

    pub fn pop_back(&mut self) -> Option<Bytes> {
        let chunk = self.chunks.back_mut()?;
        let (element, start) = read_backward(&chunk.bytes, chunk.bytes.len());
        let element = Bytes::from(element);
        chunk.bytes.truncate(start);
        chunk.count -= 1;
        if chunk.count == 0 {
            self.chunks.pop_back();
        }
        self.len -= 1;
        Some(element)
    }

    /// Keeps the first `len` elements.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let (chunk, within) = self.locate(len);
        self.chunks.truncate(chunk + 1);
        let last = &mut self.chunks[chunk];
        if within == 0 {
            self.chunks.pop_back();
        } else {
            let cut = last.span(within).start;
            last.bytes.truncate(cut);
            last.count = within;
        }
        self.len = len;
    }

    /// Removes the first `count` elements.
    pub fn remove_front(&mut self, count: usize) {
        if count >= self.len {
            self.clear();
            return;
        }
        let (chunk, within) = self.locate(count);
        self.chunks.drain(..chunk);
        let first = &mut self.chunks[0];
        let cut = first.span(within).start;
        first.bytes.drain(..cut);
        first.count -= within;
        self.len -= count;
    }

    pub fn clear(&mut self) {
        self.chunks.clear();
        self.len = 0;
    }

    /// Keeps the elements `keep` is true of, given their index; returns how many went.
    pub fn retain(&mut self, mut keep: impl FnMut(usize, &[u8]) -> bool) -> usize {
        let mut index = 0;
        let mut removed = 0;
        for chunk in self.chunks.iter_mut() {
            let mut kept = Vec::new();
            let mut count = 0;
            for element in chunk.elements() {
                if keep(index, element) {
                    write_entry(&mut kept, element);
                    count += 1;
                }
                index += 1;
            }
            if count < chunk.count {
                removed += chunk.count - count;
                chunk.bytes = kept;
                chunk.count = count;
            }
        }
        self.chunks.retain(|chunk| chunk.count > 0);
        self.len -= removed;
        removed
    }

    /// What OBJECT ENCODING's threshold counts: each element and about two bytes.
    pub(super) fn packed_size(&self) -> usize {
        self.iter().map(|element| element.len() + 2).sum()
    }

    /// Bytes held beyond the list itself.
    pub(super) fn memory_bytes(&self) -> u64 {
        let chunk = std::mem::size_of::<Chunk>();
        let slots = self.chunks.capacity() * chunk;
        let bytes: usize = self.chunks.iter().map(|c| c.bytes.capacity()).sum();
        (slots + bytes) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    fn element(state: &mut u64) -> Vec<u8> {
        let len = match next(state) % 10 {
            0 => 200 + next(state) % 300,
            1 => 9_000,
            _ => next(state) % 20,
        } as usize;
        (0..len).map(|i| (i as u64 + *state) as u8).collect()
    }

    fn check(list: &List, model: &VecDeque<Vec<u8>>) {
        assert_eq!(list.len(), model.len());
        assert!(list.iter().eq(model.iter().map(Vec::as_slice)));
        assert!(list.iter().rev().eq(model.iter().rev().map(Vec::as_slice)));
        assert_eq!(
            list.chunks.iter().map(|c| c.count).sum::<usize>(),
            list.len()
        );
        assert!(list.chunks.iter().all(|c| c.count > 0));
    }

    #[test]
    fn behaves_as_a_deque_of_byte_strings() {
        let mut list = List::default();
        let mut model: VecDeque<Vec<u8>> = VecDeque::new();
        let mut state = 0x2545_F491_4F6C_DD1D;
        for round in 0..20_000 {
            match next(&mut state) % 13 {
                0..=2 => {
                    let e = element(&mut state);
                    list.push_back(&e);
                    model.push_back(e);
                }
                3..=5 => {
                    let e = element(&mut state);
                    list.push_front(&e);
                    model.push_front(e);
                }
                6 => assert_eq!(list.pop_front().map(Vec::from), model.pop_front()),
                7 => assert_eq!(list.pop_back().map(Vec::from), model.pop_back()),
                8 if !model.is_empty() => {
                    let at = next(&mut state) as usize % model.len();
                    assert_eq!(list.get(at), Some(&model[at][..]));
                    let e = element(&mut state);
                    list.set(at, &e);
                    model[at] = e;
                    let last = at + next(&mut state) as usize % (model.len() - at);
                    assert!(list
                        .range(at, last)
                        .eq(model.range(at..=last).map(Vec::as_slice)));
                }
                9 if round % 7 == 0 => {
                    let keep = model.len() - model.len() / 8;
                    list.truncate(keep);
                    model.truncate(keep);
                }
                10 if round % 7 == 0 => {
                    let drop = model.len() / 8;
                    list.remove_front(drop);
                    model.drain(..drop);
                }
                11 if round % 13 == 0 => {
                    let removed = list.retain(|i, e| i % 3 != 0 || e.len() > 10);
                    let before = model.len();
                    let mut i = 0;
                    model.retain(|e| {
                        let keep = i % 3 != 0 || e.len() > 10;
                        i += 1;
                        keep
                    });
                    assert_eq!(removed, before - model.len());
                }
                11 | 12 => {
                    let at = next(&mut state) as usize % (model.len() + 1);
                    let e = element(&mut state);
                    list.insert(at, &e);
                    model.insert(at, e);
                }
                _ => {}
            }
            if round % 101 == 0 {
                check(&list, &model);
            }
        }
        check(&list, &model);
        assert!(list.get(model.len()).is_none());
        let copy: List = list.clone().into_iter().collect();
        assert_eq!(copy, list);
        assert!(list.into_iter().map(Vec::from).eq(model));
    }

    #[test]
    fn small_elements_cost_their_bytes_and_two_more() {
        let mut list = List::default();
        for i in 0..100_000u32 {
            list.push_back(&i.to_le_bytes()[..3]);
        }
        let per_element = list.memory_bytes() as f64 / list.len() as f64;
        assert!(per_element < 5.2, "{per_element} bytes an element");
    }
}
