//! Redis's CRC-64 (the Jones polynomial, reflected, initial value 0, no final xor: the `crc`
//! crate's `CRC_64_REDIS`), which seals DUMP payloads and RDB files. Slice-by-16 tables: an RDB
//! file of gigabytes is checked as fast as it is read.

use crc::{Crc, Digest, Table, CRC_64_REDIS};

static REDIS: Crc<u64, Table<16>> = Crc::<u64, Table<16>>::new(&CRC_64_REDIS);

/// A checksum taken piece by piece, as a file is read.
pub(super) type Running = Digest<'static, u64, Table<16>>;

/// The checksum of `data`.
pub(super) fn checksum(data: &[u8]) -> u64 {
    REDIS.checksum(data)
}

/// A checksum to feed the data to piece by piece.
pub(super) fn running() -> Running {
    REDIS.digest()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redis's own self-test value (crc64.c) for "123456789".
    #[test]
    fn matches_redis_check_value() {
        assert_eq!(checksum(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn continues_across_pieces() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let whole = checksum(&data);
        for split in [0, 1, 7, 8, 9, 500, 999, 1000] {
            let mut running = running();
            running.update(&data[..split]);
            running.update(&data[split..]);
            assert_eq!(running.finalize(), whole);
        }
    }
}
