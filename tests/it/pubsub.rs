//! Pub/Sub against an in-process server, byte for byte as Debian's redis-server 7.0 answers the
//! same requests (the expected bytes below were captured from it).

use crate::support::{encode_command, escape, RawClient, TestServer};

/// Sends `lines` (space-separated words) as one pipeline and returns the next `replies`
/// replies, joined.
fn pipeline(client: &mut RawClient, lines: &[&str], replies: usize) -> String {
    let mut out = Vec::new();
    for line in lines {
        let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        out.extend(encode_command(&words));
    }
    client.send(&out);
    (0..replies).map(|_| escape(&client.read_reply())).collect()
}

fn read(client: &mut RawClient) -> String {
    escape(&client.read_reply())
}

#[test]
fn resp2_context_replies_as_redis() {
    let server = TestServer::start();
    let mut client = server.client();
    let got = pipeline(
        &mut client,
        &[
            "PUBSUB FOO",
            "PUBSUB NUMPAT x",
            "PUBSUB",
            "PUBSUB CHANNELS a b",
            "PUBSUB NUMSUB",
            "SUBSCRIBE",
            "PUBLISH a",
            "MULTI",
            "SUBSCRIBE a",
            "PUBLISH a b",
            "EXEC",
            "PING",
            "GET a",
            "PING x",
            "SUBSCRIBE a a",
            "UNSUBSCRIBE b",
            "PUNSUBSCRIBE",
            "MULTI",
            "RESET",
            "PUNSUBSCRIBE",
        ],
        22,
    );
    let only = "only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this \
                context";
    let expected = format!(
        "-ERR unknown subcommand 'FOO'. Try PUBSUB HELP.\\r\\n\
         -ERR wrong number of arguments for 'pubsub|numpat' command\\r\\n\
         -ERR wrong number of arguments for 'pubsub' command\\r\\n\
         -ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.\\r\\n\
         *0\\r\\n\
         -ERR wrong number of arguments for 'subscribe' command\\r\\n\
         -ERR wrong number of arguments for 'publish' command\\r\\n\
         +OK\\r\\n+QUEUED\\r\\n+QUEUED\\r\\n\
         *2\\r\\n*3\\r\\n$9\\r\\nsubscribe\\r\\n$1\\r\\na\\r\\n:1\\r\\n\
         *3\\r\\n$7\\r\\nmessage\\r\\n$1\\r\\na\\r\\n$1\\r\\nb\\r\\n:1\\r\\n\
         *2\\r\\n$4\\r\\npong\\r\\n$0\\r\\n\\r\\n\
         -ERR Can't execute 'get': {only}\\r\\n\
         *2\\r\\n$4\\r\\npong\\r\\n$1\\r\\nx\\r\\n\
         *3\\r\\n$9\\r\\nsubscribe\\r\\n$1\\r\\na\\r\\n:1\\r\\n\
         *3\\r\\n$9\\r\\nsubscribe\\r\\n$1\\r\\na\\r\\n:1\\r\\n\
         *3\\r\\n$11\\r\\nunsubscribe\\r\\n$1\\r\\nb\\r\\n:1\\r\\n\
         *3\\r\\n$12\\r\\npunsubscribe\\r\\n$-1\\r\\n:1\\r\\n\
         -ERR Can't execute 'multi': {only}\\r\\n\
         +RESET\\r\\n\
         *3\\r\\n$12\\r\\npunsubscribe\\r\\n$-1\\r\\n:0\\r\\n"
    );
    assert_eq!(got, expected);
    // RESET left the channel: the client is back to normal.
    assert_eq!(read_cmd(&mut client, &["GET", "a"]), "$-1\\r\\n");
    assert_eq!(
        read_cmd(&mut client, &["PUBSUB", "NUMSUB", "a"]),
        "*2\\r\\n$1\\r\\na\\r\\n:0\\r\\n"
    );
}

