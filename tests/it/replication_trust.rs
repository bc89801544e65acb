//! Replication when something goes wrong, against the real binary (issue 31, items 1, 2, 3, 4
//! and 8): REPLICAOF while a full sync is half-way, WAIT and min-replicas-to-write before a
//! replica has loaded its payload, records and primaries a replica cannot follow, panics in
//! tasks, a long mixed run that must converge, and restarts that continue a history. A TCP proxy
//! (support/proxy.rs) holds a payload half-way, so each scenario is reached by counting bytes,
//! never by timing.
//!
//! Each test asserts the figure the issue reported, as a count that must be 0 (or the exact
//! error and INFO field). `SIEVED_BINARY=<path>` runs them against another build of sieved (the
//! one before the fix, to see the figures it gave).

use crate::ha::{info, query, query_info_field, wait_for, GUARD};
use crate::support::proxy::{Flow, Proxy};
use crate::support::{
    self, binary, encode_command, free_port, tool, wait_until_serving, DataDir, RawClient, Rng,
    Running,
};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Confirmed writes per scenario: the figure.
const WRITES: usize = 56;
/// How much of a full sync's traffic (handshake replies, then the payload) the proxy lets
/// through before it holds the rest: the replica is then mid-transfer.
const LET_THROUGH: u64 = 256 * 1024;

/// The program the tests run: this build's, or `SIEVED_BINARY`.
fn program() -> PathBuf {
    std::env::var_os("SIEVED_BINARY").map_or_else(|| PathBuf::from(binary()), PathBuf::from)
}

struct Node {
    // Fields drop in order: the process goes before its directory.
    _process: Option<Running>,
    port: u16,
    dir: DataDir,
    /// The flags it was started with, for a restart.
    args: Vec<String>,
}

/// How a node is stopped before a restart.
#[derive(Clone, Copy, Debug)]
enum Stop {
    /// SHUTDOWN SAVE: the exit snapshot, which SHUTDOWN writes under the default `save` rules
    /// (the nodes here run with `--save ""`).
    Clean,
    /// kill -9.
    Kill,
}

impl Node {
    fn start(name: &str, extra: &[&str]) -> Node {
        Node::start_with_env(name, extra, &[])
    }

    /// Starts the binary with `extra` flags and `env`, its output in `<dir>/server.log`, and a
    /// configuration file (`<dir>/sieved.conf`, empty at first) for CONFIG REWRITE.
    fn start_with_env(name: &str, extra: &[&str], env: &[(&str, &str)]) -> Node {
        let dir = DataDir::new(&format!("trust-{name}"));
        std::fs::write(dir.0.join("sieved.conf"), "").expect("configuration file");
        let mut node = Node {
            _process: None,
            port: free_port(),
            dir,
            args: extra.iter().map(|arg| arg.to_string()).collect(),
        };
        node.launch(env);
        node
    }

    /// Runs the binary on the node's port, directory and flags, its output appended to
    /// `<dir>/server.log`.
    fn launch(&mut self, env: &[(&str, &str)]) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.0.join("server.log"))
            .expect("server log");
        let child = Command::new(program())
            .arg("--config")
            .arg(self.dir.0.join("sieved.conf"))
            .args(["--port", &self.port.to_string(), "--dir"])
            .arg(&self.dir.0)
            .args(["--save", "", "--threads", "2", "--log-level", "info"])
            .args(&self.args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start sieved");
        self._process = Some(wait_until_serving(Running(child), self.port));
    }

    /// Stops the node as `how` says and starts it again on the same port, directory and flags.
    fn restart(&mut self, how: Stop) {
        let Some(mut process) = self._process.take() else {
            panic!("node {} is not running", self.port)
        };
        match how {
            Stop::Clean => {
                let mut client = self.raw();
                client.send(&encode_command(&[b"SHUTDOWN", b"SAVE"]));
                let status = process.0.wait().expect("wait for SHUTDOWN");
                drop(client);
                assert!(status.success(), "SHUTDOWN: {status}");
            }
            Stop::Kill => process.0.kill().expect("kill -9"),
        }
        drop(process);
        self.launch(&[]);
    }

    fn replica_of(name: &str, primary: u16, extra: &[&str]) -> Node {
        let replicaof = format!("127.0.0.1 {primary}");
        let mut args = vec!["--replicaof", replicaof.as_str()];
        args.extend(extra);
        Node::start(name, &args)
    }

    fn raw(&self) -> RawClient {
        RawClient::connect(([127, 0, 0, 1], self.port).into())
    }

    /// One command's reply, as text.
    fn cmd(&self, args: &[&str]) -> String {
        String::from_utf8_lossy(&self.raw().cmd(args)).into_owned()
    }

    fn info(&self, section: &str, field: &str) -> Option<String> {
        query_info_field(self.port, section, field)
    }

    fn digest(&self) -> String {
        query(self.port, &["SIEVED.DIGEST"]).expect("SIEVED.DIGEST")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("server.log")).unwrap_or_default()
    }

    /// Waits until this primary lists the replica on `port` online and the replica reports
    /// its link up.
    fn wait_online(&self, port: u16) {
        let listed = format!("port={port},");
        wait_for(&format!("{} to list {port} online", self.port), || {
            let text = info(self.port, "replication")?;
            text.lines()
                .filter_map(|line| line.split_once(':'))
                .any(|(name, value)| {
                    name.starts_with("slave")
                        && value.contains(&listed)
                        && value.contains("state=online")
                })
                .then_some(())
        });
        wait_for(&format!("{port} to report its link up"), || {
            (query_info_field(port, "replication", "master_link_status").as_deref() == Some("up"))
                .then_some(())
        });
    }
}

/// A primary holding a Bloom filter of about 10 MB (its full sync's payload) and a few keys.
fn primary_with_a_large_filter(name: &str) -> Node {
    let primary = Node::start(name, &[]);
    assert_eq!(
        primary.cmd(&["BF.RESERVE", "large", "0.0001", "4000000"]),
        "+OK\r\n"
    );
    for i in 0..100 {
        let key = format!("old:{i}");
        assert_eq!(
            primary.cmd(&["SET", &key, "from the old primary"]),
            "+OK\r\n"
        );
    }
    primary
}

