//! The reply encoder: appends RESP2 or RESP3 replies to the connection's output buffer. One type
//! serves both protocols so that each command states its reply once; where the protocols differ
//! (booleans, maps, nulls, verbatim text) the encoder picks the form.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Resp2,
    Resp3,
}

#[derive(Debug)]
pub struct Reply {
    out: Vec<u8>,
    protocol: Protocol,
}

impl Reply {
    pub fn new(protocol: Protocol) -> Self {
        Reply {
            out: Vec::with_capacity(16 * 1024),
            protocol,
        }
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    pub fn set_protocol(&mut self, protocol: Protocol) {
        self.protocol = protocol;
    }

    pub fn is_resp3(&self) -> bool {
        self.protocol == Protocol::Resp3
    }

    pub fn bytes(&self) -> &[u8] {
        &self.out
    }

    pub fn len(&self) -> usize {
        self.out.len()
    }

    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    pub fn clear(&mut self) {
        self.out.clear();
    }

    /// Drops everything written after `len`, for a command that fails halfway through a reply.
    pub fn truncate(&mut self, len: usize) {
        self.out.truncate(len);
    }

    /// Releases a buffer that grew for one large reply, so an idle connection stays small.
    pub fn shrink(&mut self, keep: usize) {
        if self.out.capacity() > keep {
            self.out = Vec::with_capacity(keep);
        }
    }

    fn line(&mut self, prefix: u8, text: &[u8]) {
        self.out.push(prefix);
        self.out.extend_from_slice(text);
        self.out.extend_from_slice(b"\r\n");
    }

    fn number_line(&mut self, prefix: u8, value: i64) {
        self.out.push(prefix);
        self.out
            .extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
        self.out.extend_from_slice(b"\r\n");
    }

    pub fn ok(&mut self) {
        self.out.extend_from_slice(b"+OK\r\n");
    }

    pub fn simple(&mut self, text: &str) {
        self.line(b'+', text.as_bytes());
    }

    /// An error reply; `message` is the whole text, code included (`ERR ...`, `WRONGTYPE ...`).
    /// Line breaks would corrupt the stream, so they become spaces, as Redis does.
    pub fn error(&mut self, message: &str) {
        self.out.push(b'-');
        self.out.extend(
            message
                .bytes()
                .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.out.extend_from_slice(b"\r\n");
    }

    pub fn int(&mut self, value: i64) {
        self.number_line(b':', value);
    }

    pub fn bulk(&mut self, data: &[u8]) {
        self.number_line(b'$', data.len() as i64);
        self.out.extend_from_slice(data);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A bulk string written in place: `fill` appends exactly `len` bytes.
    pub fn bulk_with(&mut self, len: usize, fill: impl FnOnce(&mut Vec<u8>)) {
        self.number_line(b'$', len as i64);
        let before = self.out.len();
        fill(&mut self.out);
        debug_assert_eq!(self.out.len() - before, len);
        self.out.extend_from_slice(b"\r\n");
    }

    pub fn null(&mut self) {
        match self.protocol {
            Protocol::Resp2 => self.out.extend_from_slice(b"$-1\r\n"),
            Protocol::Resp3 => self.out.extend_from_slice(b"_\r\n"),
        }
    }

    /// The null that stands for a missing array (RESP2 `*-1`).
    pub fn null_array(&mut self) {
        match self.protocol {
            Protocol::Resp2 => self.out.extend_from_slice(b"*-1\r\n"),
            Protocol::Resp3 => self.out.extend_from_slice(b"_\r\n"),
        }
    }

    /// RESP3 `#t`/`#f`; RESP2 `:1`/`:0`.
    pub fn boolean(&mut self, value: bool) {
        match (self.protocol, value) {
            (Protocol::Resp2, true) => self.out.extend_from_slice(b":1\r\n"),
            (Protocol::Resp2, false) => self.out.extend_from_slice(b":0\r\n"),
            (Protocol::Resp3, true) => self.out.extend_from_slice(b"#t\r\n"),
            (Protocol::Resp3, false) => self.out.extend_from_slice(b"#f\r\n"),
        }
    }

    pub fn double(&mut self, value: f64) {
        let text = format_double(value);
        match self.protocol {
            Protocol::Resp2 => self.bulk(text.as_bytes()),
            Protocol::Resp3 => self.line(b',', text.as_bytes()),
        }
    }

    /// A double already written out: a bulk string under RESP2, a RESP3 double.
    pub fn double_text(&mut self, text: &[u8]) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => self.line(b',', text),
        }
    }

    /// A RESP3 big number (its decimal digits); a bulk string under RESP2, as Redis sends it.
    pub fn big_number(&mut self, digits: &[u8]) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(digits),
            Protocol::Resp3 => self.line(b'(', digits),
        }
    }

    pub fn array(&mut self, len: usize) {
        self.number_line(b'*', len as i64);
    }

    /// Out-of-band data (a Pub/Sub message): a RESP3 push, a plain array under RESP2.
    pub fn push(&mut self, len: usize) {
        match self.protocol {
            Protocol::Resp2 => self.array(len),
            Protocol::Resp3 => self.number_line(b'>', len as i64),
        }
    }

    pub fn set(&mut self, len: usize) {
        match self.protocol {
            Protocol::Resp2 => self.array(len),
            Protocol::Resp3 => self.number_line(b'~', len as i64),
        }
    }

    /// A map of `len` pairs; under RESP2 a flat array of keys and values.
    pub fn map(&mut self, len: usize) {
        match self.protocol {
            Protocol::Resp2 => self.array(len * 2),
            Protocol::Resp3 => self.number_line(b'%', len as i64),
        }
    }

    /// Text meant for people (INFO, CLIENT LIST): a verbatim string in RESP3, bulk in RESP2.
    pub fn verbatim(&mut self, text: &str) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(text.as_bytes()),
            Protocol::Resp3 => {
                self.number_line(b'=', text.len() as i64 + 4);
                self.out.extend_from_slice(b"txt:");
                self.out.extend_from_slice(text.as_bytes());
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }
}

/// Redis prints doubles with up to 17 significant digits and spells infinities `inf`.
pub(super) fn format_double(value: f64) -> String {
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if value.is_nan() {
        return "nan".to_string();
    }
    format!("{value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_both_protocols() {
        for (protocol, expected) in [
            (
                Protocol::Resp2,
                &b":1\r\n*2\r\n$1\r\na\r\n$-1\r\n+OK\r\n-ERR a b\r\n*-1\r\n"[..],
            ),
            (
                Protocol::Resp3,
                b"#t\r\n%1\r\n$1\r\na\r\n_\r\n+OK\r\n-ERR a b\r\n_\r\n",
            ),
        ] {
            let mut reply = Reply::new(protocol);
            reply.boolean(true);
            reply.map(1);
            reply.bulk(b"a");
            reply.null();
            reply.ok();
            reply.error("ERR a\nb");
            reply.null_array();
            assert_eq!(reply.bytes(), expected);
        }
    }
}
