//! The server as clients see it: concurrency, pipelining, expiry, large dumps, INFO, CONFIG and
//! SHUTDOWN, against the real server on an ephemeral port.

use crate::support::{
    check_replica_holds_the_same, check_writes_survive_restarts, encode_command, info_field,
    RawClient, TestServer,
};
use std::thread;
use std::time::{Duration, Instant};

fn int_reply(reply: &[u8]) -> i64 {
    let text = std::str::from_utf8(reply).expect("text");
    text.trim_start_matches(':')
        .trim_end()
        .parse()
        .expect("integer reply")
}

/// Polls `check` for up to ten seconds; for effects that happen in the background.
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn concurrent_writers_and_readers_share_one_filter() {
    let server = TestServer::start();
    let mut setup = server.client();
    assert_eq!(
        setup.cmd(&["BF.RESERVE", "shared", "0.001", "100000"]),
        b"+OK\r\n"
    );
    assert_eq!(
        setup
            .cmd(&["BF.MADD", "shared", "early-0", "early-1", "early-2"])
            .len(),
        16
    );
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let addr = server.addr;
            thread::spawn(move || {
                let mut client = RawClient::connect(addr);
                let mut added = 0;
                for batch in 0..50 {
                    let items: Vec<String> =
                        (0..100).map(|i| format!("w{w}-{batch}-{i}")).collect();
                    let mut args = vec!["BF.MADD", "shared"];
                    args.extend(items.iter().map(String::as_str));
                    let reply = client.cmd(&args);
                    added += reply.windows(4).filter(|w| w == b":1\r\n").count() as i64;
                }
                added
            })
        })
        .collect();
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let addr = server.addr;
            thread::spawn(move || {
                let mut client = RawClient::connect(addr);
                for _ in 0..500 {
                    let reply =
                        client.cmd(&["BF.MEXISTS", "shared", "early-0", "early-1", "early-2"]);
                    assert_eq!(
                        reply, b"*3\r\n:1\r\n:1\r\n:1\r\n",
                        "a reader saw a false negative"
                    );
                }
            })
        })
        .collect();
    let added: i64 = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    readers.into_iter().for_each(|r| r.join().expect("reader"));
    assert_eq!(int_reply(&setup.cmd(&["BF.CARD", "shared"])), added + 3);
    for w in 0..8 {
        for batch in 0..50 {
            let item = format!("w{w}-{batch}-7");
            assert_eq!(setup.cmd(&["BF.EXISTS", "shared", &item]), b":1\r\n");
        }
    }
}

#[test]
fn a_deep_pipeline_gets_every_reply_in_order() {
    let server = TestServer::start();
    let mut client = server.client();
    let mut batch = Vec::new();
    for i in 0..20_000 {
        batch.extend(encode_command(&[
            b"BF.ADD",
            b"p",
            format!("{}", i % 10_000).as_bytes(),
        ]));
    }
    client.send(&batch);
    let mut new = 0;
    for i in 0..20_000 {
        let reply = client.read_reply();
        if i >= 10_000 {
            assert_eq!(reply, b":0\r\n", "item {i} was added twice");
        } else if reply == b":1\r\n" {
            new += 1;
        }
    }
    assert_eq!(int_reply(&client.cmd(&["BF.CARD", "p"])), new);
}

