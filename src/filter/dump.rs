//! BF.SCANDUMP / BF.LOADCHUNK and CBF.SCANDUMP / CBF.LOADCHUNK: a filter as a versioned,
//! checksummed header followed by its arrays in chunks. The same layout serves both filter types
//! and snapshots (which embed the header and the payload); what differs is the magic, the version
//! and bytes 10 and 11 (`DumpFormat`). The magics differ, so a plain filter's dump cannot be loaded
//! as a counting one or the other way round. The header is validated completely, and its total
//! size checked against the limit, before anything is allocated. A plain filter hashed as
//! RedisBloom hashes has RedisBloom's header instead (`redisbloom_dump.rs`), so that its dumps
//! move to and from RedisBloom; the chunks are the same for both headers.
//!
//! Header layout (all integers little-endian):
//! ```text
//! offset  size  field
//! 0       8     magic: "sievedBF" (plain), "sievedCB" (counting)
//! 8       2     format version: plain 2 (1 is still read), counting 1
//! 10      2     plain: flags u16, bit 0 = non-scaling, bit 1 = blocked layout (version 2 only);
//!               counting: counter bits u8 (4 or 8), then flags u8, bit 0 = non-scaling;
//!               other flag bits must be 0
//! 12      4     expansion (0 exactly when non-scaling)
//! 16      8     items in the whole chain (the sum of the links' items)
//! 24      4     link count n, at least 1 (exactly 1 when non-scaling)
//! 28      36·n  per link: capacity u64, error rate f64, hashes u32, bits (or counters) u64,
//!               items u64
//! 28+36n  8     xxh3-64 of every byte before it
//! ```
//! Plain version 1 is version 2 without the layout flag: every filter it describes is classic.
//! Each link after the first has the capacity of the one before times the expansion and half its
//! error rate, and the hashes and bits of each must be those its layout gives for its capacity and
//! error rate; a counting filter's first link must also be within the 0.25 cap.
//!
//! After the header come the arrays, link after link, as 64-bit words each little-endian. A
//! blocked link's bits are whole 512-bit blocks, block after block, each block eight words. A
//! counting link's array is `counters × bits / 8` bytes, so with 4-bit counters byte `k` holds
//! counter `2k` in its low nibble and `2k + 1` in its high nibble; saturated counters are not
//! stored, loading counts them from the chunks.
//!
//! Chunk iterators follow RedisBloom: 0 asks for the header; otherwise iterator − 1 is a byte offset
//! into the concatenation of all links' arrays, and the iterator returned with a chunk is one
//! past its end. A chunk never spans two links and is at most `MAX_CHUNK_BYTES`.

use super::bloom::{Bits, BitsKind};
use super::chain::{Chain, MAX_ERROR_RATE};
use super::counter_array::{CounterBits, Counters};
use super::item_hash::HashScheme;
use super::link::{Link, LinkArray};
use super::link_spec::{empty_links, LinkSpec};
use super::redisbloom_dump;
use super::sizing::Layout;
use super::FilterError;
use xxhash_rust::xxh3::xxh3_64;

pub const MAX_CHUNK_BYTES: u64 = 16 * 1024 * 1024;

const FIXED_LEN: usize = 28;
const LINK_LEN: usize = 36;
const CHECKSUM_LEN: usize = 8;

/// What the header formats of the link kinds do not share.
pub trait DumpFormat: LinkArray {
    const MAGIC: &'static [u8; 8];
    /// The version written.
    const VERSION: u16;
    /// Whether a header's first link must be within `MAX_ERROR_RATE`. Plain headers were never
    /// held to it, and still load as they did.
    const FIRST_RATE_CAPPED: bool;

    /// Bytes 10 and 11 for a chain of `kind`.
    fn encode_kind(kind: Self::Kind, non_scaling: bool) -> [u8; 2];
    /// The kind and whether the chain is non-scaling, from bytes 10 and 11 of a header of
    /// `version`; None for an unknown version, width or flag.
    fn decode_kind(version: u16, field: [u8; 2]) -> Option<(Self::Kind, bool)>;

