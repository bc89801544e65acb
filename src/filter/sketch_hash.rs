//! MurmurHash2, the 32-bit hash RedisBloom's Count-Min sketch and Top-K place items with: the
//! sketch's row `i` under seed `i`, Top-K's fingerprints under seed 1919. It lives apart from
//! `murmur.rs` (MurmurHash64A, the Bloom and cuckoo filters' hash) because these two families
//! need this exact function to put every count where RedisBloom puts it.

const M: u32 = 0x5bd1_e995;
const R: u32 = 24;

/// MurmurHash2 of `data` under `seed`, reading 4-byte blocks little-endian as RedisBloom does
/// on x86-64. The length enters the hash as RedisBloom's C `int` does: its low 32 bits.
pub(crate) fn murmur2(data: &[u8], seed: u32) -> u32 {
    let mut h = seed ^ data.len() as u32;
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let mut k = u32::from_le_bytes(block.try_into().expect("chunks_exact gives 4 bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        // The reference falls through from the highest remaining byte down to the first, then
        // multiplies once: the same as xoring the tail in as one little-endian word.
        let mut word = [0u8; 4];
        word[..tail.len()].copy_from_slice(tail);
        h ^= u32::from_le_bytes(word);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

#[cfg(test)]
mod tests {
    use super::murmur2;

    /// Values of the reference C function (RedisBloom's deps/murmur2), compiled here with gcc.
    #[test]
    fn matches_the_reference() {
        let cases: [(&[u8], [u32; 3]); 8] = [
            (b"", [0, 1_250_256_608, 652_948_648]),
            (b"a", [2_456_313_694, 4_064_081_175, 1_545_794_298]),
            (b"ab", [446_775_395, 2_734_393_963, 3_440_733_537]),
            (b"abc", [324_500_635, 3_632_428_247, 2_667_295_395]),
            (b"abcd", [646_393_889, 2_176_146_243, 1_235_291_077]),
            (
                b"hello world",
                [1_151_865_881, 4_221_574_969, 2_241_243_765],
            ),
            (b"i107", [2_107_404_385, 341_861_828, 3_576_601_687]),
            (
                b"\xff\xfe\x80",
                [2_735_668_869, 2_104_615_662, 1_690_344_513],
            ),
        ];
        for (data, [seed0, seed1919, seed6]) in cases {
            assert_eq!(murmur2(data, 0), seed0, "{data:?}");
            assert_eq!(murmur2(data, 1919), seed1919, "{data:?}");
            assert_eq!(murmur2(data, 6), seed6, "{data:?}");
        }
    }
}
