//! Replication between real sieved processes on loopback: a primary and replicas started with
//! `--replicaof`, full and partial resynchronisation, WAIT, read-only replicas, and replicas
//! pointed at something that is not a usable primary.
//!
//! `SIEVED_REPLICATION_ITEMS` sets how many items the bulk test writes into each filter
//! (default 100,000, which CI runs in well under a minute; the figure is 1,000,000).

use crate::ha::{follows, info, query, query_info_field, stat, wait_for};
use crate::support::{free_port, spawn_server, tool, try_info_field, DataDir, RawClient, Running};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const READONLY: &[u8] = b"-READONLY You can't write against a read only replica.\r\n";

/// Items per BF.MADD / CBF.MADD / CBF.MDEL call.
const BATCH: usize = 1000;

fn items() -> usize {
    std::env::var("SIEVED_REPLICATION_ITEMS")
        .ok()
        .map(|n| n.parse().expect("SIEVED_REPLICATION_ITEMS is a number"))
        .unwrap_or(100_000)
}

fn item(i: usize) -> String {
    format!("https://example.com/page/{i}")
}

struct Node {
    // Fields drop in order: the process goes before its directory.
    process: Option<Running>,
    port: u16,
    dir: DataDir,
}

impl Node {
    fn start(name: &str, extra: &[&str]) -> Node {
        let port = free_port();
        let dir = DataDir::new(&format!("replication-{name}"));
        let process = spawn_server(&dir.0, port, extra);
        Node {
            port,
            dir,
            process: Some(process),
        }
    }

    fn replica_of(name: &str, primary: &Node, extra: &[&str]) -> Node {
        let replicaof = format!("127.0.0.1 {}", primary.port);
        let mut args = vec!["--replicaof", replicaof.as_str()];
        args.extend(extra);
        Node::start(name, &args)
    }

    /// kill -9.
    fn kill(&mut self) {
        self.process.take().expect("running").kill();
    }

    /// Starts the same server again, on the same port and directory.
    fn restart(&mut self, extra: &[&str]) {
        assert!(self.process.is_none(), "still running");
        self.process = Some(spawn_server(&self.dir.0, self.port, extra));
    }

    fn pid(&self) -> String {
        self.process.as_ref().expect("running").0.id().to_string()
    }

    fn raw(&self) -> RawClient {
        RawClient::connect(([127, 0, 0, 1], self.port).into())
    }

    fn digest(&self) -> String {
        query(self.port, &["SIEVED.DIGEST"]).expect("SIEVED.DIGEST")
    }

    /// Waits until the primary lists `replicas` as online.
    fn wait_online(&self, replicas: &[&Node]) {
        for replica in replicas {
            let port = format!("port={},", replica.port);
            wait_for(
                &format!("{} to list {} online", self.port, replica.port),
                || {
                    let text = info(self.port, "replication")?;
                    text.lines()
                        .filter_map(|line| line.split_once(':'))
                        .any(|(name, value)| {
                            name.starts_with("slave")
                                && value.contains(&port)
                                && value.contains("state=online")
                        })
                        .then_some(())
                },
            );
            wait_for(&format!("{} to report its link up", replica.port), || {
                follows(replica.port, self.port).then_some(())
            });
        }
    }
}

/// Sends `kill -<signal>` to a process.
fn signal(pid: &str, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), pid])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// `WAIT replicas timeout` on the connection that made the writes, as WAIT counts the replicas
/// that have this connection's writes.
fn wait_replicas(con: &mut redis::Connection, replicas: i64) {
    let acknowledged: i64 = redis::cmd("WAIT")
        .arg(replicas)
        .arg((crate::ha::GUARD / 2).as_millis() as u64)
        .query(con)
        .expect("WAIT");
    assert_eq!(acknowledged, replicas, "WAIT {replicas}");
}

/// Waits until every node's SIEVED.DIGEST is the primary's.
fn wait_same_data(primary: &Node, replicas: &[&Node]) -> String {
    wait_for("the replicas to hold the primary's data", || {
        let digest = primary.digest();
        replicas
            .iter()
            .all(|replica| replica.digest() == digest)
            .then_some(digest)
    })
}

