//! DUMP, RESTORE and MIGRATE against Debian's redis-server: payloads move both ways for every
//! plain type, errors are Redis's byte for byte, MIGRATE runs with either server as the source,
//! filters migrate between sieved servers, and a RESTORE replays from the log as it ran.

use crate::support::{
    assert_command_info_as_redis, check_writes_survive_restarts, escape, RawClient, RedisServer,
    TestServer,
};
use sieved::rdb::append_trailer;
use std::net::SocketAddr;

/// The data of a bulk reply.
fn bulk(reply: &[u8]) -> Vec<u8> {
    assert!(reply.starts_with(b"$"), "{}", escape(reply));
    let start = reply.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    reply[start..reply.len() - 2].to_vec()
}

/// A reply with its lines sorted: sets and hashes list members in each server's own order.
fn unordered(reply: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = reply.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    lines.sort();
    lines
}

fn setup() -> Vec<Vec<String>> {
    let words = |line: &str| line.split(' ').map(str::to_string).collect::<Vec<_>>();
    let mut lines: Vec<Vec<String>> = [
        "SET s hello",
        "SET n 12345",
        "SETBIT bits 100000 1",
        "RPUSH l a 1 -2 300 70000 5000000000",
        "SADD si 1 2 3 -5 100000",
        "SADD ss x y z",
        "ZADD zs 1.5 a -2 b 3 c",
        "HSET h f1 v1 f2 2",
        "SET ttl1 x PX 100000",
    ]
    .iter()
    .map(|line| words(line))
    .collect();
    lines.push(vec!["SET".into(), "long".into(), "a".repeat(300)]);
    let mut big_list = vec!["RPUSH".to_string(), "biglist".into()];
    big_list.extend((0..300).map(|i| format!("{}{i}", "x".repeat(100))));
    lines.push(big_list);
    let mut big_set = vec!["SADD".to_string(), "bigset".into()];
    big_set.extend((0..300).map(|i| format!("member{i}")));
    lines.push(big_set);
    let mut big_zset = vec!["ZADD".to_string(), "bigzset".into()];
    big_zset.extend((0..300).flat_map(|i| [format!("{}", i as f64 / 4.0), format!("m{i}")]));
    lines.push(big_zset);
    let mut big_hash = vec!["HSET".to_string(), "bighash".into()];
    big_hash.extend((0..20).flat_map(|i| [format!("f{i}"), "v".repeat(70)]));
    lines.push(big_hash);
    lines
}

const KEYS: &[&str] = &[
    "s", "n", "bits", "l", "si", "ss", "zs", "h", "ttl1", "long", "biglist", "bigset", "bigzset",
    "bighash",
];

fn run(client: &mut RawClient, words: &[String]) -> Vec<u8> {
    let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
    client.command(&args)
}

fn fill(client: &mut RawClient) {
    for line in setup() {
        let reply = run(client, &line);
        assert!(!reply.starts_with(b"-"), "{}", escape(&reply));
    }
}

/// Everything each key holds, read as a client would.
fn state(client: &mut RawClient) -> Vec<Vec<Vec<u8>>> {
    KEYS.iter()
        .map(|key| {
            let kind = client.cmd(&["TYPE", key]);
            let read: &[&str] = match &kind[..] {
                b"+string\r\n" => &["GET", key],
                b"+list\r\n" => &["LRANGE", key, "0", "-1"],
                b"+set\r\n" => &["SMEMBERS", key],
                b"+zset\r\n" => &["ZRANGE", key, "0", "-1", "WITHSCORES"],
                b"+hash\r\n" => &["HGETALL", key],
                _ => &["TYPE", key],
            };
            let mut seen = unordered(&client.cmd(read));
            seen.push(kind);
            let ttl = client.cmd(&["PTTL", key]);
            seen.push(if ttl.starts_with(b":-") {
                ttl
            } else {
                b":ttl".to_vec()
            });
            seen
        })
        .collect()
}