#[test]
fn requests_split_across_writes_are_reassembled() {
    let server = TestServer::start();
    let mut client = server.client();
    let request = encode_command(&[b"ECHO", &[b'x'; 100_000]]);
    for piece in request.chunks(7_777) {
        client.send(piece);
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(client.read_reply().len(), 100_000 + 11);
}

#[test]
fn expired_keys_disappear_without_being_touched() {
    let server = TestServer::start();
    let mut client = server.client();
    for i in 0..200 {
        client.cmd(&["BF.ADD", &format!("k{i}"), "x"]);
        client.cmd(&["PEXPIRE", &format!("k{i}"), "50"]);
    }
    client.cmd(&["SET", "kept", "v"]);
    assert!(
        eventually(|| int_reply(&client.cmd(&["DBSIZE"])) == 1),
        "expired keys were not swept"
    );
    let info = String::from_utf8(client.cmd(&["INFO", "stats"])).expect("text");
    assert!(info.contains("expired_keys:200\r\n"), "{info}");
}

#[test]
fn info_reports_clients_keys_and_memory() {
    let server = TestServer::start();
    let mut client = server.client();
    // A round trip makes sure the server has registered the second connection, not just the
    // kernel accepted it.
    let mut other = server.client();
    assert_eq!(other.cmd(&["PING"]), b"+PONG\r\n");
    client.cmd(&["BF.ADD", "a", "x"]);
    client.cmd(&["SET", "b", "v", "EX", "100"]);
    client.cmd(&["SELECT", "3"]);
    client.cmd(&["SET", "c", "v"]);
    let info = String::from_utf8(client.cmd(&["INFO"])).expect("text");
    for expected in [
        "redis_version:8.0.0\r\n",
        "arch_bits:64\r\n",
        &format!("tcp_port:{}\r\n", server.addr.port()),
        "connected_clients:2\r\n",
        "rdb_bgsave_in_progress:0\r\n",
        "db0:keys=2,expires=1,avg_ttl=0\r\n",
        "db3:keys=1,expires=0,avg_ttl=0\r\n",
    ] {
        assert!(info.contains(expected), "missing {expected:?} in {info}");
    }
    let used: u64 = info_field(&info, "used_memory")
        .parse()
        .expect("used_memory");
    assert!(used > 0);
}

#[test]
fn config_set_changes_the_defaults_of_new_filters() {
    let server = TestServer::start();
    let mut client = server.client();
    assert_eq!(
        client.cmd(&[
            "CONFIG",
            "SET",
            "bf-error-rate",
            "0.001",
            "bf-initial-size",
            "1000",
            "bf-expansion-factor",
            "0"
        ]),
        b"+OK\r\n"
    );
    client.cmd(&["BF.ADD", "auto", "x"]);
    let debug = String::from_utf8(client.cmd(&["BF.DEBUG", "auto"])).expect("text");
    assert!(
        debug.contains("capacity:1000 size:1 ratio:0.001\r\n"),
        "{debug}"
    );
    assert_eq!(
        client.cmd(&["CONFIG", "GET", "bf-initial-size"]),
        b"*2\r\n$15\r\nbf-initial-size\r\n$4\r\n1000\r\n"
    );
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "bf-error-rate", "2"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'bf-error-rate') - argument must be between 0 and 1 exclusive\r\n"
    );
}

/// One BF.SCANDUMP step of `key` after `iterator`: the next iterator (0 at the end) and its data.
fn scandump_step(client: &mut RawClient, key: &str, iterator: i64) -> (i64, Vec<u8>) {
    let reply = client.cmd(&["BF.SCANDUMP", key, &iterator.to_string()]);
    let frame = redis_protocol::resp2::decode::decode(&reply)
        .expect("frame")
        .expect("complete")
        .0;
    let redis_protocol::resp2::types::OwnedFrame::Array(parts) = frame else {
        panic!("not an array")
    };
    let (
        redis_protocol::resp2::types::OwnedFrame::Integer(next),
        redis_protocol::resp2::types::OwnedFrame::BulkString(data),
    ) = (&parts[0], &parts[1])
    else {
        panic!("not an iterator and a chunk: {parts:?}")
    };
    (*next, data.clone())
}

/// Every BF.SCANDUMP step of `key`, header first, as (iterator, data).
fn scandump(client: &mut RawClient, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut steps = Vec::new();
    let mut iterator = 0i64;
    loop {
        let (next, data) = scandump_step(client, key, iterator);
        if next == 0 {
            return steps;
        }
        steps.push((next, data));
        iterator = next;
    }
}

