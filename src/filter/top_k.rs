//! RedisBloom's Top-K (src/topk.c, src/rm_topk.c): HeavyKeeper. `depth` rows of `width`
//! buckets, each a fingerprint (MurmurHash2 of the item under seed 1919) and a count; row `i`
//! indexes the item by MurmurHash2 under seed `i`. An add counts up a bucket that is empty or
//! holds the item's fingerprint, and otherwise decays the bucket's count by one with
//! probability decay^count per unit of increment, taking the bucket over when it reaches 0.
//! The `k` heaviest items sit in a min-heap (an array, smallest count first) with their names.
//!
//! Everything follows RedisBloom 8.8 exactly: the heap's sift-down (so ties land where they
//! do there), TOPK.LIST's order, the expelled item ADD and INCRBY return, TOPK.COUNT's rule,
//! the decay probabilities (a table of `pow(decay, i)` after TOPK.RESERVE, of repeated
//! products after a load) and the saved form. The one thing no reimplementation can match is
//! a real server's draws (`glibc_random.rs` says why); they come from the `DecayDraws` each
//! add is handed.

use super::glibc_random::{DecayDraws, RAND_MAX};
use super::module_fields::{FieldReader, ModuleField};
use super::sketch_error::check_limit;
use super::sketch_hash::murmur2;
use super::SketchError;

/// The module type RedisBloom registers, and the encoding version it saves with.
pub const TOP_K_TYPE_NAME: &str = "TopK-TYPE";
pub const TOP_K_ENCODING_VERSION: u64 = 0;

/// TOPK.RESERVE's dimensions when only k is given.
pub const TOP_K_DEFAULT_WIDTH: i64 = 8;
pub const TOP_K_DEFAULT_DEPTH: i64 = 7;
pub const TOP_K_DEFAULT_DECAY: f64 = 0.9;
/// The largest TOPK.INCRBY increment.
pub const TOP_K_MAX_INCREMENT: i64 = 100_000;

