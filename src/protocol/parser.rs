//! The request parser: RESP arrays of bulk strings (what clients send) and inline lines (what
//! telnet and redis-benchmark's inline mode send).
//!
//! It is incremental: a partial request keeps its state (the arguments found so far and where to
//! resume), so a request arriving in many reads is scanned once. It never recurses, never copies a
//! bulk payload (arguments are ranges into the caller's buffer), and caps what it pre-allocates
//! from a declared count, so a request cannot make the server allocate more than it has received.

use std::fmt;
use std::ops::Range;

/// Bounds on what one request may declare. Violations are protocol errors that close the connection.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest bulk string, like Redis's proto-max-bulk-len.
    pub max_bulk_len: usize,
    /// Most arguments in one request.
    pub max_args: usize,
    /// Longest inline line, and longest `*`/`$` header line.
    pub max_inline_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_args: 8 * 1024 * 1024,
            max_inline_len: 64 * 1024,
        }
    }
}

/// A fatal protocol violation: the client gets `-ERR Protocol error: <reason>` and is disconnected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERR Protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn violation(reason: impl Into<String>) -> ProtocolError {
    ProtocolError(reason.into())
}

/// What a client that still has to authenticate may send, as in Redis since CVE-2021-32675: a
/// request that says it is larger is refused from its header, before its payload is buffered, so
/// a client that knows no password cannot make the server hold more than this.
const UNAUTHENTICATED_MAX_ARGS: i64 = 10;
const UNAUTHENTICATED_MAX_BULK_LEN: i64 = 16 * 1024;

/// Arguments beyond this count are not reserved up front: a `*1000000000` header costs nothing
/// until the arguments themselves arrive.
const MAX_PREALLOCATED_ARGS: usize = 1024;

/// One complete request: its arguments as byte slices, borrowed from the read buffer (or, for an
/// inline request with quoting, from the parser's scratch space).
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    base: &'a [u8],
    ranges: &'a [Range<usize>],
}

impl<'a> Request<'a> {
    /// A request over arguments stored elsewhere (a transaction's queue): each range indexes `base`.
    pub fn new(base: &'a [u8], ranges: &'a [Range<usize>]) -> Request<'a> {
        Request { base, ranges }
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn arg(&self, index: usize) -> &'a [u8] {
        &self.base[self.ranges[index].clone()]
    }

    pub fn args(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let base = self.base;
        self.ranges.iter().map(move |r| &base[r.clone()])
    }
}

/// Appends a request as a client sends it, an array of bulk strings: what the parser reads back
/// as `args`. For talking to another server (MIGRATE's target, a primary, import-rdb's `--to`).
pub fn encode_request(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Between requests.
    Start,
    /// Inside an array, waiting for the `$len` line of the next argument.
    BulkHeader { remaining: usize },
    /// Waiting for `len` payload bytes and their CRLF.
    BulkBody { remaining: usize, len: usize },
}

#[derive(Debug)]
pub struct RequestParser {
    limits: Limits,
    /// False while the client has to authenticate: requests are held to the smaller limits.
    authenticated: bool,
    state: State,
    /// Offset in the caller's buffer where parsing resumes.
    pos: usize,
    /// Offset where the request being parsed starts.
    request_start: usize,
    /// For inline requests and header lines: how far the search for a newline has already looked.
    scanned: usize,
    ranges: Vec<Range<usize>>,
    inline_scratch: Vec<u8>,
    /// Bytes that can be dropped from the front of the caller's buffer.
    consumed: usize,
    /// How many more bytes would complete the current element, when known.
    wanted: usize,
}

/// The two header lines of a request, named as Redis names them in its errors. The names are
/// static so that parsing a header costs no allocation.
#[derive(Clone, Copy)]
enum Header {
    /// `*<count>`
    Array,
    /// `$<len>`
    Bulk,
}

impl Header {
    fn line_name(self) -> &'static str {
        match self {
            Header::Array => "mbulk count string",
            Header::Bulk => "bulk count string",
        }
    }

    fn invalid(self) -> &'static str {
        match self {
            Header::Array => "invalid multibulk length",
            Header::Bulk => "invalid bulk length",
        }
    }
}

enum Line {
    Complete { content_end: usize, next: usize },
    Incomplete,
}

