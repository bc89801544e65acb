//! Memory held for requests not yet complete: a client that has not authenticated may send only
//! small requests; one client's unfinished request is bounded by client-query-buffer-limit, and
//! all clients' together by max-query-buffers-memory.

use crate::support::{alone_in_process, encode_command, TestServer};
use sieved::memory;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn connect(server: &TestServer) -> TcpStream {
    let stream = TcpStream::connect(server.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    stream
}

/// Everything the server sends until it closes the connection (a reset counts as closing).
fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                return out
            }
            Err(e) => panic!("read: {e} after {out:?}"),
        }
    }
}

/// Sends up to `total` bytes of payload in 1 MiB writes; how many were accepted before the
/// server closed the connection.
fn send_payload(stream: &mut TcpStream, total: usize) -> usize {
    let chunk = vec![b'x'; 1 << 20];
    let mut sent = 0;
    while sent < total {
        let n = chunk.len().min(total - sent);
        if stream.write_all(&chunk[..n]).is_err() {
            break;
        }
        sent += n;
    }
    sent
}

fn memory_info_number(server: &TestServer, field: &str) -> u64 {
    let mut client = server.client();
    client.cmd(&["AUTH", "s3cret"]);
    client.info_field("memory", field).parse().expect("number")
}

#[test]
fn unauthenticated_clients_cannot_send_large_requests() {
    if !alone_in_process(
        module_path!(),
        "unauthenticated_clients_cannot_send_large_requests",
    ) {
        return;
    }
    let server = TestServer::with_password("s3cret");
    let rss_before = memory::rss_bytes();
    let attackers: Vec<_> = (0..4)
        .map(|_| {
            let mut stream = connect(&server);
            std::thread::spawn(move || {
                stream
                    .write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$400000000\r\n")
                    .expect("header");
                let refusal = read_until_closed(&mut stream);
                let sent = send_payload(&mut stream, 400_000_000);
                (refusal, sent)
            })
        })
        .collect();
    for attacker in attackers {
        let (refusal, sent) = attacker.join().expect("attacker");
        assert_eq!(
            refusal,
            b"-ERR Protocol error: unauthenticated bulk length\r\n"
        );
        assert!(
            sent < 64 << 20,
            "the server took {sent} bytes after closing"
        );
    }
    let mut many = connect(&server);
    let args: Vec<&[u8]> = vec![b"PING"; 11];
    many.write_all(&encode_command(&args)).expect("send");
    assert_eq!(
        read_until_closed(&mut many),
        b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    );
    let grown = memory::rss_bytes().saturating_sub(rss_before);
    assert!(grown < 8 << 20, "RSS grew by {grown} bytes");
    assert!(memory_info_number(&server, "mem_query_buffers") < 1 << 20);

    // Ten arguments of 16 KiB are still fine before AUTH (and get NOAUTH); after AUTH, so is
    // anything up to proto-max-bulk-len.
    let mut client = server.client();
    let bulk = vec![b'v'; 16 * 1024];
    let mut args: Vec<&[u8]> = vec![b"BF.MADD", b"k"];
    args.extend(std::iter::repeat_n(&bulk[..], 8));
    assert_eq!(
        client.command(&args),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(client.cmd(&["AUTH", "s3cret"]), b"+OK\r\n");
    let big = vec![b'v'; 4 << 20];
    assert_eq!(client.command(&[b"SET", b"big", &big]), b"+OK\r\n");
    let items: Vec<String> = (0..100).map(|i| format!("item{i}")).collect();
    let mut madd: Vec<&[u8]> = vec![b"BF.MADD", b"f"];
    madd.extend(items.iter().map(|i| i.as_bytes()));
    assert!(client.command(&madd).starts_with(b"*100\r\n"));
    assert_eq!(client.cmd(&["STRLEN", "big"]), b":4194304\r\n");
}

#[test]
fn a_client_past_client_query_buffer_limit_is_closed_without_a_reply() {
    let server = TestServer::start();
    let mut admin = server.client();
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "client-query-buffer-limit", "1048576"]),
        b"+OK\r\n"
    );
    assert_eq!(
        admin.cmd(&["CONFIG", "GET", "client-query-buffer-limit"]),
        b"*2\r\n$25\r\nclient-query-buffer-limit\r\n$7\r\n1048576\r\n"
    );
    let mut greedy = connect(&server);
    greedy
        .write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n")
        .expect("header");
    let sent = send_payload(&mut greedy, 3_000_000);
    assert_eq!(read_until_closed(&mut greedy), b"", "after {sent} bytes");
    assert_eq!(admin.cmd(&["EXISTS", "k"]), b":0\r\n");
    // Under the limit, a request of the same kind goes through.
    let value = vec![b'v'; 900_000];
    assert_eq!(admin.command(&[b"SET", b"k", &value]), b"+OK\r\n");
}

