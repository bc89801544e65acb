//! RedisBloom's cuckoo filter, reproduced exactly so that the same commands leave the same bytes:
//! one-byte fingerprints, buckets of `bucket_size` slots, sub-filters added as it fills, each
//! `expansion` times larger than the one before. Everything observable (which slot a fingerprint
//! takes, which one is evicted, when a filter counts as full, the counts, the dump chunks) follows
//! RedisBloom 8.8, quirks included, because clients move dumps between the two servers and
//! replay must rebuild a filter byte for byte.

use super::arrays::{prefetch_at, PREFETCH_MIN_WORDS};
use super::murmur::murmur64a;
use super::FilterError;

/// The most buckets one sub-filter may have: RedisBloom keeps the count in 56 bits.
const MAX_BUCKETS: u64 = (1 << 56) - 1;
/// RedisBloom mixes the fingerprint into the alternate index with MurmurHash2's multiplier.
const ALT_MULTIPLIER: u64 = 0x5bd1_e995;
/// An empty slot; fingerprints are 1..=255 so that no item ever looks like one.
const EMPTY: u8 = 0;
/// The longest SCANDUMP chunk, as RedisBloom.
const MAX_CUCKOO_CHUNK: usize = 16 * 1024 * 1024;
/// The SCANDUMP header: items, buckets, deletes and filters as u64, then bucket size, max
/// iterations and expansion as u16, packed little-endian (RedisBloom's `CFHeader` on x86-64).
pub const CUCKOO_HEADER_LEN: usize = 38;
/// RedisBloom's CF.INFO `Size` counts its C structs: 40 bytes for the filter and 16 for each
/// sub-filter, besides the slots.
const REPORTED_FILTER_STRUCT: u64 = 40;
const REPORTED_SUB_FILTER_STRUCT: u64 = 16;

/// The range of each shape parameter, RedisBloom's `cf-*` limits; a header outside them is refused.
pub const BUCKET_SIZE_RANGE: (u16, u16) = (1, 255);
pub const MAX_ITERATIONS_RANGE: (u16, u16) = (1, 65535);
pub const EXPANSION_RANGE: (u16, u16) = (0, 32768);

/// What CF.RESERVE (or an implicit creation) asks for; ranges are the command's to check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CuckooOptions {
    pub capacity: u64,
    pub bucket_size: u16,
    pub max_iterations: u16,
    pub expansion: u16,
}

/// How an insertion ended, as RedisBloom reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insertion {
    Inserted,
    /// Only for a unique insertion: the fingerprint was already present.
    Exists,
    /// No slot could be freed, and the filter may not grow.
    NoSpace,
    /// Growing would pass the memory limit, or the allocator refused.
    NoMemory,
}

#[derive(Debug, Clone)]
struct SubFilter {
    buckets: u64,
    /// `buckets * bucket_size` fingerprints, bucket after bucket.
    slots: Vec<u8>,
}

#[derive(Debug, Clone)]
pub struct CuckooFilter {
    /// Buckets of the first sub-filter; later ones have `expansion^i` times as many.
    buckets: u64,
    items: u64,
    deletes: u64,
    bucket_size: u16,
    max_iterations: u16,
    expansion: u16,
    filters: Vec<SubFilter>,
}

/// Where an item may live: its fingerprint and the two hashes whose remainders pick its buckets.
#[derive(Clone, Copy)]
struct Lookup {
    fingerprint: u8,
    h1: u64,
    h2: u64,
}

impl Lookup {
    fn of(item: &[u8]) -> Lookup {
        let hash = murmur64a(item, 0);
        let fingerprint = (hash % 255 + 1) as u8;
        Lookup {
            fingerprint,
            h1: hash,
            h2: alternate(fingerprint, hash),
        }
    }
}

fn alternate(fingerprint: u8, index: u64) -> u64 {
    index ^ u64::from(fingerprint).wrapping_mul(ALT_MULTIPLIER)
}

/// RedisBloom's `getNextN2`: the next power of two, 0 staying 0.
fn next_power_of_two(n: u64) -> u64 {
    let mut n = n.wrapping_sub(1);
    for shift in [1, 2, 4, 8, 16, 32] {
        n |= n >> shift;
    }
    n.wrapping_add(1)
}