#[test]
fn bf_layout_applies_to_filters_created_after_it() {
    let server = TestServer::start();
    let mut client = server.client();
    let is_blocked = |client: &mut RawClient, key: &str| {
        let debug = String::from_utf8(client.cmd(&["BF.DEBUG", key])).expect("text");
        debug.contains(" layout:blocked\r\n")
    };
    assert_eq!(
        client.cmd(&["CONFIG", "GET", "bf-layout"]),
        b"*2\r\n$9\r\nbf-layout\r\n$7\r\nclassic\r\n"
    );
    client.cmd(&["BF.RESERVE", "before", "0.01", "1000"]);
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "bf-layout", "BLOCKED"]),
        b"+OK\r\n"
    );
    assert_eq!(
        client.cmd(&["CONFIG", "GET", "bf-layout"]),
        b"*2\r\n$9\r\nbf-layout\r\n$7\r\nblocked\r\n"
    );
    client.cmd(&["BF.RESERVE", "reserved", "0.01", "1000", "NONSCALING"]);
    client.cmd(&["BF.ADD", "added", "x"]);
    client.cmd(&["BF.MADD", "madded", "x", "y"]);
    client.cmd(&["BF.INSERT", "inserted", "CAPACITY", "10", "ITEMS", "x"]);
    client.cmd(&["CBF.ADD", "counting", "x"]);
    assert!(!is_blocked(&mut client, "before"));
    for key in ["reserved", "added", "madded", "inserted"] {
        assert!(is_blocked(&mut client, key), "{key}");
    }
    // 1,000 items at 1% in 20 blocks of 64 bytes: 1,280 bytes where a classic filter has 1,200.
    assert_eq!(
        client.cmd(&["BF.DEBUG", "reserved"]),
        &b"*2\r\n$6\r\nsize:0\r\n$90\r\nbytes:1280 bits:10240 hashes:6 hashwidth:64 \
           capacity:1000 size:0 ratio:0.01 layout:blocked\r\n"[..]
    );
    // Size counts the bytes in use: for a blocked filter also the padding (up to 56 bytes) that
    // starts its blocks on a cache line.
    assert_eq!(
        client.cmd(&["BF.INFO", "reserved", "SIZE"]),
        b"*1\r\n:1440\r\n"
    );
    assert_eq!(
        client.cmd(&["CBF.INFO", "counting", "ERROR"]),
        b"*1\r\n$4\r\n0.01\r\n"
    );

    // A scaling chain keeps its layout for every link, whatever the setting says by then.
    client.cmd(&["CONFIG", "SET", "bf-layout", "classic"]);
    let items: Vec<String> = (0..200).map(|i| format!("item{i}")).collect();
    let mut madd = vec!["BF.MADD", "inserted"];
    madd.extend(items.iter().map(String::as_str));
    client.cmd(&madd);
    let debug = String::from_utf8(client.cmd(&["BF.DEBUG", "inserted"])).expect("text");
    assert_eq!(debug.matches("layout:blocked").count(), 5, "{debug}");
    let mut mexists = vec!["BF.MEXISTS", "inserted"];
    mexists.extend(items.iter().map(String::as_str));
    assert!(!client.cmd(&mexists).windows(4).any(|w| w == b":0\r\n"));

    // A dump carries the layout: loading it under the classic setting makes a blocked filter.
    for (iterator, data) in scandump(&mut client, "inserted") {
        let mut args: Vec<&[u8]> = vec![b"BF.LOADCHUNK", b"copy"];
        let iterator = iterator.to_string();
        args.extend([iterator.as_bytes(), &data]);
        assert_eq!(client.command(&args), b"+OK\r\n");
    }
    assert_eq!(
        client.cmd(&["BF.DEBUG", "copy"]),
        client.cmd(&["BF.DEBUG", "inserted"])
    );
    let original = client.cmd(&mexists);
    mexists[1] = "copy";
    assert_eq!(client.cmd(&mexists), original);

    assert_eq!(
        client.cmd(&["CONFIG", "SET", "bf-layout", "striped"]),
        &b"-ERR CONFIG SET failed (possibly related to argument 'bf-layout') - argument must \
           be 'classic' or 'blocked'\r\n"[..]
    );
}

