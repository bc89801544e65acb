//! The RDB format's building blocks, read and written: lengths, strings (raw, as integers, or
//! LZF-compressed), doubles, and the input they are read from.
//!
//! Every length is checked before anything is allocated for it: against the bytes left in the
//! input for what is stored as it is, against the caller's limit for what a string expands to.

use super::lzf::{self, LzfError};

/// The first byte's top two bits: a 6-bit length, a 14-bit one, a 32- or 64-bit one in the
/// following bytes (big-endian), or a special encoding of a string in the low 6 bits.
const LEN_6BIT: u8 = 0;
const LEN_14BIT: u8 = 1;
const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;
const ENCODED: u8 = 3;
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// Why bytes could not be read as RDB data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdbError {
    /// The input ends inside a value.
    Truncated,
    /// The bytes do not describe a valid value; says what is wrong.
    Invalid(&'static str),
    /// A value larger than the limit in force.
    TooLarge {
        bytes: u64,
        limit: u64,
    },
    OutOfMemory,
    /// Reading the input failed.
    Io(String),
}

impl std::fmt::Display for RdbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RdbError::Truncated => f.write_str("the data ends early (truncated?)"),
            RdbError::Invalid(what) => f.write_str(what),
            RdbError::TooLarge { bytes, limit } => {
                write!(f, "a value of {bytes} bytes is over the limit of {limit}")
            }
            RdbError::OutOfMemory => f.write_str("not enough memory"),
            RdbError::Io(error) => f.write_str(error),
        }
    }
}

impl std::error::Error for RdbError {}

impl From<LzfError> for RdbError {
    fn from(error: LzfError) -> RdbError {
        match error {
            LzfError::Invalid => RdbError::Invalid("a compressed string is invalid"),
            LzfError::OutOfMemory => RdbError::OutOfMemory,
        }
    }
}

pub type RdbResult<T> = Result<T, RdbError>;

/// Where RDB data is read from: a DUMP payload in memory, or a file.
pub trait Input {
    /// Bytes left: what any length stored as it is must fit in.
    fn remaining(&self) -> u64;
    /// Fills `buf` from the input.
    fn fill(&mut self, buf: &mut [u8]) -> RdbResult<()>;
    /// Passes over `len` bytes.
    fn skip(&mut self, len: u64) -> RdbResult<()>;
}

/// A payload in memory.
pub struct SliceInput<'a>(pub &'a [u8]);

impl Input for SliceInput<'_> {
    fn remaining(&self) -> u64 {
        self.0.len() as u64
    }

    fn fill(&mut self, buf: &mut [u8]) -> RdbResult<()> {
        if buf.len() > self.0.len() {
            return Err(RdbError::Truncated);
        }
        let (head, rest) = self.0.split_at(buf.len());
        buf.copy_from_slice(head);
        self.0 = rest;
        Ok(())
    }

    fn skip(&mut self, len: u64) -> RdbResult<()> {
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= self.0.len())
            .ok_or(RdbError::Truncated)?;
        self.0 = &self.0[len..];
        Ok(())
    }
}

pub fn read_array<const N: usize>(input: &mut (impl Input + ?Sized)) -> RdbResult<[u8; N]> {
    let mut buf = [0u8; N];
    input.fill(&mut buf)?;
    Ok(buf)
}

pub fn read_u8(input: &mut (impl Input + ?Sized)) -> RdbResult<u8> {
    Ok(read_array::<1>(input)?[0])
}

/// `len` bytes, held to what the input has left before they are allocated.
pub(super) fn read_bytes(input: &mut (impl Input + ?Sized), len: u64) -> RdbResult<Vec<u8>> {
    if len > input.remaining() {
        return Err(RdbError::Truncated);
    }
    let len = usize::try_from(len).map_err(|_| RdbError::OutOfMemory)?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(len)
        .map_err(|_| RdbError::OutOfMemory)?;
    bytes.resize(len, 0);
    input.fill(&mut bytes)?;
    Ok(bytes)
}

/// A length field, or the special encoding a string field may have instead.
enum Length {
    Plain(u64),
    Encoded(u8),
}

