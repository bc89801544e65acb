//! Replies as a small tree, for the command adapter to encode. Where RESP2 and RESP3 differ
//! the adapter picks the form as Redis does for a module: `Nil` is `$-1` or `_`, `Bool` is
//! `:1`/`:0` or `#t`/`#f`, `Double` is a bulk string or `,` (both spelled by `redis_double`),
//! `Map` is a flat array or `%`.

#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `+OK`
    Ok,
    /// A simple string (`+true`, `+[` in `JSON.RESP`).
    Simple(&'static str),
    Bulk(Vec<u8>),
    Integer(i64),
    Double(f64),
    Bool(bool),
    Nil,
    Array(Vec<Answer>),
    /// Keys are bulk strings.
    Map(Vec<(Vec<u8>, Answer)>),
    /// The whole error line, its code included (`ERR ...`, `WRONGTYPE ...`, or RedisJSON's
    /// messages that have none).
    Error(String),
}

impl Answer {
    pub fn bulk(text: impl Into<Vec<u8>>) -> Answer {
        Answer::Bulk(text.into())
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Answer::Error(_))
    }
}

/// A double as Redis 7.4 replies it (`d2string`): `nan`, `inf`, `-inf`, `0`, `-0`; integers
/// within ±2^62 in integer form; otherwise the shortest digits Grisu2 finds (`fpconv_dtoa`),
/// plain up to 7 digits of padding, else in scientific notation (`1e-300`, `1.5e+22`).
pub fn redis_double(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_string();
    }
    if value.is_infinite() {
        return if value < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let half_range = (i64::MAX / 2) as f64;
    if (-half_range..=half_range).contains(&value) {
        let truncated = value as i64;
        if truncated as f64 == value {
            return truncated.to_string();
        }
    }
    grisu::shortest(value)
}

/// Grisu2 as Redis's `fpconv` implements it, which is not always the shortest form `ryu`
/// finds, so it is reproduced step by step.
mod grisu {
    use std::sync::OnceLock;

    const FRACTION_MASK: u64 = 0x000F_FFFF_FFFF_FFFF;
    const EXPONENT_MASK: u64 = 0x7FF0_0000_0000_0000;
    const HIDDEN_BIT: u64 = 0x0010_0000_0000_0000;
    const EXPONENT_BIAS: i32 = 1023 + 52;
    const POWERS: usize = 87;
    const FIRST_POWER: i32 = -348;
    const POWER_STEP: i32 = 8;
    const MIN_EXPONENT: i32 = -60;
    const MAX_EXPONENT: i32 = -32;

    #[derive(Clone, Copy)]
    struct Fp {
        frac: u64,
        exp: i32,
    }

