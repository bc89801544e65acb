//! The time-windowed Bloom filter (TBF.*): "have I seen this item in the last `window` ms?".
//! A ring of `n` slices, each a Bloom filter link of one shape; time is cut into slices of
//! `s = ceil(window / n)` ms counted from the Unix epoch, so slice times are absolute: slice `e`
//! covers `[e·s, (e+1)·s)` and lives in ring position `e mod n`. An add goes to the slice of
//! its time; a look-up at time `t`, in slice `E = floor(t / s)`, checks the slices `E − n + 1 ..= E`.
//!
//! # Guarantees
//!
//! - **No false negative within `window − window/n`.** An item added at `t0` is in slice
//!   `floor(t0/s)`, which a look-up at `t` checks while `floor(t/s) − floor(t0/s) ≤ n − 1`, which
//!   holds whenever `t − t0 < (n − 1)·s`, and `(n − 1)·s ≥ window − window/n`. (Items are also
//!   refreshed: adding one again puts it in the current slice.)
//! - **Forgotten after `n·s`** (`window` rounded up to a whole number of slices): a look-up at
//!   `t ≥ t0 + n·s` no longer checks the item's slice, and that slice is cleared.
//! - **False positives at most the requested rate `p` over the whole window**, as long as the
//!   live slices together hold at most `capacity` items (adds new to their slice). Each slice is
//!   a filter sized for `capacity` items at `p`, and a look-up passes if any live slice passes.
//!   The chance that a slice holding `x` items passes is `f(x) = (1 − e^(−kx/m))^k`, which is
//!   convex on `[0, capacity]` (its inflection lies at a fill of `(k − 1)/k`, beyond the fill at
//!   capacity for every shape the sizing gives, `k ≥ 2` at rates up to the 0.25 cap) and 0 at 0.
//!   A convex function that is 0 at 0 is superadditive, so `Σ f(x_i) ≤ f(Σ x_i) ≤ f(capacity) = p`:
//!   by the union bound the window's rate is at most `p` however the items fall into slices,
//!   a burst into one slice included. (Sizing each slice for `p/n` instead would cost more bits
//!   for the same guarantee; sizing each for `capacity/n` would break it under a burst.) An add
//!   that would take the live slices past `capacity` is refused (`FilterError::Full`), as a
//!   non-scaling filter's is. Memory is `n` times that of `BF.RESERVE key p capacity NONSCALING`.
//!
//! # Time
//!
//! Every add takes the time it is given: the command's, which on replay from the append-only
//! file or on a replica is the time logged with the write, so replay on another day puts every
//! item in the slice it went to live. The filter never goes back in time: an add or look-up
//! at a time before the newest slice it holds acts at that slice (a clock stepped back does not
//! reopen old slices or drop new ones).
//!
//! Clearing never pauses: a slice that has aged out is replaced by a fresh zeroed array, which
//! the allocator hands out without touching it (`arrays::zeroed_words`), and the old array is
//! given back to the caller (`Retired`) to be freed once the filter's lock is released. Look-ups
//! ignore aged-out slices without changing them; adds clear them, and so does the expiry task
//! (`expire`), so a filter nobody writes to gives its memory back too.

use super::bloom::{Bits, BitsKind};
use super::chain::{allocate_links, MAX_ERROR_RATE};
use super::dump::{self, DumpStep};
use super::item_hash::{HashScheme, ItemHash};
use super::link::{Link, LinkArray};
use super::sizing::Layout;
use super::FilterError;
use xxhash_rust::xxh3::xxh3_64;

/// The most slices a filter may have: a look-up probes every live slice.
pub const MAX_SLICES: u32 = 64;
/// A slice that holds nothing (never used, or cleared).
const UNUSED: u64 = u64::MAX;

/// How a new windowed filter is shaped.
#[derive(Debug, Clone, Copy)]
pub struct WindowOptions {
    pub error_rate: f64,
    /// Items per window.
    pub capacity: u64,
    pub window_ms: u64,
    pub slices: u32,
    /// Slices hash with sieved's own xxh3 in either layout: no other server reads them.
    pub layout: Layout,
}