    /// Another server's header, for a chain that server can represent: dumped instead of
    /// sieved's own.
    fn foreign_header(_chain: &Chain<Self>) -> Option<Vec<u8>> {
        None
    }

    /// A chain from another server's header, None when `data` is not one this type reads.
    fn from_foreign_header(
        _data: &[u8],
        _limit_bytes: u64,
    ) -> Option<Result<Chain<Self>, FilterError>> {
        None
    }
}

/// Plain flags: bit 0 non-scaling, bit 1 (version 2 only) blocked.
const FLAG_NON_SCALING: u16 = 1;
const FLAG_BLOCKED: u16 = 2;
/// The plain version before filters had a layout.
const VERSION_CLASSIC_ONLY: u16 = 1;

impl DumpFormat for Bits {
    const MAGIC: &'static [u8; 8] = b"sievedBF";
    const VERSION: u16 = 2;
    const FIRST_RATE_CAPPED: bool = false;

    /// Only for xxh3 kinds: a murmur chain has RedisBloom's header (`foreign_header`).
    fn encode_kind(kind: BitsKind, non_scaling: bool) -> [u8; 2] {
        let mut flags = 0;
        if non_scaling {
            flags |= FLAG_NON_SCALING;
        }
        if kind.layout() == Layout::Blocked {
            flags |= FLAG_BLOCKED;
        }
        flags.to_le_bytes()
    }

    /// Every filter with sieved's own header hashes with xxh3: it predates RedisBloom's scheme,
    /// or is blocked.
    fn decode_kind(version: u16, field: [u8; 2]) -> Option<(BitsKind, bool)> {
        let known_flags = match version {
            Self::VERSION => FLAG_NON_SCALING | FLAG_BLOCKED,
            VERSION_CLASSIC_ONLY => FLAG_NON_SCALING,
            _ => return None,
        };
        let flags = u16::from_le_bytes(field);
        if flags & !known_flags != 0 {
            return None;
        }
        let layout = if flags & FLAG_BLOCKED != 0 {
            Layout::Blocked
        } else {
            Layout::Classic
        };
        let kind = BitsKind::new(layout, HashScheme::Xxh3);
        Some((kind, flags & FLAG_NON_SCALING != 0))
    }

    fn foreign_header(chain: &Chain<Bits>) -> Option<Vec<u8>> {
        redisbloom_dump::header(chain)
    }

    /// RedisBloom's header never starts with sieved's magic: that would be 5e18 items.
    fn from_foreign_header(
        data: &[u8],
        limit_bytes: u64,
    ) -> Option<Result<Chain<Bits>, FilterError>> {
        (!data.starts_with(Self::MAGIC)).then(|| redisbloom_dump::parse(data, limit_bytes))
    }
}

/// Counting flags: bit 0 non-scaling.
const COUNTING_FLAG_NON_SCALING: u8 = 1;

impl DumpFormat for Counters {
    const MAGIC: &'static [u8; 8] = b"sievedCB";
    const VERSION: u16 = 1;
    const FIRST_RATE_CAPPED: bool = true;

    fn encode_kind(width: CounterBits, non_scaling: bool) -> [u8; 2] {
        let flags = if non_scaling {
            COUNTING_FLAG_NON_SCALING
        } else {
            0
        };
        [width.bits() as u8, flags]
    }

    fn decode_kind(version: u16, [bits, flags]: [u8; 2]) -> Option<(CounterBits, bool)> {
        if version != Self::VERSION || flags & !COUNTING_FLAG_NON_SCALING != 0 {
            return None;
        }
        let width = CounterBits::from_bits(u64::from(bits))?;
        Some((width, flags == COUNTING_FLAG_NON_SCALING))
    }
}

/// One answer of SCANDUMP: the iterator to ask with next (0 when done) and the bytes.
#[derive(Debug, PartialEq)]
pub struct DumpStep {
    pub next: i64,
    pub data: Vec<u8>,
}