fn read_cmd(client: &mut RawClient, args: &[&str]) -> String {
    escape(&client.cmd(args))
}

#[test]
fn resp3_subscriber_gets_pushes_and_runs_any_command() {
    let server = TestServer::start();
    let mut client = server.client();
    client.hello3();
    let got = pipeline(
        &mut client,
        &[
            "SUBSCRIBE a",
            "PING",
            "GET a",
            "PUBLISH a hi",
            "PSUBSCRIBE a*",
            "PUBLISH a hi",
            "UNSUBSCRIBE",
            "PUNSUBSCRIBE",
            "UNSUBSCRIBE",
            "PUBSUB NUMSUB a b",
        ],
        13,
    );
    let expected = ">3\\r\\n$9\\r\\nsubscribe\\r\\n$1\\r\\na\\r\\n:1\\r\\n\
         +PONG\\r\\n_\\r\\n\
         >3\\r\\n$7\\r\\nmessage\\r\\n$1\\r\\na\\r\\n$2\\r\\nhi\\r\\n:1\\r\\n\
         >3\\r\\n$10\\r\\npsubscribe\\r\\n$2\\r\\na*\\r\\n:2\\r\\n\
         >3\\r\\n$7\\r\\nmessage\\r\\n$1\\r\\na\\r\\n$2\\r\\nhi\\r\\n\
         >4\\r\\n$8\\r\\npmessage\\r\\n$2\\r\\na*\\r\\n$1\\r\\na\\r\\n$2\\r\\nhi\\r\\n:2\\r\\n\
         >3\\r\\n$11\\r\\nunsubscribe\\r\\n$1\\r\\na\\r\\n:1\\r\\n\
         >3\\r\\n$12\\r\\npunsubscribe\\r\\n$2\\r\\na*\\r\\n:0\\r\\n\
         >3\\r\\n$11\\r\\nunsubscribe\\r\\n_\\r\\n:0\\r\\n\
         *4\\r\\n$1\\r\\na\\r\\n:0\\r\\n$1\\r\\nb\\r\\n:0\\r\\n";
    assert_eq!(got, expected);
}

