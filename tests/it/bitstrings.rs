//! Strings and bit strings, byte for byte as Debian's redis-server answers: seeded random
//! sequences of the string commands (negative ranges, offsets past the end, empty and missing
//! keys, a key of another type, every overflow mode) run on both servers, in RESP2 and RESP3,
//! and every reply must match, except where Redis 8 (sieved's reference) changed what 7.0
//! answers. Then bad input (offsets past the limit, 1,000 BITFIELD subcommands) and the writes
//! surviving a restart, from the append-only file and from a snapshot.

use crate::support::{
    alone_in_process, assert_command_info_as_redis, assert_lines_as_redis,
    assert_lines_as_redis_in_both_protocols, check_writes_survive_restarts, escape, grown_since,
    run_lines_without_errors, RawClient, RedisServer, Resp, Rng, TestServer,
};

/// Keys the sequences write: `w` holds another type (a list on Redis, a Bloom filter on
/// sieved), so string commands on it fail with WRONGTYPE on both.
const KEYS: &[&str] = &["a", "b", "c", "w", "missing"];

/// Keys the sequences read: those, and `fl`, which mostly INCRBYFLOAT writes, so that its
/// sums run long.
const READ_KEYS: &[&str] = &["a", "b", "c", "w", "missing", "fl"];

const READS: &[&str] = &[
    "GETBIT",
    "BITCOUNT",
    "BITPOS",
    "BITFIELD_RO",
    "GETRANGE",
    "STRLEN",
    "GET",
    "MGET",
    "EXISTS",
];

fn offset(rng: &mut Rng) -> String {
    match rng.below(10) {
        0 => rng
            .pick(&["-1", "abc", "", "4294967296", "99999999999999999999", "#2"])
            .into(),
        1..=3 => rng.below(16).to_string(),
        4..=6 => rng.below(200).to_string(),
        _ => rng.below(3000).to_string(),
    }
}

fn index(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => rng
            .pick(&["x", "9223372036854775807", "-9223372036854775808", "1.5"])
            .into(),
        1 | 2 => (-(rng.below(40) as i64)).to_string(),
        3 => (-(rng.below(4000) as i64)).to_string(),
        4 => rng.below(4000).to_string(),
        _ => rng.below(40).to_string(),
    }
}

fn value(rng: &mut Rng) -> String {
    match rng.below(8) {
        0 => String::new(),
        1 => rng
            .pick(&[
                "0",
                "-1",
                "9223372036854775807",
                "-9223372036854775808",
                "10",
            ])
            .into(),
        2 => rng.pick(&["1.5", "abc", " 1", "01", "3e2", "-0"]).into(),
        3 => "\u{7f}\u{1}\u{ff}".into(),
        _ => (0..rng.below(12))
            .map(|_| char::from(b'a' + rng.below(26) as u8))
            .collect(),
    }
}

fn field_type(rng: &mut Rng) -> String {
    match rng.below(10) {
        0 => rng.pick(&["u64", "i65", "i0", "x8", "I8", "u", ""]).into(),
        1 => rng.pick(&["i64", "u63", "i1", "u1"]).into(),
        _ => format!("{}{}", rng.pick(&["i", "u"]), 1 + rng.below(63)),
    }
}

fn field_value(rng: &mut Rng) -> String {
    match rng.below(6) {
        0 => rng
            .pick(&[
                "9223372036854775807",
                "-9223372036854775808",
                "x",
                "255",
                "-128",
            ])
            .into(),
        1 => (-(rng.below(300) as i64)).to_string(),
        _ => rng.below(300).to_string(),
    }
}