impl RequestParser {
    pub fn new(limits: Limits) -> Self {
        RequestParser {
            limits,
            authenticated: true,
            state: State::Start,
            pos: 0,
            request_start: 0,
            scanned: 0,
            ranges: Vec::new(),
            inline_scratch: Vec::new(),
            consumed: 0,
            wanted: 0,
        }
    }

    /// Whether the client has authenticated (or needs not); until it has, requests are held to
    /// the unauthenticated limits. Set before each `parse`: AUTH changes it between requests.
    pub fn set_authenticated(&mut self, authenticated: bool) {
        self.authenticated = authenticated;
    }

    /// After `parse` returned, how many bytes the caller must drop from the front of its buffer.
    /// Offsets kept for a partial request are moved accordingly.
    pub fn take_consumed(&mut self) -> usize {
        let n = std::mem::take(&mut self.consumed);
        if n > 0 {
            self.pos -= n;
            self.scanned = self.scanned.saturating_sub(n);
            if self.state == State::Start {
                // Nothing of a finished request is kept; inline ranges point into scratch anyway.
                self.request_start = self.pos;
                self.ranges.clear();
            } else {
                self.request_start -= n;
                for range in &mut self.ranges {
                    *range = range.start - n..range.end - n;
                }
            }
        }
        n
    }

    /// When the last `parse` needed more data: how many more bytes would complete the element
    /// being read (so the caller can reserve room, within its own cap), or 0 if unknown.
    pub fn bytes_wanted(&self) -> usize {
        self.wanted
    }

    /// Parses the next complete request from `buf`, which must be the same buffer as before, minus
    /// what `take_consumed` said to drop, plus newly read bytes. `Ok(None)` asks for more data.
    pub fn parse<'a>(&'a mut self, buf: &'a [u8]) -> Result<Option<Request<'a>>, ProtocolError> {
        self.wanted = 0;
        loop {
            match self.state {
                State::Start => {
                    if self.pos >= buf.len() {
                        self.consumed = self.pos;
                        return Ok(None);
                    }
                    self.request_start = self.pos;
                    self.ranges.clear();
                    if buf[self.pos] == b'*' {
                        let Some(count) = self.header(buf, Header::Array)? else {
                            return Ok(None);
                        };
                        if count <= 0 {
                            // Redis ignores empty and null arrays as requests.
                            continue;
                        }
                        if count > i32::MAX as i64 || count as usize > self.limits.max_args {
                            return Err(violation("invalid multibulk length"));
                        }
                        if !self.authenticated && count > UNAUTHENTICATED_MAX_ARGS {
                            return Err(violation("unauthenticated multibulk length"));
                        }
                        let count = count as usize;
                        self.ranges.reserve(count.min(MAX_PREALLOCATED_ARGS));
                        self.state = State::BulkHeader { remaining: count };
                    } else {
                        match self.inline(buf)? {
                            None => return Ok(None),
                            Some(0) => continue,
                            Some(_) => return Ok(Some(self.finish_inline())),
                        }
                    }
                }
                State::BulkHeader { remaining } => {
                    if self.pos >= buf.len() {
                        return Ok(self.incomplete(1));
                    }
                    if buf[self.pos] != b'$' {
                        let got = buf[self.pos] as char;
                        return Err(violation(format!("expected '$', got '{got}'")));
                    }
                    let Some(len) = self.header(buf, Header::Bulk)? else {
                        return Ok(None);
                    };
                    if len < 0 || len as u64 > self.limits.max_bulk_len as u64 {
                        return Err(violation("invalid bulk length"));
                    }
                    if !self.authenticated && len > UNAUTHENTICATED_MAX_BULK_LEN {
                        return Err(violation("unauthenticated bulk length"));
                    }
                    self.state = State::BulkBody {
                        remaining,
                        len: len as usize,
                    };
                }
                State::BulkBody { remaining, len } => {
                    let end = self.pos + len;
                    if buf.len() < end + 2 {
                        return Ok(self.incomplete(end + 2 - buf.len()));
                    }
                    if &buf[end..end + 2] != b"\r\n" {
                        return Err(violation("expected CRLF after bulk string"));
                    }
                    self.ranges.push(self.pos..end);
                    self.pos = end + 2;
                    if remaining > 1 {
                        self.state = State::BulkHeader {
                            remaining: remaining - 1,
                        };
                    } else {
                        self.state = State::Start;
                        self.consumed = self.pos;
                        return Ok(Some(Request {
                            base: buf,
                            ranges: &self.ranges,
                        }));
                    }
                }
            }
        }
    }

