//! CLIENT KILL over real sockets: killed clients see the connection end, the caller is spared
//! unless it asks otherwise, counts and errors are Redis 7's byte for byte, and Redis Sentinel's
//! failover transaction (CONFIG REWRITE and CLIENT KILL inside MULTI) runs as it does on Redis.

use crate::support::{escape, free_port, spawn_server, DataDir, RawClient, TestServer};
use std::time::{Duration, Instant};

fn assert_reply(client: &mut RawClient, args: &[&str], expected: &[u8]) {
    let reply = client.cmd(args);
    assert_eq!(
        escape(&reply),
        escape(expected),
        "reply to {}",
        args.join(" ")
    );
}

/// A field of the client's own CLIENT INFO line, such as `addr` or `laddr`.
fn client_info_field(client: &mut RawClient, field: &str) -> String {
    let reply = String::from_utf8(client.cmd(&["CLIENT", "INFO"])).expect("text");
    reply
        .split_whitespace()
        .find_map(|pair| pair.strip_prefix(&format!("{field}=")))
        .unwrap_or_else(|| panic!("no {field} in {reply}"))
        .to_string()
}

fn client_id(client: &mut RawClient) -> String {
    let reply = client.cmd(&["CLIENT", "ID"]);
    String::from_utf8(reply[1..reply.len() - 2].to_vec()).expect("id")
}

/// The connection ended with nothing more sent, as when Redis frees a client.
fn assert_closed(client: &mut RawClient, what: &str) {
    let rest = client.read_until_closed();
    assert!(rest.is_empty(), "{what} received {}", escape(&rest));
}

/// A client the server has registered: a connection is only accepted, and so listed, once
/// the server gets to it, which PING's reply proves.
fn connect(server: &TestServer) -> RawClient {
    let mut client = server.client();
    assert_reply(&mut client, &["PING"], b"+PONG\r\n");
    client
}

fn subscriber(server: &TestServer, pattern: bool) -> RawClient {
    let mut client = server.client();
    if pattern {
        client.cmd(&["PSUBSCRIBE", "news.*"]);
    } else {
        client.cmd(&["SUBSCRIBE", "news"]);
    }
    client
}