fn bitfield_ops(rng: &mut Rng, words: &mut Vec<String>, read_only: bool) {
    for _ in 0..rng.below(5) {
        let choice = if read_only { 0 } else { rng.below(8) };
        match choice {
            0..=2 => words.push("GET".into()),
            3 | 4 => words.push("SET".into()),
            5 | 6 => words.push("INCRBY".into()),
            _ => {
                words.push("OVERFLOW".into());
                words.push(rng.pick(&["WRAP", "SAT", "FAIL", "fail", "BAD"]).into());
                continue;
            }
        }
        words.push(field_type(rng));
        words.push(match rng.below(6) {
            0 => format!("#{}", rng.below(20)),
            _ => offset(rng),
        });
        if words[words.len() - 3] != "GET" {
            words.push(field_value(rng));
        }
    }
    if rng.below(20) == 0 {
        words.push("BAD".into());
    }
}

/// An INCRBYFLOAT increment: decimals of every length and exponent Redis reads with strtold
/// (but hexadecimal and subnormal ones, which sieved refuses: see src/cmd/extended.rs).
fn float_step(rng: &mut Rng) -> String {
    match rng.below(6) {
        0 => rng
            .pick(&[
                "inf", "-inf", "nan", "", "abc", "1e5000", "1e-5000", "1e4900", "-1e4900",
            ])
            .into(),
        1 => rng
            .pick(&["0.1", "0.2", "-0.3", "1e-17", "3e2", "+1.5", ".5", "5."])
            .into(),
        _ => {
            let digits = |rng: &mut Rng, n: u64| -> String {
                (0..n)
                    .map(|_| char::from(b'0' + rng.below(10) as u8))
                    .collect()
            };
            let mut step = String::new();
            if rng.below(3) == 0 {
                step.push('-');
            }
            let whole = 1 + rng.below(12);
            step.push_str(&digits(rng, whole));
            if rng.below(3) > 0 {
                step.push('.');
                let fraction = rng.below(20);
                step.push_str(&digits(rng, fraction));
            }
            if rng.below(4) == 0 {
                step.push_str(&format!("e{}", rng.below(80) as i64 - 40));
            }
            step
        }
    }
}

fn command(rng: &mut Rng) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let name = rng.pick(&[
        "SETBIT",
        "SETBIT",
        "SETBIT",
        "GETBIT",
        "GETBIT",
        "BITCOUNT",
        "BITCOUNT",
        "BITPOS",
        "BITPOS",
        "BITOP",
        "BITFIELD",
        "BITFIELD",
        "BITFIELD_RO",
        "GETRANGE",
        "GETRANGE",
        "SETRANGE",
        "SETRANGE",
        "APPEND",
        "APPEND",
        "STRLEN",
        "SET",
        "GET",
        "SETNX",
        "GETSET",
        "MSET",
        "MGET",
        "MSETNX",
        "INCR",
        "DECR",
        "INCRBY",
        "DECRBY",
        "INCRBYFLOAT",
        "GETDEL",
        "SETEX",
        "PSETEX",
        "DEL",
        "EXISTS",
    ]);
    words.push(name.into());
    let key = if name == "INCRBYFLOAT" {
        rng.pick(&["fl", "fl", "fl", "a", "w"])
    } else if READS.contains(&name) {
        rng.pick(READ_KEYS)
    } else {
        rng.pick(KEYS)
    };
    match name {
        "BITOP" => {
            words.push(rng.pick(&["AND", "or", "XOR", "NOT", "NOT", "NAND"]).into());
            words.push(rng.pick(KEYS).into());
            for _ in 0..rng.below(4) {
                words.push(rng.pick(READ_KEYS).into());
            }
            return words;
        }
        "MSET" | "MSETNX" => {
            for _ in 0..1 + rng.below(3) {
                words.push(rng.pick(KEYS).into());
                words.push(value(rng));
            }
            if rng.below(10) == 0 {
                words.pop();
            }
            return words;
        }
        "MGET" | "DEL" | "EXISTS" => {
            for _ in 0..1 + rng.below(4) {
                words.push(rng.pick(READ_KEYS).into());
            }
            return words;
        }
        _ => words.push(key.into()),
    }
    match name {
        "SETBIT" => {
            words.push(offset(rng));
            words.push(rng.pick(&["0", "1", "1", "2", "-1", "x"]).into());
        }
        "GETBIT" => words.push(offset(rng)),
        "BITCOUNT" => {
            for _ in 0..[0, 2, 2, 3, 1][rng.index(5)] {
                words.push(index(rng));
            }
            if words.len() == 4 {
                words.push(rng.pick(&["BIT", "byte", "BYTE", "bits"]).into());
                if rng.below(2) == 0 {
                    words.pop();
                }
            }
        }
        "BITPOS" => {
            words.push(rng.pick(&["0", "1", "1", "2", "x"]).into());
            for _ in 0..rng.below(3) {
                words.push(index(rng));
            }
            if words.len() == 5 && rng.below(2) == 0 {
                words.push(rng.pick(&["BIT", "byte", "BYTE", "bits"]).into());
            }
        }
        "BITFIELD" => bitfield_ops(rng, &mut words, false),
        "BITFIELD_RO" => {
            let read_only = rng.below(8) != 0;
            bitfield_ops(rng, &mut words, read_only)
        }
        "GETRANGE" => {
            words.push(index(rng));
            words.push(index(rng));
        }
        "SETRANGE" => {
            words.push(match rng.below(8) {
                0 => rng.pick(&["-1", "x", "536870912"]).into(),
                _ => rng.below(100).to_string(),
            });
            words.push(value(rng));
        }
        "APPEND" | "SET" | "SETNX" | "GETSET" => words.push(value(rng)),
        "INCRBY" | "DECRBY" => words.push(value(rng)),
        "INCRBYFLOAT" => words.push(float_step(rng)),
        "SETEX" | "PSETEX" => {
            words.push(rng.pick(&["100", "100000", "0", "-5", "x"]).into());
            words.push(value(rng));
        }
        _ => {}
    }
    words
}

