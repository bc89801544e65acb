//! The text Redis 7.4 gives a double in a reply (`d2string`): RESP2 sends it as a bulk string,
//! RESP3 after `,`. RedisBloom's t-digest and Top-K replies (TDIGEST.QUANTILE, CDF, MIN, ...,
//! TOPK.INFO's decay) are doubles, so matching RedisBloom byte for byte means formatting as
//! Redis does:
//! - `nan`, `inf`, `-inf`, `0` and `-0` spelled out;
//! - an integer-valued double within ±2^62 as that integer (`23000000`, `-10`);
//! - anything else as `fpconv_dtoa` writes it: the digits of Grisu2 (Florian Loitsch's
//!   algorithm with 64-bit arithmetic: usually, but not always, the shortest digits that read
//!   back to the same double, so the digits are Grisu2's own and not another shortest-digits
//!   algorithm's), plain when the decimal exponent is small (`116.331`, `0.0025`), else in
//!   scientific notation with an unpadded exponent (`5.260758333333334e+5`, `2.73e-5`,
//!   `1.7976931348623157e+308`).

/// Redis's text for `value`.
pub fn reply_double_text(value: f64) -> String {
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value < 0.0 { "-inf" } else { "inf" }.into();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Redis prints an integral double within ±(2^63-1)/2 with its integer printer.
    let bound = (i64::MAX / 2) as f64;
    if (-bound..=bound).contains(&value) && (value as i64) as f64 == value {
        return (value as i64).to_string();
    }
    let mut text = String::with_capacity(24);
    if value.is_sign_negative() {
        text.push('-');
    }
    let (digits, exponent) = grisu2(value.abs());
    emit(&digits, exponent, value < 0.0, &mut text);
    text
}

/// A 64-bit significand and binary exponent: the value is `frac × 2^exp`.
#[derive(Clone, Copy)]
struct Fp {
    frac: u64,
    exp: i32,
}

const HIDDEN_BIT: u64 = 1 << 52;