/// max-filter-memory is checked against the blocked size, which is larger than the classic one.
#[test]
fn max_filter_memory_applies_to_the_blocked_size() {
    let server = TestServer::start();
    let mut client = server.client();
    client.cmd(&["CONFIG", "SET", "max-filter-memory", "1048576"]);
    assert_eq!(
        client.cmd(&["BF.RESERVE", "classic", "0.01", "870000", "NONSCALING"]),
        b"+OK\r\n"
    );
    client.cmd(&["CONFIG", "SET", "bf-layout", "blocked"]);
    assert_eq!(
        client.cmd(&["BF.RESERVE", "blocked", "0.01", "870000", "NONSCALING"]),
        &b"-ERR filter would use 1078592 bytes, over max-filter-memory (1048576 bytes)\r\n"[..]
    );
    assert_eq!(client.cmd(&["EXISTS", "blocked"]), b":0\r\n");
}

#[test]
fn a_200_megabyte_filter_round_trips_through_scandump() {
    let server = TestServer::start();
    let mut client = server.client();
    assert_eq!(
        client.cmd(&["BF.RESERVE", "big", "0.01", "170000000", "NONSCALING"]),
        b"+OK\r\n"
    );
    for batch in 0..100 {
        let items: Vec<String> = (0..1000).map(|i| format!("url-{batch}-{i}")).collect();
        let mut args = vec!["BF.MADD", "big"];
        args.extend(items.iter().map(String::as_str));
        client.cmd(&args);
    }
    let (mut iterator, mut chunks, mut total) = (0i64, 0, 0usize);
    loop {
        let (next, data) = scandump_step(&mut client, "big", iterator);
        if next == 0 {
            break;
        }
        assert!(
            data.len() <= 16 * 1024 * 1024,
            "chunk of {} bytes",
            data.len()
        );
        total += data.len();
        chunks += 1;
        let loaded =
            client.command(&[b"BF.LOADCHUNK", b"copy", next.to_string().as_bytes(), &data]);
        assert_eq!(loaded, b"+OK\r\n");
        iterator = next;
    }
    assert!(total >= 200_000_000, "only {total} bytes dumped");
    assert!(chunks >= 13);
    assert_eq!(
        client.cmd(&["BF.INFO", "copy"]),
        client.cmd(&["BF.INFO", "big"])
    );
    for batch in 0..100 {
        let members: Vec<String> = (0..1000).map(|i| format!("url-{batch}-{i}")).collect();
        let strangers: Vec<String> = (0..1000).map(|i| format!("other-{batch}-{i}")).collect();
        for items in [&members, &strangers] {
            let mut original = vec!["BF.MEXISTS", "big"];
            original.extend(items.iter().map(String::as_str));
            let mut copy = original.clone();
            copy[1] = "copy";
            assert_eq!(client.cmd(&original), client.cmd(&copy));
        }
        let mut check = vec!["BF.MEXISTS", "copy"];
        check.extend(members.iter().map(String::as_str));
        assert!(
            !client.cmd(&check).windows(4).any(|w| w == b":0\r\n"),
            "a member is missing"
        );
    }
}

#[test]
fn shutdown_stops_the_server() {
    let server = TestServer::start();
    let mut client = server.client();
    client.cmd(&["BF.ADD", "k", "x"]);
    client.send(&encode_command(&[b"SHUTDOWN", b"NOSAVE"]));
    assert!(client.is_closed());
    assert!(
        eventually(|| std::net::TcpStream::connect(server.addr).is_err()),
        "still accepting connections after SHUTDOWN"
    );
}