/// Where Redis 7.0 answers differently from Redis 8, which sieved follows: the reason, if
/// this is such a place.
fn known_difference(words: &[String], ours: &[u8], theirs: &[u8]) -> Option<&'static str> {
    let name = words[0].to_ascii_uppercase();
    // 7.0 resolves an end before the string's start to its first byte; 8 to nothing.
    if name == "GETRANGE" && ours == b"$0\r\n\r\n" && theirs.starts_with(b"$1\r\n") {
        return Some("GETRANGE end before the start");
    }
    // 7.0 looks the key up before it reads the arguments; 8 reads them first.
    if (name == "BITCOUNT" || name == "BITPOS")
        && ours.starts_with(b"-ERR")
        && (theirs == b":0\r\n" || theirs == b":-1\r\n" || theirs.starts_with(b"-WRONGTYPE"))
    {
        return Some("arguments checked before the key");
    }
    None
}

/// Runs `commands` pipelined on both servers (after the same setup) and compares the replies;
/// returns how many differed in a known way.
fn compare(ours: &mut RawClient, theirs: &mut RawClient, commands: &[Vec<String>]) -> usize {
    ours.cmd(&["FLUSHALL"]);
    theirs.cmd(&["FLUSHALL"]);
    ours.cmd(&["BF.ADD", "w", "x"]);
    theirs.cmd(&["LPUSH", "w", "x"]);
    let mut pipeline = Vec::new();
    for words in commands {
        let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        pipeline.extend(crate::support::encode_command(&args));
    }
    ours.send(&pipeline);
    theirs.send(&pipeline);
    let mut known = 0;
    for words in commands {
        let (mine, reference) = (ours.read_reply(), theirs.read_reply());
        if mine == reference {
            continue;
        }
        if known_difference(words, &mine, &reference).is_some() {
            known += 1;
            continue;
        }
        panic!(
            "{:?} ({:?}): sieved {} redis-server {}",
            words,
            ours.resp,
            escape(&mine),
            escape(&reference)
        );
    }
    known
}