#[test]
fn errors_are_redis_7s() {
    let server = TestServer::start();
    let mut client = connect(&server);
    let cases: &[(&[&str], &[u8])] = &[
        (
            &["CLIENT", "KILL"],
            b"-ERR wrong number of arguments for 'client|kill' command\r\n",
        ),
        (&["CLIENT", "KILL", "1.2.3.4:5"], b"-ERR No such client\r\n"),
        // Three words are the old form: ID is taken for an address.
        (&["CLIENT", "KILL", "ID"], b"-ERR No such client\r\n"),
        (
            &["CLIENT", "KILL", "ID", "0"],
            b"-ERR client-id should be greater than 0\r\n",
        ),
        (
            &["CLIENT", "KILL", "ID", "-1"],
            b"-ERR client-id should be greater than 0\r\n",
        ),
        (
            &["CLIENT", "KILL", "ID", "abc"],
            b"-ERR client-id should be greater than 0\r\n",
        ),
        (
            &["CLIENT", "KILL", "ID", "99999999999999999999999"],
            b"-ERR client-id should be greater than 0\r\n",
        ),
        (&["CLIENT", "KILL", "ID", "9999"], b":0\r\n"),
        (
            &["CLIENT", "KILL", "TYPE", "foo"],
            b"-ERR Unknown client type 'foo'\r\n",
        ),
        (&["CLIENT", "KILL", "TYPE", "MASTER"], b":0\r\n"),
        (&["CLIENT", "KILL", "TYPE", "slave"], b":0\r\n"),
        (&["CLIENT", "KILL", "TYPE", "Replica"], b":0\r\n"),
        (
            &["CLIENT", "KILL", "TYPE", "normal", "x"],
            b"-ERR syntax error\r\n",
        ),
        (&["CLIENT", "KILL", "ADDR", "1.2.3.4:5"], b":0\r\n"),
        (&["CLIENT", "KILL", "LADDR", "1.2.3.4:5"], b":0\r\n"),
        (
            &["CLIENT", "KILL", "USER", "bob"],
            b"-ERR No such user 'bob'\r\n",
        ),
        (
            &["CLIENT", "KILL", "USER", "default", "SKIPME", "maybe"],
            b"-ERR syntax error\r\n",
        ),
        (&["CLIENT", "KILL", "SKIPME", "YES"], b":0\r\n"),
        (&["CLIENT", "KILL", "FOO", "bar"], b"-ERR syntax error\r\n"),
        (
            &["CLIENT", "KILL", "TYPE", "foo", "ID", "0"],
            b"-ERR Unknown client type 'foo'\r\n",
        ),
        (
            &["CLIENT", "KILL", "ID", "0", "TYPE", "foo"],
            b"-ERR client-id should be greater than 0\r\n",
        ),
        (
            &["CLIENT", "KILL", "SKIPME", "maybe", "TYPE", "foo"],
            b"-ERR syntax error\r\n",
        ),
        // MAXAGE came with Redis 7.4.
        (
            &["CLIENT", "KILL", "MAXAGE", "x"],
            b"-ERR maxage is not an integer or out of range\r\n",
        ),
        (
            &["CLIENT", "KILL", "MAXAGE", "0"],
            b"-ERR maxage should be greater than 0\r\n",
        ),
        (&["CLIENT", "KILL", "MAXAGE", "100000"], b":0\r\n"),
    ];
    for (args, expected) in cases {
        assert_reply(&mut client, args, expected);
    }
    assert_reply(&mut client, &["PING"], b"+PONG\r\n");
}

#[test]
fn kill_by_id_closes_that_client_only() {
    let server = TestServer::start();
    let mut killer = connect(&server);
    let mut victim = connect(&server);
    let mut bystander = connect(&server);
    let id = client_id(&mut victim);
    assert_reply(&mut killer, &["CLIENT", "KILL", "ID", &id], b":1\r\n");
    assert_closed(&mut victim, "the killed client");
    // It is gone: neither killed twice nor listed.
    assert_reply(&mut killer, &["CLIENT", "KILL", "ID", &id], b":0\r\n");
    assert_reply(&mut killer, &["CLIENT", "LIST", "ID", &id], b"$0\r\n\r\n");
    assert_reply(&mut bystander, &["PING"], b"+PONG\r\n");
    assert_reply(&mut killer, &["PING"], b"+PONG\r\n");
}

#[test]
fn types_tell_normal_clients_from_subscribers() {
    let server = TestServer::start();
    let mut caller = connect(&server);
    let mut normal = connect(&server);
    let mut channel = subscriber(&server, false);
    let mut pattern = subscriber(&server, true);
    let mut resp3 = connect(&server);
    resp3.hello3();
    resp3.cmd(&["SUBSCRIBE", "news"]);

    let listed = String::from_utf8(caller.cmd(&["CLIENT", "LIST", "TYPE", "pubsub"])).unwrap();
    assert_eq!(listed.matches("flags=P ").count(), 3, "{listed}");
    assert_reply(
        &mut caller,
        &["CLIENT", "LIST", "TYPE", "master"],
        b"$0\r\n\r\n",
    );
    assert_reply(
        &mut caller,
        &["CLIENT", "LIST", "TYPE", "replica"],
        b"$0\r\n\r\n",
    );

    // The caller is normal too, and spared.
    assert_reply(
        &mut caller,
        &["CLIENT", "KILL", "TYPE", "normal"],
        b":1\r\n",
    );
    assert_closed(&mut normal, "the normal client");
    assert_reply(
        &mut caller,
        &["CLIENT", "KILL", "TYPE", "pubsub"],
        b":3\r\n",
    );
    assert_closed(&mut channel, "the channel subscriber");
    assert_closed(&mut pattern, "the pattern subscriber");
    assert_closed(&mut resp3, "the RESP3 subscriber");
    assert_reply(
        &mut caller,
        &["CLIENT", "KILL", "TYPE", "normal"],
        b":0\r\n",
    );
    assert_reply(&mut caller, &["PING"], b"+PONG\r\n");
}

