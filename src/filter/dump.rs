//! BF.SCANDUMP / BF.LOADCHUNK: a filter as a versioned, checksummed header followed by its bit
//! arrays in chunks. The header is validated completely, and its total size checked against the
//! limit, before anything is allocated.
//!
//! Header layout (all integers little-endian):
//! ```text
//! offset  size  field
//! 0       8     magic "sievedBF"
//! 8       2     format version, 2 (1 is still read)
//! 10      2     flags: bit 0 = non-scaling; bit 1 = blocked layout (version 2 only);
//!               other bits must be 0
//! 12      4     expansion (0 for non-scaling)
//! 16      8     items in the whole chain
//! 24      4     link count n, at least 1
//! 28      36·n  per link: capacity u64, error rate f64, hashes u32, bits u64, items u64
//! 28+36n  8     xxh3-64 of every byte before it
//! ```
//! Version 1 is version 2 without the layout flag: every filter it describes is classic. Each link
//! after the first has the capacity of the one before times the expansion and half its error
//! rate, and the hashes and bits of each must be those its layout gives for its capacity and error
//! rate.
//! A blocked link's bits are whole 512-bit blocks, block after block, each block eight
//! little-endian words.
//!
//! Chunk iterators follow RedisBloom: 0 asks for the header; otherwise iterator − 1 is a byte offset
//! into the concatenation of all links' bit arrays, and the iterator returned with a chunk is one
//! past its end. A chunk never spans two links and is at most `MAX_CHUNK_BYTES`.

use super::bloom::Link;
use super::chain::BloomChain;
use super::sizing::{Layout, LinkSize};
use super::FilterError;
use xxhash_rust::xxh3::xxh3_64;

pub const MAX_CHUNK_BYTES: u64 = 16 * 1024 * 1024;

const MAGIC: &[u8; 8] = b"sievedBF";
const VERSION: u16 = 2;
/// The version before filters had a layout.
const VERSION_CLASSIC_ONLY: u16 = 1;
const FLAG_NON_SCALING: u16 = 1;
const FLAG_BLOCKED: u16 = 2;
const FIXED_LEN: usize = 28;
const LINK_LEN: usize = 36;
const CHECKSUM_LEN: usize = 8;

/// One answer of SCANDUMP: the iterator to ask with next (0 when done) and the bytes.
#[derive(Debug, PartialEq)]
pub struct DumpStep {
    pub next: i64,
    pub data: Vec<u8>,
}