/// 10^k for k = -348, -340, ..., 340, each as the 64-bit significand (top bit set) nearest to it
/// (halves up) and its binary exponent: computed with exact rationals.
const CACHED_POWERS: [(u64, i32); 87] = [
    (0xfa8fd5a0081c0288, -1220),
    (0xbaaee17fa23ebf76, -1193),
    (0x8b16fb203055ac76, -1166),
    (0xcf42894a5dce35ea, -1140),
    (0x9a6bb0aa55653b2d, -1113),
    (0xe61acf033d1a45df, -1087),
    (0xab70fe17c79ac6ca, -1060),
    (0xff77b1fcbebcdc4f, -1034),
    (0xbe5691ef416bd60c, -1007),
    (0x8dd01fad907ffc3c, -980),
    (0xd3515c2831559a83, -954),
    (0x9d71ac8fada6c9b5, -927),
    (0xea9c227723ee8bcb, -901),
    (0xaecc49914078536d, -874),
    (0x823c12795db6ce57, -847),
    (0xc21094364dfb5637, -821),
    (0x9096ea6f3848984f, -794),
    (0xd77485cb25823ac7, -768),
    (0xa086cfcd97bf97f4, -741),
    (0xef340a98172aace5, -715),
    (0xb23867fb2a35b28e, -688),
    (0x84c8d4dfd2c63f3b, -661),
    (0xc5dd44271ad3cdba, -635),
    (0x936b9fcebb25c996, -608),
    (0xdbac6c247d62a584, -582),
    (0xa3ab66580d5fdaf6, -555),
    (0xf3e2f893dec3f126, -529),
    (0xb5b5ada8aaff80b8, -502),
    (0x87625f056c7c4a8b, -475),
    (0xc9bcff6034c13053, -449),
    (0x964e858c91ba2655, -422),
    (0xdff9772470297ebd, -396),
    (0xa6dfbd9fb8e5b88f, -369),
    (0xf8a95fcf88747d94, -343),
    (0xb94470938fa89bcf, -316),
    (0x8a08f0f8bf0f156b, -289),
    (0xcdb02555653131b6, -263),
    (0x993fe2c6d07b7fac, -236),
    (0xe45c10c42a2b3b06, -210),
    (0xaa242499697392d3, -183),
    (0xfd87b5f28300ca0e, -157),
    (0xbce5086492111aeb, -130),
    (0x8cbccc096f5088cc, -103),
    (0xd1b71758e219652c, -77),
    (0x9c40000000000000, -50),
    (0xe8d4a51000000000, -24),
    (0xad78ebc5ac620000, 3),
    (0x813f3978f8940984, 30),
    (0xc097ce7bc90715b3, 56),
    (0x8f7e32ce7bea5c70, 83),
    (0xd5d238a4abe98068, 109),
    (0x9f4f2726179a2245, 136),
    (0xed63a231d4c4fb27, 162),
    (0xb0de65388cc8ada8, 189),
    (0x83c7088e1aab65db, 216),
    (0xc45d1df942711d9a, 242),
    (0x924d692ca61be758, 269),
    (0xda01ee641a708dea, 295),
    (0xa26da3999aef774a, 322),
    (0xf209787bb47d6b85, 348),
    (0xb454e4a179dd1877, 375),
    (0x865b86925b9bc5c2, 402),
    (0xc83553c5c8965d3d, 428),
    (0x952ab45cfa97a0b3, 455),
    (0xde469fbd99a05fe3, 481),
    (0xa59bc234db398c25, 508),
    (0xf6c69a72a3989f5c, 534),
    (0xb7dcbf5354e9bece, 561),
    (0x88fcf317f22241e2, 588),
    (0xcc20ce9bd35c78a5, 614),
    (0x98165af37b2153df, 641),
    (0xe2a0b5dc971f303a, 667),
    (0xa8d9d1535ce3b396, 694),
    (0xfb9b7cd9a4a7443c, 720),
    (0xbb764c4ca7a44410, 747),
    (0x8bab8eefb6409c1a, 774),
    (0xd01fef10a657842c, 800),
    (0x9b10a4e5e9913129, 827),
    (0xe7109bfba19c0c9d, 853),
    (0xac2820d9623bf429, 880),
    (0x80444b5e7aa7cf85, 907),
    (0xbf21e44003acdd2d, 933),
    (0x8e679c2f5e44ff8f, 960),
    (0xd433179d9c8cb841, 986),
    (0x9e19db92b4e31ba9, 1013),
    (0xeb96bf6ebadf77d9, 1039),
    (0xaf87023b9bf0ee6b, 1066),
];
const FIRST_POWER: i32 = -348;
const POWER_STEP: i32 = 8;
/// The window the scaled upper boundary's exponent must fall in for digit generation.
const MIN_EXPONENT: i32 = -60;
const MAX_EXPONENT: i32 = -32;

const POWERS_OF_TEN: [u64; 20] = {
    let mut table = [1u64; 20];
    let mut i = 18;
    loop {
        table[i] = table[i + 1] * 10;
        if i == 0 {
            break table;
        }
        i -= 1;
    }
};

/// The digits of a positive finite `value` and the decimal exponent of the last one.
fn grisu2(value: f64) -> (Vec<u8>, i32) {
    let bits = value.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let mut w = if biased == 0 {
        Fp {
            frac: bits & (HIDDEN_BIT - 1),
            exp: -1074,
        }
    } else {
        Fp {
            frac: (bits & (HIDDEN_BIT - 1)) | HIDDEN_BIT,
            exp: biased - 1075,
        }
    };
    let (lower, upper) = boundaries(w);
    while w.frac & HIDDEN_BIT == 0 {
        w.frac <<= 1;
        w.exp -= 1;
    }
    w.frac <<= 11;
    w.exp -= 11;
    let (power, k) = cached_power(upper.exp);
    let w = multiply(w, power);
    let mut upper = multiply(upper, power);
    let mut lower = multiply(lower, power);
    // Stay strictly inside the rounding interval, whatever the multiplications' errors.
    lower.frac += 1;
    upper.frac -= 1;
    generate_digits(w, upper, lower, -k)
}