impl SubFilter {
    /// The first slot of the bucket `hash` picks. RedisBloom computes it in 32 bits; the
    /// truncation is kept so that enormous filters place items where RedisBloom does.
    fn bucket_start(&self, hash: u64, bucket_size: u16) -> usize {
        ((hash % self.buckets).wrapping_mul(u64::from(bucket_size)) as u32) as usize
    }

    fn bucket(&self, start: usize, bucket_size: u16) -> &[u8] {
        &self.slots[start..start + usize::from(bucket_size)]
    }

    fn bucket_mut(&mut self, start: usize, bucket_size: u16) -> &mut [u8] {
        &mut self.slots[start..start + usize::from(bucket_size)]
    }

    /// The two candidate buckets, first then alternate (possibly the same one).
    fn candidates(&self, lookup: &Lookup, bucket_size: u16) -> [usize; 2] {
        [
            self.bucket_start(lookup.h1, bucket_size),
            self.bucket_start(lookup.h2, bucket_size),
        ]
    }

    fn contains(&self, lookup: &Lookup, bucket_size: u16) -> bool {
        self.candidates(lookup, bucket_size).iter().any(|&start| {
            self.bucket(start, bucket_size)
                .contains(&lookup.fingerprint)
        })
    }

    /// Copies in both candidate buckets, counted twice when they are the same bucket, as
    /// RedisBloom counts them.
    fn count(&self, lookup: &Lookup, bucket_size: u16) -> u64 {
        self.candidates(lookup, bucket_size)
            .iter()
            .map(|&start| {
                self.bucket(start, bucket_size)
                    .iter()
                    .filter(|&&slot| slot == lookup.fingerprint)
                    .count() as u64
            })
            .sum()
    }

    /// Clears the first copy, looking in the first bucket before the alternate.
    fn delete(&mut self, lookup: &Lookup, bucket_size: u16) -> bool {
        for start in self.candidates(lookup, bucket_size) {
            let bucket = self.bucket_mut(start, bucket_size);
            if let Some(slot) = bucket.iter_mut().find(|slot| **slot == lookup.fingerprint) {
                *slot = EMPTY;
                return true;
            }
        }
        false
    }

    /// The first empty slot of the first bucket, else of the alternate one.
    fn free_slot(&self, lookup: &Lookup, bucket_size: u16) -> Option<usize> {
        self.candidates(lookup, bucket_size)
            .into_iter()
            .find_map(|start| free_in(self.bucket(start, bucket_size)).map(|slot| start + slot))
    }
}

fn free_in(bucket: &[u8]) -> Option<usize> {
    bucket.iter().position(|&slot| slot == EMPTY)
}

impl CuckooFilter {
    /// A filter with one empty sub-filter of `capacity / bucket_size` buckets rounded up to a
    /// power of two; refused before allocating if its slots would pass `limit_bytes`.
    pub fn new(options: CuckooOptions, limit_bytes: u64) -> Result<Self, FilterError> {
        let bucket_size = options.bucket_size.max(1);
        let buckets = next_power_of_two(options.capacity / u64::from(bucket_size)).max(1);
        if buckets > MAX_BUCKETS {
            return Err(FilterError::CannotScale);
        }
        let bytes = buckets * u64::from(bucket_size);
        if bytes > limit_bytes {
            return Err(FilterError::TooLarge {
                bytes,
                limit: limit_bytes,
            });
        }
        let mut filter = CuckooFilter {
            buckets,
            items: 0,
            deletes: 0,
            bucket_size,
            max_iterations: options.max_iterations,
            // RedisBloom rounds the factor up to a power of two, so every sub-filter has a
            // power-of-two number of buckets and the alternate index stays an involution.
            expansion: next_power_of_two(u64::from(options.expansion)) as u16,
            filters: Vec::new(),
        };
        filter.filters.push(allocate(buckets, bucket_size)?);
        Ok(filter)
    }

    pub fn items(&self) -> u64 {
        self.items
    }

    pub fn deletes(&self) -> u64 {
        self.deletes
    }

    pub fn buckets(&self) -> u64 {
        self.buckets
    }

    pub fn filter_count(&self) -> usize {
        self.filters.len()
    }

    pub fn bucket_size(&self) -> u16 {
        self.bucket_size
    }

    pub fn max_iterations(&self) -> u16 {
        self.max_iterations
    }

