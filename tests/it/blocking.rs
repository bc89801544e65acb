//! Blocking pops (BLPOP, BRPOP, BZPOPMIN, BZPOPMAX) as Debian's redis-server serves them: the
//! same scenario of several blocked clients runs on both servers and every reply must be the
//! same bytes (order of service, several keys, a key that changes type while a client waits,
//! MULTI, CLIENT UNBLOCK, RESP3 shapes, bad timeouts). Then what Redis 7.0 answers otherwise
//! (Redis 8's timeout range error), a timeout that ends no sooner than asked and blocks only
//! its caller, clients that vanish or are killed while blocked leaving nothing behind, and a
//! served pop reaching the append-only file and a replica as the plain pop it did.

use crate::support::{
    assert_command_info_as_redis, escape, free_port, spawn_server, DataDir, RawClient, RedisServer,
    Resp, TestServer,
};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The `name` field of INFO's `section`.
fn blocked_clients(addr: SocketAddr) -> usize {
    RawClient::connect(addr)
        .info_field("clients", "blocked_clients")
        .parse()
        .expect("a count")
}

/// Waits (however long it takes, within reason) until `count` clients are blocked.
fn wait_blocked(addr: SocketAddr, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while blocked_clients(addr) != count {
        assert!(Instant::now() < deadline, "never {count} blocked clients");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn send(client: &mut RawClient, line: &str) {
    let words = crate::support::words(line);
    let args: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
    client.send(&crate::support::encode_command(&args));
}

/// One scenario on one server; returns every reply, in a fixed order, for comparison.
fn scenario(addr: SocketAddr, resp: Resp) -> Vec<String> {
    let mut out = Vec::new();
    let mut admin = RawClient::speaking(addr, resp);
    let mut record = |reply: Vec<u8>| out.push(escape(&reply));
    record(admin.cmd(&["FLUSHALL"]));

    // Three clients block on two lists, in order; pushes serve them first come, first served,
    // before the pusher's next command runs.
    let mut waiting: Vec<RawClient> = (0..3)
        .map(|i| {
            let mut client = RawClient::speaking(addr, resp);
            send(&mut client, "BLPOP q q2 0");
            wait_blocked(addr, i + 1);
            client
        })
        .collect();
    let mut pusher = RawClient::speaking(addr, resp);
    send(&mut pusher, "RPUSH q a b");
    send(&mut pusher, "LLEN q");
    send(&mut pusher, "RPUSH q2 c d");
    send(&mut pusher, "LLEN q2");
    for _ in 0..4 {
        record(pusher.read_reply());
    }
    for client in &mut waiting {
        record(client.read_reply());
    }
    record(admin.cmd(&["LRANGE", "q2", "0", "-1"]));

    // BRPOP and the sorted sets' BZPOPMIN/BZPOPMAX, served in order on one key.
    let mut tail = RawClient::speaking(addr, resp);
    send(&mut tail, "BRPOP r 0");
    wait_blocked(addr, 1);
    record(admin.line("LPUSH r x y z"));
    record(tail.read_reply());
    let mut low = RawClient::speaking(addr, resp);
    send(&mut low, "BZPOPMIN z 0");
    wait_blocked(addr, 1);
    let mut high = RawClient::speaking(addr, resp);
    send(&mut high, "BZPOPMAX z 0");
    wait_blocked(addr, 2);
    record(admin.line("ZADD z 1 one 2 two 3 three 1.5 half"));
    record(low.read_reply());
    record(high.read_reply());
    record(admin.line("ZRANGE z 0 -1 WITHSCORES"));

    // A key that turns into another type leaves the client waiting; once it is a list again,
    // it is served. A wrong type met when the command runs again fails it, as in Redis 7.2 on.
    let mut patient = RawClient::speaking(addr, resp);
    send(&mut patient, "BLPOP k1 k2 0");
    wait_blocked(addr, 1);
    record(admin.line("SET k1 string"));
    record(admin.line("PING"));
    record(blocked_clients(addr).to_string().into_bytes());
    record(admin.line("DEL k1"));
    record(admin.line("RPUSH k1 v"));
    record(patient.read_reply());
    record(admin.line("DEL k1"));

    // A list that is emptied in the same transaction serves nobody; BLPOP inside MULTI answers
    // at once.
    send(&mut patient, "BLPOP t 0");
    wait_blocked(addr, 1);
    for line in [
        "MULTI",
        "RPUSH t a",
        "LPOP t",
        "BLPOP t 0",
        "BZPOPMIN t2 0",
        "EXEC",
    ] {
        record(admin.line(line));
    }
    record(blocked_clients(addr).to_string().into_bytes());
    record(admin.line("RPUSH t b"));
    record(patient.read_reply());

    // Timeouts and what is already there.
    for line in [
        "BLPOP nothing 0.01",
        "BZPOPMAX nothing 0.01",
        "RPUSH l 1 2",
        "BLPOP missing l 0",
        "BRPOP l 0",
        "EXISTS l",
        "SET s v",
        "BLPOP missing s 0",
        "BZPOPMIN s 0",
        "BLPOP x abc",
        "BLPOP x -1",
        "BLPOP x nan",
        "BLPOP x \"\"",
        "BLPOP x 1x",
        "BLPOP s -1",
        "BLPOP x",
        "BZPOPMIN x",
    ] {
        record(admin.line(line));
    }

    // CLIENT UNBLOCK, either way; the client goes on with what it sent after.
    let mut unblocked = RawClient::speaking(addr, resp);
    let id = String::from_utf8_lossy(&unblocked.cmd(&["CLIENT", "ID"]))
        .trim_start_matches(':')
        .trim()
        .to_string();
    send(&mut unblocked, "BLPOP u 0");
    send(&mut unblocked, "PING");
    wait_blocked(addr, 1);
    let list = String::from_utf8_lossy(&admin.cmd(&["CLIENT", "LIST", "ID", &id])).into_owned();
    record(list.contains(" flags=b ").to_string().into_bytes());
    record(admin.cmd(&["CLIENT", "UNBLOCK", &id]));
    record(unblocked.read_reply());
    record(unblocked.read_reply());
    send(&mut unblocked, "BZPOPMIN u 0");
    wait_blocked(addr, 1);
    record(admin.cmd(&["CLIENT", "UNBLOCK", &id, "ERROR"]));
    record(unblocked.read_reply());
    for line in [
        &format!("CLIENT UNBLOCK {id}"),
        "CLIENT UNBLOCK abc",
        "CLIENT UNBLOCK 1 nothing",
        "CLIENT UNBLOCK",
        "CLIENT UNBLOCK 1 TIMEOUT more",
        "CLIENT UNBLOCK -5",
    ] {
        record(admin.line(line));
    }
    record(blocked_clients(addr).to_string().into_bytes());
    out
}

#[test]
fn blocked_clients_are_served_as_redis_serves_them() {
    let Some(redis) = RedisServer::start("blocking") else {
        return;
    };
    let server = TestServer::start();
    for resp in [Resp::Two, Resp::Three] {
        let ours = scenario(server.addr, resp);
        let theirs = scenario(redis.addr, resp);
        for (at, (ours, theirs)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(ours, theirs, "reply {at} in {resp:?}");
        }
        assert_eq!(ours.len(), theirs.len());
    }
    assert_command_info_as_redis(
        server.addr,
        redis.addr,
        &["blpop", "brpop", "bzpopmin", "bzpopmax"],
    );
}

/// Redis 8 answers a timeout past the range of its clock so; Redis 7.0 called it negative.
#[test]
fn timeouts_out_of_range_are_refused_as_redis_8_refuses_them() {
    let server = TestServer::start();
    let mut client = server.client();
    for timeout in ["inf", "1e300", "9223372036854775.807"] {
        assert_eq!(
            client.cmd(&["BLPOP", "k", timeout]),
            b"-ERR timeout is out of range\r\n",
            "{timeout}"
        );
    }
    assert_eq!(
        client.cmd(&["BLPOP", "k", "-inf"]),
        b"-ERR timeout is negative\r\n"
    );
    // Rounds to 0 from below: waits for ever, as in Redis; a push ends it.
    let mut pusher = server.client();
    send(&mut client, "BLPOP k -0.0001");
    wait_blocked(server.addr, 1);
    pusher.cmd(&["RPUSH", "k", "v"]);
    assert_eq!(client.read_reply(), b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n");
}

/// How long the wait lasts is `parse_timeout`'s unit test; here, only what the client gets.
#[test]
fn a_timeout_ends_the_wait_with_a_null_reply_and_blocks_only_its_caller() {
    let server = TestServer::start();
    let mut waiting = server.client();
    send(&mut waiting, "BLPOP k 0.3");
    wait_blocked(server.addr, 1);
    // Meanwhile everyone else is served.
    let mut other = server.client();
    assert_eq!(other.cmd(&["SET", "a", "1"]), b"+OK\r\n");
    assert_eq!(other.cmd(&["BLPOP", "a", "0"]).first(), Some(&b'-'));
    assert_eq!(waiting.read_reply(), b"*-1\r\n");
    assert_eq!(blocked_clients(server.addr), 0);
    let stats = String::from_utf8_lossy(&other.cmd(&["INFO", "commandstats"])).into_owned();
    assert!(stats.contains("cmdstat_blpop:calls=2,"), "{stats}");
}

/// The bad input: clients that block and vanish (hang up, or CLIENT KILL) leave no
/// blocked client behind, and no waiter that pops later.
#[test]
fn clients_that_vanish_while_blocked_leave_nothing_behind() {
    let server = TestServer::start();
    let mut admin = server.client();
    for round in 0..3 {
        let mut clients: Vec<RawClient> = (0..50)
            .map(|i| {
                let mut client = server.client();
                send(&mut client, &format!("BLPOP gone{} shared 0", i % 5));
                client
            })
            .collect();
        wait_blocked(server.addr, 50);
        let ids: Vec<String> = String::from_utf8_lossy(&admin.cmd(&["CLIENT", "LIST"]))
            .lines()
            .filter(|line| line.contains(" flags=b "))
            .map(|line| line["id=".len()..line.find(' ').expect("a field")].to_string())
            .collect();
        assert_eq!(ids.len(), 50, "round {round}");
        // Half hang up, half are killed.
        for id in &ids[..25] {
            assert_eq!(admin.cmd(&["CLIENT", "KILL", "ID", id]), b":1\r\n");
        }
        clients.truncate(0);
        wait_blocked(server.addr, 0);
        assert_eq!(admin.cmd(&["RPUSH", "shared", "kept"]), b":1\r\n");
        assert_eq!(admin.cmd(&["LPOP", "shared"]), b"$4\r\nkept\r\n");
    }
    assert!(!String::from_utf8_lossy(&admin.cmd(&["CLIENT", "LIST"])).contains("flags=b"));
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Served pops reach the append-only file and a replica as LPOP and ZPOPMIN; restarting from
/// the file, and the replica, hold what the primary holds. A client blocked on the replica
/// (replica-read-only no) is served by the primary's push.
#[test]
fn served_pops_are_logged_and_replicated_as_plain_pops() {
    let dir = DataDir::new("blocking-primary");
    let port = free_port();
    let logged = ["--appendonly", "yes", "--appendfsync", "always"];
    let primary = spawn_server(&dir.0, port, &logged);
    let primary_addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let replica_dir = DataDir::new("blocking-replica");
    let replica_port = free_port();
    let replicaof = format!("127.0.0.1 {port}");
    let _replica = spawn_server(
        &replica_dir.0,
        replica_port,
        &["--replicaof", &replicaof, "--replica-read-only", "no"],
    );
    let replica_addr: SocketAddr = ([127, 0, 0, 1], replica_port).into();
    let deadline = Instant::now() + Duration::from_secs(30);
    while RawClient::connect(replica_addr).info_field("replication", "master_link_status") != "up" {
        assert!(Instant::now() < deadline, "the replica never linked");
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut list_waiter = RawClient::connect(primary_addr);
    send(&mut list_waiter, "BLPOP jobs 0");
    let mut zset_waiter = RawClient::connect(primary_addr);
    send(&mut zset_waiter, "BZPOPMIN ranked 0");
    wait_blocked(primary_addr, 2);
    let mut on_replica = RawClient::connect(replica_addr);
    send(&mut on_replica, "BRPOP elsewhere 0");
    wait_blocked(replica_addr, 1);

    let mut writer = RawClient::connect(primary_addr);
    writer.cmd(&["RPUSH", "jobs", "first", "second"]);
    writer.cmd(&["ZADD", "ranked", "2", "b", "1", "a"]);
    writer.cmd(&["RPUSH", "elsewhere", "e"]);
    assert_eq!(
        list_waiter.read_reply(),
        b"*2\r\n$4\r\njobs\r\n$5\r\nfirst\r\n"
    );
    assert_eq!(
        zset_waiter.read_reply(),
        b"*3\r\n$6\r\nranked\r\n$1\r\na\r\n$1\r\n1\r\n"
    );
    assert_eq!(
        on_replica.read_reply(),
        b"*2\r\n$9\r\nelsewhere\r\n$1\r\ne\r\n"
    );
    assert_eq!(writer.cmd(&["WAIT", "1", "0"]), b":1\r\n");
    let mut replica = RawClient::connect(replica_addr);
    for (key, read) in [
        ("jobs", &["LRANGE", "jobs", "0", "-1"][..]),
        ("ranked", &["ZRANGE", "ranked", "0", "-1", "WITHSCORES"]),
    ] {
        let deadline = Instant::now() + Duration::from_secs(30);
        while replica.cmd(read) != writer.cmd(read) {
            assert!(Instant::now() < deadline, "{key} differs on the replica");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    let log: Vec<u8> = std::fs::read_dir(&dir.0)
        .expect("the data directory")
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".aof"))
        .flat_map(|entry| std::fs::read(entry.path()).expect("a log segment"))
        .collect();
    assert!(contains(&log, b"LPOP") && contains(&log, b"ZPOPMIN"));
    assert!(!contains(&log, b"BLPOP") && !contains(&log, b"BZPOPMIN"));

    let state = |client: &mut RawClient| {
        [
            client.cmd(&["LRANGE", "jobs", "0", "-1"]),
            client.cmd(&["ZRANGE", "ranked", "0", "-1", "WITHSCORES"]),
            client.cmd(&["LRANGE", "elsewhere", "0", "-1"]),
        ]
    };
    let before = state(&mut writer);
    primary.kill();
    let _primary = spawn_server(&dir.0, port, &logged);
    assert_eq!(state(&mut RawClient::connect(primary_addr)), before);
}