#[test]
fn addresses_and_user_select_clients() {
    let server = TestServer::start();
    let mut caller = connect(&server);
    let mut by_addr = connect(&server);
    let mut others = [connect(&server), connect(&server)];
    let addr = client_info_field(&mut by_addr, "addr");
    assert_reply(&mut caller, &["CLIENT", "KILL", "ADDR", &addr], b":1\r\n");
    assert_closed(&mut by_addr, "the client killed by ADDR");

    // Every client connected to the server's one address, but the caller.
    let laddr = client_info_field(&mut caller, "laddr");
    assert_eq!(laddr, server.addr.to_string());
    assert_reply(
        &mut caller,
        &["CLIENT", "KILL", "LADDR", &laddr, "USER", "default"],
        b":2\r\n",
    );
    for other in &mut others {
        assert_closed(other, "a client killed by LADDR");
    }
    assert_reply(&mut caller, &["PING"], b"+PONG\r\n");
}

#[test]
fn old_form_answers_ok_and_may_kill_the_caller() {
    let server = TestServer::start();
    let mut caller = connect(&server);
    let mut victim = connect(&server);
    let addr = client_info_field(&mut victim, "addr");
    assert_reply(&mut caller, &["CLIENT", "KILL", &addr], b"+OK\r\n");
    assert_closed(&mut victim, "the client killed by address");
    assert_reply(
        &mut caller,
        &["CLIENT", "KILL", &addr],
        b"-ERR No such client\r\n",
    );

    let own = client_info_field(&mut caller, "addr");
    assert_reply(&mut caller, &["CLIENT", "KILL", &own], b"+OK\r\n");
    assert_closed(&mut caller, "the client that killed itself");
}

#[test]
fn skipme_no_kills_the_caller_after_its_reply_and_runs_nothing_after() {
    let server = TestServer::start();
    let mut caller = connect(&server);
    let mut other = connect(&server);
    let mut checker = connect(&server);
    checker.cmd(&["SUBSCRIBE", "spared"]);
    // Pipelined: the SET after the kill must not run, as in Redis.
    let mut batch =
        crate::support::encode_command(&[b"CLIENT", b"KILL", b"TYPE", b"normal", b"SKIPME", b"no"]);
    batch.extend(crate::support::encode_command(&[b"SET", b"after", b"kill"]));
    caller.send(&batch);
    assert_eq!(escape(&caller.read_reply()), escape(b":2\r\n"));
    assert_closed(&mut caller, "the caller");
    assert_closed(&mut other, "the other normal client");
    let mut fresh = connect(&server);
    assert_reply(&mut fresh, &["EXISTS", "after"], b":0\r\n");
    assert_reply(&mut fresh, &["CLIENT", "KILL", "TYPE", "pubsub"], b":1\r\n");
    assert_closed(&mut checker, "the subscriber");
}