/// Copies every key from one server to the other with DUMP and RESTORE (keeping TTLs).
fn copy_keys(from: &mut RawClient, to: &mut RawClient) {
    for key in KEYS {
        let payload = bulk(&from.cmd(&["DUMP", key]));
        let ttl = from.cmd(&["PTTL", key]);
        let ttl = String::from_utf8_lossy(&ttl[1..ttl.len() - 2]).replace("-1", "0");
        let reply = to.command(&[b"RESTORE", key.as_bytes(), ttl.as_bytes(), &payload]);
        assert_eq!(escape(&reply), "+OK\\r\\n", "{key}");
    }
}

#[test]
fn payloads_move_both_ways_with_redis() {
    let Some(redis) = RedisServer::start("dump-both-ways") else {
        return;
    };
    let server = TestServer::start();
    let mut theirs = RawClient::connect(redis.addr);
    let mut ours = server.client();
    fill(&mut theirs);
    copy_keys(&mut theirs, &mut ours);
    let expected = state(&mut theirs);
    // Key by key, so that a failure names the key.
    for ((key, mine), redis) in KEYS.iter().zip(state(&mut ours)).zip(&expected) {
        assert_eq!(
            &mine, redis,
            "{key}: Redis 7.0's payload restored in sieved"
        );
    }
    assert_eq!(theirs.cmd(&["FLUSHALL"]), b"+OK\r\n");
    copy_keys(&mut ours, &mut theirs);
    assert_eq!(
        state(&mut theirs),
        expected,
        "sieved's payloads restored in Redis 7.0"
    );
}

/// A payload with its trailer recomputed after changing it.
fn sealed(body: &[u8], version: u16) -> Vec<u8> {
    let mut payload = body.to_vec();
    append_trailer(&mut payload, version);
    payload
}

#[test]
fn restore_errors_are_redis_s() {
    let Some(redis) = RedisServer::start("restore-errors") else {
        return;
    };
    let server = TestServer::start();
    let mut theirs = RawClient::connect(redis.addr);
    let mut ours = server.client();
    theirs.cmd(&["SET", "src", "value"]);
    let good = bulk(&theirs.cmd(&["DUMP", "src"]));
    let body = &good[..good.len() - 10];
    let mut flipped = good.clone();
    flipped[2] ^= 1;
    let cases: Vec<Vec<&[u8]>> = vec![
        vec![b"SET", b"busy", b"1"],
        vec![b"RESTORE", b"busy", b"0", &good],
        vec![b"RESTORE", b"k", b"-1", &good],
        vec![b"RESTORE", b"k", b"abc", &good],
        vec![b"RESTORE", b"k", b"0", b"short"],
        vec![b"RESTORE", b"k", b"0", &flipped],
        vec![b"RESTORE", b"k", b"0", b"\x00\x05hello\x63\x00________"],
        vec![b"RESTORE", b"k", b"0", &good, b"IDLETIME", b"-1"],
        vec![b"RESTORE", b"k", b"0", &good, b"IDLETIME", b"x"],
        vec![b"RESTORE", b"k", b"0", &good, b"FREQ", b"256"],
        vec![
            b"RESTORE",
            b"k",
            b"0",
            &good,
            b"IDLETIME",
            b"1",
            b"FREQ",
            b"1",
        ],
        vec![b"RESTORE", b"k", b"0", &good, b"FREQ"],
        vec![b"RESTORE", b"k", b"0", &good, b"BOGUS"],
        vec![b"RESTORE", b"busy", b"x", &good, b"BOGUS"],
        vec![b"RESTORE", b"k"],
        vec![b"DUMP", b"missing"],
        vec![
            b"RESTORE",
            b"k",
            b"0",
            &good,
            b"IDLETIME",
            b"10",
            b"REPLACE",
        ],
        vec![b"GET", b"k"],
        vec![b"RESTORE", b"k", b"1", &good, b"ABSTTL", b"REPLACE"],
        vec![b"EXISTS", b"k"],
        vec![b"RESTORE", b"k", b"0", &good, b"FREQ", b"5", b"ABSTTL"],
        vec![b"RESTORE", b"e", b"100000", &good],
        vec![b"PEXPIRETIME", b"k"],
    ];
    for case in &cases {
        assert_eq!(
            escape(&ours.command(case)),
            escape(&theirs.command(case)),
            "{}",
            escape(&case.concat())
        );
    }
    // Damage a checksum cannot see: a value that is not one, a type sieved does not have.
    for body in [&b"\x00\x85"[..], b"\x0f\x00", b"\x00\x05hello!"] {
        let payload = sealed(body, 9);
        assert_eq!(
            escape(&ours.command(&[b"RESTORE", b"bad", b"0", &payload])),
            "-ERR Bad data format\\r\\n"
        );
    }
    let newer = sealed(body, 13);
    assert_eq!(
        escape(&ours.command(&[b"RESTORE", b"bad", b"0", &newer])),
        "-ERR DUMP payload version or checksum are wrong\\r\\n"
    );
    assert_command_info_as_redis(server.addr, redis.addr, &["dump", "restore"]);
}

