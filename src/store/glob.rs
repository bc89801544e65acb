//! Redis-style glob matching for KEYS, SCAN MATCH and CONFIG GET: `*`, `?`, `[abc]`, `[^a-z]`,
//! and `\` escapes. Iterative, with one backtrack point for the last `*`, so a hostile pattern
//! costs at most pattern × text steps and no stack.

pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, t));
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class_match(pattern, p, text[t], nocase) {
                        if matched {
                            p = next;
                            t += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if same(pattern[p + 1], text[t], nocase) {
                        p += 2;
                        t += 1;
                        continue;
                    }
                }
                c => {
                    if same(c, text[t], nocase) {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((star_p, star_t)) => {
                p = star_p;
                t = star_t + 1;
                star = Some((star_p, star_t + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

fn same(a: u8, b: u8, nocase: bool) -> bool {
    a == b || (nocase && a.eq_ignore_ascii_case(&b))
}

/// Matches `c` against the class starting at `pattern[open]` (a `[`); returns whether it matched
/// and where the pattern continues after the class.
fn class_match(pattern: &[u8], open: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let mut i = open + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    loop {
        match *pattern.get(i)? {
            b']' => break,
            b'\\' if i + 1 < pattern.len() => {
                matched |= same(pattern[i + 1], c, nocase);
                i += 2;
            }
            low if pattern.get(i + 1) == Some(&b'-')
                && i + 2 < pattern.len()
                && pattern[i + 2] != b']' =>
            {
                let high = pattern[i + 2];
                let (low, high) = if low <= high {
                    (low, high)
                } else {
                    (high, low)
                };
                let lc = c.to_ascii_lowercase();
                matched |= (low..=high).contains(&c)
                    || (nocase
                        && (low.to_ascii_lowercase()..=high.to_ascii_lowercase()).contains(&lc));
                i += 3;
            }
            other => {
                matched |= same(other, c, nocase);
                i += 1;
            }
        }
    }
    Some((matched != negate, i + 1))
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn matches_like_redis() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            ("*", "", true),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("*a*b*c", "xxaxxbxxc", true),
            ("*a*b*c", "xxaxxbxx", false),
            ("url:*", "url:1", true),
            ("[", "[", false),
            ("a*", "b", false),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(
                glob_match(pattern.as_bytes(), text.as_bytes(), false),
                *expected,
                "{pattern} {text}"
            );
        }
        assert!(glob_match(b"BF-*", b"bf-x", true));
    }

    #[test]
    fn hostile_pattern_finishes() {
        let pattern = "*a".repeat(1000) + "b";
        let text = "a".repeat(5000);
        assert!(!glob_match(pattern.as_bytes(), text.as_bytes(), false));
    }
}