#[test]
fn the_ceiling_on_all_request_buffers_holds() {
    if !alone_in_process(module_path!(), "the_ceiling_on_all_request_buffers_holds") {
        return;
    }
    let server = TestServer::with_password("s3cret");
    let mut admin = server.client();
    assert_eq!(admin.cmd(&["AUTH", "s3cret"]), b"+OK\r\n");
    let ceiling: u64 = 16 << 20;
    assert_eq!(
        admin.cmd(&[
            "CONFIG",
            "SET",
            "max-query-buffers-memory",
            &ceiling.to_string()
        ]),
        b"+OK\r\n"
    );
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "max-query-buffers-memory", "1000"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'max-query-buffers-memory') - argument must be 0 (no limit) or at least 1048576\r\n"
    );
    let allocated_before = memory::allocated() as u64;

    // Eight clients, each sending an 8 MB value a quarter of a megabyte at a time: 64 MB
    // wanted in all, four times the ceiling.
    const VALUE: usize = 8_000_000;
    const STEP: usize = 256 * 1024;
    let mut clients: Vec<Option<TcpStream>> = (0..8)
        .map(|i| {
            let mut stream = connect(&server);
            stream
                .write_all(&encode_command(&[b"AUTH", b"s3cret"]))
                .expect("auth");
            let mut ok = [0u8; 5];
            stream.read_exact(&mut ok).expect("auth reply");
            assert_eq!(&ok, b"+OK\r\n");
            let header = format!("*3\r\n$3\r\nSET\r\n$2\r\nk{i}\r\n${VALUE}\r\n");
            stream.write_all(header.as_bytes()).expect("header");
            Some(stream)
        })
        .collect();
    let chunk = vec![b'x'; STEP];
    let (mut closed, mut most_held, mut most_allocated) = (0, 0, 0);
    for round in 0..VALUE.div_ceil(STEP) {
        let n = STEP.min(VALUE - round * STEP);
        for slot in clients.iter_mut() {
            if let Some(stream) = slot {
                if stream.write_all(&chunk[..n]).is_err() {
                    *slot = None;
                    closed += 1;
                }
            }
        }
        most_held = most_held.max(memory_info_number(&server, "mem_query_buffers"));
        most_allocated = most_allocated.max(memory::allocated() as u64);
    }
    let mut stored = 0;
    for stream in clients.iter_mut().flatten() {
        stream.write_all(b"\r\n").ok();
        match read_until_closed_or_reply(stream).as_slice() {
            b"+OK\r\n" => stored += 1,
            b"" => closed += 1,
            other => panic!("unexpected reply {other:?}"),
        }
    }
    // A new connection's first 16 KiB buffer is not held to the ceiling (see QueryBuffer::new).
    let initial = 10 * 16 * 1024;
    assert!(
        most_held <= ceiling + initial,
        "request buffers held {most_held} bytes"
    );
    assert!(
        most_allocated.saturating_sub(allocated_before) < ceiling + (16 << 20),
        "allocations grew by {} bytes",
        most_allocated - allocated_before
    );
    assert!(stored >= 1, "no client got through");
    assert!(closed >= 1, "no client was closed");
    assert_eq!(stored + closed, 8);
    assert_eq!(admin.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(admin.cmd(&["DBSIZE"]), format!(":{stored}\r\n").as_bytes());
}

/// The one-line reply to a finished request, or nothing if the server closed the connection.
fn read_until_closed_or_reply(stream: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return out,
            Ok(_) => {
                out.push(byte[0]);
                if out.ends_with(b"\r\n") {
                    return out;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => {
                return out
            }
            Err(e) => panic!("read: {e} after {out:?}"),
        }
    }
}
