//! CBF.SCANDUMP / CBF.LOADCHUNK: a counting filter as a versioned, checksummed header followed by
//! its counter arrays in chunks. The header has its own magic, so a plain filter's dump cannot be
//! loaded as a counting one or the other way round. It is validated completely, and its total size
//! checked against the limit, before anything is allocated.
//!
//! Header layout (all integers little-endian):
//! ```text
//! offset  size  field
//! 0       8     magic "sievedCB"
//! 8       2     format version, 1
//! 10      1     counter bits: 4 or 8
//! 11      1     flags: bit 0 = non-scaling; other bits must be 0
//! 12      4     expansion (0 exactly when non-scaling)
//! 16      8     items held in the whole chain (the sum of the links' items)
//! 24      4     link count n, at least 1 (exactly 1 when non-scaling)
//! 28      36·n  per link: capacity u64, error rate f64, hashes u32, counters u64, items u64
//! 28+36n  8     xxh3-64 of every byte before it
//! ```
//! Each link's hashes and counters must be what `LinkSize` gives for its capacity and error rate;
//! the first link's error rate must be at most the 0.25 cap, and every later link must have
//! `expansion` times the capacity and half the error rate of the one before, as growth makes them.
//!
//! After the header come the counter arrays, link after link, each `counters × bits / 8` bytes:
//! the packed 64-bit words, each little-endian, so with 4-bit counters byte `k` holds counter `2k`
//! in its low nibble and `2k + 1` in its high nibble. Iterators and chunks work as for BF.SCANDUMP:
//! 0 asks for the header; otherwise iterator − 1 is a byte offset into the concatenated arrays, the
//! iterator returned with a chunk is one past its end, and a chunk (at most `MAX_CHUNK_BYTES`)
//! never spans two links. Saturated counters are not stored: loading counts them from the chunks.

use super::chain::MAX_ERROR_RATE;
use super::counting::{CounterBits, CountingChain, CountingLink};
use super::dump::{chunk_target, payload_pieces, payload_step, DumpStep, Reader};
use super::sizing::LinkSize;
use super::FilterError;
use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 8] = b"sievedCB";
const VERSION: u16 = 1;
const FLAG_NON_SCALING: u8 = 1;
const FIXED_LEN: usize = 28;
const LINK_LEN: usize = 36;
const CHECKSUM_LEN: usize = 8;

impl CountingChain {
    pub fn dump_header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED_LEN + LINK_LEN * self.links.len() + CHECKSUM_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.push(self.counter_bits.bits() as u8);
        out.push(if self.is_scaling() {
            0
        } else {
            FLAG_NON_SCALING
        });
        out.extend_from_slice(&self.expansion.to_le_bytes());
        out.extend_from_slice(&self.items.to_le_bytes());
        out.extend_from_slice(&(self.links.len() as u32).to_le_bytes());
        for link in &self.links {
            out.extend_from_slice(&link.capacity().to_le_bytes());
            out.extend_from_slice(&link.error_rate().to_le_bytes());
            out.extend_from_slice(&link.hashes().to_le_bytes());
            out.extend_from_slice(&link.counters().to_le_bytes());
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
            self.links.iter().map(CountingLink::bytes),
            iterator,
            |link, from, len, out| self.links[link].read_bytes(from, len, out),
        )
    }

    /// Creates an empty chain from a header, refusing any inconsistency.
    pub fn from_header(data: &[u8], limit_bytes: u64) -> Result<CountingChain, FilterError> {
        let header = Header::parse(data)?;
        let mut total = 0u64;
        for spec in &header.links {
            let bytes = header
                .counter_bits
                .bytes_for(spec.size.bits)
                .ok_or(FilterError::BadDump)?;
            total = total.checked_add(bytes).ok_or(FilterError::BadDump)?;
        }
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
            let mut link = CountingLink::with_size(
                spec.size,
                header.counter_bits,
                spec.capacity,
                spec.error_rate,
                u64::MAX,
            )?;
            link.set_items(spec.items);
            links.push(link);
        }
        Ok(CountingChain {
            links,
            items: header.items,
            expansion: header.expansion,
            counter_bits: header.counter_bits,
        })
    }

    /// Writes a chunk that SCANDUMP returned together with `iterator`.
    /// Appends bytes `offset..offset + len` of the links' counter arrays end to end (a snapshot's
    /// payload); false, with nothing appended, if that range is not inside the filter.
    pub fn read_payload(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> bool {
        let links = self.links.iter().map(CountingLink::bytes);
        let Some(pieces) = payload_pieces(links, offset, len) else {
            return false;
        };
        for (link, from, len) in pieces {
            self.links[link].read_bytes(from, len, out);
        }
        true
    }

    /// Overwrites payload bytes at `offset`, the counterpart of `read_payload`.
    pub fn write_payload(&mut self, offset: u64, data: &[u8]) -> Result<(), FilterError> {
        let links = self.links.iter().map(CountingLink::bytes);
        let pieces =
            payload_pieces(links, offset, data.len() as u64).ok_or(FilterError::BadOffset)?;
        let mut data = data;
        for (link, from, len) in pieces {
            let (piece, rest) = data.split_at(len as usize);
            self.links[link].write_bytes(from, piece);
            data = rest;
        }
        Ok(())
    }

    pub fn load_chunk(&mut self, iterator: i64, data: &[u8]) -> Result<(), FilterError> {
        let (link, offset) = chunk_target(
            self.links.iter().map(CountingLink::bytes),
            iterator,
            data.len(),
        )?;
        self.links[link].write_bytes(offset, data);
        Ok(())
    }
}

