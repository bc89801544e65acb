//! The configuration file's syntax, as in redis.conf: one `directive value...` per line, `#`
//! comments, and values quoted when they hold spaces or are empty (`save ""`). Also the file
//! half of CONFIG REWRITE: replacing directives in place while keeping everything else.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// One directive as written: its 0-based line index, lower-cased name, and unquoted arguments.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Directive {
    pub line: usize,
    pub name: String,
    pub args: Vec<String>,
}

/// Splits a line into words the way Redis does: double quotes allow `\n`, `\t`, `\\`, `\"` and
/// `\xHH` escapes, single quotes allow only `\'`, and a closing quote must end the word.
pub(super) fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else {
            return Ok(words);
        };
        let mut word = String::new();
        if first == '"' || first == '\'' {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("unbalanced quotes".into()),
                    Some(c) if c == first => break,
                    Some('\\') if first == '"' => word.push(unescape(&mut chars)?),
                    Some('\\') if chars.peek() == Some(&'\'') => word.push(chars.next().unwrap()),
                    Some(c) => word.push(c),
                }
            }
            if chars.peek().is_some_and(|c| !c.is_whitespace()) {
                return Err("closing quote must be followed by a space".into());
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                word.push(c);
            }
        }
        words.push(word);
    }
}

fn unescape(chars: &mut std::iter::Peekable<std::str::Chars>) -> Result<char, String> {
    Ok(match chars.next() {
        Some('n') => '\n',
        Some('r') => '\r',
        Some('t') => '\t',
        Some('b') => '\u{8}',
        Some('a') => '\u{7}',
        Some('x') => {
            let hex: String = chars.by_ref().take(2).collect();
            let code = u8::from_str_radix(&hex, 16).map_err(|_| format!("bad escape \\x{hex}"))?;
            char::from(code)
        }
        Some(other) => other,
        None => return Err("unbalanced quotes".into()),
    })
}

/// Quotes a word only when it would not read back as itself unquoted.
pub(super) fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && !word.starts_with('#')
        && word
            .chars()
            .all(|c| c.is_ascii_graphic() && c != '"' && c != '\'' && c != '\\');
    if plain {
        return word.to_string();
    }
    let mut out = String::from("\"");
    for c in word.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Every directive in the text; an error starts with the 1-based line number and a colon.
pub(super) fn parse(text: &str) -> Result<Vec<Directive>, String> {
    let mut directives = Vec::new();
    for (line, content) in text.lines().enumerate() {
        let trimmed = content.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut words = split_words(trimmed).map_err(|e| format!("{}: {e}", line + 1))?;
        let name = words.remove(0).to_ascii_lowercase();
        directives.push(Directive {
            line,
            name,
            args: words,
        });
    }
    Ok(directives)
}

/// What CONFIG REWRITE does to one directive.
pub(super) struct Update {
    pub name: &'static str,
    pub change: Change,
    /// Whether the directive has to be added when the file does not mention it.
    pub add_if_missing: bool,
}

pub(super) enum Change {
    /// The file says what the server has: leave its lines as they are.
    Keep,
    /// The directive's line as it is to read.
    Write(String),
    /// No line at all (`replicaof` once the server is a primary).
    Remove,
}

/// Applies `updates` to the file's text: the first line of a changed directive is replaced,
/// later lines of the same directive are dropped, as are all the lines of a removed one, and
/// directives the file lacks are appended. Comments, blank lines and the order of everything
/// else stay as they were.
pub(super) fn rewrite_text(text: &str, directives: &[Directive], updates: &[Update]) -> String {
    let mut lines: Vec<Option<String>> = text.lines().map(|l| Some(l.to_string())).collect();
    let mut appended = Vec::new();
    for update in updates {
        let mut written = directives.iter().filter(|d| d.name == update.name);
        match (written.next(), &update.change) {
            (_, Change::Keep) => {}
            (Some(first), Change::Write(line)) => {
                lines[first.line] = Some(line.clone());
                written.for_each(|later| lines[later.line] = None);
            }
            (Some(first), Change::Remove) => {
                lines[first.line] = None;
                written.for_each(|later| lines[later.line] = None);
            }
            (None, Change::Write(line)) if update.add_if_missing => appended.push(line.clone()),
            (None, _) => {}
        }
    }
    let mut out = String::new();
    for line in lines.into_iter().flatten() {
        out.push_str(&line);
        out.push('\n');
    }
    if !appended.is_empty() {
        out.push_str("# Generated by CONFIG REWRITE\n");
        for line in appended {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// Replaces the file in one step, so that a crash leaves the old file or the new one, never a
/// mixture: a temporary file beside it, flushed to disk, renamed over it, then the directory
/// flushed so the rename itself survives. The file keeps its permissions.
pub(super) fn write_atomically(path: &Path, contents: &str) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = dir.join(format!(".{file_name}.rewrite-{}", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&temp)?;
        if let Ok(metadata) = fs::metadata(path) {
            file.set_permissions(metadata.permissions())?;
        }
        file.write_all(contents.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temp, path)?;
        fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_redis() {
        assert_eq!(split_words("save \"\"").unwrap(), ["save", ""]);
        assert_eq!(
            split_words("  a 'b c' \"d\\te\\x41\"  ").unwrap(),
            ["a", "b c", "d\teA"]
        );
        assert_eq!(split_words("x 'it\\'s'").unwrap(), ["x", "it's"]);
        assert!(split_words("a \"b").is_err());
        assert!(split_words("a \"b\"c").is_err());
    }

    #[test]
    fn quoting_round_trips() {
        for word in [
            "plain",
            "",
            "two words",
            "q\"uote",
            "back\\slash",
            "#hash",
            "tab\t",
        ] {
            let line = format!("name {}", quote(word));
            assert_eq!(split_words(&line).unwrap(), ["name", word], "{line}");
        }
        assert_eq!(quote("127.0.0.1"), "127.0.0.1");
    }

    #[test]
    fn rewrite_keeps_comments_and_order() {
        let text = "# top\nport 1\n\n# rules\nsave 60 1\nsave 30 2\nbf-error-rate 0.1\n\
                    replicaof h 1\n";
        let directives = parse(text).unwrap();
        assert_eq!(directives[1].args, ["60", "1"]);
        let updates = [
            Update {
                name: "save",
                change: Change::Write("save 10 10".into()),
                add_if_missing: true,
            },
            Update {
                name: "port",
                change: Change::Keep,
                add_if_missing: false,
            },
            Update {
                name: "bf-initial-size",
                change: Change::Write("bf-initial-size 7".into()),
                add_if_missing: true,
            },
            Update {
                name: "max-filter-memory",
                change: Change::Write("max-filter-memory 2048".into()),
                add_if_missing: false,
            },
            Update {
                name: "replicaof",
                change: Change::Remove,
                add_if_missing: false,
            },
            Update {
                name: "masterauth",
                change: Change::Remove,
                add_if_missing: true,
            },
        ];
        assert_eq!(
            rewrite_text(text, &directives, &updates),
            "# top\nport 1\n\n# rules\nsave 10 10\nbf-error-rate 0.1\n\
             # Generated by CONFIG REWRITE\nbf-initial-size 7\n"
        );
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(parse("a 1\n\nb \"x").unwrap_err(), "3: unbalanced quotes");
    }
}
