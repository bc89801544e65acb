//! The packed encodings Redis stores small collections in, each an RDB string holding a blob:
//! ziplist (Redis 3.2 to 6.2), listpack (7.0 on), intset, and the zipmap of Redis 2.4. Each
//! decoder walks the blob with every offset checked and returns the elements in order, integers
//! as their decimal text (how Redis hands them out); nothing in a blob is trusted.

use super::primitives::{itoa_bytes, RdbError, RdbResult};

const END: u8 = 0xff;

fn invalid(what: &'static str) -> RdbError {
    RdbError::Invalid(what)
}

/// Bounds-checked reads off a blob.
struct Cursor<'a> {
    blob: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    fn new(blob: &'a [u8], at: usize, what: &'static str) -> Cursor<'a> {
        Cursor { blob, at, what }
    }

    fn take(&mut self, len: usize) -> RdbResult<&'a [u8]> {
        let end = self
            .at
            .checked_add(len)
            .filter(|&end| end <= self.blob.len())
            .ok_or(invalid(self.what))?;
        let bytes = &self.blob[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn byte(&mut self) -> RdbResult<u8> {
        Ok(self.take(1)?[0])
    }

    fn peek(&self) -> RdbResult<u8> {
        self.blob.get(self.at).copied().ok_or(invalid(self.what))
    }

    fn le<const N: usize>(&mut self) -> RdbResult<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    /// The end marker, which must be the blob's last byte.
    fn at_end(&self) -> RdbResult<bool> {
        if self.peek()? != END {
            return Ok(false);
        }
        if self.at + 1 != self.blob.len() {
            return Err(invalid(self.what));
        }
        Ok(true)
    }
}

/// Sign-extends the low `bits` of `value`.
fn signed(value: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((value << shift) as i64) >> shift
}

/// A ziplist: `zlbytes` u32, `zltail` u32, `zllen` u16, the entries, 0xff. Each entry is the
/// previous entry's length (1 byte, or 0xfe and 4 bytes), an encoding, and its data.
pub(super) fn ziplist(blob: &[u8]) -> RdbResult<Vec<Vec<u8>>> {
    const WHAT: &str = "a ziplist is invalid";
    let mut cursor = Cursor::new(blob, 0, WHAT);
    if u32::from_le_bytes(cursor.le()?) as usize != blob.len() {
        return Err(invalid(WHAT));
    }
    cursor.take(6)?;
    let mut entries = Vec::new();
    while !cursor.at_end()? {
        if cursor.byte()? == 0xfe {
            cursor.take(4)?;
        }
        let encoding = cursor.byte()?;
        let entry = match encoding >> 6 {
            0 => cursor.take(usize::from(encoding & 0x3f))?.to_vec(),
            1 => {
                let len = usize::from(encoding & 0x3f) << 8 | usize::from(cursor.byte()?);
                cursor.take(len)?.to_vec()
            }
            2 if encoding == 0x80 => {
                let len = u32::from_be_bytes(cursor.le()?) as usize;
                cursor.take(len)?.to_vec()
            }
            2 => return Err(invalid(WHAT)),
            _ => itoa_bytes(match encoding {
                0xc0 => i64::from(i16::from_le_bytes(cursor.le()?)),
                0xd0 => i64::from(i32::from_le_bytes(cursor.le()?)),
                0xe0 => i64::from_le_bytes(cursor.le()?),
                0xf0 => {
                    let [a, b, c] = cursor.le()?;
                    signed(u64::from(u32::from_le_bytes([a, b, c, 0])), 24)
                }
                0xfe => i64::from(cursor.byte()? as i8),
                0xf1..=0xfd => i64::from(encoding & 0x0f) - 1,
                _ => return Err(invalid(WHAT)),
            }),
        };
        entries.push(entry);
    }
    Ok(entries)
}

