//! A thousand clients connected at once, over TCP and TLS, while three of them misbehave: one
//! announces a 1 GB argument and trickles it, one pipelines large replies and never reads them,
//! one sends garbage. Every well-behaved client gets exactly the right replies, and the hostile
//! ones are cut off without costing the server what they asked for.

use crate::support::async_client::AsyncClient;
use crate::support::tls::{self, Identity};
use crate::support::{alone_in_process, encode_command, TestServer};
use sieved::config::ClientAuth;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::Barrier;

const CONNECTIONS: usize = 1000;
const HOSTILE: usize = 3;
const WELL_BEHAVED: usize = CONNECTIONS - HOSTILE;
/// Every this many well-behaved clients, one comes over TLS.
const TLS_EVERY: usize = 10;
/// The replies the non-reader asks for: each a copy of a 1 MiB string.
const UNREAD_REPLIES: usize = 200;
const BIG_STRING: usize = 1024 * 1024;

async fn plain(addr: SocketAddr) -> AsyncClient<TcpStream> {
    AsyncClient::new(TcpStream::connect(addr).await.expect("connect"))
}

/// Waits until the server counts `expected` clients; a test that never gets there times out.
async fn wait_for_clients(server: &TestServer, expected: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.shared.clients.count() != expected {
        assert!(
            Instant::now() < deadline,
            "{} clients, expected {expected}",
            server.shared.clients.count()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One well-behaved client's conversation, each reply checked byte for byte.
async fn converse<S>(client: &mut AsyncClient<S>, i: usize) -> Result<(), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let key = format!("key:{i}");
    let expectations: [(&[&str], &[u8]); 7] = [
        (&["BF.ADD", &key, "a"], b":1\r\n"),
        (&["BF.ADD", &key, "a"], b":0\r\n"),
        (&["BF.MADD", &key, "b", "c"], b"*2\r\n:1\r\n:1\r\n"),
        (&["BF.EXISTS", &key, "a"], b":1\r\n"),
        (&["BF.EXISTS", &key, "absent"], b":0\r\n"),
        (&["BF.EXISTS", "shared", "known"], b":1\r\n"),
        (&["BF.CARD", &key], b":3\r\n"),
    ];
    for (command, expected) in expectations {
        let reply = client
            .cmd(command)
            .await
            .map_err(|e| format!("client {i} {command:?}: {e}"))?;
        if reply != expected {
            return Err(format!(
                "client {i} {command:?}: {} instead of {}",
                crate::support::escape(&reply),
                crate::support::escape(expected)
            ));
        }
    }
    Ok(())
}

/// Says PING, waits until every client has, converses, and stays connected until every client
/// is done.
async fn converse_when_all_are_in<S>(
    client: Result<AsyncClient<S>, String>,
    i: usize,
    start: &Barrier,
    finish: &Barrier,
) -> Result<(), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut ping = match client {
        Ok(mut client) => match client.cmd(&["PING"]).await {
            Ok(reply) if reply == b"+PONG\r\n" => Ok(client),
            Ok(reply) => Err(format!(
                "client {i} PING: {}",
                crate::support::escape(&reply)
            )),
            Err(e) => Err(format!("client {i} PING: {e}")),
        },
        Err(e) => Err(e),
    };
    start.wait().await;
    let outcome = match &mut ping {
        Ok(client) => converse(client, i).await,
        Err(e) => Err(e.clone()),
    };
    finish.wait().await;
    outcome
}

#[test]
fn a_thousand_clients_and_three_hostile_ones() {
    // It checks what its whole process has allocated.
    if !alone_in_process(module_path!(), "a_thousand_clients_and_three_hostile_ones") {
        return;
    }
    // Each connection is two descriptors in this process: the client's and the server's.
    let wanted = 2 * CONNECTIONS as u64 + 200;
    let limit = sieved::open_files::raise_to(wanted).expect("the open-files limit");
    assert!(
        limit >= wanted,
        "this test needs {wanted} open files; the hard limit allows {limit}"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let config = tls::config(ClientAuth::Optional);
    // So that the announced gigabyte is a request the server must take in, not refuse at once.
    config
        .set_many(&[(b"proto-max-bulk-len", b"2147483648")])
        .expect("settings");
    let server = TestServer::start_with(config);
    let (addr, tls_addr) = (server.addr, server.tls_addr.expect("TLS port"));

    let mut admin = plain(addr).await;
    assert_eq!(
        admin.cmd(&["BF.ADD", "shared", "known"]).await.unwrap(),
        b":1\r\n"
    );
    let big = "b".repeat(BIG_STRING);
    assert_eq!(admin.cmd(&["SET", "big", &big]).await.unwrap(), b"+OK\r\n");

    let mut trickler = plain(addr).await;
    let mut non_reader = plain(addr).await;
    let mut garbage = plain(addr).await;

    // Connections that are open but silent may wait unseen in the kernel's accept queue, so the
    // hostile ones are in before the crowd arrives, and each of the crowd says PING first.
    wait_for_clients(&server, 1 + HOSTILE).await;
    // All connections open before the conversations start, and none closed before all end.
    let start = Arc::new(Barrier::new(WELL_BEHAVED + 1));
    let finish = Arc::new(Barrier::new(WELL_BEHAVED + 1));
    let mut clients = Vec::with_capacity(WELL_BEHAVED);
    for i in 0..WELL_BEHAVED {
        let (start, finish) = (start.clone(), finish.clone());
        clients.push(tokio::spawn(async move {
            if i % TLS_EVERY == 0 {
                let client = tls::connect(tls_addr, Identity::Signed)
                    .await
                    .map_err(|e| format!("client {i}: TLS handshake: {e}"));
                converse_when_all_are_in(client, i, &start, &finish).await
            } else {
                let client = TcpStream::connect(addr)
                    .await
                    .map(AsyncClient::new)
                    .map_err(|e| format!("client {i}: connect: {e}"));
                converse_when_all_are_in(client, i, &start, &finish).await
            }
        }));
    }
    start.wait().await;
    assert_eq!(server.shared.clients.count(), CONNECTIONS + 1);

    // 1 GB announced, then a kilobyte at a time for as long as the others talk.
    trickler
        .send(b"*3\r\n$6\r\nBF.ADD\r\n$1\r\nt\r\n$1073741824\r\n")
        .await
        .unwrap();
    let trickling = Arc::new(AtomicBool::new(true));
    let trickle = tokio::spawn({
        let trickling = trickling.clone();
        async move {
            while trickling.load(Ordering::Relaxed) {
                trickler.send(&[b'x'; 1024]).await.expect("trickle");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            trickler
        }
    });
    // Hundreds of megabytes of replies asked for in a few kilobytes, never read.
    let mut requests = Vec::new();
    for _ in 0..UNREAD_REPLIES {
        requests.extend(encode_command(&[b"GET", b"big"]));
    }
    non_reader.send(&requests).await.unwrap();
    garbage
        .send(b"*1\r\n$4\r\nPING\r\n*1\r\nX\r\n")
        .await
        .unwrap();

    finish.wait().await;
    let mut failures = Vec::new();
    for client in clients {
        if let Err(failure) = client.await.expect("client task") {
            failures.push(failure);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {WELL_BEHAVED} clients failed; first: {}",
        failures.len(),
        failures[0]
    );

    assert_eq!(
        garbage.read_until_closed().await,
        b"+PONG\r\n-ERR Protocol error: expected '$', got 'X'\r\n"
    );
    // Neither the announced gigabyte nor the unread replies were allocated (the counter covers
    // this whole process, clients included).
    let allocated = sieved::memory::allocated();
    assert!(allocated < 256 << 20, "{} MiB allocated", allocated >> 20);

    // An idle timeout ends both remaining hostile clients: the trickler once it stops sending,
    // the non-reader because it has taken no reply for that long. The admin goes too; only once
    // the server has let go of all of them do the hostile clients read what they were sent.
    trickling.store(false, Ordering::Relaxed);
    let mut trickler = trickle.await.expect("trickler");
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "timeout", "1"]).await.unwrap(),
        b"+OK\r\n"
    );
    wait_for_clients(&server, 0).await;
    assert_eq!(trickler.read_until_closed().await, b"");
    let unread = non_reader.read_until_closed().await;
    let one_reply = format!("${BIG_STRING}\r\n").len() + BIG_STRING + 2;
    assert!(
        unread.len() < UNREAD_REPLIES * one_reply / 2,
        "the non-reader got {} of its {UNREAD_REPLIES} replies",
        unread.len() / one_reply
    );
    assert!(admin.read_until_closed().await.is_empty());

    let mut fresh = plain(addr).await;
    assert_eq!(fresh.cmd(&["BF.CARD", "key:0"]).await.unwrap(), b":3\r\n");
    assert_eq!(fresh.cmd(&["BF.CARD", "t"]).await.unwrap(), b":0\r\n");
}
