//! Script flags and the shebang lines that declare them: `#!lua flags=no-writes,...` on an EVAL
//! body, `#!lua name=<library>` on a FUNCTION library, each parsed and refused as Redis 7.4's
//! `evalExtractShebangFlags` and `functionExtractLibMetaData` do.

/// The flags a script or function declares (Redis's `SCRIPT_FLAG_*`), which the command layer
/// applies before running it (no-writes refuses writes and runs on replicas, allow-oom runs under
/// maxmemory, ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScriptFlags(u8);

impl ScriptFlags {
    pub const NO_WRITES: ScriptFlags = ScriptFlags(1);
    pub const ALLOW_OOM: ScriptFlags = ScriptFlags(1 << 1);
    pub const ALLOW_STALE: ScriptFlags = ScriptFlags(1 << 2);
    pub const NO_CLUSTER: ScriptFlags = ScriptFlags(1 << 3);
    /// An EVAL body without a shebang: Redis's backwards-compatible mode, where the command's
    /// own flags (not the script's) decide.
    pub const EVAL_COMPAT_MODE: ScriptFlags = ScriptFlags(1 << 4);
    pub const ALLOW_CROSS_SLOT_KEYS: ScriptFlags = ScriptFlags(1 << 5);

    /// The flags a script can name, in Redis's order (FUNCTION LIST prints them in it).
    pub const NAMED: [(ScriptFlags, &'static str); 5] = [
        (ScriptFlags::NO_WRITES, "no-writes"),
        (ScriptFlags::ALLOW_OOM, "allow-oom"),
        (ScriptFlags::ALLOW_STALE, "allow-stale"),
        (ScriptFlags::NO_CLUSTER, "no-cluster"),
        (ScriptFlags::ALLOW_CROSS_SLOT_KEYS, "allow-cross-slot-keys"),
    ];

    pub const fn empty() -> ScriptFlags {
        ScriptFlags(0)
    }

    pub const fn contains(self, other: ScriptFlags) -> bool {
        self.0 & other.0 == other.0
    }

    pub const fn union(self, other: ScriptFlags) -> ScriptFlags {
        ScriptFlags(self.0 | other.0)
    }

    /// The names of the set flags, in Redis's order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        ScriptFlags::NAMED
            .into_iter()
            .filter(move |(flag, _)| self.contains(*flag))
            .map(|(_, name)| name)
    }

    /// A flag by its name: exactly as written for an EVAL shebang, any case for
    /// `redis.register_function` (Redis compares with strcmp in one, strcasecmp in the other).
    pub(crate) fn by_name(name: &[u8], any_case: bool) -> Option<ScriptFlags> {
        ScriptFlags::NAMED.into_iter().find_map(|(flag, known)| {
            let same = if any_case {
                name.eq_ignore_ascii_case(known.as_bytes())
            } else {
                name == known.as_bytes()
            };
            same.then_some(flag)
        })
    }
}

/// The flags an EVAL body declares, and the length of its shebang line (without its newline,
/// which Redis keeps so that line numbers stay the user's). Errors are Redis's messages, without
/// the `ERR ` its reply adds.
pub(crate) fn eval_flags(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags::EVAL_COMPAT_MODE, 0));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("Invalid script shebang".to_string());
    };
    let parts = match split_args(&body[..end]) {
        Some(parts) if !parts.is_empty() => parts,
        _ => return Err("Invalid engine in script shebang".to_string()),
    };
    if parts[0] != b"#!lua" {
        return Err(format!(
            "Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(&parts[0])
        ));
    }
    let mut flags = ScriptFlags::empty();
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(format!(
                "Unknown lua shebang option: {}",
                String::from_utf8_lossy(part)
            ));
        };
        if list.is_empty() {
            continue;
        }
        for name in list.split(|&b| b == b',') {
            match ScriptFlags::by_name(name, false) {
                Some(flag) => flags = flags.union(flag),
                None => {
                    return Err(format!(
                        "Unexpected flag in script shebang: {}",
                        String::from_utf8_lossy(name)
                    ))
                }
            }
        }
    }
    Ok((flags, end))
}

/// A FUNCTION library's shebang: its engine name (after `#!`), its library name, and the code
/// that follows (from the shebang's newline on, so line numbers stay the user's).
pub(crate) struct LibraryMetadata<'a> {
    pub(crate) engine: Vec<u8>,
    pub(crate) name: Vec<u8>,
    pub(crate) code: &'a [u8],
}

