//! Reading arguments: Redis's strict number syntax and case-insensitive keywords.

use super::errors::CmdError;
use crate::protocol::Request;

pub(super) use crate::protocol::parse_i64;

/// Redis's strict float syntax: what strtod accepts in full, with no leading space and no NaN.
pub(super) fn parse_f64(text: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(text).ok()?;
    let first = text.bytes().next()?;
    if first.is_ascii_whitespace() {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    (!value.is_nan()).then_some(value)
}

pub(super) fn is(arg: &[u8], keyword: &str) -> bool {
    arg.eq_ignore_ascii_case(keyword.as_bytes())
}

/// Walks the arguments after a given position.
pub(super) struct Cursor<'a> {
    request: Request<'a>,
    next: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(request: Request<'a>, start: usize) -> Self {
        Cursor {
            request,
            next: start,
        }
    }

    pub(super) fn next(&mut self) -> Option<&'a [u8]> {
        let arg = (self.next < self.request.len()).then(|| self.request.arg(self.next))?;
        self.next += 1;
        Some(arg)
    }

    pub(super) fn next_or(&mut self, error: impl Into<CmdError>) -> Result<&'a [u8], CmdError> {
        self.next().ok_or_else(|| error.into())
    }

    pub(super) fn remaining(&self) -> usize {
        self.request.len().saturating_sub(self.next)
    }

    pub(super) fn rest(&mut self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let (request, start) = (self.request, self.next);
        self.next = request.len();
        (start..request.len()).map(move |i| request.arg(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_strtod() {
        for good in [
            &b"0.01"[..],
            b".01",
            b"1e-2",
            b"1e-300",
            b"inf",
            b"-1",
            b"1.0",
            b"+1",
        ] {
            assert!(parse_f64(good).is_some(), "{good:?}");
        }
        for bad in [&b"abc"[..], b"", b"0.01abc", b" 0.01", b"nan", b"0.01 "] {
            assert_eq!(parse_f64(bad), None, "{bad:?}");
        }
    }
}
