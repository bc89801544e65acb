//! CMS.*, TOPK.* and TDIGEST.*, checked against RedisBloom 8.8 itself: its recorded transcripts
//! (`shared/fixtures/redisbloom/transcripts/{cms,topk,tdigest}-resp{2,3}.jsonl`) replay against
//! a fresh sieved, and the sketches survive restarts and replication.
//!
//! Every reply must be RedisBloom's byte for byte, but for DUMP's: a DUMP payload must hold the
//! same value, field for field, as RedisBloom's. Its wrapping may differ: the RDB version in
//! the footer (sieved writes 9, Redis 7.4 writes 12), the LZF compression of its strings
//! (sieved's compressor is its own) and so the CRC; and a Top-K's heap holds each item's memory
//! address in RedisBloom's (8 bytes a heap entry, ignored on load), which sieved writes as 0.

use crate::support::redisbloom::read_transcript;
use crate::support::{
    check_replica_holds_the_same, check_writes_survive_restarts, escape, RawClient, TestServer,
};

/// LZF, as an RDB string holds it: `len` bytes once decompressed.
fn lzf_decompress(input: &[u8], len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut at = 0;
    while at < input.len() {
        let control = usize::from(input[at]);
        at += 1;
        if control < 32 {
            out.extend_from_slice(&input[at..at + control + 1]);
            at += control + 1;
            continue;
        }
        let mut run = control >> 5;
        if run == 7 {
            run += usize::from(input[at]);
            at += 1;
        }
        let back = ((control & 0x1f) << 8) + usize::from(input[at]) + 1;
        at += 1;
        let start = out.len() - back;
        for i in 0..run + 2 {
            out.push(out[start + i]);
        }
    }
    assert_eq!(out.len(), len, "an LZF string of the declared length");
    out
}

/// Reads an RDB length; the flag says it is a special encoding.
fn rdb_length(data: &[u8], at: &mut usize) -> (u64, bool) {
    let first = data[*at];
    *at += 1;
    match first >> 6 {
        0 => (u64::from(first & 0x3f), false),
        1 => {
            let value = (u64::from(first & 0x3f) << 8) | u64::from(data[*at]);
            *at += 1;
            (value, false)
        }
        2 => {
            let width = if first == 0x80 { 4 } else { 8 };
            let value = data[*at..*at + width]
                .iter()
                .fold(0u64, |value, &byte| value << 8 | u64::from(byte));
            *at += width;
            (value, false)
        }
        _ => (u64::from(first & 0x3f), true),
    }
}

fn rdb_string(data: &[u8], at: &mut usize) -> Vec<u8> {
    match rdb_length(data, at) {
        (len, false) => {
            let bytes = data[*at..*at + len as usize].to_vec();
            *at += len as usize;
            bytes
        }
        (3, true) => {
            let (packed, _) = rdb_length(data, at);
            let (len, _) = rdb_length(data, at);
            let bytes = lzf_decompress(&data[*at..*at + packed as usize], len as usize);
            *at += packed as usize;
            bytes
        }
        (encoding, true) => {
            let width = [1usize, 2, 4][encoding as usize];
            let mut bytes = [0u8; 8];
            bytes[..width].copy_from_slice(&data[*at..*at + width]);
            *at += width;
            i64::from_le_bytes(bytes).to_string().into_bytes()
        }
    }
}

/// A module value's type byte, module ID and fields (opcode and bytes), with a Top-K's heap
/// addresses zeroed.
fn module_fields(payload: &[u8]) -> (u8, u64, Vec<(u64, Vec<u8>)>) {
    let mut at = 1;
    let (id, _) = rdb_length(payload, &mut at);
    let top_k = id >> 10 == module_id_of("TopK-TYPE") >> 10;
    let mut fields = Vec::new();
    loop {
        let (opcode, _) = rdb_length(payload, &mut at);
        let bytes = match opcode {
            0 => break,
            1 | 2 => rdb_length(payload, &mut at).0.to_le_bytes().to_vec(),
            4 => {
                at += 8;
                payload[at - 8..at].to_vec()
            }
            5 => rdb_string(payload, &mut at),
            other => panic!("a module field opcode {other}"),
        };
        fields.push((opcode, bytes));
    }
    if top_k {
        for entry in fields[5].1.chunks_mut(24) {
            entry[8..16].fill(0);
        }
    }
    (payload[0], id, fields)
}

fn module_id_of(name: &str) -> u64 {
    const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    name.bytes().fold(0u64, |id, c| {
        id << 6 | CHARSET.iter().position(|&known| known == c).unwrap() as u64
    }) << 10
}

