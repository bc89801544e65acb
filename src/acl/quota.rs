//! sieved's per-user quotas, spelled as rules only sieved accepts (Redis answers them with
//! `Syntax error`): `maxmemory=<bytes>` and `maxkeys=<count>`. The byte count takes Redis's memory
//! units (`100mb`, `2gb`, `512k`...); `0` means no limit, and is the default. The rules belong to
//! the user, not to a selector: inside `(...)` they are a syntax error. ACL LIST writes them after
//! the passwords, in bytes, and only when set, so a user without quotas reads exactly as in Redis;
//! `reset` clears them. ACL GETUSER of a user with a quota adds, after `selectors`, the fields
//! `maxmemory` and `maxkeys` (integers, 0 for no limit) and then what the keyspace charges to the
//! user, `used-memory` and `used-keys`: the engine keeps the limits, the store the use.

use super::rules::RuleError;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quota {
    /// Bytes of keys this user created, 0 for no limit.
    pub max_memory: u64,
    /// Keys this user created, 0 for no limit.
    pub max_keys: u64,
}

impl Quota {
    /// The quota after `rule`, None when `rule` is not a quota rule at all.
    pub(crate) fn with_rule(self, rule: &[u8]) -> Result<Option<Quota>, RuleError> {
        if let Some(value) = strip_prefix_ignore_case(rule, b"maxmemory=") {
            let max_memory = parse_memory(value).ok_or(RuleError::Syntax)?;
            Ok(Some(Quota { max_memory, ..self }))
        } else if let Some(value) = strip_prefix_ignore_case(rule, b"maxkeys=") {
            let max_keys = parse_count(value).ok_or(RuleError::Syntax)?;
            Ok(Some(Quota { max_keys, ..self }))
        } else {
            Ok(None)
        }
    }

    pub fn is_unlimited(self) -> bool {
        self == Quota::default()
    }

    /// `maxmemory=<bytes> maxkeys=<n> `, each only when set.
    pub(crate) fn describe(self, out: &mut Vec<u8>) {
        if self.max_memory != 0 {
            out.extend_from_slice(format!("maxmemory={} ", self.max_memory).as_bytes());
        }
        if self.max_keys != 0 {
            out.extend_from_slice(format!("maxkeys={} ", self.max_keys).as_bytes());
        }
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    (text.len() >= prefix.len() && text[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &text[prefix.len()..])
}

/// Decimal digits only, no sign: the largest accepted is `i64::MAX`, as Redis's counts.
fn parse_count(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits)
        .ok()?
        .parse::<u64>()
        .ok()
        .filter(|&n| n <= i64::MAX as u64)
}

/// A count of bytes with Redis's units: `b`, `k` (1000), `kb` (1024), `m`, `mb`, `g`, `gb`.
fn parse_memory(text: &[u8]) -> Option<u64> {
    let digits_end = text
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    let multiplier: u64 = match unit.to_ascii_lowercase().as_slice() {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1000 * 1000,
        b"mb" => 1024 * 1024,
        b"g" => 1000 * 1000 * 1000,
        b"gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    parse_count(digits)?
        .checked_mul(multiplier)
        .filter(|&n| n <= i64::MAX as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_rules_parse_with_units_and_render_in_bytes() {
        let quota = Quota::default();
        let quota = quota.with_rule(b"MaxMemory=100mb").unwrap().unwrap();
        let quota = quota.with_rule(b"maxkeys=1000").unwrap().unwrap();
        assert_eq!(
            quota,
            Quota {
                max_memory: 100 << 20,
                max_keys: 1000
            }
        );
        let mut out = Vec::new();
        quota.describe(&mut out);
        assert_eq!(out, b"maxmemory=104857600 maxkeys=1000 ");
        assert_eq!(quota.with_rule(b"~x"), Ok(None));
        for bad in [
            "maxmemory=",
            "maxmemory=-1",
            "maxmemory=1tb",
            "maxkeys=1k",
            "maxkeys= 1",
            "maxmemory=99999999999gb",
            "maxkeys=9223372036854775808",
        ] {
            assert_eq!(
                quota.with_rule(bad.as_bytes()),
                Err(RuleError::Syntax),
                "{bad}"
            );
        }
        assert!(quota.with_rule(b"maxkeys=0").unwrap().unwrap().max_keys == 0);
        assert!(Quota::default().is_unlimited());
    }
}
