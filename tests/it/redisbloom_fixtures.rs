//! Files written by a real RedisBloom 8.8 (`shared/fixtures/redisbloom`, see its README.md):
//! its SCANDUMP walks load into sieved and answer exactly as RedisBloom did, and its recorded
//! BF.* transcripts replay against a fresh sieved with every reply byte-identical.
//!
//! The files live outside the repository (`crate::support::redisbloom::fixtures` finds them). Without
//! them these tests are skipped (failed under CI, as a missing tool is).

use crate::support::redisbloom::{
    assert_transcript_replays, check_filter, decode_base64, fixtures as redisbloom_fixtures,
    json_strings, mexists, FILTERS,
};
use crate::support::{repo_file, RawClient, TestServer};

/// The integer after `"field": ` in `text`; None for null.
fn number_after(text: &str, field: &str) -> Option<i64> {
    let at = text.find(&format!("\"{field}\":"))? + field.len() + 3;
    let rest = text[at..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// BF.INFO as RedisBloom answers it under RESP2, from the manifest's figures.
fn expected_info(manifest: &str, key: &str) -> Vec<u8> {
    let block = &manifest[manifest.find(&format!("\"{key}\":")).expect(key)..];
    let block = &block[block.find("\"bf_info\"").expect("bf_info")..];
    let block = &block[..block.find('}').expect("end of bf_info")];
    let mut reply = b"*10\r\n".to_vec();
    for field in [
        "Capacity",
        "Size",
        "Number of filters",
        "Number of items inserted",
        "Expansion rate",
    ] {
        reply.extend_from_slice(format!("+{field}\r\n").as_bytes());
        match number_after(block, field) {
            Some(n) => reply.extend_from_slice(format!(":{n}\r\n").as_bytes()),
            None => reply.extend_from_slice(b"$-1\r\n"),
        }
    }
    reply
}

#[test]
fn redisbloom_scandumps_load_and_answer_as_redisbloom() {
    let Some(dir) = redisbloom_fixtures() else {
        return;
    };
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.json")).expect("manifest");
    let server = TestServer::start();
    let mut client = server.client();
    for filter in &FILTERS {
        let name = filter.key.trim_start_matches("bf:");
        let walk = std::fs::read_to_string(dir.join(format!("bf_{name}.scandump.jsonl")))
            .expect("scandump walk");
        let mut chunks = Vec::new();
        for line in walk.lines() {
            let fields = json_strings(line);
            let iter = number_after(line, "iter").expect("iter");
            assert_eq!(fields[1], "data");
            let data = decode_base64(fields.get(2).copied().unwrap_or(""));
            let iter = iter.to_string();
            let reply = client.command(&[
                b"BF.LOADCHUNK",
                filter.key.as_bytes(),
                iter.as_bytes(),
                &data,
            ]);
            assert_eq!(reply, b"+OK\r\n", "{} chunk {iter}", filter.key);
            chunks.push((iter, data));
        }
        assert_eq!(
            client.cmd(&["BF.INFO", filter.key]),
            expected_info(&manifest, filter.key),
            "{}",
            filter.key
        );
        check_filter(&mut client, &dir, filter);
        // Dumped again, the walk is RedisBloom's byte for byte.
        let mut iterator = "0".to_string();
        for (iter, data) in &chunks {
            let reply = client.cmd(&["BF.SCANDUMP", filter.key, &iterator]);
            let mut expected = format!("*2\r\n:{iter}\r\n${}\r\n", data.len()).into_bytes();
            expected.extend_from_slice(data);
            expected.extend_from_slice(b"\r\n");
            assert!(
                reply == expected,
                "{} SCANDUMP {iterator} differs",
                filter.key
            );
            iterator = iter.clone();
        }
        assert_eq!(
            client.cmd(&["BF.SCANDUMP", filter.key, &iterator]),
            b"*2\r\n:0\r\n$0\r\n\r\n"
        );
    }
}

#[test]
fn the_resp2_transcript_replays_byte_identical() {
    assert_transcript_replays("bf-resp2.jsonl");
}

#[test]
fn the_resp3_transcript_replays_byte_identical() {
    assert_transcript_replays("bf-resp3.jsonl");
}

/// `tests/data/xxh3/` was written by the build before RedisBloom's hash scheme (commit f5a8b8e),
/// whose classic filters hashed with xxh3: `BF.RESERVE snapped 0.01 100`, `BF.ADD snapped
/// item<i>` for i in 0..300, `BF.RESERVE fixed 0.001 50 NONSCALING`, `BF.MADD fixed item0 ..
/// item29`, `SAVE` (the snapshot), then into the append-only file `BF.ADD snapped item<i>` for
/// i in 300..400, `BF.RESERVE logged 0.01 100`, `BF.ADD logged item<i>` for i in 0..250. The
/// BF.DEBUG lines and the absent probes that answered 1 are what that build answered.
#[test]
fn filters_saved_with_xxh3_load_and_answer_as_before() {
    let dir = crate::support::DataDir::new("xxh3-fixture");
    let fixture = repo_file("tests/data/xxh3");
    for name in ["sieved.snap", "sieved-2.aof"] {
        std::fs::copy(fixture.join(name), dir.0.join(name)).expect("copy the fixture");
    }
    let mut config = sieved::config::Config::default_for_tests();
    config.dir = dir.0.clone();
    config.appendonly = true;
    let server = TestServer::start_with(config);
    let mut client = server.client();
    assert_eq!(client.cmd(&["DBSIZE"]), b":3\r\n");
    let debug = |client: &mut RawClient, key: &str| -> Vec<String> {
        let reply = String::from_utf8(client.cmd(&["BF.DEBUG", key])).expect("text");
        reply
            .split("\r\n")
            .filter(|l| !l.is_empty() && !l.starts_with(['*', '$']))
            .map(str::to_string)
            .collect()
    };
    let link = |bytes, bits, hashes, capacity, size, ratio| {
        format!(
            "bytes:{bytes} bits:{bits} hashes:{hashes} hashwidth:64 capacity:{capacity} \
             size:{size} ratio:{ratio}"
        )
    };
    assert_eq!(
        debug(&mut client, "snapped"),
        [
            "size:397".to_string(),
            link(144, 1152, 8, 100, 100, "0.005"),
            link(312, 2496, 9, 200, 200, "0.0025"),
            link(696, 5568, 10, 400, 97, "0.00125"),
        ]
    );
    assert_eq!(
        debug(&mut client, "logged"),
        [
            "size:250".to_string(),
            link(144, 1152, 8, 100, 100, "0.005"),
            link(312, 2496, 9, 200, 150, "0.0025"),
        ]
    );
    assert_eq!(
        debug(&mut client, "fixed"),
        ["size:30".to_string(), link(96, 768, 10, 50, 30, "0.001")]
    );
    for (key, count, positives) in [
        (
            "snapped",
            400,
            &[
                23, 293, 426, 486, 516, 538, 623, 712, 900, 1342, 1451, 1459, 1538, 1584, 1671,
                1874,
            ][..],
        ),
        (
            "logged",
            250,
            &[293, 516, 538, 712, 900, 1451, 1459, 1538, 1584, 1671, 1874][..],
        ),
        ("fixed", 30, &[][..]),
    ] {
        let members: Vec<String> = (0..count).map(|i| format!("item{i}")).collect();
        assert!(!mexists(&mut client, key, &members).contains('0'), "{key}");
        let absent: Vec<String> = (0..2000).map(|i| format!("absent{i}")).collect();
        let answers = mexists(&mut client, key, &absent);
        let found: Vec<usize> = answers.match_indices('1').map(|(i, _)| i).collect();
        assert_eq!(found, positives, "{key}");
    }
    // They keep their scheme, and so their own dump header, as they grow.
    assert_eq!(client.cmd(&["BF.ADD", "snapped", "item0"]), b":0\r\n");
    let header = client.cmd(&["BF.SCANDUMP", "logged", "0"]);
    assert!(header.windows(8).any(|w| w == b"sievedBF"));
}

/// The whole SCANDUMP walk of `key`.
fn scandump(client: &mut RawClient, key: &str) -> Vec<Vec<u8>> {
    let mut walk = Vec::new();
    let mut iterator = "0".to_string();
    loop {
        let reply = client.cmd(&["BF.SCANDUMP", key, &iterator]);
        let next = String::from_utf8_lossy(&reply[5..reply.len().min(40)])
            .split("\r\n")
            .next()
            .expect("iterator")
            .to_string();
        walk.push(reply);
        if next == "0" {
            return walk;
        }
        iterator = next;
    }
}

/// A filter keeps RedisBloom's scheme through a snapshot and the append-only file, however
/// `bf-hash-scheme` is set when they are loaded: the scheme is in the filter's header, which
/// the log records at its creation.
#[test]
fn the_scheme_is_recorded_not_taken_from_the_settings_on_load() {
    let dir = crate::support::DataDir::new("scheme-replay");
    let start = |scheme: &str| {
        let mut config = sieved::config::Config::default_for_tests();
        config.dir = dir.0.clone();
        config.appendonly = true;
        config
            .set_many(&[(b"bf-hash-scheme", scheme.as_bytes())])
            .expect("bf-hash-scheme");
        TestServer::start_with(config)
    };
    let server = start("murmur");
    let mut client = server.client();
    let items: Vec<String> = (0..500).map(|i| format!("item{i}")).collect();
    client.cmd(&["BF.RESERVE", "saved", "0.01", "100"]);
    for item in &items[..300] {
        client.cmd(&["BF.ADD", "saved", item]);
    }
    assert_eq!(client.cmd(&["SAVE"]), b"+OK\r\n");
    for item in &items[300..] {
        client.cmd(&["BF.ADD", "saved", item]);
    }
    client.cmd(&["BF.RESERVE", "logged", "0.001", "50", "NONSCALING"]);
    for item in &items[..50] {
        client.cmd(&["BF.ADD", "logged", item]);
    }
    let before: Vec<_> = ["saved", "logged"]
        .iter()
        .map(|key| scandump(&mut client, key))
        .collect();
    assert!(!before[0][0].windows(8).any(|w| w == b"sievedBF"));
    drop(client);
    drop(server);
    let server = start("xxh3");
    let mut client = server.client();
    let after: Vec<_> = ["saved", "logged"]
        .iter()
        .map(|key| scandump(&mut client, key))
        .collect();
    assert!(before == after, "the filters changed across the restart");
    // New filters take the setting.
    client.cmd(&["BF.RESERVE", "new", "0.01", "100"]);
    assert!(scandump(&mut client, "new")[0]
        .windows(8)
        .any(|w| w == b"sievedBF"));
}

/// The machine's memory as /proc/meminfo gives it, where there is one.
fn physical_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// By default one filter may take half the machine's memory, so that crawler-sized filters are
/// accepted where the machine can hold them; absurd ones are still refused before anything is
/// allocated, with the figures in the error.
#[test]
fn the_default_filter_limit_takes_crawler_sized_filters() {
    let server = TestServer::start();
    let mut client = server.client();
    // RedisBloom's first link for 0.000001 (halved): 1,132,420,136 bytes.
    let reply = client.cmd(&["BF.RESERVE", "crawl", "0.000001", "300000000"]);
    match physical_memory() {
        Some(memory) if memory / 2 >= 1_132_420_136 => {
            assert_eq!(reply, b"+OK\r\n");
            assert_eq!(
                client.cmd(&["BF.INFO", "crawl", "SIZE"]),
                b"*1\r\n:1132420232\r\n"
            );
        }
        _ => assert!(reply.starts_with(b"-ERR filter would use 1132420136 bytes")),
    }
    let reply = client.cmd(&["BF.RESERVE", "absurd", "1e-300", "1073741824"]);
    let text = String::from_utf8_lossy(&reply);
    assert!(
        text.starts_with("-ERR filter would use 193") && text.contains("over max-filter-memory ("),
        "{text}"
    );
    assert_eq!(client.cmd(&["EXISTS", "absurd"]), b":0\r\n");
}
