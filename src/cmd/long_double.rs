//! x87 extended precision (a 64-bit mantissa) in software, for INCRBYFLOAT and HINCRBYFLOAT:
//! Redis parses with `strtold`, adds in `long double` and prints with `%.17Lf`, so an f64 sum
//! answers `0.1 + 0.2` with 0.30000000000000004 where Redis answers 0.3. Every step here rounds
//! as the hardware and glibc do (to nearest, ties to even, from the exact value). Subnormal
//! values, which no counter reaches, are refused as out of range, and hexadecimal input is not
//! read.

/// A finite value: (-1)^negative × mantissa × 2^exponent, the mantissa's top bit set (or zero).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Extended {
    negative: bool,
    mantissa: u64,
    exponent: i32,
}

/// The smallest normal value is 2^-16382, the largest just under 2^16384.
const MIN_EXPONENT: i32 = -16382 - 63;
const MAX_EXPONENT: i32 = 16383 - 63;

/// What `strtold` reads from a whole string, as Redis accepts it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Parsed {
    Finite(Extended),
    Infinite,
}

/// A natural number, little-endian in 32-bit words, for the exact steps of parsing and
/// printing.
#[derive(Clone, Debug, Default)]
struct Natural(Vec<u32>);

impl Natural {
    fn from_u128(mut value: u128) -> Natural {
        let mut words = Vec::new();
        while value > 0 {
            words.push(value as u32);
            value >>= 32;
        }
        Natural(words)
    }

