//! maxmemory-policy over the network, on the real binary (whose memory is its own): which keys
//! each policy evicts, the OOM error once none may go, and evictions reaching the append-only
//! file and replicas as DELs so that both keep the primary's keyspace.
//!
//! Sampling is random, so the checks are about groups of keys, with margins: keys that must go
//! first (idle longest, used least, expiring soonest) make up nearly all of the evictions.
//! Nothing here asserts on time: the LRU case waits, by the server's own OBJECT IDLETIME, until
//! its old keys have been idle for a few seconds.

use crate::support::{encode_command, free_port, spawn_server, DataDir, RawClient, Running};
use std::time::{Duration, Instant};

/// Bytes of each value: large enough that a few hundred keys fill the room given.
const VALUE: usize = 1000;
/// How far over the memory in use maxmemory is set: room for about 230 more keys.
const ROOM: u64 = 256 << 10;

struct Node {
    _dir: DataDir,
    _server: Running,
    port: u16,
    client: RawClient,
}

impl Node {
    fn start(name: &str, extra: &[&str]) -> Node {
        let dir = DataDir::new(name);
        let port = free_port();
        let server = spawn_server(&dir.0, port, extra);
        let client = RawClient::connect(([127, 0, 0, 1], port).into());
        Node {
            _dir: dir,
            _server: server,
            port,
            client,
        }
    }

    fn cmd(&mut self, args: &[&str]) -> Vec<u8> {
        self.client.cmd(args)
    }

    fn int(&mut self, args: &[&str]) -> i64 {
        integer(&self.cmd(args))
    }

    fn info_number(&mut self, section: &str, field: &str) -> u64 {
        let value = self.client.info_field(section, field);
        value.parse().expect("a number")
    }

    /// A server replicating this one.
    fn start_replica(&self, name: &str) -> Node {
        let replicaof = format!("127.0.0.1 {}", self.port);
        Node::start(name, &["--replicaof", &replicaof])
    }