fn port_of(addr: SocketAddr) -> String {
    addr.port().to_string()
}

/// MIGRATE with sieved as the source answers as redis-server does, against a Redis target.
#[test]
fn migrate_from_sieved_answers_as_redis() {
    let (Some(target), Some(redis_source)) = (
        RedisServer::start("migrate-target"),
        RedisServer::start("migrate-source"),
    ) else {
        return;
    };
    let server = TestServer::start();
    let mut ours = server.client();
    let mut theirs = RawClient::connect(redis_source.addr);
    let mut target_client = RawClient::connect(target.addr);
    let port = port_of(target.addr);
    let closed = crate::support::free_port().to_string();
    let lines: Vec<Vec<&str>> = vec![
        vec!["SET", "a", "1"],
        vec!["SET", "b", "2", "PX", "500000"],
        vec!["RPUSH", "c", "x", "y"],
        vec!["MIGRATE", "127.0.0.1", &port, "missing", "0", "5000"],
        vec!["MIGRATE", "127.0.0.1", &port, "a", "0", "5000", "COPY"],
        vec!["EXISTS", "a"],
        vec!["MIGRATE", "127.0.0.1", &port, "a", "0", "5000"],
        vec!["MIGRATE", "127.0.0.1", &port, "a", "0", "5000", "REPLACE"],
        vec!["EXISTS", "a"],
        vec![
            "MIGRATE",
            "127.0.0.1",
            &port,
            "x",
            "0",
            "5000",
            "KEYS",
            "b",
            "c",
        ],
        vec![
            "MIGRATE",
            "127.0.0.1",
            &port,
            "",
            "1",
            "5000",
            "KEYS",
            "b",
            "c",
            "nope",
        ],
        vec!["EXISTS", "b", "c"],
        vec!["SET", "d", "4"],
        vec![
            "MIGRATE",
            "127.0.0.1",
            &port,
            "d",
            "0",
            "5000",
            "AUTH",
            "pw",
        ],
        vec![
            "MIGRATE",
            "127.0.0.1",
            &port,
            "d",
            "0",
            "5000",
            "AUTH2",
            "u",
            "pw",
        ],
        vec!["MIGRATE", "127.0.0.1", &port, "d", "0", "5000", "AUTH"],
        vec!["MIGRATE", "127.0.0.1", &port, "d", "x", "5000"],
        vec!["MIGRATE", "127.0.0.1", &port, "d", "0", "x"],
        vec!["MIGRATE", "127.0.0.1", &port, "d", "0", "5000", "BOGUS"],
        vec!["MIGRATE", "127.0.0.1", &closed, "d", "0", "1000"],
        vec!["EXISTS", "d"],
    ];
    for line in &lines {
        // Each source migrates into an empty target; the replies and what arrived must agree.
        target_client.cmd(&["FLUSHALL"]);
        let mine = ours.cmd(line);
        let arrived_from_mine = unordered(&target_client.cmd(&["KEYS", "*"]));
        target_client.cmd(&["FLUSHALL"]);
        let redis = theirs.cmd(line);
        assert_eq!(escape(&mine), escape(&redis), "{line:?}");
        let arrived = unordered(&target_client.cmd(&["KEYS", "*"]));
        assert_eq!(arrived_from_mine, arrived, "{line:?}");
    }
    // A key the target already has: its error, and the key stays here.
    ours.cmd(&["SET", "busy", "1"]);
    target_client.cmd(&["SET", "busy", "2"]);
    assert_eq!(
        escape(&ours.cmd(&["MIGRATE", "127.0.0.1", &port, "busy", "0", "5000"])),
        "-ERR Target instance replied with error: BUSYKEY Target key name already exists.\\r\\n"
    );
    assert_eq!(ours.cmd(&["GET", "busy"]), b"$1\r\n1\r\n");
    // What arrived: the value, and the TTL it had left.
    ours.cmd(&["SET", "moved", "v", "EX", "1000"]);
    assert_eq!(
        ours.cmd(&["MIGRATE", "127.0.0.1", &port, "moved", "3", "5000"]),
        b"+OK\r\n"
    );
    target_client.cmd(&["SELECT", "3"]);
    assert_eq!(target_client.cmd(&["GET", "moved"]), b"$1\r\nv\r\n");
    let ttl = target_client.cmd(&["TTL", "moved"]);
    assert!(
        ttl == b":1000\r\n" || ttl == b":999\r\n",
        "{}",
        escape(&ttl)
    );
}