/// The seed of item fingerprints.
const FINGERPRINT_SEED: u32 = 1919;
const DECAY_TABLE_LEN: usize = 256;
/// RedisBloom's `sizeof(TopK)`: k, width, depth, decay, two addresses and the decay table.
const HEADER_BYTES: u64 = 40 + 8 * DECAY_TABLE_LEN as u64;
/// A bucket as saved: fingerprint and count, little-endian u32s.
const BUCKET_BYTES: u64 = 8;
/// A heap entry as saved, RedisBloom's `HeapBucket`: fingerprint u32, item length u32, the
/// item's address (8 bytes, ignored on load), count u32, 4 bytes of padding.
const HEAP_ENTRY_BYTES: u64 = 24;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Bucket {
    fingerprint: u32,
    count: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct HeapEntry {
    fingerprint: u32,
    count: u32,
    /// None for a slot never filled, and for an empty item after a load (RedisBloom reads a
    /// saved empty name back as no name).
    item: Option<Box<[u8]>>,
}

impl HeapEntry {
    fn holds(&self, fingerprint: u32, item: &[u8]) -> bool {
        self.fingerprint == fingerprint && self.item.as_deref().unwrap_or_default() == item
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopK {
    k: u32,
    width: u32,
    depth: u32,
    decay: f64,
    /// Row after row.
    buckets: Vec<Bucket>,
    /// A min-heap by count, `k` entries.
    heap: Vec<HeapEntry>,
    /// decay^i for i < 256.
    decay_table: Box<[f64; DECAY_TABLE_LEN]>,
}

/// One entry of TOPK.LIST: the item as RedisBloom replies it (a C string: up to its first NUL
/// byte; None, replied as a null, for an empty name that went through a load), and its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopKListed<'a> {
    pub item: Option<&'a [u8]>,
    pub count: u32,
}

/// TOPK.INFO's fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopKInfo {
    pub k: u64,
    pub width: u64,
    pub depth: u64,
    pub decay: f64,
}

impl TopK {
    /// TOPK.RESERVE's Top-K, checked as RedisBloom checks it (k, width and depth in
    /// 1..=u32::MAX in that order, then decay in (0, 1]) and against `limit_bytes` before
    /// anything is allocated.
    pub fn new(
        k: i64,
        width: i64,
        depth: i64,
        decay: f64,
        limit_bytes: u64,
    ) -> Result<TopK, SketchError> {
        let dimension =
            |value: i64, error| u32::try_from(value).ok().filter(|&v| v >= 1).ok_or(error);
        let k = dimension(k, SketchError::TopKInvalidK)?;
        let width = dimension(width, SketchError::TopKInvalidWidth)?;
        let depth = dimension(depth, SketchError::TopKInvalidDepth)?;
        if !(decay > 0.0 && decay <= 1.0) {
            return Err(SketchError::TopKInvalidDecay);
        }
        let bytes = Self::bytes_for(k, width, depth);
        check_limit(bytes, limit_bytes, too_large)?;
        let cells = u64::from(width) * u64::from(depth);
        let mut buckets = Vec::new();
        let mut heap = Vec::new();
        usize::try_from(cells)
            .ok()
            .and_then(|cells| buckets.try_reserve_exact(cells).ok())
            .and_then(|()| heap.try_reserve_exact(k as usize).ok())
            .ok_or(too_large(bytes, limit_bytes))?;
        buckets.resize(cells as usize, Bucket::default());
        heap.resize(k as usize, HeapEntry::default());
        Ok(TopK {
            k,
            width,
            depth,
            decay,
            buckets,
            heap,
            decay_table: powers_of(decay),
        })
    }

    /// Whether the decay table is TOPK.RESERVE's (`pow`), not a load's (repeated products).
    pub fn has_reserved_decay_table(&self) -> bool {
        *self.decay_table == *powers_of(self.decay)
    }

    /// Takes TOPK.RESERVE's decay table: for sieved's own snapshots, which must bring back a
    /// Top-K that decays exactly as before, where RedisBloom's load changes the table.
    pub fn use_reserved_decay_table(&mut self) {
        self.decay_table = powers_of(self.decay);
    }

    /// TOPK.RESERVE with k alone: width 8, depth 7, decay 0.9.
    pub fn with_defaults(k: i64, limit_bytes: u64) -> Result<TopK, SketchError> {
        Self::new(
            k,
            TOP_K_DEFAULT_WIDTH,
            TOP_K_DEFAULT_DEPTH,
            TOP_K_DEFAULT_DECAY,
            limit_bytes,
        )
    }

    /// TOPK.INCRBY's increment, checked as RedisBloom checks it: 0 to 100,000.
    pub fn checked_increment(increment: i64) -> Result<u32, SketchError> {
        if (0..=TOP_K_MAX_INCREMENT).contains(&increment) {
            Ok(increment as u32)
        } else {
            Err(SketchError::TopKInvalidIncrement)
        }
    }

    fn bytes_for(k: u32, width: u32, depth: u32) -> u64 {
        // At most 2^64 · 8 + 2^32 · 24: saturate rather than wrap.
        (u64::from(width) * u64::from(depth))
            .saturating_mul(BUCKET_BYTES)
            .saturating_add(u64::from(k) * HEAP_ENTRY_BYTES)
            .saturating_add(HEADER_BYTES)
    }

    /// The bytes RedisBloom reports for this Top-K (its `mem_usage`, which leaves out the
    /// items' names): MEMORY USAGE's value part.
    pub fn memory_usage(&self) -> u64 {
        Self::bytes_for(self.k, self.width, self.depth)
    }

    fn bucket_index(&self, item: &[u8], row: u32) -> usize {
        (murmur2(item, row) % self.width) as usize + row as usize * self.width as usize
    }

    /// The probability that a colliding bucket of `count` decays, as RedisBloom looks it up.
    fn decay_chance(&self, count: u32) -> f64 {
        let table = &self.decay_table;
        if (count as usize) < DECAY_TABLE_LEN {
            table[count as usize]
        } else {
            let last = DECAY_TABLE_LEN as u32 - 1;
            table[last as usize].powf(f64::from(count / last)) * table[(count % last) as usize]
        }
    }

    /// TOPK.ADD (increment 1) or TOPK.INCRBY of one item. Returns the item it pushed out of
    /// the top k, as RedisBloom replies it (up to its first NUL byte), or None (a null reply)
    /// when none was, or the slot it took had no name.
    pub fn add(
        &mut self,
        item: &[u8],
        increment: u32,
        draws: &mut dyn DecayDraws,
    ) -> Option<Vec<u8>> {
        let fingerprint = murmur2(item, FINGERPRINT_SEED);
        let heap_min = self.heap[0].count;
        let mut max_count = 0u32;
        for row in 0..self.depth {
            let index = self.bucket_index(item, row);
            let bucket = self.buckets[index];
            if bucket.count == 0 {
                self.buckets[index] = Bucket {
                    fingerprint,
                    count: increment,
                };
                max_count = max_count.max(increment);
            } else if bucket.fingerprint == fingerprint {
                let count = bucket.count.wrapping_add(increment);
                self.buckets[index].count = count;
                max_count = max_count.max(count);
            } else {
                let mut count = bucket.count;
                let mut remaining = increment;
                while remaining > 0 {
                    let chance = f64::from(draws.next_draw()) / f64::from(RAND_MAX);
                    if chance < self.decay_chance(count) {
                        count -= 1;
                        if count == 0 {
                            // Taken over, with what is left of the increment.
                            self.buckets[index] = Bucket {
                                fingerprint,
                                count: remaining,
                            };
                            max_count = max_count.max(remaining);
                            break;
                        }
                    }
                    remaining -= 1;
                }
                if count != 0 {
                    self.buckets[index].count = count;
                }
            }
        }
        if max_count < heap_min {
            return None;
        }
        if let Some(position) = self.position_in_heap(fingerprint, item) {
            // Not the larger of the two: the count may have decayed.
            self.heap[position].count = max_count;
            self.sift_down(position);
            return None;
        }
        let expelled = std::mem::replace(
            &mut self.heap[0],
            HeapEntry {
                fingerprint,
                count: max_count,
                item: Some(item.into()),
            },
        )
        .item;
        self.sift_down(0);
        expelled.map(|name| c_string(&name).to_vec())
    }

    /// Where the item sits in the heap, searched from the last entry down as RedisBloom does.
    fn position_in_heap(&self, fingerprint: u32, item: &[u8]) -> Option<usize> {
        self.heap
            .iter()
            .rposition(|entry| entry.holds(fingerprint, item))
    }

    /// RedisBloom's `heapifyDown`, tie for tie: an entry moves below a child whose count is
    /// equal, and the right child is taken only when strictly smaller.
    fn sift_down(&mut self, start: usize) {
        let len = self.heap.len();
        if len < 2 || (len - 2) / 2 < start {
            return;
        }
        let smaller_child = |heap: &[HeapEntry], parent: usize| {
            let child = 2 * parent + 1;
            if child + 1 < len && heap[child].count > heap[child + 1].count {
                child + 1
            } else {
                child
            }
        };
        let mut child = smaller_child(&self.heap, start);
        if self.heap[child].count > self.heap[start].count {
            return;
        }
        let mut at = start;
        loop {
            self.heap.swap(at, child);
            at = child;
            if (len - 2) / 2 < child {
                break;
            }
            child = smaller_child(&self.heap, at);
            if self.heap[child].count >= self.heap[at].count {
                break;
            }
        }
    }

    /// TOPK.QUERY of one item: whether it is in the top k.
    pub fn query(&self, item: &[u8]) -> bool {
        let fingerprint = murmur2(item, FINGERPRINT_SEED);
        self.position_in_heap(fingerprint, item).is_some()
    }

    /// TOPK.COUNT of one item: the largest count of a bucket holding its fingerprint, where
    /// an item in the heap only counts buckets at or above the heap's minimum.
    pub fn count(&self, item: &[u8]) -> u32 {
        let fingerprint = murmur2(item, FINGERPRINT_SEED);
        let heap_min = self.heap[0].count;
        let in_heap = self.position_in_heap(fingerprint, item).is_some();
        (0..self.depth)
            .map(|row| self.buckets[self.bucket_index(item, row)])
            .filter(|bucket| {
                bucket.fingerprint == fingerprint && (!in_heap || bucket.count >= heap_min)
            })
            .map(|bucket| bucket.count)
            .max()
            .unwrap_or(0)
    }

    /// TOPK.LIST: the heap's entries by count, largest first, ties in heap order, up to the
    /// first count of 0.
    pub fn list(&self) -> Vec<TopKListed<'_>> {
        let mut entries: Vec<&HeapEntry> = self.heap.iter().collect();
        // Stable, as glibc 2.36's qsort (a merge sort) is.
        entries.sort_by_key(|entry| std::cmp::Reverse(entry.count));
        entries
            .into_iter()
            .take_while(|entry| entry.count != 0)
            .map(|entry| TopKListed {
                item: entry.item.as_deref().map(c_string),
                count: entry.count,
            })
            .collect()
    }

    pub fn info(&self) -> TopKInfo {
        TopKInfo {
            k: u64::from(self.k),
            width: u64::from(self.width),
            depth: u64::from(self.depth),
            decay: self.decay,
        }
    }

    /// The saved form. The heap entries' item addresses are written as 0.
    pub fn to_shape(&self) -> TopKShape {
        let buckets = self
            .buckets
            .iter()
            .flat_map(|bucket| {
                let mut bytes = [0u8; BUCKET_BYTES as usize];
                bytes[..4].copy_from_slice(&bucket.fingerprint.to_le_bytes());
                bytes[4..].copy_from_slice(&bucket.count.to_le_bytes());
                bytes
            })
            .collect();
        let heap = self
            .heap
            .iter()
            .flat_map(|entry| {
                let mut bytes = [0u8; HEAP_ENTRY_BYTES as usize];
                let length = entry.item.as_ref().map_or(0, |item| item.len() as u32);
                bytes[..4].copy_from_slice(&entry.fingerprint.to_le_bytes());
                bytes[4..8].copy_from_slice(&length.to_le_bytes());
                bytes[16..20].copy_from_slice(&entry.count.to_le_bytes());
                bytes
            })
            .collect();
        // Each name as a C string with its terminator, the missing ones as "".
        let items = self
            .heap
            .iter()
            .map(|entry| {
                let mut saved = entry
                    .item
                    .as_deref()
                    .map(c_string)
                    .unwrap_or_default()
                    .to_vec();
                saved.push(0);
                saved
            })
            .collect();
        TopKShape {
            k: u64::from(self.k),
            width: u64::from(self.width),
            depth: u64::from(self.depth),
            decay: self.decay,
            buckets,
            heap,
            items,
        }
    }

    /// The Top-K a saved form describes, every field checked, and its size against
    /// `limit_bytes`, before anything is allocated. The heap entries' addresses and item
    /// lengths are not used: each name is its saved string without the terminator (as
    /// RedisBloom after 8.8 reads it; 8.8 itself kept the saved length, which only differs for
    /// names with a NUL byte, whose saved strings are cut there), "" being no name.
    pub fn from_shape(shape: &TopKShape, limit_bytes: u64) -> Result<TopK, SketchError> {
        let dimension = |value: u64| {
            u32::try_from(value)
                .ok()
                .filter(|&v| v >= 1)
                .ok_or(SketchError::BadSavedForm)
        };
        let k = dimension(shape.k)?;
        let width = dimension(shape.width)?;
        let depth = dimension(shape.depth)?;
        if !(shape.decay > 0.0 && shape.decay <= 1.0) {
            return Err(SketchError::BadSavedForm);
        }
        let cells = u64::from(width) * u64::from(depth);
        if cells.checked_mul(BUCKET_BYTES) != Some(shape.buckets.len() as u64)
            || u64::from(k) * HEAP_ENTRY_BYTES != shape.heap.len() as u64
            || shape.items.len() as u64 != u64::from(k)
        {
            return Err(SketchError::BadSavedForm);
        }
        check_limit(Self::bytes_for(k, width, depth), limit_bytes, too_large)?;
        let word = |bytes: &[u8], at: usize| {
            u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
        };
        let buckets = shape
            .buckets
            .chunks_exact(BUCKET_BYTES as usize)
            .map(|bytes| Bucket {
                fingerprint: word(bytes, 0),
                count: word(bytes, 4),
            })
            .collect();
        let heap = shape
            .heap
            .chunks_exact(HEAP_ENTRY_BYTES as usize)
            .zip(&shape.items)
            .map(|(bytes, saved)| {
                // A C string: one terminator, at the end, and nothing else.
                let name = match saved.split_last() {
                    Some((0, name)) if !name.contains(&0) => name,
                    _ => return Err(SketchError::BadSavedForm),
                };
                Ok(HeapEntry {
                    fingerprint: word(bytes, 0),
                    count: word(bytes, 16),
                    item: (!name.is_empty()).then(|| name.into()),
                })
            })
            .collect::<Result<_, _>>()?;
        // After a load RedisBloom builds the table by repeated multiplication, not `pow`.
        let mut decay_table = Box::new([1.0; DECAY_TABLE_LEN]);
        for power in 1..DECAY_TABLE_LEN {
            decay_table[power] = decay_table[power - 1] * shape.decay;
        }
        Ok(TopK {
            k,
            width,
            depth,
            decay: shape.decay,
            buckets,
            heap,
            decay_table,
        })
    }
}