struct LinkSpec {
    capacity: u64,
    error_rate: f64,
    size: LinkSize,
    items: u64,
}

struct Header {
    counter_bits: CounterBits,
    expansion: u32,
    items: u64,
    links: Vec<LinkSpec>,
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
        if &reader.take::<8>()? != MAGIC || reader.u16()? != VERSION {
            return Err(FilterError::BadDump);
        }
        let [bits, flags] = reader.take::<2>()?;
        let counter_bits = CounterBits::from_bits(u64::from(bits)).ok_or(FilterError::BadDump)?;
        let expansion = reader.u32()?;
        let items = reader.u64()?;
        let count = reader.u32()? as usize;
        let non_scaling = flags == FLAG_NON_SCALING;
        if (flags != 0 && !non_scaling)
            || non_scaling != (expansion == 0)
            || count == 0
            || (non_scaling && count != 1)
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
            let counters = reader.u64()?;
            let items = reader.u64()?;
            let follows_growth = match links.last() {
                None => error_rate <= MAX_ERROR_RATE,
                Some(previous) => {
                    previous.capacity.checked_mul(u64::from(expansion)) == Some(capacity)
                        && previous.error_rate * 0.5 == error_rate
                }
            };
            let size = LinkSize::for_capacity(capacity, error_rate).ok_or(FilterError::BadDump)?;
            if !follows_growth || size.hashes != hashes || size.bits != counters {
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
        if link_items != items {
            return Err(FilterError::BadDump);
        }
        Ok(Header {
            counter_bits,
            expansion,
            items,
            links,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::counting::CountingOptions;
    use super::super::dump::MAX_CHUNK_BYTES;
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

    fn round_trip(chain: &CountingChain) -> CountingChain {
        let mut iterator = 0;
        let mut copy: Option<CountingChain> = None;
        loop {
            let step = chain.dump_chunk(iterator);
            if step.next == 0 {
                break;
            }
            match copy.as_mut() {
                None => copy = Some(CountingChain::from_header(&step.data, u64::MAX).unwrap()),
                Some(copy) => copy.load_chunk(step.next, &step.data).unwrap(),
            }
            iterator = step.next;
        }
        copy.unwrap()
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
            let header = filled(100, 1000, bits).dump_header();
            for at in 0..header.len() {
                for flip in [0x01, 0x80] {
                    let mut bad = header.clone();
                    bad[at] ^= flip;
                    assert!(
                        CountingChain::from_header(&bad, u64::MAX).is_err(),
                        "byte {at}"
                    );
                }
            }
            for len in 0..header.len() {
                assert!(CountingChain::from_header(&header[..len], u64::MAX).is_err());
            }
            assert!(CountingChain::from_header(&header, u64::MAX).is_ok());
        }
    }

    /// Re-signs a header after editing it, to check the rules behind the checksum.
    fn resigned(mut header: Vec<u8>, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        header.truncate(header.len() - CHECKSUM_LEN);
        edit(&mut header);
        let checksum = xxh3_64(&header);
        header.extend_from_slice(&checksum.to_le_bytes());
        header
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
            let bad = resigned(header.clone(), edit);
            assert_eq!(
                CountingChain::from_header(&bad, u64::MAX).err(),
                Some(FilterError::BadDump),
                "{what}"
            );
        }
        let single = filled(100, 10, CounterBits::Four).dump_header();
        let loose = resigned(single, |h| {
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
        let huge = resigned(header, |h| {
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
