//! Just enough of Redis's DUMP payload to compare a module value field by field: the RDB
//! version and CRC-64 trailer, the value's type byte, a module type's 64-bit ID (nine name
//! characters and the encoding version) and its opcode-led fields, strings plain, integer
//! encoded or LZF-compressed.

use crate::filter::ModuleField;

/// What a payload holds.
pub(super) enum DumpedValue {
    Module {
        name: String,
        version: u64,
        fields: Vec<ModuleField>,
    },
    /// A value of one of Redis's own types.
    Other,
}

/// The payload's value; None if its trailer is wrong (Redis refuses it before reading).
pub(super) fn decode(payload: &[u8]) -> Option<DumpedValue> {
    let body_len = payload.len().checked_sub(10)?;
    let rdb_version = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    let crc = u64::from_le_bytes(payload[body_len + 2..].try_into().ok()?);
    if rdb_version > 12 || crc64(&payload[..body_len + 2]) != crc {
        return None;
    }
    let mut input = Input(&payload[..body_len]);
    if input.byte()? != 7 {
        return Some(DumpedValue::Other);
    }
    let id = input.length()?;
    const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let name = (0..9)
        .map(|i| char::from(CHARSET[((id >> (10 + 6 * (8 - i))) & 63) as usize]))
        .collect();
    let mut fields = Vec::new();
    loop {
        match input.length()? {
            0 => break,
            2 => fields.push(ModuleField::Unsigned(input.length()?)),
            4 => fields.push(ModuleField::Double(f64::from_le_bytes(
                input.take(8)?.try_into().ok()?,
            ))),
            5 => fields.push(ModuleField::Buffer(input.string()?)),
            _ => return None,
        }
    }
    Some(DumpedValue::Module {
        name,
        version: id & 1023,
        fields,
    })
}

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    /// An RDB length: 6 bits, 14 bits, or 32/64 bits big-endian.
    fn length(&mut self) -> Option<u64> {
        match self.length_or_encoding()? {
            (length, false) => Some(length),
            (_, true) => None,
        }
    }

    /// A length, or (with `true`) a special string encoding's number.
    fn length_or_encoding(&mut self) -> Option<(u64, bool)> {
        let first = self.byte()?;
        Some(match first >> 6 {
            0 => (u64::from(first & 63), false),
            1 => (u64::from(first & 63) << 8 | u64::from(self.byte()?), false),
            2 if first == 0x80 => (
                u64::from(u32::from_be_bytes(self.take(4)?.try_into().ok()?)),
                false,
            ),
            2 if first == 0x81 => (u64::from_be_bytes(self.take(8)?.try_into().ok()?), false),
            3 => (u64::from(first & 63), true),
            _ => return None,
        })
    }

    fn string(&mut self) -> Option<Vec<u8>> {
        let integer = |bytes: &[u8]| -> Option<Vec<u8>> {
            let value = match bytes.len() {
                1 => i64::from(bytes[0] as i8),
                2 => i64::from(i16::from_le_bytes(bytes.try_into().ok()?)),
                _ => i64::from(i32::from_le_bytes(bytes.try_into().ok()?)),
            };
            Some(value.to_string().into_bytes())
        };
        match self.length_or_encoding()? {
            (length, false) => Some(self.take(usize::try_from(length).ok()?)?.to_vec()),
            (0, true) => integer(self.take(1)?),
            (1, true) => integer(self.take(2)?),
            (2, true) => integer(self.take(4)?),
            (3, true) => {
                let compressed = self.length()? as usize;
                let length = self.length()? as usize;
                lzf_decompress(self.take(compressed)?, length)
            }
            _ => None,
        }
    }
}

fn lzf_decompress(input: &[u8], length: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(length);
    let mut at = 0;
    while at < input.len() {
        let control = usize::from(input[at]);
        at += 1;
        if control < 32 {
            out.extend_from_slice(input.get(at..at + control + 1)?);
            at += control + 1;
        } else {
            let mut run = control >> 5;
            if run == 7 {
                run += usize::from(*input.get(at)?);
                at += 1;
            }
            let back = ((control & 31) << 8) + usize::from(*input.get(at)?) + 1;
            at += 1;
            let from = out.len().checked_sub(back)?;
            for i in 0..run + 2 {
                out.push(out[from + i]);
            }
        }
    }
    (out.len() == length).then_some(out)
}

/// Redis's CRC-64 (Jones polynomial, reflected, no final xor), bit by bit.
fn crc64(data: &[u8]) -> u64 {
    const POLYNOMIAL: u64 = 0x95ac_9329_ac4b_c9b5;
    let mut crc = 0u64;
    for &byte in data {
        crc ^= u64::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLYNOMIAL
            } else {
                crc >> 1
            };
        }
    }
    crc
}

#[test]
fn crc64_is_redis_s() {
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
}