/// Adds items `range` to the Bloom filter `bf` and the counting filter `cbf`, then deletes every
/// tenth of them from `cbf`, in pipelines on `con`.
fn write_items(con: &mut redis::Connection, range: std::ops::Range<usize>) {
    let all: Vec<usize> = range.collect();
    for chunk in all.chunks(BATCH * 10) {
        let mut pipe = redis::pipe();
        for batch in chunk.chunks(BATCH) {
            let items: Vec<String> = batch.iter().map(|&i| item(i)).collect();
            pipe.cmd("BF.MADD").arg("bf").arg(&items).ignore();
            pipe.cmd("CBF.MADD").arg("cbf").arg(&items).ignore();
            let deleted: Vec<String> = batch
                .iter()
                .filter(|&&i| i % 10 == 0)
                .map(|&i| item(i))
                .collect();
            pipe.cmd("CBF.MDEL").arg("cbf").arg(&deleted).ignore();
        }
        pipe.query::<()>(con).expect("write a batch");
    }
}

#[test]
fn primary_and_two_replicas_hold_the_same_data() {
    let count = items();
    let primary = Node::start("bulk-primary", &[]);
    let mut con = crate::ha::connect(primary.port).expect("connect");
    let capacity = count.to_string();
    crate::ha::command(&["BF.RESERVE", "bf", "0.001", &capacity])
        .query::<()>(&mut con)
        .expect("BF.RESERVE");
    crate::ha::command(&["CBF.RESERVE", "cbf", "0.001", &capacity])
        .query::<()>(&mut con)
        .expect("CBF.RESERVE");
    // The first half reaches the replicas in the full sync, the second in the live stream.
    let started = Instant::now();
    write_items(&mut con, 0..count / 2);
    let replicas = [
        Node::replica_of("bulk-replica-1", &primary, &[]),
        Node::replica_of("bulk-replica-2", &primary, &[]),
    ];
    write_items(&mut con, count / 2..count);
    wait_replicas(&mut con, 2);
    eprintln!(
        "{count} items in each filter written and acknowledged by 2 replicas in {:?}",
        started.elapsed()
    );
    primary.wait_online(&[&replicas[0], &replicas[1]]);
    assert_eq!(stat(primary.port, "sync_full"), 2);
    assert_eq!(
        query_info_field(primary.port, "replication", "connected_slaves").as_deref(),
        Some("2")
    );

    let digest = wait_same_data(&primary, &[&replicas[0], &replicas[1]]);
    assert_ne!(digest, "0".repeat(32), "the data set is empty");
    let sample: Vec<String> = (0..BATCH).map(item).collect();
    for node in [&primary, &replicas[0], &replicas[1]] {
        let mut raw = node.raw();
        let mut exists = vec!["BF.MEXISTS", "bf"];
        exists.extend(sample.iter().map(String::as_str));
        let mut expected = format!("*{BATCH}\r\n").into_bytes();
        expected.extend(b":1\r\n".repeat(BATCH));
        assert!(
            raw.cmd(&exists) == expected,
            "{}: an item is missing",
            node.port
        );
        for card in [&["BF.CARD", "bf"], &["CBF.CARD", "cbf"]] {
            assert_eq!(raw.cmd(card), primary.raw().cmd(card), "{card:?}");
        }
    }

    for replica in &replicas {
        let mut raw = replica.raw();
        for write in [
            &["BF.ADD", "bf", "new"][..],
            &["CBF.DEL", "cbf", &item(1)],
            &["CBF.ADD", "other", "x"],
            &["SET", "s", "v"],
        ] {
            assert_eq!(raw.cmd(write), READONLY, "{write:?} on a replica");
        }
        assert_eq!(raw.cmd(&["BF.EXISTS", "bf", &item(1)]), b":1\r\n");
        let role = raw.cmd(&["ROLE"]);
        let expected = format!(
            "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:{}\r\n$9\r\nconnected\r\n",
            primary.port
        );
        assert!(
            role.starts_with(expected.as_bytes()),
            "ROLE: {}",
            crate::support::escape(&role)
        );
    }
    assert!(primary
        .raw()
        .cmd(&["ROLE"])
        .starts_with(b"*3\r\n$6\r\nmaster\r\n"));
    assert_eq!(
        digest,
        wait_same_data(&primary, &[&replicas[0], &replicas[1]])
    );
}

