//! `save`: the rules for periodic snapshots.

/// Periodic snapshot rules: (seconds, changes) pairs, at most `SaveRules::MAX`. Kept in a fixed
/// array so that `Settings` stays `Copy` and reading it never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SaveRules {
    rules: [(u64, u64); SaveRules::MAX],
    len: usize,
}

impl SaveRules {
    pub const MAX: usize = 8;

    pub fn parse(text: &str) -> Result<SaveRules, String> {
        let numbers: Vec<u64> = text
            .split_whitespace()
            .map(|word| {
                word.parse()
                    .map_err(|_| format!("invalid save parameter '{word}'"))
            })
            .collect::<Result<_, _>>()?;
        if numbers.len() % 2 != 0 {
            return Err("save rules come in pairs: <seconds> <changes>".into());
        }
        if numbers.len() / 2 > Self::MAX {
            return Err(format!("at most {} save rules", Self::MAX));
        }
        let mut rules = SaveRules::default();
        for pair in numbers.chunks(2) {
            rules.rules[rules.len] = (pair[0], pair[1]);
            rules.len += 1;
        }
        Ok(rules)
    }

    pub fn rules(&self) -> &[(u64, u64)] {
        &self.rules[..self.len]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether a snapshot is due, `elapsed_secs` after the last one with `changes` since.
    pub fn due(&self, elapsed_secs: u64, changes: u64) -> bool {
        changes > 0
            && self
                .rules()
                .iter()
                .any(|&(seconds, min_changes)| elapsed_secs >= seconds && changes >= min_changes)
    }
}

impl std::fmt::Display for SaveRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words: Vec<String> = self
            .rules()
            .iter()
            .map(|(s, c)| format!("{s} {c}"))
            .collect();
        f.write_str(&words.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_rules_parse_like_redis() {
        let rules = SaveRules::parse("3600 1 300 100 60 10000").unwrap();
        assert_eq!(rules.to_string(), "3600 1 300 100 60 10000");
        assert!(rules.due(61, 10000));
        assert!(!rules.due(59, 10000));
        assert!(rules.due(3600, 1));
        assert!(!rules.due(3600, 0));
        assert!(SaveRules::parse("").unwrap().is_empty());
        assert!(SaveRules::parse("60").is_err());
        assert!(SaveRules::parse("60 x").is_err());
    }
}
