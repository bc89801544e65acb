//! RedisBloom's SCANDUMP header, for the filters it can represent: classic links under its hash
//! (`HashScheme::Murmur`). Such a filter dumps with this header, so that BF.SCANDUMP output loads
//! into RedisBloom with BF.LOADCHUNK and the other way round; the chunks after it are the same in
//! both (`dump.rs`). Blocked, xxh3 and counting filters keep sieved's own header.
//!
//! Header layout (packed, little-endian), from RedisBloom's `sb.c`:
//! ```text
//! offset  size  field
//! 0       8     items in the whole chain (the sum of the links' items)
//! 8       4     link count n
//! 12      4     option bits: 1 no power-of-two rounding, 4 64-bit hash, 8 non-scaling
//! 16      4     expansion (for a non-scaling filter, the one it was created with)
//! 20      53·n  per link: bytes u64, bits u64, items u64, error rate f64, bits per element f64,
//!               hashes u32, capacity u64, power-of-two exponent u8 (0)
//! ```
//! RedisBloom checks lengths, the error rate, bits = 8 × bytes, the hashes against the bits per
//! element, the option bits and the item total. sieved also requires what its own filters are
//! made of: the two option bits every RedisBloom 2.4+ filter has, no power-of-two exponent, each
//! link sized exactly as `LinkSize` sizes it, and each link after the first grown from the one
//! before, so that a loaded filter keeps growing and answering as RedisBloom's would. All of it is
//! checked, and the total size against the limit, before anything is allocated.

use super::bloom::{Bits, BitsKind, BloomChain};
use super::chain::Chain;
use super::item_hash::HashScheme;
use super::link_spec::{empty_links, LinkSpec};
use super::sizing::{bits_per_element, Layout, LinkSize};
use super::FilterError;

const FIXED_LEN: usize = 20;
const LINK_LEN: usize = 53;

const OPTION_NO_ROUNDING: u32 = 1;
const OPTION_HASH_64: u32 = 4;
const OPTION_NON_SCALING: u32 = 8;
/// The options of every filter RedisBloom 2.4 and later creates, besides non-scaling.
const OPTIONS_ALWAYS: u32 = OPTION_NO_ROUNDING | OPTION_HASH_64;

/// The header for a chain RedisBloom can represent (classic links under its hash); None for
/// any other.
pub(super) fn header(chain: &BloomChain) -> Option<Vec<u8>> {
    let shape = chain.redisbloom_shape()?;
    Some(encode(&shape).expect("a chain's own fields fit RedisBloom's header"))
}

/// The SCANDUMP header listing `shape`'s fields; BadDump if one is wider than the header holds.
fn encode(shape: &RedisBloomShape) -> Result<Vec<u8>, FilterError> {
    let narrow = |value: u64| u32::try_from(value).map_err(|_| FilterError::BadDump);
    let mut header = Vec::new();
    header
        .try_reserve_exact(
            shape
                .links
                .len()
                .checked_mul(LINK_LEN)
                .and_then(|len| len.checked_add(FIXED_LEN))
                .ok_or(FilterError::BadDump)?,
        )
        .map_err(|_| FilterError::OutOfMemory)?;
    header.extend_from_slice(&shape.items.to_le_bytes());
    header.extend_from_slice(&narrow(shape.links.len() as u64)?.to_le_bytes());
    header.extend_from_slice(&narrow(shape.options)?.to_le_bytes());
    header.extend_from_slice(&narrow(shape.expansion)?.to_le_bytes());
    for link in &shape.links {
        header.extend_from_slice(&link.bytes.to_le_bytes());
        header.extend_from_slice(&link.bits.to_le_bytes());
        header.extend_from_slice(&link.items.to_le_bytes());
        header.extend_from_slice(&link.error_rate.to_le_bytes());
        header.extend_from_slice(&link.bits_per_element.to_le_bytes());
        header.extend_from_slice(&narrow(link.hashes)?.to_le_bytes());
        header.extend_from_slice(&link.capacity.to_le_bytes());
        header.push(u8::try_from(link.exponent).map_err(|_| FilterError::BadDump)?);
    }
    Ok(header)
}

/// Little-endian fields off the front of a header; the length was checked beforehand.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        head.try_into().expect("split_at gives N bytes")
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
}

