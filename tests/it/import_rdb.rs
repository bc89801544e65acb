//! `sieved import-rdb`: the RDB file and the multi-part AOF that RedisBloom 8.8 on Redis 7.4
//! wrote (the shared fixtures) import into a snapshot and into a running server, with every
//! added item present, the absent probes answered exactly as RedisBloom answered them, the
//! bitmap's bits, the TTL and database 3 kept; Redis 7.0's own file of every encoding imports
//! with its stream listed as skipped; damaged files are refused and nothing is written.

use crate::support::redisbloom::{check_filter, fixtures as redisbloom_fixtures, FILTERS};
use crate::support::{
    binary, escape, free_port, spawn_server, DataDir, RawClient, RedisServer, TestServer,
};
use sieved::rdb::append_trailer;
use std::path::Path;
use std::process::{Command, Output};

fn import(args: &[&str]) -> Output {
    Command::new(binary())
        .arg("import-rdb")
        .args(args)
        .output()
        .expect("run sieved import-rdb")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Everything the fixtures hold, as a server that imported them answers.
fn check_imported(client: &mut RawClient, fixtures: &Path) {
    for filter in &FILTERS {
        check_filter(client, fixtures, filter);
    }
    for bit in ["8", "11", "1048576", "1073741823"] {
        assert_eq!(
            client.cmd(&["GETBIT", "bits:seed000", bit]),
            b":1\r\n",
            "bit {bit}"
        );
    }
    assert_eq!(client.cmd(&["BITCOUNT", "bits:seed000"]), b":4\r\n");
    assert_eq!(client.cmd(&["STRLEN", "bits:seed000"]), b":134217728\r\n");
    assert_eq!(
        client.cmd(&["GET", "str:plain"]),
        b"$14\r\nhello \x00\xff world\r\n"
    );
    assert_eq!(
        client.cmd(&["LRANGE", "list:queue", "0", "-1"]),
        b"*3\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n"
    );
    assert_eq!(client.cmd(&["SCARD", "set:seen"]), b":2\r\n");
    assert_eq!(client.cmd(&["SISMEMBER", "set:seen", "y"]), b":1\r\n");
    assert_eq!(client.cmd(&["TYPE", "cf:cuckoo"]), b"+MBbloomCF\r\n");
    assert_eq!(client.cmd(&["CF.EXISTS", "cf:cuckoo", "x"]), b":1\r\n");
    // About ten years ahead.
    let ttl = text(&client.cmd(&["TTL", "bf:small"]));
    let ttl: i64 = ttl.trim_start_matches(':').trim().parse().expect("a TTL");
    assert!(ttl > 300_000_000, "{ttl}");
    assert_eq!(client.cmd(&["EXISTS", "bf:db3"]), b":0\r\n");
    assert_eq!(client.cmd(&["SELECT", "3"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["BF.EXISTS", "bf:db3", "in-db-3"]), b":1\r\n");
    assert_eq!(client.cmd(&["DBSIZE"]), b":1\r\n");
    assert_eq!(client.cmd(&["SELECT", "0"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["DBSIZE"]), b":11\r\n");
}

fn serve_and_check(dir: &Path, fixtures: &Path) {
    let port = free_port();
    let server = spawn_server(dir, port, &[]);
    let mut client = RawClient::connect(([127, 0, 0, 1], port).into());
    check_imported(&mut client, fixtures);
    drop(client);
    server.kill();
}

#[test]
fn redisbloom_rdb_imports_into_a_snapshot() {
    let Some(fixtures) = redisbloom_fixtures() else {
        return;
    };
    let rdb = fixtures.join("dump.rdb");
    let before = std::fs::read(&rdb).expect("the fixture");
    let dir = DataDir::new("import-rdb-snapshot");
    let output = import(&[rdb.to_str().unwrap(), "--dir", dir.0.to_str().unwrap()]);
    let report = text(&output.stdout);
    assert!(output.status.success(), "{report}{}", text(&output.stderr));
    assert!(report.contains("RDB version 12 (Redis 7.4.1)"), "{report}");
    assert!(
        report.contains(
            "imported 12 keys (7 MBbloom--, 1 MBbloomCF, 1 list, 1 set, 2 string) in databases 0, 3"
        ),
        "{report}"
    );
    assert!(report.contains("skipped 0 keys"), "{report}");
    serve_and_check(&dir.0, &fixtures);
    assert_eq!(
        std::fs::read(&rdb).expect("the fixture"),
        before,
        "the input changed"
    );
    // A second import into the same directory would overwrite data: refused.
    let again = import(&[rdb.to_str().unwrap(), "--dir", dir.0.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("already holds sieved data"));
}

/// The multi-part AOF, through its manifest, with the files named as Redis names them.
#[test]
fn redisbloom_aof_imports_through_its_manifest() {
    let Some(fixtures) = redisbloom_fixtures() else {
        return;
    };
    let aof = DataDir::new("import-rdb-aof-source");
    for name in [
        "appendonly.aof.manifest",
        "appendonly.aof.1.base.rdb",
        "appendonly.aof.1.incr.aof",
    ] {
        std::fs::copy(fixtures.join(format!("aof-{name}")), aof.0.join(name)).expect("copy");
    }
    let manifest = aof.0.join("appendonly.aof.manifest");
    let dir = DataDir::new("import-rdb-aof");
    let output = import(&[manifest.to_str().unwrap(), "--dir", dir.0.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("appendonly.aof.1.base.rdb"));
    serve_and_check(&dir.0, &fixtures);
    // Writes in an increment file cannot be applied: refused rather than lost.
    std::fs::write(
        aof.0.join("appendonly.aof.1.incr.aof"),
        b"*1\r\n$4\r\nPING\r\n",
    )
    .unwrap();
    let dir = DataDir::new("import-rdb-aof-incr");
    let output = import(&[manifest.to_str().unwrap(), "--dir", dir.0.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("BGREWRITEAOF"),
        "{}",
        text(&output.stderr)
    );
    assert!(!dir.0.join("sieved.snap").exists());
}

#[test]
fn redisbloom_rdb_imports_into_a_running_server() {
    let Some(fixtures) = redisbloom_fixtures() else {
        return;
    };
    let server = TestServer::start();
    let rdb = fixtures.join("dump.rdb");
    let address = server.addr.to_string();
    let output = import(&[rdb.to_str().unwrap(), "--to", &address]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains(&format!("sent 12 keys to {address}")));
    let mut client = server.client();
    check_imported(&mut client, &fixtures);
    // Again: every key exists, and each refusal is listed; with --replace, none.
    let output = import(&[rdb.to_str().unwrap(), "--to", &address]);
    assert!(!output.status.success());
    let errors = text(&output.stderr);
    assert!(errors.contains("the server refused 12 keys"), "{errors}");
    assert!(errors.contains("db 3 'bf:db3': BUSYKEY"), "{errors}");
    let output = import(&[rdb.to_str().unwrap(), "--to", &address, "--replace"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
}

#[test]
fn damaged_files_are_refused_and_nothing_is_written() {
    let Some(fixtures) = redisbloom_fixtures() else {
        return;
    };
    let good = std::fs::read(fixtures.join("dump.rdb")).expect("the fixture");
    let work = DataDir::new("import-rdb-damaged");
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x10;
    let cases: [(&str, &[u8]); 4] = [
        ("flipped", &flipped),
        ("truncated", &good[..good.len() - 100]),
        ("empty", b""),
        ("newer", b"REDIS0013\xff"),
    ];
    for (name, bytes) in cases {
        let file = work.0.join(name);
        std::fs::write(&file, bytes).unwrap();
        let dir = work.0.join(format!("{name}-out"));
        let output = import(&[file.to_str().unwrap(), "--dir", dir.to_str().unwrap()]);
        assert!(!output.status.success(), "{name}");
        assert!(
            text(&output.stderr).contains("cannot read"),
            "{name}: {}",
            text(&output.stderr)
        );
        assert!(!dir.join("sieved.snap").exists(), "{name}");
    }
}

/// Redis 7.0's own file, with every encoding it writes and a stream, which is skipped.
#[test]
fn redis_7_rdb_imports_every_encoding() {
    let Some(redis) = RedisServer::start("import-rdb-redis7") else {
        return;
    };
    let mut theirs = RawClient::connect(redis.addr);
    let mut lines: Vec<String> = [
        "SET s hello",
        "SET n 12345",
        "RPUSH l a 1 -2 300 70000 5000000000",
        "SADD si 1 2 3 -5 100000",
        "SADD ss x y z",
        "ZADD zs 1.5 a -2 b 3 c",
        "HSET h f1 v1 f2 2",
        "SET ttl x EX 100000",
        "XADD stream * field value",
        "SELECT 5",
        "SET five 5",
        "SELECT 0",
    ]
    .iter()
    .map(|line| line.to_string())
    .collect();
    lines.push(format!("SET long {}", "a".repeat(300)));
    lines.push(format!(
        "RPUSH biglist {}",
        (0..300)
            .map(|i| format!("{}{i}", "x".repeat(100)))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    lines.push(format!(
        "ZADD bigzset {}",
        (0..300)
            .map(|i| format!("{} m{i}", i as f64 / 4.0))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    lines.push(format!(
        "HSET bighash {}",
        (0..20)
            .map(|i| format!("f{i} {}", "v".repeat(70)))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    for line in &lines {
        let reply = theirs.line(line);
        assert!(!reply.starts_with(b"-"), "{line}: {}", escape(&reply));
    }
    assert_eq!(theirs.cmd(&["SAVE"]), b"+OK\r\n");
    let dir = text(&theirs.cmd(&["CONFIG", "GET", "dir"]));
    let dir = dir.split("\r\n").nth(4).expect("the directory").to_string();
    let rdb = Path::new(&dir).join("dump.rdb");
    let server = TestServer::start();
    let output = import(&[rdb.to_str().unwrap(), "--to", &server.addr.to_string()]);
    let report = text(&output.stdout);
    assert!(output.status.success(), "{report}{}", text(&output.stderr));
    assert!(report.contains("RDB version 10 (Redis 7.0"), "{report}");
    assert!(
        report.contains("skipped 1 keys sieved has no type for:\n  db 0 'stream': stream"),
        "{report}"
    );
    let mut ours = server.client();
    for read in [
        "GET s",
        "GET n",
        "GET long",
        "LRANGE l 0 -1",
        "LRANGE biglist 0 -1",
        "SMISMEMBER si 1 2 3 -5 100000 4",
        "SMISMEMBER ss x y z w",
        "ZRANGE zs 0 -1 WITHSCORES",
        "ZRANGE bigzset 0 -1 WITHSCORES",
        "HGET bighash f7",
        "HGET h f2",
    ] {
        assert_eq!(
            escape(&ours.line(read)),
            escape(&theirs.line(read)),
            "{read}"
        );
    }
    assert_eq!(ours.cmd(&["EXISTS", "stream"]), b":0\r\n");
    assert_eq!(ours.cmd(&["TTL", "ttl"]).len(), b":100000\r\n".len());
    ours.cmd(&["SELECT", "5"]);
    assert_eq!(ours.cmd(&["GET", "five"]), b"$1\r\n5\r\n");
}

/// The payload Redis with RedisBloom sends for `key` in a MIGRATE (or answers to DUMP): the
/// value's bytes as its RDB file holds them, with the version and checksum trailer.
fn redisbloom_payload(rdb: &[u8], key: &str) -> Vec<u8> {
    let mut payload = redisbloom_value(rdb, key);
    append_trailer(&mut payload, 12);
    payload
}

/// `key`'s value in the RDB file: its type byte and its bytes, which a payload's trailer follows.
fn redisbloom_value(rdb: &[u8], key: &str) -> Vec<u8> {
    use sieved::rdb::{read_value, Input, Limits, SliceInput};
    let mut pattern = vec![7u8, key.len() as u8];
    pattern.extend_from_slice(key.as_bytes());
    let start = rdb
        .windows(pattern.len())
        .position(|window| window == pattern)
        .expect("the key in the file");
    let body = &rdb[start + pattern.len()..];
    let mut input = SliceInput(body);
    read_value(&mut input, 7, &Limits::NONE).expect("a module value");
    let len = body.len() - input.remaining() as usize;
    let mut value = vec![7u8];
    value.extend_from_slice(&body[..len]);
    value
}

/// RedisBloom's own MBbloom-- and MBbloomCF bytes, as a MIGRATE from Redis with RedisBloom
/// sends them, RESTORE into filters that answer as RedisBloom's did.
#[test]
fn redisbloom_payloads_restore() {
    let Some(fixtures) = redisbloom_fixtures() else {
        return;
    };
    let rdb = std::fs::read(fixtures.join("dump.rdb")).expect("the fixture");
    let server = TestServer::start();
    let mut client = server.client();
    for filter in &FILTERS {
        let payload = redisbloom_payload(&rdb, filter.key);
        assert_eq!(
            client.command(&[b"RESTORE", filter.key.as_bytes(), b"0", &payload]),
            b"+OK\r\n",
            "{}",
            filter.key
        );
        check_filter(&mut client, &fixtures, filter);
    }
    let payload = redisbloom_payload(&rdb, "cf:cuckoo");
    assert_eq!(
        client.command(&[b"RESTORE", b"cf", b"0", &payload]),
        b"+OK\r\n"
    );
    assert_eq!(client.cmd(&["CF.EXISTS", "cf", "x"]), b":1\r\n");
    // RedisBloom's bytes under another module's name ("MBbloom-_"), or of an encoding version
    // it never wrote, are refused. The module ID is bytes 2 to 9, big-endian: the name's last
    // character starts at bit 10, the version is the low 10 bits.
    for (at, flip) in [(8, 0x04), (9, 0x01)] {
        let mut changed = redisbloom_value(&rdb, "bf:small");
        changed[at] ^= flip;
        append_trailer(&mut changed, 12);
        assert_eq!(
            client.command(&[b"RESTORE", b"changed", b"0", &changed]),
            b"-ERR Bad data format\r\n"
        );
    }
}