impl<A: DumpFormat> Chain<A> {
    pub fn dump_header(&self) -> Vec<u8> {
        if let Some(header) = A::foreign_header(self) {
            return header;
        }
        let mut out = Vec::with_capacity(FIXED_LEN + LINK_LEN * self.links.len() + CHECKSUM_LEN);
        out.extend_from_slice(A::MAGIC);
        out.extend_from_slice(&A::VERSION.to_le_bytes());
        out.extend_from_slice(&A::encode_kind(self.kind(), !self.is_scaling()));
        out.extend_from_slice(&self.expansion.to_le_bytes());
        out.extend_from_slice(&self.items.to_le_bytes());
        out.extend_from_slice(&(self.links.len() as u32).to_le_bytes());
        for link in &self.links {
            out.extend_from_slice(&link.capacity().to_le_bytes());
            out.extend_from_slice(&link.error_rate().to_le_bytes());
            out.extend_from_slice(&link.hashes().to_le_bytes());
            out.extend_from_slice(&link.bits().to_le_bytes());
            out.extend_from_slice(&link.items().to_le_bytes());
        }
        let checksum = xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    /// The SCANDUMP step for `iterator`.
    pub fn dump_chunk(&self, iterator: i64) -> DumpStep {
        dump_step(self.links.iter(), iterator, || self.dump_header())
    }

    /// Creates an empty chain from a header, refusing any inconsistency.
    pub fn from_header(data: &[u8], limit_bytes: u64) -> Result<Chain<A>, FilterError> {
        if let Some(chain) = A::from_foreign_header(data, limit_bytes) {
            return chain;
        }
        let header = Header::<A>::parse(data)?;
        let mut total = 0u64;
        for spec in &header.links {
            let bytes = A::bytes_for(header.kind, spec.size).ok_or(FilterError::BadDump)?;
            total = total.checked_add(bytes).ok_or(FilterError::BadDump)?;
        }
        Ok(Chain {
            links: empty_links(header.kind, &header.links, total, limit_bytes)?,
            items: header.items,
            expansion: header.expansion,
            stated_expansion: header.expansion,
        })
    }
}

impl<A: LinkArray> Chain<A> {
    /// Writes a chunk that SCANDUMP returned together with `iterator`, refusing a chunk that
    /// would not fit wholly inside one link.
    pub fn load_chunk(&mut self, iterator: i64, data: &[u8]) -> Result<(), FilterError> {
        load_chunk(self.links.iter_mut(), iterator, data)
    }