    /// 10^k for k = -348, -340, ..., 340: a 64-bit mantissa (top bit set, rounded to
    /// nearest) and its binary exponent, computed once with exact arithmetic.
    fn cached_powers() -> &'static [Fp] {
        static POWERS_OF_TEN: OnceLock<Vec<Fp>> = OnceLock::new();
        POWERS_OF_TEN.get_or_init(|| {
            (0..POWERS as i32)
                .map(|i| power_of_ten(FIRST_POWER + i * POWER_STEP))
                .collect()
        })
    }

    /// Little-endian base-2^32 digits.
    fn bit_length(n: &[u32]) -> usize {
        match n.iter().rposition(|&d| d != 0) {
            Some(top) => top * 32 + (32 - n[top].leading_zeros() as usize),
            None => 0,
        }
    }

    fn bit(n: &[u32], i: usize) -> u64 {
        u64::from(n.get(i / 32).is_some_and(|d| d >> (i % 32) & 1 == 1))
    }

    /// The 64 bits of `n` from bit `from` down, rounded by the bit below.
    fn top_bits(n: &[u32], from: usize) -> (u64, bool) {
        let mut top: u64 = 0;
        for i in 0..64 {
            top = top << 1 | bit(n, from - i);
        }
        let round_up = from >= 64 && bit(n, from - 64) == 1;
        (top, round_up)
    }

    fn power_of_ten(k: i32) -> Fp {
        let rounded = |top: u64, up: bool, exp: i32| match top.checked_add(u64::from(up)) {
            Some(frac) => Fp { frac, exp },
            None => Fp {
                frac: 1 << 63,
                exp: exp + 1,
            },
        };
        if k >= 0 {
            let mut n = vec![1u32];
            for _ in 0..k {
                let mut carry = 0u64;
                for d in n.iter_mut() {
                    let v = u64::from(*d) * 10 + carry;
                    *d = v as u32;
                    carry = v >> 32;
                }
                if carry > 0 {
                    n.push(carry as u32);
                }
            }
            let len = bit_length(&n);
            if len <= 64 {
                let value = n
                    .iter()
                    .rev()
                    .fold(0u64, |acc, &d| acc << 32 | u64::from(d));
                let shift = 64 - len as u32;
                return Fp {
                    frac: value << shift,
                    exp: -(shift as i32),
                };
            }
            let (top, up) = top_bits(&n, len - 1);
            rounded(top, up, (len - 64) as i32)
        } else {
            // 2^s / 10^m with enough bits, by exact long division by ten, m times.
            let m = (-k) as usize;
            let s = 64 + 4 * m + 8;
            let mut n = vec![0u32; s / 32 + 1];
            n[s / 32] = 1 << (s % 32);
            for _ in 0..m {
                let mut remainder = 0u64;
                for d in n.iter_mut().rev() {
                    let v = remainder << 32 | u64::from(*d);
                    *d = (v / 10) as u32;
                    remainder = v % 10;
                }
            }
            let len = bit_length(&n);
            let (top, up) = top_bits(&n, len - 1);
            rounded(top, up, (len as i32 - 64) - s as i32)
        }
    }

    fn build(d: f64) -> Fp {
        let bits = d.to_bits();
        let frac = bits & FRACTION_MASK;
        let exp = ((bits & EXPONENT_MASK) >> 52) as i32;
        if exp != 0 {
            Fp {
                frac: frac + HIDDEN_BIT,
                exp: exp - EXPONENT_BIAS,
            }
        } else {
            Fp {
                frac,
                exp: 1 - EXPONENT_BIAS,
            }
        }
    }

    fn normalize(mut fp: Fp) -> Fp {
        while fp.frac & HIDDEN_BIT == 0 {
            fp.frac <<= 1;
            fp.exp -= 1;
        }
        fp.frac <<= 11;
        fp.exp -= 11;
        fp
    }

    /// The bounds of the rounding interval around `fp`, with `upper`'s exponent.
    fn boundaries(fp: Fp) -> (Fp, Fp) {
        let mut upper = Fp {
            frac: (fp.frac << 1) + 1,
            exp: fp.exp - 1,
        };
        while upper.frac & (HIDDEN_BIT << 1) == 0 {
            upper.frac <<= 1;
            upper.exp -= 1;
        }
        upper.frac <<= 10;
        upper.exp -= 10;
        let shift = if fp.frac == HIDDEN_BIT { 2 } else { 1 };
        let mut lower = Fp {
            frac: (fp.frac << shift) - 1,
            exp: fp.exp - shift,
        };
        lower.frac <<= lower.exp - upper.exp;
        lower.exp = upper.exp;
        (lower, upper)
    }

    fn multiply(a: Fp, b: Fp) -> Fp {
        const LOW: u64 = 0xFFFF_FFFF;
        let ah_bl = (a.frac >> 32) * (b.frac & LOW);
        let al_bh = (a.frac & LOW) * (b.frac >> 32);
        let al_bl = (a.frac & LOW) * (b.frac & LOW);
        let ah_bh = (a.frac >> 32) * (b.frac >> 32);
        let mut tmp = (ah_bl & LOW) + (al_bh & LOW) + (al_bl >> 32);
        tmp += 1 << 31;
        Fp {
            frac: ah_bh + (ah_bl >> 32) + (al_bh >> 32) + (tmp >> 32),
            exp: a.exp + b.exp + 64,
        }
    }

    fn cached_power(exp: i32) -> (Fp, i32) {
        let approx = (f64::from(-(exp + POWERS as i32)) * 0.301_029_995_663_981_14) as i32;
        let mut index = ((approx - FIRST_POWER) / POWER_STEP) as usize;
        let powers = cached_powers();
        loop {
            let current = exp + powers[index].exp + 64;
            if current < MIN_EXPONENT {
                index += 1;
            } else if current > MAX_EXPONENT {
                index -= 1;
            } else {
                return (powers[index], FIRST_POWER + index as i32 * POWER_STEP);
            }
        }
    }

    const TENS: [u64; 20] = [
        10_000_000_000_000_000_000,
        1_000_000_000_000_000_000,
        100_000_000_000_000_000,
        10_000_000_000_000_000,
        1_000_000_000_000_000,
        100_000_000_000_000,
        10_000_000_000_000,
        1_000_000_000_000,
        100_000_000_000,
        10_000_000_000,
        1_000_000_000,
        100_000_000,
        10_000_000,
        1_000_000,
        100_000,
        10_000,
        1_000,
        100,
        10,
        1,
    ];

    fn round_digit(digits: &mut [u8], delta: u64, mut rem: u64, kappa: u64, frac: u64) {
        let last = digits.len() - 1;
        while rem < frac
            && delta - rem >= kappa
            && (rem + kappa < frac || frac - rem > rem + kappa - frac)
        {
            digits[last] -= 1;
            rem += kappa;
        }
    }

    /// The digits of `w` between `lower` and `upper`, and the decimal exponent to add to `k`.
    fn generate_digits(w: Fp, upper: Fp, lower: Fp, k: &mut i32) -> Vec<u8> {
        let wfrac = upper.frac - w.frac;
        let mut delta = upper.frac - lower.frac;
        let shift = (-upper.exp) as u32;
        let one = 1u64 << shift;
        let mut part1 = upper.frac >> shift;
        let mut part2 = upper.frac & (one - 1);
        let mut digits = Vec::with_capacity(18);
        let mut kappa: i32 = 10;
        for &div in &TENS[10..] {
            let digit = part1 / div;
            if digit != 0 || !digits.is_empty() {
                digits.push(b'0' + digit as u8);
            }
            part1 -= digit * div;
            kappa -= 1;
            let tmp = (part1 << shift) + part2;
            if tmp <= delta {
                *k += kappa;
                round_digit(&mut digits, delta, tmp, div << shift, wfrac);
                return digits;
            }
        }
        let mut unit = 18;
        loop {
            part2 = part2.wrapping_mul(10);
            delta = delta.wrapping_mul(10);
            kappa -= 1;
            let digit = part2 >> shift;
            if digit != 0 || !digits.is_empty() {
                digits.push(b'0' + digit as u8);
            }
            part2 &= one - 1;
            if part2 < delta {
                *k += kappa;
                round_digit(
                    &mut digits,
                    delta,
                    part2,
                    one,
                    wfrac.wrapping_mul(TENS[unit]),
                );
                return digits;
            }
            unit -= 1;
        }
    }

    /// `fpconv_dtoa` for a finite, non-zero double.
    pub(super) fn shortest(d: f64) -> String {
        let negative = d.is_sign_negative();
        let w = build(d);
        let (lower, upper) = boundaries(w);
        let w = normalize(w);
        let (power, k) = cached_power(upper.exp);
        let w = multiply(w, power);
        let mut upper = multiply(upper, power);
        let mut lower = multiply(lower, power);
        lower.frac += 1;
        upper.frac -= 1;
        let mut exponent = -k;
        let digits = generate_digits(w, upper, lower, &mut exponent);
        let mut out = String::with_capacity(24);
        if negative {
            out.push('-');
        }
        emit(&digits, exponent, negative, &mut out);
        out
    }

    fn emit(digits: &[u8], k: i32, negative: bool, out: &mut String) {
        let n = digits.len() as i32;
        let text = |d: &[u8]| String::from_utf8_lossy(d).into_owned();
        let mut exp = (k + n - 1).abs();
        if k >= 0 && exp < n + 7 {
            out.push_str(&text(digits));
            out.extend(std::iter::repeat_n('0', k as usize));
            return;
        }
        if k < 0 && (k > -7 || exp < 4) {
            let offset = n - k.abs();
            if offset <= 0 {
                out.push_str("0.");
                out.extend(std::iter::repeat_n('0', (-offset) as usize));
                out.push_str(&text(digits));
            } else {
                out.push_str(&text(&digits[..offset as usize]));
                out.push('.');
                out.push_str(&text(&digits[offset as usize..]));
            }
            return;
        }
        let n = n.min(18 - i32::from(negative));
        out.push(char::from(digits[0]));
        if n > 1 {
            out.push('.');
            out.push_str(&text(&digits[1..n as usize]));
        }
        out.push('e');
        out.push(if k + n - 1 < 0 { '-' } else { '+' });
        let mut hundreds = 0;
        if exp > 99 {
            hundreds = exp / 100;
            out.push(char::from(b'0' + hundreds as u8));
            exp -= hundreds * 100;
        }
        if exp > 9 {
            let tens = exp / 10;
            out.push(char::from(b'0' + tens as u8));
            exp -= tens * 10;
        } else if hundreds != 0 {
            out.push('0');
        }
        out.push(char::from(b'0' + (exp % 10) as u8));
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn powers_match_fpconv_table() {
            // Entries of Redis's fpconv_powers.h.
            for (index, frac, exp) in [
                (0usize, 18_054_884_314_459_144_840u64, -1220),
                (1, 13_451_937_075_301_367_670, -1193),
                (42, 10_141_204_801_825_835_212, -103),
                (44, 11_258_999_068_426_240_000, -50),
                (46, 12_500_000_000_000_000_000, 3),
                (47, 9_313_225_746_154_785_156, 30),
                (48, 13_877_787_807_814_456_755, 56),
                (85, 16_975_966_327_722_178_521, 1039),
            ] {
                let p = cached_powers()[index];
                assert_eq!((p.frac, p.exp), (frac, exp), "index {index}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_redis_prints_them() {
        for (value, text) in [
            (0.1, "0.1"),
            (-1e-300, "-1e-300"),
            (4_500_000_000_000_019.0, "4500000000000019"),
            (31_500_000_000_000_000.0, "31500000000000000"),
            (-9_223_372_036_854_775_808.0, "-9223372036854776000"),
            (3.0000001, "3.0000001"),
            (-0.000001, "-0.000001"),
            (1003.14159, "1003.14159"),
            (25_000_000_004.5, "25000000004.5"),
            (1e22, "1e+22"),
            (1.5e300, "1.5e+300"),
            (123.456, "123.456"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-0.0, "-0"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(redis_double(value), text, "{value:e}");
        }
    }
}
