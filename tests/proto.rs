//! Runs the wire transcripts in proto-tests/ against the real server, in RESP2 and in RESP3.
//!
//! Transcript format, one directive per line:
//! ```text
//!   # ...                  a comment
//!   > WORDS...             a command, split like redis-cli splits a line ("..." with \xHH escapes)
//!   >> BYTES               raw request bytes, with \r \n \t \\ \xHH escapes, sent as they are
//!   >* N WORDS...          the command N times, pipelined, `{i}` replaced by 0..N; replies unchecked
//!   < BYTES                the next reply, exactly, in both protocols
//!   2< BYTES / 3< BYTES    the next reply under RESP2 / RESP3 only
//!   <?                     the next reply, whatever it is (still checked as valid RESP)
//!   <closed                the server has closed the connection
//! ```
//! Each file runs on a fresh server twice: as a RESP2 client, then as a client that sent HELLO 3.

mod common;

use common::{encode_command, escape, Resp, TestServer};
use std::path::Path;

fn unescape(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            match bytes[i + 1] {
                b'r' => out.push(b'\r'),
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'\\' => out.push(b'\\'),
                b'x' if i + 3 < bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 2..i + 4]).expect("hex");
                    out.push(u8::from_str_radix(hex, 16).expect("hex escape"));
                    i += 2;
                }
                other => panic!("unknown escape \\{}", other as char),
            }
            i += 2;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Splits a command line like redis-cli: whitespace-separated words, "double quotes" with
/// escapes, 'single quotes' verbatim.
fn split_words(line: &str) -> Vec<Vec<u8>> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return words;
        };
        let mut word = String::new();
        if first == '"' || first == '\'' {
            chars.next();
            for c in chars.by_ref() {
                if c == first {
                    break;
                }
                word.push(c);
            }
            words.push(if first == '"' {
                unescape(&word)
            } else {
                word.into_bytes()
            });
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                word.push(c);
                chars.next();
            }
            words.push(word.into_bytes());
        }
    }
}

enum Step {
    Send(Vec<u8>),
    Repeat(usize, String),
    Expect(Option<Resp>, Vec<u8>),
    ExpectAny,
    ExpectClosed,
}

fn parse_transcript(text: &str) -> Vec<(usize, Step)> {
    let mut steps = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let step = if line.trim().is_empty() || line.starts_with('#') {
            continue;
        } else if let Some(rest) = line.strip_prefix(">* ") {
            let (count, command) = rest.split_once(' ').expect("count and command");
            Step::Repeat(count.parse().expect("repeat count"), command.to_string())
        } else if let Some(rest) = line.strip_prefix(">> ") {
            Step::Send(unescape(rest))
        } else if let Some(rest) = line.strip_prefix("> ") {
            let words = split_words(rest);
            let args: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
            Step::Send(encode_command(&args))
        } else if line == "<?" {
            Step::ExpectAny
        } else if line == "<closed" {
            Step::ExpectClosed
        } else if let Some(rest) = line.strip_prefix("< ") {
            Step::Expect(None, unescape(rest))
        } else if let Some(rest) = line.strip_prefix("2< ") {
            Step::Expect(Some(Resp::Two), unescape(rest))
        } else if let Some(rest) = line.strip_prefix("3< ") {
            Step::Expect(Some(Resp::Three), unescape(rest))
        } else {
            panic!("line {line_no}: cannot read {line:?}");
        };
        steps.push((line_no, step));
    }
    steps
}

fn run_transcript(path: &Path, resp: Resp, failures: &mut Vec<String>) {
    let text = std::fs::read_to_string(path).expect("read transcript");
    let server = TestServer::start();
    let mut client = server.client();
    if resp == Resp::Three {
        client.hello3();
    }
    let name = path.file_name().unwrap().to_string_lossy();
    for (line, step) in parse_transcript(&text) {
        match step {
            Step::Send(bytes) => client.send(&bytes),
            Step::Repeat(count, command) => {
                let mut batch = Vec::new();
                for i in 0..count {
                    let words = split_words(&command.replace("{i}", &i.to_string()));
                    let args: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
                    batch.extend(encode_command(&args));
                }
                client.send(&batch);
                for _ in 0..count {
                    client.read_reply();
                }
            }
            Step::Expect(only, expected) => {
                if only.is_some_and(|only| only != resp) {
                    continue;
                }
                let got = client.read_reply();
                if got != expected {
                    failures.push(format!(
                        "{name}:{line} ({resp:?})\n  expected {}\n  got      {}",
                        escape(&expected),
                        escape(&got)
                    ));
                    return;
                }
            }
            Step::ExpectAny => {
                client.read_reply();
            }
            Step::ExpectClosed => {
                if !client.is_closed() {
                    failures.push(format!("{name}:{line} ({resp:?}): connection still open"));
                    return;
                }
            }
        }
    }
}

#[test]
fn transcripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("proto-tests");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("proto-tests directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no transcripts in {}", dir.display());
    let mut failures = Vec::new();
    for path in &paths {
        for resp in [Resp::Two, Resp::Three] {
            run_transcript(path, resp, &mut failures);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} transcript runs failed:\n{}",
        failures.len(),
        paths.len() * 2,
        failures.join("\n")
    );
}
