//! What a real RedisBloom 8.8 wrote (`shared/fixtures/redisbloom`, see its README.md): where the
//! files are, and its recorded transcripts of BF.* and CF.* commands, replayed against sieved.

use super::{escape, missing, RawClient, TestServer};
use std::path::{Path, PathBuf};

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

/// One Bloom filter of the fixtures (MANIFEST.json): its key, and the items added to it, named
/// `prefix` and a number below `count`.
pub struct Filter {
    pub key: &'static str,
    pub prefix: &'static str,
    pub count: usize,
}

pub const FILTERS: [Filter; 6] = [
    Filter {
        key: "bf:small",
        prefix: "small:",
        count: 500,
    },
    Filter {
        key: "bf:scaled",
        prefix: "scaled:",
        count: 10_000,
    },
    Filter {
        key: "bf:nonscaling",
        prefix: "nonscaling:",
        count: 5000,
    },
    Filter {
        key: "bf:auto",
        prefix: "auto:",
        count: 3000,
    },
    Filter {
        key: "bf:big",
        prefix: "big:",
        count: 200_000,
    },
    Filter {
        key: "bf:exp4",
        prefix: "exp4:",
        count: 20_000,
    },
];

/// The 0/1 answers of BF.MEXISTS for `items`, asked in batches.
pub fn mexists(client: &mut RawClient, key: &str, items: &[String]) -> String {
    let mut answers = String::with_capacity(items.len());
    for batch in items.chunks(1000) {
        let mut args: Vec<&[u8]> = vec![b"BF.MEXISTS", key.as_bytes()];
        args.extend(batch.iter().map(|item| item.as_bytes()));
        let reply = client.command(&args);
        let text = String::from_utf8(reply).expect("text");
        let mut lines = text.split("\r\n");
        assert_eq!(lines.next(), Some(format!("*{}", batch.len()).as_str()));
        answers.extend(lines.filter(|l| !l.is_empty()).map(|l| match l {
            ":1" => '1',
            ":0" => '0',
            other => panic!("{key}: BF.MEXISTS answered {other}"),
        }));
    }
    answers
}

/// The fixtures' Bloom filter answers as RedisBloom's did: every item added is there, and the
/// probes for absent items get RedisBloom's answers (`bf_<name>.absent-answers.txt` in
/// `fixtures`).
pub fn check_filter(client: &mut RawClient, fixtures: &Path, filter: &Filter) {
    let key = filter.key;
    let added: Vec<String> = (0..filter.count)
        .map(|i| format!("{}{i}", filter.prefix))
        .collect();
    assert!(
        !mexists(client, key, &added).contains('0'),
        "{key}: an added item is missing"
    );
    let name = key.trim_start_matches("bf:");
    let expected = std::fs::read_to_string(fixtures.join(format!("bf_{name}.absent-answers.txt")))
        .expect("absent answers");
    let absent: Vec<String> = (0..20_000).map(|i| format!("absent:{key}:{i}")).collect();
    assert!(
        mexists(client, key, &absent) == expected.trim(),
        "{key}: absent probes differ from RedisBloom's"
    );
}
