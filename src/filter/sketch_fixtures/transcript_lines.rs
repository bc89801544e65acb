//! The transcripts' lines: `{"cmd": [base64 args], "reply": base64 of the exact reply bytes}`,
//! after a first line naming the protocol (see the fixtures' README).

use std::path::PathBuf;

/// One command and RedisBloom's reply to it.
pub(super) struct Line {
    pub(super) args: Vec<Vec<u8>>,
    pub(super) reply: Vec<u8>,
}

/// The transcripts' directory: under `SIEVED_REDISBLOOM_FIXTURES` if set, else in
/// `shared/fixtures/redisbloom` beside the crate or one of its parents (a worktree's). None,
/// with a message, where they are not checked out, as in CI.
pub(super) fn transcripts_dir() -> Option<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let found = std::env::var_os("SIEVED_REDISBLOOM_FIXTURES")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            manifest
                .ancestors()
                .map(|dir| dir.join("shared/fixtures/redisbloom")),
        )
        .map(|dir| dir.join("transcripts"))
        .find(|dir| dir.is_dir());
    if found.is_none() {
        println!("skipped: RedisBloom's transcripts (SIEVED_REDISBLOOM_FIXTURES) not found");
    }
    found
}

/// The protocol (2 or 3) and the lines of a transcript file.
pub(super) fn read(file: &PathBuf) -> (u8, Vec<Line>) {
    let text = std::fs::read_to_string(file).expect("a transcript");
    let mut lines = text.lines();
    let header = lines.next().expect("a protocol line");
    let protocol = if header.contains("\"protocol\": 3") {
        3
    } else {
        assert!(header.contains("\"protocol\": 2"), "{header}");
        2
    };
    let parsed = lines
        .map(|line| {
            let strings = quoted_strings(line);
            // "cmd", the arguments, "reply", the reply.
            assert_eq!(strings.first().map(String::as_str), Some("cmd"), "{line}");
            let reply_at = strings.iter().position(|s| s == "reply").expect("a reply");
            Line {
                args: strings[1..reply_at].iter().map(|a| base64(a)).collect(),
                reply: base64(&strings[reply_at + 1]),
            }
        })
        .collect();
    (protocol, parsed)
}

/// The double-quoted strings of a JSON line without escapes (base64 and field names).
fn quoted_strings(line: &str) -> Vec<String> {
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut bytes = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let word = chunk
            .iter()
            .enumerate()
            .fold(0u32, |word, (i, &d)| word | u32::from(d) << (18 - 6 * i));
        bytes.extend_from_slice(&word.to_be_bytes()[1..chunk.len()]);
    }
    bytes
}

#[test]
fn decodes_base64() {
    assert_eq!(base64("K09LDQo="), b"+OK\r\n");
    assert_eq!(base64("YzExMTox"), b"c111:1");
    assert_eq!(base64("MC4wMQ=="), b"0.01");
}
