use super::*;
use crate::json::{parse, ParseLimits};
use std::collections::HashMap;

#[derive(Default)]
struct Keys(HashMap<Vec<u8>, Value>);

impl Keyspace for Keys {
    fn get(&self, key: &[u8]) -> Lookup<&Value> {
        self.0.get(key).map_or(Lookup::Missing, Lookup::Json)
    }
    fn get_mut(&mut self, key: &[u8]) -> Lookup<&mut Value> {
        self.0.get_mut(key).map_or(Lookup::Missing, Lookup::Json)
    }
    fn create(&mut self, key: &[u8], document: Value) {
        self.0.insert(key.to_vec(), document);
    }
    fn delete(&mut self, key: &[u8]) {
        self.0.remove(key);
    }
}

fn run(keys: &mut Keys, command: &[&str]) -> Answer {
    let args: Vec<&[u8]> = command[1..].iter().map(|a| a.as_bytes()).collect();
    execute(command[0], &args, keys, false).answer
}

#[test]
fn the_deepest_documents_fit_a_small_stack() {
    // Test threads have 2 MiB of stack, as tokio's workers do.
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let mut keys = Keys::default();
            let level = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
            assert_eq!(
                run(&mut keys, &["json.set", "k", "$", &level(127)]),
                Answer::Ok
            );
            let mut depth = 127;
            while depth + 127 <= MAX_NESTING {
                let path = format!("${}", "[0]".repeat(depth - 1));
                assert_eq!(
                    run(&mut keys, &["json.arrappend", "k", &path, &level(127)]),
                    Answer::Array(vec![Answer::Integer(1)])
                );
                depth += 127;
            }
            let path = format!("${}", "[0]".repeat(depth - 1));
            assert_eq!(
                run(&mut keys, &["json.arrappend", "k", &path, &level(127)]),
                Answer::Error(TOO_DEEP.to_string())
            );
            let doc = keys.0[&b"k"[..]].clone();
            assert_eq!(doc.nesting(), depth);
            for command in [
                &["json.get", "k"][..],
                &["json.get", "k", "INDENT", " ", "NEWLINE", "\n", "$..*"],
                &["json.debug", "memory", "k"],
                &["json.type", "k", "$..[?(@==@)]"],
                &["json.arrlen", "k", "$..*"],
                &["json.resp", "k"],
            ] {
                assert!(!run(&mut keys, command).is_error(), "{command:?}");
            }
            let text = to_text(&doc);
            let stored = super::super::rdb::load(3, &super::super::rdb::save(&doc), usize::MAX);
            assert_eq!(stored.map(|d| to_text(&d)), Ok(text));
            assert_eq!(
                run(&mut keys, &["json.del", "k", "$[0][0]"]),
                Answer::Integer(1)
            );
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn number_writes_replay_without_arithmetic() {
    let mut keys = Keys::default();
    run(
        &mut keys,
        &["json.set", "k", "$", r#"{"a":[1,{"b":0.1}],"c":2}"#],
    );
    let args: Vec<&[u8]> = vec![b"k", b"$..*", b"0.2"];
    let outcome = execute("JSON.NUMINCRBY", &args, &mut keys, false);
    assert_eq!(
        outcome.answer,
        Answer::bulk(r#"[null,2.2,1.2,null,0.30000000000000004]"#)
    );
    assert_eq!(outcome.events, vec![(b"k".to_vec(), "json.numincrby")]);
    let mut replica = parse(
        r#"{"a":[1,{"b":0.1}],"c":2}"#,
        ParseLimits::command(usize::MAX),
    )
    .unwrap();
    for write in &outcome.numbers {
        assert!(set_number(&mut replica, &write.path, write.value));
    }
    assert_eq!(to_text(&replica), to_text(&keys.0[&b"k"[..]]));
}

#[test]
fn integers_parse_as_redis_parses_them() {
    for (text, expected) in [
        ("0", Some(0)),
        ("-0", None),
        ("01", None),
        ("+1", None),
        (" 1", None),
        ("-9223372036854775808", Some(i64::MIN)),
        ("9223372036854775807", Some(i64::MAX)),
        ("9223372036854775808", None),
        ("", None),
        ("-", None),
    ] {
        assert_eq!(parse_integer(text.as_bytes()), expected, "{text}");
    }
}

#[test]
fn mutation_order_is_deepest_and_highest_first() {
    let p = |s: &str| s.split('.').map(String::from).collect::<Vec<_>>();
    let mut paths = vec![p("a"), p("a.0"), p("a.1"), p("b")];
    paths.sort_by(|x, y| mutation_order(x, y));
    assert_eq!(paths, vec![p("a.1"), p("a.0"), p("a"), p("b")]);
    let mut nested = vec![p("a"), p("a.b"), p("c")];
    prepare_for_update(&mut nested);
    assert_eq!(nested, vec![p("a"), p("c")]);
}