/// decay^i for i < 256, as TOPK.RESERVE computes them.
fn powers_of(decay: f64) -> Box<[f64; DECAY_TABLE_LEN]> {
    let mut table = Box::new([0.0; DECAY_TABLE_LEN]);
    for (power, slot) in table.iter_mut().enumerate() {
        *slot = decay.powf(power as f64);
    }
    table
}

fn too_large(bytes: u64, limit: u64) -> SketchError {
    SketchError::TopKTooLarge { bytes, limit }
}

/// The bytes of `name` up to its first NUL: what C string functions see of it.
fn c_string(name: &[u8]) -> &[u8] {
    name.iter()
        .position(|&byte| byte == 0)
        .map_or(name, |end| &name[..end])
}

/// A Top-K as RedisBloom 8.8 saves it (`TopK-TYPE`, encoding version 0): unsigned k, width
/// and depth, the decay as a double, the buckets as one string buffer (8 bytes each: the
/// fingerprint and the count as little-endian u32s), the heap as one string buffer (24 bytes
/// each: fingerprint u32, item length u32, the item's address as 8 bytes that loading
/// ignores, count u32, 4 bytes of padding), then `k` string buffers: each heap entry's name as
/// a C string with its terminating NUL, "" (one NUL) for an entry without one.
#[derive(Debug, Clone, PartialEq)]
pub struct TopKShape {
    pub k: u64,
    pub width: u64,
    pub depth: u64,
    pub decay: f64,
    pub buckets: Vec<u8>,
    pub heap: Vec<u8>,
    pub items: Vec<Vec<u8>>,
}