    pub fn expansion(&self) -> u16 {
        self.expansion
    }

    /// CF.INFO's `Size`: RedisBloom's count of its own structures, which clients compare.
    pub fn reported_size(&self) -> u64 {
        REPORTED_FILTER_STRUCT
            + REPORTED_SUB_FILTER_STRUCT * self.filters.len() as u64
            + self.payload_bytes()
    }

    /// The memory the filter really holds, for MEMORY USAGE and maxmemory.
    pub fn memory_bytes(&self) -> u64 {
        let own = std::mem::size_of::<Self>() as u64;
        let subs = (self.filters.capacity() * std::mem::size_of::<SubFilter>()) as u64;
        own + subs
            + self
                .filters
                .iter()
                .map(|sub| sub.slots.capacity() as u64)
                .sum::<u64>()
    }

    /// The bytes of all slots, sub-filter after sub-filter.
    pub fn payload_bytes(&self) -> u64 {
        self.filters.iter().map(|sub| sub.slots.len() as u64).sum()
    }

    pub fn contains(&self, item: &[u8]) -> bool {
        let lookup = Lookup::of(item);
        self.contains_lookup(&lookup)
    }

    /// Starts loading both candidate buckets of `item` in every sub-filter, for a caller about to
    /// add or look it up (a pipeline's look-ahead), so that the misses of several items overlap.
    /// A filter small enough to stay in the caches skips it.
    pub fn prefetch(&self, item: &[u8]) {
        if self.payload_bytes() < PREFETCH_MIN_WORDS as u64 * 8 {
            return;
        }
        let lookup = Lookup::of(item);
        for sub in &self.filters {
            for start in sub.candidates(&lookup, self.bucket_size) {
                prefetch_at(&sub.slots, start);
            }
        }
    }

    fn contains_lookup(&self, lookup: &Lookup) -> bool {
        self.filters
            .iter()
            .any(|sub| sub.contains(lookup, self.bucket_size))
    }

    pub fn count(&self, item: &[u8]) -> u64 {
        let lookup = Lookup::of(item);
        self.filters
            .iter()
            .map(|sub| sub.count(&lookup, self.bucket_size))
            .sum()
    }

    /// Adds one copy of `item`; growing would pass `limit_bytes` is `NoMemory`.
    pub fn insert(&mut self, item: &[u8], limit_bytes: u64) -> Insertion {
        self.insert_lookup(&Lookup::of(item), limit_bytes)
    }

    /// Adds `item` unless its fingerprint is already in one of its buckets.
    pub fn insert_unique(&mut self, item: &[u8], limit_bytes: u64) -> Insertion {
        let lookup = Lookup::of(item);
        if self.contains_lookup(&lookup) {
            return Insertion::Exists;
        }
        self.insert_lookup(&lookup, limit_bytes)
    }

    /// A free slot in any sub-filter, newest first; else evictions in the newest; else a new
    /// sub-filter, which always has room.
    fn insert_lookup(&mut self, lookup: &Lookup, limit_bytes: u64) -> Insertion {
        loop {
            let bucket_size = self.bucket_size;
            for sub in self.filters.iter_mut().rev() {
                if let Some(slot) = sub.free_slot(lookup, bucket_size) {
                    sub.slots[slot] = lookup.fingerprint;
                    self.items = self.items.wrapping_add(1);
                    return Insertion::Inserted;
                }
            }
            if self.evicting_insert(lookup) {
                self.items = self.items.wrapping_add(1);
                return Insertion::Inserted;
            }
            if self.expansion == 0 {
                return Insertion::NoSpace;
            }
            if self.grow(limit_bytes).is_err() {
                return Insertion::NoMemory;
            }
        }
    }

