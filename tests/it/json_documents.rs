//! JSON documents end to end, on the real binary: the transcripts recorded from RedisJSON 2.8.19
//! (`shared/fixtures/redisjson`, see its README.md) replay with every reply byte-identical (but
//! for the one rule the README gives: JSON.GET with several paths compares as parsed JSON);
//! documents survive the log and a snapshot across restarts, numbers logged as stored; DUMP
//! and RESTORE carry RedisJSON's `ReJSON-RL` payload; the keyspace commands see the type.

use crate::support::redisbloom::{decode_base64, json_strings};
use crate::support::{
    check_replica_holds_the_same, check_writes_survive_restarts, escape, free_port, missing,
    spawn_server, DataDir, RawClient,
};
use sieved::json::{parse, to_text, ParseLimits, Value};
use std::path::PathBuf;

fn transcripts() -> Option<PathBuf> {
    let found = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|dir| dir.join("shared/fixtures/redisjson/transcripts"))
        .find(|dir| dir.is_dir());
    if found.is_none() {
        missing("the RedisJSON fixtures (shared/fixtures/redisjson)");
    }
    found
}

/// JSON.GET with two or more distinct paths and no FORMAT EXPAND: RedisJSON builds its object
/// from a hash map, whose member order varies between its runs.
fn unordered_reply(command: &[Vec<u8>]) -> bool {
    if !command[0].eq_ignore_ascii_case(b"JSON.GET") || command.len() < 2 {
        return false;
    }
    let mut paths: Vec<&[u8]> = Vec::new();
    let mut args = command[2..].iter();
    while let Some(arg) = args.next() {
        let word = arg.to_ascii_uppercase();
        if arg.len() <= 8 && matches!(&word[..], b"INDENT" | b"NEWLINE" | b"SPACE" | b"FORMAT") {
            if word == b"FORMAT" && args.next().is_some_and(|f| f.starts_with(b"EXPAND")) {
                return false;
            }
            if word != b"FORMAT" {
                args.next();
            }
        } else if (arg.len() > 8 || word != b"NOESCAPE") && !paths.contains(&&arg[..]) {
            paths.push(arg);
        }
    }
    paths.len() >= 2
}

/// Both bulk strings of one length, holding JSON objects with the same members.
fn same_members(ours: &[u8], theirs: &[u8]) -> bool {
    let body = |reply: &[u8]| -> Option<Value> {
        let text = reply.strip_suffix(b"\r\n")?;
        let start = text.iter().position(|&b| b == b'\n')? + 1;
        let text = std::str::from_utf8(&text[start..]).ok()?;
        parse(text, ParseLimits::command(usize::MAX)).ok()
    };
    if ours.len() != theirs.len() {
        return false;
    }
    match (body(ours), body(theirs)) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| to_text(v) == to_text(w)))
        }
        _ => false,
    }
}

fn replay(name: &str) {
    let Some(dir) = transcripts() else {
        return;
    };
    let text = std::fs::read_to_string(dir.join(name)).expect("transcript");
    let mut lines = text.lines();
    let resp3 = lines.next().expect("header").contains("\"protocol\": 3");
    let data = DataDir::new(&format!("json-{name}"));
    let port = free_port();
    let _server = spawn_server(&data.0, port, &[]);
    let mut client = RawClient::connect(format!("127.0.0.1:{port}").parse().unwrap());
    if resp3 {
        client.hello3();
    }
    let (mut count, mut mismatches) = (0, Vec::new());
    for (index, line) in lines.enumerate() {
        let (command, reply) = line.split_once("\"reply\"").expect("a reply");
        let command: Vec<Vec<u8>> = json_strings(command.split_once('[').expect("cmd").1)
            .into_iter()
            .map(decode_base64)
            .collect();
        let expected = decode_base64(json_strings(reply)[0]);
        let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
        let ours = client.command(&args);
        count += 1;
        if ours != expected && !(unordered_reply(&command) && same_members(&ours, &expected)) {
            mismatches.push(format!(
                "line {}: {}\n  RedisJSON: {}\n  sieved:    {}",
                index + 2,
                escape(&args.join(&b' ')),
                escape(&expected[..expected.len().min(300)]),
                escape(&ours[..ours.len().min(300)]),
            ));
        }
    }
    assert!(count >= 2000, "{name}: {count} lines");
    assert!(
        mismatches.is_empty(),
        "{} of {count} replies differ from RedisJSON's in {name}; the first:\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(8)].join("\n")
    );
}

#[test]
fn resp2_seed201_replays_as_redisjson() {
    replay("json-resp2-seed201.jsonl");
}

