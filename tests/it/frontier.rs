//! The crawl frontier (FQ.*) on the real server: the append-only file (kill -9 under
//! `appendfsync always`), a compaction and a snapshot bring every frontier back exactly (same
//! SIEVED.DIGEST: queues, leases, dead letters, groups, clock and seen-set); a replica holds the
//! same frontier as its primary; workers racing on one frontier, with leases running out
//! under them, never lose or duplicate an item; and each command of a pipeline judges time at
//! its own moment.

use crate::support::{escape, DataDir, RawClient, Rng, TestServer};
use sieved::config::Config;
use sieved::persist::aof::{list_segments, SegmentReader};
use sieved::protocol::Request;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

const KEYS: &[&str] = &["auto", "f", "d", "capped"];

fn run(client: &mut RawClient, words: &[String]) -> Vec<u8> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    client.cmd(&words)
}

/// Every kind of write: an implicit creation under settings a restart does not bring back,
/// priorities, AT, FORCE, duplicates, pops, acknowledgements, NACKs with a delay, group rules,
/// dead letters and a requeue, and pushes refused for max-filter-memory (which replay, without
/// that limit, must not apply). Leases and delays are long, so that nothing changes with time
/// while the test compares.
fn frontier_writes(client: &mut RawClient) {
    for (name, value) in [
        ("fq-error-rate", "0.02"),
        ("fq-initial-size", "500"),
        ("fq-lease", "600000"),
        ("fq-retries", "5"),
        ("fq-delay", "0"),
    ] {
        assert_eq!(client.cmd(&["CONFIG", "SET", name, value]), b"+OK\r\n");
    }
    for i in 0..300 {
        client.cmd(&[
            "FQ.PUSH",
            "auto",
            &format!("http://h{}.test/p{}", i % 7, i % 250),
        ]);
    }
    client.cmd(&["FQ.POP", "auto", "COUNT", "40"]);
    client.cmd(&[
        "FQ.RESERVE",
        "f",
        "0.01",
        "1000",
        "LEASE",
        "600000",
        "RETRIES",
        "2",
        "INFLIGHT",
        "3",
    ]);
    let mut rng = Rng(7);
    for round in 0..60 {
        let mut push = vec!["FQ.PUSH".to_string(), "f".to_string()];
        match round % 4 {
            1 => push.extend(["PRIORITY".into(), format!("{}", round % 3)]),
            2 => push.extend(["AT".into(), "4102444800000".into()]),
            3 => push.push("FORCE".into()),
            _ => {}
        }
        for _ in 0..8 {
            push.push(format!(
                "https://s{}.test/x/{}",
                rng.below(5),
                rng.below(200)
            ));
        }
        run(client, &push);
        if round % 3 == 0 {
            let popped = client.cmd(&["FQ.POP", "f", "COUNT", "6"]);
            assert!(popped.starts_with(b"*"), "{}", escape(&popped));
        }
    }
    // URLs spelled as options, after the end of the options.
    client.cmd(&[
        "FQ.PUSH", "f", "PRIORITY", "2", "URLS", "FORCE", "AT", "URLS",
    ]);
    client.cmd(&["FQ.ACK", "f", "1", "2", "3", "999"]);
    client.cmd(&["FQ.NACK", "f", "4", "DELAY", "600000"]);
    client.cmd(&["FQ.NACK", "f", "5"]);
    client.cmd(&[
        "FQ.HOST",
        "f",
        "https://s1.test",
        "DELAY",
        "600000",
        "INFLIGHT",
        "1",
    ]);
    client.cmd(&["FQ.HOST", "f", "https://s2.test", "PAUSE", "600000"]);
    client.cmd(&["FQ.POP", "f", "COUNT", "20", "LEASE", "700000"]);
    client.cmd(&["FQ.RESERVE", "d", "0.01", "100", "RETRIES", "1"]);
    client.cmd(&[
        "FQ.PUSH",
        "d",
        "http://dead.test/1",
        "http://dead.test/2",
        "/relative",
    ]);
    client.cmd(&["FQ.POP", "d", "COUNT", "3"]);
    client.cmd(&["FQ.NACK", "d", "1"]);
    client.cmd(&["FQ.NACK", "d", "2"]);
    client.cmd(&["FQ.REQUEUE", "d", "2"]);
    client.cmd(&["CONFIG", "SET", "max-filter-memory", "4096"]);
    client.cmd(&["FQ.RESERVE", "capped", "0.01", "10"]);
    let mut push = vec!["FQ.PUSH".to_string(), "capped".to_string()];
    push.extend((0..400).map(|i| format!("http://c.test/{i}")));
    let reply = run(client, &push);
    assert!(reply.windows(5).any(|w| w == b"-ERR "), "some refused");
    client.cmd(&["CONFIG", "SET", "max-filter-memory", "0"]);
    for (name, value) in [
        ("fq-error-rate", "0.001"),
        ("fq-initial-size", "1000000"),
        ("fq-lease", "300000"),
        ("fq-retries", "3"),
    ] {
        assert_eq!(client.cmd(&["CONFIG", "SET", name, value]), b"+OK\r\n");
    }
}