/// Writes `prefix:0` .. `prefix:<count-1>` on `node`, each confirmed by `WAIT 1`; returns how
/// many were confirmed (all of them, or the test fails).
fn write_confirmed(node: &Node, prefix: &str, count: usize) -> usize {
    let mut client = node.raw();
    let guard = GUARD.as_millis().to_string();
    for i in 0..count {
        let key = format!("{prefix}:{i}");
        assert_eq!(client.cmd(&["SET", &key, &i.to_string()]), b"+OK\r\n");
        assert_eq!(
            client.cmd(&["WAIT", "1", &guard]),
            b":1\r\n",
            "WAIT 1 after {key}"
        );
    }
    count
}

/// How many of `prefix:0` .. `prefix:<count-1>` `node` lacks.
fn missing(node: &Node, prefix: &str, count: usize) -> usize {
    let mut client = node.raw();
    (0..count)
        .filter(|i| {
            let key = format!("{prefix}:{i}");
            client.cmd(&["EXISTS", &key]) != b":1\r\n"
        })
        .count()
}

/// Item 1: `REPLICAOF NO ONE` on a replica whose full sync is half-way. Before the fix the old
/// transfer went on once the bytes came, and its payload replaced what the promoted node had
/// confirmed since (56 of 56 writes wiped on it and on its own replica).
#[test]
fn replicaof_no_one_mid_sync_keeps_every_write_the_promoted_node_confirmed() {
    let old = primary_with_a_large_filter("no-one-old-primary");
    let node = Node::start("no-one-node", &[]);
    let below = Node::replica_of("no-one-below", node.port, &[]);
    node.wait_online(below.port);
    let proxy = Proxy::to(old.port);
    proxy.hold_after(Flow::Down, LET_THROUGH);
    let through = proxy.port.to_string();
    assert_eq!(node.cmd(&["REPLICAOF", "127.0.0.1", &through]), "+OK\r\n");
    proxy.wait_until("the payload to be held half-way", GUARD, |p| {
        p.delivered(Flow::Down) == LET_THROUGH && p.held(Flow::Down) > 0
    });
    assert_eq!(
        node.info("replication", "master_sync_in_progress")
            .as_deref(),
        Some("1")
    );

    assert_eq!(node.cmd(&["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    let confirmed = write_confirmed(&node, "confirmed", WRITES);
    // The old transfer's bytes arrive now; the old link must be gone.
    proxy.release(Flow::Down);
    proxy.wait_until("the old link's connection to end", GUARD, |p| {
        p.ended(Flow::Up) >= 1
    });

    let wiped = missing(&node, "confirmed", confirmed);
    node.wait_online(below.port);
    wait_for("the promoted node's replica to catch up", || {
        (below.digest() == node.digest()).then_some(())
    });
    let wiped_below = missing(&below, "confirmed", confirmed);
    assert_eq!(
        (wiped, wiped_below),
        (0, 0),
        "of {confirmed} writes WAIT confirmed on the promoted node, missing on it and on its \
         replica"
    );
    assert_eq!(node.info("replication", "role").as_deref(), Some("master"));
    assert_eq!(node.cmd(&["EXISTS", "large", "old:0"]), ":0\r\n");
}

/// Item 1: REPLICAOF pointing a replica at another primary while its full sync from the first
/// is half-way. Before the fix the old transfer, resumed, loaded a payload file the new link had
/// removed: a missing file loaded as an empty data set, swapped in while INFO said the link (to
/// the new primary) was up.
#[test]
fn replicaof_another_primary_mid_sync_never_wipes_the_replica() {
    let old = primary_with_a_large_filter("repoint-old-primary");
    let new = Node::start("repoint-new-primary", &[]);
    for i in 0..100 {
        let key = format!("base:{i}");
        assert_eq!(new.cmd(&["SET", &key, "on the new primary"]), "+OK\r\n");
    }
    let node = Node::start("repoint-node", &[]);
    let proxy = Proxy::to(old.port);
    proxy.hold_after(Flow::Down, LET_THROUGH);
    let through = proxy.port.to_string();
    assert_eq!(node.cmd(&["REPLICAOF", "127.0.0.1", &through]), "+OK\r\n");
    proxy.wait_until("the payload to be held half-way", GUARD, |p| {
        p.delivered(Flow::Down) == LET_THROUGH && p.held(Flow::Down) > 0
    });

    let port = new.port.to_string();
    assert_eq!(node.cmd(&["REPLICAOF", "127.0.0.1", &port]), "+OK\r\n");
    new.wait_online(node.port);
    let confirmed = write_confirmed(&new, "confirmed", WRITES);
    proxy.release(Flow::Down);
    proxy.wait_until("the old link's connection to end", GUARD, |p| {
        p.ended(Flow::Up) >= 1
    });

    let wiped = missing(&node, "confirmed", confirmed);
    let base_wiped = missing(&node, "base", 100);
    assert_eq!(
        (wiped, base_wiped),
        (0, 0),
        "of {confirmed} writes WAIT confirmed on the new primary and its 100 keys, missing on \
         the replica"
    );
    assert_eq!(node.cmd(&["EXISTS", "large", "old:0"]), ":0\r\n");
    wait_for("the replica to hold what its new primary holds", || {
        (node.digest() == new.digest()).then_some(())
    });
    let leftovers: Vec<String> = std::fs::read_dir(&node.dir.0)
        .expect("data directory")
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.starts_with("sieved.sync.tmp-"))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new(), "payload files left behind");
}

/// Redis Sentinel 7 (Debian's redis-sentinel, unmodified) watching `primary`, alone (quorum 1),
/// counting it down after a second without answers; killed when dropped.
struct Sentinel {
    port: u16,
    _process: Running,
    _dir: DataDir,
}

impl Sentinel {
    fn watch(program: &Path, primary: u16) -> Sentinel {
        let port = free_port();
        let dir = DataDir::new("trust-sentinel");
        let config = dir.0.join("sentinel.conf");
        let text = format!(
            "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor mymaster 127.0.0.1 {primary} 1\n\
             sentinel down-after-milliseconds mymaster 1000\n\
             sentinel failover-timeout mymaster 60000\nsentinel resolve-hostnames no\n",
            dir.0.display()
        );
        std::fs::write(&config, text).expect("sentinel configuration");
        let log = std::fs::File::create(dir.0.join("sentinel.log")).expect("sentinel log");
        let child = Command::new(program)
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start redis-sentinel");
        let sentinel = Sentinel {
            port,
            _process: Running(child),
            _dir: dir,
        };
        wait_for("the sentinel to answer", || {
            query::<String>(port, &["PING"]).ok()
        });
        sentinel
    }

    /// The ports of the replicas the sentinel knows of.
    fn replicas(&self) -> Vec<u16> {
        let replicas: Vec<Vec<String>> =
            query(self.port, &["SENTINEL", "REPLICAS", "mymaster"]).unwrap_or_default();
        replicas
            .iter()
            .filter_map(|fields| {
                let at = fields.iter().position(|field| field == "port")?;
                fields.get(at + 1)?.parse().ok()
            })
            .collect()
    }

    fn primary_port(&self) -> Option<u16> {
        let addr: Vec<String> = query(
            self.port,
            &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"],
        )
        .ok()?;
        addr.get(1)?.parse().ok()
    }
}

/// Item 1 under unmodified Sentinel: a planned `SENTINEL FAILOVER` while one replica's full sync
/// is half-way. Sentinel promotes the other replica and points the syncing one at it with
/// REPLICAOF; before the fix the old transfer, once its bytes came, loaded a payload file the
/// new link had removed and wiped the syncing replica: of 112 writes WAIT confirmed, the 56
/// made before the failover (which its sync from the new primary had brought) were missing.
#[test]
fn sentinel_failover_during_a_full_sync_wipes_nothing() {
    let Some(sentinel_program) = tool("redis-sentinel") else {
        return;
    };
    let old = primary_with_a_large_filter("sentinel-old-primary");
    let promoted = Node::replica_of("sentinel-promoted", old.port, &[]);
    old.wait_online(promoted.port);
    let proxy = Proxy::to(old.port);
    proxy.hold_after(Flow::Down, LET_THROUGH);
    // Never promoted: it has no data yet.
    let syncing = Node::replica_of("sentinel-syncing", proxy.port, &["--replica-priority", "0"]);
    proxy.wait_until("the payload to be held half-way", GUARD, |p| {
        p.delivered(Flow::Down) == LET_THROUGH && p.held(Flow::Down) > 0
    });
    let before = write_confirmed(&old, "before", WRITES);

    let sentinel = Sentinel::watch(&sentinel_program, old.port);
    let mut expected = vec![promoted.port, syncing.port];
    expected.sort();
    wait_for("the sentinel to find both replicas", || {
        let mut found = sentinel.replicas();
        found.sort();
        (found == expected).then_some(())
    });
    // Refused (NOGOODSLAVE) until the sentinel has read the replica's INFO.
    wait_for("the sentinel to start a failover", || {
        query::<String>(sentinel.port, &["SENTINEL", "FAILOVER", "mymaster"]).ok()
    });
    wait_for("the sentinel to promote the replica", || {
        (sentinel.primary_port() == Some(promoted.port)).then_some(())
    });
    // Sentinel points the syncing replica at the new primary.
    promoted.wait_online(syncing.port);
    let after = write_confirmed(&promoted, "after", WRITES);
    proxy.release(Flow::Down);
    proxy.wait_until("the old link's connection to end", GUARD, |p| {
        p.ended(Flow::Up) >= 1
    });

    let wiped = missing(&syncing, "before", before) + missing(&syncing, "after", after);
    assert_eq!(
        wiped,
        0,
        "of {} writes WAIT confirmed before and after the failover, missing on the replica \
         whose full sync the failover interrupted",
        before + after
    );
    wait_for("the replica to hold what the new primary holds", || {
        (syncing.digest() == promoted.digest()).then_some(())
    });
}

/// Item 2: a primary counts a replica for WAIT (and INFO's `offset=`) and for
/// min-replicas-to-write only from the replica's own ACK, sent once it has loaded its payload.
/// Here the primary has sent the whole payload (the proxy took it) while the replica holds a
/// quarter of a megabyte of it; before the fix `WAIT 1` answered 1 and `offset=` was the
/// primary's, and min-replicas-to-write 1 let writes in.
#[test]
fn wait_and_min_replicas_count_a_replica_only_once_it_has_loaded_the_payload() {
    let primary = primary_with_a_large_filter("wait-primary");
    // A first replica, gone again, leaves the stream on: writes have offsets past 0.
    let first = Node::replica_of("wait-first-replica", primary.port, &[]);
    primary.wait_online(first.port);
    drop(first);
    wait_for("the primary to drop its first replica", || {
        (primary.info("replication", "connected_slaves").as_deref() == Some("0")).then_some(())
    });
    // Written before the replica connects: the payload it is sent holds it.
    let mut client = primary.raw();
    assert_eq!(client.cmd(&["SET", "acknowledged?", "1"]), b"+OK\r\n");
    let proxy = Proxy::to(primary.port);
    proxy.hold_after(Flow::Down, LET_THROUGH);
    let replica = Node::replica_of("wait-replica", proxy.port, &[]);
    let listed = format!("port={},", replica.port);
    let follower = || {
        info(primary.port, "replication")?
            .lines()
            .filter_map(|line| line.split_once(':'))
            .find(|(name, value)| name.starts_with("slave") && value.contains(&listed))
            .map(|(_, value)| value.to_string())
    };
    // The primary has written the whole payload: the transfer is over on its side.
    let line = wait_for("the primary to put the replica online", || {
        follower().filter(|line| line.contains("state=online"))
    });
    let in_flight = proxy.held(Flow::Down);
    assert!(in_flight > 1_000_000, "{in_flight} bytes in flight");

    let text = |reply: Vec<u8>| String::from_utf8_lossy(&reply).into_owned();
    let counted = text(client.cmd(&["WAIT", "1", "100"]));
    let shown = line
        .split(',')
        .find_map(|field| field.strip_prefix("offset="))
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "min-replicas-to-write", "1"]),
        b"+OK\r\n"
    );
    let admitted = text(client.cmd(&["SET", "refused", "1"]));
    assert_eq!(
        (counted.as_str(), shown.as_str(), admitted.as_str()),
        (
            ":0\r\n",
            "0",
            "-NOREPLICAS Not enough good replicas to write.\r\n"
        ),
        "WAIT 1, INFO's offset and a write under min-replicas-to-write 1, while {in_flight} \
         bytes of the payload are in flight"
    );

    proxy.release(Flow::Down);
    let guard = GUARD.as_millis().to_string();
    assert_eq!(client.cmd(&["WAIT", "1", &guard]), b":1\r\n");
    assert_eq!(client.cmd(&["SET", "admitted", "1"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["WAIT", "1", &guard]), b":1\r\n");
    assert_eq!(
        replica.cmd(&["EXISTS", "acknowledged?", "admitted", "refused"]),
        ":2\r\n"
    );
    let line = follower().expect("the replica is listed");
    let offset: u64 = line
        .split(',')
        .find_map(|field| field.strip_prefix("offset="))
        .and_then(|offset| offset.parse().ok())
        .expect("an offset");
    assert!(offset > 0, "{line}");
}