    /// Waits until `replica` has all this primary has sent.
    fn wait_for(&mut self, replica: &mut Node) {
        let offset = self.info_number("replication", "master_repl_offset");
        let deadline = Instant::now() + Duration::from_secs(60);
        while replica.info_number("replication", "slave_repl_offset") != offset {
            assert!(Instant::now() < deadline, "the replica did not catch up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends the server process `signal` (`-STOP`, `-CONT`).
    fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .args([signal, &self._server.0.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {signal}");
    }

    /// Sets maxmemory to the memory in use now plus `ROOM`.
    fn limit_memory(&mut self) {
        let used = self.info_number("memory", "used_memory");
        let limit = (used + ROOM).to_string();
        assert_eq!(
            self.cmd(&["CONFIG", "SET", "maxmemory", &limit]),
            b"+OK\r\n"
        );
    }

    /// Writes each command, pipelined, and returns the replies.
    fn pipeline(&mut self, commands: &[Vec<String>]) -> Vec<Vec<u8>> {
        let mut bytes = Vec::new();
        for command in commands {
            let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
            bytes.extend(encode_command(&args));
        }
        self.client.send(&bytes);
        commands.iter().map(|_| self.client.read_reply()).collect()
    }

    /// SETs `name:0..count` to values of `VALUE` bytes.
    fn fill(&mut self, name: &str, count: usize) {
        let value = "v".repeat(VALUE);
        let commands: Vec<Vec<String>> = (0..count)
            .map(|i| vec!["SET".into(), format!("{name}:{i}"), value.clone()])
            .collect();
        for reply in self.pipeline(&commands) {
            assert_eq!(reply, b"+OK\r\n");
        }
    }

    /// SETs `volatile:0..KEYS` to values of `VALUE` bytes, key `i` expiring in `ttl(i)` seconds.
    fn fill_volatile(&mut self, ttl: impl Fn(usize) -> usize) {
        let commands: Vec<Vec<String>> = (0..KEYS)
            .map(|i| {
                vec![
                    "SET".into(),
                    format!("volatile:{i}"),
                    "v".repeat(VALUE),
                    "EX".into(),
                    ttl(i).to_string(),
                ]
            })
            .collect();
        self.pipeline(&commands);
    }

    /// How many of `name:0..count` are left.
    fn left(&mut self, name: &str, count: usize) -> usize {
        let commands: Vec<Vec<String>> = (0..count)
            .map(|i| vec!["EXISTS".into(), format!("{name}:{i}")])
            .collect();
        self.pipeline(&commands)
            .iter()
            .filter(|reply| reply.as_slice() == b":1\r\n")
            .count()
    }

    /// Adds `new:i` keys until at least `evictions` keys were evicted, then lifts the limit so
    /// that the commands which look at what is left evict nothing more; returns how many.
    fn fill_until_evicted(&mut self, evictions: u64) -> usize {
        let mut added = 0;
        while self.info_number("stats", "evicted_keys") < evictions {
            assert!(added < 100_000, "nothing evicted");
            let value = "v".repeat(VALUE);
            let commands: Vec<Vec<String>> = (added..added + 50)
                .map(|i| vec!["SET".into(), format!("new:{i}"), value.clone()])
                .collect();
            for reply in self.pipeline(&commands) {
                assert_eq!(reply, b"+OK\r\n");
            }
            added += 50;
        }
        assert_eq!(self.cmd(&["CONFIG", "SET", "maxmemory", "0"]), b"+OK\r\n");
        added
    }
}

fn integer(reply: &[u8]) -> i64 {
    let text = std::str::from_utf8(reply).expect("text");
    text.strip_prefix(':')
        .and_then(|n| n.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("not an integer: {text:?}"))
}

const KEYS: usize = 300;
/// Keys not used again: three times the others, so that they stay most of what is sampled while
/// 200 or so of them go.
const COLD: usize = 3 * KEYS;

/// Old keys of which a quarter are used again, then new keys until 200 evictions: how many
/// evictions hit the keys not used again, those used again and the new keys.
fn evictions_by_group(node: &mut Node, use_again: impl Fn(&mut Node, &str)) -> [usize; 3] {
    node.fill("cold", COLD);
    node.fill("warm", KEYS);
    for i in 0..KEYS {
        use_again(node, &format!("warm:{i}"));
    }
    node.limit_memory();
    let added = node.fill_until_evicted(200);
    [
        COLD - node.left("cold", COLD),
        KEYS - node.left("warm", KEYS),
        added - node.left("new", added),
    ]
}

/// Waits until the server's clock says `key` has been idle for `seconds`.
fn wait_idle(node: &mut Node, key: &str, seconds: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while node.int(&["OBJECT", "IDLETIME", key]) < seconds {
        assert!(Instant::now() < deadline, "{key} never became idle");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn allkeys_lru_evicts_the_keys_idle_longest() {
    let mut node = Node::start(
        "evict-lru",
        &[
            "--maxmemory-policy",
            "allkeys-lru",
            "--maxmemory-samples",
            "10",
        ],
    );
    let [cold, warm, new] = evictions_by_group(&mut node, |node, key| {
        if key == "warm:0" {
            wait_idle(node, "cold:0", 2);
        }
        assert_eq!(node.cmd(&["GET", key]).len(), VALUE + 9);
    });
    // Sampling ten keys, of which at least half are cold throughout: a round without a cold one
    // happens about once in a thousand, and the pool keeps cold candidates from earlier rounds.
    assert!(cold >= 200, "cold {cold}, warm {warm}, new {new}");
    assert!(warm + new <= 5, "cold {cold}, warm {warm}, new {new}");
    // Asking OBJECT IDLETIME did not count as using cold:0.
    if node.cmd(&["EXISTS", "cold:0"]) == b":1\r\n" {
        assert!(node.int(&["OBJECT", "IDLETIME", "cold:0"]) >= 2);
    }
}

#[test]
fn allkeys_lfu_evicts_the_keys_used_least() {
    let mut node = Node::start(
        "evict-lfu",
        &[
            "--maxmemory-policy",
            "allkeys-lfu",
            "--maxmemory-samples",
            "10",
            "--lfu-log-factor",
            "0",
        ],
    );
    let [cold, warm, new] = evictions_by_group(&mut node, |node, key| {
        for _ in 0..5 {
            node.cmd(&["GET", key]);
        }
    });
    assert_eq!(node.int(&["OBJECT", "FREQ", "warm:7"]), 10);
    // New keys start at the counter cold ones have: both go, in proportion to their numbers
    // (900 cold, about 330 new by the end); used keys stay.
    assert!(warm <= 3, "cold {cold}, warm {warm}, new {new}");
    assert!(
        cold >= 80 && new >= 15,
        "cold {cold}, warm {warm}, new {new}"
    );
}

#[test]
fn allkeys_random_evicts_from_every_group() {
    let mut node = Node::start("evict-random", &["--maxmemory-policy", "allkeys-random"]);
    let [cold, warm, new] = evictions_by_group(&mut node, |node, key| {
        node.cmd(&["GET", key]);
    });
    // Each group goes in proportion to its share of the keys (900 cold, 300 warm, about 330
    // new by the end): over 200 evictions about 118, 40 and 42; the bounds are over 4.5
    // standard deviations below.
    assert!(
        cold >= 70 && warm >= 15 && new >= 12,
        "cold {cold}, warm {warm}, new {new}"
    );
}

/// Keys without an expiry time never go under a volatile policy; once the volatile ones are
/// gone, writes are refused with the OOM error.
fn volatile_policy_spares_persistent_keys(policy: &str) {
    let mut node = Node::start(&format!("evict-{policy}"), &["--maxmemory-policy", policy]);
    node.fill("persistent", KEYS);
    node.fill_volatile(|i| 10_000 + i);
    node.limit_memory();
    let value = "v".repeat(VALUE);
    let mut refused = false;
    for i in 0..100_000 {
        let reply = node.cmd(&["SET", &format!("new:{i}"), &value]);
        if reply.starts_with(b"-OOM") {
            assert_eq!(
                reply,
                b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
            );
            refused = true;
            break;
        }
        assert_eq!(reply, b"+OK\r\n");
    }
    assert!(refused, "{policy}: writes never refused");
    assert_eq!(node.left("persistent", KEYS), KEYS, "{policy}");
    assert_eq!(node.left("volatile", KEYS), 0, "{policy}");
    // Reads and deletions still work.
    assert_eq!(node.cmd(&["EXISTS", "persistent:0"]), b":1\r\n");
    assert_eq!(node.cmd(&["DEL", "persistent:0"]), b":1\r\n");
}

#[test]
fn volatile_policies_spare_keys_without_an_expiry_time() {
    for policy in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        volatile_policy_spares_persistent_keys(policy);
    }
}

#[test]
fn volatile_ttl_evicts_the_nearest_expiry_first() {
    let mut node = Node::start("evict-ttl", &["--maxmemory-policy", "volatile-ttl"]);
    node.fill_volatile(|i| 10_000 + i * 10);
    node.limit_memory();
    node.fill_until_evicted(100);
    let gone: Vec<usize> = (0..KEYS)
        .filter(|i| node.cmd(&["EXISTS", &format!("volatile:{i}")]) == b":0\r\n")
        .collect();
    // Exact order would take ranks 0..100 (mean 49.5), random order has mean 149.5.
    let mean = gone.iter().sum::<usize>() as f64 / gone.len() as f64;
    assert!(mean < 90.0, "mean rank {mean} of {gone:?}");
}

#[test]
fn noeviction_refuses_writes_and_serves_reads() {
    let mut node = Node::start("evict-none", &[]);
    node.fill("k", 10);
    node.limit_memory();
    let value = "v".repeat(VALUE);
    let mut refused = None;
    for i in 0..100_000 {
        let reply = node.cmd(&["SET", &format!("new:{i}"), &value]);
        if reply != b"+OK\r\n" {
            refused = Some(reply);
            break;
        }
    }
    assert_eq!(
        refused.as_deref(),
        Some(&b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"[..])
    );
    assert_eq!(node.info_number("stats", "evicted_keys"), 0);
    assert_eq!(node.cmd(&["GET", "k:0"]).len(), VALUE + 9);
}

/// The same DELs reach the append-only file and the replica: a restart from the file and the
/// replica hold exactly the primary's keys.
#[test]
fn evictions_reach_the_log_and_replicas_as_deletions() {
    let mut primary = Node::start(
        "evict-primary",
        &[
            "--maxmemory-policy",
            "allkeys-random",
            "--appendonly",
            "yes",
        ],
    );
    let mut replica = primary.start_replica("evict-replica");
    primary.fill("old", KEYS);
    primary.limit_memory();
    primary.fill_until_evicted(100);
    primary.wait_for(&mut replica);
    let digest = primary.cmd(&["SIEVED.DIGEST"]);
    let keys = primary.int(&["DBSIZE"]);
    assert!(
        primary.left("old", KEYS) < KEYS,
        "none of the old keys evicted"
    );
    assert_eq!(replica.cmd(&["SIEVED.DIGEST"]), digest);
    assert_eq!(replica.int(&["DBSIZE"]), keys);
    assert_eq!(replica.info_number("stats", "evicted_keys"), 0);

    // A restart replays the log, without maxmemory: the DELs, not its own evictions, take the
    // keys away.
    let Node {
        _dir: dir,
        _server: server,
        ..
    } = primary;
    server.kill();
    let port = free_port();
    let _restarted = spawn_server(&dir.0, port, &["--appendonly", "yes"]);
    let mut client = RawClient::connect(([127, 0, 0, 1], port).into());
    assert_eq!(client.cmd(&["SIEVED.DIGEST"]), digest);
}

/// The most a TCP connection's send and receive buffers may hold between them, from the
/// kernel's `tcp_wmem` and `tcp_rmem` maxima.
fn socket_buffers_at_most() -> u64 {
    ["/proc/sys/net/ipv4/tcp_wmem", "/proc/sys/net/ipv4/tcp_rmem"]
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).expect(path);
            let max = text.split_whitespace().last().expect("three numbers");
            max.parse::<u64>().expect("a number")
        })
        .sum()
}

/// What the replication stream holds for a replica that lags is left out of `maxmemory`, as Redis
/// leaves out its replicas' output buffers: a stopped replica does not make its primary evict
/// keys (which would not help it catch up) and then refuse writes.
#[test]
fn a_lagging_replica_makes_its_primary_evict_nothing() {
    let mut primary = Node::start(
        "lag-primary",
        &[
            "--maxmemory-policy",
            "allkeys-random",
            "--repl-backlog-size",
            "16384",
        ],
    );
    let mut replica = primary.start_replica("lag-replica");
    primary.fill("old", KEYS);
    primary.wait_for(&mut replica);
    replica.signal("-STOP");
    primary.limit_memory();
    // Rewrites of the same keys: the keyspace stays its size while the stream grows, until the
    // sockets between the two are full and the stream holds more than the room maxmemory leaves.
    // How much the sockets take is the kernel's business (a receive buffer that grew while the
    // replica was reading may take tens of MB), so the bound on rounds comes from its limits.
    let round = (KEYS * VALUE) as u64;
    let rounds = (socket_buffers_at_most() + 4 * ROOM).div_ceil(round) + 2;
    let mut written = 0;
    while primary.info_number("memory", "mem_not_counted_for_evict") <= ROOM {
        assert!(
            written < rounds,
            "{rounds} rounds of {round} bytes and the primary holds nothing for its replica"
        );
        primary.fill("old", KEYS);
        written += 1;
    }
    assert_eq!(primary.info_number("stats", "evicted_keys"), 0);

    replica.signal("-CONT");
    primary.wait_for(&mut replica);
    // Catching up, the replica's share of the stream is let go of, and nothing was evicted then
    // either.
    assert!(primary.info_number("memory", "mem_not_counted_for_evict") < ROOM);
    assert_eq!(primary.info_number("stats", "evicted_keys"), 0);
    assert_eq!(
        replica.cmd(&["SIEVED.DIGEST"]),
        primary.cmd(&["SIEVED.DIGEST"])
    );
}