    /// Appends bytes `offset..offset + len` of the links' arrays taken end to end (a snapshot's
    /// payload); false, with nothing appended, if that range is not inside the filter.
    pub fn read_payload(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> bool {
        read_payload(self.links.iter(), offset, len, out)
    }

    /// Overwrites payload bytes at `offset`, the counterpart of `read_payload`.
    pub fn write_payload(&mut self, offset: u64, data: &[u8]) -> Result<(), FilterError> {
        write_payload(self.links.iter_mut(), offset, data)
    }

    /// Overwrites the whole payload in place: `fill` is handed each link's array in turn.
    pub fn fill_payload<E>(
        &mut self,
        fill: &mut impl FnMut(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.links
            .iter_mut()
            .try_for_each(|link| link.fill_bytes(fill))
    }
}

// SCANDUMP, LOADCHUNK and a snapshot's payload over links laid end to end, in order: a chain's
// links, a time-windowed filter's slices.

/// The SCANDUMP step for `iterator`: the header (`header`) at 0, then each link's bytes in
/// chunks of at most `MAX_CHUNK_BYTES` that never span two links.
pub(super) fn dump_step<'a, A: LinkArray + 'a>(
    mut links: impl Iterator<Item = &'a Link<A>> + Clone,
    iterator: i64,
    header: impl FnOnce() -> Vec<u8>,
) -> DumpStep {
    if iterator == 0 {
        return DumpStep {
            next: 1,
            data: header(),
        };
    }
    let Some((index, start, end)) = locate(links.clone().map(Link::bytes), iterator) else {
        return DumpStep {
            next: 0,
            data: Vec::new(),
        };
    };
    let len = (end - start).min(MAX_CHUNK_BYTES);
    let mut data = Vec::new();
    if let Some(link) = links.nth(index) {
        link.read_bytes(start, len, &mut data);
    }
    DumpStep {
        next: iterator + len as i64,
        data,
    }
}

/// Writes a chunk that SCANDUMP returned together with `iterator`, refusing a chunk that would
/// not fit wholly inside one link.
pub(super) fn load_chunk<'a, A: LinkArray + 'a>(
    links: impl Iterator<Item = &'a mut Link<A>>,
    iterator: i64,
    data: &[u8],
) -> Result<(), FilterError> {
    let start = i64::try_from(data.len())
        .ok()
        .and_then(|len| iterator.checked_sub(len))
        .filter(|&s| s >= 1)
        .ok_or(FilterError::BadDump)?;
    let mut links: Vec<&mut Link<A>> = links.collect();
    let (index, offset, link_len) =
        locate(links.iter().map(|link| link.bytes()), start).ok_or(FilterError::BadOffset)?;
    if offset + data.len() as u64 > link_len {
        return Err(FilterError::BadOffset);
    }
    links[index].write_bytes(offset, data);
    Ok(())
}

/// Appends bytes `offset..offset + len` of the links' arrays taken end to end; false, with
/// nothing appended, if that range is not inside them.
pub(super) fn read_payload<'a, A: LinkArray + 'a>(
    links: impl Iterator<Item = &'a Link<A>> + Clone,
    offset: u64,
    len: u64,
    out: &mut Vec<u8>,
) -> bool {
    let Some(pieces) = payload_pieces(links.clone().map(Link::bytes), offset, len) else {
        return false;
    };
    let links: Vec<&Link<A>> = links.collect();
    for (index, from, len) in pieces {
        links[index].read_bytes(from, len, out);
    }
    true
}

/// Overwrites payload bytes at `offset`, the counterpart of `read_payload`.
pub(super) fn write_payload<'a, A: LinkArray + 'a>(
    links: impl Iterator<Item = &'a mut Link<A>>,
    offset: u64,
    data: &[u8],
) -> Result<(), FilterError> {
    let mut links: Vec<&mut Link<A>> = links.collect();
    let pieces = payload_pieces(
        links.iter().map(|link| link.bytes()),
        offset,
        data.len() as u64,
    )
    .ok_or(FilterError::BadOffset)?;
    let mut data = data;
    for (index, from, len) in pieces {
        let (piece, rest) = data.split_at(len as usize);
        links[index].write_bytes(from, piece);
        data = rest;
    }
    Ok(())
}

/// Which link holds byte `iterator - 1` of the links' concatenated payloads, given each link's
/// length: the link's index, the byte's offset in it, and the link's length.
fn locate(link_bytes: impl Iterator<Item = u64>, iterator: i64) -> Option<(usize, u64, u64)> {
    let mut offset = u64::try_from(iterator.checked_sub(1)?).ok()?;
    for (index, len) in link_bytes.enumerate() {
        if offset < len {
            return Some((index, offset, len));
        }
        offset -= len;
    }
    None
}

/// How payload bytes `offset..offset + len` (the links' arrays end to end) fall into links: the
/// pieces as (link, offset in it, length), or None if the range runs past the last link.
fn payload_pieces(
    link_bytes: impl Iterator<Item = u64>,
    offset: u64,
    len: u64,
) -> Option<Vec<(usize, u64, u64)>> {
    let end = offset.checked_add(len)?;
    let mut pieces = Vec::new();
    let mut link_start = 0u64;
    for (index, link_len) in link_bytes.enumerate() {
        let link_end = link_start + link_len;
        let (from, to) = (offset.max(link_start), end.min(link_end));
        if from < to {
            pieces.push((index, from - link_start, to - from));
        }
        link_start = link_end;
    }
    (end <= link_start).then_some(pieces)
}

struct Header<A: LinkArray> {
    kind: A::Kind,
    expansion: u32,
    items: u64,
    links: Vec<LinkSpec>,
}

/// Reads little-endian fields off the front of a header, failing on a short one.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], FilterError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or(FilterError::BadDump)?;
        self.0 = rest;
        Ok(*head)
    }
    fn u16(&mut self) -> Result<u16, FilterError> {
        self.take().map(u16::from_le_bytes)
    }
    fn u32(&mut self) -> Result<u32, FilterError> {
        self.take().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64, FilterError> {
        self.take().map(u64::from_le_bytes)
    }
    fn f64(&mut self) -> Result<f64, FilterError> {
        self.take().map(f64::from_le_bytes)
    }
}

impl<A: DumpFormat> Header<A> {
    fn parse(data: &[u8]) -> Result<Header<A>, FilterError> {
        let body_len = data
            .len()
            .checked_sub(CHECKSUM_LEN)
            .ok_or(FilterError::BadDump)?;
        let (body, checksum) = data.split_at(body_len);
        if body.len() < FIXED_LEN || xxh3_64(body).to_le_bytes() != checksum {
            return Err(FilterError::BadDump);
        }
        let mut reader = Reader(body);
        if &reader.take::<8>()? != A::MAGIC {
            return Err(FilterError::BadDump);
        }
        let version = reader.u16()?;
        let (kind, non_scaling) =
            A::decode_kind(version, reader.take()?).ok_or(FilterError::BadDump)?;
        let expansion = reader.u32()?;
        let items = reader.u64()?;
        let count = reader.u32()? as usize;
        if non_scaling != (expansion == 0)
            || count == 0
            || (non_scaling && count != 1)
            || reader.0.len() != count.checked_mul(LINK_LEN).ok_or(FilterError::BadDump)?
        {
            return Err(FilterError::BadDump);
        }
        let mut links: Vec<LinkSpec> = Vec::with_capacity(count);
        for _ in 0..count {
            let capacity = reader.u64()?;
            let error_rate = reader.f64()?;
            let hashes = reader.u32()?;
            let bits = reader.u64()?;
            let items = reader.u64()?;
            // Each link is the one before grown (chain.rs): checked first, as it is cheap and
            // bounds how many different rates a header makes the sizing work out.
            let follows_growth = match links.last() {
                None => !A::FIRST_RATE_CAPPED || error_rate <= MAX_ERROR_RATE,
                Some(previous) => previous.grows_into(expansion, capacity, error_rate),
            };
            if !follows_growth {
                return Err(FilterError::BadDump);
            }
            let size = A::size_for(kind, capacity, error_rate).ok_or(FilterError::BadDump)?;
            if size.hashes != hashes || size.bits != bits {
                return Err(FilterError::BadDump);
            }
            links.push(LinkSpec {
                capacity,
                error_rate,
                size,
                items,
            });
        }
        if !LinkSpec::add_up_to(&links, items) {
            return Err(FilterError::BadDump);
        }
        Ok(Header {
            kind,
            expansion,
            items,
            links,
        })
    }
}

/// What the tests of both formats share.
#[cfg(test)]
mod test_support {
    use super::*;

