//! JSON documents end to end, on the real binary: the transcripts recorded from RedisJSON 2.8.19
//! (`shared/fixtures/redisjson`, see its README.md) replay with every reply byte-identical (but
//! for the one rule the README gives: JSON.GET with several paths compares as parsed JSON);
//! documents survive the log and a snapshot across restarts, numbers logged as stored; DUMP
//! and RESTORE carry RedisJSON's `ReJSON-RL` payload; the keyspace commands see the type.

mod common;

use common::redisbloom::{decode_base64, json_strings};
use common::{escape, free_port, missing, spawn_server, DataDir, RawClient};
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