impl BloomChain {
    pub fn dump_header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED_LEN + LINK_LEN * self.links.len() + CHECKSUM_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        let mut flags = 0;
        if !self.is_scaling() {
            flags |= FLAG_NON_SCALING;
        }
        if self.layout() == Layout::Blocked {
            flags |= FLAG_BLOCKED;
        }
        out.extend_from_slice(&flags.to_le_bytes());
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
        if iterator == 0 {
            return DumpStep {
                next: 1,
                data: self.dump_header(),
            };
        }
        payload_step(
            self.links.iter().map(Link::bytes),
            iterator,
            |link, from, len, out| self.links[link].read_bytes(from, len, out),
        )
    }

    /// Appends bytes `offset..offset + len` of the links' bit arrays taken end to end (a snapshot's
    /// payload); false, with nothing appended, if that range is not inside the filter.
    pub fn read_payload(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> bool {
        let Some(pieces) = payload_pieces(self.links.iter().map(Link::bytes), offset, len) else {
            return false;
        };
        for (link, from, len) in pieces {
            self.links[link].read_bytes(from, len, out);
        }
        true
    }

    /// Overwrites payload bytes at `offset`, the counterpart of `read_payload`.
    pub fn write_payload(&mut self, offset: u64, data: &[u8]) -> Result<(), FilterError> {
        let pieces = payload_pieces(
            self.links.iter().map(Link::bytes),
            offset,
            data.len() as u64,
        )
        .ok_or(FilterError::BadOffset)?;
        let mut data = data;
        for (link, from, len) in pieces {
            let (piece, rest) = data.split_at(len as usize);
            self.links[link].write_bytes(from, piece);
            data = rest;
        }
        Ok(())
    }

    /// Creates an empty chain from a header, refusing any inconsistency.
    pub fn from_header(data: &[u8], limit_bytes: u64) -> Result<BloomChain, FilterError> {
        let header = Header::parse(data)?;
        let total: u64 = header.links.iter().map(|l| l.size.bytes()).sum();
        if total > limit_bytes {
            return Err(FilterError::TooLarge {
                bytes: total,
                limit: limit_bytes,
            });
        }
        let mut links = Vec::new();
        links
            .try_reserve_exact(header.links.len())
            .map_err(|_| FilterError::OutOfMemory)?;
        for spec in &header.links {
            let mut link = Link::with_size(
                header.layout,
                spec.size,
                spec.capacity,
                spec.error_rate,
                u64::MAX,
            )?;
            link.set_items(spec.items);
            links.push(link);
        }
        Ok(BloomChain {
            links,
            expansion: header.expansion,
            items: header.items,
        })
    }

    /// Writes a chunk that SCANDUMP returned together with `iterator`.
    pub fn load_chunk(&mut self, iterator: i64, data: &[u8]) -> Result<(), FilterError> {
        let (link, offset) =
            chunk_target(self.links.iter().map(Link::bytes), iterator, data.len())?;
        self.links[link].write_bytes(offset, data);
        Ok(())
    }
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
pub(super) fn payload_pieces(
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

/// A SCANDUMP step past the header, for any chain of links whose payloads are `link_bytes` long;
/// `read` appends `len` bytes of link `link` from offset `from`.
pub(super) fn payload_step(
    link_bytes: impl Iterator<Item = u64>,
    iterator: i64,
    read: impl FnOnce(usize, u64, u64, &mut Vec<u8>),
) -> DumpStep {
    let Some((link, start, end)) = locate(link_bytes, iterator) else {
        return DumpStep {
            next: 0,
            data: Vec::new(),
        };
    };
    let len = (end - start).min(MAX_CHUNK_BYTES);
    let mut data = Vec::new();
    read(link, start, len, &mut data);
    DumpStep {
        next: iterator + len as i64,
        data,
    }
}

/// Where a chunk of `len` bytes that SCANDUMP returned with `iterator` belongs: its link and the
/// offset inside it, refusing a chunk that would not fit wholly inside one link.
pub(super) fn chunk_target(
    link_bytes: impl Iterator<Item = u64>,
    iterator: i64,
    len: usize,
) -> Result<(usize, u64), FilterError> {
    let start = i64::try_from(len)
        .ok()
        .and_then(|len| iterator.checked_sub(len))
        .filter(|&s| s >= 1)
        .ok_or(FilterError::BadDump)?;
    let (link, offset, link_len) = locate(link_bytes, start).ok_or(FilterError::BadOffset)?;
    if offset + len as u64 > link_len {
        return Err(FilterError::BadOffset);
    }
    Ok((link, offset))
}

struct LinkSpec {
    capacity: u64,
    error_rate: f64,
    size: LinkSize,
    items: u64,
}

struct Header {
    layout: Layout,
    expansion: u32,
    items: u64,
    links: Vec<LinkSpec>,
}

/// Reads little-endian fields off the front of a header, failing on a short one.
pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl Reader<'_> {
    pub(super) fn take<const N: usize>(&mut self) -> Result<[u8; N], FilterError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or(FilterError::BadDump)?;
        self.0 = rest;
        Ok(*head)
    }
    pub(super) fn u16(&mut self) -> Result<u16, FilterError> {
        self.take().map(u16::from_le_bytes)
    }
    pub(super) fn u32(&mut self) -> Result<u32, FilterError> {
        self.take().map(u32::from_le_bytes)
    }
    pub(super) fn u64(&mut self) -> Result<u64, FilterError> {
        self.take().map(u64::from_le_bytes)
    }
    pub(super) fn f64(&mut self) -> Result<f64, FilterError> {
        self.take().map(f64::from_le_bytes)
    }
}