#[derive(Debug, Clone)]
struct Slice {
    /// The slice of time it holds, `UNUSED` if none.
    epoch: u64,
    link: Link<Bits>,
}

/// Arrays of slices that aged out: dropping this frees them, best done outside any lock.
#[derive(Default)]
pub struct Retired(Vec<Link<Bits>>);

impl Retired {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Debug, Clone)]
pub struct WindowedFilter {
    kind: BitsKind,
    capacity: u64,
    error_rate: f64,
    window_ms: u64,
    slice_ms: u64,
    slices: Vec<Slice>,
}

impl WindowedFilter {
    /// A filter with every slice empty, refused before anything is allocated if its `slices`
    /// arrays together would be over `limit_bytes`.
    pub fn new(options: WindowOptions, limit_bytes: u64) -> Result<WindowedFilter, FilterError> {
        let kind = BitsKind::new(options.layout, HashScheme::Xxh3);
        if options.slices == 0
            || options.slices > MAX_SLICES
            || options.window_ms < u64::from(options.slices)
            || !(options.error_rate > 0.0 && options.error_rate <= MAX_ERROR_RATE)
        {
            return Err(FilterError::BadDump);
        }
        let size = Bits::size_for(kind, options.capacity, options.error_rate)
            .ok_or(FilterError::CannotScale)?;
        let per_slice = Bits::bytes_for(kind, size).ok_or(FilterError::CannotScale)?;
        let total = per_slice.saturating_mul(u64::from(options.slices));
        let shapes = (0..options.slices).map(|_| (size, options.capacity, options.error_rate));
        let slices = allocate_links(kind, shapes, total, limit_bytes, |link| Slice {
            epoch: UNUSED,
            link,
        })?;
        Ok(WindowedFilter {
            kind,
            capacity: options.capacity,
            error_rate: options.error_rate,
            window_ms: options.window_ms,
            slice_ms: options.window_ms.div_ceil(u64::from(options.slices)),
            slices,
        })
    }

    fn n(&self) -> u64 {
        self.slices.len() as u64
    }

    /// The slice of time `now` falls in, never before the newest slice held.
    fn epoch_at(&self, now: u64) -> u64 {
        let newest = self
            .slices
            .iter()
            .map(|slice| slice.epoch)
            .filter(|&epoch| epoch != UNUSED)
            .max()
            .unwrap_or(0);
        (now / self.slice_ms).max(newest)
    }

    /// Whether a slice holding `epoch` is inside the window of slice `current`.
    fn is_live(&self, epoch: u64, current: u64) -> bool {
        epoch != UNUSED && epoch <= current && current - epoch < self.n()
    }

    fn live_slices(&self, current: u64) -> impl Iterator<Item = &Slice> {
        self.slices
            .iter()
            .filter(move |slice| self.is_live(slice.epoch, current))
    }

    /// Replaces slice `index` with an empty one holding `epoch`; the old array goes to
    /// `retired`. Should the allocator refuse a fresh array, the old one is zeroed in place. A
    /// slice that holds no time and no item was cleared already (or never used) and is kept.
    fn reset(&mut self, index: usize, epoch: u64, retired: &mut Retired) {
        let slice = &mut self.slices[index];
        let cleared = slice.epoch == UNUSED && slice.link.items() == 0;
        slice.epoch = epoch;
        if cleared {
            return;
        }
        match Link::with_size(
            self.kind,
            slice.link.size(),
            self.capacity,
            self.error_rate,
            u64::MAX,
        ) {
            Ok(fresh) => retired.0.push(std::mem::replace(&mut slice.link, fresh)),
            Err(_) => {
                let zeros = vec![0u8; slice.link.bytes() as usize];
                slice.link.write_bytes(0, &zeros);
                slice.link.set_items(0);
            }
        }
    }

    /// Clears every slice that has aged out by `now`.
    pub fn expire(&mut self, now: u64, retired: &mut Retired) {
        let current = self.epoch_at(now);
        for index in 0..self.slices.len() {
            let epoch = self.slices[index].epoch;
            if epoch != UNUSED && !self.is_live(epoch, current) {
                self.reset(index, UNUSED, retired);
            }
        }
    }

