//! The metrics endpoint as a scraper sees it: one HTTP GET (also for Prometheus's own API), and
//! the value of one sample in a page.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The status line and the body of `GET path` at `addr`, or None when nothing answers there.
/// A response that gives its length must have a body of that length.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<(String, String)> {
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
    if let Some(length) = head
        .lines()
        .find_map(|line| line.strip_prefix("Content-Length: "))
    {
        assert_eq!(length.parse(), Ok(body.len()), "{head}");
    }
    Some((head.lines().next()?.to_string(), body.to_string()))
}

/// The value of the sample line `name` (labels included) in a metrics page.
pub fn sample(page: &str, name: &str) -> f64 {
    page.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in\n{page}"))
        .parse()
        .unwrap()
}