/// A small data set on `primary` through `con`, acknowledged by `replicas`.
fn small_data_set(con: &mut redis::Connection, from: usize, replicas: i64) {
    write_items(con, from..from + 2 * BATCH);
    wait_replicas(con, replicas);
}

#[test]
fn dropped_links_resume_with_a_partial_resync() {
    let primary = Node::start("partial-primary", &[]);
    let replicas = [
        Node::replica_of("partial-replica-1", &primary, &[]),
        Node::replica_of("partial-replica-2", &primary, &[]),
    ];
    primary.wait_online(&[&replicas[0], &replicas[1]]);
    let mut con = crate::ha::connect(primary.port).expect("connect");
    small_data_set(&mut con, 0, 2);
    let full = stat(primary.port, "sync_full");
    let partial = stat(primary.port, "sync_partial_ok");

    let killed: i64 = query(primary.port, &["CLIENT", "KILL", "TYPE", "replica"]).expect("kill");
    assert_eq!(killed, 2, "CLIENT KILL TYPE replica");
    // Writes made while the links are down come to the replicas from the backlog.
    write_items(&mut con, 2 * BATCH..3 * BATCH);
    wait_for("both replicas to resume with a partial resync", || {
        (stat(primary.port, "sync_partial_ok") >= partial + 2).then_some(())
    });
    primary.wait_online(&[&replicas[0], &replicas[1]]);
    assert_eq!(
        stat(primary.port, "sync_full"),
        full,
        "a full sync was made"
    );
    wait_replicas(&mut con, 2);
    wait_same_data(&primary, &[&replicas[0], &replicas[1]]);
}

#[test]
fn replica_killed_and_restarted_resyncs() {
    let primary = Node::start("restart-primary", &[]);
    let replicaof = format!("127.0.0.1 {}", primary.port);
    let mut replica = Node::replica_of("restart-replica", &primary, &[]);
    primary.wait_online(&[&replica]);
    let mut con = crate::ha::connect(primary.port).expect("connect");
    small_data_set(&mut con, 0, 1);

    replica.kill();
    write_items(&mut con, 2 * BATCH..4 * BATCH);
    replica.restart(&["--replicaof", &replicaof]);
    primary.wait_online(&[&replica]);
    wait_replicas(&mut con, 1);
    wait_same_data(&primary, &[&replica]);
}

#[test]
fn backlog_overrun_falls_back_to_a_full_sync() {
    // Redis's smallest backlog.
    let primary = Node::start("backlog-primary", &["--repl-backlog-size", "16384"]);
    let replica = Node::replica_of("backlog-replica", &primary, &[]);
    primary.wait_online(&[&replica]);
    let mut con = crate::ha::connect(primary.port).expect("connect");
    small_data_set(&mut con, 0, 1);
    let full = stat(primary.port, "sync_full");
    let refused = stat(primary.port, "sync_partial_err");

    // The replica is stopped, so it cannot reconnect, and its link is cut before the writes:
    // they reach only the backlog, which 2 MiB of them overrun.
    signal(&replica.pid(), "STOP");
    let killed: i64 = query(primary.port, &["CLIENT", "KILL", "TYPE", "replica"]).expect("kill");
    assert_eq!(killed, 1, "CLIENT KILL TYPE replica");
    wait_for("the primary to drop the replica", || {
        (query_info_field(primary.port, "replication", "connected_slaves").as_deref() == Some("0"))
            .then_some(())
    });
    let value = "v".repeat(64 * 1024);
    let mut pipe = redis::pipe();
    for i in 0..32 {
        pipe.cmd("SET").arg(format!("big:{i}")).arg(&value).ignore();
    }
    pipe.query::<()>(&mut con)
        .expect("write while the replica is away");
    signal(&replica.pid(), "CONT");

    wait_for("the replica to come back with a full sync", || {
        (stat(primary.port, "sync_full") > full).then_some(())
    });
    assert!(stat(primary.port, "sync_partial_err") > refused);
    primary.wait_online(&[&replica]);
    wait_replicas(&mut con, 1);
    wait_same_data(&primary, &[&replica]);
}