    /// Whether any slice has aged out by `now` and still holds its array's bits.
    pub fn has_expired(&self, now: u64) -> bool {
        let current = self.epoch_at(now);
        self.slices
            .iter()
            .any(|slice| slice.epoch != UNUSED && !self.is_live(slice.epoch, current))
    }

    fn hash(&self, item: &[u8]) -> ItemHash {
        Bits::hash(self.kind, item)
    }

    /// Adds an item at `now` to the slice of that time, clearing what has aged out first. True
    /// when the item was not (seemingly) in the window before. Refused with `Full` when it is
    /// new to the current slice and the live slices already hold `capacity` items.
    pub fn add(
        &mut self,
        item: &[u8],
        now: u64,
        retired: &mut Retired,
    ) -> Result<bool, FilterError> {
        self.expire(now, retired);
        let current = self.epoch_at(now);
        let index = (current % self.n()) as usize;
        if self.slices[index].epoch != current {
            self.reset(index, current, retired);
        }
        let hash = self.hash(item);
        for slice in self.live_slices(current) {
            slice.link.prefetch_first(hash);
        }
        if self.slices[index].link.contains(hash) {
            return Ok(false);
        }
        let seen = self
            .live_slices(current)
            .any(|slice| slice.link.contains(hash));
        if self.items_at_epoch(current) >= self.capacity {
            return Err(FilterError::Full);
        }
        let link = &mut self.slices[index].link;
        link.insert(hash);
        link.set_items(link.items().saturating_add(1));
        Ok(!seen)
    }

    /// Whether the item was added inside the window as it stands at `now`.
    pub fn contains(&self, item: &[u8], now: u64) -> bool {
        let current = self.epoch_at(now);
        let hash = self.hash(item);
        for slice in self.live_slices(current) {
            slice.link.prefetch_first(hash);
        }
        // Newest first: the likeliest to hold a recent item.
        let newest = (current % self.n()) as usize;
        (0..self.slices.len())
            .map(|back| &self.slices[(newest + self.slices.len() - back) % self.slices.len()])
            .filter(|slice| self.is_live(slice.epoch, current))
            .any(|slice| slice.link.contains(hash))
    }

    fn items_at_epoch(&self, current: u64) -> u64 {
        self.live_slices(current)
            .fold(0u64, |sum, slice| sum.saturating_add(slice.link.items()))
    }