/// Each key's digest (everything a snapshot keeps), its dead letters and its counters but the
/// memory figure (which counts how the structures grew, not what they hold).
fn frontier_state(client: &mut RawClient) -> Vec<u8> {
    let mut state = Vec::new();
    for key in KEYS {
        state.extend(format!("{key}: ").into_bytes());
        state.extend(client.cmd(&["SIEVED.DIGEST", key]));
        state.extend(client.cmd(&["TYPE", key]));
        state.extend(client.cmd(&["FQ.DEAD", key]));
        let info = client.cmd(&["FQ.INFO", key]);
        let memory = info
            .windows(8)
            .position(|w| w == b"+Memory\r")
            .unwrap_or(info.len());
        state.extend(&info[..memory]);
        state.push(b'\n');
    }
    state
}

#[test]
fn frontiers_come_back_exactly_after_restarts() {
    crate::support::check_writes_survive_restarts("frontier", frontier_writes, frontier_state);
}

#[test]
fn a_replica_holds_the_same_frontiers() {
    let mut pair =
        crate::support::check_replica_holds_the_same("frontier", frontier_writes, frontier_state);
    assert!(pair.replica.cmd(&["FQ.POP", "f"]).starts_with(b"-READONLY"));
}

/// Reads `*N` of `*2 :id $url` pairs.
fn parse_pairs(reply: &[u8]) -> Vec<(u64, String)> {
    let text = String::from_utf8_lossy(reply);
    let lines: Vec<&str> = text.split("\r\n").collect();
    assert!(lines[0].starts_with('*'), "{text}");
    let count: usize = lines[0][1..].parse().expect("a count");
    (0..count)
        .map(|i| {
            let at = 1 + i * 4;
            assert_eq!(lines[at], "*2", "{text}");
            let id = lines[at + 1][1..].parse().expect("an id");
            (id, lines[at + 3].to_string())
        })
        .collect()
}

fn frontier_info_number(client: &mut RawClient, key: &str, field: &str) -> u64 {
    let info = client.cmd(&["FQ.INFO", key]);
    let text = String::from_utf8_lossy(&info);
    let lines: Vec<&str> = text.split("\r\n").collect();
    let at = lines
        .iter()
        .position(|line| *line == format!("+{field}"))
        .unwrap_or_else(|| panic!("{field} in {text}"));
    lines[at + 1][1..].parse().expect("a number")
}