impl TopKShape {
    pub fn to_fields(&self) -> Vec<ModuleField> {
        let mut fields = vec![
            ModuleField::Unsigned(self.k),
            ModuleField::Unsigned(self.width),
            ModuleField::Unsigned(self.depth),
            ModuleField::Double(self.decay),
            ModuleField::Buffer(self.buckets.clone()),
            ModuleField::Buffer(self.heap.clone()),
        ];
        fields.extend(self.items.iter().cloned().map(ModuleField::Buffer));
        fields
    }

    /// The shape the fields describe: k names after the heap, as RedisBloom reads them.
    pub fn from_fields(fields: Vec<ModuleField>) -> Result<TopKShape, SketchError> {
        let mut reader = FieldReader::new(fields);
        let k = reader.unsigned()?;
        let width = reader.unsigned()?;
        let depth = reader.unsigned()?;
        let decay = reader.double()?;
        let buckets = reader.buffer()?;
        let heap = reader.buffer()?;
        // Bounded by the fields there are: a missing one ends the loop with an error.
        let mut items = Vec::new();
        for _ in 0..k {
            items.push(reader.buffer()?);
        }
        reader.finish()?;
        Ok(TopKShape {
            k,
            width,
            depth,
            decay,
            buckets,
            heap,
            items,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::GlibcRandom;

    const NO_LIMIT: u64 = u64::MAX;

    fn never_decays() -> impl FnMut() -> u32 {
        || RAND_MAX
    }

    #[test]
    fn reserves_as_redisbloom_checks() {
        let new = |k, width, depth, decay| TopK::new(k, width, depth, decay, NO_LIMIT).err();
        assert_eq!(new(0, 8, 7, 0.9), Some(SketchError::TopKInvalidK));
        assert_eq!(new(1 << 32, 0, 7, 0.9), Some(SketchError::TopKInvalidK));
        assert_eq!(new(3, 1 << 32, 7, 0.9), Some(SketchError::TopKInvalidWidth));
        assert_eq!(new(3, 8, -1, 2.0), Some(SketchError::TopKInvalidDepth));
        for decay in [0.0, -0.5, 1.000_001, f64::NAN] {
            assert_eq!(new(3, 8, 7, decay), Some(SketchError::TopKInvalidDecay));
        }
        assert_eq!(new(3, 8, 7, 1.0), None);
        let top_k = TopK::with_defaults(10, NO_LIMIT).unwrap();
        assert_eq!(
            top_k.info(),
            TopKInfo {
                k: 10,
                width: 8,
                depth: 7,
                decay: 0.9
            }
        );
        // sizeof(TopK) 2088, 56 buckets of 8 bytes, 10 heap entries of 24.
        assert_eq!(top_k.memory_usage(), 2088 + 448 + 240);
        assert_eq!(
            TopK::new(1 << 31, 1 << 20, 1 << 12, 0.9, 1 << 30),
            Err(SketchError::TopKTooLarge {
                bytes: 2088 + 8 * (1 << 32) + 24 * (1 << 31),
                limit: 1 << 30
            })
        );
        assert_eq!(TopK::checked_increment(100_000), Ok(100_000));
        assert_eq!(
            TopK::checked_increment(100_001),
            Err(SketchError::TopKInvalidIncrement)
        );
        assert_eq!(
            TopK::checked_increment(-1),
            Err(SketchError::TopKInvalidIncrement)
        );
    }

    #[test]
    fn keeps_the_heaviest_and_returns_the_expelled() {
        let mut top_k = TopK::new(2, 1000, 4, 0.9, NO_LIMIT).unwrap();
        let mut draws = never_decays();
        assert_eq!(top_k.add(b"a", 5, &mut draws), None);
        assert_eq!(top_k.add(b"b", 3, &mut draws), None);
        assert_eq!(top_k.add(b"c", 4, &mut draws), Some(b"b".to_vec()));
        assert_eq!(top_k.add(b"d", 1, &mut draws), None);
        let listed: Vec<(Option<&[u8]>, u32)> = top_k
            .list()
            .iter()
            .map(|entry| (entry.item, entry.count))
            .collect();
        assert_eq!(listed, [(Some(&b"a"[..]), 5), (Some(&b"c"[..]), 4)]);
        assert!(top_k.query(b"a") && !top_k.query(b"b"));
        // Out of the heap, b keeps its buckets' count.
        assert_eq!(top_k.count(b"b"), 3);
        assert_eq!(top_k.count(b"c"), 4);
        assert_eq!(top_k.count(b"zzz"), 0);
        // And comes back at the heap's minimum, expelling c.
        assert_eq!(top_k.add(b"b", 1, &mut draws), Some(b"c".to_vec()));
    }

    #[test]
    fn a_colliding_bucket_decays_by_the_draws() {
        // One bucket: every item collides.
        let mut top_k = TopK::new(1, 1, 1, 1.0, NO_LIMIT).unwrap();
        let mut draws = never_decays();
        top_k.add(b"a", 3, &mut draws);
        // chance = RAND_MAX / RAND_MAX = 1, never below decay^count.
        assert_eq!(top_k.add(b"b", 3, &mut draws), None);
        assert_eq!(top_k.count(b"a"), 3);
        // Draws of 0 always decay: three units take a's 3 down to 0, and b takes the bucket
        // with the unit left when it reached 0 (the third), so its count is 1.
        let mut always = || 0;
        assert_eq!(top_k.add(b"b", 3, &mut always), None);
        assert_eq!(top_k.count(b"b"), 1);
        assert_eq!(top_k.count(b"a"), 0);
        // b's 1 did not reach a's 3 in the heap, so a stays listed, with its old count.
        assert_eq!(top_k.list()[0].item, Some(&b"a"[..]));
        let mut glibc = GlibcRandom::new(1);
        top_k.add(b"b", 1, &mut glibc);
        assert_eq!(top_k.count(b"b"), 2);
    }

    #[test]
    fn decay_chances_follow_redisbloom_s_table() {
        let top_k = TopK::new(1, 1, 1, 0.9, NO_LIMIT).unwrap();
        assert_eq!(top_k.decay_chance(0), 1.0);
        assert_eq!(top_k.decay_chance(2), 0.9f64.powf(2.0));
        // Past the table: pow(table[255], count / 255) · table[count % 255].
        let expected = 0.9f64.powf(255.0).powf(2.0) * 0.9f64.powf(10.0);
        assert_eq!(top_k.decay_chance(520), expected);
    }

    #[test]
    fn names_are_replied_as_c_strings() {
        let mut top_k = TopK::new(3, 100, 3, 0.9, NO_LIMIT).unwrap();
        let mut draws = never_decays();
        top_k.add(b"ab\0cd", 2, &mut draws);
        top_k.add(b"", 1, &mut draws);
        assert_eq!(top_k.list()[0].item, Some(&b"ab"[..]));
        assert_eq!(top_k.list()[1].item, Some(&b""[..]));
        assert!(top_k.query(b"ab\0cd") && !top_k.query(b"ab"));
        assert_eq!(top_k.add(b"x", 5, &mut draws), None);
        assert_eq!(top_k.add(b"y", 5, &mut draws), Some(Vec::new()));
        assert_eq!(top_k.add(b"z", 6, &mut draws), Some(b"ab".to_vec()));
    }

    #[test]
    fn the_saved_form_round_trips_and_is_checked() {
        let mut top_k = TopK::new(4, 50, 3, 0.9, NO_LIMIT).unwrap();
        let mut draws = GlibcRandom::new(7);
        for (i, item) in [&b"a"[..], b"", b"ccc", b"a", b"dd\0d"].iter().enumerate() {
            top_k.add(item, i as u32 + 1, &mut draws);
        }
        let shape = top_k.to_shape();
        assert_eq!(shape.buckets.len(), 50 * 3 * 8);
        assert_eq!(shape.heap.len(), 4 * 24);
        assert!(shape.items.contains(&b"dd\0".to_vec()));
        assert!(shape.items.contains(&b"\0".to_vec()));
        let fields = shape.to_fields();
        assert_eq!(fields.len(), 6 + 4);
        let copy = TopKShape::from_fields(fields).unwrap();
        assert_eq!(copy, shape);
        let loaded = TopK::from_shape(&copy, NO_LIMIT).unwrap();
        assert_eq!(loaded.to_shape().buckets, shape.buckets);
        // The empty name comes back as none: replied as a null, found as "".
        assert!(loaded.list().iter().any(|entry| entry.item.is_none()));
        assert!(loaded.query(b""));
        assert!(loaded.query(b"ccc"));
        // After a load the decay table is products, not powers.
        let products = (0..20).fold(1.0, |product, _| product * 0.9);
        assert_eq!(loaded.decay_chance(20), products);

        let refused = |shape: &TopKShape| TopK::from_shape(shape, NO_LIMIT).is_err();
        let mut bad = shape.clone();
        bad.decay = 0.0;
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.k = 0;
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.buckets.pop();
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.heap.extend_from_slice(&[0; 24]);
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.items[0] = b"no terminator".to_vec();
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.items[0] = b"in\0side\0".to_vec();
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.items.pop();
        assert!(refused(&bad));
        assert!(TopK::from_shape(&shape, 1000).is_err());
        let mut fields = shape.to_fields();
        fields.pop();
        assert!(TopKShape::from_fields(fields).is_err());
    }
}