    /// Items held by the slices inside the window at `now`: adds new to their slice, so an item
    /// added in two slices counts twice.
    pub fn items(&self, now: u64) -> u64 {
        self.items_at_epoch(self.epoch_at(now))
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn error_rate(&self) -> f64 {
        self.error_rate
    }

    pub fn window_ms(&self) -> u64 {
        self.window_ms
    }

    pub fn slice_ms(&self) -> u64 {
        self.slice_ms
    }

    pub fn slice_count(&self) -> usize {
        self.slices.len()
    }

    pub fn layout(&self) -> Layout {
        self.kind.layout()
    }

    /// Bits and hashes of each slice.
    pub fn slice_shape(&self) -> (u64, u32) {
        let link = &self.slices[0].link;
        (link.bits(), link.hashes())
    }

    /// Bytes of the slices' arrays together.
    pub fn payload_bytes(&self) -> u64 {
        self.slices.iter().map(|slice| slice.link.bytes()).sum()
    }

    /// What the filter occupies: its arrays plus the structures that hold them.
    pub fn memory_bytes(&self) -> u64 {
        let fixed = std::mem::size_of::<Self>() as u64;
        let per_slice = std::mem::size_of::<Slice>() as u64;
        let arrays: u64 = self
            .slices
            .iter()
            .map(|slice| slice.link.allocated_bytes())
            .sum();
        fixed + self.slices.capacity() as u64 * per_slice + arrays
    }
}

// # Dump format
//
// TBF.SCANDUMP / TBF.LOADCHUNK and snapshots (value kind 9). All integers little-endian.
//
// ```text
// offset  size  field
// 0       8     magic "sievedTW"
// 8       2     format version, 1
// 10      2     flags: bit 1 = blocked layout; other bits 0
// 12      4     slices n, 1 to 64
// 16      8     capacity per window
// 24      8     error rate, f64, in (0, 0.25]
// 32      8     window, milliseconds, at least n
// 40      4     hashes per slice
// 44      8     bits per slice
// 52      16·n  per slice, ring position 0 first: the slice of time it holds (u64::MAX: none),
//               which must be its position modulo n; its items
// 52+16n  8     xxh3-64 of every byte before it
// ```
//
// The hashes and bits must be what the layout gives for the capacity and error rate. After the
// header come the slices' arrays, ring position 0 first, each as a plain link's (`dump.rs`);
// iterators and chunks follow BF.SCANDUMP's rules, one slice standing for one link.

const MAGIC: &[u8; 8] = b"sievedTW";
const VERSION: u16 = 1;
const FLAG_BLOCKED: u16 = 2;
const FIXED_LEN: usize = 52;
const SLICE_LEN: usize = 16;
const CHECKSUM_LEN: usize = 8;

impl WindowedFilter {
    pub fn dump_header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED_LEN + SLICE_LEN * self.slices.len() + CHECKSUM_LEN);
        let (bits, hashes) = self.slice_shape();
        let flags = match self.kind.layout() {
            Layout::Classic => 0,
            Layout::Blocked => FLAG_BLOCKED,
        };
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&(self.slices.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.capacity.to_le_bytes());
        out.extend_from_slice(&self.error_rate.to_le_bytes());
        out.extend_from_slice(&self.window_ms.to_le_bytes());
        out.extend_from_slice(&hashes.to_le_bytes());
        out.extend_from_slice(&bits.to_le_bytes());
        for slice in &self.slices {
            out.extend_from_slice(&slice.epoch.to_le_bytes());
            out.extend_from_slice(&slice.link.items().to_le_bytes());
        }
        let checksum = xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    /// An empty filter from a header, refusing any inconsistency, and anything over
    /// `limit_bytes`, before allocating.
    pub fn from_header(data: &[u8], limit_bytes: u64) -> Result<WindowedFilter, FilterError> {
        let body_len = data
            .len()
            .checked_sub(CHECKSUM_LEN)
            .filter(|&len| len >= FIXED_LEN)
            .ok_or(FilterError::BadDump)?;
        let (body, checksum) = data.split_at(body_len);
        if xxh3_64(body).to_le_bytes() != checksum || &body[..8] != MAGIC {
            return Err(FilterError::BadDump);
        }
        let u16_at = |at: usize| u16::from_le_bytes([body[at], body[at + 1]]);
        let u32_at =
            |at: usize| u32::from_le_bytes(body[at..at + 4].try_into().expect("four bytes"));
        let u64_at =
            |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().expect("eight bytes"));
        let (version, flags, count) = (u16_at(8), u16_at(10), u32_at(12));
        if version != VERSION
            || flags & !FLAG_BLOCKED != 0
            || !(1..=MAX_SLICES).contains(&count)
            || body.len() != FIXED_LEN + SLICE_LEN * count as usize
        {
            return Err(FilterError::BadDump);
        }
        let layout = match flags {
            FLAG_BLOCKED => Layout::Blocked,
            _ => Layout::Classic,
        };
        let options = WindowOptions {
            capacity: u64_at(16),
            error_rate: f64::from_bits(u64_at(24)),
            window_ms: u64_at(32),
            slices: count,
            layout,
        };
        if options.capacity == 0 {
            return Err(FilterError::BadDump);
        }
        // The shape is checked before `new` allocates, which also checks the limit first.
        let kind = BitsKind::new(layout, HashScheme::Xxh3);
        let size = Bits::size_for(kind, options.capacity, options.error_rate)
            .ok_or(FilterError::BadDump)?;
        if size.hashes != u32_at(40) || size.bits != u64_at(44) {
            return Err(FilterError::BadDump);
        }
        let mut slices = Vec::with_capacity(count as usize);
        for index in 0..count as usize {
            let at = FIXED_LEN + SLICE_LEN * index;
            let (epoch, items) = (u64_at(at), u64_at(at + 8));
            if epoch != UNUSED && epoch % u64::from(count) != index as u64 {
                return Err(FilterError::BadDump);
            }
            slices.push((epoch, items));
        }
        let mut filter = match WindowedFilter::new(options, limit_bytes) {
            Err(FilterError::CannotScale) => return Err(FilterError::BadDump),
            other => other?,
        };
        for (slice, (epoch, items)) in filter.slices.iter_mut().zip(slices) {
            slice.epoch = epoch;
            slice.link.set_items(items);
        }
        Ok(filter)
    }

    /// The SCANDUMP step for `iterator`, as `Chain::dump_chunk`.
    pub fn dump_chunk(&self, iterator: i64) -> DumpStep {
        let links = self.slices.iter().map(|slice| &slice.link);
        dump::dump_step(links, iterator, || self.dump_header())
    }

    /// Writes a chunk that SCANDUMP returned with `iterator`, refusing one that would not fit
    /// wholly inside one slice.
    pub fn load_chunk(&mut self, iterator: i64, data: &[u8]) -> Result<(), FilterError> {
        let links = self.slices.iter_mut().map(|slice| &mut slice.link);
        dump::load_chunk(links, iterator, data)
    }

    /// Payload bytes `offset..offset + len`, the slices' arrays end to end (a snapshot's
    /// payload); false, with nothing appended, if the range is not inside the filter.
    pub fn read_payload(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> bool {
        let links = self.slices.iter().map(|slice| &slice.link);
        dump::read_payload(links, offset, len, out)
    }

    pub fn write_payload(&mut self, offset: u64, data: &[u8]) -> Result<(), FilterError> {
        let links = self.slices.iter_mut().map(|slice| &mut slice.link);
        dump::write_payload(links, offset, data)
    }

    /// Overwrites the whole payload in place: `fill` is handed each slice's array in turn.
    pub fn fill_payload<E>(
        &mut self,
        fill: &mut impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.slices
            .iter_mut()
            .try_for_each(|slice| slice.link.fill_bytes(fill))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(capacity: u64, window_ms: u64, slices: u32, layout: Layout) -> WindowedFilter {
        let options = WindowOptions {
            error_rate: 0.01,
            capacity,
            window_ms,
            slices,
            layout,
        };
        WindowedFilter::new(options, u64::MAX).unwrap()
    }

    /// A start time far from 0, as real clocks are, and not on a slice boundary.
    const T0: u64 = 1_700_000_000_123;

    #[test]
    fn remembers_for_the_window_less_a_slice_and_forgets_after_it() {
        // 4 slices of 250 ms: remembered for at least 750 ms, forgotten by 1000 ms.
        let mut retired = Retired::default();
        for layout in [Layout::Classic, Layout::Blocked] {
            let mut tbf = filter(1000, 1000, 4, layout);
            for step in 0..40u64 {
                let added = T0 + step * 37;
                let item = format!("item{step}");
                assert_eq!(tbf.add(item.as_bytes(), added, &mut retired), Ok(true));
                assert!(tbf.contains(item.as_bytes(), added));
                assert!(tbf.contains(item.as_bytes(), added + 749));
            }
            for step in 0..40u64 {
                let added = T0 + step * 37;
                let item = format!("item{step}");
                assert!(
                    !tbf.contains(item.as_bytes(), added + 1000),
                    "{layout:?} {step}"
                );
            }
            // A window of 10 ms in 3 slices: slices of 4 ms, forgotten by 12 ms.
            let mut odd = filter(10, 10, 3, layout);
            odd.add(b"x", T0, &mut retired).unwrap();
            assert!(odd.contains(b"x", T0 + 7));
            assert!(!odd.contains(b"x", T0 + 12));
        }
    }

    #[test]
    fn adding_again_refreshes_and_answers_as_a_look_up_would() {
        let mut retired = Retired::default();
        let mut tbf = filter(100, 1000, 4, Layout::Classic);
        assert_eq!(tbf.add(b"x", T0, &mut retired), Ok(true));
        assert_eq!(tbf.add(b"x", T0 + 1, &mut retired), Ok(false));
        // Still in the window, in an older slice: not new, but now in the current slice too, and
        // so remembered for 750 ms from now.
        assert_eq!(tbf.add(b"x", T0 + 600, &mut retired), Ok(false));
        assert!(tbf.contains(b"x", T0 + 1349));
        assert_eq!(tbf.items(T0 + 600), 2);
        assert_eq!(tbf.items(T0 + 1349), 1);
        assert_eq!(tbf.add(b"x", T0 + 5000, &mut retired), Ok(true));
    }

    #[test]
    fn time_never_goes_back() {
        let mut retired = Retired::default();
        let mut tbf = filter(100, 1000, 4, Layout::Classic);
        tbf.add(b"new", T0 + 10_000, &mut retired).unwrap();
        // A clock stepped back: the add goes to the newest slice, the look-up sees it.
        tbf.add(b"late", T0, &mut retired).unwrap();
        assert!(tbf.contains(b"new", T0));
        assert!(tbf.contains(b"late", T0 + 10_000));
        assert!(!tbf.contains(b"late", T0 + 11_000));
    }

    #[test]
    fn the_window_holds_its_capacity_and_no_more() {
        let mut retired = Retired::default();
        let mut tbf = filter(10, 1000, 4, Layout::Classic);
        for i in 0..10u32 {
            assert!(tbf
                .add(&i.to_le_bytes(), T0 + u64::from(i) * 50, &mut retired)
                .is_ok());
        }
        assert_eq!(
            tbf.add(b"one more", T0 + 600, &mut retired),
            Err(FilterError::Full)
        );
        assert_eq!(
            tbf.add(&9u32.to_le_bytes(), T0 + 600, &mut retired),
            Ok(false)
        );
        // Once the first slices age out there is room again.
        assert_eq!(tbf.add(b"one more", T0 + 1200, &mut retired), Ok(true));
    }

    #[test]
    fn aged_out_slices_are_swapped_for_fresh_arrays() {
        let mut retired = Retired::default();
        let mut tbf = filter(1000, 1000, 4, Layout::Blocked);
        for i in 0..100u32 {
            tbf.add(&i.to_le_bytes(), T0 + u64::from(i) * 8, &mut retired)
                .unwrap();
        }
        assert!(retired.is_empty());
        assert!(!tbf.has_expired(T0 + 800));
        assert!(tbf.has_expired(T0 + 5000));
        tbf.expire(T0 + 5000, &mut retired);
        assert_eq!(retired.0.len(), 4);
        assert!(!tbf.has_expired(T0 + 5000));
        assert_eq!(tbf.items(T0), 0);
        let mut payload = Vec::new();
        assert!(tbf.read_payload(0, tbf.payload_bytes(), &mut payload));
        assert!(payload.iter().all(|&b| b == 0));
    }

    /// The promise on false positives, measured: 200,000 look-ups of items never added, at a
    /// time when every slice is inside the window, with `capacity` items added either all into
    /// one slice (the worst case: the whole rate `p` comes from one slice) or spread evenly (each
    /// slice holds a quarter and the rate is far below `p`). The measured rate must be under
    /// `p` plus four standard errors (σ = 2.2·10^-4 at p = 0.01): a false alarm has a chance
    /// of 3·10^-5 if the true rate is `p`, and the sizing puts it at or below.
    #[test]
    fn false_positives_stay_under_the_rate_over_the_whole_window() {
        let (capacity, queries, p) = (10_000u32, 200_000u32, 0.01);
        let sigma = (p * (1.0 - p) / f64::from(queries)).sqrt();
        for layout in [Layout::Classic, Layout::Blocked] {
            for burst in [true, false] {
                let mut retired = Retired::default();
                let mut tbf = filter(u64::from(capacity), 4000, 4, layout);
                for i in 0..capacity {
                    let slice = if burst {
                        0
                    } else {
                        u64::from(i / (capacity / 4))
                    };
                    tbf.add(
                        format!("in:{i}").as_bytes(),
                        T0 + slice * 1000,
                        &mut retired,
                    )
                    .unwrap();
                }
                let now = T0 + 3000;
                // Adds that were false positives in their slice are not counted, as in BF.CARD.
                assert!(tbf.items(now) > u64::from(capacity) * 99 / 100);
                let passed = (0..queries)
                    .filter(|i| tbf.contains(format!("out:{i}").as_bytes(), now))
                    .count();
                let rate = passed as f64 / f64::from(queries);
                assert!(rate < p + 4.0 * sigma, "{layout:?} burst {burst}: {rate}");
                if !burst {
                    assert!(rate < p / 10.0, "{layout:?} spread: {rate}");
                }
                assert!((0..capacity).all(|i| tbf.contains(format!("in:{i}").as_bytes(), now)));
            }
        }
    }

    #[test]
    fn dumps_round_trip_and_refuse_any_corruption() {
        let mut retired = Retired::default();
        for layout in [Layout::Classic, Layout::Blocked] {
            let mut tbf = filter(500, 1000, 4, layout);
            for i in 0..400u32 {
                tbf.add(&i.to_le_bytes(), T0 + u64::from(i) * 2, &mut retired)
                    .unwrap();
            }
            let mut copy: Option<WindowedFilter> = None;
            let mut iterator = 0;
            loop {
                let step = tbf.dump_chunk(iterator);
                if step.next == 0 {
                    break;
                }
                match copy.as_mut() {
                    None => copy = Some(WindowedFilter::from_header(&step.data, u64::MAX).unwrap()),
                    Some(copy) => copy.load_chunk(step.next, &step.data).unwrap(),
                }
                iterator = step.next;
            }
            let copy = copy.unwrap();
            assert_eq!(copy.dump_header(), tbf.dump_header());
            assert!((0..400u32).all(|i| copy.contains(&i.to_le_bytes(), T0 + 800)));
            let header = tbf.dump_header();
            for at in 0..header.len() {
                let mut bad = header.clone();
                bad[at] ^= 0x40;
                assert!(
                    WindowedFilter::from_header(&bad, u64::MAX).is_err(),
                    "byte {at}"
                );
            }
            for len in 0..header.len() {
                assert!(WindowedFilter::from_header(&header[..len], u64::MAX).is_err());
            }
            assert!(matches!(
                WindowedFilter::from_header(&header, 100),
                Err(FilterError::TooLarge { .. })
            ));
            let mut loaded = WindowedFilter::from_header(&header, u64::MAX).unwrap();
            assert_eq!(loaded.load_chunk(0, &[]), Err(FilterError::BadDump));
            let end = tbf.payload_bytes() as i64 + 1;
            assert_eq!(
                loaded.load_chunk(end + 1, &[0]),
                Err(FilterError::BadOffset)
            );
        }
    }

    #[test]
    fn refuses_before_allocating() {
        let options = WindowOptions {
            error_rate: 0.01,
            capacity: 1 << 30,
            window_ms: 1000,
            slices: 8,
            layout: Layout::Classic,
        };
        assert!(matches!(
            WindowedFilter::new(options, 1 << 30),
            Err(FilterError::TooLarge { .. })
        ));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            /// Any header edited field by field (re-signed, so the checks behind the checksum
            /// are what is tried) and any chunks load safely within the limit, and the filter
            /// then answers, adds and ages at any time without panicking.
            #[test]
            fn any_header_and_chunks_load_safely(
                edits in prop::collection::vec((12usize..100, any::<u8>()), 0..6),
                chunks in prop::collection::vec((-5i64..2000, prop::collection::vec(any::<u8>(), 0..64)), 0..8),
                times in prop::collection::vec(any::<u64>(), 1..6),
            ) {
                let mut retired = Retired::default();
                let mut source = filter(20, 60_000, 3, Layout::Classic);
                source.add(b"x", T0, &mut retired).unwrap();
                let mut header = source.dump_header();
                let body = header.len() - CHECKSUM_LEN;
                for (at, byte) in edits {
                    if at < body {
                        header[at] = byte;
                    }
                }
                let checksum = xxh3_64(&header[..body]);
                header[body..].copy_from_slice(&checksum.to_le_bytes());
                if let Ok(mut loaded) = WindowedFilter::from_header(&header, 1 << 20) {
                    prop_assert!(loaded.payload_bytes() <= 1 << 20);
                    for (iterator, data) in &chunks {
                        let _ = loaded.load_chunk(*iterator, data);
                    }
                    for now in times {
                        loaded.contains(b"probe", now);
                        loaded.items(now);
                        let _ = loaded.add(b"probe", now, &mut retired);
                        loaded.expire(now, &mut retired);
                        prop_assert!(!loaded.has_expired(now));
                    }
                }
            }
        }
    }
}
