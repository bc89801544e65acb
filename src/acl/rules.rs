//! The text of rules: their errors in Redis 7.4's words, the merging of a selector spread over
//! several arguments, and the quoting rules (Redis's `sdssplitargs`) inside a selector.

use super::command_table::c_str;

/// Why one rule was refused. Each is one of Redis's `errno` cases in `ACLSetUser`, and words its
/// message as `ACLSetUserStringError` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    /// ENOENT: `+cmd`, `-cmd` or `+@category` names nothing the table knows.
    UnknownName,
    /// EINVAL: not a rule, or a pattern with a space or a NUL byte.
    Syntax,
    /// EEXIST: a key pattern after `allkeys`.
    KeyPatternAfterAll,
    /// EISDIR: a channel pattern after `allchannels`.
    ChannelPatternAfterAll,
    /// ENODEV: `<pass` or `!hash` of a password the user does not have.
    NoSuchPassword,
    /// EBADMSG: `#` or `!` with something that is not 64 lower-case hex digits.
    BadHash,
    /// EALREADY: the same user twice in the configuration file.
    DuplicateUser,
    /// ECHILD: `+config|get|x`, a first argument of a subcommand.
    FirstArgOfSubcommand,
}

impl RuleError {
    pub fn message(self) -> &'static str {
        match self {
            RuleError::UnknownName => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyPatternAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and \
                 does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelPatternAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid \
                 and does not have any effect. Try 'resetchannels' to start with an empty list of \
                 channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase \
                 hexadecimal characters"
            }
            RuleError::DuplicateUser => {
                "Duplicate user found. A user can only be defined once in config files"
            }
            RuleError::FirstArgOfSubcommand => {
                "Allowing first-arg of a subcommand is not supported"
            }
        }
    }
}

/// Joins a selector written over several arguments, `(~a` `+get)`, into one `(~a +get)`, as
/// Redis does before applying rules. Err holds the index of the argument whose `(` is never
/// closed.
pub(crate) fn merge_selectors(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut merged = Vec::with_capacity(args.len());
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (index, &arg) in args.iter().enumerate() {
        match open.as_mut() {
            None if arg.first() == Some(&b'(') && arg.last() != Some(&b')') => {
                open = Some((index, arg.to_vec()));
            }
            None => merged.push(arg.to_vec()),
            Some((_, selector)) => {
                // Redis appends each later part with "%s": up to its first NUL.
                selector.push(b' ');
                selector.extend_from_slice(c_str(arg));
                if arg.last() == Some(&b')') {
                    merged.push(std::mem::take(selector));
                    open = None;
                }
            }
        }
    }
    match open {
        Some((start, _)) => Err(start),
        None => Ok(merged),
    }
}

/// C's `isspace` in the C locale.
pub(crate) fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// Splits a line into arguments as Redis's `sdssplitargs` does: spaces separate words, `"..."`
/// takes `\n`, `\xHH` and other escapes, `'...'` only `\'`, and a closing quote must end its
/// word. None for unbalanced quotes. The line ends at its first NUL, as a C string.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let line = c_str(line);
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while p < line.len() && is_c_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        loop {
            let c = at(p);
            if in_double {
                if c == b'\\'
                    && at(p + 1) == b'x'
                    && hex(at(p + 2)).is_some()
                    && hex(at(p + 3)).is_some()
                {
                    current.push(hex(at(p + 2))? * 16 + hex(at(p + 3))?);
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    current.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else if in_single {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_c_space(at(p + 1)) {
                        return None;
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    _ => current.push(c),
                }
            }
            p += 1;
        }
        args.push(current);
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Option<Vec<String>> {
        split_args(line.as_bytes()).map(|args| {
            args.into_iter()
                .map(|a| String::from_utf8(a).unwrap())
                .collect()
        })
    }

    #[test]
    fn splitting_follows_sdssplitargs() {
        assert_eq!(split("  a  b\tc ").unwrap(), ["a", "b", "c"]);
        assert_eq!(
            split(r#""a b" 'c d' "\x41\n" 'it\'s'"#).unwrap(),
            ["a b", "c d", "A\n", "it's"]
        );
        assert_eq!(split(r#"x"y z""#).unwrap(), ["xy z"]);
        assert_eq!(split(r#""a"b"#), None);
        assert_eq!(split(r#""open"#), None);
        assert_eq!(split("'open"), None);
        assert_eq!(split("").unwrap(), Vec::<String>::new());
        assert_eq!(split_args(b"a\0 b").unwrap(), [b"a".to_vec()]);
    }

    #[test]
    fn selectors_over_several_arguments_are_joined() {
        let args: Vec<&[u8]> = vec![b"on", b"(~a", b"+get", b"&c)", b"()", b"(x)"];
        let merged = merge_selectors(&args).unwrap();
        assert_eq!(
            merged,
            [
                b"on".to_vec(),
                b"(~a +get &c)".to_vec(),
                b"()".to_vec(),
                b"(x)".to_vec()
            ]
        );
        assert_eq!(
            merge_selectors(&[b"on".as_slice(), b"(~a", b"+get"]),
            Err(1)
        );
        assert_eq!(
            merge_selectors(&[b"(".as_slice(), b")"]).unwrap(),
            [b"( )".to_vec()]
        );
        assert_eq!(merge_selectors(&[b"(".as_slice(), b""]), Err(0));
    }
}