    /// RedisBloom's kick-out: starting at the item's first bucket, swap the carried fingerprint
    /// with the slot at `victim` (which advances by one each round), carry the evicted one to its
    /// alternate bucket, and stop at the first free slot there. After `max_iterations` rounds
    /// every swap is undone in reverse, leaving the filter exactly as it was.
    fn evicting_insert(&mut self, lookup: &Lookup) -> bool {
        let bucket_size = u64::from(self.bucket_size);
        let rounds = self.max_iterations;
        let Some(sub) = self.filters.last_mut() else {
            return false;
        };
        let buckets = sub.buckets;
        let mut carried = lookup.fingerprint;
        let mut victim: u64 = 0;
        let mut index = lookup.h1 % buckets;
        for _ in 0..rounds {
            let start = (index * bucket_size) as usize;
            std::mem::swap(&mut sub.slots[start + victim as usize], &mut carried);
            index = alternate(carried, index) % buckets;
            let start = (index * bucket_size) as usize;
            let bucket = &mut sub.slots[start..start + bucket_size as usize];
            if let Some(slot) = free_in(bucket) {
                bucket[slot] = carried;
                return true;
            }
            victim = (victim + 1) % bucket_size;
        }
        for _ in 0..rounds {
            victim = (victim + bucket_size - 1) % bucket_size;
            index = alternate(carried, index) % buckets;
            let start = (index * bucket_size) as usize;
            std::mem::swap(&mut sub.slots[start + victim as usize], &mut carried);
        }
        false
    }

    /// Adds a sub-filter `expansion^n` times the first one's size, n being how many there are.
    fn grow(&mut self, limit_bytes: u64) -> Result<(), FilterError> {
        if self.filters.len() >= usize::from(u16::MAX) {
            return Err(FilterError::CannotScale);
        }
        let buckets = sub_filter_buckets(self.buckets, self.expansion, self.filters.len())
            .ok_or(FilterError::CannotScale)?;
        let bytes = buckets * u64::from(self.bucket_size);
        let total = self.payload_bytes().saturating_add(bytes);
        if total > limit_bytes {
            return Err(FilterError::TooLarge {
                bytes: total,
                limit: limit_bytes,
            });
        }
        let sub = allocate(buckets, self.bucket_size)?;
        self.filters
            .try_reserve(1)
            .map_err(|_| FilterError::OutOfMemory)?;
        self.filters.push(sub);
        Ok(())
    }

    /// Removes one copy, from the newest sub-filter that has one. A filter of several
    /// sub-filters compacts itself once deletions pass a tenth of its items, as RedisBloom's.
    pub fn delete(&mut self, item: &[u8]) -> bool {
        let lookup = Lookup::of(item);
        let bucket_size = self.bucket_size;
        let Some(sub) = self
            .filters
            .iter_mut()
            .rev()
            .find(|sub| sub.contains(&lookup, bucket_size))
        else {
            return false;
        };
        sub.delete(&lookup, bucket_size);
        self.items = self.items.wrapping_sub(1);
        self.deletes = self.deletes.wrapping_add(1);
        if self.filters.len() > 1 && self.deletes as f64 > self.items as f64 * 0.10 {
            self.compact_from_newest(false);
        }
        true
    }

    /// CF.COMPACT: moves fingerprints into older sub-filters where they fit, dropping newest
    /// sub-filters left empty.
    pub fn compact(&mut self) {
        self.compact_from_newest(true);
    }

    /// From the newest sub-filter down to the second; `keep_going` carries on past one that
    /// could not be emptied (RedisBloom's CF.COMPACT does, its automatic compaction does not).
    fn compact_from_newest(&mut self, keep_going: bool) {
        for index in (1..self.filters.len()).rev() {
            if !self.compact_one(index) && !keep_going {
                break;
            }
        }
        self.deletes = 0;
    }

    /// Moves each fingerprint of sub-filter `index` into the first older sub-filter with a free
    /// slot in its buckets; true if every one moved. It is then dropped if it is the newest.
    fn compact_one(&mut self, index: usize) -> bool {
        let bucket_size = self.bucket_size;
        let (older, rest) = self.filters.split_at_mut(index);
        let current = &mut rest[0];
        let mut all_moved = true;
        for bucket in 0..current.buckets {
            for slot in 0..usize::from(bucket_size) {
                let at = bucket as usize * usize::from(bucket_size) + slot;
                let fingerprint = current.slots[at];
                if fingerprint == EMPTY {
                    continue;
                }
                // Older sub-filters have as many buckets or fewer, a power of two, so the
                // bucket's own index stands for the item's hash.
                let lookup = Lookup {
                    fingerprint,
                    h1: bucket,
                    h2: alternate(fingerprint, bucket),
                };
                let home = older.iter_mut().find_map(|sub| {
                    sub.free_slot(&lookup, bucket_size)
                        .map(|free| &mut sub.slots[free])
                });
                match home {
                    Some(free) => {
                        *free = fingerprint;
                        current.slots[at] = EMPTY;
                    }
                    None => all_moved = false,
                }
            }
        }
        if all_moved && index == self.filters.len() - 1 {
            self.filters.pop();
        }
        all_moved
    }

