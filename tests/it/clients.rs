//! The server driven by a real client library: the `redis` crate (sync API) and its Bloom helpers,
//! over RESP2 and over RESP3 (the crate sends HELLO 3 when the URL asks for `protocol=resp3`).
//! Each check runs on a fresh server once per protocol.

use crate::support::TestServer;
use redis::bloom::{
    BloomFilterDumpChunk, BloomFilterDumpIterator, BloomFilterInfoType, BloomFilterInsertOptions,
    BloomFilterScalingOptions,
};
use redis::{Connection, ConnectionLike, RedisError, RedisResult, TypedCommands, Value, ValueType};
use std::collections::HashMap;
use std::fmt::Debug;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Protocol {
    Resp2,
    Resp3,
}

fn connect_db(server: &TestServer, protocol: Protocol, db: u32) -> Connection {
    let version = match protocol {
        Protocol::Resp2 => "resp2",
        Protocol::Resp3 => "resp3",
    };
    let url = format!("redis://{}/{db}?protocol={version}", server.addr);
    redis::Client::open(url)
        .expect("client URL")
        .get_connection()
        .expect("connect")
}

/// Runs `check` on a fresh server, once as a RESP2 client and once as a RESP3 client.
fn with_each_protocol(check: impl Fn(&TestServer, &mut Connection, Protocol)) {
    for protocol in [Protocol::Resp2, Protocol::Resp3] {
        let server = TestServer::start();
        let mut con = connect_db(&server, protocol, 0);
        check(&server, &mut con, protocol);
    }
}

fn command(args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd
}

/// The reply as the crate decoded it, with errors nested in arrays left in place.
fn raw(con: &mut Connection, args: &[&str]) -> Value {
    con.req_command(&command(args)).expect("connection")
}

/// The error line the server sent, rebuilt from the crate's code and detail.
fn message(error: &RedisError) -> String {
    match (error.code(), error.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => panic!("not a server error: {error}"),
    }
}

fn expect_error<T: Debug>(result: RedisResult<T>, expected: &str) {
    match result {
        Ok(value) => panic!("expected error {expected:?}, got {value:?}"),
        Err(error) => assert_eq!(message(&error), expected, "{error}"),
    }
}

/// BF.ADD / BF.EXISTS replies: RESP3 booleans, RESP2 integers.
fn flag(protocol: Protocol, value: bool) -> Value {
    match protocol {
        Protocol::Resp2 => Value::Int(value as i64),
        Protocol::Resp3 => Value::Boolean(value),
    }
}

fn info_of(con: &mut Connection, key: &str) -> HashMap<String, f64> {
    con.bf_info(key)
        .expect("BF.INFO")
        .into_iter()
        .map(|(field, value)| (field, *value))
        .collect()
}

#[test]
fn reserve_add_exists_card() {
    with_each_protocol(|_, con, _| {
        con.bf_reserve("f", 0.01, 1000).expect("reserve");
        expect_error(con.bf_reserve("f", 0.01, 1000), "ERR item exists");
        expect_error(con.bf_reserve("f", 0.5, 10), "ERR item exists");

        assert!(con.bf_add("f", "foo").unwrap());
        assert!(!con.bf_add("f", "foo").unwrap());
        assert!(con.bf_add("f", "").unwrap());
        assert!(con.bf_add("f", &b"\x00\xff"[..]).unwrap());
        assert!(con.bf_exists("f", "foo").unwrap());
        assert!(con.bf_exists("f", &b"\x00\xff"[..]).unwrap());
        assert!(!con.bf_exists("f", "bar").unwrap());

        assert_eq!(
            con.bf_madd("f", &["a", "b", "c", "a"]).unwrap(),
            [true, true, true, false]
        );
        assert_eq!(
            con.bf_mexists("f", &["a", "zz", "foo"]).unwrap(),
            [true, false, true]
        );
        assert_eq!(con.bf_card("f").unwrap(), 6);

        assert!(!con.bf_exists("missing", "foo").unwrap());
        assert_eq!(
            con.bf_mexists("missing", &["a", "b"]).unwrap(),
            [false, false]
        );
        assert_eq!(con.bf_card("missing").unwrap(), 0);
        assert!(!con.exists("missing").unwrap());

        // BF.ADD on a missing key creates a filter with the defaults.
        assert!(con.bf_add("auto", "x").unwrap());
        let info = info_of(con, "auto");
        assert_eq!(info["Capacity"], 100.0);
        assert_eq!(info["Expansion rate"], 2.0);
        assert_eq!(info["Number of items inserted"], 1.0);
    });
}