/// Item 3: a replica with fewer databases than its primary could not apply a write to the
/// ones it lacks (before the fix, its link's task panicked on the first, leaving the link "up"
/// for ever with stale data). It is refused at the handshake, saying why, keeps its data, and
/// tries again after a growing wait.
#[test]
fn a_replica_with_fewer_databases_is_refused_at_the_handshake_and_keeps_its_data() {
    let primary = Node::start("databases-primary", &[]);
    let mut client = primary.raw();
    assert_eq!(client.cmd(&["SELECT", "5"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["SET", "in-db-5", "1"]), b"+OK\r\n");
    let replica = Node::start("databases-replica", &["--databases", "2"]);
    assert_eq!(replica.cmd(&["SET", "mine", "kept"]), "+OK\r\n");
    let digest = replica.digest();
    let port = primary.port.to_string();
    assert_eq!(replica.cmd(&["REPLICAOF", "127.0.0.1", &port]), "+OK\r\n");
    let expected = "the primary has 16 databases and this replica 2: a write to database 2 or \
                    above could not be applied here (start this replica with --databases 16 or \
                    more)";
    let mut delays = Vec::new();
    for delay in ["1000", "2000", "4000"] {
        let (error, seen) = wait_for(&format!("a retry delay of {delay} ms"), || {
            let error = replica.info("replication", "master_link_last_error")?;
            let seen = replica.info("replication", "master_link_retry_delay_ms")?;
            (seen == delay).then_some((error, seen))
        });
        assert_eq!(error, expected);
        delays.push(seen);
    }
    assert_eq!(delays, ["1000", "2000", "4000"]);
    assert_eq!(
        replica.info("replication", "master_link_status").as_deref(),
        Some("down")
    );
    assert_eq!(replica.digest(), digest, "the replica's data changed");
    assert_eq!(replica.cmd(&["GET", "mine"]), "$4\r\nkept\r\n");
    assert_eq!(
        replica.info("stats", "panicked_tasks").as_deref(),
        Some("0")
    );
    assert!(replica.log().contains(expected), "the log names the reason");
}

/// A stand-in primary: it answers the handshake (with +OK to whatever it does not know, CONFIG
/// GET included), then to every PSYNC a full sync of `snapshot` followed by `records` (bytes of
/// the replication stream), and keeps the link open. Serves link after link; the count of links
/// it took is returned alongside its port.
fn stand_in_primary(
    snapshot: Vec<u8>,
    records: Vec<u8>,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let links = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = links.clone();
    std::thread::spawn(move || {
        for link in listener.incoming() {
            let Ok(mut link) = link else { continue };
            counted.fetch_add(1, Ordering::Relaxed);
            let (snapshot, records) = (snapshot.clone(), records.clone());
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut chunk = [0u8; 4096];
                let mut answered = 0;
                loop {
                    let Ok(read) = link.read(&mut chunk) else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    seen.extend_from_slice(&chunk[..read]);
                    // The replica sends one request at a time and waits for its answer.
                    let text = String::from_utf8_lossy(&seen).to_ascii_uppercase();
                    let requests = text.matches("\r\n*").count() + 1;
                    if answered == requests || !text.ends_with("\r\n") {
                        continue;
                    }
                    answered = requests;
                    if text.trim_end().rsplit("\r\n").nth(4) == Some("PSYNC") {
                        let mut out = format!(
                            "+FULLRESYNC {} 0\r\n${}\r\n",
                            "f".repeat(40),
                            snapshot.len()
                        )
                        .into_bytes();
                        out.extend_from_slice(&snapshot);
                        out.extend_from_slice(&records);
                        if link.write_all(&out).is_err() {
                            return;
                        }
                        // Holds the link open until the replica ends it.
                        let _ = link.read_to_end(&mut Vec::new());
                        return;
                    }
                    let answer: &[u8] = if requests == 1 {
                        b"+PONG\r\n"
                    } else {
                        b"+OK\r\n"
                    };
                    if link.write_all(answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, links)
}

/// A snapshot of a node holding `lines` (commands written as one line each).
fn snapshot_of(name: &str, lines: &[&str]) -> Vec<u8> {
    let node = Node::start(name, &[]);
    let mut client = node.raw();
    for line in lines {
        assert!(!client.line(line).starts_with(b"-"), "{line}");
    }
    assert_eq!(client.cmd(&["SAVE"]), b"+OK\r\n");
    std::fs::read(node.dir.0.join("sieved.snap")).expect("the snapshot")
}

/// The replication stream's bytes for the last write of `lines` on a node started with
/// `extra`, as its append-only file (which holds the same records) has them.
fn record_of(name: &str, extra: &[&str], lines: &[&str]) -> Vec<u8> {
    let mut flags = vec!["--appendonly", "yes", "--appendfsync", "always"];
    flags.extend(extra);
    let node = Node::start(name, &flags);
    let mut client = node.raw();
    let mut before = 0;
    let segment = |dir: &Path| -> Vec<u8> {
        let mut segments: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
            .expect("data directory")
            .filter_map(|entry| {
                let path = entry.ok()?.path();
                let name = path.file_name()?.to_str()?.to_string();
                let number = name
                    .strip_prefix("sieved-")?
                    .strip_suffix(".aof")?
                    .parse()
                    .ok()?;
                Some((number, path))
            })
            .collect();
        segments.sort();
        std::fs::read(&segments.last().expect("a log segment").1).expect("the log")
    };
    for (i, line) in lines.iter().enumerate() {
        if i + 1 == lines.len() {
            before = segment(&node.dir.0).len();
        }
        assert!(!client.line(line).starts_with(b"-"), "{line}");
    }
    segment(&node.dir.0)[before..].to_vec()
}

/// Item 3: a record of the stream that cannot be applied on the replica ends the link with the
/// reason in the log and in INFO, and the link is tried again after a growing wait, from a full
/// sync. Before the fix a write to a database the replica lacks panicked its link's task (the
/// link then said "up" for ever), and any other failed write was skipped with a warning.
#[test]
fn a_record_the_replica_cannot_apply_ends_the_link_and_is_tried_again_later_each_time() {
    let snapshot = snapshot_of("records-snapshot", &["SET counter not-a-number"]);
    let cases = [
        (
            record_of(
                "records-db",
                &["--databases", "8"],
                &["SELECT 5", "SET x 1"],
            ),
            "the primary sent a write to database 5, but this replica has 2 databases (start it \
             with --databases 6 or more)",
        ),
        (
            record_of("records-incr", &[], &["SET counter 1", "INCR counter"]),
            "the primary's write INCR to database 0 cannot be applied: ERR value is not an \
             integer or out of range",
        ),
    ];
    for (records, expected) in cases {
        let (port, links) = stand_in_primary(snapshot.clone(), records);
        let replica = Node::start("records-replica", &["--databases", "2"]);
        let port = port.to_string();
        assert_eq!(replica.cmd(&["REPLICAOF", "127.0.0.1", &port]), "+OK\r\n");
        for delay in ["1000", "2000", "4000"] {
            let error = wait_for(&format!("a retry delay of {delay} ms"), || {
                let seen = replica.info("replication", "master_link_retry_delay_ms")?;
                (seen == delay).then(|| replica.info("replication", "master_link_last_error"))?
            });
            assert_eq!(error, expected);
        }
        assert!(links.load(std::sync::atomic::Ordering::Relaxed) >= 3);
        assert_eq!(
            replica.info("replication", "master_link_status").as_deref(),
            Some("down")
        );
        assert_eq!(
            replica.info("stats", "panicked_tasks").as_deref(),
            Some("0")
        );
        assert!(replica.log().contains(expected), "the log names the reason");
        // The payload had loaded before the record came: the replica answers with it.
        assert_eq!(replica.cmd(&["GET", "counter"]), "$12\r\nnot-a-number\r\n");
    }
}

/// Item 3: a panic in a task takes down its link or connection, visibly: logged as an error,
/// counted in INFO stats `panicked_tasks`, and the link reported down with the reason, then
/// tried again. The panics are injected by a test-only hook of debug builds
/// (`SIEVED_TEST_PANIC=<site>:<bytes>`, src/server/panics.rs).
#[test]
fn a_panicking_task_is_logged_counted_and_takes_its_link_or_connection_down() {
    if !cfg!(debug_assertions) {
        eprintln!("skipping: the panic hook exists in debug builds only");
        return;
    }
    let primary = Node::start_with_env(
        "panic-primary",
        &[],
        &[("SIEVED_TEST_PANIC", "feed:boom-in-feed")],
    );
    let replicaof = format!("127.0.0.1 {}", primary.port);
    let replica = Node::start_with_env(
        "panic-replica",
        &["--replicaof", &replicaof],
        &[("SIEVED_TEST_PANIC", "apply:boom-in-apply")],
    );
    primary.wait_online(replica.port);

    // The replica's link task panics applying this write.
    assert_eq!(primary.cmd(&["SET", "boom-in-apply", "1"]), "+OK\r\n");
    let error = wait_for("the replica's link to report the panic", || {
        replica.info("replication", "master_link_last_error")
    });
    assert_eq!(
        error,
        "the link's task panicked: SIEVED_TEST_PANIC at apply"
    );
    assert_eq!(
        replica.info("stats", "panicked_tasks").as_deref(),
        Some("1")
    );
    assert!(
        replica.log().contains("a task panicked"),
        "{}",
        replica.log()
    );
    // Tried again from a full sync, which loads the key rather than applying its write.
    primary.wait_online(replica.port);
    wait_for("the replica to hold what its primary holds", || {
        (replica.digest() == primary.digest()).then_some(())
    });

    // The primary's task serving the replica panics sending this write: that connection is
    // closed, the replica sees its link end.
    assert_eq!(primary.cmd(&["SET", "boom-in-feed", "1"]), "+OK\r\n");
    wait_for("the primary to count the panic", || {
        let count: u64 = primary.info("stats", "panicked_tasks")?.parse().ok()?;
        (count >= 1).then_some(())
    });
    assert!(
        primary
            .log()
            .contains("a task panicked: the connection is closed"),
        "{}",
        primary.log()
    );
    let error = wait_for("the replica to see its link closed", || {
        replica.info("replication", "master_link_last_error")
    });
    assert!(
        error == "the primary closed the link" || error.starts_with("reading from the primary: "),
        "{error}"
    );
    // Both servers go on serving.
    assert_eq!(primary.cmd(&["PING"]), "+PONG\r\n");
    assert_eq!(replica.cmd(&["PING"]), "+PONG\r\n");
}

/// A bulk string reply's text (empty for anything else).
fn bulk_text(reply: &support::Node) -> String {
    match reply {
        support::Node::Scalar(bytes) => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            text.split("\r\n").nth(1).unwrap_or_default().to_string()
        }
        support::Node::Aggregate(..) => String::new(),
    }
}

/// The keys of `db` whose digests differ between the two servers, with their types and TTLs.
fn differing_keys(primary: &Node, replica: &Node, db: usize) -> Vec<String> {
    let mut keys = std::collections::BTreeSet::new();
    for node in [primary, replica] {
        let mut client = node.raw();
        assert_eq!(client.cmd(&["SELECT", &db.to_string()]), b"+OK\r\n");
        let mut cursor = "0".to_string();
        loop {
            let reply = support::Node::parse(&client.cmd(&["SCAN", &cursor, "COUNT", "1000"]));
            let support::Node::Aggregate(_, parts) = reply else {
                panic!("SCAN")
            };
            cursor = bulk_text(&parts[0]);
            if let support::Node::Aggregate(_, found) = &parts[1] {
                keys.extend(found.iter().map(bulk_text));
            }
            if cursor == "0" {
                break;
            }
        }
    }
    let mut differing = Vec::new();
    for key in keys {
        let digest = |node: &Node| {
            let mut client = node.raw();
            client.cmd(&["SELECT", &db.to_string()]);
            let kind = String::from_utf8_lossy(&client.cmd(&["TYPE", &key])).into_owned();
            let ttl = String::from_utf8_lossy(&client.cmd(&["PTTL", &key])).into_owned();
            let digest =
                String::from_utf8_lossy(&client.cmd(&["SIEVED.DIGEST", &key])).into_owned();
            (digest, kind.trim().to_string(), ttl.trim().to_string())
        };
        let (ours, theirs) = (digest(primary), digest(replica));
        if ours.0 != theirs.0 {
            differing.push(format!(
                "db {db} {key}: primary {ours:?} replica {theirs:?}"
            ));
        }
    }
    differing
}

/// Item 8, "once in ten runs a replica stayed unequal to its primary, then converged": the
/// expiry sweeper removed keys (and aged windowed filters) by the wall clock, unlogged, while a
/// batch that had read its clock earlier was still running; that batch then found gone a key
/// its own clock said was alive, and wrote a new one, while the replica, applying the batch's
/// writes at the batch's time, found the key alive. Here long pipelines append to keys whose
/// few milliseconds of life end while they run: before the fix 3 to 14 of the 12,000 keys held
/// different values on the two servers for good (in a mixed run such a key converges only once
/// overwritten, deleted or expired).
#[test]
fn keys_expiring_under_long_batches_are_the_same_on_the_replica() {
    let primary = Node::start("race-primary", &[]);
    let replica = Node::replica_of("race-replica", primary.port, &[]);
    primary.wait_online(replica.port);
    let mut client = primary.raw();
    let mut rng = Rng(12345);
    let (rounds, keys, appends) = (40, 300, 60);
    for round in 0..rounds {
        let mut batch = Vec::new();
        for i in 0..keys {
            let key = format!("t:{round}:{i}");
            let ttl = (1 + rng.below(40)).to_string();
            batch.extend(encode_command(&[
                b"SET",
                key.as_bytes(),
                b"v",
                b"PX",
                ttl.as_bytes(),
            ]));
        }
        for _ in 0..appends {
            for i in 0..keys {
                let key = format!("t:{round}:{i}");
                batch.extend(encode_command(&[b"APPEND", key.as_bytes(), b"x"]));
            }
        }
        client.send(&batch);
        for _ in 0..keys * (appends + 1) {
            client.read_reply();
        }
    }
    let guard = GUARD.as_millis().to_string();
    assert_eq!(client.cmd(&["WAIT", "1", &guard]), b":1\r\n");
    let differing = differing_keys(&primary, &replica, 0);
    assert!(
        differing.is_empty(),
        "{} of {} keys differ between the primary and its replica: {:?}",
        differing.len(),
        rounds * keys,
        &differing[..differing.len().min(5)]
    );
    assert_eq!(primary.digest(), replica.digest());
}

/// INFO's `sync_full` and `sync_partial_ok` on `node`.
fn syncs(node: &Node) -> (String, String) {
    (
        node.info("stats", "sync_full").unwrap_or_default(),
        node.info("stats", "sync_partial_ok").unwrap_or_default(),
    )
}

/// Writes `prefix:0` .. `prefix:<count-1>` on `node` unconfirmed (no replica may be up).
fn write_unconfirmed(node: &Node, prefix: &str, count: usize) {
    let mut client = node.raw();
    for i in 0..count {
        let key = format!("{prefix}:{i}");
        assert_eq!(client.cmd(&["SET", &key, &i.to_string()]), b"+OK\r\n");
    }
}

/// Waits until `replica` holds what `primary` does: the same offset, then the same digest.
fn wait_equal(primary: &Node, replica: &Node) {
    wait_for("the replica to reach the primary's offset", || {
        let theirs = primary.info("replication", "master_repl_offset")?;
        (replica.info("replication", "master_repl_offset")? == theirs).then_some(())
    });
    assert_eq!(replica.digest(), primary.digest(), "the replica's data");
}

/// Item 4: a replica stopped cleanly and started again continues with a partial resync, with
/// the append-only file off (the exit snapshot names its position) and on (the exit snapshot
/// folds the log, whose tail is then empty). Before, every restart was a full sync: the
/// primary counted `sync_full:2`, `sync_partial_ok:0`.
#[test]
fn a_replica_restarted_cleanly_continues_with_a_partial_resync() {
    for appendonly in ["no", "yes"] {
        let primary = Node::start(&format!("restart-primary-{appendonly}"), &[]);
        let mut replica = Node::replica_of(
            &format!("restart-replica-{appendonly}"),
            primary.port,
            &["--appendonly", appendonly],
        );
        primary.wait_online(replica.port);
        assert_eq!(write_confirmed(&primary, "before", WRITES), WRITES);
        assert_eq!(
            syncs(&primary),
            ("1".into(), "0".into()),
            "appendonly {appendonly}"
        );

        replica.restart(Stop::Clean);
        // Written while the replica was down: the backlog holds them.
        write_unconfirmed(&primary, "while-down", WRITES);
        primary.wait_online(replica.port);
        assert_eq!(write_confirmed(&primary, "after", WRITES), WRITES);
        wait_equal(&primary, &replica);
        assert_eq!(
            syncs(&primary),
            ("1".into(), "1".into()),
            "sync_full and sync_partial_ok after a clean restart, appendonly {appendonly}"
        );
        let lacking = ["before", "while-down", "after"]
            .iter()
            .map(|prefix| missing(&replica, prefix, WRITES))
            .sum::<usize>();
        assert_eq!(
            lacking, 0,
            "writes missing on the replica, appendonly {appendonly}"
        );
        assert!(replica
            .log()
            .contains("replication history restored from the snapshot"));
    }
}

/// Item 4: a primary stopped cleanly and started again takes a new replication ID and keeps the
/// old one as its second, valid up to the offset it restored (Redis 7's rule), so its replica
/// continues partially. Before, the restarted primary had a new ID and no second one, and the
/// replica synced in full.
#[test]
fn a_restarted_primary_keeps_its_old_id_as_second_and_its_replica_continues() {
    for appendonly in ["no", "yes"] {
        let mut primary = Node::start(
            &format!("restarted-primary-{appendonly}"),
            &["--appendonly", appendonly],
        );
        let replica = Node::replica_of(
            &format!("restarted-primary-replica-{appendonly}"),
            primary.port,
            &[],
        );
        primary.wait_online(replica.port);
        assert_eq!(write_confirmed(&primary, "before", WRITES), WRITES);
        wait_equal(&primary, &replica);
        let old_id = primary
            .info("replication", "master_replid")
            .expect("replid");

        primary.restart(Stop::Clean);
        let offset: u64 = primary
            .info("replication", "master_repl_offset")
            .and_then(|offset| offset.parse().ok())
            .expect("an offset");
        assert_eq!(
            (
                primary.info("replication", "master_replid2"),
                primary.info("replication", "second_repl_offset"),
            ),
            (Some(old_id.clone()), Some((offset + 1).to_string())),
            "appendonly {appendonly}"
        );
        assert_ne!(primary.info("replication", "master_replid"), Some(old_id));
        primary.wait_online(replica.port);
        assert_eq!(write_confirmed(&primary, "after", WRITES), WRITES);
        wait_equal(&primary, &replica);
        assert_eq!(
            syncs(&primary),
            ("0".into(), "1".into()),
            "sync_full and sync_partial_ok on the restarted primary, appendonly {appendonly}"
        );
        assert_eq!(
            replica.info("replication", "master_replid"),
            primary.info("replication", "master_replid")
        );
    }
}

/// Item 4, the log's tail: writes logged after the snapshot moved the data past the position
/// it names by an amount the log does not record, so a node killed then never claims that
/// position. A replica syncs in full and holds every write; a primary takes a new history with
/// no second ID (its offset may be behind what its replicas saw), so they sync in full too.
#[test]
fn writes_logged_after_the_snapshot_make_its_position_unknown() {
    let mut primary = Node::start("tail-primary", &["--appendonly", "yes"]);
    let mut replica = Node::replica_of("tail-replica", primary.port, &["--appendonly", "yes"]);
    primary.wait_online(replica.port);
    assert_eq!(write_confirmed(&primary, "before", WRITES), WRITES);
    replica.restart(Stop::Clean);
    primary.wait_online(replica.port);
    assert_eq!(syncs(&primary), ("1".into(), "1".into()));
    // Logged by the replica after the snapshot its restart wrote.
    assert_eq!(write_confirmed(&primary, "logged", WRITES), WRITES);
    replica.restart(Stop::Kill);
    primary.wait_online(replica.port);
    assert_eq!(write_confirmed(&primary, "after", WRITES), WRITES);
    wait_equal(&primary, &replica);
    assert_eq!(
        syncs(&primary),
        ("2".into(), "1".into()),
        "a replica killed with writes in its log's tail syncs in full"
    );
    let lacking = ["before", "logged", "after"]
        .iter()
        .map(|prefix| missing(&replica, prefix, WRITES))
        .sum::<usize>();
    assert_eq!(lacking, 0, "writes missing on the replica");

    primary.restart(Stop::Kill);
    assert_eq!(
        primary.info("replication", "master_replid2").as_deref(),
        Some("0000000000000000000000000000000000000000"),
        "a primary killed with writes in its log's tail keeps no second ID"
    );
    primary.wait_online(replica.port);
    wait_equal(&primary, &replica);
    assert_eq!(syncs(&primary), ("1".into(), "0".into()));
    assert_eq!(missing(&replica, "after", WRITES), 0);
}

/// Item 5: FQ.LEASE, the form a pop takes in the log, is refused from clients (alone and inside
/// MULTI) with one exact error, while the log and a primary's link still apply it. Before, the
/// issue's sequence (a lease at 300000000000000 ms, then `FQ.HOST ... PAUSE 1`) was accepted,
/// and start-up then stopped with "the logged write FQ.HOST cannot be applied: ERR bad time".
#[test]
fn commands_only_the_log_holds_are_refused_from_clients_and_applied_from_the_log() {
    let refusal = "-ERR FQ.LEASE is written only by the server, to its append-only file and \
                   replicas; clients cannot send it\r\n";
    let mut primary = Node::start("log-only-primary", &["--appendonly", "yes"]);
    let replica = Node::replica_of("log-only-replica", primary.port, &[]);
    primary.wait_online(replica.port);
    let mut client = primary.raw();
    let text = |reply: Vec<u8>| String::from_utf8_lossy(&reply).into_owned();
    assert_eq!(
        text(client.cmd(&["FQ.RESERVE", "k", "0.001", "1000"])),
        "+OK\r\n"
    );
    assert_eq!(
        text(client.cmd(&["FQ.PUSH", "k", "http://a.example/1"])),
        "*1\r\n:1\r\n"
    );
    assert_eq!(
        text(client.cmd(&["FQ.LEASE", "k", "300000000000000"])),
        refusal
    );
    assert_eq!(
        text(client.cmd(&[
            "FQ.LEASE",
            "k",
            "9223372036854775807",
            "http://a.example",
            "1",
            "1"
        ])),
        refusal
    );
    assert_eq!(text(client.cmd(&["MULTI"])), "+OK\r\n");
    assert_eq!(
        text(client.cmd(&["FQ.LEASE", "k", "300000000000000"])),
        refusal
    );
    assert_eq!(
        text(client.cmd(&["EXEC"])),
        "-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    assert_eq!(
        text(client.cmd(&["FQ.HOST", "k", "http://a.example", "PAUSE", "3600000"])),
        "+OK\r\n"
    );
    // A pop is logged as FQ.LEASE: the replica and the log apply it.
    assert_eq!(
        text(client.cmd(&["FQ.PUSH", "k", "http://b.example/1"])),
        "*1\r\n:1\r\n"
    );
    let popped = text(client.cmd(&["FQ.POP", "k"]));
    assert!(popped.contains("http://b.example/1"), "{popped}");
    let guard = GUARD.as_millis().to_string();
    assert_eq!(text(client.cmd(&["WAIT", "1", &guard])), ":1\r\n");
    wait_equal(&primary, &replica);
    let info = text(client.cmd(&["FQ.INFO", "k"]));
    drop(client);

    primary.restart(Stop::Kill);
    assert_eq!(
        primary.cmd(&["FQ.INFO", "k"]),
        info,
        "the frontier after replaying the log"
    );
    assert!(
        !primary.log().contains("cannot be applied"),
        "start-up replayed every logged write"
    );
}

/// Found by tests/replication_chaos.rs: a replica that continued under a new ID (its primary
/// restarted, or was promoted) kept its own replicas connected, so they went on naming the old
/// ID for the same history; promoted or re-pointed later they could only sync in full, and the
/// chain never agreed on its ID. As Redis, a replica whose ID changes drops its replicas,
/// which reconnect, learn it and continue partially; and it sends them no byte of the new
/// history under the old ID first (a replica fed a few such bytes before its link closed had
/// gone past where the old ID ends, and synced in full).
#[test]
fn a_chained_replica_learns_the_new_id_its_primary_continued_under() {
    let mut primary = Node::start("chain-primary", &[]);
    let middle = Node::replica_of("chain-middle", primary.port, &[]);
    let below = Node::replica_of("chain-below", middle.port, &[]);
    primary.wait_online(middle.port);
    middle.wait_online(below.port);
    assert_eq!(write_confirmed(&primary, "before", WRITES), WRITES);
    let old_id = primary.info("replication", "master_replid");

    primary.restart(Stop::Clean);
    let new_id = primary.info("replication", "master_replid");
    assert_ne!(new_id, old_id);
    primary.wait_online(middle.port);
    assert_eq!(write_confirmed(&primary, "after", WRITES), WRITES);
    wait_for("the chained replica to name its primary's new ID", || {
        (below.info("replication", "master_replid") == new_id).then_some(())
    });
    wait_equal(&primary, &below);
    let (full, partial) = syncs(&middle);
    assert_eq!(
        (full.as_str(), partial != "0"),
        ("1", true),
        "the chained replica's first sync was full, its reconnections partial ({partial})"
    );
    assert_eq!(missing(&below, "after", WRITES), 0);
}

/// Item 4, an offset that went backwards: a node restarted from a snapshot behind what others
/// saw under its history's ID (here a replica stopped cleanly, and restarted as a primary while
/// its former sibling received more) continues that ID only up to its snapshot's offset: the
/// sibling, which saw the ID further, cannot continue partially from it, syncs in full, and
/// ends with exactly the restarted node's data.
#[test]
fn a_node_whose_offset_went_backwards_never_continues_the_history_others_saw_further() {
    let primary = Node::start("backwards-primary", &[]);
    let mut behind = Node::replica_of("backwards-behind", primary.port, &[]);
    let sibling = Node::replica_of("backwards-sibling", primary.port, &[]);
    primary.wait_online(behind.port);
    primary.wait_online(sibling.port);
    let mut client = primary.raw();
    let guard = GUARD.as_millis().to_string();
    for i in 0..WRITES {
        let key = format!("saved:{i}");
        assert_eq!(client.cmd(&["SET", &key, "1"]), b"+OK\r\n");
        assert_eq!(client.cmd(&["WAIT", "2", &guard]), b":2\r\n", "{key}");
    }
    let old_id = primary.info("replication", "master_replid").expect("an ID");

    // Its exit snapshot names its position; it comes back as a primary, alone.
    behind.args.clear();
    behind.restart(Stop::Clean);
    assert_eq!(write_confirmed(&primary, "later", WRITES), WRITES);
    wait_equal(&primary, &sibling);
    let seen: u64 = sibling
        .info("replication", "master_repl_offset")
        .and_then(|offset| offset.parse().ok())
        .expect("an offset");
    let restored: u64 = behind
        .info("replication", "master_repl_offset")
        .and_then(|offset| offset.parse().ok())
        .expect("an offset");
    assert!(restored < seen, "restored {restored}, seen {seen}");
    assert_eq!(
        (
            behind.info("replication", "master_replid2"),
            behind.info("replication", "second_repl_offset"),
        ),
        (Some(old_id), Some((restored + 1).to_string())),
    );
    let port = behind.port.to_string();
    assert_eq!(sibling.cmd(&["REPLICAOF", "127.0.0.1", &port]), "+OK\r\n");
    behind.wait_online(sibling.port);
    wait_equal(&behind, &sibling);
    assert_eq!(
        (
            syncs(&behind),
            behind.info("stats", "sync_partial_err").unwrap_or_default()
        ),
        (("1".into(), "0".into()), "1".into()),
        "the sibling, which saw the old ID up to {seen}, asked to continue it from the node \
         restored at {restored}: sync_full, sync_partial_ok and sync_partial_err"
    );
    assert_eq!(missing(&sibling, "later", WRITES), WRITES);
    assert_eq!(missing(&sibling, "saved", WRITES), 0);
}
