//! Redis's CRC-64 (the Jones polynomial, reflected, initial value 0, no final xor), which seals
//! DUMP payloads and RDB files. Slice-by-8 tables built at compile time: an RDB file of
//! gigabytes is checked as fast as it is read.

/// The Jones polynomial 0xad93d23594c935a9, bit-reversed for the reflected algorithm.
const POLY: u64 = 0x95ac_9329_ac4b_c9b5;

const fn tables() -> [[u64; 256]; 8] {
    let mut tables = [[0u64; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        tables[0][i] = crc;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let previous = tables[k - 1][i];
            tables[k][i] = (previous >> 8) ^ tables[0][(previous & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    tables
}

static TABLES: [[u64; 256]; 8] = tables();

/// Continues `crc` over `data`: `update(update(0, a), b) == update(0, a ++ b)`.
pub fn update(mut crc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let word = crc ^ u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        crc = TABLES[7][(word & 0xff) as usize]
            ^ TABLES[6][((word >> 8) & 0xff) as usize]
            ^ TABLES[5][((word >> 16) & 0xff) as usize]
            ^ TABLES[4][((word >> 24) & 0xff) as usize]
            ^ TABLES[3][((word >> 32) & 0xff) as usize]
            ^ TABLES[2][((word >> 40) & 0xff) as usize]
            ^ TABLES[1][((word >> 48) & 0xff) as usize]
            ^ TABLES[0][(word >> 56) as usize];
    }
    for &byte in chunks.remainder() {
        crc = TABLES[0][((crc ^ u64::from(byte)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redis's own self-test value (crc64.c) for "123456789".
    #[test]
    fn matches_redis_check_value() {
        assert_eq!(update(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn continues_across_pieces() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let whole = update(0, &data);
        for split in [0, 1, 7, 8, 9, 500, 999, 1000] {
            assert_eq!(update(update(0, &data[..split]), &data[split..]), whole);
        }
    }
}