/// How long a replica is watched after being pointed at a server it cannot replicate from:
/// several of its reconnection attempts (Redis makes one a second). The checks are of
/// something that must never happen, so a slow machine can only make them weaker, not fail.
const WATCH: Duration = Duration::from_secs(3);

/// A standalone node holding some data, and that data's digest.
fn node_with_data(name: &str, extra: &[&str]) -> (Node, String) {
    let node = Node::start(name, extra);
    let mut con = crate::ha::connect(node.port).expect("connect");
    write_items(&mut con, 0..BATCH);
    let digest = node.digest();
    (node, digest)
}

/// Points `node` at `port` and checks that it keeps answering with its link down and its data
/// untouched, then that it can be made a primary again with that data.
fn keeps_data_when_pointed_at(node: &Node, digest: &str, port: u16) {
    let mut raw = node.raw();
    let reply = raw.cmd(&["REPLICAOF", "127.0.0.1", &port.to_string()]);
    if reply.starts_with(b"-") {
        // Refusing outright is a fine answer too: the node stays a primary.
        assert_eq!(
            query_info_field(node.port, "replication", "role").as_deref(),
            Some("master")
        );
    } else {
        assert_eq!(reply, b"+OK\r\n");
        let until = Instant::now() + WATCH;
        while Instant::now() < until {
            let text = info(node.port, "replication").expect("the replica answers INFO");
            assert_eq!(try_info_field(&text, "role"), Some("slave"));
            assert_eq!(try_info_field(&text, "master_link_status"), Some("down"));
            assert_eq!(node.digest(), digest, "the replica's data changed");
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(raw.cmd(&["BF.ADD", "bf", "new"]), READONLY);
    }
    assert_eq!(raw.cmd(&["BF.EXISTS", "bf", &item(1)]), b":1\r\n");
    assert_eq!(raw.cmd(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    assert_eq!(node.digest(), digest);
    // 1, or 0 for a false positive: either way the write was taken.
    assert!(raw.cmd(&["BF.ADD", "bf", "new"]).starts_with(b":"));
}

#[test]
fn replica_pointed_at_itself_keeps_its_data() {
    let (node, digest) = node_with_data("self", &[]);
    keeps_data_when_pointed_at(&node, &digest, node.port);
}

#[test]
fn replica_of_a_plain_redis_server_keeps_its_data() {
    let Some(redis_server) = tool("redis-server") else {
        return;
    };
    let redis_port = free_port();
    let redis_dir = DataDir::new("replication-redis-server");
    let _redis = Running(
        Command::new(redis_server)
            .args(["--port", &redis_port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&redis_dir.0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start redis-server"),
    );
    wait_for("redis-server to answer", || {
        query::<()>(redis_port, &["SET", "a", "string"]).ok()
    });
    let (node, digest) = node_with_data("of-redis", &[]);
    keeps_data_when_pointed_at(&node, &digest, redis_port);
}

#[test]
fn replica_with_a_wrong_masterauth_keeps_its_data() {
    let primary = Node::start("auth-primary", &["--requirepass", "right"]);
    let (node, digest) = node_with_data("auth-replica", &["--masterauth", "wrong"]);
    keeps_data_when_pointed_at(&node, &digest, primary.port);
}

/// The processes `pid` has started and not yet reaped, from /proc.
fn children(pid: &str) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A replica's handshake on a raw connection, up to the start of the full sync's payload;
/// returns the connection, which then reads nothing unless asked.
fn raw_replica_until_payload(primary: &Node) -> std::net::TcpStream {
    use std::io::{BufRead, BufReader, Write};
    let mut link = std::net::TcpStream::connect(("127.0.0.1", primary.port)).expect("connect");
    link.set_read_timeout(Some(crate::ha::GUARD))
        .expect("timeout");
    let encode = |args: &[&str]| {
        let args: Vec<&[u8]> = args.iter().map(|arg| arg.as_bytes()).collect();
        crate::support::encode_command(&args)
    };
    link.write_all(
        &[
            encode(&["REPLCONF", "listening-port", "1"]),
            encode(&["REPLCONF", "capa", "eof", "capa", "psync2"]),
            encode(&["PSYNC", "?", "-1"]),
        ]
        .concat(),
    )
    .expect("handshake");
    let mut reader = BufReader::new(link.try_clone().expect("clone"));
    let mut lines = Vec::new();
    while !lines.iter().any(|line: &String| line.starts_with("$EOF:")) {
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .expect("read the handshake's replies");
        assert!(!line.is_empty(), "the primary closed the link: {lines:?}");
        lines.push(line);
    }
    assert!(
        lines.iter().any(|line| line.starts_with("+FULLRESYNC")),
        "{lines:?}"
    );
    link
}

/// A full sync's snapshot is written by a child forked at the cut, with the log on or off.
/// Writes that do not repeat (counting deletions) keep coming while the child writes a filter of
/// tens of megabytes; an inexact cut would count some of them twice on the replica.
#[test]
fn a_full_sync_under_writes_is_exact() {
    for appendonly in ["no", "yes"] {
        full_sync_under_writes_is_exact(appendonly);
    }
}

fn full_sync_under_writes_is_exact(appendonly: &str) {
    let name = format!("forked-primary-aof-{appendonly}");
    let primary = Node::start(&name, &["--appendonly", appendonly]);
    let mut con = crate::ha::connect(primary.port).expect("connect");
    crate::ha::command(&["CBF.RESERVE", "cbf", "0.0001", "10000000"])
        .query::<()>(&mut con)
        .expect("CBF.RESERVE");
    write_items(&mut con, 0..2 * BATCH);
    let port = primary.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut con = crate::ha::connect(port).expect("connect");
            let mut next = 2 * BATCH;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                write_items(&mut con, next..next + 100);
                next += 100;
            }
            next
        })
    };
    let name = format!("forked-replica-aof-{appendonly}");
    let replica = Node::replica_of(&name, &primary, &[]);
    primary.wait_online(&[&replica]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = writer.join().expect("the writer");
    wait_replicas(&mut con, 1);
    wait_same_data(&primary, &[&replica]);
    eprintln!("appendonly {appendonly}: {written} items written around the full sync");
    wait_for("the snapshot child to be reaped", || {
        children(&primary.pid()).is_empty().then_some(())
    });
}

/// A snapshot child killed mid-payload ends that sync, and only that: the primary goes on
/// serving, leaves no child behind, and the next sync works.
#[test]
fn a_snapshot_child_killed_mid_sync_fails_only_that_sync() {
    use std::io::Read;
    let primary = Node::start("child-killed-primary", &["--appendonly", "no"]);
    // 240 MB of payload: far more than the pipe and the sockets hold while nobody reads.
    query::<()>(primary.port, &["BF.RESERVE", "big", "0.0001", "100000000"]).expect("reserve");
    let mut con = crate::ha::connect(primary.port).expect("connect");
    write_items(&mut con, 0..BATCH);
    let digest = primary.digest();

    let mut link = raw_replica_until_payload(&primary);
    let child = wait_for("the snapshot child", || {
        children(&primary.pid()).into_iter().next()
    });
    signal(&child, "KILL");
    // The primary ends the link: what it had sent, then the end of the stream.
    let mut rest = Vec::new();
    let _ = link.read_to_end(&mut rest);
    assert!(rest.len() < 240_000_000, "the whole payload arrived");
    wait_for("the killed child to be reaped", || {
        children(&primary.pid()).is_empty().then_some(())
    });
    assert_eq!(primary.digest(), digest);

    let replica = Node::replica_of("child-killed-replica", &primary, &[]);
    primary.wait_online(&[&replica]);
    wait_same_data(&primary, &[&replica]);
}

/// A replica that goes away in the middle of its full sync takes its snapshot child with it.
#[test]
fn a_replica_gone_mid_sync_leaves_no_child() {
    let primary = Node::start("gone-primary", &["--appendonly", "no"]);
    query::<()>(primary.port, &["BF.RESERVE", "big", "0.0001", "100000000"]).expect("reserve");
    let link = raw_replica_until_payload(&primary);
    wait_for("the snapshot child", || {
        children(&primary.pid()).into_iter().next()
    });
    drop(link);
    wait_for("the snapshot child to be ended and reaped", || {
        children(&primary.pid()).is_empty().then_some(())
    });
    assert_eq!(
        query::<String>(primary.port, &["PING"]).expect("PING"),
        "PONG"
    );
}

/// A primary that speaks the handshake, answers PSYNC with +FULLRESYNC and then sends
/// `payload` as it is, and closes: the test's stand-in for a primary whose sync payload is
/// damaged or cut short. Serves one link and ends.
fn fake_primary(payload: Vec<u8>) -> (u16, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let serve = std::thread::spawn(move || {
        let (mut link, _) = listener.accept().expect("the replica connects");
        link.set_read_timeout(Some(crate::ha::GUARD))
            .expect("timeout");
        let mut seen = Vec::new();
        let mut chunk = [0u8; 4096];
        // Each request is answered as it is complete; the replica sends one at a time.
        let mut answered = 0;
        loop {
            let read = link.read(&mut chunk).expect("read the handshake");
            assert!(read > 0, "the replica left during the handshake");
            seen.extend_from_slice(&chunk[..read]);
            let text = String::from_utf8_lossy(&seen).to_ascii_uppercase();
            let requests = text.matches("\r\n*").count() + 1;
            while answered < requests && text.ends_with("\r\n") {
                answered += 1;
                if text.contains("$5\r\nPSYNC\r\n") && answered == requests {
                    link.write_all(format!("+FULLRESYNC {} 0\r\n", "f".repeat(40)).as_bytes())
                        .expect("answer PSYNC");
                    link.write_all(&payload).expect("send the payload");
                    return;
                }
                let answer: &[u8] = if answered == 1 {
                    b"+PONG\r\n"
                } else {
                    b"+OK\r\n"
                };
                link.write_all(answer).expect("answer");
            }
        }
    });
    (port, serve)
}

/// Points a replica holding data at a primary whose full sync fails as `payload` makes it fail,
/// and checks that INFO names the reason (`expected`) while the data stays as it was.
fn keeps_data_through_a_bad_payload(name: &str, payload: Vec<u8>, expected: &str) {
    let (node, digest) = node_with_data(name, &[]);
    let (port, primary) = fake_primary(payload);
    let mut raw = node.raw();
    assert_eq!(
        raw.cmd(&["REPLICAOF", "127.0.0.1", &port.to_string()]),
        b"+OK\r\n"
    );
    primary.join().expect("the fake primary");
    let error = wait_for("the link's error in INFO", || {
        query_info_field(node.port, "replication", "master_link_last_error")
            .filter(|error| !error.is_empty())
    });
    assert!(error.contains(expected), "{name}: {error}");
    assert_eq!(
        query_info_field(node.port, "replication", "master_link_status").as_deref(),
        Some("down")
    );
    assert_eq!(node.digest(), digest, "{name}: the replica's data changed");
    assert_eq!(raw.cmd(&["BF.EXISTS", "bf", &item(1)]), b":1\r\n");
}

/// A real snapshot of a small data set, as a full sync's payload carries it.
fn a_snapshot(name: &str) -> Vec<u8> {
    let (node, _) = node_with_data(name, &[]);
    assert_eq!(node.raw().cmd(&["SAVE"]), b"+OK\r\n");
    std::fs::read(node.dir.0.join("sieved.snap")).expect("the snapshot")
}

#[test]
fn a_corrupted_sync_payload_keeps_the_replicas_data() {
    let mark = "m".repeat(40);
    let mut snapshot = a_snapshot("corrupted-source");
    let middle = snapshot.len() / 2;
    snapshot[middle] ^= 0x55;
    let mut payload = format!("$EOF:{mark}\r\n").into_bytes();
    payload.extend_from_slice(&snapshot);
    payload.extend_from_slice(mark.as_bytes());
    keeps_data_through_a_bad_payload("corrupted", payload, "cannot be loaded");
}

#[test]
fn a_truncated_sync_payload_keeps_the_replicas_data() {
    let snapshot = a_snapshot("truncated-source");
    // Announced whole, cut off half-way by the primary closing the link.
    let mut payload = format!("${}\r\n", snapshot.len()).into_bytes();
    payload.extend_from_slice(&snapshot[..snapshot.len() / 2]);
    keeps_data_through_a_bad_payload("truncated", payload, "closed the link");
}