#[test]
fn random_string_commands_answer_as_redis_does() {
    let Some(redis) = RedisServer::start("bitstrings-redis") else {
        return;
    };
    let server = TestServer::start();
    let mut known = 0;
    for resp in [Resp::Two, Resp::Three] {
        let mut ours = RawClient::speaking(server.addr, resp);
        let mut theirs = RawClient::speaking(redis.addr, resp);
        for seed in 1..=60u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let commands: Vec<Vec<String>> = (0..200).map(|_| command(&mut rng)).collect();
            known += compare(&mut ours, &mut theirs, &commands);
        }
    }
    // Both kinds of known difference come up, or the sequences miss those edges.
    assert!(known > 0);
}

/// Edge cases picked by hand, each checked in both protocols.
#[test]
fn chosen_edges_answer_as_redis_does() {
    let Some(redis) = RedisServer::start("bitstrings-redis") else {
        return;
    };
    let server = TestServer::start();
    let lines: &[&str] = &[
        "SET s foobar",
        "BITCOUNT s",
        "BITCOUNT s 1 1",
        "BITCOUNT s 5 30 BIT",
        "BITCOUNT s -1 -2",
        "BITCOUNT s 0 -1 bit",
        "BITPOS s 0",
        "BITPOS s 1 2",
        "BITPOS s 1 2 -1 BYTE",
        "BITPOS s 0 7 15 BIT",
        "BITPOS s 1 -3 -1 bit",
        "SET z \u{ff}\u{ff}",
        "BITPOS z 0",
        "BITPOS z 0 0",
        "BITPOS z 0 0 -1",
        "BITPOS z 0 0 -1 bit",
        "BITPOS z 1 100",
        "SET e \"\"",
        "BITPOS e 0",
        "BITPOS e 1",
        "BITCOUNT e 0 -1",
        "GETRANGE e 0 -1",
        "SETBIT n 7 1",
        "GET n",
        "SETBIT n 100 1",
        "STRLEN n",
        "BITOP NOT dest n",
        "GET dest",
        "BITOP AND dest n missing",
        "BITOP OR dest missing missing",
        "EXISTS dest",
        "BITFIELD bf SET i8 0 -100 GET u4 0 INCRBY i5 100 1 GET i8 #1",
        "BITFIELD bf OVERFLOW SAT INCRBY u2 102 100 OVERFLOW FAIL INCRBY i8 0 -200 GET u8 0",
        "BITFIELD bf OVERFLOW WRAP INCRBY i64 0 9223372036854775807 INCRBY i64 0 9223372036854775807",
        "BITFIELD bf OVERFLOW SAT SET i64 0 -9223372036854775808 INCRBY i64 0 -1",
        "BITFIELD bf OVERFLOW FAIL SET u63 64 -1 SET u63 64 9223372036854775807",
        "BITFIELD_RO bf GET i64 0 GET u63 64",
        "BITFIELD_RO bf INCRBY u8 0 1",
        "BITFIELD missing GET u8 0",
        "EXISTS missing",
        "BITFIELD fresh OVERFLOW FAIL INCRBY u8 16 300",
        "STRLEN fresh",
        "INCR ctr",
        "INCRBY ctr 9223372036854775806",
        "INCR ctr",
        "DECRBY ctr -9223372036854775808",
        "SET ctr -9223372036854775808",
        "DECR ctr",
        "INCRBYFLOAT f 10.5",
        "INCRBYFLOAT f -0.25",
        "INCRBYFLOAT f 5.0e3",
        "INCRBYFLOAT f -10260.25",
        "GET f",
        "INCRBYFLOAT f 0.1",
        "INCRBYFLOAT f 0.2",
        "INCRBYFLOAT big 1e4900",
        "INCRBYFLOAT big 1",
        "INCRBYFLOAT big -1e4900",
        "INCRBYFLOAT huge 1.7976931348623157e308",
        "INCRBYFLOAT huge 1e308",
        "INCRBYFLOAT tiny 1e-4930",
        "INCRBYFLOAT tiny 3.0e-20",
        "SETRANGE r 5 abc",
        "GET r",
        "SETRANGE r 1 \"\"",
        "SETRANGE nothing 10 \"\"",
        "EXISTS nothing",
        "APPEND r xyz",
        "GETRANGE r -3 -1",
        "GETRANGE r 2 100",
        "GETRANGE r -100 2",
        "MSET m1 1 m2 2 m1 3",
        "MGET m1 m2 missing",
        "MSETNX m3 1 m1 2",
        "MSETNX m3 1 m4 2",
        "GETSET m3 new",
        "GETDEL m3",
        "GETDEL m3",
        "SETEX t 0 v",
        "SETEX t 9223372036854775807 v",
        "PSETEX t -1 v",
        "SETEX t 10 v",
    ];
    assert_lines_as_redis_in_both_protocols(server.addr, redis.addr, lines);
}