#[test]
fn resp2_seed202_replays_as_redisjson() {
    replay("json-resp2-seed202.jsonl");
}

#[test]
fn resp2_seed203_replays_as_redisjson() {
    replay("json-resp2-seed203.jsonl");
}

#[test]
fn resp2_seed204_replays_as_redisjson() {
    replay("json-resp2-seed204.jsonl");
}

#[test]
fn resp3_seed201_replays_as_redisjson() {
    replay("json-resp3-seed201.jsonl");
}

#[test]
fn resp3_seed202_replays_as_redisjson() {
    replay("json-resp3-seed202.jsonl");
}

#[test]
fn resp3_seed203_replays_as_redisjson() {
    replay("json-resp3-seed203.jsonl");
}

#[test]
fn resp3_seed204_replays_as_redisjson() {
    replay("json-resp3-seed204.jsonl");
}

/// Writes of every kind a document takes, some twice over the same keys (a restart test runs
/// them again after a compaction), floats that only replay exactly if logged as stored, a
/// member whose name no plain path can spell, a failed command, an expiry.
fn json_writes(client: &mut RawClient) {
    let ok = |client: &mut RawClient, args: &[&str]| {
        let reply = client.cmd(args);
        assert!(!reply.starts_with(b"-"), "{args:?}: {}", escape(&reply));
    };
    ok(
        client,
        &[
            "JSON.SET",
            "doc",
            "$",
            r#"{"n":0.1,"list":[1,2.5,"x"],"o":{"a\"q":1.5,"deep":{"k":[true,null]}}}"#,
        ],
    );
    for _ in 0..7 {
        ok(client, &["JSON.NUMINCRBY", "doc", "$..n", "0.7"]);
        ok(client, &["JSON.NUMMULTBY", "doc", "$.list[1]", "1.1"]);
        ok(client, &["JSON.NUMINCRBY", "doc", "$.o[\"a\\\"q\"]", "0.3"]);
    }
    ok(client, &["JSON.NUMPOWBY", "doc", ".list[0]", "3"]);
    ok(
        client,
        &["JSON.ARRAPPEND", "doc", "$.list", "\"y\"", "{\"z\":1}"],
    );
    ok(client, &["JSON.ARRPOP", "doc", "$.list", "0"]);
    ok(client, &["JSON.STRAPPEND", "doc", "$.list[1]", "\"!\""]);
    ok(client, &["JSON.TOGGLE", "doc", "$.o.deep.k[0]"]);
    ok(
        client,
        &["JSON.MERGE", "doc", "$.o", r#"{"deep":null,"m":[1]}"#],
    );
    ok(
        client,
        &["JSON.MSET", "a", "$", "[]", "b", "$", r#"{"c":1}"#],
    );
    ok(client, &["JSON.ARRINSERT", "a", "$", "0", "1", "2", "3"]);
    ok(client, &["JSON.ARRTRIM", "a", "$", "1", "-1"]);
    ok(client, &["JSON.SET", "b", "$.d", "\"new\"", "NX"]);
    ok(client, &["JSON.DEL", "b", "$.c"]);
    // Fails, and changes nothing.
    assert!(client
        .cmd(&["JSON.NUMINCRBY", "b", "$.d", "1"])
        .starts_with(b"$6\r\n[null]"));
    ok(client, &["JSON.SET", "gone", "$", "1"]);
    ok(client, &["JSON.DEL", "gone"]);
    ok(client, &["JSON.SET", "ttl", "$", r#"{"t":1}"#]);
    ok(client, &["EXPIRE", "ttl", "100000"]);
    ok(client, &["JSON.CLEAR", "ttl", "$"]);
}

fn json_state(client: &mut RawClient) -> Vec<u8> {
    let mut state = Vec::new();
    for key in ["doc", "a", "b", "gone", "ttl"] {
        state.extend(client.cmd(&["JSON.GET", key]));
        state.extend(client.cmd(&["TYPE", key]));
    }
    state.extend(
        client
            .cmd(&["TTL", "ttl"])
            .starts_with(b":9")
            .then_some(b'+'),
    );
    state
}

#[test]
fn documents_survive_restarts_from_the_log_and_snapshots() {
    check_writes_survive_restarts("json", json_writes, json_state);
}

#[test]
fn a_replica_holds_the_same_documents() {
    check_replica_holds_the_same("json", json_writes, json_state);
}

/// The numeric commands go to the log as the numbers they stored, each a JSON.SET at its
/// place (or of the whole document where a name cannot be spelled in a path).
#[test]
fn numbers_are_logged_as_stored() {
    let data = DataDir::new("json-numbers-logged");
    let port = free_port();
    let _server = spawn_server(&data.0, port, &["--appendonly", "yes"]);
    let mut client = RawClient::connect(([127, 0, 0, 1], port).into());
    client.cmd(&["JSON.SET", "k", "$", r#"{"a":[0.1,{"b":2}],"q\"":1}"#]);
    assert_eq!(
        client.cmd(&["JSON.NUMINCRBY", "k", "$..*", "0.2"]),
        b"$39\r\n[null,1.2,0.30000000000000004,null,2.2]\r\n"
    );
    assert_eq!(
        client.cmd(&["JSON.NUMMULTBY", "k", "$.a[1].b", "3"]),
        b"$20\r\n[6.6000000000000005]\r\n"
    );
    drop(client);
    let mut log = Vec::new();
    for entry in std::fs::read_dir(&data.0).expect("data dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "aof") {
            log.extend(std::fs::read(path).expect("log"));
        }
    }
    let log = String::from_utf8_lossy(&log);
    assert!(
        !log.contains("NUMINCRBY") && !log.contains("NUMMULTBY"),
        "{log}"
    );
    // sieved's log frames each word with its length: the words are there, in order.
    for logged in [
        "JSON.SET\u{1}k\t$[\"a\"][0]\u{13}0.30000000000000004",
        "JSON.SET\u{1}k\u{e}$[\"a\"][1][\"b\"]\u{12}6.6000000000000005",
        // The member `q"` has no plain path: the whole document is logged.
        "JSON.SET\u{1}k\u{1}$/{\"a\":[0.30000000000000004,{\"b\":2.2}],\"q\\\"\":1.2}",
    ] {
        assert!(log.contains(logged), "{logged:?} not in {log:?}");
    }
}

#[test]
fn dump_and_restore_carry_redisjson_payloads() {
    let data = DataDir::new("json-dump");
    let port = free_port();
    let _server = spawn_server(&data.0, port, &[]);
    let mut client = RawClient::connect(([127, 0, 0, 1], port).into());
    let text = r#"{"a":[1,2.5,"x"],"b":{"c":null}}"#;
    client.cmd(&["JSON.SET", "doc", "$", text]);
    let dump = client.cmd(&["DUMP", "doc"]);
    let payload_start = dump.iter().position(|&b| b == b'\n').unwrap() + 1;
    let payload = &dump[payload_start..dump.len() - 2];
    // A module value (7) with RedisJSON's 64-bit type ID for encoding version 3, one string
    // field (opcode 5) holding the compact text, the end opcode, then the trailer.
    let id = sieved::json::rdb::module_type_id(3);
    let mut expected = vec![7, 0x81];
    expected.extend_from_slice(&id.to_be_bytes());
    expected.push(5);
    expected.push(text.len() as u8);
    expected.extend_from_slice(text.as_bytes());
    expected.push(0);
    assert_eq!(escape(&payload[..expected.len()]), escape(&expected));
    assert_eq!(payload.len(), expected.len() + 10);
    let restored = client.command(&[b"RESTORE", b"copy", b"0", payload]);
    assert_eq!(restored, b"+OK\r\n");
    assert_eq!(
        client.cmd(&["JSON.GET", "copy"]),
        format!("${}\r\n{text}\r\n", text.len()).into_bytes()
    );
    assert_eq!(client.cmd(&["TYPE", "copy"]), b"+ReJSON-RL\r\n");
    assert_eq!(
        client.cmd(&["OBJECT", "ENCODING", "copy"]),
        b"$3\r\nraw\r\n"
    );
    assert_eq!(client.cmd(&["COPY", "copy", "third"]), b":1\r\n");
    assert_eq!(client.cmd(&["RENAME", "third", "fourth"]), b"+OK\r\n");
    assert_eq!(
        client.cmd(&["JSON.GET", "fourth", "$.a[1]"]),
        b"$5\r\n[2.5]\r\n"
    );
    assert!(client.cmd(&["MEMORY", "USAGE", "fourth"]).starts_with(b":"));
    assert_eq!(client.cmd(&["DEL", "fourth", "copy"]), b":2\r\n");
    assert_eq!(
        client.cmd(&["JSON.GET", "doc", "$.b"]),
        b"$12\r\n[{\"c\":null}]\r\n"
    );
    let modules = client.cmd(&["MODULE", "LIST"]);
    assert!(escape(&modules).contains("ReJSON"), "{}", escape(&modules));
}
