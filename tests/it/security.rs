//! Authentication and limits: passwords, client counts, idle clients, memory, and clients that
//! never read their replies.

use crate::support::{alone_in_process, encode_command, TestServer};
use sieved::config::Config;
use sieved::memory;

#[test]
fn a_password_guards_every_command_but_auth() {
    let server = TestServer::with_password("s3cret");
    let mut client = server.client();
    assert_eq!(
        client.cmd(&["PING"]),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(
        client.cmd(&["BF.ADD", "k", "x"]),
        b"-NOAUTH Authentication required.\r\n"
    );
    // As in Redis, a name or arity mistake is reported before the missing authentication.
    assert_eq!(
        client.cmd(&["NOSUCH"]),
        b"-ERR unknown command 'NOSUCH', with args beginning with: \r\n"
    );
    assert_eq!(
        client.cmd(&["AUTH", "wrong"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(
        client.cmd(&["AUTH", "someone", "s3cret"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert!(client
        .cmd(&["HELLO", "3"])
        .starts_with(b"-NOAUTH HELLO must be called"));
    assert_eq!(client.cmd(&["AUTH", "s3cret"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["BF.ADD", "k", "x"]), b":1\r\n");
    assert_eq!(client.cmd(&["RESET"]), b"+RESET\r\n");
    assert_eq!(
        client.cmd(&["PING"]),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(client.cmd(&["AUTH", "default", "s3cret"]), b"+OK\r\n");

    let mut hello = server.client();
    hello.resp = crate::support::Resp::Three;
    assert!(hello
        .cmd(&["HELLO", "3", "AUTH", "default", "s3cret"])
        .starts_with(b"%7\r\n"));
    assert_eq!(hello.cmd(&["BF.EXISTS", "k", "x"]), b"#t\r\n");
}

#[test]
fn config_set_requirepass_applies_to_new_connections() {
    let server = TestServer::start();
    let mut admin = server.client();
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "requirepass", "now"]),
        b"+OK\r\n"
    );
    // Connections that were authenticated stay so, as in Redis.
    assert_eq!(admin.cmd(&["PING"]), b"+PONG\r\n");
    let mut late = server.client();
    assert_eq!(late.cmd(&["PING"]), b"-NOAUTH Authentication required.\r\n");
    assert_eq!(late.cmd(&["AUTH", "now"]), b"+OK\r\n");
    assert_eq!(admin.cmd(&["CONFIG", "SET", "requirepass", ""]), b"+OK\r\n");
    assert_eq!(server.client().cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn clients_past_maxclients_are_turned_away() {
    let server = TestServer::start();
    let mut first = server.client();
    assert_eq!(first.cmd(&["CONFIG", "SET", "maxclients", "2"]), b"+OK\r\n");
    let mut second = server.client();
    assert_eq!(second.cmd(&["PING"]), b"+PONG\r\n");
    let mut third = server.client();
    assert_eq!(
        third.read_reply(),
        b"-ERR max number of clients reached\r\n"
    );
    assert!(third.is_closed());
    let info = String::from_utf8(first.cmd(&["INFO", "stats"])).expect("text");
    assert!(info.contains("rejected_connections:1\r\n"), "{info}");
    drop(second);
    first.cmd(&["CONFIG", "SET", "maxclients", "10000"]);
}

#[test]
fn idle_clients_are_closed_after_the_timeout() {
    let server = TestServer::start();
    let mut client = server.client();
    assert_eq!(client.cmd(&["CONFIG", "SET", "timeout", "1"]), b"+OK\r\n");
    let mut idle = server.client();
    assert_eq!(idle.cmd(&["PING"]), b"+PONG\r\n");
    assert!(idle.is_closed(), "an idle client was kept past the timeout");
}

#[test]
fn clients_that_take_no_replies_are_closed_after_the_timeout() {
    let server = TestServer::start();
    let mut admin = server.client();
    let big = "b".repeat(1 << 20);
    assert_eq!(admin.cmd(&["SET", "big", &big]), b"+OK\r\n");
    // Both wait already when the timeout is set, and it reaches them all the same.
    let mut idle = server.client();
    assert_eq!(idle.cmd(&["PING"]), b"+PONG\r\n");
    let mut stuck = server.client();
    let mut pipeline = Vec::new();
    for _ in 0..200 {
        pipeline.extend(encode_command(&[b"GET", b"big"]));
    }
    stuck.send(&pipeline);
    assert_eq!(admin.cmd(&["CONFIG", "SET", "timeout", "1"]), b"+OK\r\n");
    // All three go, the admin too; only then is the stuck client allowed to read.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while server.shared.clients.count() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "clients kept past the timeout"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(idle.is_closed());
    let received = stuck.read_until_closed();
    assert!(
        received.len() < 100 << 20,
        "{} bytes sent to a client that took none for longer than the timeout",
        received.len()
    );
}

#[test]
fn writes_are_refused_over_maxmemory() {
    let server = TestServer::start();
    let mut client = server.client();
    client.cmd(&["BF.ADD", "k", "x"]);
    assert_eq!(client.cmd(&["CONFIG", "SET", "maxmemory", "1"]), b"+OK\r\n");
    let oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    assert_eq!(client.cmd(&["BF.ADD", "k", "y"]), oom);
    assert_eq!(client.cmd(&["BF.RESERVE", "n", "0.01", "100"]), oom);
    assert_eq!(client.cmd(&["CBF.ADD", "c", "y"]), oom);
    // Reads and deletions still work, so the memory can be freed.
    assert_eq!(client.cmd(&["BF.EXISTS", "k", "x"]), b":1\r\n");
    assert_eq!(client.cmd(&["DEL", "k"]), b":1\r\n");
    assert_eq!(client.cmd(&["CONFIG", "SET", "maxmemory", "0"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["BF.ADD", "k", "y"]), b":1\r\n");
}

#[test]
fn a_client_that_does_not_read_cannot_pile_up_replies() {
    if !alone_in_process(
        module_path!(),
        "a_client_that_does_not_read_cannot_pile_up_replies",
    ) {
        return;
    }
    let server = TestServer::start();
    let mut client = server.client();
    client.cmd(&["BF.RESERVE", "big", "0.01", "14000000", "NONSCALING"]);
    let before = memory::allocated();
    // 64 requests for a 16 MiB chunk: a gigabyte of replies if they were all buffered.
    let mut pipeline = Vec::new();
    for _ in 0..64 {
        pipeline.extend(encode_command(&[b"BF.SCANDUMP", b"big", b"1"]));
    }
    client.send(&pipeline);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let grown = memory::allocated().saturating_sub(before);
    assert!(
        grown < 128 << 20,
        "{grown} bytes of replies buffered for a client that does not read"
    );
    for _ in 0..64 {
        assert!(client.read_reply().len() > 16_000_000);
    }
}

#[test]
fn clearing_requirepass_lets_in_connections_that_never_authenticated() {
    let server = TestServer::with_password("s3cret");
    let mut waiting = server.client();
    assert_eq!(
        waiting.cmd(&["PING"]),
        b"-NOAUTH Authentication required.\r\n"
    );
    let mut admin = server.client();
    assert_eq!(admin.cmd(&["AUTH", "s3cret"]), b"+OK\r\n");
    assert_eq!(admin.cmd(&["CONFIG", "SET", "requirepass", ""]), b"+OK\r\n");
    // As in Redis, authentication is asked for only while a password is set.
    assert_eq!(waiting.cmd(&["PING"]), b"+PONG\r\n");
    assert!(waiting.cmd(&["HELLO", "2"]).starts_with(b"*14\r\n"));
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "requirepass", "again"]),
        b"+OK\r\n"
    );
    // It never authenticated, so a new password shuts it out again, as in Redis.
    assert_eq!(
        waiting.cmd(&["PING"]),
        b"-NOAUTH Authentication required.\r\n"
    );
}

#[test]
fn protected_mode_on_a_dual_stack_socket_accepts_ipv4_loopback() {
    let mut config = Config::default_for_tests();
    config.bind = "::".to_string();
    let server = TestServer::start_with(config);
    let ipv4: std::net::SocketAddr = ([127, 0, 0, 1], server.addr.port()).into();
    let mut client = crate::support::RawClient::connect(ipv4);
    assert_eq!(client.cmd(&["PING"]), b"+PONG\r\n");
}
