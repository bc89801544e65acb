//! Reading a double as a Redis module reads its arguments: the number text side of
//! `reply_double`, shared by the sketch commands and the model their transcripts are checked
//! against.

/// Redis's `string2d` behind `RedisModule_StringToDouble` (`strtod` over the whole word): no
/// leading space, no NaN, nothing that overflows to infinity or underflows to 0; `inf` and
/// hexadecimal as `strtod` reads them.
pub fn module_double(word: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(word).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let (negative, unsigned) = match text.as_bytes()[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = unsigned.to_ascii_lowercase();
    let value = if lower == "inf" || lower == "infinity" {
        f64::INFINITY
    } else if let Some(hex) = lower.strip_prefix("0x") {
        hexadecimal(hex)?
    } else {
        let starts_well = unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.');
        let only_number = unsigned
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'));
        if !starts_well || !only_number {
            return None;
        }
        let value: f64 = unsigned.parse().ok()?;
        let mantissa = unsigned.split(['e', 'E']).next().unwrap_or("");
        let nonzero = mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c));
        if value.is_infinite() || (value == 0.0 && nonzero) {
            return None;
        }
        value
    };
    Some(if negative { -value } else { value })
}

/// A hexadecimal number without its `0x`: digits, an optional point and an optional binary
/// exponent.
fn hexadecimal(text: &str) -> Option<f64> {
    let (digits, exponent) = match text.split_once('p') {
        Some((digits, exponent)) => (digits, exponent.parse::<i32>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut value = 0.0;
    for c in whole.chars() {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in fraction.chars() {
        value += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    let value = value * 2f64.powi(exponent);
    value.is_finite().then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_doubles_as_redis_modules() {
        assert_eq!(module_double(b"0x10"), Some(16.0));
        assert_eq!(module_double(b"+7"), Some(7.0));
        assert_eq!(module_double(b"-2.5e-3"), Some(-0.0025));
        assert_eq!(module_double(b"5e-324"), Some(5e-324));
        assert_eq!(module_double(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(module_double(b".5"), Some(0.5));
        for bad in [
            &b"nan"[..],
            b"1e400",
            b"1e-400",
            b"1,5",
            b"--1",
            b" 1",
            b"x",
            b"",
        ] {
            assert_eq!(module_double(bad), None, "{bad:?}");
        }
    }
}
