//! DUMP payloads: Redis's own restore here, every value round-trips, and crafted payloads are
//! refused before anything large is allocated.

use super::*;
use crate::filter::{
    BloomChain, ChainOptions, CounterBits, CountingChain, CountingOptions, CuckooFilter,
    CuckooOptions, HashScheme, Layout,
};
use crate::store::{Hash, List, Set, ZSet};

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

const LIMITS: Limits = Limits {
    string_bytes: 1 << 20,
    filter_bytes: 64 << 20,
};

/// A value's contents as its snapshot codec sees them: equal exactly when the values are.
fn contents(value: &Value) -> (u8, Vec<u8>, Vec<u8>) {
    let mut payload = Vec::new();
    assert!(value.read_payload(0, value.payload_len(), &mut payload));
    (value.kind() as u8, value.snapshot_header(), payload)
}

fn restored(payload: &[u8]) -> Value {
    restore(payload, &LIMITS).unwrap()
}

fn elements(value: &Value) -> Vec<String> {
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    match value {
        Value::String(bytes) => vec![text(bytes)],
        Value::List(list) => list.iter().map(text).collect(),
        Value::Set(set) => {
            let mut members: Vec<String> = set.iter().map(text).collect();
            members.sort();
            members
        }
        Value::ZSet(zset) => zset
            .iter()
            .map(|(m, s)| format!("{}={s}", text(m)))
            .collect(),
        Value::Hash(hash) => {
            let mut pairs: Vec<String> = hash
                .iter()
                .map(|(f, v)| format!("{}={}", text(f), text(v)))
                .collect();
            pairs.sort();
            pairs
        }
        other => panic!("not a plain value: {}", other.type_name()),
    }
}

/// DUMP replies of Debian's redis-server 7.0.15 (RDB version 10), one per encoding it uses.
#[test]
fn restores_redis_7_payloads() {
    let cases: &[(&str, &[&str])] = &[
        ("000568656c6c6f0a006372df766534200a", &["hello"]),
        ("00c139300a009d94ea2793fc08b9", &["12345"]),
        (
            "00c30940c8016161e0bb000161610a001f99f72e01b20de3",
            &[&"a".repeat(200)],
        ),
        (
            "120102212100000006008161020101dffe02c12c02f270110104f400f2052a0100000009ff0a008aee91e4acf3153d",
            &["a", "1", "-2", "300", "70000", "5000000000"],
        ),
        (
            "0b1c0400000005000000fbffffff010000000200000003000000a08601000a00d365f8d8af8752ac",
            &["-5", "1", "100000", "2", "3"],
        ),
        ("0203017a017901780a00a2117a196f6ea3e5", &["x", "y", "z"]),
        (
            "111a1a0000000600816202dffe0281610283312e35048163020301ff0a00e5c16814373f6b4e",
            &["b=-2", "a=1.5", "c=3"],
        ),
        (
            "10151500000004008266310382763103826632030201ff0a005c5ea813feec1ff5",
            &["f1=v1", "f2=2"],
        ),
    ];
    for (hex, expected) in cases {
        assert_eq!(elements(&restored(&unhex(hex))), *expected, "{hex}");
    }
    // A hash table of ten fields whose 70-byte values are LZF-compressed.
    let hbig = "040a026637c3094046017676e03900017676026636c3094046017676e03900017676026632c3094046017676e03900017676026631c3094046017676e03900017676026635c3094046017676e03900017676026634c3094046017676e03900017676026633c3094046017676e03900017676026638c3094046017676e03900017676026639c3094046017676e03900017676026630c3094046017676e039000176760a00afdae5a1ec9fed61";
    let value = restored(&unhex(hbig));
    let fields = elements(&value);
    assert_eq!(fields.len(), 10);
    assert!(fields.contains(&format!("f3={}", "v".repeat(70))));
}

/// sieved's payload of a string is Redis's but for the version it declares.
#[test]
fn dumps_strings_as_redis_does() {
    let payload = dump(&Value::String(b"hello".to_vec()));
    assert_eq!(&payload[..7], &unhex("000568656c6c6f")[..]);
    assert_eq!(&payload[7..9], &[9, 0]);
}