impl Header {
    fn parse(data: &[u8]) -> Result<Header, FilterError> {
        let body_len = data
            .len()
            .checked_sub(CHECKSUM_LEN)
            .ok_or(FilterError::BadDump)?;
        let (body, checksum) = data.split_at(body_len);
        if body.len() < FIXED_LEN || xxh3_64(body).to_le_bytes() != checksum {
            return Err(FilterError::BadDump);
        }
        let mut reader = Reader(body);
        if &reader.take::<8>()? != MAGIC {
            return Err(FilterError::BadDump);
        }
        let known_flags = match reader.u16()? {
            VERSION => FLAG_NON_SCALING | FLAG_BLOCKED,
            VERSION_CLASSIC_ONLY => FLAG_NON_SCALING,
            _ => return Err(FilterError::BadDump),
        };
        let flags = reader.u16()?;
        let expansion = reader.u32()?;
        let items = reader.u64()?;
        let count = reader.u32()? as usize;
        let non_scaling = flags & FLAG_NON_SCALING != 0;
        let layout = if flags & FLAG_BLOCKED != 0 {
            Layout::Blocked
        } else {
            Layout::Classic
        };
        if flags & !known_flags != 0
            || non_scaling != (expansion == 0)
            || count == 0
            || reader.0.len() != count.checked_mul(LINK_LEN).ok_or(FilterError::BadDump)?
        {
            return Err(FilterError::BadDump);
        }
        let mut links: Vec<LinkSpec> = Vec::with_capacity(count);
        let mut link_items = 0u64;
        for _ in 0..count {
            let capacity = reader.u64()?;
            let error_rate = reader.f64()?;
            let hashes = reader.u32()?;
            let bits = reader.u64()?;
            let items = reader.u64()?;
            // Each link is the one before grown (chain.rs): checked first, as it is cheap and
            // bounds how many different rates a header makes the sizing work out.
            if let Some(previous) = links.last() {
                if Some(capacity) != previous.capacity.checked_mul(u64::from(expansion))
                    || error_rate != previous.error_rate * 0.5
                {
                    return Err(FilterError::BadDump);
                }
            }
            let size =
                LinkSize::for_layout(layout, capacity, error_rate).ok_or(FilterError::BadDump)?;
            if size.hashes != hashes || size.bits != bits {
                return Err(FilterError::BadDump);
            }
            link_items = link_items.checked_add(items).ok_or(FilterError::BadDump)?;
            links.push(LinkSpec {
                capacity,
                error_rate,
                size,
                items,
            });
        }
        if link_items != items || (non_scaling && count != 1) {
            return Err(FilterError::BadDump);
        }
        Ok(Header {
            layout,
            expansion,
            items,
            links,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::chain::ChainOptions;
    use super::*;

    fn filled(capacity: u64, items: u32) -> BloomChain {
        filled_with(Layout::Classic, capacity, items)
    }

    fn filled_with(layout: Layout, capacity: u64, items: u32) -> BloomChain {
        let options = ChainOptions {
            error_rate: 0.01,
            capacity,
            expansion: 2,
            layout,
        };
        let mut chain = BloomChain::new(options, u64::MAX).unwrap();
        for i in 0..items {
            chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
        }
        chain
    }

    fn round_trip(chain: &BloomChain) -> BloomChain {
        let mut iterator = 0;
        let mut copy: Option<BloomChain> = None;
        loop {
            let step = chain.dump_chunk(iterator);
            if step.next == 0 {
                break;
            }
            match copy.as_mut() {
                None => copy = Some(BloomChain::from_header(&step.data, u64::MAX).unwrap()),
                Some(copy) => copy.load_chunk(step.next, &step.data).unwrap(),
            }
            iterator = step.next;
        }
        copy.unwrap()
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
        let mut body = header[..header.len() - CHECKSUM_LEN].to_vec();
        body[8..10].copy_from_slice(&version.to_le_bytes());
        let checksum = xxh3_64(&body);
        body.extend_from_slice(&checksum.to_le_bytes());
        body
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
            let mut bad = header[..header.len() - CHECKSUM_LEN].to_vec();
            bad[second_link + field..second_link + field + 8].copy_from_slice(&value);
            let checksum = xxh3_64(&bad);
            bad.extend_from_slice(&checksum.to_le_bytes());
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
            every_corruption_is_rejected(&filled_with(layout, 100, 1000).dump_header());
        }
    }

    fn every_corruption_is_rejected(header: &[u8]) {
        for at in 0..header.len() {
            for flip in [0x01, 0x80] {
                let mut bad = header.to_vec();
                bad[at] ^= flip;
                assert!(
                    BloomChain::from_header(&bad, u64::MAX).is_err(),
                    "byte {at}"
                );
            }
        }
        for len in 0..header.len() {
            assert!(BloomChain::from_header(&header[..len], u64::MAX).is_err());
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