/// A DUMP reply's payload, if it is a bulk string holding a module value.
fn module_payload(reply: &[u8]) -> Option<&[u8]> {
    let body = reply.strip_prefix(b"$")?;
    let start = body.iter().position(|&b| b == b'\n')? + 1;
    let payload = body.get(start..body.len().checked_sub(2)?)?;
    (payload.first() == Some(&7)).then_some(payload)
}

/// Whether sieved's DUMP reply holds what RedisBloom's does.
fn same_dump(redisbloom: &[u8], sieved: &[u8]) -> bool {
    match (module_payload(redisbloom), module_payload(sieved)) {
        (Some(theirs), Some(ours)) => module_fields(theirs) == module_fields(ours),
        _ => {
            // Not a module value: the same bytes but for the footer's RDB version and CRC.
            let strip = |reply: &[u8]| reply[..reply.len().saturating_sub(12)].to_vec();
            redisbloom.len() == sieved.len() && strip(redisbloom) == strip(sieved)
        }
    }
}

/// Replays a transcript against a fresh sieved: every reply RedisBloom's, DUMP's as above.
fn assert_replays(name: &str) {
    let Some((protocol, exchanges)) = read_transcript(name) else {
        return;
    };
    assert!(exchanges.len() > 6000, "{name}: {} lines", exchanges.len());
    let server = TestServer::start();
    let mut client = RawClient::connect(server.addr);
    if protocol == 3 {
        client.hello3();
    }
    let (mut mismatches, mut dumps) = (Vec::new(), 0);
    for exchange in &exchanges {
        let args: Vec<&[u8]> = exchange.command.iter().map(Vec::as_slice).collect();
        let reply = client.command(&args);
        let is_dump = args[0].eq_ignore_ascii_case(b"DUMP");
        dumps += usize::from(is_dump && module_payload(&reply).is_some());
        if reply != exchange.reply && !(is_dump && same_dump(&exchange.reply, &reply)) {
            mismatches.push(format!(
                "line {}: {}\n  RedisBloom: {}\n  sieved:     {}",
                exchange.line,
                escape(&args.join(&b' ')[..]),
                escape(&exchange.reply[..exchange.reply.len().min(300)]),
                escape(&reply[..reply.len().min(300)]),
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} replies differ from RedisBloom's in {name}; the first:\n{}",
        mismatches.len(),
        exchanges.len(),
        mismatches[..mismatches.len().min(5)].join("\n")
    );
    assert!(dumps >= 50, "{name}: only {dumps} sketch dumps compared");
}

#[test]
fn count_min_resp2_transcript_replays() {
    assert_replays("cms-resp2.jsonl");
}

#[test]
fn count_min_resp3_transcript_replays() {
    assert_replays("cms-resp3.jsonl");
}

#[test]
fn top_k_resp2_transcript_replays() {
    assert_replays("topk-resp2.jsonl");
}

#[test]
fn top_k_resp3_transcript_replays() {
    assert_replays("topk-resp3.jsonl");
}

#[test]
fn t_digest_resp2_transcript_replays() {
    assert_replays("tdigest-resp2.jsonl");
}

#[test]
fn t_digest_resp3_transcript_replays() {
    assert_replays("tdigest-resp3.jsonl");
}

/// Writes to each sketch type, Top-K's with many colliding adds (so many decay draws), and a
/// t-digest merged from others.
fn sketch_writes(client: &mut RawClient) {
    let ok = |reply: Vec<u8>| assert!(reply == b"+OK\r\n", "{}", escape(&reply));
    let mut fresh = |args: &[&str]| {
        let reply = client.cmd(args);
        assert!(
            reply == b"+OK\r\n" || reply.starts_with(b"-") && reply.ends_with(b"exists\r\n"),
            "{}",
            escape(&reply)
        );
    };
    fresh(&["CMS.INITBYDIM", "cms:a", "200", "5"]);
    fresh(&["CMS.INITBYPROB", "cms:b", "0.01", "0.01"]);
    fresh(&["TOPK.RESERVE", "topk:hosts", "5", "8", "4", "0.9"]);
    fresh(&["TOPK.RESERVE", "topk:default", "3"]);
    fresh(&["TDIGEST.CREATE", "td:a", "COMPRESSION", "50"]);
    fresh(&["TDIGEST.CREATE", "td:b"]);
    for i in 0..600u32 {
        let host = format!("host-{}", (i * i + 7 * i) % 37);
        client.cmd(&["CMS.INCRBY", "cms:a", &host, &(i % 5 + 1).to_string()]);
        client.cmd(&["TOPK.ADD", "topk:hosts", &host, &format!("h{}", i % 11)]);
        client.cmd(&["TOPK.INCRBY", "topk:default", &host, &(i % 3).to_string()]);
        let latency = f64::from((i * 7919) % 1000) / 7.0;
        client.cmd(&[
            "TDIGEST.ADD",
            "td:a",
            &latency.to_string(),
            &(latency * 2.0).to_string(),
        ]);
        client.cmd(&["TDIGEST.ADD", "td:b", &(i % 17).to_string()]);
    }
    client.cmd(&["CMS.INITBYDIM", "cms:c", "200", "5"]);
    ok(client.cmd(&[
        "CMS.MERGE",
        "cms:c",
        "2",
        "cms:a",
        "cms:a",
        "WEIGHTS",
        "2",
        "3",
    ]));
    ok(client.cmd(&["TDIGEST.MERGE", "td:m", "2", "td:a", "td:b"]));
}

/// Everything each sketch answers, and its DUMP (which for a Top-K is its buckets and heap).
/// DUMP comes first: it compresses a t-digest, as a save does, so that what INFO shows next
/// is the same before a save and after a load.
fn sketch_state(client: &mut RawClient) -> Vec<u8> {
    let mut state = Vec::new();
    for key in [
        "cms:a",
        "cms:b",
        "cms:c",
        "topk:hosts",
        "topk:default",
        "td:a",
        "td:b",
        "td:m",
    ] {
        state.extend(client.cmd(&["TYPE", key]));
        state.extend(client.cmd(&["DUMP", key]));
    }
    for key in ["cms:a", "cms:b", "cms:c"] {
        state.extend(client.cmd(&["CMS.INFO", key]));
        state.extend(client.cmd(&["CMS.QUERY", key, "host-1", "host-7", "nobody"]));
    }
    for key in ["topk:hosts", "topk:default"] {
        state.extend(client.cmd(&["TOPK.LIST", key, "WITHCOUNT"]));
        state.extend(client.cmd(&["TOPK.INFO", key]));
    }
    for key in ["td:a", "td:b", "td:m"] {
        state.extend(client.cmd(&["TDIGEST.INFO", key]));
    }
    for key in ["td:a", "td:m"] {
        state.extend(client.cmd(&["TDIGEST.QUANTILE", key, "0", "0.5", "0.99", "1"]));
        state.extend(client.cmd(&["TDIGEST.CDF", key, "10", "100"]));
    }
    state
}

/// The log (with a compaction), and a snapshot, bring every sketch back as it was, Top-K's
/// decay generator included: the second round of adds after a restart draws the same numbers.
#[test]
fn sketches_survive_restarts() {
    check_writes_survive_restarts("sketches", sketch_writes, sketch_state);
}

#[test]
fn a_replica_holds_the_same_sketches() {
    let _pair = check_replica_holds_the_same("sketches", sketch_writes, sketch_state);
}

/// RedisBloom's own DUMP payloads of each type restore into sieved and answer as RedisBloom's
/// did; MEMORY USAGE and COPY see them as values like any other.
#[test]
fn redisbloom_payloads_restore() {
    let Some((_, exchanges)) = read_transcript("topk-resp2.jsonl") else {
        return;
    };
    let server = TestServer::start();
    let mut client = RawClient::connect(server.addr);
    let mut restored = 0;
    for name in ["cms-resp2.jsonl", "topk-resp2.jsonl", "tdigest-resp2.jsonl"] {
        let (_, exchanges) = read_transcript(name).expect("the fixtures");
        for exchange in exchanges.iter().filter(|e| e.command[0] == b"DUMP") {
            let Some(payload) = module_payload(&exchange.reply) else {
                continue;
            };
            let key = format!("restored:{restored}");
            let reply = client.command(&[b"RESTORE", key.as_bytes(), b"0", payload]);
            assert_eq!(escape(&reply), "+OK\\r\\n", "{name} line {}", exchange.line);
            let ours = client.cmd(&["DUMP", &key]);
            assert!(
                same_dump(&exchange.reply, &ours),
                "{name} line {}",
                exchange.line
            );
            restored += 1;
        }
    }
    assert!(restored > 200, "only {restored} payloads restored");
    drop(exchanges);
    let copied = client.cmd(&["COPY", "restored:0", "copy"]);
    assert_eq!(copied, b":1\r\n");
    assert_eq!(
        client.cmd(&["DUMP", "copy"]),
        client.cmd(&["DUMP", "restored:0"])
    );
    let usage = client.cmd(&["MEMORY", "USAGE", "copy"]);
    assert!(usage.starts_with(b":"), "{}", escape(&usage));
}