pub(crate) fn library_metadata(payload: &[u8]) -> Result<LibraryMetadata<'_>, String> {
    if !payload.starts_with(b"#!") {
        return Err("Missing library metadata".to_string());
    }
    let Some(end) = payload.iter().position(|&b| b == b'\n') else {
        return Err("Invalid library metadata".to_string());
    };
    let parts = match split_args(&payload[..end]) {
        Some(parts) if !parts.is_empty() => parts,
        _ => return Err("Invalid library metadata".to_string()),
    };
    let engine = parts[0].get(2..).unwrap_or_default().to_vec();
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".to_string(),
                );
            }
            name = Some(part[5..].to_vec());
            continue;
        }
        return Err(format!(
            "Invalid metadata value given: {}",
            String::from_utf8_lossy(part)
        ));
    }
    let Some(name) = name else {
        return Err("Library name was not given".to_string());
    };
    Ok(LibraryMetadata {
        engine,
        name,
        code: &payload[end..],
    })
}

/// Redis's `sdssplitargs`: words split on whitespace, with "double quotes" (C escapes, `\xHH`)
/// and 'single quotes'; `None` for unbalanced quotes or a closing quote not followed by a space.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && is_c_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Some(out);
        }
        let mut word = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        loop {
            if in_double {
                if i >= line.len() {
                    return None;
                }
                let c = line[i];
                if c == b'\\'
                    && i + 3 < line.len()
                    && line[i + 1] == b'x'
                    && line[i + 2].is_ascii_hexdigit()
                    && line[i + 3].is_ascii_hexdigit()
                {
                    let hex = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
                    word.push(hex(line[i + 2]) * 16 + hex(line[i + 3]));
                    i += 3;
                } else if c == b'\\' && i + 1 < line.len() {
                    i += 1;
                    word.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    if i + 1 < line.len() && !is_c_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    word.push(c);
                }
            } else if in_single {
                if i >= line.len() {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 1 < line.len() && line[i + 1] == b'\'' {
                    i += 1;
                    word.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < line.len() && !is_c_space(line[i + 1]) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    word.push(c);
                }
            } else {
                if i >= line.len() {
                    break;
                }
                match line[i] {
                    c if is_c_space(c) => break,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    c => word.push(c),
                }
            }
            i += 1;
        }
        out.push(word);
    }
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_shebangs() {
        assert_eq!(
            eval_flags(b"return 1").unwrap(),
            (ScriptFlags::EVAL_COMPAT_MODE, 0)
        );
        let (flags, len) = eval_flags(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(flags.contains(ScriptFlags::NO_WRITES) && flags.contains(ScriptFlags::ALLOW_OOM));
        assert!(!flags.contains(ScriptFlags::EVAL_COMPAT_MODE));
        assert_eq!(len, 31);
        assert_eq!(
            eval_flags(b"#!lua\nreturn 1").unwrap().0,
            ScriptFlags::empty()
        );
        assert_eq!(
            eval_flags(b"#!lua flags=\nreturn 1").unwrap().0,
            ScriptFlags::empty()
        );
        assert_eq!(eval_flags(b"#!lua").unwrap_err(), "Invalid script shebang");
        assert_eq!(
            eval_flags(b"#!python\n").unwrap_err(),
            "Unexpected engine in script shebang: #!python"
        );
        assert_eq!(
            eval_flags(b"#!lua flags=no-writes,bad\n").unwrap_err(),
            "Unexpected flag in script shebang: bad"
        );
        assert_eq!(
            eval_flags(b"#!lua name=x\n").unwrap_err(),
            "Unknown lua shebang option: name=x"
        );
        assert_eq!(
            eval_flags(b"#!lua \"unbalanced\n").unwrap_err(),
            "Invalid engine in script shebang"
        );
    }

    #[test]
    fn library_shebangs() {
        let md = library_metadata(b"#!lua name=mylib\nreturn").unwrap();
        assert_eq!(
            (md.engine.as_slice(), md.name.as_slice()),
            (&b"lua"[..], &b"mylib"[..])
        );
        assert_eq!(md.code, b"\nreturn");
        assert_eq!(
            library_metadata(b"return").err().unwrap(),
            "Missing library metadata"
        );
        assert_eq!(
            library_metadata(b"#!lua name=a name=b\n").err().unwrap(),
            "Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(
            library_metadata(b"#!lua foo=bar\n").err().unwrap(),
            "Invalid metadata value given: foo=bar"
        );
        assert_eq!(
            library_metadata(b"#!lua\n").err().unwrap(),
            "Library name was not given"
        );
    }
}