    /// The SCANDUMP header.
    pub fn header(&self) -> [u8; CUCKOO_HEADER_LEN] {
        let mut out = [0u8; CUCKOO_HEADER_LEN];
        out[0..8].copy_from_slice(&self.items.to_le_bytes());
        out[8..16].copy_from_slice(&self.buckets.to_le_bytes());
        out[16..24].copy_from_slice(&self.deletes.to_le_bytes());
        out[24..32].copy_from_slice(&(self.filters.len() as u64).to_le_bytes());
        out[32..34].copy_from_slice(&self.bucket_size.to_le_bytes());
        out[34..36].copy_from_slice(&self.max_iterations.to_le_bytes());
        out[36..38].copy_from_slice(&self.expansion.to_le_bytes());
        out
    }

    /// An empty filter of the shape a SCANDUMP header describes, its slots zeroed for the
    /// chunks to fill. The header is checked as RedisBloom checks it, and every sub-filter's
    /// size is summed and held to `limit_bytes` before anything is allocated.
    pub fn from_header(data: &[u8], limit_bytes: u64) -> Result<Self, FilterError> {
        let data: &[u8; CUCKOO_HEADER_LEN] = data.try_into().map_err(|_| FilterError::BadDump)?;
        let u64_at = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
        let u16_at = |at: usize| u16::from_le_bytes([data[at], data[at + 1]]);
        let items = u64_at(0);
        let buckets = u64_at(8);
        let deletes = u64_at(16);
        // RedisBloom keeps the sub-filter count in 16 bits and truncates the header's.
        let filter_count = u64_at(24) as u16;
        let bucket_size = u16_at(32);
        let max_iterations = u16_at(34);
        let expansion = u16_at(36);
        let within = |value: u16, (min, max): (u16, u16)| (min..=max).contains(&value);
        let valid = within(bucket_size, BUCKET_SIZE_RANGE)
            && filter_count >= 1
            && within(max_iterations, MAX_ITERATIONS_RANGE)
            && within(expansion, EXPANSION_RANGE)
            && !(expansion == 0 && filter_count > 1)
            && buckets != 0
            && buckets <= MAX_BUCKETS
            && buckets.is_power_of_two();
        if !valid {
            return Err(FilterError::BadDump);
        }
        let mut sizes = Vec::new();
        sizes
            .try_reserve_exact(usize::from(filter_count))
            .map_err(|_| FilterError::OutOfMemory)?;
        let mut total: u64 = 0;
        for index in 0..usize::from(filter_count) {
            let sub_buckets =
                sub_filter_buckets(buckets, expansion, index).ok_or(FilterError::BadDump)?;
            total = total.saturating_add(sub_buckets * u64::from(bucket_size));
            if total > limit_bytes {
                return Err(FilterError::TooLarge {
                    bytes: total,
                    limit: limit_bytes,
                });
            }
            sizes.push(sub_buckets);
        }
        let mut filters = Vec::new();
        filters
            .try_reserve_exact(sizes.len())
            .map_err(|_| FilterError::OutOfMemory)?;
        for sub_buckets in sizes {
            filters.push(allocate(sub_buckets, bucket_size)?);
        }
        Ok(CuckooFilter {
            buckets,
            items,
            deletes,
            bucket_size,
            max_iterations,
            expansion,
            filters,
        })
    }

    /// SCANDUMP from `iterator` (1 or more): the next iterator and the chunk, or None past the
    /// end. As RedisBloom, a sub-filter of at most 16 MiB is sent whole whatever offset inside
    /// it the iterator names; a larger one is sent in 16 MiB pieces.
    pub fn dump_chunk(&self, iterator: i64) -> Option<(i64, &[u8])> {
        if iterator < 1 {
            return None;
        }
        let mut offset = iterator - 1;
        for sub in &self.filters {
            let size = sub.slots.len() as i64;
            if offset >= size {
                offset -= size;
                continue;
            }
            let max = MAX_CUCKOO_CHUNK as i64;
            if size <= max {
                return Some((iterator + size, &sub.slots));
            }
            let len = (size - offset).min(max);
            let start = offset as usize;
            return Some((iterator + len, &sub.slots[start..start + len as usize]));
        }
        None
    }