#[test]
fn reserve_with_scaling_options() {
    with_each_protocol(|_, con, _| {
        con.bf_reserve_options("x4", 0.01, 100, BloomFilterScalingOptions::ExpansionRate(4))
            .expect("reserve with expansion");
        assert_eq!(
            *con.bf_info_type("x4", BloomFilterInfoType::Expansion)
                .unwrap(),
            4.0
        );
        con.bf_reserve_options("ns", 0.01, 10, BloomFilterScalingOptions::NonScaling)
            .expect("reserve non-scaling");
        // The full BF.INFO reads the null expansion rate of a non-scaling filter as 0; the
        // single-field form cannot be read by the crate (it expects a number inside the
        // one-element array or map), against RedisBloom as well.
        assert_eq!(info_of(con, "ns")["Expansion rate"], 0.0);
        let items: Vec<String> = (0..15).map(|i| format!("x{i}")).collect();
        expect_error(con.bf_madd("ns", &items), "ERR non scaling filter is full");
        assert_eq!(con.bf_card("ns").unwrap(), 10);
        expect_error(
            con.bf_add("ns", "another"),
            "ERR non scaling filter is full",
        );
        assert!(!con.bf_add("ns", "x0").unwrap());
    });
}

#[test]
fn insert_with_options() {
    with_each_protocol(|_, con, _| {
        let sized = BloomFilterInsertOptions::default()
            .capacity(1000)
            .error_rate(0.001);
        assert_eq!(
            con.bf_insert_options("i", &["a", "b", "a"], sized).unwrap(),
            [true, true, false]
        );
        assert_eq!(
            *con.bf_info_type("i", BloomFilterInfoType::Capacity)
                .unwrap(),
            1000.0
        );
        // Options only matter when the key is created.
        let ignored = BloomFilterInsertOptions::default()
            .capacity(5)
            .error_rate(0.5)
            .expansion(BloomFilterScalingOptions::ExpansionRate(4));
        assert_eq!(con.bf_insert_options("i", &["c"], ignored).unwrap(), [true]);
        let info = info_of(con, "i");
        assert_eq!(info["Capacity"], 1000.0);
        assert_eq!(info["Expansion rate"], 2.0);
        assert_eq!(info["Number of items inserted"], 3.0);

        let nocreate = || BloomFilterInsertOptions::default().nocreate();
        assert_eq!(
            con.bf_insert_options("i", &["c", "d"], nocreate()).unwrap(),
            [false, true]
        );
        expect_error(
            con.bf_insert_options("absent", &["a"], nocreate()),
            "ERR not found",
        );
        assert!(!con.exists("absent").unwrap());

        let expanding = BloomFilterInsertOptions::default()
            .expansion(BloomFilterScalingOptions::ExpansionRate(3));
        assert_eq!(
            con.bf_insert_options("x3", &["a"], expanding).unwrap(),
            [true]
        );
        assert_eq!(info_of(con, "x3")["Expansion rate"], 3.0);

        let full = BloomFilterInsertOptions::default()
            .capacity(3)
            .expansion(BloomFilterScalingOptions::NonScaling);
        expect_error(
            con.bf_insert_options("full", &["a", "b", "c", "d", "e"], full),
            "ERR non scaling filter is full",
        );
        assert_eq!(con.bf_card("full").unwrap(), 3);
        assert_eq!(con.bf_insert("i", &["e"]).unwrap(), [true]);

        expect_error(
            con.bf_insert_options(
                "bad",
                &["a"],
                BloomFilterInsertOptions::default().error_rate(0.0),
            ),
            "Bad error rate",
        );
        expect_error(
            con.bf_insert_options(
                "bad",
                &["a"],
                BloomFilterInsertOptions::default().capacity(0),
            ),
            "Bad capacity",
        );
    });
}