fn read_length_field(input: &mut (impl Input + ?Sized)) -> RdbResult<Length> {
    let first = read_u8(input)?;
    Ok(match first >> 6 {
        LEN_6BIT => Length::Plain(u64::from(first & 0x3f)),
        LEN_14BIT => Length::Plain(u64::from(first & 0x3f) << 8 | u64::from(read_u8(input)?)),
        ENCODED => Length::Encoded(first & 0x3f),
        _ => match first {
            LEN_32BIT => Length::Plain(u64::from(u32::from_be_bytes(read_array(input)?))),
            LEN_64BIT => Length::Plain(u64::from_be_bytes(read_array(input)?)),
            _ => return Err(RdbError::Invalid("unknown length encoding")),
        },
    })
}

/// A length (or count, or module field).
pub fn read_length(input: &mut (impl Input + ?Sized)) -> RdbResult<u64> {
    match read_length_field(input)? {
        Length::Plain(len) => Ok(len),
        Length::Encoded(_) => Err(RdbError::Invalid("a length is encoded as a string")),
    }
}

/// A count of things each stored in at least `min_bytes`: refused if the input cannot hold
/// them, so that the count can size an allocation.
pub(super) fn read_count(input: &mut (impl Input + ?Sized), min_bytes: u64) -> RdbResult<u64> {
    let count = read_length(input)?;
    if count.saturating_mul(min_bytes) > input.remaining() {
        return Err(RdbError::Truncated);
    }
    Ok(count)
}

/// A string of at most `limit` bytes once decoded.
pub fn read_string(input: &mut (impl Input + ?Sized), limit: u64) -> RdbResult<Vec<u8>> {
    let len = match read_length_field(input)? {
        Length::Plain(len) => len,
        Length::Encoded(ENC_INT8) => return Ok(itoa_bytes(i64::from(read_u8(input)? as i8))),
        Length::Encoded(ENC_INT16) => {
            return Ok(itoa_bytes(i64::from(i16::from_le_bytes(read_array(
                input,
            )?))))
        }
        Length::Encoded(ENC_INT32) => {
            return Ok(itoa_bytes(i64::from(i32::from_le_bytes(read_array(
                input,
            )?))))
        }
        Length::Encoded(ENC_LZF) => {
            let compressed_len = read_length(input)?;
            let len = read_length(input)?;
            if len > limit {
                return Err(RdbError::TooLarge { bytes: len, limit });
            }
            let compressed = read_bytes(input, compressed_len)?;
            let len = usize::try_from(len).map_err(|_| RdbError::OutOfMemory)?;
            return Ok(lzf::decompress(&compressed, len)?);
        }
        Length::Encoded(_) => return Err(RdbError::Invalid("unknown string encoding")),
    };
    if len > limit {
        return Err(RdbError::TooLarge { bytes: len, limit });
    }
    read_bytes(input, len)
}

/// Passes over a string without keeping it.
pub fn skip_string(input: &mut (impl Input + ?Sized)) -> RdbResult<()> {
    match read_length_field(input)? {
        Length::Plain(len) => input.skip(len),
        Length::Encoded(ENC_INT8) => input.skip(1),
        Length::Encoded(ENC_INT16) => input.skip(2),
        Length::Encoded(ENC_INT32) => input.skip(4),
        Length::Encoded(ENC_LZF) => {
            let compressed_len = read_length(input)?;
            read_length(input)?;
            input.skip(compressed_len)
        }
        Length::Encoded(_) => Err(RdbError::Invalid("unknown string encoding")),
    }
}

/// A double stored as its 8 bytes, little-endian.
pub(super) fn read_binary_double(input: &mut (impl Input + ?Sized)) -> RdbResult<f64> {
    Ok(f64::from_le_bytes(read_array(input)?))
}

/// A double as RDB_TYPE_ZSET stores it: a length byte and its text; 253, 254 and 255 stand for
/// NaN, +inf and -inf.
pub(super) fn read_text_double(input: &mut (impl Input + ?Sized)) -> RdbResult<f64> {
    match read_u8(input)? {
        253 => Ok(f64::NAN),
        254 => Ok(f64::INFINITY),
        255 => Ok(f64::NEG_INFINITY),
        len => {
            let text = read_bytes(input, u64::from(len))?;
            parse_double(&text).ok_or(RdbError::Invalid("a score is not a number"))
        }
    }
}

/// A number as Redis's strtod reads a score: decimal, optionally signed, with `inf`.
pub(super) fn parse_double(text: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(text).ok()?;
    match text.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => text.parse::<f64>().ok().filter(|value| !value.is_nan()),
    }
}

