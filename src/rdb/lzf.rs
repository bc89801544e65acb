//! LZF, the compression Redis applies to RDB strings longer than 20 bytes (`rdbcompression`).
//!
//! A stream is a sequence of runs, each starting with a control byte `c`:
//! - `c < 32`: a literal run, the next `c + 1` bytes copied as they are;
//! - otherwise a back reference: length `c >> 5` (7 meaning "7 plus the next byte"), plus 2;
//!   then one byte `b`; the bytes start `((c & 0x1f) << 8) + b + 1` back in the output, and may
//!   overlap what they produce (a run of one byte repeated).
//!
//! Decompression first walks the stream without writing anything: only a stream whose every
//! reference points inside the output and which produces exactly the declared length gets its
//! output allocated.

/// The longest match one back reference can carry, and how far back it can reach.
const MAX_MATCH: usize = 2 + 7 + 255;
const MAX_OFFSET: usize = 1 << 13;
const MAX_LITERAL: usize = 32;
const HASH_BITS: u32 = 14;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LzfError {
    /// Not an LZF stream, or not one of the declared length.
    Invalid,
    OutOfMemory,
}

/// The length `input` decompresses to, None when a run is cut short or a reference points
/// before the start of the output.
fn decompressed_len(input: &[u8]) -> Option<u64> {
    let (mut at, mut out) = (0usize, 0u64);
    while at < input.len() {
        let control = usize::from(input[at]);
        at += 1;
        if control < MAX_LITERAL {
            at = at
                .checked_add(control + 1)
                .filter(|&end| end <= input.len())?;
            out += control as u64 + 1;
            continue;
        }
        let mut len = control >> 5;
        if len == 7 {
            len += usize::from(*input.get(at)?);
            at += 1;
        }
        let back = ((control & 0x1f) << 8) + usize::from(*input.get(at)?) + 1;
        at += 1;
        if back as u64 > out {
            return None;
        }
        out += len as u64 + 2;
    }
    Some(out)
}

/// Decompresses `input`, which must produce exactly `len` bytes; the caller has held `len` to
/// its limit.
pub(super) fn decompress(input: &[u8], len: usize) -> Result<Vec<u8>, LzfError> {
    if decompressed_len(input) != Some(len as u64) {
        return Err(LzfError::Invalid);
    }
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| LzfError::OutOfMemory)?;
    let mut at = 0;
    while at < input.len() {
        let control = usize::from(input[at]);
        at += 1;
        if control < MAX_LITERAL {
            out.extend_from_slice(&input[at..at + control + 1]);
            at += control + 1;
            continue;
        }
        let mut run = control >> 5;
        if run == 7 {
            run += usize::from(input[at]);
            at += 1;
        }
        let back = ((control & 0x1f) << 8) + usize::from(input[at]) + 1;
        at += 1;
        // A reference may overlap what it produces (a pattern of `back` bytes repeated): what
        // follows `from` is then periodic, so each copy can take all of it, doubling each time.
        let (from, mut left) = (out.len() - back, run + 2);
        while left > 0 {
            let piece = left.min(out.len() - from);
            out.extend_from_within(from..from + piece);
            left -= piece;
        }
    }
    Ok(out)
}

fn hash(input: &[u8], at: usize) -> usize {
    let v = u32::from(input[at]) << 16 | u32::from(input[at + 1]) << 8 | u32::from(input[at + 2]);
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

fn push_literals(out: &mut Vec<u8>, literals: &[u8]) {
    for run in literals.chunks(MAX_LITERAL) {
        out.push((run.len() - 1) as u8);
        out.extend_from_slice(run);
    }
}

/// Compresses `input` as Redis stores a string: only when that saves more than 4 bytes (Redis's
/// own rule), None otherwise.
pub(super) fn compress(input: &[u8]) -> Option<Vec<u8>> {
    let budget = input.len().checked_sub(4).filter(|&budget| budget > 0)?;
    let mut table = vec![0u32; 1 << HASH_BITS];
    let mut out = Vec::with_capacity(budget.min(1 << 20));
    let (mut at, mut literal_start) = (0usize, 0usize);
    while at + 2 < input.len() {
        let slot = hash(input, at);
        let candidate = table[slot] as usize;
        table[slot] = at as u32 + 1;
        if candidate != 0 {
            let from = candidate - 1;
            let offset = at - from - 1;
            if offset < MAX_OFFSET && input[from..from + 3] == input[at..at + 3] {
                let longest = MAX_MATCH.min(input.len() - at);
                let mut len = 3;
                while len < longest && input[from + len] == input[at + len] {
                    len += 1;
                }
                push_literals(&mut out, &input[literal_start..at]);
                let coded = len - 2;
                if coded < 7 {
                    out.push((coded << 5 | offset >> 8) as u8);
                } else {
                    out.push((7 << 5 | offset >> 8) as u8);
                    out.push((coded - 7) as u8);
                }
                out.push(offset as u8);
                at += len;
                literal_start = at;
                if out.len() >= budget {
                    return None;
                }
                continue;
            }
        }
        at += 1;
        // The input is no longer compressible once this many literals are pending.
        if out.len() + (at - literal_start) >= budget {
            return None;
        }
    }
    push_literals(&mut out, &input[literal_start..]);
    (out.len() < budget).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: &[u8]) {
        if let Some(packed) = compress(data) {
            assert!(packed.len() < data.len() - 4);
            assert_eq!(decompress(&packed, data.len()).unwrap(), data);
        }
    }

    #[test]
    fn compresses_and_restores() {
        round_trip(&[0u8; 100_000]);
        round_trip(b"abcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabc");
        let text: Vec<u8> = (0..50_000u32)
            .flat_map(|i| format!("url:{} ", i % 977).into_bytes())
            .collect();
        round_trip(&text);
        assert!(compress(&[0u8; 100_000]).unwrap().len() < 1300);
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 32) as u8
            })
            .collect();
        assert_eq!(compress(&noise), None);
        assert_eq!(compress(b"abcd"), None);
    }

    /// A run of 24 'a's as one literal and one overlapping reference to it.
    #[test]
    fn reads_liblzf_output() {
        let packed = [0x00, b'a', 0xe0, 0x0e, 0x00];
        assert_eq!(decompress(&packed, 24).unwrap(), vec![b'a'; 24]);
    }

    #[test]
    fn refuses_bad_streams() {
        // A reference before the start, a literal run cut short, a wrong declared length.
        assert_eq!(decompress(&[0x20, 0x00], 3), Err(LzfError::Invalid));
        assert_eq!(decompress(&[0x05, b'a'], 6), Err(LzfError::Invalid));
        assert_eq!(decompress(&[0x00, b'a'], 2), Err(LzfError::Invalid));
        assert_eq!(decompress(&[0x00, b'a', 0xe0], 24), Err(LzfError::Invalid));
    }
}