/// Four workers push overlapping links, pop with short leases that often run out, and
/// acknowledge or give back what they took; then one drains the frontier. Every URL the frontier
/// answered 1 for is, at the end, acknowledged or dead, once: none lost, none done twice.
#[test]
fn racing_workers_lose_and_duplicate_nothing() {
    let server = TestServer::start();
    let mut setup = server.client();
    assert_eq!(
        setup.cmd(&[
            "FQ.RESERVE",
            "q",
            "0.0001",
            "10000",
            "LEASE",
            "30",
            "RETRIES",
            "4"
        ]),
        b"+OK\r\n"
    );
    let pushed = Arc::new(Mutex::new(HashSet::new()));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..4u64)
        .map(|worker| {
            let (addr, pushed, acked) = (server.addr, pushed.clone(), acked.clone());
            std::thread::spawn(move || {
                let mut client = RawClient::connect(addr);
                let mut rng = Rng(worker + 11);
                for _ in 0..150 {
                    let urls: Vec<String> = (0..5)
                        .map(|_| format!("http://h{}.test/{}", rng.below(6), rng.below(1500)))
                        .collect();
                    let mut words = vec!["FQ.PUSH", "q"];
                    words.extend(urls.iter().map(String::as_str));
                    let reply = String::from_utf8(client.cmd(&words)).unwrap();
                    let answers: Vec<&str> = reply.split("\r\n").skip(1).collect();
                    for (url, answer) in urls.iter().zip(answers) {
                        if answer == ":1" {
                            assert!(pushed.lock().unwrap().insert(url.clone()), "{url} twice");
                        }
                    }
                    for (id, url) in parse_pairs(&client.cmd(&["FQ.POP", "q", "COUNT", "3"])) {
                        match rng.below(10) {
                            0..=5 => {
                                let reply = client.cmd(&["FQ.ACK", "q", &id.to_string()]);
                                if reply == b":1\r\n" {
                                    acked.lock().unwrap().push(url);
                                }
                            }
                            6 | 7 => {
                                client.cmd(&["FQ.NACK", "q", &id.to_string()]);
                            }
                            // Never answered: its lease runs out.
                            _ => {}
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker");
    }
    let pushed = pushed.lock().unwrap().clone();
    let mut acked = acked.lock().unwrap().clone();
    let counted: u64 = ["Queued", "Leased", "Done", "Dead"]
        .iter()
        .map(|field| frontier_info_number(&mut setup, "q", field))
        .sum();
    assert_eq!(
        counted,
        pushed.len() as u64,
        "every pushed URL is counted once"
    );
    // Drain: leases of the workers run out and come back.
    while frontier_info_number(&mut setup, "q", "Queued")
        + frontier_info_number(&mut setup, "q", "Leased")
        > 0
    {
        for (id, url) in parse_pairs(&setup.cmd(&["FQ.POP", "q", "COUNT", "100", "LEASE", "60000"]))
        {
            assert_eq!(setup.cmd(&["FQ.ACK", "q", &id.to_string()]), b":1\r\n");
            acked.push(url);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let dead = setup.cmd(&["FQ.DEAD", "q", "COUNT", "100000"]);
    let dead_text = String::from_utf8_lossy(&dead);
    let dead_urls: Vec<String> = dead_text
        .split("\r\n")
        .filter(|line| line.starts_with("http://"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        dead_urls.len() as u64,
        frontier_info_number(&mut setup, "q", "Dead")
    );
    assert_eq!(
        acked.len() as u64,
        frontier_info_number(&mut setup, "q", "Done")
    );
    let mut finished: Vec<String> = acked.into_iter().chain(dead_urls).collect();
    finished.sort();
    let before = finished.len();
    finished.dedup();
    assert_eq!(finished.len(), before, "an item finished twice");
    let mut expected: Vec<String> = pushed.into_iter().collect();
    expected.sort();
    assert_eq!(finished, expected);
}

/// FQ.INFO is a map under RESP3 and a flat array under RESP2, as BF.INFO, with the error rate a
/// double in one and a bulk string in the other.
#[test]
fn info_is_shaped_as_bf_info() {
    let server = TestServer::start();
    let mut client = server.client();
    client.cmd(&["FQ.RESERVE", "q", "0.01", "100"]);
    client.cmd(&[
        "FQ.PUSH",
        "q",
        "http://a.test/1",
        "http://b.test/1",
        "http://a.test/1",
    ]);
    let resp2 = client.cmd(&["FQ.INFO", "q"]);
    let expected2 = "*20\r\n+Capacity\r\n:100\r\n+Error rate\r\n$4\r\n0.01\r\n+Seen\r\n:2\r\n\
                     +Queued\r\n:2\r\n+Due\r\n:2\r\n+Leased\r\n:0\r\n+Done\r\n:0\r\n+Dead\r\n:0\r\n\
                     +Hosts\r\n:2\r\n+Memory\r\n:";
    assert!(
        escape(&resp2).starts_with(&escape(expected2.as_bytes())),
        "{}",
        escape(&resp2)
    );
    client.hello3();
    let resp3 = client.cmd(&["FQ.INFO", "q"]);
    let expected3 = "%10\r\n+Capacity\r\n:100\r\n+Error rate\r\n,0.01\r\n+Seen\r\n:2\r\n";
    assert!(
        escape(&resp3).starts_with(&escape(expected3.as_bytes())),
        "{}",
        escape(&resp3)
    );
}

/// FQ.POP ... BLOCK: a push from another client, and a lease running out, each wake a waiting
/// pop, which answers before the commands pipelined after it; other clients are served while
/// it waits; a client killed while it waits leaves nothing behind.
#[test]
fn a_blocked_pop_wakes_for_a_push_and_for_a_lease_that_runs_out() {
    let server = TestServer::start();
    let mut other = server.client();
    let mut waiting = server.client();
    waiting.send(&crate::support::encode_command(&[
        b"FQ.POP", b"q", b"BLOCK", b"0",
    ]));
    waiting.send(&crate::support::encode_command(&[b"PING"]));
    // Served while the pop waits.
    assert_eq!(other.cmd(&["PING"]), b"+PONG\r\n");
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        other.cmd(&["FQ.PUSH", "q", "http://a.test/1"]),
        b"*1\r\n:1\r\n"
    );
    assert_eq!(
        waiting.read_reply(),
        b"*1\r\n*2\r\n:1\r\n$15\r\nhttp://a.test/1\r\n"
    );
    assert_eq!(waiting.read_reply(), b"+PONG\r\n");
    // A lease that runs out: nothing is written, the pop wakes at the lease's deadline.
    other.cmd(&["FQ.PUSH", "q", "http://a.test/2"]);
    assert_eq!(
        other.cmd(&["FQ.POP", "q", "LEASE", "100"]),
        b"*1\r\n*2\r\n:2\r\n$15\r\nhttp://a.test/2\r\n"
    );
    assert_eq!(
        waiting.cmd(&["FQ.POP", "q", "BLOCK", "60000"]),
        b"*1\r\n*2\r\n:2\r\n$15\r\nhttp://a.test/2\r\n"
    );
    assert_eq!(waiting.cmd(&["FQ.ACK", "q", "2"]), b":1\r\n");
    // A timeout, then a client killed while it waits.
    assert_eq!(waiting.cmd(&["FQ.POP", "q", "BLOCK", "20"]), b"*-1\r\n");
    waiting.cmd(&["CLIENT", "SETNAME", "sleeper"]);
    waiting.send(&crate::support::encode_command(&[
        b"FQ.POP", b"q", b"BLOCK", b"0",
    ]));
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(other.cmd(&["CLIENT", "KILL", "SKIPME", "yes"]), b":1\r\n");
    assert!(waiting.is_closed());
    other.cmd(&["FQ.PUSH", "q", "http://a.test/3"]);
    assert_eq!(
        other.cmd(&["FQ.POP", "q"]),
        b"*1\r\n*2\r\n:3\r\n$15\r\nhttp://a.test/3\r\n"
    );
}

/// Issue 31, item 6: each command of a pipeline is judged at its own time, not at the time its
/// batch began. The servers' own clock readings are what is checked: TIME, run just before the
/// pop in the same pipeline, and the clock and deadline the pop wrote to the log (`FQ.LEASE key
/// clock group id deadline`), never how long the test took.
#[test]
fn each_command_of_a_pipeline_judges_leases_and_delays_at_its_own_time() {
    const URLS: usize = 200_000;
    let dir = DataDir::new("frontier-clock");
    let mut config = Config::default_for_tests();
    config.dir = dir.0.clone();
    config.appendonly = true;
    let server = TestServer::start_with(config);
    let mut client = server.client();
    for (key, delay) in [("lease", "0"), ("polite", "1000")] {
        let reserved = client.cmd(&["FQ.RESERVE", key, "0.01", "400000", "DELAY", delay]);
        assert_eq!(reserved, b"+OK\r\n");
    }
    // A large push, TIME, then a pop of a short lease, all in one pipeline.
    let pipelined =
        |client: &mut RawClient, key: &str, pop: &[&str]| -> (u64, Vec<(u64, String)>) {
            let urls: Vec<String> = (0..URLS).map(|i| format!("http://a.example/{i}")).collect();
            let mut push: Vec<&[u8]> = vec![b"FQ.PUSH", key.as_bytes()];
            push.extend(urls.iter().map(|url| url.as_bytes()));
            let mut bytes = crate::support::encode_command(&push);
            bytes.extend(crate::support::encode_command(&[b"TIME"]));
            let pop: Vec<&[u8]> = pop.iter().map(|word| word.as_bytes()).collect();
            bytes.extend(crate::support::encode_command(&pop));
            client.send(&bytes);
            let pushed = client.read_reply();
            assert!(pushed.starts_with(format!("*{URLS}\r\n").as_bytes()));
            let time = time_ms(&client.read_reply());
            (time, parse_pairs(&client.read_reply()))
        };
    let (before_pop, popped) =
        pipelined(&mut client, "lease", &["FQ.POP", "lease", "LEASE", "150"]);
    assert_eq!(popped, [(1, "http://a.example/0".to_string())]);
    let (before_first, first) = pipelined(&mut client, "polite", &["FQ.POP", "polite"]);
    assert_eq!(first.len(), 1);
    // The host's next item, as soon as the server lets it go; TIME just after the pop.
    let mut tries = 0;
    let after_second = loop {
        client.send(&crate::support::encode_command(&[b"FQ.POP", b"polite"]));
        client.send(&crate::support::encode_command(&[b"TIME"]));
        let popped = parse_pairs(&client.read_reply());
        let time = time_ms(&client.read_reply());
        if !popped.is_empty() {
            break time;
        }
        tries += 1;
        assert!(tries < 5_000, "the host's second item never came");
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    // The two leases of the host, by the server's clock: at least its DELAY apart (one
    // millisecond allowed for reading whole milliseconds at each end).
    assert!(
        after_second - before_first >= 999,
        "two leases of one host {} ms apart, under DELAY 1000",
        after_second - before_first
    );
    // The log holds what each pop did at its own time.
    let leases = logged_leases(&dir.0);
    let (_, clock, id, deadline) = leases
        .iter()
        .find(|lease| lease.0 == "lease")
        .cloned()
        .expect("logged");
    assert_eq!(id, 1);
    assert!(
        clock + 1 >= before_pop,
        "the pop ran at {clock}, before the TIME ({before_pop}) that ran before it"
    );
    assert_eq!(
        deadline,
        clock + 150,
        "a lease of 150 ms from the pop's own time"
    );
    let polite: Vec<u64> = leases
        .iter()
        .filter(|l| l.0 == "polite")
        .map(|l| l.1)
        .collect();
    assert!(polite.len() >= 2, "{leases:?}");
    assert!(polite[0] + 1 >= before_first, "{polite:?} {before_first}");
    assert!(polite[1] - polite[0] >= 1000, "{polite:?}");
}

/// TIME's reply in whole milliseconds.
fn time_ms(reply: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(reply);
    let numbers: Vec<u64> = text
        .split("\r\n")
        .filter(|line| !line.is_empty() && !line.starts_with(['*', '$']))
        .map(|line| line.parse().expect("a number"))
        .collect();
    assert_eq!(numbers.len(), 2, "{text}");
    numbers[0] * 1000 + numbers[1] / 1000
}

/// Every FQ.LEASE the log holds that leased an item: (key, clock, id, deadline) of each item.
fn logged_leases(dir: &std::path::Path) -> Vec<(String, u64, u64, u64)> {
    let number = |word: &[u8]| -> u64 { String::from_utf8_lossy(word).parse().expect("a number") };
    let mut leases = Vec::new();
    for (segment, path) in list_segments(dir).expect("segments") {
        let mut reader = SegmentReader::open(&path, segment).expect("a segment");
        while let Ok(record) = reader.next_record() {
            for (_, ranges) in &record.commands {
                let request = Request::new(&record.body, ranges);
                let words: Vec<&[u8]> = request.args().collect();
                if words[0] != b"FQ.LEASE" {
                    continue;
                }
                let key = String::from_utf8_lossy(words[1]).into_owned();
                for item in words[3..].chunks(3) {
                    leases.push((
                        key.clone(),
                        number(words[2]),
                        number(item[1]),
                        number(item[2]),
                    ));
                }
            }
        }
    }
    leases
}

/// Issue 31, item 7: after a lease lapses FQ.HOST and FQ.INFO count the item alike (queued
/// again); an either/or pair of options is refused rather than one ignored; after `URLS` every
/// word is a URL, so a relative link spelled as an option can be pushed, and the form without it
/// works as before.
#[test]
fn host_and_info_agree_pairs_are_refused_and_urls_ends_the_options() {
    let server = TestServer::start();
    let mut client = server.client();
    assert_eq!(client.cmd(&["FQ.RESERVE", "k", "0.01", "1000"]), b"+OK\r\n");
    client.cmd(&["FQ.PUSH", "k", "http://a.test/1"]);
    assert_eq!(
        parse_pairs(&client.cmd(&["FQ.POP", "k", "LEASE", "1"])).len(),
        1
    );
    // Waits for the one-millisecond lease to have ended, whatever the machine.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let host = client.cmd(&["FQ.HOST", "k", "http://a.test"]);
    assert!(
        escape(&host).ends_with("+queued\\r\\n:1\\r\\n+leased\\r\\n:0\\r\\n"),
        "{}",
        escape(&host)
    );
    assert_eq!(frontier_info_number(&mut client, "k", "Queued"), 1);
    assert_eq!(frontier_info_number(&mut client, "k", "Leased"), 0);
    let syntax = b"-ERR syntax error\r\n";
    for pair in [
        &["FQ.NACK", "k", "1", "DELAY", "5", "AT", "100"][..],
        &["FQ.NACK", "k", "1", "AT", "100", "DELAY", "5"],
        &[
            "FQ.HOST",
            "k",
            "http://a.test",
            "PAUSE",
            "5",
            "PAUSEAT",
            "100",
        ],
        &[
            "FQ.HOST",
            "k",
            "http://a.test",
            "PAUSEAT",
            "100",
            "DELAY",
            "1",
            "PAUSE",
            "5",
        ],
    ] {
        assert_eq!(client.cmd(pair), syntax, "{pair:?}");
    }
    assert_eq!(
        client.cmd(&["FQ.PUSH", "k", "URLS", "FORCE", "AT", "PRIORITY", "urls"]),
        b"*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n"
    );
    assert_eq!(
        client.cmd(&["FQ.SEEN", "k", "FORCE", "AT", "PRIORITY", "urls"]),
        b"*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n"
    );
    // Options, then URLS: the options still apply.
    assert_eq!(
        client.cmd(&["FQ.PUSH", "k", "PRIORITY", "9", "FORCE", "URLS", "AT"]),
        b"*1\r\n:1\r\n"
    );
    assert_eq!(
        client.cmd(&["FQ.POP", "k"]),
        b"*1\r\n*2\r\n:6\r\n$2\r\nAT\r\n"
    );
    // Today's form: options end at the first word that is none of them.
    assert_eq!(
        client.cmd(&["FQ.PUSH", "k", "FORCE", "http://a.test/1"]),
        b"*1\r\n:1\r\n"
    );
    assert_eq!(
        client.cmd(&["FQ.PUSH", "k", "URLS"]),
        b"-ERR wrong number of arguments for 'fq.push' command\r\n"
    );
}