/// Waits until CLIENT LIST shows `count` clients: the connection the start-up check made may
/// still be registered for a moment after it closed.
fn wait_for_clients(client: &mut RawClient, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = String::from_utf8(client.cmd(&["CLIENT", "LIST"])).expect("text");
        if list.matches("id=").count() == count {
            return;
        }
        assert!(Instant::now() < deadline, "clients never settled: {list}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What Redis Sentinel sends a replica it promotes (with REPLICAOF NO ONE first): the config
/// file is rewritten, every normal and Pub/Sub client is disconnected, Sentinel's own link is
/// kept. Redis 7.0 answers EXEC with `*3 +OK :1 :2` for the clients made here.
#[test]
fn sentinel_failover_transaction() {
    let dir = DataDir::new("client-kill-failover");
    let config_file = dir.0.join("sieved.conf");
    std::fs::write(&config_file, "timeout 0\n").expect("write config");
    let port = free_port();
    let _server = spawn_server(
        &dir.0,
        port,
        &["--config", &config_file.display().to_string()],
    );
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut sentinel = RawClient::connect(addr);
    let mut normal = RawClient::connect(addr);
    let mut channel = RawClient::connect(addr);
    let mut pattern = RawClient::connect(addr);
    assert_reply(&mut normal, &["PING"], b"+PONG\r\n");
    channel.cmd(&["SUBSCRIBE", "news"]);
    pattern.cmd(&["PSUBSCRIBE", "news.*"]);
    wait_for_clients(&mut sentinel, 4);

    assert_reply(&mut sentinel, &["MULTI"], b"+OK\r\n");
    for queued in [
        &["CONFIG", "REWRITE"][..],
        &["CLIENT", "KILL", "TYPE", "normal"],
        &["CLIENT", "KILL", "TYPE", "pubsub"],
    ] {
        assert_reply(&mut sentinel, queued, b"+QUEUED\r\n");
    }
    // Nothing ran yet.
    assert_reply(&mut normal, &["PING"], b"+PONG\r\n");
    assert_reply(&mut sentinel, &["EXEC"], b"*3\r\n+OK\r\n:1\r\n:2\r\n");
    assert_closed(&mut normal, "the normal client");
    assert_closed(&mut channel, "the channel subscriber");
    assert_closed(&mut pattern, "the pattern subscriber");
    assert_reply(&mut sentinel, &["PING"], b"+PONG\r\n");
    let rewritten = std::fs::read_to_string(&config_file).expect("read config");
    assert!(rewritten.contains("timeout 0"), "{rewritten}");
}

/// The fields of `client`'s line in CLIENT LIST, as `observer` sees them: flags, multi, cmd.
fn seen_as(observer: &mut RawClient, id: &str) -> String {
    let list = String::from_utf8(observer.cmd(&["CLIENT", "LIST", "ID", id])).expect("text");
    ["flags", "multi", "cmd"]
        .map(|field| {
            let prefix = format!(" {field}=");
            let start = list.find(&prefix).unwrap_or_else(|| panic!("{list}")) + 1;
            list[start..]
                .split(' ')
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .join(" ")
}

/// Redis 7.0 marks a client inside MULTI with flag `x` and counts what it queued; CLIENT INFO
/// inside EXEC still sees the transaction, and afterwards the client is back to `N`.
#[test]
fn client_list_shows_transactions_as_redis() {
    let server = TestServer::start();
    let mut client = connect(&server);
    let mut observer = connect(&server);
    let id = client_id(&mut client);
    assert_eq!(seen_as(&mut observer, &id), "flags=N multi=-1 cmd=client");
    assert_reply(&mut client, &["MULTI"], b"+OK\r\n");
    assert_eq!(seen_as(&mut observer, &id), "flags=x multi=0 cmd=multi");
    assert_reply(&mut client, &["PING"], b"+QUEUED\r\n");
    assert_reply(&mut client, &["CLIENT", "INFO"], b"+QUEUED\r\n");
    assert_eq!(seen_as(&mut observer, &id), "flags=x multi=2 cmd=client");
    let exec = String::from_utf8(client.cmd(&["EXEC"])).expect("text");
    assert!(exec.contains(" flags=x "), "{exec}");
    assert!(exec.contains(" multi=2 "), "{exec}");
    assert_eq!(seen_as(&mut observer, &id), "flags=N multi=-1 cmd=exec");

    assert_reply(
        &mut client,
        &["SUBSCRIBE", "news"],
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n",
    );
    assert_eq!(
        seen_as(&mut observer, &id),
        "flags=P multi=-1 cmd=subscribe"
    );
}