#[test]
fn info_full_and_by_field() {
    with_each_protocol(|_, con, _| {
        con.bf_reserve("f", 0.01, 1000).unwrap();
        con.bf_madd("f", &["a", "b", "c"]).unwrap();
        let info = info_of(con, "f");
        let mut fields: Vec<&str> = info.keys().map(String::as_str).collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            [
                "Capacity",
                "Expansion rate",
                "Number of filters",
                "Number of items inserted",
                "Size"
            ]
        );
        assert_eq!(info["Capacity"], 1000.0);
        assert_eq!(info["Number of filters"], 1.0);
        assert_eq!(info["Number of items inserted"], 3.0);
        assert_eq!(info["Expansion rate"], 2.0);
        assert!(info["Size"] > 0.0);
        for (field, label) in [
            (BloomFilterInfoType::Capacity, "Capacity"),
            (BloomFilterInfoType::Size, "Size"),
            (BloomFilterInfoType::Filters, "Number of filters"),
            (BloomFilterInfoType::Items, "Number of items inserted"),
            (BloomFilterInfoType::Expansion, "Expansion rate"),
        ] {
            assert_eq!(
                *con.bf_info_type("f", field).unwrap(),
                info[label],
                "{label}"
            );
        }
        // The crate offers valkey-bloom's fields too; RedisBloom rejects them.
        expect_error(
            con.bf_info_type("f", BloomFilterInfoType::Error),
            "Invalid information value",
        );
        expect_error(con.bf_info("missing"), "ERR not found");
        expect_error(
            con.bf_info_type("missing", BloomFilterInfoType::Capacity),
            "ERR not found",
        );
    });
}

fn dump(con: &mut Connection, key: &str) -> Vec<BloomFilterDumpChunk> {
    BloomFilterDumpIterator::new(con, key)
        .collect::<RedisResult<_>>()
        .expect("BF.SCANDUMP")
}

#[test]
fn scandump_loadchunk_round_trip() {
    with_each_protocol(|_, con, _| {
        con.bf_reserve("source", 0.01, 100).unwrap();
        let items: Vec<String> = (0..1000).map(|i| format!("item{i}")).collect();
        for batch in items.chunks(250) {
            con.bf_madd("source", batch).unwrap();
        }
        let before = info_of(con, "source");
        assert!(before["Number of filters"] > 1.0, "{before:?}");

        let chunks = dump(con, "source");
        assert!(chunks.len() >= 2, "a header and data: {chunks:?}");
        for chunk in chunks.clone() {
            con.bf_loadchunk("copy", chunk).expect("BF.LOADCHUNK");
        }

        assert_eq!(info_of(con, "copy"), before);
        let probes: Vec<String> = items
            .iter()
            .cloned()
            .chain((0..1000).map(|i| format!("other{i}")))
            .collect();
        assert_eq!(
            con.bf_mexists("copy", &probes).unwrap(),
            con.bf_mexists("source", &probes).unwrap()
        );
        assert!(con
            .bf_mexists("copy", &items)
            .unwrap()
            .into_iter()
            .all(|found| found));
        assert_eq!(dump(con, "copy"), chunks);
        assert_eq!(
            con.bf_add("copy", "fresh").unwrap(),
            con.bf_add("source", "fresh").unwrap()
        );
    });
}

#[test]
fn pipelines() {
    with_each_protocol(|_, con, _| {
        let mut adds = redis::pipe();
        for i in 0..1000 {
            adds.bf_add("p", format!("i{i}"));
        }
        let added: Vec<bool> = adds.query(con).expect("pipelined BF.ADD");
        assert_eq!(added.len(), 1000);
        let new_items = added.iter().filter(|&&added| added).count();
        assert_eq!(con.bf_card("p").unwrap(), new_items);

        let mut lookups = redis::pipe();
        for i in 0..1000 {
            lookups.bf_exists("p", format!("i{i}"));
        }
        let found: Vec<bool> = lookups.query(con).expect("pipelined BF.EXISTS");
        assert!(found.iter().all(|&found| found));

        let mut mixed = redis::pipe();
        mixed
            .bf_add("p", "before")
            .bf_info("missing")
            .bf_add("p", "after");
        let error = mixed.query::<Vec<Value>>(con).unwrap_err();
        let failures = error.into_server_errors().expect("server errors");
        assert_eq!(failures.len(), 1);
        let (index, failure) = &failures[0];
        assert_eq!(*index, 1);
        assert_eq!(
            (failure.code(), failure.details()),
            ("ERR", Some("not found"))
        );

        let results: Vec<RedisResult<bool>> = mixed.ignore_errors().query(con).unwrap();
        assert_eq!(results.len(), 3);
        assert!(!results[0].as_ref().unwrap());
        expect_error(results[1].clone(), "ERR not found");
        assert!(!results[2].as_ref().unwrap());
    });
}