/// Filters of every kind move between two sieved servers with MIGRATE, and Redis migrates its
/// own values into sieved.
#[test]
fn migrate_moves_filters_and_accepts_redis_as_source() {
    let source = TestServer::start();
    let target = TestServer::start();
    let mut ours = source.client();
    let mut there = target.client();
    let port = port_of(target.addr);
    for line in [
        "BF.RESERVE bf 0.01 100",
        "BF.RESERVE blocked 0.01 100 BLOCKED",
        "CBF.RESERVE cbf 0.01 100",
        "CF.RESERVE cf 100",
    ] {
        assert_eq!(ours.line(line), b"+OK\r\n", "{line}");
    }
    let keys = ["bf", "blocked", "cbf", "cf"];
    for i in 0..300 {
        let item = format!("item{i}");
        for (key, add) in keys.iter().zip(["BF.ADD", "BF.ADD", "CBF.ADD", "CF.ADD"]) {
            ours.cmd(&[add, key, &item]);
        }
    }
    ours.cmd(&["EXPIRE", "bf", "1000"]);
    let before: Vec<Vec<u8>> = keys.iter().map(|key| ours.cmd(&["DUMP", key])).collect();
    let mut migrate = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
    migrate.extend(keys);
    assert_eq!(ours.cmd(&migrate), b"+OK\r\n");
    assert_eq!(
        ours.cmd(&["EXISTS", "bf", "blocked", "cbf", "cf"]),
        b":0\r\n"
    );
    let after: Vec<Vec<u8>> = keys.iter().map(|key| there.cmd(&["DUMP", key])).collect();
    assert_eq!(after, before);
    for (key, exists) in keys
        .iter()
        .zip(["BF.EXISTS", "BF.EXISTS", "CBF.EXISTS", "CF.EXISTS"])
    {
        assert_eq!(there.cmd(&[exists, key, "item7"]), b":1\r\n", "{key}");
    }
    let ttl = there.cmd(&["TTL", "bf"]);
    assert!(
        ttl == b":1000\r\n" || ttl == b":999\r\n",
        "{}",
        escape(&ttl)
    );

    let Some(redis) = RedisServer::start("migrate-into-sieved") else {
        return;
    };
    let mut theirs = RawClient::connect(redis.addr);
    fill(&mut theirs);
    let expected = state(&mut theirs);
    let mut migrate = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
    migrate.extend(KEYS);
    assert_eq!(theirs.cmd(&migrate), b"+OK\r\n");
    assert_eq!(state(&mut there), expected);
}