    fn incomplete<'a>(&mut self, wanted: usize) -> Option<Request<'a>> {
        self.consumed = self.request_start;
        self.wanted = wanted;
        None
    }

    /// Finds the CRLF-terminated line starting at `from`, resuming an earlier search. Lines may
    /// end in a bare LF, as Redis accepts for inline requests.
    fn line(&mut self, buf: &[u8], from: usize, what: &str) -> Result<Line, ProtocolError> {
        let start = self.scanned.max(from);
        let limit = buf.len().min(from + self.limits.max_inline_len + 2);
        match buf[start..limit].iter().position(|&b| b == b'\n') {
            Some(offset) => {
                let newline = start + offset;
                self.scanned = 0;
                let content_end = if newline > from && buf[newline - 1] == b'\r' {
                    newline - 1
                } else {
                    newline
                };
                Ok(Line::Complete {
                    content_end,
                    next: newline + 1,
                })
            }
            None if limit - from > self.limits.max_inline_len + 1 => {
                Err(violation(format!("too big {what}")))
            }
            None => {
                self.scanned = limit;
                Ok(Line::Incomplete)
            }
        }
    }

    /// Reads a `*<n>` or `$<n>` line at `pos`; None when the line is not complete yet.
    fn header(&mut self, buf: &[u8], kind: Header) -> Result<Option<i64>, ProtocolError> {
        if let Some((value, next)) = plain_header(buf, self.pos) {
            self.scanned = 0;
            self.pos = next;
            return Ok(Some(value));
        }
        let from = self.pos;
        let Line::Complete { content_end, next } = self.line(buf, from, kind.line_name())? else {
            self.consumed = self.request_start;
            return Ok(None);
        };
        let value =
            parse_i64(&buf[from + 1..content_end]).ok_or_else(|| violation(kind.invalid()))?;
        self.pos = next;
        Ok(Some(value))
    }

    /// Splits an inline line into arguments in the scratch space; Some(count) once the line is
    /// complete (0 for a blank line, which is skipped).
    fn inline(&mut self, buf: &[u8]) -> Result<Option<usize>, ProtocolError> {
        let from = self.pos;
        let Line::Complete { content_end, next } = self.line(buf, from, "inline request")? else {
            self.consumed = self.request_start;
            return Ok(None);
        };
        self.inline_scratch.clear();
        split_inline(
            &buf[from..content_end],
            &mut self.inline_scratch,
            &mut self.ranges,
        )?;
        if self.ranges.len() > self.limits.max_args {
            return Err(violation("invalid multibulk length"));
        }
        self.pos = next;
        self.consumed = next;
        Ok(Some(self.ranges.len()))
    }

    fn finish_inline(&self) -> Request<'_> {
        Request {
            base: &self.inline_scratch,
            ranges: &self.ranges,
        }
    }
}

/// The common header, read in one pass: the marker at `pos`, then "0" or up to 18 digits without
/// a leading zero, then CRLF; its number and where the next line starts. Anything else (a minus,
/// a bare LF, an incomplete line, a bad number) is left to `line` and `parse_i64`, which read
/// the same headers to the same numbers and report the rest.
fn plain_header(buf: &[u8], pos: usize) -> Option<(i64, usize)> {
    let digits = buf.get(pos + 1..)?;
    let mut value: i64 = 0;
    for (count, &byte) in digits.iter().enumerate().take(19) {
        match byte {
            // Eighteen digits cannot overflow.
            b'0'..=b'9' if count < 18 && (count == 0 || value > 0) => {
                value = value * 10 + i64::from(byte - b'0')
            }
            b'\r' if count > 0 => {
                return (digits.get(count + 1) == Some(&b'\n')).then_some((value, pos + count + 3));
            }
            _ => return None,
        }
    }
    None
}

/// Redis's strict integer syntax: an optional minus, then digits without a leading zero, or "0".
pub fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    match digits {
        [] => return None,
        [b'0'] if !negative => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    let mut value: i64 = 0;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        let d = (digit - b'0') as i64;
        value = if negative {
            value.checked_mul(10)?.checked_sub(d)?
        } else {
            value.checked_mul(10)?.checked_add(d)?
        };
    }
    Some(value)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Splits a line the way redis-cli and Redis's inline parser do: whitespace separates arguments;