#[test]
fn errors_carry_the_exact_message() {
    with_each_protocol(|_, con, _| {
        con.set("text", "value").unwrap();
        con.bf_add("bloom", "x").unwrap();
        expect_error(con.bf_add("text", "x"), WRONGTYPE);
        expect_error(con.bf_madd("text", &["x", "y"]), WRONGTYPE);
        expect_error(con.bf_insert("text", &["x"]), WRONGTYPE);
        expect_error(con.bf_reserve("text", 0.01, 100), WRONGTYPE);
        expect_error(con.bf_info("text"), WRONGTYPE);
        expect_error(con.bf_card("text"), WRONGTYPE);
        expect_error(con.bf_scandump("text", 0), WRONGTYPE);
        expect_error(con.get("bloom"), WRONGTYPE);
        expect_error(con.strlen("bloom"), WRONGTYPE);
        // Lookups on another type answer "absent", as RedisBloom does.
        assert!(!con.bf_exists("text", "x").unwrap());
        assert_eq!(con.bf_mexists("text", &["x", "y"]).unwrap(), [false, false]);

        expect_error(con.bf_scandump("missing", 0), "ERR not found");
        expect_error(
            con.bf_reserve("e", 1.5, 100),
            "ERR error rate must be in the range (0.000000, 1.000000)",
        );
        expect_error(
            con.bf_reserve("e", 0.01, 0),
            "ERR capacity must be in the range [1, 1073741824]",
        );
        let both = command(&[
            "BF.RESERVE",
            "e",
            "0.01",
            "100",
            "EXPANSION",
            "2",
            "NONSCALING",
        ]);
        expect_error(both.query::<Value>(con), "Nonscaling filters cannot expand");
        expect_error(
            command(&["BF.ADD", "e"]).query::<Value>(con),
            "ERR wrong number of arguments for 'bf.add' command",
        );
        expect_error(
            command(&["BF.LOADCHUNK", "e", "1", "garbage"]).query::<Value>(con),
            "ERR received bad data",
        );
        expect_error(
            command(&["NOPE", "x"]).query::<Value>(con),
            "ERR unknown command 'NOPE', with args beginning with: 'x' ",
        );
        assert!(!con.exists("e").unwrap());
    });
}

#[test]
fn strings_types_and_expiry() {
    with_each_protocol(|_, con, _| {
        con.set("text", "value").unwrap();
        assert_eq!(con.get("text").unwrap().as_deref(), Some("value"));
        assert_eq!(con.strlen("text").unwrap(), 5);
        assert_eq!(con.get("missing").unwrap(), None);
        con.bf_add("bloom", "x").unwrap();
        assert_eq!(con.key_type("bloom").unwrap(), ValueType::BloomFilterRedis);
        assert_eq!(con.key_type("text").unwrap(), ValueType::String);
        assert_eq!(con.key_type("missing").unwrap(), ValueType::None);

        assert_eq!(con.ttl("bloom").unwrap().raw(), -1);
        assert!(con.expire("bloom", 100).unwrap());
        let ttl = con.ttl("bloom").unwrap().raw();
        assert!((1..=100).contains(&ttl), "TTL {ttl}");
        assert!(con.persist("bloom").unwrap());
        assert_eq!(con.ttl("bloom").unwrap().raw(), -1);
        assert_eq!(con.ttl("missing").unwrap().raw(), -2);
        assert!(!con.expire("missing", 100).unwrap());

        assert!(con.pexpire("bloom", 1).unwrap());
        // The key goes on its first access after the deadline; wait for that, not for the clock.
        while con.exists("bloom").unwrap() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(!con.bf_exists("bloom", "x").unwrap());
    });
}

#[test]
fn databases_are_separate() {
    with_each_protocol(|server, con, protocol| {
        // The crate selects the database from the URL path at connect time.
        let mut other = connect_db(server, protocol, 1);
        assert!(other.bf_add("k", "x").unwrap());
        assert!(other.exists("k").unwrap());
        assert!(!con.exists("k").unwrap());
        assert!(!con.bf_exists("k", "x").unwrap());

        assert_eq!(raw(con, &["SELECT", "1"]), Value::Okay);
        assert!(con.bf_exists("k", "x").unwrap());
        expect_error(
            command(&["SELECT", "99"]).query::<Value>(con),
            "ERR DB index is out of range",
        );
        assert_eq!(raw(con, &["SELECT", "0"]), Value::Okay);
        assert!(!con.exists("k").unwrap());
    });
}