    /// A copy of `chain` made the way BF.SCANDUMP and BF.LOADCHUNK make one.
    pub(super) fn round_trip<A: DumpFormat>(chain: &Chain<A>) -> Chain<A> {
        let mut iterator = 0;
        let mut copy: Option<Chain<A>> = None;
        loop {
            let step = chain.dump_chunk(iterator);
            if step.next == 0 {
                break;
            }
            match copy.as_mut() {
                None => copy = Some(Chain::from_header(&step.data, u64::MAX).unwrap()),
                Some(copy) => copy.load_chunk(step.next, &step.data).unwrap(),
            }
            iterator = step.next;
        }
        copy.unwrap()
    }

    /// Every bit flip and every truncation of a good header is refused, and the header itself
    /// loads.
    pub(super) fn every_corruption_is_rejected<A: DumpFormat>(header: &[u8]) {
        for at in 0..header.len() {
            for flip in [0x01, 0x80] {
                let mut bad = header.to_vec();
                bad[at] ^= flip;
                assert!(
                    Chain::<A>::from_header(&bad, u64::MAX).is_err(),
                    "byte {at}"
                );
            }
        }
        for len in 0..header.len() {
            assert!(Chain::<A>::from_header(&header[..len], u64::MAX).is_err());
        }
        assert!(Chain::<A>::from_header(header, u64::MAX).is_ok());
    }