/// "double quotes" allow escapes (\n, \xHH, ...), 'single quotes' only \'; a closing quote must be
/// followed by whitespace or the end of the line.
fn split_inline(
    line: &[u8],
    out: &mut Vec<u8>,
    ranges: &mut Vec<Range<usize>>,
) -> Result<(), ProtocolError> {
    let mut i = 0;
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Ok(());
        }
        let start = out.len();
        match line[i] {
            b'"' => i = quoted(line, i, out, double_quoted_escape)?,
            b'\'' => i = quoted(line, i, out, single_quoted_escape)?,
            _ => {
                while i < line.len() && !is_space(line[i]) {
                    out.push(line[i]);
                    i += 1;
                }
            }
        }
        ranges.push(start..out.len());
    }
}

/// An escape inside quotes at `line[i]` (a backslash): the byte it stands for and how many bytes
/// it takes, or None when the backslash is an ordinary byte.
type Escape = fn(&[u8], usize) -> Option<(u8, usize)>;

/// \n, \r, \t, \b, \a, \xHH and \<any byte>; `\x` without two hex digits is `x`.
fn double_quoted_escape(line: &[u8], i: usize) -> Option<(u8, usize)> {
    let next = *line.get(i + 1)?;
    if next == b'x' && i + 3 < line.len() {
        return Some(match (hex_value(line[i + 2]), hex_value(line[i + 3])) {
            (Some(hi), Some(lo)) => (hi * 16 + lo, 4),
            _ => (b'x', 2),
        });
    }
    let byte = match next {
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'b' => 0x08,
        b'a' => 0x07,
        other => other,
    };
    Some((byte, 2))
}

/// Only \' is an escape.
fn single_quoted_escape(line: &[u8], i: usize) -> Option<(u8, usize)> {
    (line.get(i + 1) == Some(&b'\'')).then_some((b'\'', 2))
}