#[test]
fn reply_shapes_per_protocol() {
    with_each_protocol(|_, con, protocol| {
        assert_eq!(raw(con, &["BF.ADD", "f", "a"]), flag(protocol, true));
        assert_eq!(raw(con, &["BF.ADD", "f", "a"]), flag(protocol, false));
        assert_eq!(raw(con, &["BF.EXISTS", "f", "a"]), flag(protocol, true));
        assert_eq!(raw(con, &["BF.EXISTS", "f", "b"]), flag(protocol, false));
        assert_eq!(
            raw(con, &["BF.MEXISTS", "f", "a", "b"]),
            Value::Array(vec![flag(protocol, true), flag(protocol, false)])
        );
        assert_eq!(raw(con, &["BF.CARD", "f"]), Value::Int(1));

        let info = raw(con, &["BF.INFO", "f"]);
        let pairs: Vec<(Value, Value)> = match (protocol, info) {
            (Protocol::Resp2, Value::Array(flat)) => flat
                .chunks(2)
                .map(|pair| (pair[0].clone(), pair[1].clone()))
                .collect(),
            (Protocol::Resp3, Value::Map(map)) => map,
            (_, other) => panic!("BF.INFO over {protocol:?}: {other:?}"),
        };
        let labels: Vec<Value> = pairs.iter().map(|(label, _)| label.clone()).collect();
        let expected: Vec<Value> = [
            "Capacity",
            "Size",
            "Number of filters",
            "Number of items inserted",
            "Expansion rate",
        ]
        .iter()
        .map(|label| Value::SimpleString(label.to_string()))
        .collect();
        assert_eq!(labels, expected);
        assert_eq!(pairs[4].1, Value::Int(2));

        raw(con, &["BF.RESERVE", "ns", "0.01", "10", "NONSCALING"]);
        let expansion = raw(con, &["BF.INFO", "ns", "EXPANSION"]);
        let label = Value::SimpleString("Expansion rate".into());
        match protocol {
            Protocol::Resp2 => assert_eq!(expansion, Value::Array(vec![Value::Nil])),
            Protocol::Resp3 => assert_eq!(expansion, Value::Map(vec![(label, Value::Nil)])),
        }

        let items: Vec<String> = (0..11).map(|i| format!("x{i}")).collect();
        let mut madd = vec!["BF.MADD", "ns"];
        madd.extend(items.iter().map(String::as_str));
        let Value::Array(replies) = raw(con, &madd) else {
            panic!("BF.MADD reply is not an array");
        };
        assert_eq!(replies.len(), 11);
        assert!(replies[..10].iter().all(|r| *r == flag(protocol, true)));
        let Value::ServerError(error) = &replies[10] else {
            panic!("expected an error element, got {:?}", replies[10]);
        };
        assert_eq!(
            (error.code(), error.details()),
            ("ERR", Some("non scaling filter is full"))
        );

        let Value::Array(step) = raw(con, &["BF.SCANDUMP", "f", "0"]) else {
            panic!("BF.SCANDUMP reply is not an array");
        };
        assert!(matches!(step[..], [Value::Int(1), Value::BulkString(_)]));
    });
}

#[test]
fn connection_commands() {
    with_each_protocol(|_, con, protocol| {
        assert_eq!(command(&["PING"]).query::<String>(con).unwrap(), "PONG");
        assert_eq!(
            raw(con, &["ECHO", "hello"]),
            Value::BulkString(b"hello".to_vec())
        );
        con.client_setname("sieved-client").unwrap();
        assert_eq!(
            con.client_getname().unwrap().as_deref(),
            Some("sieved-client")
        );

        // The crate announces itself with CLIENT SETINFO while connecting.
        let me: String = command(&["CLIENT", "INFO"]).query(con).unwrap();
        let resp = match protocol {
            Protocol::Resp2 => "resp=2",
            Protocol::Resp3 => "resp=3",
        };
        for field in ["name=sieved-client", "lib-name=redis-rs", resp] {
            assert!(me.split_whitespace().any(|f| f == field), "{field} in {me}");
        }
        let list: String = command(&["CLIENT", "LIST"]).query(con).unwrap();
        assert!(list.contains("name=sieved-client"), "{list}");

        let info: String = command(&["INFO", "server"]).query(con).unwrap();
        assert!(info.starts_with("# Server\r\n"), "{info}");
        assert!(info.contains("\r\nredis_version:"), "{info}");
    });
}
