//! Counting Bloom filters over the network: many clients adding and deleting on one filter at
//! once lose no update.

use crate::support::{RawClient, Rng, TestServer};
use std::collections::HashMap;
use std::thread;

const THREADS: usize = 8;
const ITEMS_PER_THREAD: usize = 40;
const OPS_PER_THREAD: usize = 400;
const SHARED_ADDS: usize = 20;
const SHARED_DELETES: usize = 10;

fn int_reply(reply: &[u8]) -> u64 {
    let text = std::str::from_utf8(reply).expect("text reply");
    text.trim_start_matches(':')
        .trim_end()
        .parse()
        .unwrap_or_else(|_| panic!("not an integer reply: {text:?}"))
}

/// Each thread adds and deletes its own items at random, checking every reply against its own
/// model, and also adds and deletes one item that every thread shares. Returns the model.
fn churn(mut client: RawClient, key: &str, thread: usize) -> HashMap<String, u64> {
    // Seeded, so that a failure can be replayed.
    let mut rng = Rng::seeded(thread as u64);
    let mut counts: HashMap<String, u64> = HashMap::new();
    for op in 0..OPS_PER_THREAD {
        let item = format!("t{thread}-i{}", rng.next() % ITEMS_PER_THREAD as u64);
        let held = counts.get(&item).copied().unwrap_or(0);
        if held > 0 && rng.next() % 5 < 2 {
            assert_eq!(client.cmd(&["CBF.DEL", key, &item]), b":1\r\n", "{item}");
            counts.insert(item, held - 1);
        } else {
            let reply = client.cmd(&["CBF.ADD", key, &item]);
            if held > 0 {
                assert_eq!(reply, b":0\r\n", "{item} is held");
            }
            *counts.entry(item).or_default() += 1;
        }
        if op % (OPS_PER_THREAD / SHARED_ADDS) == 0 {
            client.cmd(&["CBF.ADD", key, "shared"]);
        }
        if op % (OPS_PER_THREAD / SHARED_DELETES) == 1 {
            assert_eq!(client.cmd(&["CBF.DEL", key, "shared"]), b":1\r\n");
        }
    }
    counts
}

fn run_clients(server: &TestServer, key: &str) -> HashMap<String, u64> {
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let client = server.client();
            let key = key.to_string();
            thread::spawn(move || churn(client, &key, thread))
        })
        .collect();
    let mut model = HashMap::new();
    for handle in handles {
        model.extend(handle.join().expect("client thread"));
    }
    model.insert(
        "shared".to_string(),
        (THREADS * (SHARED_ADDS - SHARED_DELETES)) as u64,
    );
    model
}

#[test]
fn concurrent_clients_lose_no_update() {
    let server = TestServer::start();
    let mut client = server.client();
    // Large enough that no counter is shared by chance, so every count must be exact.
    assert_eq!(
        client.cmd(&["CBF.RESERVE", "k", "0.0001", "100000", "COUNTERBITS", "8"]),
        b"+OK\r\n"
    );
    let model = run_clients(&server, "k");
    for (item, &held) in &model {
        assert_eq!(
            int_reply(&client.cmd(&["CBF.COUNT", "k", item])),
            held,
            "{item}"
        );
    }
    let total: u64 = model.values().sum();
    assert_eq!(int_reply(&client.cmd(&["CBF.CARD", "k"])), total);
    assert_eq!(
        int_reply(&client.cmd(&["CBF.INFO", "k", "FILTERS"])[4..]),
        1
    );
}

#[test]
fn concurrent_clients_on_a_scaling_filter_keep_every_item() {
    let server = TestServer::start();
    let mut client = server.client();
    assert_eq!(
        client.cmd(&["CBF.RESERVE", "s", "0.05", "20", "COUNTERBITS", "8"]),
        b"+OK\r\n"
    );
    let model = run_clients(&server, "s");
    for (item, &held) in &model {
        let count = int_reply(&client.cmd(&["CBF.COUNT", "s", item]));
        assert!(count >= held, "{item}: count {count} < held {held}");
        if held > 0 {
            assert_eq!(client.cmd(&["CBF.EXISTS", "s", item]), b":1\r\n", "{item}");
        }
    }
    let total: u64 = model.values().sum();
    assert_eq!(int_reply(&client.cmd(&["CBF.CARD", "s"])), total);
    let filters = int_reply(&client.cmd(&["CBF.INFO", "s", "FILTERS"])[4..]);
    assert!(
        filters > 1,
        "the filter should have grown, has {filters} link(s)"
    );
}