fn every_kind_of_value() -> Vec<Value> {
    let mut list = List::new();
    for element in ["a", "", "12", "-3", &"long".repeat(40)] {
        list.push_back(element.as_bytes());
    }
    let mut set = Set::default();
    let mut big_set = Set::default();
    for i in 0..300 {
        big_set.insert(format!("member{i}").as_bytes());
    }
    ["1", "2", "x"].iter().for_each(|m| {
        set.insert(m.as_bytes());
    });
    let mut zset = ZSet::default();
    zset.insert(b"a", 1.5);
    zset.insert(b"b", f64::NEG_INFINITY);
    zset.insert(b"c", -0.25);
    let mut hash = Hash::default();
    hash.insert(b"f", b"v");
    hash.insert(b"n", b"100");
    let bloom = |layout, hash| {
        let options = ChainOptions {
            error_rate: 0.01,
            capacity: 100,
            expansion: 2,
            non_scaling: false,
            layout,
            hash,
        };
        let mut chain = BloomChain::new(options, u64::MAX).unwrap();
        for i in 0..500 {
            chain.add(format!("item{i}").as_bytes(), u64::MAX).unwrap();
        }
        Value::Bloom(chain)
    };
    let mut counting = CountingChain::new(
        CountingOptions {
            error_rate: 0.01,
            capacity: 100,
            expansion: 2,
            counter_bits: CounterBits::Four,
        },
        u64::MAX,
    )
    .unwrap();
    let mut cuckoo = CuckooFilter::new(
        CuckooOptions {
            capacity: 64,
            bucket_size: 2,
            max_iterations: 20,
            expansion: 2,
        },
        u64::MAX,
    )
    .unwrap();
    for i in 0..300 {
        let item = format!("item{i}");
        counting.add(item.as_bytes(), u64::MAX).unwrap();
        cuckoo.insert(item.as_bytes(), u64::MAX);
    }
    cuckoo.delete(b"item3");
    vec![
        Value::String(b"hello \x00\xff world".to_vec()),
        Value::String(vec![0u8; 100_000]),
        Value::String(b"-12345".to_vec()),
        Value::List(Box::new(list)),
        Value::Set(Box::new(set)),
        Value::Set(Box::new(big_set)),
        Value::ZSet(Box::new(zset)),
        Value::Hash(Box::new(hash)),
        bloom(Layout::Classic, HashScheme::Murmur),
        bloom(Layout::Classic, HashScheme::Xxh3),
        bloom(Layout::Blocked, HashScheme::Xxh3),
        Value::Counting(Box::new(counting)),
        Value::Cuckoo(Box::new(cuckoo)),
    ]
}

#[test]
fn every_value_round_trips() {
    for value in every_kind_of_value() {
        let payload = dump(&value);
        let copy = restore(&payload, &LIMITS).unwrap_or_else(|e| {
            panic!("{}: {e:?}", value.type_name());
        });
        assert_eq!(contents(&copy), contents(&value), "{}", value.type_name());
        // Large sets and hashes list their members in their tables' order.
        assert_eq!(dump(&copy).len(), payload.len());
    }
}

/// RedisBloom's types travel as RedisBloom writes them; the others as sieved's module.
#[test]
fn filters_travel_under_their_module_names() {
    let names: Vec<String> = every_kind_of_value()
        .iter()
        .filter(|value| value.type_name().starts_with("MB"))
        .map(|value| {
            let payload = dump(value);
            assert_eq!(payload[0], 7);
            let mut input = SliceInput(&payload[1..]);
            describe_module(read_length(&mut input).unwrap())
        })
        .collect();
    assert_eq!(
        names,
        [
            "module type MBbloom-- (encoding version 4)",
            "module type sieved--- (encoding version 1)",
            "module type sieved--- (encoding version 1)",
            "module type sieved--- (encoding version 1)",
            "module type MBbloomCF (encoding version 4)",
        ]
    );
}

/// Replaces the trailer of `body` with a valid one.
fn seal(body: &[u8], version: u16) -> Vec<u8> {
    let mut payload = body.to_vec();
    append_trailer(&mut payload, version);
    payload
}

fn bad_data(payload: &[u8]) -> bool {
    matches!(restore(payload, &LIMITS), Err(RestoreError::BadData(_)))
}

