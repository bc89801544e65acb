//! Number formatting as Redis's C code prints numbers, where a script can see the text: `%.14g`
//! (Lua's own `tostring`, cjson), Redis's `d2string`/`fpconv_dtoa` (numbers passed to
//! `redis.call`, doubles turned into RESP2 bulk strings), and C's double-to-`long long` cast.

/// C's `printf("%.<precision>g", v)` for a finite or non-finite double (glibc's spelling of
/// infinities and NaN: `inf`, `-inf`, `nan`, `-nan`).
pub(crate) fn format_g(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let p = precision.max(1);
    // Rust's `{:e}` with a precision rounds exactly (as glibc does), which fixes the exponent
    // %g chooses between its two styles with.
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent digits");
    if exp < -4 || exp >= p as i32 {
        let mantissa = strip_fraction_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_fraction_zeros(&format!("{:.*}", decimals, v)).to_string()
    }
}

fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Redis's `double2ll`: the integer a double holds exactly, when it lies in the range Redis
/// trusts the cast in (|d| <= LLONG_MAX/2).
pub(crate) fn double_to_exact_i64(d: f64) -> Option<i64> {
    const HALF: f64 = (i64::MAX / 2) as f64;
    if !(-HALF..=HALF).contains(&d) {
        return None;
    }
    let ll = d as i64;
    (ll as f64 == d).then_some(ll)
}

/// Redis's `fpconv_dtoa`: the shortest digits that read back as `d`, laid out as Redis's
/// `emit_digits` lays them out (plain up to 7 zeros past the digits, `0.000001`-style down to six
/// leading zeros, else `1.5e+20` with at least one exponent digit).
pub(crate) fn shortest_double(d: f64) -> String {
    if d.is_nan() {
        return "nan".to_string();
    }
    if d.is_infinite() {
        return if d < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let neg = d.is_sign_negative();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if d == 0.0 {
        out.push('0');
        return out;
    }
    let sci = format!("{:e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent digits");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let ndigits = digits.len() as i32;
    // fpconv's K: the power of ten of the last digit.
    let k = exp - (ndigits - 1);
    let abs_exp = (k + ndigits - 1).abs();
    if k >= 0 && abs_exp < ndigits + 7 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', k as usize));
        return out;
    }
    if k < 0 && (k > -7 || abs_exp < 4) {
        let offset = ndigits - k.abs();
        if offset <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-offset) as usize));
            out.push_str(&digits);
        } else {
            out.push_str(&digits[..offset as usize]);
            out.push('.');
            out.push_str(&digits[offset as usize..]);
        }
        return out;
    }
    let kept = ndigits.min(18 - i32::from(neg)) as usize;
    out.push_str(&digits[..1]);
    if kept > 1 {
        out.push('.');
        out.push_str(&digits[1..kept]);
    }
    out.push('e');
    out.push(if k + ndigits - 1 < 0 { '-' } else { '+' });
    out.push_str(&abs_exp.to_string());
    out
}

/// Redis's `d2string`: integers as integers, `-0` kept, else [`shortest_double`].
pub(crate) fn d2string(d: f64) -> String {
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    match double_to_exact_i64(d) {
        Some(i) => i.to_string(),
        None => shortest_double(d),
    }
}

/// C's `(long long)d` on x86-64, which Redis uses to turn a Lua number into an integer reply:
/// truncation toward zero, and the "integer indefinite" value `LLONG_MIN` for NaN and for
/// anything out of range (where Rust's `as` would saturate instead).
pub(crate) fn c_double_to_i64(d: f64) -> i64 {
    if d.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_g_matches_printf() {
        let cases: &[(f64, usize, &str)] = &[
            (0.1, 14, "0.1"),
            (1.0 / 3.0, 14, "0.33333333333333"),
            (100.0, 14, "100"),
            (1e14, 14, "1e+14"),
            (123456789012345.0, 14, "1.2345678901234e+14"),
            (12345678901234.0, 14, "12345678901234"),
            (0.0001, 14, "0.0001"),
            (0.00001, 14, "1e-05"),
            (-2.5, 14, "-2.5"),
            (0.0, 14, "0"),
            (-0.0, 14, "-0"),
            (1e300, 14, "1e+300"),
            (1.23456, 3, "1.23"),
            (f64::INFINITY, 14, "inf"),
        ];
        for (v, p, want) in cases {
            assert_eq!(format_g(*v, *p), *want, "{v} %.{p}g");
        }
    }

    #[test]
    fn shortest_matches_fpconv_layout() {
        let cases: &[(f64, &str)] = &[
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e7, "10000000"),
            (1e8, "1e+8"),
            (1e20, "1e+20"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (123.456, "123.456"),
            (-3.25e100, "-3.25e+100"),
            (5e-324, "5e-324"),
        ];
        for (v, want) in cases {
            assert_eq!(shortest_double(*v), *want, "{v}");
        }
        assert_eq!(d2string(3.0), "3");
        assert_eq!(d2string(-0.0), "-0");
    }

    #[test]
    fn c_cast_semantics() {
        assert_eq!(c_double_to_i64(1.9), 1);
        assert_eq!(c_double_to_i64(-1.9), -1);
        assert_eq!(c_double_to_i64(1e30), i64::MIN);
        assert_eq!(c_double_to_i64(f64::NAN), i64::MIN);
    }
}