#[test]
fn a_transaction_runs_in_isolation_and_watch_sees_other_clients() {
    let server = TestServer::start();
    let addr = server.addr;
    // Writers keep adding pairs, each pair in one transaction: a reader must never see half of one.
    // Transactions run one at a time, so both filters receive the same items in the same order,
    // stay bit for bit identical, and so count the same false positives: their counts differ
    // only if a reader's transaction lands between the two halves of a writer's.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            thread::spawn(move || {
                let mut client = RawClient::connect(addr);
                for i in 0..300 {
                    let mut batch = encode_command(&[b"MULTI"]);
                    batch.extend(encode_command(&[
                        b"BF.ADD",
                        b"left",
                        format!("{w}-{i}").as_bytes(),
                    ]));
                    batch.extend(encode_command(&[
                        b"BF.ADD",
                        b"right",
                        format!("{w}-{i}").as_bytes(),
                    ]));
                    batch.extend(encode_command(&[b"EXEC"]));
                    client.send(&batch);
                    for _ in 0..4 {
                        client.read_reply();
                    }
                }
            })
        })
        .collect();
    let mut reader = server.client();
    for _ in 0..300 {
        reader.send(&encode_command(&[b"MULTI"]));
        reader.send(&encode_command(&[b"BF.CARD", b"left"]));
        reader.send(&encode_command(&[b"BF.CARD", b"right"]));
        reader.send(&encode_command(&[b"EXEC"]));
        for _ in 0..3 {
            reader.read_reply();
        }
        let both = reader.read_reply();
        let text = String::from_utf8(both).expect("text");
        let numbers: Vec<&str> = text.split("\r\n").filter(|l| l.starts_with(':')).collect();
        assert_eq!(numbers.len(), 2, "{text}");
        assert_eq!(
            numbers[0], numbers[1],
            "a transaction was seen half done: {text}"
        );
    }
    writers.into_iter().for_each(|w| w.join().expect("writer"));

    let mut watcher = server.client();
    let mut other = server.client();
    assert_eq!(watcher.cmd(&["WATCH", "left"]), b"+OK\r\n");
    other.cmd(&["BF.ADD", "left", "from another client"]);
    watcher.cmd(&["MULTI"]);
    watcher.cmd(&["BF.ADD", "left", "x"]);
    assert_eq!(watcher.cmd(&["EXEC"]), b"*-1\r\n");
}

#[test]
fn shutdown_and_save_are_refused_inside_multi() {
    let server = TestServer::start();
    let mut client = server.client();
    assert_eq!(client.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["SET", "k", "v"]), b"+QUEUED\r\n");
    assert_eq!(
        client.cmd(&["SHUTDOWN"]),
        b"-ERR Command not allowed inside a transaction\r\n"
    );
    assert_eq!(
        client.cmd(&["SAVE"]),
        b"-ERR Command not allowed inside a transaction\r\n"
    );
    assert_eq!(
        client.cmd(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    assert_eq!(client.cmd(&["GET", "k"]), b"$-1\r\n");
    assert_eq!(client.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn an_error_rate_the_layout_cannot_meet_is_named_as_such() {
    let server = TestServer::start();
    let mut client = server.client();
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "bf-layout", "blocked"]),
        b"+OK\r\n"
    );
    let refusal = b"-ERR error rate too small: no filter of this layout can meet it\r\n";
    assert_eq!(client.cmd(&["BF.RESERVE", "k", "1e-31", "100"]), refusal);
    assert_eq!(
        client.cmd(&["BF.INSERT", "k", "ERROR", "1e-31", "ITEMS", "a"]),
        refusal
    );
    assert_eq!(client.cmd(&["EXISTS", "k"]), b":0\r\n");
    assert_eq!(client.cmd(&["BF.RESERVE", "k", "1e-29", "100"]), b"+OK\r\n");
}

