//! CF.*, checked against RedisBloom 8.8 itself: its recorded transcripts replay against sieved
//! with every reply byte-identical. Then what RedisBloom cannot show: dumps that round-trip,
//! filters that come back the same from the append-only file and the snapshot, and LOADCHUNK of
//! garbage that never brings the server down.

use crate::support::redisbloom::{assert_transcript_replays, read_transcript};
use crate::support::{escape, RawClient, Rng, TestServer};

#[test]
fn the_resp2_transcript_replays_byte_for_byte() {
    assert_transcript_replays("cf-resp2.jsonl");
}

#[test]
fn the_resp3_transcript_replays_byte_for_byte() {
    assert_transcript_replays("cf-resp3.jsonl");
}

/// Every CF.* key's shape and bytes: its TYPE, CF.INFO, and the length and FNV-1a hash of its
/// whole CF.SCANDUMP (the bytes themselves would drown a failure's message).
fn filter_state(client: &mut RawClient, keys: &[&str]) -> Vec<u8> {
    let mut state = Vec::new();
    for key in keys {
        state.extend(format!("{key}: ").into_bytes());
        state.extend(client.cmd(&["TYPE", key]));
        state.extend(client.cmd(&["CF.INFO", key]));
        let bytes: Vec<u8> = dump(client, key)
            .into_iter()
            .flat_map(|(_, chunk)| chunk)
            .collect();
        let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &b| {
            (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        state.extend(format!("dump of {} bytes, hash {hash:016x}\n", bytes.len()).into_bytes());
    }
    state
}

/// The chunks of CF.SCANDUMP, each with the iterator that CF.LOADCHUNK takes it back with.
fn dump(client: &mut RawClient, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut chunks = Vec::new();
    let mut iterator = 0i64;
    loop {
        let reply = client.cmd(&["CF.SCANDUMP", key, &iterator.to_string()]);
        let Some((next, chunk)) = parse_dump_reply(&reply) else {
            return chunks;
        };
        // A header is loaded back with iterator 1, a chunk with the iterator after it.
        chunks.push((next, chunk));
        iterator = next;
    }
}

/// `*2 :<next> $<len> <bytes>`; None for the end (`:0` and a null) or an error.
fn parse_dump_reply(reply: &[u8]) -> Option<(i64, Vec<u8>)> {
    let text_end =
        |from: usize| from + reply[from..].windows(2).position(|w| w == b"\r\n").unwrap();
    if !reply.starts_with(b"*2\r\n:") {
        return None;
    }
    let next_end = text_end(5);
    let next: i64 = std::str::from_utf8(&reply[5..next_end])
        .ok()?
        .parse()
        .ok()?;
    let bulk = next_end + 2;
    if next == 0 || reply[bulk] != b'$' || reply[bulk + 1] == b'-' {
        return None;
    }
    let len_end = text_end(bulk + 1);
    let len: usize = std::str::from_utf8(&reply[bulk + 1..len_end])
        .ok()?
        .parse()
        .ok()?;
    Some((next, reply[len_end + 2..len_end + 2 + len].to_vec()))
}

const RESTART_KEYS: &[&str] = &["auto", "sized", "full", "small", "copy", "capped", "many"];

/// Implicit creations under settings that differ from the defaults a restart brings back,
/// growth, a filter filled up, deletes that compact on their own, CF.COMPACT and a copy made
/// with SCANDUMP / LOADCHUNK.
fn cuckoo_writes(client: &mut RawClient) {
    for (name, value) in [
        ("cf-bucket-size", "4"),
        ("cf-initial-size", "64"),
        ("cf-expansion-factor", "2"),
        ("cf-max-iterations", "5"),
    ] {
        assert_eq!(client.cmd(&["CONFIG", "SET", name, value]), b"+OK\r\n");
    }
    for i in 0..600 {
        client.cmd(&["CF.ADD", "auto", &format!("item-{i}")]);
    }
    let items: Vec<String> = (0..300).map(|i| format!("s-{i}")).collect();
    let mut insert = vec!["CF.INSERTNX", "sized", "CAPACITY", "100", "ITEMS"];
    insert.extend(items.iter().map(String::as_str));
    client.cmd(&insert);
    client.cmd(&[
        "CF.RESERVE",
        "full",
        "8",
        "BUCKETSIZE",
        "2",
        "EXPANSION",
        "0",
    ]);
    let mut fill = vec!["CF.INSERT", "full", "ITEMS"];
    let quoted: Vec<String> = (0..40).map(|i| format!("q{i}")).collect();
    fill.extend(quoted.iter().map(String::as_str));
    client.cmd(&fill);
    client.cmd(&["CF.ADD", "full", "one-more"]);
    client.cmd(&[
        "CF.RESERVE",
        "small",
        "16",
        "MAXITERATIONS",
        "3",
        "EXPANSION",
        "3",
    ]);
    for i in 0..100 {
        client.cmd(&["CF.ADDNX", "small", &format!("n-{}", i % 60)]);
    }
    for i in (0..600).step_by(3) {
        client.cmd(&["CF.DEL", "auto", &format!("item-{i}")]);
    }
    for i in 0..50 {
        client.cmd(&["CF.DEL", "small", &format!("n-{i}")]);
    }
    client.cmd(&["CF.COMPACT", "small"]);
    client.cmd(&["DEL", "copy"]);
    for (iterator, chunk) in dump(client, "auto") {
        let iterator = if chunk.len() == 38 && iterator == 1 {
            1
        } else {
            iterator
        };
        let reply = client.command(&[
            b"CF.LOADCHUNK",
            b"copy",
            iterator.to_string().as_bytes(),
            &chunk,
        ]);
        assert_eq!(reply, b"+OK\r\n");
    }
    // Items refused for max-filter-memory, which replay does not apply.
    client.cmd(&["CONFIG", "SET", "max-filter-memory", "1024"]);
    client.cmd(&["CF.RESERVE", "capped", "512", "EXPANSION", "1"]);
    let capped: Vec<String> = (0..900).map(|i| format!("c-{i}")).collect();
    let mut insert = vec!["CF.INSERT", "capped", "ITEMS"];
    insert.extend(capped.iter().map(String::as_str));
    let reply = client.cmd(&insert);
    assert!(reply.windows(4).any(|w| w == b":-1\r"), "some refused");
    client.cmd(&["CONFIG", "SET", "max-filter-memory", "1073741824"]);
    // More sub-filters than the default cf-max-expansions, which a restart brings back.
    client.cmd(&["CONFIG", "SET", "cf-max-expansions", "40"]);
    client.cmd(&["CF.RESERVE", "many", "2", "BUCKETSIZE", "1"]);
    for i in 0..120 {
        client.cmd(&["CF.ADD", "many", &format!("m-{i}")]);
    }
    for (name, value) in [
        ("cf-bucket-size", "2"),
        ("cf-initial-size", "1024"),
        ("cf-expansion-factor", "1"),
        ("cf-max-iterations", "20"),
        ("cf-max-expansions", "32"),
    ] {
        assert_eq!(client.cmd(&["CONFIG", "SET", name, value]), b"+OK\r\n");
    }
}

fn restart_state(client: &mut RawClient) -> Vec<u8> {
    filter_state(client, RESTART_KEYS)
}

/// The append-only file, a compaction and a snapshot each bring back every filter byte for
/// byte: eviction is deterministic and implicit creations are logged with their shape.
#[test]
fn filters_come_back_byte_for_byte_after_restarts() {
    crate::support::check_writes_survive_restarts("cuckoo", cuckoo_writes, restart_state);
}

#[test]
fn scandump_round_trips_through_loadchunk() {
    let server = TestServer::start();
    let mut client = RawClient::connect(server.addr);
    assert_eq!(
        client.cmd(&["CF.RESERVE", "src", "64", "EXPANSION", "2"]),
        b"+OK\r\n"
    );
    for i in 0..500 {
        client.cmd(&["CF.ADD", "src", &format!("x{i}")]);
    }
    let chunks = dump(&mut client, "src");
    assert!(chunks.len() > 2, "a header and several sub-filters");
    for (iterator, chunk) in &chunks {
        let reply = client.command(&[
            b"CF.LOADCHUNK",
            b"dst",
            iterator.to_string().as_bytes(),
            chunk,
        ]);
        assert_eq!(reply, b"+OK\r\n");
    }
    assert_eq!(
        escape(&filter_state(&mut client, &["dst"])[..]).replace("dst", "src"),
        escape(&filter_state(&mut client, &["src"])[..])
    );
    for i in 0..500 {
        assert_eq!(
            client.cmd(&["CF.EXISTS", "dst", &format!("x{i}")]),
            b":1\r\n"
        );
    }
}

/// LOADCHUNK of random headers and chunks, and of corrupted real ones, answers each with OK or
/// an error, never taking the server down or allocating past the filter limit.
#[test]
fn loadchunk_of_garbage_never_panics() {
    let server = TestServer::start();
    let mut client = RawClient::connect(server.addr);
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "max-filter-memory", "1048576"]),
        b"+OK\r\n"
    );
    client.cmd(&["CF.RESERVE", "real", "256", "EXPANSION", "2"]);
    for i in 0..400 {
        client.cmd(&["CF.ADD", "real", &format!("r{i}")]);
    }
    let real = dump(&mut client, "real");
    let mut rng = Rng(0x5eed);
    for round in 0..3000 {
        let key = format!("g{}", round % 7);
        let (iterator, mut data) = match round % 3 {
            0 => {
                let (iterator, chunk) = &real[rng.index(real.len())];
                (*iterator, chunk.clone())
            }
            1 => (1, (0..38).map(|_| rng.next() as u8).collect()),
            _ => (
                rng.next() as i64 % 5000 - 100,
                (0..rng.below(64)).map(|_| rng.next() as u8).collect(),
            ),
        };
        for _ in 0..rng.below(4) {
            if !data.is_empty() {
                let at = rng.index(data.len());
                data[at] = rng.next() as u8;
            }
        }
        if round % 5 == 0 {
            // Headers with small, plausible fields reach the allocation checks.
            data = real[0].1.clone();
            let field = [8, 24, 32, 34, 36][rng.index(5)];
            data[field] = rng.next() as u8;
            data[field + 1] = (rng.next() % 3) as u8;
        }
        let reply = client.command(&[
            b"CF.LOADCHUNK",
            key.as_bytes(),
            iterator.to_string().as_bytes(),
            &data,
        ]);
        assert!(
            reply.starts_with(b"+OK") || reply.starts_with(b"-"),
            "{}",
            escape(&reply)
        );
        for probe in ["CF.EXISTS", "CF.COUNT", "CF.ADD", "CF.DEL"] {
            client.cmd(&[probe, &key, "probe"]);
        }
        client.cmd(&["CF.SCANDUMP", &key, "1"]);
        client.cmd(&["CF.COMPACT", &key]);
        if round % 50 == 0 {
            client.cmd(&["DEL", &key]);
        }
    }
    assert_eq!(client.cmd(&["PING"]), b"+PONG\r\n");
}