pub(super) fn itoa_bytes(value: i64) -> Vec<u8> {
    itoa::Buffer::new().format(value).as_bytes().to_vec()
}

pub(super) fn write_length(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&[(LEN_14BIT << 6) | (len >> 8) as u8, len as u8]);
    } else if let Ok(len) = u32::try_from(len) {
        out.push(LEN_32BIT);
        out.extend_from_slice(&len.to_be_bytes());
    } else {
        out.push(LEN_64BIT);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// A string as Redis writes it: a canonical integer that fits 32 bits as one, one longer than
/// 20 bytes compressed when that saves space, anything else as it is.
pub(super) fn write_string(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() <= 11 {
        if let Some(value) = canonical_integer(bytes) {
            if let Ok(small) = i8::try_from(value) {
                out.extend_from_slice(&[ENCODED << 6 | ENC_INT8, small as u8]);
                return;
            }
            if let Ok(small) = i16::try_from(value) {
                out.push(ENCODED << 6 | ENC_INT16);
                out.extend_from_slice(&small.to_le_bytes());
                return;
            }
            if let Ok(small) = i32::try_from(value) {
                out.push(ENCODED << 6 | ENC_INT32);
                out.extend_from_slice(&small.to_le_bytes());
                return;
            }
        }
    }
    if bytes.len() > 20 {
        if let Some(compressed) = lzf::compress(bytes) {
            out.push(ENCODED << 6 | ENC_LZF);
            write_length(out, compressed.len() as u64);
            write_length(out, bytes.len() as u64);
            out.extend_from_slice(&compressed);
            return;
        }
    }
    write_length(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The integer `bytes` spell, if they are exactly how Redis would print it (no sign on zero,
/// no leading zeros or spaces): only those may be stored as integers.
fn canonical_integer(bytes: &[u8]) -> Option<i64> {
    let value = std::str::from_utf8(bytes).ok()?.parse::<i64>().ok()?;
    (itoa::Buffer::new().format(value).as_bytes() == bytes).then_some(value)
}

pub(super) fn write_binary_double(out: &mut Vec<u8>, value: f64) {
    out.extend_from_slice(&value.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip_in_each_width() {
        for len in [
            0,
            63,
            64,
            16383,
            16384,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            write_length(&mut out, len);
            let mut input = SliceInput(&out);
            assert_eq!(read_length(&mut input).unwrap(), len);
            assert_eq!(input.remaining(), 0);
        }
    }

    #[test]
    fn strings_round_trip_in_each_encoding() {
        let long = vec![b'x'; 1000];
        let cases: [&[u8]; 9] = [
            b"",
            b"hello",
            b"-5",
            b"300",
            b"-70000",
            b"2147483648",
            b"007",
            b"-0",
            &long,
        ];
        for case in cases {
            let mut out = Vec::new();
            write_string(&mut out, case);
            let mut input = SliceInput(&out);
            assert_eq!(read_string(&mut input, 1 << 20).unwrap(), case);
            assert_eq!(input.remaining(), 0);
            let mut input = SliceInput(&out);
            skip_string(&mut input).unwrap();
            assert_eq!(input.remaining(), 0);
        }
        // Integers as integers, the long run compressed.
        let mut out = Vec::new();
        write_string(&mut out, b"300");
        assert_eq!(out, [0xc1, 0x2c, 0x01]);
        out.clear();
        write_string(&mut out, &long);
        assert_eq!(out[0], 0xc3);
    }

    #[test]
    fn lengths_are_held_to_the_input_and_the_limit() {
        let mut out = Vec::new();
        write_length(&mut out, 1 << 40);
        assert_eq!(
            read_string(&mut SliceInput(&out), u64::MAX),
            Err(RdbError::Truncated)
        );
        let mut out = Vec::new();
        write_string(&mut out, &[b'y'; 100]);
        assert_eq!(
            read_string(&mut SliceInput(&out), 99),
            Err(RdbError::TooLarge {
                bytes: 100,
                limit: 99
            })
        );
        // A compressed string claiming a terabyte is refused before anything is allocated.
        let out = [0xc3, 0x02, 0x81, 0, 0, 1, 0, 0, 0, 0, 0, 0x00, b'a'];
        assert!(matches!(
            read_string(&mut SliceInput(&out), 1 << 30),
            Err(RdbError::TooLarge { .. })
        ));
        assert!(read_string(&mut SliceInput(&out), u64::MAX).is_err());
    }
}