/// A pipeline's consecutive lookups on one key run as one (`cmd::runs`); every request must still
/// be answered, counted and logged as it would be on its own.
#[test]
fn a_run_of_lookups_answers_counts_and_logs_each_request() {
    let server = TestServer::start();
    let mut setup = server.client();
    for item in ["a", "c", "e"] {
        setup.cmd(&["BF.ADD", "k", item]);
    }
    setup.cmd(&["CBF.ADD", "n", "a"]);
    setup.cmd(&["SET", "s", "v"]);
    let mut requests: Vec<Vec<&str>> = Vec::new();
    let letters = ["a", "b", "c", "d", "e"];
    // Longer than one run, then runs broken by another key, another command, another spelling,
    // a key of another type, a refused request and a write.
    for i in 0..45 {
        requests.push(vec!["BF.EXISTS", "k", letters[i % 5]]);
    }
    requests.push(vec!["BF.EXISTS", "missing", "a"]);
    requests.push(vec!["CBF.EXISTS", "n", "a"]);
    requests.push(vec!["CBF.EXISTS", "n", "b"]);
    requests.push(vec!["bf.exists", "k", "a"]);
    requests.push(vec!["BF.EXISTS", "s", "a"]);
    requests.push(vec!["BF.EXISTS", "k"]);
    requests.push(vec!["BF.EXISTS", "k", "b"]);
    requests.push(vec!["BF.ADD", "k", "b"]);
    requests.push(vec!["BF.EXISTS", "k", "b"]);
    let mut pipeline = Vec::new();
    for args in &requests {
        let args: Vec<&[u8]> = args.iter().map(|arg| arg.as_bytes()).collect();
        pipeline.extend(encode_command(&args));
    }
    let mut client = server.client();
    client.send(&pipeline);
    let pipelined: Vec<Vec<u8>> = requests.iter().map(|_| client.read_reply()).collect();
    // The same requests one at a time, after the write is undone.
    setup.cmd(&["DEL", "k"]);
    for item in ["a", "c", "e"] {
        setup.cmd(&["BF.ADD", "k", item]);
    }
    for (args, reply) in requests.iter().zip(&pipelined) {
        assert_eq!(&client.cmd(args), reply, "{args:?}");
    }

    let stats = String::from_utf8(setup.cmd(&["INFO", "commandstats"])).unwrap();
    let exists = info_field(&stats, "cmdstat_bf.exists");
    // 50 answered and one refused, twice over.
    assert!(exists.starts_with("calls=100,"), "{exists}");
    assert!(
        exists.ends_with(",rejected_calls=2,failed_calls=0"),
        "{exists}"
    );

    // Each request of a run is its own SLOWLOG entry, with its own arguments.
    setup.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    setup.cmd(&["SLOWLOG", "RESET"]);
    let mut pipeline = Vec::new();
    for item in letters {
        pipeline.extend(encode_command(&[b"BF.EXISTS", b"k", item.as_bytes()]));
    }
    client.send(&pipeline);
    for _ in letters {
        client.read_reply();
    }
    setup.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    let log = String::from_utf8(setup.cmd(&["SLOWLOG", "GET", "-1"])).unwrap();
    let logged: Vec<&str> = log
        .split("$9\r\nBF.EXISTS\r\n$1\r\nk\r\n$1\r\n")
        .skip(1)
        .map(|rest| &rest[..1])
        .collect();
    // Newest first.
    assert_eq!(logged, ["e", "d", "c", "b", "a"], "{log}");
}