/// The bytes a listpack entry's back length takes for an entry of `len` bytes.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// A listpack: total bytes u32, element count u16, the entries, 0xff. Each entry is an
/// encoding with its data, then its own length backwards (1 to 5 bytes).
pub(super) fn listpack(blob: &[u8]) -> RdbResult<Vec<Vec<u8>>> {
    const WHAT: &str = "a listpack is invalid";
    let mut cursor = Cursor::new(blob, 0, WHAT);
    if u32::from_le_bytes(cursor.le()?) as usize != blob.len() {
        return Err(invalid(WHAT));
    }
    let count = u16::from_le_bytes(cursor.le()?);
    let mut entries = Vec::new();
    while !cursor.at_end()? {
        let start = cursor.at;
        let first = cursor.byte()?;
        let entry = if first & 0x80 == 0 {
            itoa_bytes(i64::from(first))
        } else if first & 0xc0 == 0x80 {
            cursor.take(usize::from(first & 0x3f))?.to_vec()
        } else if first & 0xe0 == 0xc0 {
            let value = u64::from(first & 0x1f) << 8 | u64::from(cursor.byte()?);
            itoa_bytes(signed(value, 13))
        } else if first & 0xf0 == 0xe0 {
            let len = usize::from(first & 0x0f) << 8 | usize::from(cursor.byte()?);
            cursor.take(len)?.to_vec()
        } else {
            match first {
                0xf0 => {
                    let len = u32::from_le_bytes(cursor.le()?) as usize;
                    cursor.take(len)?.to_vec()
                }
                0xf1 => itoa_bytes(i64::from(i16::from_le_bytes(cursor.le()?))),
                0xf2 => {
                    let [a, b, c] = cursor.le()?;
                    itoa_bytes(signed(u64::from(u32::from_le_bytes([a, b, c, 0])), 24))
                }
                0xf3 => itoa_bytes(i64::from(i32::from_le_bytes(cursor.le()?))),
                0xf4 => itoa_bytes(i64::from_le_bytes(cursor.le()?)),
                _ => return Err(invalid(WHAT)),
            }
        };
        cursor.take(backlen_size(cursor.at - start))?;
        entries.push(entry);
    }
    // 65535 means "count them"; any other count must be right.
    if count != u16::MAX && usize::from(count) != entries.len() {
        return Err(invalid(WHAT));
    }
    Ok(entries)
}

/// An intset: the width of its integers (2, 4 or 8 bytes) and their count as u32, then the
/// integers, little-endian.
pub(super) fn intset(blob: &[u8]) -> RdbResult<Vec<Vec<u8>>> {
    const WHAT: &str = "an intset is invalid";
    let mut cursor = Cursor::new(blob, 0, WHAT);
    let width = u32::from_le_bytes(cursor.le()?) as usize;
    let count = u32::from_le_bytes(cursor.le()?) as usize;
    if !matches!(width, 2 | 4 | 8) || Some(blob.len() - 8) != count.checked_mul(width) {
        return Err(invalid(WHAT));
    }
    Ok(blob[8..]
        .chunks_exact(width)
        .map(|bytes| {
            let mut word = [0u8; 8];
            word[..width].copy_from_slice(bytes);
            itoa_bytes(signed(u64::from_le_bytes(word), width as u32 * 8))
        })
        .collect())
}

