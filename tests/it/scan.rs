//! SCAN and RANDOMKEY on a large keyspace, through the protocol: work and reply of about COUNT
//! per call, every key present throughout a scan returned, expired keys left out.

use crate::support::{RawClient, TestServer};
use redis_protocol::resp2::types::OwnedFrame;
use sieved::store::{now_ms, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const KEYS: usize = 200_000;

/// The most keys a `COUNT 10` call may return. A call reads whole buckets until it has read ten
/// entries, so it overshoots by less than one bucket's chain (a handful at most), plus where a
/// shard ends mid-call; forty leaves a wide margin.
const MOST_FOR_COUNT_10: usize = 40;

fn key(i: usize) -> String {
    format!("key:{i}")
}

/// A server with `KEYS` string keys in database 0, stored directly for speed.
fn filled_server() -> TestServer {
    let server = TestServer::start();
    let db = server.shared.store.db(0);
    for i in 0..KEYS {
        db.insert(key(i).as_bytes(), Value::String(b"v".to_vec()), 0);
    }
    server
}

/// One SCAN call: the next cursor and the keys of the page.
fn scan(client: &mut RawClient, cursor: &str, options: &[&str]) -> (String, Vec<String>) {
    let mut args = vec!["SCAN", cursor];
    args.extend_from_slice(options);
    let reply = client.cmd(&args);
    let frame = redis_protocol::resp2::decode::decode(&reply)
        .expect("frame")
        .expect("complete")
        .0;
    let OwnedFrame::Array(parts) = frame else {
        panic!("not an array: {frame:?}")
    };
    let [OwnedFrame::BulkString(next), OwnedFrame::Array(keys)] = &parts[..] else {
        panic!("not a cursor and a page: {parts:?}")
    };
    let keys = keys
        .iter()
        .map(|key| match key {
            OwnedFrame::BulkString(key) => String::from_utf8(key.clone()).expect("text"),
            other => panic!("not a key: {other:?}"),
        })
        .collect();
    (String::from_utf8(next.clone()).expect("text"), keys)
}

/// Scans from `cursor` to the end with `options`: every key returned, and how many calls.
fn scan_to_end(
    client: &mut RawClient,
    mut cursor: String,
    options: &[&str],
) -> (HashSet<String>, usize) {
    let (mut seen, mut calls) = (HashSet::new(), 0);
    loop {
        let (next, keys) = scan(client, &cursor, options);
        seen.extend(keys);
        calls += 1;
        if next == "0" {
            return (seen, calls);
        }
        cursor = next;
    }
}

#[test]
fn count_ten_returns_about_ten_keys_a_call() {
    let server = filled_server();
    let mut client = server.client();
    let (mut cursor, mut seen) = ("0".to_string(), HashSet::new());
    // The first thousand calls at COUNT 10 (a whole scan at that size is 20,000 round trips),
    // then on to the end with larger pages from the same cursor.
    for _ in 0..1_000 {
        let (next, keys) = scan(&mut client, &cursor, &["COUNT", "10"]);
        assert!(
            !keys.is_empty() && keys.len() <= MOST_FOR_COUNT_10,
            "{} keys",
            keys.len()
        );
        assert_ne!(next, "0");
        seen.extend(keys);
        cursor = next;
    }
    assert!(seen.len() < 1_000 * MOST_FOR_COUNT_10);
    let (rest, _) = scan_to_end(&mut client, cursor, &["COUNT", "1000"]);
    seen.extend(rest);
    assert_eq!(seen.len(), KEYS);
}

#[test]
fn a_match_that_hits_nothing_answers_empty_pages_without_walking_everything() {
    let server = filled_server();
    let mut client = server.client();
    let (mut cursor, mut calls) = ("0".to_string(), 0);
    loop {
        let (next, keys) = scan(
            &mut client,
            &cursor,
            &["MATCH", "nothing:*", "COUNT", "100"],
        );
        assert!(keys.is_empty());
        calls += 1;
        if next == "0" {
            break;
        }
        cursor = next;
    }
    // About KEYS / 100 calls: no call read more than twice its COUNT on average.
    assert!(calls >= KEYS / 200, "{calls} calls");
    assert!(calls <= KEYS / 100 * 2, "{calls} calls");
}

#[test]
fn a_scan_returns_every_key_present_throughout_while_others_come_and_go() {
    let server = filled_server();
    let done = Arc::new(AtomicBool::new(false));
    // Writes from another thread meanwhile, in bursts big enough to grow every shard's table
    // several times over and shrink it back.
    let churn = {
        let (shared, done) = (server.shared.clone(), done.clone());
        std::thread::spawn(move || {
            let db = shared.store.db(0);
            let mut writes = 0u64;
            let mut round = 0;
            loop {
                for i in 0..300_000 {
                    let key = format!("churn:{round}:{i}");
                    db.insert(key.as_bytes(), Value::String(Vec::new()), 0);
                    writes += 1;
                    if done.load(Ordering::Relaxed) {
                        return writes;
                    }
                }
                for i in 0..300_000 {
                    db.remove(format!("churn:{round}:{i}").as_bytes(), 0);
                    writes += 1;
                }
                round += 1;
            }
        })
    };
    let mut client = server.client();
    let (seen, _) = scan_to_end(&mut client, "0".to_string(), &["COUNT", "20"]);
    done.store(true, Ordering::Relaxed);
    let writes = churn.join().expect("churn thread");
    assert!(writes > 0);
    let missing: Vec<String> = (0..KEYS).map(key).filter(|k| !seen.contains(k)).collect();
    assert!(
        missing.is_empty(),
        "{} keys missing, e.g. {:?}",
        missing.len(),
        &missing[..1]
    );
}

#[test]
fn scan_type_and_cursors() {
    let server = filled_server();
    let mut client = server.client();
    for name in ["f1", "f2", "f3"] {
        assert_eq!(client.cmd(&["BF.ADD", name, "x"]), b":1\r\n");
    }
    let (filters, _) = scan_to_end(
        &mut client,
        "0".into(),
        &["TYPE", "MBbloom--", "COUNT", "1000"],
    );
    let expected: HashSet<String> = ["f1", "f2", "f3"].map(String::from).into();
    assert_eq!(filters, expected);
    let (strings, _) = scan_to_end(
        &mut client,
        "0".into(),
        &["TYPE", "string", "COUNT", "5000", "MATCH", "key:1999*"],
    );
    // key:1999, key:19990 to key:19999, key:199900 to key:199999.
    assert_eq!(strings.len(), 111);

    assert_eq!(client.cmd(&["SCAN", "x"]), b"-ERR invalid cursor\r\n");
    assert_eq!(client.cmd(&["SCAN", "-1"]), b"-ERR invalid cursor\r\n");
    // Cursors this server never gave are answered: past the end ends the scan.
    assert_eq!(
        client.cmd(&["SCAN", "18446744073709551615"]),
        b"*2\r\n$1\r\n0\r\n*0\r\n"
    );
    let (next, keys) = scan(&mut client, "12345", &["COUNT", "10"]);
    assert!(keys.len() <= MOST_FOR_COUNT_10 && next != "0");
}

#[test]
fn randomkey_answers_live_keys_among_many_expired_ones() {
    let server = TestServer::start();
    let db = server.shared.store.db(0);
    // Expired a second ago, so the sweeper may remove some of them meanwhile: either way they
    // must never be answered while live keys are plentiful.
    let expired = now_ms() - 1_000;
    for i in 0..20_000 {
        let expires_at = if i % 4 == 0 { 0 } else { expired };
        db.insert(key(i).as_bytes(), Value::String(Vec::new()), expires_at);
    }
    let mut client = server.client();
    let mut answered = HashSet::new();
    for _ in 0..200 {
        let reply = client.cmd(&["RANDOMKEY"]);
        let frame = redis_protocol::resp2::decode::decode(&reply)
            .expect("frame")
            .expect("complete")
            .0;
        let OwnedFrame::BulkString(name) = frame else {
            panic!("not a key: {frame:?}")
        };
        let i: usize = String::from_utf8(name).expect("text")[4..]
            .parse()
            .expect("a number");
        assert_eq!(i % 4, 0, "an expired key was answered");
        answered.insert(i);
    }
    assert!(
        answered.len() > 150,
        "{} distinct keys in 200",
        answered.len()
    );
    client.cmd(&["FLUSHDB"]);
    assert_eq!(client.cmd(&["RANDOMKEY"]), b"$-1\r\n");
}
