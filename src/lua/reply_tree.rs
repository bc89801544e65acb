//! The reply tree that crosses between the Lua runtime and the command layer, in both
//! directions: what `redis.call` gets back from a command, and what a script returns. The
//! command layer maps it onto its own reply encoder (RESP2 or RESP3, as the client speaks).

/// One RESP reply, RESP3's types included.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// `+text`.
    Status(Vec<u8>),
    /// `-CODE message`, kept without the leading `-` (e.g. `ERR unknown command`).
    Error(Vec<u8>),
    Integer(i64),
    Bulk(Vec<u8>),
    /// RESP2's null bulk / null array, RESP3's `_`: the encoder writes it as the client's
    /// protocol wants.
    Null,
    Array(Vec<Reply>),
    /// RESP3 map, in order.
    Map(Vec<(Reply, Reply)>),
    /// RESP3 set, in order.
    Set(Vec<Reply>),
    Double(f64),
    Bool(bool),
    /// RESP3 big number, its decimal digits as given.
    BigNumber(Vec<u8>),
    /// RESP3 verbatim string: a three-letter format (`txt`, `mkd`) and the text.
    Verbatim {
        format: [u8; 3],
        text: Vec<u8>,
    },
}

impl Reply {
    /// An error reply from a full error line (`ERR ...`, `NOSCRIPT ...`).
    pub fn error(line: impl Into<Vec<u8>>) -> Reply {
        Reply::Error(line.into())
    }

    /// An error reply as Redis's `addReplyErrorFormat` writes a message: prefixed with `ERR `
    /// unless it already carries a code after a `-`, and kept on one line (CR and LF become
    /// spaces, as in a compile error that quotes a line break).
    pub(crate) fn err_msg(message: &str) -> Reply {
        let line = match message.strip_prefix('-') {
            Some(line) => line.as_bytes().to_vec(),
            None => format!("ERR {message}").into_bytes(),
        };
        Reply::Error(
            line.into_iter()
                .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b })
                .collect(),
        )
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }
}
