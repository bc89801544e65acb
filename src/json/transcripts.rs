//! Replays the transcripts recorded from RedisJSON 2.8.19 on Redis 7.4.1
//! (`shared/fixtures/redisjson/transcripts`, see its README) through the engine: each line's
//! command goes to `execute` over a small model of the keyspace, its answer is encoded as
//! RESP2 or RESP3, and the bytes must equal the recorded reply, except for `JSON.GET` with
//! several paths, whose object RedisJSON builds in a hash map: those compare as JSON objects
//! whose members may come in any order. The few other commands in the transcripts (SET, HSET,
//! RPUSH, TYPE, EXISTS, DEL, GET, COPY) are modelled just enough for their replies and for the
//! types and existence of keys.

use super::{execute, parse, redis_double, Answer, Keyspace, Lookup, ParseLimits, Value};
use std::collections::HashMap;
use std::path::PathBuf;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

enum Entry {
    Json(Value),
    String(Vec<u8>),
    Hash(Vec<Vec<u8>>),
    List(usize),
}

#[derive(Default)]
struct Model {
    keys: HashMap<Vec<u8>, Entry>,
}

impl Keyspace for Model {
    fn get(&self, key: &[u8]) -> Lookup<&Value> {
        match self.keys.get(key) {
            None => Lookup::Missing,
            Some(Entry::Json(v)) => Lookup::Json(v),
            Some(_) => Lookup::OtherType,
        }
    }

    fn get_mut(&mut self, key: &[u8]) -> Lookup<&mut Value> {
        match self.keys.get_mut(key) {
            None => Lookup::Missing,
            Some(Entry::Json(v)) => Lookup::Json(v),
            Some(_) => Lookup::OtherType,
        }
    }

    fn create(&mut self, key: &[u8], document: Value) {
        self.keys.insert(key.to_vec(), Entry::Json(document));
    }

    fn delete(&mut self, key: &[u8]) {
        self.keys.remove(key);
    }
}

impl Model {
    /// The non-JSON commands, crudely.
    fn generic(&mut self, name: &str, args: &[Vec<u8>]) -> Answer {
        let count = |n: usize| Answer::Integer(n as i64);
        match name {
            "SET" => {
                self.keys
                    .insert(args[0].clone(), Entry::String(args[1].clone()));
                Answer::Ok
            }
            "GET" => match self.keys.get(&args[0]) {
                None => Answer::Nil,
                Some(Entry::String(s)) => Answer::Bulk(s.clone()),
                Some(_) => Answer::Error(WRONGTYPE.to_string()),
            },
            "HSET" => {
                let entry = self
                    .keys
                    .entry(args[0].clone())
                    .or_insert_with(|| Entry::Hash(Vec::new()));
                let Entry::Hash(fields) = entry else {
                    return Answer::Error(WRONGTYPE.to_string());
                };
                let mut added = 0;
                for pair in args[1..].chunks(2) {
                    if !fields.contains(&pair[0]) {
                        fields.push(pair[0].clone());
                        added += 1;
                    }
                }
                count(added)
            }
            "RPUSH" => {
                let entry = self.keys.entry(args[0].clone()).or_insert(Entry::List(0));
                let Entry::List(len) = entry else {
                    return Answer::Error(WRONGTYPE.to_string());
                };
                *len += args.len() - 1;
                count(*len)
            }
            "TYPE" => Answer::Simple(match self.keys.get(&args[0]) {
                None => "none",
                Some(Entry::Json(_)) => "ReJSON-RL",
                Some(Entry::String(_)) => "string",
                Some(Entry::Hash(_)) => "hash",
                Some(Entry::List(_)) => "list",
            }),
            "EXISTS" => count(args.iter().filter(|k| self.keys.contains_key(*k)).count()),
            "DEL" => count(
                args.iter()
                    .filter(|k| self.keys.remove(*k).is_some())
                    .count(),
            ),
            "COPY" => {
                if args[0] == args[1] {
                    return Answer::Error(
                        "ERR source and destination objects are the same".to_string(),
                    );
                }
                if self.keys.contains_key(&args[1]) {
                    return count(0);
                }
                let copy = match self.keys.get(&args[0]) {
                    None => return count(0),
                    Some(Entry::Json(v)) => Entry::Json(v.clone()),
                    Some(Entry::String(s)) => Entry::String(s.clone()),
                    Some(Entry::Hash(f)) => Entry::Hash(f.clone()),
                    Some(Entry::List(n)) => Entry::List(*n),
                };
                self.keys.insert(args[1].clone(), copy);
                count(1)
            }
            _ => panic!("the transcripts use no {name}"),
        }
    }
}

fn encode(answer: &Answer, resp3: bool, out: &mut Vec<u8>) {
    let line = |out: &mut Vec<u8>, prefix: &str, text: &[u8]| {
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(text);
        out.extend_from_slice(b"\r\n");
    };
    let bulk = |out: &mut Vec<u8>, data: &[u8]| {
        line(out, "$", data.len().to_string().as_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
    };
    match answer {
        Answer::Ok => out.extend_from_slice(b"+OK\r\n"),
        Answer::Simple(s) => line(out, "+", s.as_bytes()),
        Answer::Bulk(data) => bulk(out, data),
        Answer::Integer(i) => line(out, ":", i.to_string().as_bytes()),
        Answer::Double(d) if resp3 => line(out, ",", redis_double(*d).as_bytes()),
        Answer::Double(d) => bulk(out, redis_double(*d).as_bytes()),
        Answer::Bool(b) if resp3 => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Answer::Bool(b) => out.extend_from_slice(if *b { b":1\r\n" } else { b":0\r\n" }),
        Answer::Nil if resp3 => out.extend_from_slice(b"_\r\n"),
        Answer::Nil => out.extend_from_slice(b"$-1\r\n"),
        Answer::Array(items) => {
            line(out, "*", items.len().to_string().as_bytes());
            for item in items {
                encode(item, resp3, out);
            }
        }
        Answer::Map(pairs) => {
            if resp3 {
                line(out, "%", pairs.len().to_string().as_bytes());
            } else {
                line(out, "*", (pairs.len() * 2).to_string().as_bytes());
            }
            for (k, v) in pairs {
                bulk(out, k);
                encode(v, resp3, out);
            }
        }
        Answer::Error(message) => line(out, "-", message.as_bytes()),
    }
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
        out.extend_from_slice(&word.to_be_bytes()[1..group.len()]);
    }
    out
}

