//! What a real RedisBloom 8.8 wrote (`shared/fixtures/redisbloom`, see its README.md): where the
//! files are, and its recorded transcripts of BF.* and CF.* commands, replayed against sieved.

use super::{escape, missing, RawClient, TestServer};
use std::path::PathBuf;

/// The fixtures' directory. They live outside the repository: `SIEVED_REDISBLOOM_FIXTURES` names
/// it, else the `shared/` beside the checkout (or beside a worktree some levels further down) is
/// used. When they are missing, skips (a notice) or, under CI, fails.
pub fn fixtures() -> Option<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let found = std::env::var_os("SIEVED_REDISBLOOM_FIXTURES")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            manifest
                .ancestors()
                .map(|dir| dir.join("shared/fixtures/redisbloom")),
        )
        .find(|dir| dir.join("MANIFEST.json").is_file());
    if found.is_none() {
        missing("the RedisBloom fixtures (SIEVED_REDISBLOOM_FIXTURES)");
    }
    found
}

pub fn decode_base64(text: &str) -> Vec<u8> {
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

/// The string literals of a JSON line written by the recorder (base64 and the fixtures' names
/// need no escapes).
pub fn json_strings(json: &str) -> Vec<&str> {
    json.split('"').skip(1).step_by(2).collect()
}

/// One recorded command and RedisBloom's reply, with the transcript line it came from.
pub struct Exchange {
    pub line: usize,
    pub command: Vec<Vec<u8>>,
    pub reply: Vec<u8>,
}

/// A transcript (`transcripts/<name>`): its protocol (its first line) and its exchanges; None
/// when the fixtures are missing.
pub fn read_transcript(name: &str) -> Option<(u8, Vec<Exchange>)> {
    let path = fixtures()?.join("transcripts").join(name);
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
                command: json_strings(command)
                    .into_iter()
                    .map(decode_base64)
                    .collect(),
                reply: decode_base64(json_strings(reply)[0]),
            }
        })
        .collect();
    Some((protocol, exchanges))
}

/// Replays a transcript against a fresh sieved and asserts that every reply is RedisBloom's,
/// byte for byte.
pub fn assert_transcript_replays(name: &str) {
    let Some((protocol, exchanges)) = read_transcript(name) else {
        return;
    };
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