/// Requests that could form a run still get what each would alone: queued inside MULTI,
/// refused before authenticating.
#[test]
fn lookups_that_cannot_run_together_run_one_by_one() {
    let server = TestServer::start();
    let mut client = server.client();
    client.cmd(&["BF.ADD", "k", "a"]);
    let mut pipeline = encode_command(&[b"MULTI"]);
    for item in [b"a", b"b", b"a"] {
        pipeline.extend(encode_command(&[b"BF.EXISTS", b"k", item]));
    }
    pipeline.extend(encode_command(&[b"EXEC"]));
    client.send(&pipeline);
    assert_eq!(client.read_reply(), b"+OK\r\n");
    for _ in 0..3 {
        assert_eq!(client.read_reply(), b"+QUEUED\r\n");
    }
    assert_eq!(client.read_reply(), b"*3\r\n:1\r\n:0\r\n:1\r\n");

    client.cmd(&["CONFIG", "SET", "requirepass", "secret"]);
    let mut stranger = server.client();
    let mut pipeline = Vec::new();
    for _ in 0..3 {
        pipeline.extend(encode_command(&[b"BF.EXISTS", b"k", b"a"]));
    }
    stranger.send(&pipeline);
    for _ in 0..3 {
        assert!(stranger.read_reply().starts_with(b"-NOAUTH"));
    }
}

/// Adds that run together when pipelined (`cmd::runs`): a run that creates its key, a filter
/// that fills up in the middle of a run, a counting filter, a wrong type, items added twice.
fn add_requests() -> Vec<[String; 3]> {
    let runs = [
        ("BF.ADD", "fresh", "u", 40, 40),
        ("BF.ADD", "full", "f", 20, 20),
        ("CBF.ADD", "counts", "c", 10, 3),
        ("BF.ADD", "plain", "p", 3, 3),
        ("BF.ADD", "fresh", "u", 10, 40),
    ];
    let mut requests = Vec::new();
    for (command, key, prefix, count, distinct) in runs {
        for i in 0..count {
            let item = format!("{prefix}{}", i % distinct);
            requests.push([command.to_string(), key.to_string(), item]);
        }
    }
    requests
}

/// What `add_requests` starts from.
fn before_adds(client: &mut RawClient) {
    client.cmd(&["BF.RESERVE", "full", "0.01", "5", "NONSCALING"]);
    client.cmd(&["SET", "plain", "x"]);
}

/// `add_requests` as one pipeline, and their replies.
fn pipelined_adds_replies(client: &mut RawClient) -> Vec<Vec<u8>> {
    before_adds(client);
    let requests = add_requests();
    let mut pipeline = Vec::new();
    for [command, key, item] in &requests {
        pipeline.extend(encode_command(&[
            command.as_bytes(),
            key.as_bytes(),
            item.as_bytes(),
        ]));
    }
    client.send(&pipeline);
    requests.iter().map(|_| client.read_reply()).collect()
}

fn pipelined_adds(client: &mut RawClient) {
    pipelined_adds_replies(client);
}

fn digest(client: &mut RawClient) -> Vec<u8> {
    client.cmd(&["SIEVED.DIGEST"])
}

#[test]
fn a_run_of_adds_answers_as_each_add_alone_would() {
    let server = TestServer::start();
    let mut client = server.client();
    before_adds(&mut client);
    let one_by_one: Vec<Vec<u8>> = add_requests()
        .iter()
        .map(|[command, key, item]| client.cmd(&[command, key, item]))
        .collect();
    let expected_digest = digest(&mut client);
    assert!(one_by_one.contains(&b":1\r\n".to_vec()) && one_by_one.contains(&b":0\r\n".to_vec()));
    assert!(one_by_one
        .iter()
        .any(|reply| reply.starts_with(b"-ERR non scaling filter is full")));
    assert!(one_by_one
        .iter()
        .any(|reply| reply.starts_with(b"-WRONGTYPE")));

    client.cmd(&["FLUSHALL"]);
    assert_eq!(pipelined_adds_replies(&mut client), one_by_one);
    assert_eq!(digest(&mut client), expected_digest);
}

/// A run of adds is logged as one record; the append-only file, a compaction, a snapshot and a
/// replica all come back with what the server held.
#[test]
fn a_run_of_adds_survives_restarts_and_reaches_replicas() {
    check_writes_survive_restarts("runs", pipelined_adds, digest);
    check_replica_holds_the_same("runs", pipelined_adds, digest);
}
