//! Paths into a document, in RedisJSON's two syntaxes. A path that starts with `$` followed by
//! nothing, `.` or `[` is JSONPath, whose commands answer a list with one entry per match; any
//! other is a legacy path (`.a.b`, `a`, `.`), which RedisJSON rewrites into JSONPath (`$.a.b`,
//! `$.a`, `$`) and whose commands answer about the first match alone.

mod eval;
mod grammar;
mod query;
mod regex;

pub use eval::{Located, Overload, WORK_LIMIT};
pub use grammar::SyntaxError;
pub(crate) use query::LastStep;
pub use query::Query;

/// A path argument as RedisJSON reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path<'a> {
    original: &'a str,
    /// The JSONPath a legacy path stands for; `None` for JSONPath.
    rewritten: Option<String>,
}

impl<'a> Path<'a> {
    pub fn new(original: &'a str) -> Path<'a> {
        let bytes = original.as_bytes();
        let is_json_path =
            bytes.first() == Some(&b'$') && (bytes.len() < 2 || matches!(bytes[1], b'.' | b'['));
        let rewritten = if is_json_path {
            None
        } else if original == "." {
            Some("$".to_string())
        } else if original.starts_with('.') {
            Some(format!("${original}"))
        } else {
            Some(format!("$.{original}"))
        };
        Path {
            original,
            rewritten,
        }
    }

    pub fn is_legacy(&self) -> bool {
        self.rewritten.is_some()
    }

    /// The JSONPath text evaluated (legacy paths rewritten).
    pub fn text(&self) -> &str {
        self.rewritten.as_deref().unwrap_or(self.original)
    }

    /// The path as the client wrote it (the key of `JSON.GET`'s multi-path object).
    pub fn original(&self) -> &'a str {
        self.original
    }

    /// Whether the text is exactly the root, `$` (legacy `.` included), which some commands
    /// treat apart; `$ ` is not, though it selects the same value.
    pub fn is_root(&self) -> bool {
        self.text() == "$"
    }

    pub fn compile(&self) -> Result<Query, SyntaxError> {
        Query::compile(self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_paths_are_rewritten_as_redisjson_does() {
        for (path, legacy, text) in [
            ("$", false, "$"),
            ("$.a", false, "$.a"),
            ("$[0]", false, "$[0]"),
            ("$a", true, "$.$a"),
            (".", true, "$"),
            (".a.b", true, "$.a.b"),
            ("a", true, "$.a"),
            ("['a']", true, "$.['a']"),
            ("..a", true, "$..a"),
            ("", true, "$."),
        ] {
            let p = Path::new(path);
            assert_eq!((p.is_legacy(), p.text()), (legacy, text), "{path:?}");
        }
    }
}