    /// LOADCHUNK of a chunk SCANDUMP gave with `iterator`, which is where the chunk ends. The
    /// offset is found as RedisBloom finds it: an offset past every sub-filter is reduced by
    /// all their sizes and lands in the last one if it fits there.
    pub fn load_chunk(&mut self, iterator: i64, data: &[u8]) -> Result<(), FilterError> {
        let len = data.len() as i64;
        if data.is_empty() || iterator <= 0 || iterator - 1 < len {
            return Err(FilterError::BadOffset);
        }
        let mut offset = iterator - len - 1;
        let mut target = None;
        for (index, sub) in self.filters.iter().enumerate() {
            target = Some(index);
            let size = sub.slots.len() as i64;
            if offset < size {
                break;
            }
            offset -= size;
        }
        let sub = &mut self.filters[target.ok_or(FilterError::BadOffset)?];
        let start = usize::try_from(offset).map_err(|_| FilterError::BadOffset)?;
        let end = start
            .checked_add(data.len())
            .ok_or(FilterError::BadOffset)?;
        sub.slots
            .get_mut(start..end)
            .ok_or(FilterError::BadOffset)?
            .copy_from_slice(data);
        Ok(())
    }

    /// Each sub-filter's bucket count and slots, in order: RedisBloom's RDB encoding lists them
    /// so.
    pub fn sub_filters(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.filters
            .iter()
            .map(|sub| (sub.buckets, sub.slots.as_slice()))
    }

    /// Appends payload bytes `offset..offset + len` (the slots end to end); false if out of range.
    pub fn read_payload(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> bool {
        let mut position = 0u64;
        let end = offset.saturating_add(len);
        if end > self.payload_bytes() {
            return false;
        }
        for sub in &self.filters {
            let size = sub.slots.len() as u64;
            let from = offset.max(position);
            let to = end.min(position + size);
            if from < to {
                out.extend_from_slice(
                    &sub.slots[(from - position) as usize..(to - position) as usize],
                );
            }
            position += size;
        }
        true
    }

    /// Overwrites the whole payload in place: `fill` is handed each sub-filter's slots in turn.
    pub fn fill_payload<E>(
        &mut self,
        fill: &mut impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.filters
            .iter_mut()
            .try_for_each(|sub| fill(&mut sub.slots))
    }

    /// Writes payload bytes starting at `offset`, across sub-filters as needed.
    pub fn write_payload(&mut self, offset: u64, data: &[u8]) -> Result<(), FilterError> {
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or(FilterError::BadOffset)?;
        if end > self.payload_bytes() {
            return Err(FilterError::BadOffset);
        }
        let mut position = 0u64;
        for sub in &mut self.filters {
            let size = sub.slots.len() as u64;
            let from = offset.max(position);
            let to = end.min(position + size);
            if from < to {
                let source = &data[(from - offset) as usize..(to - offset) as usize];
                sub.slots[(from - position) as usize..(to - position) as usize]
                    .copy_from_slice(source);
            }
            position += size;
        }
        Ok(())
    }
}

/// Buckets of sub-filter `index`: the first's times `expansion^index`, None past 56 bits.
fn sub_filter_buckets(first: u64, expansion: u16, index: usize) -> Option<u64> {
    let growth = u64::from(expansion).checked_pow(u32::try_from(index).ok()?)?;
    first
        .checked_mul(growth)
        .filter(|&buckets| buckets != 0 && buckets <= MAX_BUCKETS)
}

fn allocate(buckets: u64, bucket_size: u16) -> Result<SubFilter, FilterError> {
    let len = buckets
        .checked_mul(u64::from(bucket_size))
        .and_then(|len| usize::try_from(len).ok())
        .ok_or(FilterError::OutOfMemory)?;
    let mut slots = Vec::new();
    slots
        .try_reserve_exact(len)
        .map_err(|_| FilterError::OutOfMemory)?;
    slots.resize(len, EMPTY);
    Ok(SubFilter { buckets, slots })
}

#[cfg(test)]
mod tests;