/// The neighbours halfway to the next doubles down and up, on the upper one's exponent, with
/// the upper one normalized to a 64-bit significand.
fn boundaries(value: Fp) -> (Fp, Fp) {
    let mut upper = Fp {
        frac: (value.frac << 1) + 1,
        exp: value.exp - 1,
    };
    while upper.frac & (HIDDEN_BIT << 1) == 0 {
        upper.frac <<= 1;
        upper.exp -= 1;
    }
    upper.frac <<= 10;
    upper.exp -= 10;
    // At a power of two the next double down is half as far.
    let shift = if value.frac == HIDDEN_BIT { 2 } else { 1 };
    let lower_exp = value.exp - shift;
    let lower = Fp {
        frac: ((value.frac << shift) - 1) << (lower_exp - upper.exp),
        exp: upper.exp,
    };
    (lower, upper)
}

/// The cached power that brings exponent `exp` into the window, and its decimal exponent.
fn cached_power(exp: i32) -> (Fp, i32) {
    const LOG10_2: f64 = 0.301_029_995_663_981_14;
    let approx = (f64::from(-(exp + 87)) * LOG10_2) as i32;
    let mut index = (approx - FIRST_POWER) / POWER_STEP;
    loop {
        let (frac, power_exp) = CACHED_POWERS[index as usize];
        let scaled = exp + power_exp + 64;
        if scaled < MIN_EXPONENT {
            index += 1;
        } else if scaled > MAX_EXPONENT {
            index -= 1;
        } else {
            return (
                Fp {
                    frac,
                    exp: power_exp,
                },
                FIRST_POWER + index * POWER_STEP,
            );
        }
    }
}

/// The upper 64 bits of the 128-bit product, rounded half up on bit 63 of the lower part.
fn multiply(a: Fp, b: Fp) -> Fp {
    let product = u128::from(a.frac) * u128::from(b.frac) + (1u128 << 63);
    Fp {
        frac: (product >> 64) as u64,
        exp: a.exp + b.exp + 64,
    }
}

fn generate_digits(w: Fp, upper: Fp, lower: Fp, mut exponent: i32) -> (Vec<u8>, i32) {
    let distance = upper.frac - w.frac;
    let mut delta = upper.frac - lower.frac;
    let shift = -upper.exp;
    let one = 1u64 << shift;
    let mut integral = upper.frac >> shift;
    let mut fraction = upper.frac & (one - 1);
    let mut digits = Vec::with_capacity(18);
    let mut kappa = 10;
    // The integral part's digits, from the 10^9 place down.
    for &divisor in &POWERS_OF_TEN[10..] {
        if kappa == 0 {
            break;
        }
        let digit = integral / divisor;
        if digit != 0 || !digits.is_empty() {
            digits.push(b'0' + digit as u8);
        }
        integral -= digit * divisor;
        kappa -= 1;
        let rest = (integral << shift) + fraction;
        if rest <= delta {
            exponent += kappa;
            weed(&mut digits, delta, rest, divisor << shift, distance);
            return (digits, exponent);
        }
    }
    // Then the fraction's, one decimal place at a time.
    let mut unit = 18;
    loop {
        fraction = fraction.wrapping_mul(10);
        delta = delta.wrapping_mul(10);
        kappa -= 1;
        let digit = fraction >> shift;
        if digit != 0 || !digits.is_empty() {
            digits.push(b'0' + digit as u8);
        }
        fraction &= one - 1;
        if fraction < delta {
            exponent += kappa;
            weed(
                &mut digits,
                delta,
                fraction,
                one,
                distance.wrapping_mul(POWERS_OF_TEN[unit]),
            );
            return (digits, exponent);
        }
        unit -= 1;
    }
}

/// Lowers the last digit while that brings the digits closer to the value and keeps them
/// inside the interval.
fn weed(digits: &mut [u8], delta: u64, mut rest: u64, step: u64, distance: u64) {
    let last = digits.len() - 1;
    while rest < distance
        && delta.wrapping_sub(rest) >= step
        && (rest.wrapping_add(step) < distance
            || distance.wrapping_sub(rest) > rest.wrapping_add(step).wrapping_sub(distance))
    {
        digits[last] -= 1;
        rest = rest.wrapping_add(step);
    }
}

