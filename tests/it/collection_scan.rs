//! SSCAN, HSCAN and ZSCAN page a large collection with a real cursor, as Redis pages its hash
//! tables: about COUNT elements a call, MATCH applied to each page, and every element present
//! throughout a scan returned at least once while others come and go; a small (packed)
//! collection comes whole in one page, as Redis returns a listpack or an intset. HSCAN's
//! NOVALUES (Redis 7.4) and ZSCAN's NOSCORES (Redis 8) return the members alone.

use crate::support::{encode_command, escape, RawClient, RedisServer, TestServer};
use redis_protocol::resp2::types::OwnedFrame;
use std::collections::HashSet;

const ELEMENTS: usize = 1_000;

fn text(frame: &OwnedFrame) -> String {
    match frame {
        OwnedFrame::BulkString(bytes) => String::from_utf8(bytes.clone()).expect("text"),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// One scan call (`words` with the cursor in third place): the next cursor and the page.
fn page(client: &mut RawClient, words: &[&str]) -> (String, Vec<String>) {
    let reply = client.cmd(words);
    let frame = redis_protocol::resp2::decode::decode(&reply)
        .unwrap_or_else(|_| panic!("{}", escape(&reply)))
        .expect("complete")
        .0;
    let OwnedFrame::Array(parts) = frame else {
        panic!("not an array: {}", escape(&reply))
    };
    let [next, OwnedFrame::Array(items)] = &parts[..] else {
        panic!("not a cursor and a page: {}", escape(&reply))
    };
    (text(next), items.iter().map(text).collect())
}

/// A whole scan of `key` with `command` and `options`: every item returned (members, or
/// members and values in turn), the pages, and how many calls it took. `between` runs after
/// each call.
fn scan_all(
    client: &mut RawClient,
    command: &str,
    key: &str,
    options: &[&str],
    mut between: impl FnMut(usize),
) -> (Vec<String>, Vec<Vec<String>>, usize) {
    let (mut cursor, mut items, mut pages, mut calls) = ("0".to_string(), vec![], vec![], 0);
    loop {
        let mut words = vec![command, key, &cursor];
        words.extend_from_slice(options);
        let (next, found) = page(client, &words);
        items.extend(found.iter().cloned());
        pages.push(found);
        calls += 1;
        between(calls);
        if next == "0" {
            return (items, pages, calls);
        }
        assert!(calls < 100 * ELEMENTS, "the scan does not end");
        cursor = next;
    }
}

fn member(i: usize) -> String {
    format!("m:{i}")
}

/// A set `s`, a hash `h` and a sorted set `z` of `ELEMENTS` members each, and small ones.
fn fill(client: &mut RawClient) {
    let mut pipeline = Vec::new();
    for i in 0..ELEMENTS {
        let m = member(i);
        pipeline.extend(encode_command(&[b"SADD", b"s", m.as_bytes()]));
        pipeline.extend(encode_command(&[b"HSET", b"h", m.as_bytes(), b"v"]));
        let score = i.to_string();
        pipeline.extend(encode_command(&[
            b"ZADD",
            b"z",
            score.as_bytes(),
            m.as_bytes(),
        ]));
    }
    client.send(&pipeline);
    for _ in 0..3 * ELEMENTS {
        client.read_reply();
    }
    client.cmd(&["HSET", "small", "f1", "v1", "f2", "v2", "f3", "v3"]);
    client.cmd(&["SADD", "ints", "1", "2", "3"]);
}

/// Members of a scan's items: every one for a set, every other one for a hash or sorted set.
fn members_of(items: &[String], step: usize) -> HashSet<String> {
    items.iter().step_by(step).cloned().collect()
}

#[test]
fn large_collections_are_paged_as_redis_pages_them() {
    let Some(redis) = RedisServer::start("collection-scan") else {
        return;
    };
    let server = TestServer::start();
    let mut ours = server.client();
    let mut theirs = RawClient::connect(redis.addr);
    fill(&mut ours);
    fill(&mut theirs);
    let all: HashSet<String> = (0..ELEMENTS).map(member).collect();
    let ones: HashSet<String> = all
        .iter()
        .filter(|m| m.starts_with("m:1"))
        .cloned()
        .collect();
    for (command, key, step) in [("SSCAN", "s", 1), ("HSCAN", "h", 2), ("ZSCAN", "z", 2)] {
        for (client, is_ours) in [(&mut ours, true), (&mut theirs, false)] {
            let (items, pages, calls) = scan_all(client, command, key, &["COUNT", "10"], drop);
            assert_eq!(members_of(&items, step), all, "{command}");
            assert!(calls >= ELEMENTS / 20, "{command}: {calls} calls");
            if is_ours {
                // Ours: pages of exactly COUNT positions, so at most COUNT members.
                assert!(
                    pages.iter().all(|page| page.len() <= 10 * step),
                    "{command}"
                );
                assert_eq!(calls, ELEMENTS / 10, "{command}");
            }
            let (items, _, _) = scan_all(
                client,
                command,
                key,
                &["MATCH", "m:1*", "COUNT", "50"],
                drop,
            );
            assert_eq!(members_of(&items, step), ones, "{command} MATCH");
        }
        let (items, _, _) = scan_all(&mut ours, command, key, &["COUNT", "1000000"], drop);
        assert_eq!(items.len(), ELEMENTS * step, "{command} in one call");
    }
    // Small packed collections come whole, whatever COUNT says, on both.
    for line in [
        &["HSCAN", "small", "0", "COUNT", "1"][..],
        &["SSCAN", "ints", "0", "COUNT", "1"],
        &["HSCAN", "small", "0", "MATCH", "*2"],
        &["SSCAN", "s", "x"],
        &["SSCAN", "s", "0", "COUNT", "0"],
        &["SSCAN", "s", "0", "COUNT", "x"],
        &["SSCAN", "s", "0", "MATCH"],
        &["SSCAN", "missing", "0", "COUNT", "0"],
        &["HSCAN", "s", "0"],
    ] {
        assert_eq!(
            escape(&ours.cmd(line)),
            escape(&theirs.cmd(line)),
            "{line:?}"
        );
    }
}

#[test]
fn novalues_and_noscores_return_members_alone() {
    let server = TestServer::start();
    let mut client = server.client();
    fill(&mut client);
    let all: HashSet<String> = (0..ELEMENTS).map(member).collect();
    for (command, key, option) in [("HSCAN", "h", "NOVALUES"), ("ZSCAN", "z", "NOSCORES")] {
        let (items, _, _) = scan_all(&mut client, command, key, &[option, "COUNT", "7"], drop);
        assert_eq!(items.len(), ELEMENTS, "{command}");
        assert_eq!(items.into_iter().collect::<HashSet<_>>(), all, "{command}");
    }
    assert_eq!(
        client.cmd(&["HSCAN", "small", "0", "NOVALUES"]),
        b"*2\r\n$1\r\n0\r\n*3\r\n$2\r\nf1\r\n$2\r\nf2\r\n$2\r\nf3\r\n"
    );
    for (line, error) in [
        (
            &["SSCAN", "s", "0", "NOVALUES"][..],
            "NOVALUES option can only be used in HSCAN",
        ),
        (
            &["ZSCAN", "z", "0", "NOVALUES"],
            "NOVALUES option can only be used in HSCAN",
        ),
        (
            &["HSCAN", "h", "0", "NOSCORES"],
            "NOSCORES option can only be used in ZSCAN",
        ),
    ] {
        assert_eq!(client.cmd(line), format!("-ERR {error}\r\n").as_bytes());
    }
    // A missing key answers an empty page before any option is read, as in Redis.
    assert_eq!(
        client.cmd(&["SSCAN", "missing", "0", "NOVALUES"]),
        b"*2\r\n$1\r\n0\r\n*0\r\n"
    );
}

/// Between every call, members other than the stable ones are added and removed, enough to
/// grow and shrink the collection's table several times; every stable member is still
/// returned, as a scan promises.
#[test]
fn every_member_present_throughout_a_scan_is_returned_while_others_come_and_go() {
    let server = TestServer::start();
    let mut client = server.client();
    fill(&mut client);
    let mut churner = server.client();
    let all: HashSet<String> = (0..ELEMENTS).map(member).collect();
    for (command, key, step, add, remove) in [
        ("SSCAN", "s", 1, "SADD s", "SREM s"),
        ("HSCAN", "h", 2, "HSET h", "HDEL h"),
        ("ZSCAN", "z", 2, "ZADD z", "ZREM z"),
    ] {
        let churn = |calls: usize| {
            let burst = calls / 20;
            let mut pipeline = Vec::new();
            for i in 0..100 {
                let other = format!("churn:{burst}:{i}");
                let mut words: Vec<&str> = if calls % 20 < 10 {
                    add.split(' ').collect()
                } else {
                    remove.split(' ').collect()
                };
                match command {
                    "HSCAN" if calls % 20 < 10 => words.extend([other.as_str(), "v"]),
                    "ZSCAN" if calls % 20 < 10 => words.extend(["1", other.as_str()]),
                    _ => words.push(&other),
                }
                // Stable members change value or score without moving.
                let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
                pipeline.extend(encode_command(&args));
            }
            churner.send(&pipeline);
            for _ in 0..100 {
                churner.read_reply();
            }
            let stable = member(calls % ELEMENTS);
            match command {
                "HSCAN" => churner.cmd(&["HSET", key, &stable, &calls.to_string()]),
                "ZSCAN" => churner.cmd(&["ZADD", key, &calls.to_string(), &stable]),
                _ => churner.cmd(&["SADD", key, &stable]),
            };
        };
        let (items, _, calls) = scan_all(&mut client, command, key, &["COUNT", "10"], churn);
        let seen = members_of(&items, step);
        let missing: Vec<&String> = all.iter().filter(|m| !seen.contains(*m)).collect();
        assert!(missing.is_empty(), "{command}: {} missing", missing.len());
        assert!(calls >= ELEMENTS / 10, "{command}: {calls} calls");
    }
}
