//! Item hashing and probe positions, below both bit layouts and the counting filter: an item is
//! hashed once, to two 64-bit words, and each layout derives its probes from them. sieved's own
//! scheme takes both words from a 128-bit xxh3; RedisBloom's takes them from two MurmurHash64A
//! passes, so that a classic filter's bits land exactly where RedisBloom puts them. Kept apart
//! from the arrays so that every layout uses it without importing another.

use super::murmur::murmur64a;
use xxhash_rust::xxh3::xxh3_128;

/// How a classic Bloom filter hashes its items. A filter keeps the scheme it was created with,
/// so that filters saved before RedisBloom's scheme existed keep answering as they did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashScheme {
    /// RedisBloom's: MurmurHash64A double hashing, probe i at (h1 + i·h2) mod bits. Its filters,
    /// and their SCANDUMP bytes, are identical to RedisBloom's.
    #[default]
    Murmur,
    /// sieved's own: 128-bit xxh3 with every probe position mixed (`ItemHash::probes`).
    Xxh3,
}

impl HashScheme {
    /// The item's hash under this scheme.
    pub(super) fn item_hash(self, item: &[u8]) -> ItemHash {
        match self {
            HashScheme::Murmur => murmur_item(item),
            HashScheme::Xxh3 => hash_item(item),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            HashScheme::Murmur => "murmur",
            HashScheme::Xxh3 => "xxh3",
        }
    }

    /// A scheme by name, in any case.
    pub fn parse(name: &str) -> Option<HashScheme> {
        [HashScheme::Murmur, HashScheme::Xxh3]
            .into_iter()
            .find(|scheme| scheme.name().eq_ignore_ascii_case(name))
    }
}

/// The two 64-bit words an item hashes to, from which each layout derives the item's probes.
#[derive(Debug, Clone, Copy)]
pub struct ItemHash {
    h1: u64,
    h2: u64,
}

/// RedisBloom's seed for the first MurmurHash64A pass; the second is seeded with the first's
/// result.
const MURMUR_SEED: u64 = 0xc6a4_a793_5bd1_e995;

/// The item's hash under RedisBloom's scheme, for `ItemHash::redisbloom_probes`.
pub(super) fn murmur_item(item: &[u8]) -> ItemHash {
    let h1 = murmur64a(item, MURMUR_SEED);
    ItemHash {
        h1,
        h2: murmur64a(item, h1),
    }
}

/// MurmurHash3's 64-bit finaliser: a bijection whose every output bit depends on every input bit.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

pub(super) fn hash_item(item: &[u8]) -> ItemHash {
    let h = xxh3_128(item);
    ItemHash {
        h1: h as u64,
        h2: (h >> 64) as u64,
    }
}