    /// Re-signs a header after editing it, to check the rules behind the checksum.
    pub(super) fn resigned(header: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut body = header[..header.len() - CHECKSUM_LEN].to_vec();
        edit(&mut body);
        let checksum = xxh3_64(&body);
        body.extend_from_slice(&checksum.to_le_bytes());
        body
    }
}

#[cfg(test)]
mod bloom_tests {
    use super::super::bloom::{BloomChain, ChainOptions};
    use super::test_support::*;
    use super::*;

    fn filled(capacity: u64, items: u32) -> BloomChain {
        filled_with(Layout::Classic, capacity, items)
    }

    fn filled_with(layout: Layout, capacity: u64, items: u32) -> BloomChain {
        let options = ChainOptions {
            error_rate: 0.01,
            capacity,
            expansion: 2,
            non_scaling: false,
            layout,
            hash: HashScheme::Xxh3,
        };
        let mut chain = BloomChain::new(options, u64::MAX).unwrap();
        for i in 0..items {
            chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
        }
        chain
    }

    #[test]
    fn round_trips_a_scaled_chain() {
        let chain = filled(100, 1000);
        assert_eq!(chain.links().len(), 4);
        let copy = round_trip(&chain);
        assert_eq!(copy.items(), chain.items());
        assert_eq!(copy.dump_header(), chain.dump_header());
        for i in 0..1000u32 {
            assert!(copy.contains(&i.to_le_bytes()));
        }
    }

    #[test]
    fn round_trips_a_blocked_chain() {
        let chain = filled_with(Layout::Blocked, 100, 1000);
        assert_eq!(chain.links().len(), 4);
        let copy = round_trip(&chain);
        assert_eq!(copy.layout(), Layout::Blocked);
        assert_eq!(copy.dump_header(), chain.dump_header());
        for i in 0..1000u32 {
            assert!(copy.contains(&i.to_le_bytes()));
        }
        let (mut original, mut copied) = (Vec::new(), Vec::new());
        assert!(chain.read_payload(0, chain.payload_bytes(), &mut original));
        assert!(copy.read_payload(0, copy.payload_bytes(), &mut copied));
        assert_eq!(original, copied);
    }

    /// `header` with its version replaced and its checksum made good again.
    fn with_version(header: &[u8], version: u16) -> Vec<u8> {
        resigned(header, |body| {
            body[8..10].copy_from_slice(&version.to_le_bytes())
        })
    }

    #[test]
    fn version_1_headers_are_classic() {
        // Version 1 is version 2 without the layout flag, so a classic chain's header with its
        // version set back to 1 is exactly what the previous build wrote.
        let classic = filled(100, 1000);
        let old = with_version(&classic.dump_header(), 1);
        let loaded = BloomChain::from_header(&old, u64::MAX).unwrap();
        assert_eq!(loaded.layout(), Layout::Classic);
        assert_eq!(loaded.dump_header(), classic.dump_header());
        let blocked = filled_with(Layout::Blocked, 100, 1000).dump_header();
        assert_eq!(
            BloomChain::from_header(&with_version(&blocked, 1), u64::MAX).unwrap_err(),
            FilterError::BadDump
        );
        assert!(BloomChain::from_header(&with_version(&blocked, 3), u64::MAX).is_err());
    }

    #[test]
    fn links_must_follow_from_one_another() {
        let header = filled_with(Layout::Blocked, 100, 1000).dump_header();
        let second_link = FIXED_LEN + LINK_LEN;
        for (field, value) in [(0, 300u64.to_le_bytes()), (8, 0.001f64.to_le_bytes())] {
            let bad = resigned(&header, |body| {
                body[second_link + field..second_link + field + 8].copy_from_slice(&value)
            });
            assert!(BloomChain::from_header(&bad, u64::MAX).is_err(), "{field}");
        }
    }

    #[test]
    fn payload_spans_links() {
        let chain = filled(100, 1000);
        let mut all = Vec::new();
        assert!(chain.read_payload(0, chain.payload_bytes(), &mut all));
        let mut copy = BloomChain::from_header(&chain.dump_header(), u64::MAX).unwrap();
        for piece in all.chunks(100).enumerate() {
            copy.write_payload(piece.0 as u64 * 100, piece.1).unwrap();
        }
        let mut again = Vec::new();
        assert!(copy.read_payload(0, copy.payload_bytes(), &mut again));
        assert_eq!(all, again);
        assert!(!chain.read_payload(1, chain.payload_bytes(), &mut again));
        assert_eq!(
            copy.write_payload(chain.payload_bytes(), &[1]),
            Err(FilterError::BadOffset)
        );
    }

