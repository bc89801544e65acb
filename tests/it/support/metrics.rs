//! The metrics endpoint as a scraper sees it: one HTTP GET (also for Prometheus's own API), and
//! the value of one sample in a page.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// An HTTP response as it came.
pub struct Response {
    pub status: String,
    /// The status line and the headers.
    pub head: String,
    pub body: String,
}

/// The response to `GET path` at `addr`, or None when nothing answers there.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<Response> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: test\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    Some(Response {
        status: head.lines().next()?.to_string(),
        head: head.to_string(),
        body: body.to_string(),
    })
}

/// The value of the sample line `name` (labels included) in a metrics page.
pub fn sample(page: &str, name: &str) -> f64 {
    page.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in\n{page}"))
        .parse()
        .unwrap()
}
