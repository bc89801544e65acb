//! Sizing a Bloom filter link from its capacity and error rate: classic links with the formulas
//! RedisBloom uses, so that capacities, hash counts and bit counts match it exactly; blocked
//! links as `blocked_sizing` works out.

use super::blocked_sizing::{self, BLOCK_BITS};

/// ln 2 and ln² 2 as the C library behind RedisBloom spells them. Their last digits differ from
/// the exact values, which moves some hash counts (error 0.125 gives 4 hashes, not 3), so they are
/// kept as they are to size filters exactly as RedisBloom does.
#[allow(clippy::approx_constant)]
const LN_2: f64 = 0.693147180559945;
const LN_2_SQUARED: f64 = 0.480453013918201;

/// How a Bloom filter lays out its bits. A filter keeps the layout it was created with; every
/// link of a scaling chain has its chain's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Each probe anywhere in the array, with RedisBloom's sizes.
    #[default]
    Classic,
    /// All probes of an item in one 64-byte block: one cache line per add or look-up, and more
    /// bits for the same error rate.
    Blocked,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Classic => "classic",
            Layout::Blocked => "blocked",
        }
    }

    /// A layout by name, in any case.
    pub fn parse(name: &str) -> Option<Layout> {
        [Layout::Classic, Layout::Blocked]
            .into_iter()
            .find(|layout| layout.name().eq_ignore_ascii_case(name))
    }
}

/// The shape of one link: how many bits, how many probes per item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSize {
    pub bits: u64,
    pub hashes: u32,
}

impl LinkSize {
    /// bits per element = -ln(e) / ln²2; bits = floor(capacity × bpe), at least 1, rounded up to a
    /// whole number of 64-bit words; hashes = ceil(ln2 × bpe).
    /// Returns None when the result is not representable (error rate too small to be finite).
    pub fn for_capacity(capacity: u64, error_rate: f64) -> Option<LinkSize> {
        if !(error_rate > 0.0 && error_rate < 1.0) || capacity == 0 {
            return None;
        }
        let bpe = bits_per_element(error_rate);
        let raw_bits = (capacity as f64 * bpe).floor();
        if !raw_bits.is_finite() || raw_bits >= (u64::MAX / 2) as f64 {
            return None;
        }
        let bits = (raw_bits as u64).max(1).div_ceil(64) * 64;
        let hashes = (LN_2 * bpe).ceil();
        if !(1.0..=u32::MAX as f64).contains(&hashes) {
            return None;
        }
        Some(LinkSize {
            bits,
            hashes: hashes as u32,
        })
    }

    /// The shape of a link of `layout`; for a blocked one, a whole number of blocks.
    pub fn for_layout(layout: Layout, capacity: u64, error_rate: f64) -> Option<LinkSize> {
        match layout {
            Layout::Classic => Self::for_capacity(capacity, error_rate),
            Layout::Blocked => {
                blocked_sizing::blocks_for(capacity, error_rate).map(|(blocks, hashes)| LinkSize {
                    bits: blocks * BLOCK_BITS,
                    hashes,
                })
            }
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bits / 8
    }

    pub fn words(&self) -> usize {
        (self.bits / 64) as usize
    }
}

/// Bits per element for `error_rate`, −ln(e) / ln²2, computed as RedisBloom does: its dump
/// header carries this very double.
pub(super) fn bits_per_element(error_rate: f64) -> f64 {
    -(error_rate.ln() / LN_2_SQUARED)
}

/// Formats a float the way C's `%g` does (six significant digits, trailing zeros dropped,
/// exponent form below 1e-4 or from 1e6), which is how RedisBloom prints error ratios.
pub(crate) fn format_g(value: f64) -> String {
    if value == 0.0 {
        return "0".to_string();
    }
    if !value.is_finite() {
        return if value.is_nan() {
            "nan"
        } else if value > 0.0 {
            "inf"
        } else {
            "-inf"
        }
        .to_string();
    }
    let sci = format!("{:.5e}", value);
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let mantissa = trim_zeros(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (5 - exponent).max(0) as usize;
        trim_zeros(&format!("{value:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_redisbloom_sizes() {
        // (capacity, error) -> (bytes, hashes), from the reference's BF.DEBUG transcripts.
        let cases = [
            (100, 0.005, 144, 8),
            (1000, 0.005, 1384, 8),
            (200, 0.0025, 312, 9),
            (400, 0.00125, 696, 10),
            (800, 0.000625, 1536, 11),
            (1, 0.005, 8, 8),
            (100, 0.125, 56, 4),
            (100, 5e-11, 624, 35),
            (100, 5e-301, 17992, 998),
            (50, 0.05, 40, 5),
            (1000, 0.0005, 1984, 11),
            (10, 0.01, 16, 7),
        ];
        for (capacity, error, bytes, hashes) in cases {
            let size = LinkSize::for_capacity(capacity, error).unwrap();
            assert_eq!(
                (size.bytes(), size.hashes),
                (bytes, hashes),
                "{capacity} {error}"
            );
        }
    }

    #[test]
    fn rejects_unrepresentable() {
        assert_eq!(LinkSize::for_capacity(100, 0.0), None);
        assert_eq!(LinkSize::for_capacity(100, 1.0), None);
        assert_eq!(LinkSize::for_capacity(0, 0.01), None);
        assert_eq!(LinkSize::for_capacity(u64::MAX, 1e-300), None);
    }

    #[test]
    fn formats_like_c_percent_g() {
        let cases = [
            (0.005, "0.005"),
            (0.0025, "0.0025"),
            (0.00125, "0.00125"),
            (0.000625, "0.000625"),
            (5e-11, "5e-11"),
            (5e-301, "5e-301"),
            (0.49995, "0.49995"),
            (0.125, "0.125"),
            (0.0005, "0.0005"),
            (0.01, "0.01"),
            (1234567.0, "1.23457e+06"),
            (100000.0, "100000"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
        ];
        for (value, text) in cases {
            assert_eq!(format_g(value), text);
        }
    }
}