#[test]
fn version_and_checksum_are_checked_first() {
    let payload = dump(&Value::String(b"x".to_vec()));
    for len in 0..10 {
        assert_eq!(
            restore(&payload[..len], &LIMITS).unwrap_err(),
            RestoreError::VersionOrChecksum
        );
    }
    let mut corrupt = payload.clone();
    corrupt[1] ^= 1;
    assert_eq!(
        restore(&corrupt, &LIMITS).unwrap_err(),
        RestoreError::VersionOrChecksum
    );
    let body = &payload[..payload.len() - 10];
    assert_eq!(
        restore(&seal(body, 13), &LIMITS).unwrap_err(),
        RestoreError::VersionOrChecksum
    );
    for version in [0, 9, 10, 11, 12] {
        assert!(restore(&seal(body, version), &LIMITS).is_ok());
    }
}

#[test]
fn every_truncation_and_trailing_byte_is_refused() {
    for value in every_kind_of_value() {
        let payload = dump(&value);
        let body = &payload[..payload.len() - 10];
        for cut in 0..body.len() {
            assert!(
                bad_data(&seal(&body[..cut], 9)),
                "{} cut at {cut}",
                value.type_name()
            );
        }
        let mut longer = body.to_vec();
        longer.push(0);
        assert!(bad_data(&seal(&longer, 9)), "{}", value.type_name());
    }
}

/// Lengths that would allocate terabytes are refused by what the payload holds or the limits.
#[test]
fn enormous_lengths_are_refused() {
    let terabyte = [0x81, 0, 0, 0x01, 0, 0, 0, 0, 0];
    for rdb_type in [0u8, 1, 2, 4, 5, 10, 14, 18] {
        let mut body = vec![rdb_type];
        body.extend_from_slice(&terabyte);
        assert!(bad_data(&seal(&body, 9)), "type {rdb_type}");
    }
    // A compressed string that claims to expand past the limit.
    let mut body = vec![0, 0xc3, 0x02];
    body.extend_from_slice(&terabyte);
    body.extend_from_slice(&[0x00, b'a']);
    assert!(bad_data(&seal(&body, 9)));
    // Filters whose shapes ask for more than the filter limit, refused before allocating.
    let small = Limits {
        string_bytes: 1 << 20,
        filter_bytes: 100,
    };
    for value in every_kind_of_value().iter().skip(8) {
        assert!(
            matches!(
                restore(&dump(value), &small),
                Err(RestoreError::BadData(RdbError::TooLarge { .. }))
            ),
            "{}",
            value.type_name()
        );
    }
}

#[test]
fn unknown_modules_and_types_are_refused() {
    let payload = dump(&every_kind_of_value().remove(8));
    let mut body = payload[..payload.len() - 10].to_vec();
    // "MBbloom--" becomes "MBbloom-_": another module, which RESTORE cannot hold.
    let mut input = SliceInput(&body[1..]);
    let id = read_length(&mut input).unwrap();
    body[2..10].copy_from_slice(&(id | 1 << 10).to_be_bytes());
    assert!(bad_data(&seal(&body, 9)));
    for rdb_type in [6u8, 8, 15, 26, 200, 255] {
        assert!(bad_data(&seal(&[rdb_type, 0], 9)), "type {rdb_type}");
    }
    // Empty collections, which Redis refuses as well.
    for rdb_type in [1u8, 2, 4, 5] {
        assert!(bad_data(&seal(&[rdb_type, 0], 9)), "type {rdb_type}");
    }
    // A set or hash listing a member twice.
    assert!(bad_data(&seal(&[2, 2, 1, b'a', 1, b'a'], 9)));
    assert!(bad_data(&seal(
        &[4, 2, 1, b'a', 1, b'1', 1, b'a', 1, b'2'],
        9
    )));
}

/// Random damage to valid payloads, sealed so that it reaches the decoder: refused or restored,
/// never a panic, and what restores dumps again.
#[test]
fn damaged_payloads_never_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for value in every_kind_of_value() {
        let payload = dump(&value);
        let body = &payload[..payload.len() - 10];
        for _ in 0..300 {
            let mut damaged = body.to_vec();
            for _ in 0..1 + next() % 4 {
                let at = (next() % damaged.len() as u64) as usize;
                match next() % 3 {
                    0 => damaged[at] ^= 1 << (next() % 8),
                    1 => damaged[at] = next() as u8,
                    _ => damaged.truncate(at.max(1)),
                }
            }
            if let Ok(copy) = restore(&seal(&damaged, 9), &LIMITS) {
                assert!(restore(&dump(&copy), &LIMITS).is_ok());
            }
        }
    }
}