    #[test]
    fn iterators_follow_links() {
        let chain = filled(100, 0);
        assert_eq!(chain.dump_chunk(1).next, 145);
        let step = chain.dump_chunk(5);
        assert_eq!((step.next, step.data.len()), (145, 140));
        assert_eq!(
            chain.dump_chunk(145),
            DumpStep {
                next: 0,
                data: vec![]
            }
        );
        assert_eq!(chain.dump_chunk(-1).next, 0);
    }

    #[test]
    fn every_corrupted_header_is_rejected() {
        for layout in [Layout::Classic, Layout::Blocked] {
            every_corruption_is_rejected::<Bits>(&filled_with(layout, 100, 1000).dump_header());
        }
    }

    #[test]
    fn oversized_header_is_refused_before_allocating() {
        let header = filled(100_000_000, 0).dump_header();
        assert!(matches!(
            BloomChain::from_header(&header, 1 << 20),
            Err(FilterError::TooLarge { .. })
        ));
    }

    #[test]
    fn chunks_outside_the_filter_are_refused() {
        let mut chain = filled(100, 0);
        assert_eq!(chain.load_chunk(146, &[0]), Err(FilterError::BadOffset));
        assert_eq!(chain.load_chunk(0, &[]), Err(FilterError::BadDump));
        assert_eq!(chain.load_chunk(5, &[0; 10]), Err(FilterError::BadDump));
        assert_eq!(chain.load_chunk(150, &[0; 10]), Err(FilterError::BadOffset));
        assert_eq!(chain.load_chunk(145, &[0; 144]), Ok(()));
    }
}

#[cfg(test)]
mod counting_tests {
    use super::super::counter_array::CounterBits;
    use super::super::counter_array::CountingOptions;
    use super::super::counting::CountingChain;
    use super::super::sizing::LinkSize;
    use super::test_support::*;
    use super::*;

    fn filled(capacity: u64, items: u32, counter_bits: CounterBits) -> CountingChain {
        let options = CountingOptions {
            error_rate: 0.01,
            capacity,
            expansion: 2,
            counter_bits,
        };
        let mut chain = CountingChain::new(options, u64::MAX).unwrap();
        for i in 0..items {
            for _ in 0..=i % 3 {
                chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
            }
        }
        chain
    }

    #[test]
    fn round_trips_a_scaled_chain_with_its_counts() {
        for bits in [CounterBits::Four, CounterBits::Eight] {
            let mut chain = filled(100, 1000, bits);
            for _ in 0..300 {
                chain.add(b"hot", u64::MAX).unwrap();
            }
            assert_eq!(chain.links().len(), 5);
            assert!(chain.saturated_counters() > 0);
            let mut copy = round_trip(&chain);
            assert_eq!(copy.dump_header(), chain.dump_header());
            assert_eq!(copy.saturated_counters(), chain.saturated_counters());
            assert_eq!(copy.items(), chain.items());
            for i in 0..1000u32 {
                assert_eq!(copy.count(&i.to_le_bytes()), chain.count(&i.to_le_bytes()));
                assert!(copy.count(&i.to_le_bytes()) > u64::from(i % 3));
            }
            assert_eq!(copy.count(b"hot"), chain.count(b"hot"));
            // The copy carries on as the original would.
            for i in 0..1000u32 {
                assert!(copy.delete(&i.to_le_bytes()));
                assert!(copy.contains(&i.to_le_bytes()) || i % 3 == 0);
            }
        }
    }

    #[test]
    fn iterators_follow_links() {
        let chain = filled(100, 0, CounterBits::Four);
        // The plain link for 100 items at 0.005 has 144 bytes; four bits per counter make 576.
        assert_eq!(chain.dump_chunk(1).next, 577);
        let step = chain.dump_chunk(5);
        assert_eq!((step.next, step.data.len()), (577, 572));
        assert_eq!(
            chain.dump_chunk(577),
            DumpStep {
                next: 0,
                data: vec![]
            }
        );
        assert_eq!(chain.dump_chunk(-1).next, 0);
        assert_eq!(
            chain.dump_header().len(),
            FIXED_LEN + LINK_LEN + CHECKSUM_LEN
        );
    }