/// COMMAND INFO for each string and bitmap command, as Redis 7.0 reports it.
#[test]
fn command_info_is_redis_70s() {
    let Some(redis) = RedisServer::start("bitstrings-redis") else {
        return;
    };
    let server = TestServer::start();
    let names = [
        "setbit",
        "getbit",
        "bitcount",
        "bitpos",
        "bitop",
        "bitfield",
        "bitfield_ro",
        "getrange",
        "setrange",
        "append",
        "strlen",
        "setnx",
        "getset",
        "mset",
        "mget",
        "incr",
        "incrby",
        "decr",
        "decrby",
        "incrbyfloat",
        "getdel",
        "setex",
        "psetex",
        "msetnx",
        "set",
        "get",
    ];
    assert_command_info_as_redis(server.addr, redis.addr, &names);
}

#[test]
fn bad_offsets_and_long_bitfields_get_redis_errors_without_allocating() {
    if !alone_in_process(
        module_path!(),
        "bad_offsets_and_long_bitfields_get_redis_errors_without_allocating",
    ) {
        return;
    }
    let Some(redis) = RedisServer::start("bitstrings-redis") else {
        return;
    };
    let server = TestServer::start();
    let mut ours = server.client();
    let mut theirs = RawClient::connect(redis.addr);
    let before = sieved::memory::allocated();
    let lines = [
        "SETBIT k 4294967296 1",
        "SETBIT k 4294967295 2",
        "GETBIT k 4294967296",
        "SETRANGE k 536870912 x",
        "SETRANGE k 536870911 \"\"",
        "BITFIELD k SET u8 4294967296 1",
        "BITFIELD k SET u8 #536870912 1",
        "BITFIELD k SET i64 #9223372036854775807 1",
        "EXISTS k",
    ];
    assert_lines_as_redis(&mut ours, &mut theirs, &lines, "");
    assert!(
        grown_since(before) < 1 << 20,
        "{} bytes",
        grown_since(before)
    );

    // The limit is proto-max-bulk-len, whatever it is set to.
    for client in [&mut ours, &mut theirs] {
        assert_eq!(
            client.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "1048576"]),
            b"+OK\r\n"
        );
    }
    let lines = [
        "SETBIT k 8388608 1",
        "SETBIT k 8388607 1",
        "STRLEN k",
        "SETRANGE k 1048575 xy",
        "APPEND k x",
        "SETRANGE k 1048575 x",
        "BITFIELD k SET u8 8388600 1",
        "BITFIELD k SET u8 8388608 1",
    ];
    assert_lines_as_redis(&mut ours, &mut theirs, &lines, "");

    // A thousand subcommands: one reply each, in order.
    let mut words: Vec<String> = vec!["BITFIELD".into(), "long".into()];
    for i in 0..1000 {
        match i % 4 {
            0 => words.extend(["SET".into(), "u8".into(), format!("#{i}"), i.to_string()]),
            1 => words.extend([
                "INCRBY".into(),
                "i5".into(),
                format!("{}", i * 3),
                "7".into(),
            ]),
            2 => words.extend(["OVERFLOW".into(), ["WRAP", "SAT", "FAIL"][i % 3].into()]),
            _ => words.extend(["GET".into(), "i16".into(), format!("{}", i * 5)]),
        }
    }
    let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
    let mine = ours.command(&args);
    assert!(mine.starts_with(b"*750\r\n"), "{}", escape(&mine[..20]));
    assert_eq!(escape(&mine), escape(&theirs.command(&args)));
    assert_eq!(ours.cmd(&["GET", "long"]), theirs.cmd(&["GET", "long"]));
}

