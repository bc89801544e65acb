//! The one RESP client of the tests and benchmarks: sends exact bytes, and frames each reply with
//! redis-protocol's decoder, an implementation independent of sieved's. It stands alone (std and
//! redis-protocol only), so that a benchmark can take it in with `#[path]`.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Only there so that a wedged server fails the test instead of hanging it.
const READ_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Resp {
    Two,
    Three,
}

/// Encodes a command the way client libraries do: an array of bulk strings.
pub fn encode_command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Shows bytes the way transcripts write them.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        match b {
            b'\r' => out.push_str("\\r"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// Length of the first complete reply in `buf` by redis-protocol's decoder, None while it is
/// incomplete; an error names the bytes if they are not valid RESP of the protocol `resp`.
pub fn frame_len(resp: Resp, buf: &[u8]) -> io::Result<Option<usize>> {
    let decoded = match resp {
        Resp::Two => redis_protocol::resp2::decode::decode(buf).map(|f| f.map(|(_, n)| n)),
        Resp::Three => {
            redis_protocol::resp3::decode::complete::decode(buf).map(|f| f.map(|(_, n)| n))
        }
    };
    decoded.map_err(|error| {
        io::Error::new(
            ErrorKind::InvalidData,
            format!("invalid {resp:?} reply {}: {error:?}", escape(buf)),
        )
    })
}

/// The value of `field` in INFO's text, a line `field:value`, if there is one.
pub fn try_info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
}

/// The value of `field` in INFO's text; panics, showing the text, if there is none.
pub fn info_field<'a>(info: &'a str, field: &str) -> &'a str {
    try_info_field(info, field).unwrap_or_else(|| panic!("no {field} in {info}"))
}

/// Words as redis-cli splits a line, with "" for an empty one; each character is one byte, so
/// that a line can carry any byte.
pub fn words(line: &str) -> Vec<Vec<u8>> {
    line.split(' ')
        .map(|word| match word {
            "\"\"" => Vec::new(),
            word => word.chars().map(|c| c as u32 as u8).collect(),
        })
        .collect()
}

/// The address of `port` on the loopback interface, where every test's server listens.
pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

pub struct RawClient {
    stream: TcpStream,
    /// Bytes received and not yet handed out as a reply.
    pending: Vec<u8>,
    /// Where each read lands, kept so that a read costs no fresh buffer.
    chunk: Box<[u8]>,
    pub resp: Resp,
}

impl RawClient {
    /// Connects; fails the test if nothing listens at `addr`.
    pub fn connect(addr: SocketAddr) -> RawClient {
        RawClient::try_connect(addr).expect("connect")
    }

    /// Connects to `port` on the loopback interface; fails the test if nothing listens there.
    pub fn local(port: u16) -> RawClient {
        RawClient::connect(loopback(port))
    }