#[test]
fn messages_reach_waiting_subscribers_of_channels_and_patterns() {
    let server = TestServer::start();
    let mut channel_reader = server.client();
    let mut pattern_reader = server.client();
    let mut publisher = server.client();
    assert_eq!(
        read_cmd(&mut channel_reader, &["SUBSCRIBE", "news.art", "news.tech"]),
        "*3\\r\\n$9\\r\\nsubscribe\\r\\n$8\\r\\nnews.art\\r\\n:1\\r\\n"
    );
    assert_eq!(
        read(&mut channel_reader),
        "*3\\r\\n$9\\r\\nsubscribe\\r\\n$9\\r\\nnews.tech\\r\\n:2\\r\\n"
    );
    pattern_reader.hello3();
    assert_eq!(
        read_cmd(&mut pattern_reader, &["PSUBSCRIBE", "news.*"]),
        ">3\\r\\n$10\\r\\npsubscribe\\r\\n$6\\r\\nnews.*\\r\\n:1\\r\\n"
    );

    assert_eq!(
        read_cmd(&mut publisher, &["PUBLISH", "news.art", "hello"]),
        ":2\\r\\n"
    );
    assert_eq!(
        read(&mut channel_reader),
        "*3\\r\\n$7\\r\\nmessage\\r\\n$8\\r\\nnews.art\\r\\n$5\\r\\nhello\\r\\n"
    );
    assert_eq!(
        read(&mut pattern_reader),
        ">4\\r\\n$8\\r\\npmessage\\r\\n$6\\r\\nnews.*\\r\\n$8\\r\\nnews.art\\r\\n$5\\r\\nhello\\r\\n"
    );
    assert_eq!(
        read_cmd(&mut publisher, &["PUBLISH", "news.sport", "x"]),
        ":1\\r\\n"
    );
    assert_eq!(
        read_cmd(&mut publisher, &["PUBLISH", "weather", "x"]),
        ":0\\r\\n"
    );
    assert_eq!(
        read(&mut pattern_reader),
        ">4\\r\\n$8\\r\\npmessage\\r\\n$6\\r\\nnews.*\\r\\n$10\\r\\nnews.sport\\r\\n$1\\r\\nx\\r\\n"
    );

    assert_eq!(
        read_cmd(&mut publisher, &["PUBSUB", "CHANNELS", "*art"]),
        "*1\\r\\n$8\\r\\nnews.art\\r\\n"
    );
    assert_eq!(
        read_cmd(
            &mut publisher,
            &["PUBSUB", "NUMSUB", "news.tech", "news.sport"]
        ),
        "*4\\r\\n$9\\r\\nnews.tech\\r\\n:1\\r\\n$10\\r\\nnews.sport\\r\\n:0\\r\\n"
    );
    assert_eq!(read_cmd(&mut publisher, &["PUBSUB", "NUMPAT"]), ":1\\r\\n");
    let stats = String::from_utf8_lossy(&publisher.cmd(&["INFO", "stats"])).into_owned();
    assert!(
        stats.contains("\r\npubsub_channels:2\r\npubsub_patterns:1\r\npubsubshard_channels:0\r\n"),
        "{stats}"
    );

    let list = String::from_utf8_lossy(&publisher.cmd(&["CLIENT", "LIST"])).into_owned();
    assert!(list.contains(" flags=P db=0 sub=2 psub=0 "), "{list}");
    assert!(list.contains(" flags=P db=0 sub=0 psub=1 "), "{list}");
    assert!(list.contains(" flags=N db=0 sub=0 psub=0 "), "{list}");
    let pubsub = String::from_utf8_lossy(&publisher.cmd(&["CLIENT", "LIST", "TYPE", "pubsub"]))
        .matches("flags=P")
        .count();
    let normal = String::from_utf8_lossy(&publisher.cmd(&["CLIENT", "LIST", "TYPE", "normal"]))
        .matches("flags=N")
        .count();
    assert_eq!((pubsub, normal), (2, 1));

    // A subscriber that leaves takes its subscriptions with it.
    drop(channel_reader);
    let mut numsub = String::new();
    for _ in 0..1000 {
        numsub = read_cmd(&mut publisher, &["PUBSUB", "NUMSUB", "news.art"]);
        if numsub.ends_with(":0\\r\\n") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(numsub, "*2\\r\\n$8\\r\\nnews.art\\r\\n:0\\r\\n");
    assert_eq!(
        read_cmd(&mut publisher, &["PUBLISH", "news.art", "x"]),
        ":1\\r\\n"
    );
}

#[test]
fn subscriber_that_never_reads_is_cut_off() {
    let server = TestServer::start();
    let mut subscriber = server.client();
    let mut publisher = server.client();
    assert_eq!(
        read_cmd(&mut subscriber, &["SUBSCRIBE", "flood"]),
        "*3\\r\\n$9\\r\\nsubscribe\\r\\n$5\\r\\nflood\\r\\n:1\\r\\n"
    );
    let message = vec![b'm'; 1024 * 1024];
    let mut delivered = 0;
    // The inbox holds 32 MiB, the connection's reply buffer as much again, the sockets a few
    // MiB: far fewer than 500 messages of 1 MiB.
    for _ in 0..500 {
        match escape(&publisher.command(&[b"PUBLISH", b"flood", &message])).as_str() {
            ":1\\r\\n" => delivered += 1,
            ":0\\r\\n" => break,
            other => panic!("unexpected reply {other}"),
        }
    }
    assert!(delivered < 100, "{delivered} messages queued");
    assert_eq!(
        read_cmd(&mut publisher, &["PUBSUB", "NUMSUB", "flood"]),
        "*2\\r\\n$5\\r\\nflood\\r\\n:0\\r\\n"
    );
    subscriber.read_until_closed();
}

/// redis-cli's SUBSCRIBE, which prints each message as it comes.
#[test]
fn redis_cli_subscribe_prints_messages() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let Some(program) = crate::support::tool("redis-cli") else {
        return;
    };
    let server = TestServer::start();
    let mut child = Command::new(program)
        .args(["-h", "127.0.0.1", "-p", &server.addr.port().to_string()])
        .args(["SUBSCRIBE", "ch"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli");
    let stdout = child.stdout.take().expect("stdout");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    // Only a guard against a hang: each line comes as soon as the server sends it.
    let guard = std::time::Duration::from_secs(60);
    let next_line = || receiver.recv_timeout(guard).expect("a line from redis-cli");
    assert_eq!(
        [next_line(), next_line(), next_line()],
        ["subscribe", "ch", "1"]
    );
    let mut publisher = server.client();
    assert_eq!(
        read_cmd(&mut publisher, &["PUBLISH", "ch", "hello"]),
        ":1\\r\\n"
    );
    assert_eq!(
        [next_line(), next_line(), next_line()],
        ["message", "ch", "hello"]
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// Sentinels find each other by publishing to `__sentinel__:hello` on the server they monitor:
/// two of them watching sieved learn of each other.
#[test]
fn sentinels_discover_each_other_through_sieved() {
    use crate::support::{free_port, DataDir};
    use std::process::{Child, Command, Stdio};
    let Some(program) = crate::support::tool("redis-sentinel") else {
        return;
    };
    struct Killed(Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let server = TestServer::start();
    let dir = DataDir::new("pubsub-sentinels");
    let ports = [free_port(), free_port()];
    let _sentinels: Vec<Killed> = ports
        .iter()
        .map(|port| {
            let config = dir.0.join(format!("sentinel-{port}.conf"));
            std::fs::write(
                &config,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor m 127.0.0.1 {} 2\n",
                    dir.0.display(),
                    server.addr.port()
                ),
            )
            .expect("sentinel config");
            Killed(
                Command::new(&program)
                    .arg(&config)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("redis-sentinel"),
            )
        })
        .collect();
    // Sentinels say hello every two seconds; the loop is only a guard against a hang.
    let mut others = String::new();
    for _ in 0..600 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if std::net::TcpStream::connect(("127.0.0.1", ports[0])).is_err() {
            continue;
        }
        let mut sentinel = RawClient::connect(([127, 0, 0, 1], ports[0]).into());
        let master =
            String::from_utf8_lossy(&sentinel.cmd(&["SENTINEL", "MASTER", "m"])).into_owned();
        others = master
            .split("num-other-sentinels\r\n")
            .nth(1)
            .and_then(|rest| rest.lines().nth(1))
            .unwrap_or_default()
            .to_string();
        if others == "1" {
            break;
        }
    }
    assert_eq!(others, "1", "the sentinels never heard of each other");
}

/// As in Redis, `timeout` closes idle clients but never a subscriber, which waits by design.
#[test]
fn timeout_spares_subscribers() {
    let server = TestServer::start();
    let mut idler = server.client();
    let mut subscriber = server.client();
    assert_eq!(
        read_cmd(&mut idler, &["CONFIG", "SET", "timeout", "1"]),
        "+OK\\r\\n"
    );
    read_cmd(&mut subscriber, &["SUBSCRIBE", "ch"]);
    // Waits for the idle client to be closed: the subscriber has then been idle as long.
    assert!(idler.read_until_closed().is_empty());
    let mut publisher = server.client();
    assert_eq!(
        read_cmd(&mut publisher, &["PUBLISH", "ch", "still here"]),
        ":1\\r\\n"
    );
    assert_eq!(
        read(&mut subscriber),
        "*3\\r\\n$7\\r\\nmessage\\r\\n$2\\r\\nch\\r\\n$10\\r\\nstill here\\r\\n"
    );
}