/// An empty chain from RedisBloom's header, refusing anything it does not describe exactly.
pub(super) fn parse(data: &[u8], limit_bytes: u64) -> Result<BloomChain, FilterError> {
    let count = data
        .len()
        .checked_sub(FIXED_LEN)
        .filter(|links| links % LINK_LEN == 0)
        .map(|links| links / LINK_LEN)
        .filter(|&count| count > 0)
        .ok_or(FilterError::BadDump)?;
    let mut fields = Fields(data);
    let items = fields.u64();
    let declared_count = fields.u32();
    let options = fields.u32();
    let expansion = fields.u32();
    let non_scaling = options == OPTIONS_ALWAYS | OPTION_NON_SCALING;
    if declared_count as usize != count
        || !(options == OPTIONS_ALWAYS || non_scaling)
        || (non_scaling && count != 1)
        || (!non_scaling && expansion == 0)
    {
        return Err(FilterError::BadDump);
    }
    let kind = BitsKind::new(Layout::Classic, HashScheme::Murmur);
    let mut links: Vec<LinkSpec> = Vec::with_capacity(count);
    let mut total_bytes = 0u64;
    for _ in 0..count {
        let bytes = fields.u64();
        let bits = fields.u64();
        let items = fields.u64();
        let error_rate = fields.f64();
        let bpe = fields.f64();
        let hashes = fields.u32();
        let capacity = fields.u64();
        let exponent = fields.take::<1>()[0];
        // Grown from the one before, as chain.rs grows links: checked first, as it is cheap and
        // bounds how many different rates a header makes the sizing work out.
        let follows_growth = links
            .last()
            .is_none_or(|previous| previous.grows_into(expansion, capacity, error_rate));
        if !follows_growth || exponent != 0 {
            return Err(FilterError::BadDump);
        }
        let size = LinkSize::for_capacity(capacity, error_rate).ok_or(FilterError::BadDump)?;
        if size.bits != bits
            || bytes.checked_mul(8) != Some(bits)
            || size.hashes != hashes
            || bits_per_element(error_rate).to_bits() != bpe.to_bits()
        {
            return Err(FilterError::BadDump);
        }
        total_bytes = total_bytes.checked_add(bytes).ok_or(FilterError::BadDump)?;
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
    Ok(Chain {
        links: empty_links::<Bits>(kind, &links, total_bytes, limit_bytes)?,
        items,
        expansion: if non_scaling { 0 } else { expansion },
        stated_expansion: expansion,
    })
}

/// A chain as RedisBloom's RDB encoding (module type `MBbloom--`, encoding version 4) lists
/// it: what DUMP, RESTORE and RDB files carry. The same fields as the SCANDUMP header, wider.
#[derive(Debug, Clone, PartialEq)]
pub struct RedisBloomShape {
    pub items: u64,
    pub options: u64,
    pub expansion: u64,
    pub links: Vec<RedisBloomLink>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RedisBloomLink {
    pub capacity: u64,
    pub error_rate: f64,
    pub hashes: u64,
    pub bits_per_element: f64,
    pub bits: u64,
    /// The power-of-two exponent of legacy filters; 0 for every filter sieved can hold.
    pub exponent: u64,
    /// The bit array's length, which the RDB encoding gives as its string's.
    pub bytes: u64,
    pub items: u64,
}

impl BloomChain {
    /// The chain as RedisBloom's RDB encoding describes it; None for a filter RedisBloom
    /// cannot represent (blocked, or hashed with xxh3). Its bit arrays are the payload, link
    /// after link.
    pub fn redisbloom_shape(&self) -> Option<RedisBloomShape> {
        if self.kind().hash() != HashScheme::Murmur {
            return None;
        }
        let options = if self.is_scaling() {
            OPTIONS_ALWAYS
        } else {
            OPTIONS_ALWAYS | OPTION_NON_SCALING
        };
        let links = self
            .links
            .iter()
            .map(|link| RedisBloomLink {
                capacity: link.capacity(),
                error_rate: link.error_rate(),
                hashes: u64::from(link.hashes()),
                bits_per_element: bits_per_element(link.error_rate()),
                bits: link.bits(),
                exponent: 0,
                bytes: link.bytes(),
                items: link.items(),
            })
            .collect();
        Some(RedisBloomShape {
            items: self.items,
            options: u64::from(options),
            expansion: u64::from(self.stated_expansion),
            links,
        })
    }

    /// An empty chain of the shape RedisBloom's RDB encoding describes, checked exactly as its
    /// SCANDUMP header is (and against `limit_bytes`) before anything is allocated.
    pub fn from_redisbloom_shape(
        shape: &RedisBloomShape,
        limit_bytes: u64,
    ) -> Result<BloomChain, FilterError> {
        parse(&encode(shape)?, limit_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::bloom::ChainOptions;
    use super::*;

    fn chain(capacity: u64, expansion: u32, non_scaling: bool, items: u32) -> BloomChain {
        let options = ChainOptions {
            error_rate: 0.01,
            capacity,
            expansion,
            non_scaling,
            layout: Layout::Classic,
            hash: HashScheme::Murmur,
        };
        let mut chain = BloomChain::new(options, u64::MAX).unwrap();
        for i in 0..items {
            let _ = chain.add(format!("item{i}").as_bytes(), u64::MAX);
        }
        chain
    }

    /// RedisBloom 8.8's `BF.SCANDUMP sd 0` after `BF.RESERVE sd 0.01 100`, `BF.MADD sd a b c`
    /// (the reference's appendix).
    #[test]
    fn writes_redisbloom_s_header() {
        let mut chain = chain(100, 2, false, 0);
        for item in [b"a", b"b", b"c"] {
            chain.add(item, u64::MAX).unwrap();
        }
        let header = chain.dump_header();
        assert_eq!(header.len(), 73);
        let mut expected = Vec::new();
        expected.extend_from_slice(&3u64.to_le_bytes());
        expected.extend_from_slice(&1u32.to_le_bytes());
        expected.extend_from_slice(&5u32.to_le_bytes());
        expected.extend_from_slice(&2u32.to_le_bytes());
        expected.extend_from_slice(&144u64.to_le_bytes());
        expected.extend_from_slice(&1152u64.to_le_bytes());
        expected.extend_from_slice(&3u64.to_le_bytes());
        expected.extend_from_slice(b"{\x14\xaeG\xe1zt?\xe9\x86/\xb25\x0e&@\x08\x00");
        assert_eq!(&header[..expected.len()], &expected[..]);
        // Then the hashes, the capacity and a zero exponent.
        assert_eq!(
            &header[60..],
            &[8, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 0][..]
        );
    }

    #[test]
    fn round_trips_with_the_stated_expansion() {
        for (expansion, non_scaling) in [(2, false), (4, false), (2, true), (7, true)] {
            let chain = chain(50, expansion, non_scaling, 400);
            let header = chain.dump_header();
            assert_eq!(&header[16..20], &expansion.to_le_bytes());
            let copy = BloomChain::from_header(&header, u64::MAX).unwrap();
            assert_eq!(copy.dump_header(), header);
            assert_eq!(copy.is_scaling(), !non_scaling);
            let mut payload = Vec::new();
            assert!(chain.read_payload(0, chain.payload_bytes(), &mut payload));
            let mut copy = copy;
            copy.write_payload(0, &payload).unwrap();
            assert!((0..400).all(|i| {
                let item = format!("item{i}");
                copy.contains(item.as_bytes()) || non_scaling
            }));
        }
    }

    /// Every single-bit change of a header is refused or describes the same filter, and no
    /// truncation loads.
    #[test]
    fn corrupt_headers_are_refused() {
        let header = chain(100, 2, false, 500).dump_header();
        for at in 0..header.len() {
            for flip in [0x01, 0x80] {
                let mut bad = header.clone();
                bad[at] ^= flip;
                if let Ok(copy) = BloomChain::from_header(&bad, u64::MAX) {
                    panic!(
                        "byte {at} flipped by {flip:#x} loads: {:?}",
                        copy.links().len()
                    );
                }
            }
        }
        for len in 0..header.len() {
            assert!(BloomChain::from_header(&header[..len], u64::MAX).is_err());
        }
    }

    #[test]
    fn the_rdb_shape_round_trips_and_is_checked() {
        let original = chain(100, 2, false, 500);
        let shape = original.redisbloom_shape().unwrap();
        assert_eq!(shape.links.len(), 3);
        assert_eq!(shape.options, 5);
        let copy = BloomChain::from_redisbloom_shape(&shape, u64::MAX).unwrap();
        assert_eq!(copy.dump_header(), original.dump_header());
        let mut wide = shape.clone();
        wide.expansion = 1 << 32;
        assert!(BloomChain::from_redisbloom_shape(&wide, u64::MAX).is_err());
        let mut legacy = shape.clone();
        legacy.links[0].exponent = 256;
        assert!(BloomChain::from_redisbloom_shape(&legacy, u64::MAX).is_err());
        let mut short = shape;
        short.links[1].bytes -= 8;
        assert!(BloomChain::from_redisbloom_shape(&short, u64::MAX).is_err());
    }

    #[test]
    fn the_size_is_checked_before_allocating() {
        let header = chain(100_000, 2, false, 0).dump_header();
        assert_eq!(
            BloomChain::from_header(&header, 1000).unwrap_err(),
            FilterError::TooLarge {
                bytes: 137_848,
                limit: 1000
            }
        );
    }
}