    #[test]
    fn chunks_never_exceed_the_limit() {
        let options = CountingOptions {
            error_rate: 0.01,
            capacity: 4_000_000,
            expansion: 0,
            counter_bits: CounterBits::Eight,
        };
        let chain = CountingChain::new(options, u64::MAX).unwrap();
        let step = chain.dump_chunk(1);
        assert_eq!(step.data.len() as u64, MAX_CHUNK_BYTES);
        assert_eq!(step.next, 1 + MAX_CHUNK_BYTES as i64);
    }

    #[test]
    fn every_corrupted_header_is_rejected() {
        for bits in [CounterBits::Four, CounterBits::Eight] {
            every_corruption_is_rejected::<Counters>(&filled(100, 1000, bits).dump_header());
        }
    }

    #[test]
    fn consistent_checksums_do_not_excuse_bad_fields() {
        let header = filled(100, 1000, CounterBits::Four).dump_header();
        type Edit = (&'static str, fn(&mut Vec<u8>));
        let edits: [Edit; 8] = [
            ("plain filter magic", |h| {
                h[..8].copy_from_slice(b"sievedBF")
            }),
            ("version 2", |h| h[8] = 2),
            ("counter bits 5", |h| h[10] = 5),
            ("unknown flag", |h| h[11] = 2),
            ("non-scaling with expansion", |h| h[11] = 1),
            ("expansion 3", |h| h[12] = 3),
            ("items off by one", |h| h[16] ^= 1),
            ("second link not grown from the first", |h| h[28 + 36] ^= 1),
        ];
        for (what, edit) in edits {
            let bad = resigned(&header, edit);
            assert_eq!(
                CountingChain::from_header(&bad, u64::MAX).err(),
                Some(FilterError::BadDump),
                "{what}"
            );
        }
        let single = filled(100, 10, CounterBits::Four).dump_header();
        let loose = resigned(&single, |h| {
            h[36..44].copy_from_slice(&0.5f64.to_le_bytes());
        });
        assert!(CountingChain::from_header(&loose, u64::MAX).is_err());
    }

    #[test]
    fn oversized_header_is_refused_before_allocating() {
        let small = CountingOptions {
            error_rate: 0.01,
            capacity: 100,
            expansion: 0,
            counter_bits: CounterBits::Eight,
        };
        let header = CountingChain::new(small, u64::MAX).unwrap().dump_header();
        // The same filter for 2^30 items would need about 10 GB of counters.
        let size = LinkSize::for_capacity(1 << 30, 0.01).unwrap();
        let huge = resigned(&header, |h| {
            h[28..36].copy_from_slice(&(1u64 << 30).to_le_bytes());
            h[44..48].copy_from_slice(&size.hashes.to_le_bytes());
            h[48..56].copy_from_slice(&size.bits.to_le_bytes());
        });
        assert_eq!(
            CountingChain::from_header(&huge, 1 << 20).err(),
            Some(FilterError::TooLarge {
                bytes: size.bits,
                limit: 1 << 20
            })
        );
    }

    #[test]
    fn chunks_outside_the_filter_are_refused() {
        let mut chain = filled(100, 0, CounterBits::Four);
        assert_eq!(chain.load_chunk(578, &[0]), Err(FilterError::BadOffset));
        assert_eq!(chain.load_chunk(0, &[]), Err(FilterError::BadDump));
        assert_eq!(chain.load_chunk(5, &[0; 10]), Err(FilterError::BadDump));
        assert_eq!(chain.load_chunk(582, &[0; 10]), Err(FilterError::BadOffset));
        assert_eq!(chain.load_chunk(577, &[0xff; 576]), Ok(()));
        assert_eq!(chain.saturated_counters(), 1152);
        assert_eq!(chain.load_chunk(577, &[0x0f; 576]), Ok(()));
        assert_eq!(chain.saturated_counters(), 576);
    }
}