    fn mul_add(&mut self, factor: u32, add: u32) {
        let mut carry = u64::from(add);
        for word in &mut self.0 {
            let product = u64::from(*word) * u64::from(factor) + carry;
            *word = product as u32;
            carry = product >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    fn mul_pow10(&mut self, mut power: u32) {
        while power > 0 {
            let step = power.min(9);
            self.mul_add(10u32.pow(step), 0);
            power -= step;
        }
    }

    fn bits(&self) -> u64 {
        self.0.iter().rposition(|&word| word != 0).map_or(0, |top| {
            top as u64 * 32 + 32 - u64::from(self.0[top].leading_zeros())
        })
    }

    fn shl(&self, shift: u64) -> Natural {
        let (words, bits) = ((shift / 32) as usize, (shift % 32) as u32);
        let mut out = vec![0u32; words];
        let mut carry = 0u32;
        for &word in &self.0 {
            out.push((word << bits) | carry);
            carry = if bits == 0 { 0 } else { word >> (32 - bits) };
        }
        out.push(carry);
        Natural(out)
    }

    fn word(&self, index: usize) -> u32 {
        self.0.get(index).copied().unwrap_or(0)
    }

    fn at_least(&self, other: &Natural) -> bool {
        let len = self.0.len().max(other.0.len());
        for index in (0..len).rev() {
            let (a, b) = (self.word(index), other.word(index));
            if a != b {
                return a > b;
            }
        }
        true
    }

    /// self -= other, for self >= other.
    fn sub(&mut self, other: &Natural) {
        let mut borrow = 0i64;
        for index in 0..self.0.len() {
            let difference = i64::from(self.0[index]) - i64::from(other.word(index)) - borrow;
            borrow = i64::from(difference < 0);
            self.0[index] = difference.rem_euclid(1 << 32) as u32;
        }
    }

    fn is_zero(&self) -> bool {
        self.0.iter().all(|&word| word == 0)
    }

    /// Divides by a small number, returning the remainder.
    fn div_small(&mut self, divisor: u32) -> u32 {
        let mut remainder = 0u64;
        for word in self.0.iter_mut().rev() {
            let current = (remainder << 32) | u64::from(*word);
            *word = (current / u64::from(divisor)) as u32;
            remainder = current % u64::from(divisor);
        }
        remainder as u32
    }

    fn to_decimal(&self) -> String {
        let mut rest = self.clone();
        let mut groups = Vec::new();
        while !rest.is_zero() {
            groups.push(rest.div_small(1_000_000_000));
        }
        let mut text = groups.pop().map_or("0".to_string(), |top| top.to_string());
        for group in groups.iter().rev() {
            text.push_str(&format!("{group:09}"));
        }
        text
    }
}

/// Rounds `value` × 2^exponent to 64 bits, to nearest, ties to even; `sticky` says that
/// nonzero bits below `value` were dropped. Returns (mantissa, exponent).
fn round(value: u128, exponent: i32, sticky: bool) -> (u64, i32) {
    let bits = 128 - value.leading_zeros() as i32;
    if bits <= 64 {
        let shift = 64 - bits;
        return (((value << shift) as u64), exponent - shift);
    }
    let shift = bits - 64;
    let kept = (value >> shift) as u64;
    let rest = value & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    let up = rest > half || (rest == half && (sticky || kept & 1 == 1));
    match kept.checked_add(u64::from(up)) {
        Some(mantissa) => (mantissa, exponent + shift),
        None => (1 << 63, exponent + shift + 1),
    }
}

impl Extended {
    pub(super) const ZERO: Extended = Extended {
        negative: false,
        mantissa: 0,
        exponent: 0,
    };

    /// `strtold` on the whole text, refusing what Redis's `string2ld` refuses: leading space,
    /// anything left over, NaN, and values out of range. None when not a valid float.
    pub(super) fn parse(text: &[u8]) -> Option<Parsed> {
        let (negative, body) = match text {
            [b'-', rest @ ..] => (true, rest),
            [b'+', rest @ ..] => (false, rest),
            _ => (false, text),
        };
        if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
            return Some(Parsed::Infinite);
        }
        let mut digits = Natural::default();
        let (mut count, mut scale, mut significant) = (0usize, 0i64, 0usize);
        let mut at = 0;
        let mut seen_point = false;
        while at < body.len() {
            match body[at] {
                b'0'..=b'9' => {
                    let digit = u32::from(body[at] - b'0');
                    if significant > 0 || digit > 0 {
                        digits.mul_add(10, digit);
                        significant += 1;
                    }
                    count += 1;
                    scale -= i64::from(seen_point);
                }
                b'.' if !seen_point => seen_point = true,
                _ => break,
            }
            at += 1;
        }
        if count == 0 {
            return None;
        }
        if at < body.len() {
            let exponent = parse_exponent(&body[at + 1..]).filter(|_| body[at] | 0x20 == b'e')?;
            scale = scale.saturating_add(exponent);
        }
        if digits.is_zero() {
            return Some(Parsed::Finite(Extended {
                negative,
                ..Extended::ZERO
            }));
        }
        // Decimal magnitude: between 10^(significant + scale - 1) and 10^(significant + scale).
        let magnitude = significant as i64 + scale;
        if !(-4960..=4940).contains(&magnitude) {
            return None;
        }
        let (mut numerator, mut denominator) = (digits, Natural::from_u128(1));
        if scale >= 0 {
            numerator.mul_pow10(scale as u32);
        } else {
            denominator.mul_pow10(scale.unsigned_abs() as u32);
        }
        // Scaled so that the quotient has 66 or 67 bits: enough to round to 64.
        let shift = 66 - (numerator.bits() as i64 - denominator.bits() as i64);
        if shift > 0 {
            numerator = numerator.shl(shift as u64);
        } else {
            denominator = denominator.shl(shift.unsigned_abs());
        }
        let mut quotient = 0u128;
        for bit in (0..=67).rev() {
            let step = denominator.shl(bit);
            if numerator.at_least(&step) {
                numerator.sub(&step);
                quotient |= 1 << bit;
            }
        }
        let (mantissa, exponent) = round(quotient, -shift as i32, !numerator.is_zero());
        Extended {
            negative,
            mantissa,
            exponent,
        }
        .checked()
        .map(Parsed::Finite)
    }

    /// None when out of the normal range (an overflow, or a subnormal this does not model).
    fn checked(self) -> Option<Extended> {
        let in_range = (MIN_EXPONENT..=MAX_EXPONENT).contains(&self.exponent);
        (self.mantissa == 0 || in_range).then_some(self)
    }

    /// The sum, rounded once; None when it overflows.
    pub(super) fn add(self, other: Extended) -> Option<Extended> {
        if other.mantissa == 0 {
            return Some(self);
        }
        if self.mantissa == 0 {
            return Some(other);
        }
        let (big, small) = if self.exponent >= other.exponent {
            (self, other)
        } else {
            (other, self)
        };
        // 63 guard bits below each mantissa; bits shifted out of the smaller are jammed into
        // the last one, which keeps every rounding decision exact.
        let a = u128::from(big.mantissa) << 63;
        let distance = (big.exponent - small.exponent) as u32;
        let full = u128::from(small.mantissa) << 63;
        let b = match distance {
            0 => full,
            1..=126 => (full >> distance) | u128::from(full & ((1u128 << distance) - 1) != 0),
            _ => 1,
        };
        let (negative, magnitude) = if big.negative == small.negative {
            (big.negative, a + b)
        } else if a >= b {
            (big.negative, a - b)
        } else {
            (small.negative, b - a)
        };
        if magnitude == 0 {
            return Some(Extended::ZERO);
        }
        let (mantissa, exponent) = round(magnitude, big.exponent - 63, false);
        Extended {
            negative,
            mantissa,
            exponent,
        }
        .checked()
    }

    /// `%.17Lf`: every integer digit and 17 decimals, rounded from the exact value.
    pub(super) fn to_fixed17(self) -> String {
        const SCALE: u128 = 100_000_000_000_000_000;
        let sign = if self.negative { "-" } else { "" };
        if self.exponent >= 0 {
            let integer = Natural::from_u128(u128::from(self.mantissa)).shl(self.exponent as u64);
            return format!("{sign}{}.{:017}", integer.to_decimal(), 0);
        }
        let fraction_bits = self.exponent.unsigned_abs();
        let (mut integer, fraction) = if fraction_bits >= 64 {
            (0, u128::from(self.mantissa))
        } else {
            let mask = (1u64 << fraction_bits) - 1;
            (
                self.mantissa >> fraction_bits,
                u128::from(self.mantissa & mask),
            )
        };
        // fraction × 10^17 < 2^121: below half of 2^fraction_bits from 122 bits on.
        let mut decimals = 0;
        if fraction_bits < 122 {
            let scaled = fraction * SCALE;
            decimals = scaled >> fraction_bits;
            let rest = scaled & ((1u128 << fraction_bits) - 1);
            let half = 1u128 << (fraction_bits - 1);
            if rest > half || (rest == half && decimals & 1 == 1) {
                decimals += 1;
            }
            if decimals == SCALE {
                decimals = 0;
                integer += 1;
            }
        }
        format!("{sign}{integer}.{decimals:017}")
    }
}

/// A float as Redis's `string2ld` reads one: `strtold` over the whole text, shorter than
/// 5 KB. None when not a valid float.
pub(super) fn parse_float(text: &[u8]) -> Option<Parsed> {
    const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;
    (text.len() < MAX_LONG_DOUBLE_CHARS)
        .then(|| Extended::parse(text))
        .flatten()
}

/// Redis's human format for a long double: `%.17Lf`, trailing zeros and point dropped, and
/// "-0" written "0".
pub(super) fn format_float(value: Extended) -> Vec<u8> {
    let mut text = value.to_fixed17();
    let kept = text.trim_end_matches('0').trim_end_matches('.').len();
    text.truncate(kept);
    if text == "-0" {
        text = "0".into();
    }
    text.into_bytes()
}

/// An exponent's digits, with an optional sign; saturated far past any finite value.
fn parse_exponent(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits.iter().fold(0i64, |value, digit| {
        (value * 10 + i64::from(digit - b'0')).min(1 << 40)
    });
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Extended {
        match Extended::parse(text.as_bytes()) {
            Some(Parsed::Finite(value)) => value,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn sum(a: &str, b: &str) -> String {
        parse(a).add(parse(b)).expect("finite").to_fixed17()
    }

    #[test]
    fn sums_print_as_glibc_prints_long_doubles() {
        // Redis 7.0.15's INCRBYFLOAT on x86-64, before it drops trailing zeros.
        for (a, b, expected) in [
            ("0.1", "0.2", "0.30000000000000000"),
            ("10.5", "0.1", "10.60000000000000000"),
            ("5.0e3", "2.0e2", "5200.00000000000000000"),
            ("1000.1", "0", "1000.09999999999999998"),
            ("-1", "0.75", "-0.25000000000000000"),
            (
                "9223372036854775807",
                "1.25",
                "9223372036854775808.00000000000000000",
            ),
            (
                "-9223372036854775808",
                "1.25",
                "-9223372036854775807.00000000000000000",
            ),
            (
                "1e30",
                "1",
                "1000000000000000000024696061952.00000000000000000",
            ),
            ("3.0e-20", "0", "0.00000000000000000"),
            ("-3.0e-20", "0", "-0.00000000000000000"),
            ("0.3", "1e-17", "0.30000000000000001"),
            ("123456.789", "0.000001", "123456.78900099999999895"),
        ] {
            assert_eq!(sum(a, b), expected, "{a} + {b}");
        }
    }

    #[test]
    fn parsing_refuses_what_redis_refuses() {
        for bad in [
            "", "abc", "1e", "1e+", ".", "-", "nan", "1.5x", "e5", "1e5000", "0x10",
        ] {
            assert_eq!(Extended::parse(bad.as_bytes()), None, "{bad}");
        }
        for infinite in ["inf", "-INF", "+Infinity"] {
            assert_eq!(Extended::parse(infinite.as_bytes()), Some(Parsed::Infinite));
        }
        for good in ["1.", ".5", "+1", "-0", "1E+05", "00012.50", "1e4900"] {
            assert!(matches!(
                Extended::parse(good.as_bytes()),
                Some(Parsed::Finite(_))
            ));
        }
    }
}
