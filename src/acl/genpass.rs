//! ACL GENPASS: a password of `bits` random bits (256 unless said) as lower-case hex, one digit
//! per 4 bits rounded up. The randomness comes from the caller, so the engine does no I/O.

pub const DEFAULT_BITS: i64 = 256;
pub const MAX_BITS: i64 = 4096;

pub const BAD_BITS_MESSAGE: &str = "ACL GENPASS argument must be the number of bits for the \
                                    output password, a positive number up to 4096";

/// `random` fills a buffer with secure random bytes; each gives one hex digit (its low half),
/// as Redis's `getRandomHexChars`. Err for a count of bits out of 1..=4096.
pub fn genpass(bits: i64, random: impl FnOnce(&mut [u8])) -> Result<String, &'static str> {
    if !(1..=MAX_BITS).contains(&bits) {
        return Err(BAD_BITS_MESSAGE);
    }
    let mut bytes = vec![0u8; ((bits + 3) / 4) as usize];
    random(&mut bytes);
    Ok(bytes
        .iter()
        .map(|b| char::from(b"0123456789abcdef"[usize::from(b & 0x0f)]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hex_digit_per_four_bits() {
        let fill = |buf: &mut [u8]| {
            buf.iter_mut()
                .enumerate()
                .for_each(|(i, b)| *b = (i as u8).wrapping_mul(17))
        };
        assert_eq!(genpass(DEFAULT_BITS, fill).unwrap().len(), 64);
        for (bits, len) in [(1, 1), (4, 1), (5, 2), (255, 64), (257, 65), (4096, 1024)] {
            assert_eq!(genpass(bits, fill).unwrap().len(), len);
        }
        assert_eq!(genpass(8, fill).unwrap(), "01");
        for bad in [0, -1, 4097] {
            assert_eq!(genpass(bad, fill), Err(BAD_BITS_MESSAGE));
        }
    }
}