/// Copies the quoted argument that starts with the quote at `line[start]` into `out`, and
/// returns where the line goes on after the closing quote.
fn quoted(
    line: &[u8],
    start: usize,
    out: &mut Vec<u8>,
    escape: Escape,
) -> Result<usize, ProtocolError> {
    let unbalanced = || violation("unbalanced quotes in request");
    let quote = line[start];
    let mut i = start + 1;
    loop {
        match line.get(i) {
            None => return Err(unbalanced()),
            Some(&b) if b == quote => {
                i += 1;
                break;
            }
            Some(&b) => {
                let (byte, taken) = match b {
                    b'\\' => escape(line, i).unwrap_or((b, 1)),
                    _ => (b, 1),
                };
                out.push(byte);
                i += taken;
            }
        }
    }
    if i < line.len() && !is_space(line[i]) {
        return Err(unbalanced());
    }
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut parser = RequestParser::new(Limits::default());
        let mut buf = input.to_vec();
        let mut out = Vec::new();
        loop {
            let request = parser.parse(&buf)?;
            let done = request.is_none();
            if let Some(request) = request {
                out.push(request.args().map(<[u8]>::to_vec).collect());
            }
            let n = parser.take_consumed();
            buf.drain(..n);
            if done {
                return Ok(out);
            }
        }
    }

    fn args(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn parses_arrays_and_inline() {
        let got = parse_all(
            b"*2\r\n$4\r\nPING\r\n$2\r\nhi\r\nPING\r\n\r\nSET a \"b c\\x41\" 'd\\'e'\r\n*0\r\n",
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                args(&["PING", "hi"]),
                args(&["PING"]),
                args(&["SET", "a", "b cA", "d'e"])
            ]
        );
    }

    #[test]
    fn byte_at_a_time_gives_the_same_requests() {
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nva\r\nl\r\nECHO   x\n*1\r\n$0\r\n\r\n";
        let mut parser = RequestParser::new(Limits::default());
        let mut buf = Vec::new();
        let mut out = Vec::new();
        for &byte in input.iter() {
            buf.push(byte);
            loop {
                let request = parser.parse(&buf).unwrap();
                let done = request.is_none();
                if let Some(request) = request {
                    out.push(request.args().map(<[u8]>::to_vec).collect::<Vec<_>>());
                }
                let n = parser.take_consumed();
                buf.drain(..n);
                if done {
                    break;
                }
            }
        }
        assert_eq!(
            out,
            vec![
                args(&["SET", "k", "va\r\nl"]),
                args(&["ECHO", "x"]),
                args(&[""])
            ]
        );
    }

    #[test]
    fn rejects_malformed_requests() {
        let cases: &[(&[u8], &str)] = &[
            (b"*abc\r\n", "invalid multibulk length"),
            (b"*1\r\nx", "expected '$', got 'x'"),
            (b"*1\r\n$-1\r\n", "invalid bulk length"),
            (b"*1\r\n$abc\r\n", "invalid bulk length"),
            (b"*1\r\n$999999999999\r\n", "invalid bulk length"),
            (b"*99999999999\r\n", "invalid multibulk length"),
            (b"*1\r\n$1\r\nab\r\n", "expected CRLF after bulk string"),
            (b"SET \"a\r\n", "unbalanced quotes in request"),
            (b"SET \"a\"b\r\n", "unbalanced quotes in request"),
            (b"SET 'a\r\n", "unbalanced quotes in request"),
        ];
        for (input, reason) in cases {
            assert_eq!(parse_all(input), Err(violation(*reason)), "{input:?}");
        }
    }

    #[test]
    fn long_lines_are_refused_before_buffering_more() {
        let long = vec![b'a'; 70 * 1024];
        assert_eq!(parse_all(&long), Err(violation("too big inline request")));
        let mut header = b"*".to_vec();
        header.extend(vec![b'1'; 70 * 1024]);
        assert_eq!(
            parse_all(&header),
            Err(violation("too big mbulk count string"))
        );
    }

    #[test]
    fn unauthenticated_requests_are_refused_from_their_headers() {
        let mut parser = RequestParser::new(Limits::default());
        parser.set_authenticated(false);
        let ten = b"*10\r\n$16384\r\n";
        assert!(parser.parse(ten).unwrap().is_none());
        let mut parser = RequestParser::new(Limits::default());
        parser.set_authenticated(false);
        assert_eq!(
            parser.parse(b"*11\r\n").unwrap_err(),
            violation("unauthenticated multibulk length")
        );
        let mut parser = RequestParser::new(Limits::default());
        parser.set_authenticated(false);
        assert_eq!(
            parser.parse(b"*1\r\n$16385\r\n").unwrap_err(),
            violation("unauthenticated bulk length")
        );
        // Lengths that are invalid for anyone are reported as such, as Redis does.
        let mut parser = RequestParser::new(Limits::default());
        parser.set_authenticated(false);
        assert_eq!(
            parser.parse(b"*1\r\n$-5\r\n").unwrap_err(),
            violation("invalid bulk length")
        );
        let mut parser = RequestParser::new(Limits::default());
        assert!(parser.parse(b"*11\r\n$400000000\r\n").unwrap().is_none());
    }

    #[test]
    fn huge_declared_counts_allocate_nothing_up_front() {
        let mut parser = RequestParser::new(Limits::default());
        assert!(parser.parse(b"*8000000\r\n$1\r\n").unwrap().is_none());
        assert!(parser.ranges.capacity() <= MAX_PREALLOCATED_ARGS);
    }

    #[test]
    fn strict_integers() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"01",
            b"-0",
            b"+1",
            b" 1",
            b"1 ",
            b"1.5",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
    }

    /// The one-pass header reads what the line search and `parse_i64` read, or leaves it to them.
    #[test]
    fn a_plain_header_reads_as_the_general_path_does() {
        let numbers = [
            "0",
            "1",
            "9",
            "10",
            "32",
            "512",
            "00",
            "01",
            "-1",
            "-0",
            "",
            "1a",
            " 1",
            "999999999999999999",
            "9999999999999999999",
            "18446744073709551616",
        ];
        let endings = ["\r\n", "\n", "\r", "", "\rx\n"];
        for number in numbers {
            for ending in endings {
                let line = format!("${number}{ending}$1");
                let buf = line.as_bytes();
                let Some((value, next)) = plain_header(buf, 0) else {
                    continue;
                };
                assert_eq!(ending, "\r\n", "{line:?}");
                assert_eq!(parse_i64(number.as_bytes()), Some(value), "{line:?}");
                assert_eq!(&buf[next..], b"$1", "{line:?}");
            }
        }
        assert_eq!(plain_header(b"*3\r\n", 0), Some((3, 4)));
        assert_eq!(plain_header(b"*0\r\n", 0), Some((0, 4)));
    }
}