    pub fn try_connect(addr: SocketAddr) -> io::Result<RawClient> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(READ_TIMEOUT))?;
        stream.set_nodelay(true)?;
        Ok(RawClient {
            stream,
            pending: Vec::new(),
            chunk: vec![0; 64 * 1024].into_boxed_slice(),
            resp: Resp::Two,
        })
    }

    /// A client that has switched to `resp` (HELLO 3 for RESP3).
    pub fn speaking(addr: SocketAddr, resp: Resp) -> RawClient {
        let mut client = RawClient::connect(addr);
        if resp == Resp::Three {
            client.hello3();
        }
        client
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Appends what the server sent next to `pending`; a closed connection is an error.
    fn read_more(&mut self) -> io::Result<()> {
        let n = self.stream.read(&mut self.chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                ErrorKind::UnexpectedEof,
                format!("connection closed; partial reply {}", escape(&self.pending)),
            ));
        }
        self.pending.extend_from_slice(&self.chunk[..n]);
        Ok(())
    }

    /// Reads exactly one reply and returns its bytes.
    pub fn try_read_reply(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(len) = frame_len(self.resp, &self.pending)? {
                return Ok(self.pending.drain(..len).collect());
            }
            self.read_more()?;
        }
    }

    /// Reads exactly one reply and returns its bytes; fails the test if there is none.
    pub fn read_reply(&mut self) -> Vec<u8> {
        self.try_read_reply()
            .unwrap_or_else(|error| panic!("read reply: {error}"))
    }

    /// Sends a command and returns its reply; for a client whose server may go away (killed
    /// under it, say), where that ends what it does rather than failing the test.
    pub fn try_command(&mut self, args: &[&[u8]]) -> io::Result<Vec<u8>> {
        self.stream.write_all(&encode_command(args))?;
        self.try_read_reply()
    }

    /// Sends a command and returns its reply.
    pub fn command(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(&encode_command(args));
        self.read_reply()
    }

    /// Same as `command` for text arguments.
    pub fn cmd(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.command(&args)
    }

    /// Sends a command written as one line (see `words`) and returns its reply.
    pub fn line(&mut self, line: &str) -> Vec<u8> {
        let words = words(line);
        let args: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
        self.command(&args)
    }

    /// Sends a command and returns its reply, framed by `Node` rather than redis-protocol's
    /// decoder, whose RESP3 takes no aggregate inside a set (COMMAND DOCS's `history`).
    pub fn cmd_framed_by_node(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&encode_command(&args));
        loop {
            if let Some((_, len)) = Node::parse_prefix(&self.pending) {
                return self.pending.drain(..len).collect();
            }
            self.read_more()
                .unwrap_or_else(|error| panic!("read reply: {error}"));
        }
    }

    pub fn hello3(&mut self) {
        self.send(&encode_command(&[b"HELLO", b"3"]));
        self.resp = Resp::Three;
        self.read_reply();
    }

    /// The value of `field` in `INFO section`.
    pub fn info_field(&mut self, section: &str, field: &str) -> String {
        let info = String::from_utf8(self.cmd(&["INFO", section])).expect("INFO is text");
        info_field(&info, field).to_string()
    }

    /// Reads until the server ends the connection (a reset counts as an end) and returns what
    /// came before; a server that keeps it open past the read timeout fails the test.
    pub fn read_until_closed(&mut self) -> Vec<u8> {
        let mut received = std::mem::take(&mut self.pending);
        loop {
            match self.stream.read(&mut self.chunk) {
                Ok(0) => return received,
                Ok(n) => received.extend_from_slice(&self.chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    panic!("the server did not close the connection")
                }
                Err(_) => return received,
            }
        }
    }

    /// True if the server closed the connection with nothing more to read.
    pub fn is_closed(&mut self) -> bool {
        if !self.pending.is_empty() {
            return false;
        }
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte), Ok(0) | Err(_))
    }
}
/// A reply, parsed just enough to look inside its aggregates (to put unordered elements in
/// order, or compare a map field by field).
pub enum Node {
    /// A whole scalar reply, its bytes as sent.
    Scalar(Vec<u8>),
    /// An aggregate: its type byte, and its elements (a map's keys and values in turn).
    Aggregate(u8, Vec<Node>),
}

impl Node {
    /// The first reply in `bytes`, which must be whole RESP2 or RESP3.
    pub fn parse(bytes: &[u8]) -> Node {
        Node::parse_prefix(bytes).expect("a whole reply").0
    }

    /// The first reply in `bytes` and its length, or None while it is incomplete.
    pub fn parse_prefix(bytes: &[u8]) -> Option<(Node, usize)> {
        let mut at = 0;
        Node::parse_at(bytes, &mut at).map(|node| (node, at))
    }

    fn parse_at(bytes: &[u8], at: &mut usize) -> Option<Node> {
        let end = *at + bytes.get(*at..)?.windows(2).position(|w| w == b"\r\n")? + 2;
        let kind = bytes[*at];
        let number = || -> i64 {
            std::str::from_utf8(&bytes[*at + 1..end - 2])
                .unwrap()
                .parse()
                .unwrap()
        };
        Some(match kind {
            b'$' | b'=' | b'!' if number() >= 0 => {
                let stop = end + number() as usize + 2;
                let node = Node::Scalar(bytes.get(*at..stop)?.to_vec());
                *at = stop;
                node
            }
            b'*' | b'~' | b'%' | b'>' if number() >= 0 => {
                let len = number() as usize * if kind == b'%' { 2 } else { 1 };
                *at = end;
                let items = (0..len).map(|_| Node::parse_at(bytes, at));
                Node::Aggregate(kind, items.collect::<Option<_>>()?)
            }
            _ => {
                let node = Node::Scalar(bytes[*at..end].to_vec());
                *at = end;
                node
            }
        })
    }

    /// The reply's bytes, as they would be sent.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Node::Scalar(bytes) => out.extend_from_slice(bytes),
            Node::Aggregate(kind, items) => {
                let len = items.len() / if *kind == b'%' { 2 } else { 1 };
                out.extend_from_slice(format!("{}{len}\r\n", *kind as char).as_bytes());
                items.iter().for_each(|item| item.write(out));
            }
        }
    }
}