/// The command and reply of a transcript line (`{"cmd": [...], "reply": "..."}`, base64).
fn exchange(line: &str) -> (Vec<Vec<u8>>, Vec<u8>) {
    let strings: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
    assert_eq!(strings[0], "cmd", "{line}");
    let reply_at = strings.iter().position(|s| *s == "reply").expect("a reply");
    let command = strings[1..reply_at]
        .iter()
        .map(|s| decode_base64(s))
        .collect();
    (command, decode_base64(strings[reply_at + 1]))
}

/// `JSON.GET` with two or more distinct paths and no typed format: RedisJSON's object
/// members come in hash-map order.
fn unordered_reply(command: &[Vec<u8>]) -> bool {
    if !command[0].eq_ignore_ascii_case(b"JSON.GET") {
        return false;
    }
    let mut paths: Vec<&[u8]> = Vec::new();
    let mut args = command[2..].iter();
    while let Some(arg) = args.next() {
        let word = arg.to_ascii_uppercase();
        if arg.len() <= 8 && matches!(&word[..], b"INDENT" | b"NEWLINE" | b"SPACE" | b"FORMAT") {
            if word == b"FORMAT" && args.next().is_some_and(|f| f.starts_with(b"EXPAND")) {
                return false;
            }
            if word != b"FORMAT" {
                args.next();
            }
        } else if (arg.len() > 8 || word != b"NOESCAPE") && !paths.contains(&&arg[..]) {
            paths.push(arg);
        }
    }
    paths.len() >= 2
}

/// Both bulk strings of the same length holding JSON objects with the same members.
fn same_members(ours: &[u8], theirs: &[u8]) -> bool {
    let body = |reply: &[u8]| -> Option<Value> {
        let text = reply.strip_suffix(b"\r\n")?;
        let start = text.iter().position(|&b| b == b'\n')? + 1;
        parse(
            std::str::from_utf8(&text[start..]).ok()?,
            ParseLimits::command(usize::MAX),
        )
        .ok()
    };
    if ours.len() != theirs.len() {
        return false;
    }
    match (body(ours), body(theirs)) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            a.len() == b.len()
                && a.iter().all(|(k, v)| {
                    b.get(k)
                        .is_some_and(|w| super::to_text(v) == super::to_text(w))
                })
        }
        _ => false,
    }
}

fn fixtures() -> Option<PathBuf> {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|dir| dir.join("shared/fixtures/redisjson/transcripts"))
        .find(|dir| dir.is_dir())
}

struct FileResult {
    name: String,
    lines: usize,
    matched: usize,
    /// Lines that matched only as JSON objects (members in another order).
    unordered: usize,
    mismatches: Vec<String>,
}

fn replay(path: &std::path::Path) -> FileResult {
    let text = std::fs::read_to_string(path).expect("a readable transcript");
    let mut lines = text.lines();
    let header = lines.next().expect("a header line");
    let resp3 = header.contains("\"protocol\": 3");
    let mut model = Model::default();
    let mut result = FileResult {
        name: path.file_name().unwrap().to_string_lossy().into_owned(),
        lines: 0,
        matched: 0,
        unordered: 0,
        mismatches: Vec::new(),
    };
    for (number, line) in lines.enumerate() {
        let (command, expected) = exchange(line);
        let name = String::from_utf8_lossy(&command[0]).to_ascii_uppercase();
        let answer = if name.starts_with("JSON.") {
            let args: Vec<&[u8]> = command[1..].iter().map(Vec::as_slice).collect();
            execute(&name, &args, &mut model, resp3).answer
        } else {
            model.generic(&name, &command[1..])
        };
        let mut ours = Vec::new();
        encode(&answer, resp3, &mut ours);
        result.lines += 1;
        let unordered =
            ours != expected && unordered_reply(&command) && same_members(&ours, &expected);
        if ours == expected || unordered {
            result.matched += 1;
            result.unordered += usize::from(unordered);
        } else {
            let shown: Vec<String> = command
                .iter()
                .map(|a| format!("{:?}", String::from_utf8_lossy(a)))
                .collect();
            result.mismatches.push(format!(
                "line {}: {}\n    expected {:?}\n    got      {:?}",
                number + 2,
                shown.join(" "),
                String::from_utf8_lossy(&expected),
                String::from_utf8_lossy(&ours)
            ));
        }
    }
    result
}

#[test]
fn every_transcript_line_replays_byte_for_byte() {
    let Some(dir) = fixtures() else {
        eprintln!("skipped: shared/fixtures/redisjson/transcripts not found above the crate");
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("a readable directory")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no transcripts in {}", dir.display());
    let mut failed = 0;
    for file in &files {
        let result = replay(file);
        eprintln!(
            "{}: {}/{} lines match ({} as objects in another member order)",
            result.name, result.matched, result.lines, result.unordered
        );
        for mismatch in result.mismatches.iter().take(20) {
            eprintln!("  {mismatch}");
        }
        failed += result.lines - result.matched;
    }
    assert_eq!(failed, 0, "transcript lines that differ");
}