/// A replica applies the primary's CF.* stream to the same bytes.
#[test]
fn a_replica_holds_the_same_filters() {
    crate::support::check_replica_holds_the_same("cuckoo", cuckoo_writes, restart_state);
}

/// RedisBloom's own dumps, from the transcripts, load into sieved and dump back the same bytes:
/// each header taken with `CF.SCANDUMP key 0` and followed, before any write to the key, by the
/// one chunk of a filter of one sub-filter.
#[test]
fn redisbloom_dumps_load_into_sieved() {
    let writes = [
        "CF.ADD",
        "CF.ADDNX",
        "CF.INSERT",
        "CF.INSERTNX",
        "CF.DEL",
        "CF.COMPACT",
        "CF.RESERVE",
    ];
    let mut dumps = Vec::new();
    for name in ["cf-resp2.jsonl", "cf-resp3.jsonl"] {
        let mut headers: std::collections::HashMap<Vec<u8>, Vec<u8>> = Default::default();
        let Some((_, exchanges)) = read_transcript(name) else {
            return;
        };
        for exchange in exchanges {
            let (command, key) = (&exchange.command[0], exchange.command[1].clone());
            if command.as_slice() != b"CF.SCANDUMP" {
                if writes
                    .iter()
                    .any(|w| w.as_bytes().eq_ignore_ascii_case(command))
                {
                    headers.remove(&key);
                }
                continue;
            }
            match (
                exchange.command[2].as_slice(),
                parse_dump_reply(&exchange.reply),
            ) {
                (b"0", Some((1, header))) if header[24..32] == 1u64.to_le_bytes() => {
                    headers.insert(key, header);
                }
                // RedisBloom sends a whole sub-filter of up to 16 MiB for any iterator inside
                // it (9 as well as 1); CF.SCANDUMP key 1 would have answered 1 + its length.
                (b"1" | b"9", Some((_, chunk))) => {
                    if let Some(header) = headers.remove(&key) {
                        let next = 1 + chunk.len() as i64;
                        dumps.push((header, next, chunk));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(
        dumps.len() >= 4,
        "only {} whole dumps in the transcripts",
        dumps.len()
    );
    let server = TestServer::start();
    let mut client = RawClient::connect(server.addr);
    for (n, (header, next, chunk)) in dumps.iter().enumerate() {
        let key = format!("copy{n}");
        let loaded = client.command(&[b"CF.LOADCHUNK", key.as_bytes(), b"1", header]);
        assert_eq!(loaded, b"+OK\r\n");
        let next_text = next.to_string();
        let loaded =
            client.command(&[b"CF.LOADCHUNK", key.as_bytes(), next_text.as_bytes(), chunk]);
        assert_eq!(loaded, b"+OK\r\n");
        assert_eq!(
            dump(&mut client, &key),
            vec![(1, header.clone()), (*next, chunk.clone())]
        );
    }
}
