//! A minimal blocking RESP2 client: one request, one reply, no pipelining. Both servers are
//! measured through it, so its own cost is the same on both sides.

use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub enum Reply {
    Simple(String),
    Error(String),
    Integer(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

pub struct Connection {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
    request: Vec<u8>,
    line: Vec<u8>,
}

impl Connection {
    pub fn open(port: u16) -> io::Result<Connection> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        Ok(Connection {
            reader: BufReader::new(stream.try_clone()?),
            stream,
            request: Vec::new(),
            line: Vec::new(),
        })
    }

    /// Connects once the server answers PING, trying for up to `patience`.
    pub fn open_when_ready(port: u16, patience: Duration) -> io::Result<Connection> {
        let deadline = Instant::now() + patience;
        loop {
            let attempt = Connection::open(port).and_then(|mut connection| {
                connection.call(&[b"PING"])?;
                Ok(connection)
            });
            match attempt {
                Ok(connection) => return Ok(connection),
                Err(error) if Instant::now() >= deadline => return Err(error),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Sends one command and reads its reply; an error reply becomes an `io::Error`.
    pub fn call(&mut self, args: &[&[u8]]) -> io::Result<Reply> {
        self.request.clear();
        self.request
            .extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for arg in args {
            self.request
                .extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            self.request.extend_from_slice(arg);
            self.request.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&self.request)?;
        match self.read_reply()? {
            Reply::Error(message) => Err(io::Error::other(format!(
                "{} answered {message}",
                String::from_utf8_lossy(args[0])
            ))),
            reply => Ok(reply),
        }
    }

    /// The value of `field` in the reply to `INFO section`.
    pub fn info_field(&mut self, section: &str, field: &str) -> io::Result<String> {
        let text = match self.call(&[b"INFO", section.as_bytes()])? {
            Reply::Bulk(Some(text)) => String::from_utf8_lossy(&text).into_owned(),
            other => return Err(io::Error::other(format!("INFO answered {other:?}"))),
        };
        text.lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .map(str::to_owned)
            .ok_or_else(|| io::Error::other(format!("INFO {section} has no {field}")))
    }

    fn read_line(&mut self) -> io::Result<&[u8]> {
        self.line.clear();
        self.reader.read_until(b'\n', &mut self.line)?;
        match self.line.strip_suffix(b"\r\n") {
            Some(line) if !line.is_empty() => Ok(line),
            _ => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed mid-reply",
            )),
        }
    }

    fn read_reply(&mut self) -> io::Result<Reply> {
        let line = self.read_line()?;
        let (kind, rest) = (line[0], String::from_utf8_lossy(&line[1..]).into_owned());
        let number = || {
            rest.parse::<i64>()
                .map_err(|_| io::Error::other(format!("bad length or integer {rest:?}")))
        };
        Ok(match kind {
            b'+' => Reply::Simple(rest),
            b'-' => Reply::Error(rest),
            b':' => Reply::Integer(number()?),
            b'$' => match usize::try_from(number()?) {
                Ok(len) => {
                    let mut data = vec![0; len + 2];
                    io::Read::read_exact(&mut self.reader, &mut data)?;
                    data.truncate(len);
                    Reply::Bulk(Some(data))
                }
                Err(_) => Reply::Bulk(None),
            },
            b'*' => {
                let len = usize::try_from(number()?).unwrap_or(0);
                let mut items = Vec::with_capacity(len);
                for _ in 0..len {
                    items.push(self.read_reply()?);
                }
                Reply::Array(items)
            }
            other => {
                return Err(io::Error::other(format!(
                    "unexpected reply type {:?}",
                    other as char
                )))
            }
        })
    }
}