/// Every kind of string write, with a string past the size a snapshot copies in one piece.
const WRITES: &[&str] = &[
    "SETBIT bits 9000000 1",
    "SETBIT bits 3 1",
    "SETRANGE range 10 hello",
    "APPEND range !",
    "INCR counter",
    "INCRBY counter 41",
    "DECR counter",
    "INCRBYFLOAT float 1.5",
    "INCRBYFLOAT float 0.25",
    "BITFIELD field SET u8 0 200 OVERFLOW SAT INCRBY u8 0 100 INCRBY i16 8 -5",
    "MSET m1 one m2 two",
    "MSETNX m3 three",
    "SETNX m1 ignored",
    "GETSET m2 second",
    "GETDEL m3",
    "SET source1 abc",
    "SET source2 xyz",
    "BITOP XOR xored source1 source2",
    "SETEX volatile 1000 v",
    "PSETEX pvolatile 1000000 v",
];

fn run_writes(client: &mut RawClient) {
    run_lines_without_errors(client, WRITES);
}

fn state(client: &mut RawClient) -> Vec<u8> {
    let mut state = client.cmd(&["SIEVED.DIGEST"]);
    for key in [
        "bits", "range", "counter", "float", "field", "m1", "m2", "m3", "xored",
    ] {
        state.extend(client.cmd(&["GET", key]));
    }
    for key in ["volatile", "pvolatile", "bits"] {
        state.extend(client.cmd(&["PEXPIRETIME", key]));
    }
    state
}

/// Every string write comes back after a kill -9: from the log, from a compaction, from a
/// snapshot.
#[test]
fn string_writes_survive_restarts() {
    check_writes_survive_restarts("bitstrings", run_writes, state);
}

/// Growing a string counts against `maxmemory` before anything is allocated: a SETBIT that
/// would need 100 MB more than the limit allows is refused, and allocates nothing.
#[test]
fn growth_past_maxmemory_is_refused_before_allocating() {
    if !alone_in_process(
        module_path!(),
        "growth_past_maxmemory_is_refused_before_allocating",
    ) {
        return;
    }
    let server = TestServer::start();
    let mut client = server.client();
    assert_eq!(client.cmd(&["SETBIT", "k", "7", "1"]), b":0\r\n");
    let limit = sieved::memory::allocated() + (10 << 20);
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "maxmemory", &limit.to_string()]),
        b"+OK\r\n"
    );
    let before = sieved::memory::allocated();
    for command in [
        &["SETBIT", "k", "800000000", "1"][..],
        &["SETBIT", "new", "800000000", "1"],
        &["SETRANGE", "k", "100000000", "x"],
        &["BITFIELD", "k", "SET", "u8", "800000000", "1"],
    ] {
        assert_eq!(
            escape(&client.cmd(command)),
            "-OOM command not allowed when used memory > 'maxmemory'.\\r\\n",
            "{command:?}"
        );
    }
    assert!(
        grown_since(before) < 1 << 20,
        "{} bytes",
        grown_since(before)
    );
    assert_eq!(client.cmd(&["STRLEN", "k"]), b":1\r\n");
    assert_eq!(client.cmd(&["EXISTS", "new"]), b":0\r\n");
    // Within the limit, it grows.
    assert_eq!(client.cmd(&["SETBIT", "k", "8000000", "1"]), b":0\r\n");
}