/// A zipmap (Redis 2.4's small hashes): a count byte, then each key and value with its length
/// (one byte, or 254 and four), the value also with a byte of free space after it; 0xff ends it.
pub(super) fn zipmap(blob: &[u8]) -> RdbResult<Vec<Vec<u8>>> {
    const WHAT: &str = "a zipmap is invalid";
    let mut cursor = Cursor::new(blob, 1, WHAT);
    let mut entries = Vec::new();
    let length = |cursor: &mut Cursor| -> RdbResult<usize> {
        match cursor.byte()? {
            254 => Ok(u32::from_le_bytes(cursor.le()?) as usize),
            END => Err(invalid(WHAT)),
            len => Ok(usize::from(len)),
        }
    };
    while !cursor.at_end()? {
        let key_len = length(&mut cursor)?;
        entries.push(cursor.take(key_len)?.to_vec());
        let value_len = length(&mut cursor)?;
        let free = usize::from(cursor.byte()?);
        entries.push(cursor.take(value_len)?.to_vec());
        cursor.take(free)?;
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(entries: &[&str]) -> Vec<Vec<u8>> {
        entries.iter().map(|e| e.as_bytes().to_vec()).collect()
    }

    /// `RPUSH l a 1 -2 300 70000 5000000000` as Redis 7 stores it (OBJECT ENCODING listpack).
    #[test]
    fn reads_a_listpack_of_every_encoding() {
        let mut blob = vec![0, 0, 0, 0, 6, 0];
        blob.extend_from_slice(&[0x81, b'a', 2]); // 6-bit string
        blob.extend_from_slice(&[0x01, 1]); // 7-bit uint
        blob.extend_from_slice(&[0xdf, 0xfe, 2]); // 13-bit int -2
        blob.extend_from_slice(&[0xc1, 0x2c, 2]); // 13-bit int 300
        blob.extend_from_slice(&[0xf2, 0x70, 0x11, 0x01, 4]); // 24-bit int 70000
        blob.extend_from_slice(&[0xf4]);
        blob.extend_from_slice(&5_000_000_000i64.to_le_bytes());
        blob.push(9);
        blob.push(0xff);
        let len = blob.len() as u32;
        blob[..4].copy_from_slice(&len.to_le_bytes());
        assert_eq!(
            listpack(&blob).unwrap(),
            strings(&["a", "1", "-2", "300", "70000", "5000000000"])
        );
        // Any truncation or wrong count is refused, never a panic.
        for cut in 0..blob.len() {
            assert!(listpack(&blob[..cut]).is_err());
        }
        blob[4] = 5;
        assert!(listpack(&blob).is_err());
    }

    #[test]
    fn reads_a_ziplist_of_every_encoding() {
        let mut blob = vec![0, 0, 0, 0, 0, 0, 0, 0, 7, 0];
        blob.extend_from_slice(&[0, 0x02, b'h', b'i']);
        blob.extend_from_slice(&[4, 0xf2]); // immediate 1
        blob.extend_from_slice(&[2, 0xfe, 0x9c]); // int8 -100
        blob.extend_from_slice(&[3, 0xc0, 0x2c, 0x01]); // int16 300
        blob.extend_from_slice(&[4, 0xf0, 0x70, 0x11, 0x01]); // int24 70000
        blob.extend_from_slice(&[5, 0xd0]);
        blob.extend_from_slice(&(-70_000_000i32).to_le_bytes());
        blob.extend_from_slice(&[6, 0xe0]);
        blob.extend_from_slice(&i64::MIN.to_le_bytes());
        blob.push(0xff);
        let len = blob.len() as u32;
        blob[..4].copy_from_slice(&len.to_le_bytes());
        assert_eq!(
            ziplist(&blob).unwrap(),
            strings(&[
                "hi",
                "1",
                "-100",
                "300",
                "70000",
                "-70000000",
                &i64::MIN.to_string()
            ])
        );
        for cut in 0..blob.len() {
            assert!(ziplist(&blob[..cut]).is_err());
        }
    }

    #[test]
    fn reads_intsets_and_zipmaps() {
        let mut blob = vec![4, 0, 0, 0, 2, 0, 0, 0];
        blob.extend_from_slice(&(-5i32).to_le_bytes());
        blob.extend_from_slice(&100_000i32.to_le_bytes());
        assert_eq!(intset(&blob).unwrap(), strings(&["-5", "100000"]));
        assert!(intset(&blob[..blob.len() - 1]).is_err());
        let zipmap_blob = [1, 1, b'f', 2, 1, b'v', b'w', 0, 0xff];
        assert_eq!(zipmap(&zipmap_blob).unwrap(), strings(&["f", "vw"]));
        assert!(zipmap(&zipmap_blob[..8]).is_err());
    }
}