fn restore_writes(client: &mut RawClient) {
    use sieved::rdb;
    use sieved::store::Value;
    let payload = rdb::dump(&Value::String(b"restored".to_vec()));
    for args in [
        &[&b"RESTORE"[..], b"plain", b"0", &payload, b"REPLACE"][..],
        &[b"RESTORE", b"relative", b"100000000", &payload, b"REPLACE"],
        &[
            b"RESTORE",
            b"absolute",
            b"4000000000000",
            &payload,
            b"ABSTTL",
            b"REPLACE",
        ],
        &[b"SET", b"replaced", b"old"],
        &[b"RESTORE", b"replaced", b"0", &payload, b"REPLACE"],
        &[b"SET", b"gone", b"old"],
        &[b"RESTORE", b"gone", b"1", &payload, b"REPLACE", b"ABSTTL"],
    ] {
        assert_eq!(client.command(args), b"+OK\r\n");
    }
    client.cmd(&["BF.ADD", "bf", "x"]);
    let filter = bulk(&client.cmd(&["DUMP", "bf"]));
    client.command(&[b"RESTORE", b"bf2", b"0", &filter, b"REPLACE"]);
}

fn restore_state(client: &mut RawClient) -> Vec<u8> {
    let mut out = Vec::new();
    for key in ["plain", "relative", "absolute", "replaced", "gone", "bf2"] {
        out.extend(client.cmd(&["DUMP", key]));
        out.extend(client.cmd(&["PEXPIRETIME", key]));
    }
    out
}

#[test]
fn restores_replay_as_they_ran() {
    check_writes_survive_restarts("restore", restore_writes, restore_state);
}

/// RESTORE's IDLETIME sets the key's idle time under an LRU policy, and FREQ its counter under
/// an LFU one; each is ignored under the other kind of policy, as in Redis.
#[test]
fn restore_sets_idle_time_and_frequency() {
    let server = TestServer::start();
    let mut client = server.client();
    client.cmd(&["SET", "src", "value"]);
    let payload = bulk(&client.cmd(&["DUMP", "src"]));
    let payload = payload.as_slice();
    let restore = |client: &mut RawClient, key: &str, option: &str, value: &str| {
        let args: [&[u8]; 6] = [
            b"RESTORE",
            key.as_bytes(),
            b"0",
            payload,
            option.as_bytes(),
            value.as_bytes(),
        ];
        assert_eq!(
            client.command(&args),
            b"+OK\r\n",
            "RESTORE {option} {value}"
        );
    };
    restore(&mut client, "idle", "IDLETIME", "1000");
    let idle = client.cmd(&["OBJECT", "IDLETIME", "idle"]);
    let seconds: u64 = String::from_utf8_lossy(&idle[1..idle.len() - 2])
        .parse()
        .expect("an integer");
    // The clock may tick between the two commands.
    assert!((1000..=1002).contains(&seconds), "idle {seconds}");
    restore(&mut client, "ignored", "FREQ", "100");

    client.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]);
    client.cmd(&["CONFIG", "SET", "lfu-decay-time", "0"]);
    restore(&mut client, "hot", "FREQ", "100");
    assert_eq!(client.cmd(&["OBJECT", "FREQ", "hot"]), b":100\r\n");
    restore(&mut client, "fresh", "IDLETIME", "1000");
    // A new key's counter: IDLETIME means nothing under LFU.
    assert_eq!(client.cmd(&["OBJECT", "FREQ", "fresh"]), b":5\r\n");
}