/// Writes `digits × 10^exponent` as fpconv does: a plain integer, a plain decimal, or
/// scientific notation.
fn emit(digits: &[u8], exponent: i32, negative: bool, text: &mut String) {
    let count = digits.len() as i32;
    let decimal_exponent = (exponent + count - 1).abs();
    let as_str = |digits: &[u8]| {
        std::str::from_utf8(digits)
            .expect("ASCII digits")
            .to_owned()
    };
    if exponent >= 0 && decimal_exponent < count + 7 {
        text.push_str(&as_str(digits));
        text.extend(std::iter::repeat_n('0', exponent as usize));
        return;
    }
    if exponent < 0 && (exponent > -7 || decimal_exponent < 4) {
        let point = count + exponent;
        if point <= 0 {
            text.push_str("0.");
            text.extend(std::iter::repeat_n('0', (-point) as usize));
            text.push_str(&as_str(digits));
        } else {
            text.push_str(&as_str(&digits[..point as usize]));
            text.push('.');
            text.push_str(&as_str(&digits[point as usize..]));
        }
        return;
    }
    let count = count.min(18 - i32::from(negative));
    let digits = &digits[..count as usize];
    text.push(char::from(digits[0]));
    if count > 1 {
        text.push('.');
        text.push_str(&as_str(&digits[1..]));
    }
    text.push('e');
    text.push(if exponent + count - 1 < 0 { '-' } else { '+' });
    text.push_str(&decimal_exponent.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replies recorded from Redis 7.4.1 with RedisBloom 8.8 (the sketch transcripts).
    #[test]
    fn formats_as_redis() {
        for (value, text) in [
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (0.0, "0"),
            (-0.0, "-0"),
            (0.9, "0.9"),
            (1.0, "1"),
            (-10.0, "-10"),
            (23_000_000.0, "23000000"),
            (5_700_000_000_000.0, "5700000000000"),
            (116.331, "116.331"),
            (2.730_000_000_000_000_6e-5, "2.7300000000000006e-5"),
            (526_075.833_333_333_4, "5.260758333333334e+5"),
            (-1e300, "-1e+300"),
            (1e300, "1e+300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (123_456_789.123_456_79, "1.2345678912345679e+8"),
            (-19.450_011_904_761_908, "-19.450011904761908"),
            (-0.999_999_753_333_333_4, "-0.9999997533333334"),
            (5e-324, "5e-324"),
            (0.0025, "0.0025"),
            (1e-7, "1e-7"),
            (2.5e-3, "0.0025"),
            (4_611_686_018_427_387_904.0, "4611686018427387904"),
            (-4_611_686_018_427_387_904.0, "-4611686018427387904"),
            (9_223_372_036_854_775_808.0, "9223372036854776000"),
            (1e20, "1e+20"),
            (1.5e-300, "1.5e-300"),
        ] {
            assert_eq!(reply_double_text(value), text, "{value:e}");
        }
    }

    /// Every digit string reads back as the double it came from.
    #[test]
    fn round_trips() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = f64::from_bits(state);
            if !value.is_finite() {
                continue;
            }
            let text = reply_double_text(value);
            assert_eq!(text.parse::<f64>().unwrap(), value, "{text}");
        }
    }

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
            assert_eq!(CACHED_POWERS[index], (frac, exp), "index {index}");
        }
    }

    /// The table against exact integer powers where 128 bits hold them, and against log10
    /// elsewhere.
    #[test]
    fn the_cached_powers_are_powers_of_ten() {
        for (index, &(frac, exp)) in CACHED_POWERS.iter().enumerate() {
            let k = FIRST_POWER + index as i32 * POWER_STEP;
            assert!(frac >> 63 == 1, "10^{k} not normalized");
            if (0..=36).contains(&k) {
                let exact = 10u128.pow(k as u32);
                let scaled = if exp < 0 {
                    exact << -exp
                } else {
                    (exact + (1u128 << exp >> 1)) >> exp
                };
                assert_eq!(scaled, u128::from(frac), "10^{k}");
            } else {
                let log = (frac as f64).log10() + f64::from(exp) * 2f64.log10();
                assert!((log - f64::from(k)).abs() < 1e-9, "10^{k}: {log}");
            }
        }
    }
}
