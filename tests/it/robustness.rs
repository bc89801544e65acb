//! Hostile input: no request crashes the server, makes it allocate without bound, or disturbs
//! other clients. A bad request gets an error; a broken stream closes only its own connection.

use crate::support::{alone_in_process, Rng, TestServer};
use sieved::cmd::COMMANDS;
use sieved::memory;

/// Arguments chosen to hit parsing edges: numbers at and past their limits, NaN and infinities,
/// empty and binary strings, and the keywords commands look for.
const NASTY: &[&[u8]] = &[
    b"",
    b"0",
    b"1",
    b"-1",
    b"2",
    b"3",
    b"7",
    b"16",
    b"0.5",
    b"1e-300",
    b"1e309",
    b"nan",
    b"inf",
    b"-inf",
    b"99999999999999999999",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"1073741824",
    b"1073741825",
    b"32769",
    b"\x00\xff\r\n",
    b"k",
    b"f",
    b"s",
    b"EXPANSION",
    b"NONSCALING",
    b"ITEMS",
    b"CAPACITY",
    b"ERROR",
    b"NOCREATE",
    b"MATCH",
    b"COUNT",
    b"TYPE",
    b"*",
    b"[",
    b"\\",
    b"GET",
    b"SET",
    b"ID",
    b"INFO",
    b"LIST",
    b"USAGE",
    b"SETNAME",
    b"ENCODING",
    b"NX",
    b"XX",
    b"GT",
    b"EX",
    b"KEEPTTL",
    b"DB",
    b"REPLACE",
    b"AUTH",
    b"default",
];

/// Commands that end or reshape the connection are exercised elsewhere; (un)subscribing, in
/// pubsub.rs, as it answers once per channel and puts a RESP2 connection in Pub/Sub mode.
const SKIPPED: &[&str] = &[
    "shutdown",
    "quit",
    "reset",
    "hello",
    "multi",
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "punsubscribe",
];

#[test]
fn every_command_survives_hostile_arguments() {
    let server = TestServer::start();
    let mut client = server.client();
    let mut rng = Rng(0x5eed);
    for spec in COMMANDS.iter().filter(|s| !SKIPPED.contains(&s.name)) {
        for round in 0..60 {
            client.cmd(&["FLUSHALL"]);
            client.cmd(&["SET", "s", "v"]);
            client.cmd(&["BF.RESERVE", "f", "0.01", "100", "EXPANSION", "1"]);
            let mut args: Vec<&[u8]> = vec![spec.name.as_bytes()];
            for _ in 0..rng.below(7) {
                args.push(NASTY[rng.index(NASTY.len())]);
            }
            // A blocking command runs inside MULTI, where it never waits: its arguments meet
            // the same checks, and the round never hangs on a timeout of 0.
            let blocking = spec.flags.names().any(|flag| flag == "blocking");
            if blocking {
                assert_eq!(client.cmd(&["MULTI"]), b"+OK\r\n");
            }
            let mut reply = client.command(&args);
            if blocking {
                reply = client.cmd(&["EXEC"]);
            }
            assert!(!reply.is_empty());
            assert_eq!(
                client.cmd(&["PING"]),
                b"+PONG\r\n",
                "{} round {round}: connection unusable after {:?}",
                spec.name,
                args.iter()
                    .map(|a| String::from_utf8_lossy(a))
                    .collect::<Vec<_>>()
            );
            let _ = client.cmd(&["SELECT", "0"]);
        }
    }
}

#[test]
fn declared_sizes_cost_nothing_until_sent() {
    if !alone_in_process(module_path!(), "declared_sizes_cost_nothing_until_sent") {
        return;
    }
    let server = TestServer::start();
    let before = memory::allocated();
    let mut liars = Vec::new();
    for _ in 0..20 {
        let mut liar = server.client();
        // 500 MB announced (within proto-max-bulk-len), ten bytes sent.
        liar.send(b"*2\r\n$6\r\nBF.ADD\r\n$524288000\r\n0123456789");
        liars.push(liar);
        let mut counter = server.client();
        counter.send(b"*8000000\r\n$4\r\nPING\r\n");
        liars.push(counter);
    }
    let mut client = server.client();
    assert_eq!(client.cmd(&["PING"]), b"+PONG\r\n");
    let grown = memory::allocated().saturating_sub(before);
    // Each liar may have up to 1 MiB of read-ahead reserved; nothing proportional to the claims.
    assert!(
        grown < 64 * 1024 * 1024,
        "grew {grown} bytes for 40 lying clients"
    );
}

#[test]
fn a_broken_stream_closes_only_its_connection() {
    let server = TestServer::start();
    let mut bystander = server.client();
    assert_eq!(bystander.cmd(&["BF.ADD", "k", "x"]), b":1\r\n");
    let mut broken = server.client();
    broken.send(b"*1\r\n$4\r\nPING\r\n*2\r\n$1\r\nx\r\n!!!!\r\n");
    assert_eq!(broken.read_reply(), b"+PONG\r\n");
    assert_eq!(
        broken.read_reply(),
        b"-ERR Protocol error: expected '$', got '!'\r\n"
    );
    assert!(broken.is_closed());
    assert_eq!(bystander.cmd(&["BF.EXISTS", "k", "x"]), b":1\r\n");
}

#[test]
fn deep_nesting_is_refused_at_once() {
    let server = TestServer::start();
    let mut client = server.client();
    client.send(&b"*1\r\n".repeat(100_000));
    assert_eq!(
        client.read_reply(),
        b"-ERR Protocol error: expected '$', got '*'\r\n"
    );
    assert!(client.is_closed());
    let mut other = server.client();
    assert_eq!(other.command(&[b"PING"]), b"+PONG\r\n");
}
