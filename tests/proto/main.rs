//! Runs the wire transcripts in proto-tests/ against the real server, in RESP2 and in RESP3: each
//! file twice, as two named tests (`bf-merge::resp2`, `bf-merge::resp3`), so that a failure names
//! the file and `cargo test --test proto bf-merge` runs one. libtest has no tests made at run
//! time, so this binary has its own harness (libtest-mimic, `harness = false` in Cargo.toml).
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
//!   reconnect              open a new connection (sending HELLO 3 again in the RESP3 run)
//! ```
//! Each run has a fresh server: as a RESP2 client, or as a client that sent HELLO 3.

// The integration tests' support; this binary uses only the server and the client of it.
#[allow(dead_code, unused_imports)]
#[path = "../it/support/mod.rs"]
mod support;

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};
use support::{encode_command, escape, Resp, TestServer};

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
    /// A command that switches the protocol if it succeeds (HELLO 2|3, RESET).
    SendSwitching(Vec<u8>, Resp),
    Repeat(usize, String),
    Expect(Option<Resp>, Vec<u8>),
    ExpectAny,
    ExpectClosed,
    Reconnect,
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
            let bytes = encode_command(&args);
            let name = words[0].to_ascii_uppercase();
            match (name.as_slice(), words.get(1).map(Vec::as_slice)) {
                (b"HELLO", Some(b"2")) => Step::SendSwitching(bytes, Resp::Two),
                (b"HELLO", Some(b"3")) => Step::SendSwitching(bytes, Resp::Three),
                (b"RESET", _) => Step::SendSwitching(bytes, Resp::Two),
                _ => Step::Send(bytes),
            }
        } else if line == "<?" {
            Step::ExpectAny
        } else if line == "reconnect" {
            Step::Reconnect
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

fn run_transcript(path: &Path, resp: Resp) -> Result<(), Failed> {
    let text = std::fs::read_to_string(path).expect("read transcript");
    let server = TestServer::start();
    let mut client = server.client();
    if resp == Resp::Three {
        client.hello3();
    }
    let name = path.file_name().unwrap().to_string_lossy();
    // The protocol to fall back to if a protocol-switching command fails.
    let mut revert_to = None;
    for (line, step) in parse_transcript(&text) {
        match step {
            Step::Send(bytes) => client.send(&bytes),
            Step::SendSwitching(bytes, to) => {
                revert_to = Some(client.resp);
                client.resp = to;
                client.send(&bytes);
            }
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
                if let Some(previous) = revert_to.take() {
                    if got.starts_with(b"-") {
                        client.resp = previous;
                    }
                }
                if got != expected {
                    return Err(format!(
                        "{name}:{line} ({resp:?})\n  expected {}\n  got      {}",
                        escape(&expected),
                        escape(&got)
                    )
                    .into());
                }
            }
            Step::ExpectAny => {
                client.read_reply();
            }
            Step::Reconnect => {
                client = server.client();
                if resp == Resp::Three {
                    client.hello3();
                }
            }
            Step::ExpectClosed => {
                if !client.is_closed() {
                    return Err(format!("{name}:{line} ({resp:?}): connection still open").into());
                }
            }
        }
    }
    Ok(())
}

/// The transcripts, in order of name.
fn transcripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("proto-tests");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("proto-tests directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no transcripts in {}", dir.display());
    paths
}

fn main() {
    let arguments = Arguments::from_args();
    let mut trials = Vec::new();
    for path in transcripts() {
        let stem = path.file_stem().expect("a file name").to_string_lossy();
        for (resp, run) in [(Resp::Two, "resp2"), (Resp::Three, "resp3")] {
            let path = path.clone();
            trials.push(Trial::test(format!("{stem}::{run}"), move || {
                run_transcript(&path, resp)
            }));
        }
    }
    libtest_mimic::run(&arguments, trials).exit();
}