/// Bits each probe of a blocked layout takes from the hash: one of the 512 bits of a block.
const PROBE_BITS: u32 = 9;
const PROBES_PER_WORD: u32 = 64 / PROBE_BITS;
/// splitmix64's increment: the fractional part of the golden ratio.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl ItemHash {
    /// A placeholder for arrays that are filled before they are read.
    pub(super) const ZERO: ItemHash = ItemHash { h1: 0, h2: 0 };

    /// The positions of this item in a flat array of `slots` bits or counters.
    ///
    /// Plain double hashing (h1 + i·h2 taken straight to a position) correlates the probes of
    /// different items: two items whose steps nearly agree share several bits. With many probes
    /// in a small array that measurably inflates the false-positive rate (by 5 to 20% at error
    /// rates of 1e-4, in tests/it/fpr.rs). Passing each h1 + i·h2 through a 64-bit finaliser makes
    /// the positions behave as independent for the cost of two multiplications per probe. The
    /// positions are mapped onto the array with a multiply-shift instead of a modulo, which is
    /// uniform for any size and avoids a division per probe.
    #[inline]
    pub(super) fn probes(self, slots: u64, hashes: u32) -> impl Iterator<Item = u64> {
        (0..hashes as u64).map(move |i| {
            let x = mix(self.h1.wrapping_add(i.wrapping_mul(self.h2)));
            ((x as u128 * slots as u128) >> 64) as u64
        })
    }

    /// RedisBloom's probe positions in an array of `bits` bits: h1 + i·h2, wrapping, modulo the
    /// size. Unmixed, so it shares plain double hashing's correlation between items (see
    /// `probes`); that is the price of bits identical to RedisBloom's.
    ///
    /// A 64-bit division per probe is most of the cost of a look-up in a cached filter, so the
    /// positions are stepped instead: each adds h2 mod bits, and when the 64-bit sum h1 + i·h2
    /// wraps, takes away 2^64 mod bits. Three divisions per item whatever the hash count, the
    /// same positions as the modulo of each sum (`bits` is below 2^63, so nothing overflows).
    #[inline]
    pub(super) fn redisbloom_probes(self, bits: u64, hashes: u32) -> impl Iterator<Item = u64> {
        let step = self.h2 % bits;
        let wrap = 0u64.wrapping_sub(bits) % bits;
        let (mut sum, mut position) = (self.h1, self.h1 % bits);
        (0..hashes).map(move |i| {
            if i > 0 {
                let (next, wrapped) = sum.overflowing_add(self.h2);
                sum = next;
                position += step;
                if position >= bits {
                    position -= bits;
                }
                if wrapped {
                    position = if position >= wrap {
                        position - wrap
                    } else {
                        position + bits - wrap
                    };
                }
            }
            position
        })
    }

    /// The item's block among `blocks` in the blocked layout: the high half of h1 × blocks,
    /// uniform for any block count and independent of the probes inside the block.
    #[inline]
    pub(super) fn block(self, blocks: usize) -> usize {
        ((self.h1 as u128 * blocks as u128) >> 64) as usize
    }

    /// Calls `probe` on each of the item's bit positions in its block, each below 512: nine bits
    /// of h2 per probe, seven per word, then nine bits at a time of further words drawn from h2
    /// as splitmix64 would. Probes are uniform and independent, and may coincide, which is what
    /// the blocked sizing assumes.
    #[inline(always)]
    pub(super) fn each_block_probe(self, hashes: u32, mut probe: impl FnMut(usize)) {
        let (mut left, mut word, mut drawn) = (hashes, self.h2, 0u64);
        loop {
            let here = left.min(PROBES_PER_WORD);
            for _ in 0..here {
                probe((word & 511) as usize);
                word >>= PROBE_BITS;
            }
            left -= here;
            if left == 0 {
                return;
            }
            drawn += 1;
            word = mix(self.h2.wrapping_add(drawn.wrapping_mul(GOLDEN)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_probes_are_spread_evenly() {
        // Where the probe at each of the first 20 places lands, over 100,000 items.
        let mut counts = [[0u32; 512]; 20];
        for i in 0..100_000u32 {
            let mut place = 0;
            hash_item(&i.to_le_bytes()).each_block_probe(20, |bit| {
                counts[place][bit] += 1;
                place += 1;
            });
        }
        // 195 a bit on average, σ ≈ 14.
        for counts in &counts {
            assert!(
                counts.iter().all(|&c| (120..270).contains(&c)),
                "{counts:?}"
            );
        }
    }

    #[test]
    fn redisbloom_probes_follow_the_model() {
        assert_eq!(murmur_item(b"item0").h1, 0xb695_a0df_ad60_344a);
        let sizes = [1, 64, 11_072, 1 << 40, (1 << 62) + 192, (1 << 63) - 64];
        for i in 0..2000u32 {
            let hash = murmur_item(&i.to_le_bytes());
            for bits in sizes {
                let probes: Vec<u64> = hash.redisbloom_probes(bits, 40).collect();
                let expected: Vec<u64> = (0..40u64)
                    .map(|i| hash.h1.wrapping_add(i.wrapping_mul(hash.h2)) % bits)
                    .collect();
                assert_eq!(probes, expected, "item {i}, {bits} bits");
            }
        }
    }

    #[test]
    fn flat_probes_stay_inside_the_array() {
        for i in 0..1000u32 {
            let hash = hash_item(&i.to_le_bytes());
            assert!(hash.probes(100, 7).all(|p| p < 100));
            assert_eq!(hash.probes(100, 7).count(), 7);
            assert!(hash.block(3) < 3);
        }
    }
}
