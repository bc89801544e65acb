//! Harnesses for fuzzing the JSON engine: each takes arbitrary bytes and must neither panic nor
//! allocate without bound. `path` compiles and evaluates the bytes as a path, `document`
//! parses them as a document and checks that its text reads back as the same document, and
//! `commands` runs them as a sequence of `JSON.*` commands over two keys.

use super::path::{Path, Query};
use super::text::{parse, ParseLimits};
use super::value::Value;
use super::{execute, to_text, Keyspace, Lookup};
use std::collections::HashMap;

/// What a fuzzed document may take.
const BUDGET: usize = 1 << 20;

/// The document paths are evaluated against: every kind of value, nested.
const SAMPLE: &str = r#"{"a":{"a":1,"b":[{"a":2},"x",null]},"c":[3,4.5,true,{"d":"e"}],
    "f":"g","h":{"":[],"i j":{"k":-1e-300}},"9":[[],[[0]]]}"#;

pub fn path(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let sample = parse(SAMPLE, ParseLimits::command(BUDGET)).expect("the sample parses");
    for candidate in [Path::new(&text).text().to_string(), text.to_string()] {
        if let Ok(query) = Query::compile(&candidate) {
            let plain = query.select(&sample);
            let located = query.select_paths(&sample);
            if let (Ok(plain), Ok(located)) = (&plain, &located) {
                // Paths are unescaped differently when tracked; the counts only differ then.
                if !candidate.contains('\\') {
                    assert_eq!(plain.len(), located.len(), "{candidate:?}");
                }
            }
            let _ = query.is_static();
        }
    }
}

pub fn document(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(value) = parse(text, ParseLimits::command(BUDGET)) else {
        return;
    };
    let printed = to_text(&value);
    let again = parse(
        std::str::from_utf8(&printed).expect("printed JSON is UTF-8"),
        ParseLimits::command(usize::MAX),
    )
    .expect("printed JSON parses");
    assert_eq!(to_text(&again), printed);
    let _ = value.memory();
}

#[derive(Default)]
struct Keys {
    documents: HashMap<Vec<u8>, Value>,
}

impl Keyspace for Keys {
    fn get(&self, key: &[u8]) -> Lookup<&Value> {
        match self.documents.get(key) {
            Some(v) => Lookup::Json(v),
            None if key == b"s" => Lookup::OtherType,
            None => Lookup::Missing,
        }
    }

    fn get_mut(&mut self, key: &[u8]) -> Lookup<&mut Value> {
        match self.documents.get_mut(key) {
            Some(v) => Lookup::Json(v),
            None if key == b"s" => Lookup::OtherType,
            None => Lookup::Missing,
        }
    }

    fn create(&mut self, key: &[u8], document: Value) {
        self.documents.insert(key.to_vec(), document);
    }

    fn delete(&mut self, key: &[u8]) {
        self.documents.remove(key);
    }

    fn document_budget(&self) -> usize {
        BUDGET
    }
}

const COMMANDS: [&str; 25] = [
    "json.set",
    "json.get",
    "json.mget",
    "json.mset",
    "json.merge",
    "json.del",
    "json.type",
    "json.numincrby",
    "json.nummultby",
    "json.numpowby",
    "json.toggle",
    "json.strappend",
    "json.strlen",
    "json.arrappend",
    "json.arrindex",
    "json.arrinsert",
    "json.arrlen",
    "json.arrpop",
    "json.arrtrim",
    "json.objkeys",
    "json.objlen",
    "json.clear",
    "json.debug",
    "json.resp",
    "json.forget",
];

/// Commands separated by newlines; in each, the first byte picks the command (and the
/// protocol), the rest are arguments separated by NUL bytes.
pub fn commands(data: &[u8]) {
    let mut keys = Keys::default();
    for line in data.split(|&b| b == b'\n') {
        let Some((&pick, rest)) = line.split_first() else {
            continue;
        };
        let name = COMMANDS[usize::from(pick) % COMMANDS.len()];
        let resp3 = pick >= 128;
        let args: Vec<&[u8]> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(|&b| b == 0).collect()
        };
        execute(name, &args, &mut keys, resp3);
        for document in keys.documents.values() {
            let text = to_text(document);
            let again = parse(
                std::str::from_utf8(&text).expect("printed JSON is UTF-8"),
                ParseLimits::stored(usize::MAX),
            )
            .expect("a stored document prints as JSON that parses");
            assert_eq!(to_text(&again), text);
            assert!(document.nesting() <= super::MAX_NESTING);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn piece() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            Just("$"),
            Just("."),
            Just(".."),
            Just("*"),
            Just("["),
            Just("]"),
            Just("'"),
            Just("\""),
            Just("\\"),
            Just("?"),
            Just("("),
            Just(")"),
            Just("@"),
            Just("a"),
            Just("b"),
            Just("9"),
            Just("-1"),
            Just("0"),
            Just(":"),
            Just(","),
            Just(" "),
            Just("=="),
            Just("!="),
            Just("<"),
            Just(">="),
            Just("=~"),
            Just("&&"),
            Just("||"),
            Just("true"),
            Just("null"),
            Just("1.5"),
            Just("é"),
            Just("\"^a.*\""),
        ]
    }

    fn argument() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(piece(), 0..8).prop_map(|p| p.concat().into_bytes()),
            prop_oneof![
                Just("$"),
                Just("."),
                Just("$..*"),
                Just("$.a"),
                Just("a"),
                Just("$[*]"),
                Just("{\"a\":[1,{\"b\":\"x\"}],\"c\":true}"),
                Just("[1,2,3]"),
                Just("\"s\""),
                Just("7"),
                Just("-2.5"),
                Just("1e308"),
                Just("NX"),
                Just("XX"),
                Just("FORMAT"),
                Just("EXPAND"),
                Just("INDENT"),
                Just("MEMORY"),
                Just("k"),
                Just("s"),
                Just("{\"a\":null}"),
                Just("0"),
                Just("-1"),
                Just("9223372036854775807"),
            ]
            .prop_map(|s| s.as_bytes().to_vec()),
            proptest::collection::vec(any::<u8>(), 0..6),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn paths_never_panic(parts in proptest::collection::vec(piece(), 0..16)) {
            path(parts.concat().as_bytes());
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            path(&data);
            document(&data);
            commands(&data);
        }

        #[test]
        fn command_sequences_never_panic(
            lines in proptest::collection::vec(
                (any::<u8>(), proptest::collection::vec(argument(), 0..6)),
                1..12,
            )
        ) {
            let mut data = Vec::new();
            for (pick, args) in lines {
                data.push(pick);
                // The key comes first; most commands then want a path.
                let mut args = args;
                args.insert(0, b"k".to_vec());
                data.extend(args.join(&0u8));
                data.push(b'\n');
            }
            commands(&data);
        }
    }
}
