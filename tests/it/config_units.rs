//! Memory values with Redis's units (`100mb`, `1gb`, `1k`) wherever a setting is read: CONFIG
//! SET, flags, environment variables and the configuration file; CONFIG GET answering bytes;
//! CONFIG REWRITE writing them back as Redis writes them, and removing `replicaof` once the
//! server is a primary.
//!
//! The replies below were recorded from Redis 7.4.1 (`CONFIG SET`, then `CONFIG GET`, in this
//! order on one server); when Debian's redis-server is installed the same sequence is replayed
//! against it, so the recording stays true.

use crate::support::{
    free_port, output_of_refused_start, sieved_command, spawn_server, wait_until_serving, DataDir,
    RawClient, RedisServer, Running, TestServer,
};
use std::process::Stdio;

/// Parameter, value given to CONFIG SET, Redis's reply to it, then CONFIG GET's value.
const RECORDED: &[(&str, &str, &str, &str)] = &[
    ("maxmemory", "100mb", "OK", "104857600"),
    ("maxmemory", "1k", "OK", "1000"),
    ("maxmemory", "1kb", "OK", "1024"),
    ("maxmemory", "1K", "OK", "1000"),
    ("maxmemory", "1KB", "OK", "1024"),
    ("maxmemory", "1Kb", "OK", "1024"),
    ("maxmemory", "1m", "OK", "1000000"),
    ("maxmemory", "1mb", "OK", "1048576"),
    ("maxmemory", "1g", "OK", "1000000000"),
    ("maxmemory", "1gb", "OK", "1073741824"),
    ("maxmemory", "1GB", "OK", "1073741824"),
    ("maxmemory", "1b", "OK", "1"),
    ("maxmemory", "7B", "OK", "7"),
    ("maxmemory", "0100", "OK", "100"),
    ("maxmemory", "", "OK", "0"),
    ("maxmemory", "mb", "OK", "0"),
    ("maxmemory", "1.5gb", NOT_MEMORY, "0"),
    ("maxmemory", "-1", NOT_MEMORY, "0"),
    ("maxmemory", "+5", NOT_MEMORY, "0"),
    ("maxmemory", " 5", NOT_MEMORY, "0"),
    ("maxmemory", "5 ", NOT_MEMORY, "0"),
    ("maxmemory", "1t", NOT_MEMORY, "0"),
    ("maxmemory", "1tb", NOT_MEMORY, "0"),
    ("maxmemory", "0x10", NOT_MEMORY, "0"),
    ("maxmemory", "1kbb", NOT_MEMORY, "0"),
    ("maxmemory", "2GB", "OK", "2147483648"),
    ("proto-max-bulk-len", "2mb", "OK", "2097152"),
    ("proto-max-bulk-len", "1k", AT_LEAST_1MB, "2097152"),
    ("proto-max-bulk-len", "1000000", AT_LEAST_1MB, "2097152"),
    ("proto-max-bulk-len", "1m", AT_LEAST_1MB, "2097152"),
    ("proto-max-bulk-len", "abc", NOT_MEMORY, "2097152"),
    ("proto-max-bulk-len", "", AT_LEAST_1MB, "2097152"),
    ("proto-max-bulk-len", "512MB", "OK", "536870912"),
    ("client-query-buffer-limit", "1gb", "OK", "1073741824"),
    (
        "client-query-buffer-limit",
        "1kb",
        AT_LEAST_1MB,
        "1073741824",
    ),
    ("client-query-buffer-limit", "-1", NOT_MEMORY, "1073741824"),
    ("auto-aof-rewrite-min-size", "64mb", "OK", "67108864"),
    ("auto-aof-rewrite-min-size", "1k", "OK", "1000"),
    ("auto-aof-rewrite-min-size", "", "OK", "0"),
    (
        "auto-aof-rewrite-min-size",
        "9223372036854775808",
        "ERR CONFIG SET failed (possibly related to argument '?') - argument must be between 0 \
         and 9223372036854775807 inclusive",
        "0",
    ),
    (
        "auto-aof-rewrite-min-size",
        "8589934591gb",
        "OK",
        "9223372035781033984",
    ),
    ("repl-backlog-size", "16kb", "OK", "16384"),
    ("repl-backlog-size", "1mb", "OK", "1048576"),
    ("repl-backlog-size", "x", NOT_MEMORY, "1048576"),
];

/// Redis's errors, `?` standing for the parameter's name.
const NOT_MEMORY: &str =
    "ERR CONFIG SET failed (possibly related to argument '?') - argument must be a memory value";
const AT_LEAST_1MB: &str = "ERR CONFIG SET failed (possibly related to argument '?') - argument \
                            must be between 1048576 and 9223372036854775807 inclusive";

/// Where sieved answers otherwise, on purpose: Redis's reply, then sieved's.
const DEPARTURES: &[(&str, &str, &str, &str)] = &[
    // Past 2^64 - 1 bytes Redis's arithmetic wraps around: here 0, which is "no limit".
    ("maxmemory", "17179869184gb", "OK", NOT_MEMORY),
    ("maxmemory", "18446744073709551615kb", "OK", NOT_MEMORY),
    // Redis saturates the digits at 2^64 - 1 (its strtoull's overflow is not checked).
    ("maxmemory", "99999999999999999999", "OK", NOT_MEMORY),
    // sieved's maxmemory stops at 2^63 - 1, where Redis's takes any 64-bit value.
    (
        "maxmemory",
        "9223372036854775808",
        "OK",
        "ERR CONFIG SET failed (possibly related to argument '?') - argument must be between 0 \
         and 9223372036854775807 inclusive",
    ),
    // Redis raises a backlog below 16 KiB to 16 KiB; sieved refuses it.
    (
        "repl-backlog-size",
        "1k",
        "OK",
        "ERR CONFIG SET failed (possibly related to argument '?') - argument must be between \
         16384 and 9223372036854775807 inclusive",
    ),
];

/// A simple-string or error reply as text, without its type byte and line end.
fn status(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply);
    text.trim_end_matches("\r\n")
        .trim_start_matches(['+', '-'])
        .to_string()
}

/// CONFIG GET's value of one parameter.
fn config_get(client: &mut RawClient, name: &str) -> String {
    let reply = String::from_utf8(client.cmd(&["CONFIG", "GET", name])).expect("text");
    reply.lines().nth(4).unwrap_or_default().to_string()
}

/// Plays `RECORDED` on the server at `client`, returning each reply and value.
fn play(client: &mut RawClient) -> Vec<(String, String)> {
    RECORDED
        .iter()
        .map(|(name, value, _, _)| {
            let reply = status(&client.cmd(&["CONFIG", "SET", name, value]));
            (reply, config_get(client, name))
        })
        .collect()
}

fn expected(reply: &str, name: &str) -> String {
    reply.replace('?', name)
}

#[test]
fn config_set_reads_memory_values_as_redis() {
    let server = TestServer::start();
    let mut client = server.client();
    for ((name, value, reply, get), (ours, our_get)) in RECORDED.iter().zip(play(&mut client)) {
        assert_eq!(ours, expected(reply, name), "CONFIG SET {name} {value:?}");
        assert_eq!(our_get, *get, "CONFIG GET {name} after {value:?}");
    }
    for (name, value, _, ours) in DEPARTURES {
        let reply = status(&client.cmd(&["CONFIG", "SET", name, value]));
        assert_eq!(reply, expected(ours, name), "CONFIG SET {name} {value:?}");
    }
}

#[test]
fn the_recording_is_what_redis_answers() {
    let Some(redis) = RedisServer::start("config-units-redis") else {
        return;
    };
    let mut client = RawClient::connect(redis.addr);
    for ((name, value, reply, get), (theirs, their_get)) in RECORDED.iter().zip(play(&mut client)) {
        assert_eq!(theirs, expected(reply, name), "CONFIG SET {name} {value:?}");
        assert_eq!(their_get, *get, "CONFIG GET {name} after {value:?}");
    }
    for (name, value, theirs, _) in DEPARTURES {
        let reply = status(&client.cmd(&["CONFIG", "SET", name, value]));
        assert_eq!(reply, expected(theirs, name), "CONFIG SET {name} {value:?}");
    }
}

#[test]
fn flags_variables_and_the_file_take_units() {
    let dir = DataDir::new("units-start");
    let conf = dir.0.join("sieved.conf");
    std::fs::write(&conf, "maxmemory 2gb\nrepl-backlog-size 64KB\n").unwrap();
    let port = free_port();
    let mut command = sieved_command(&dir.0.join("data"), port, &[]);
    command
        .args(["--config", conf.to_str().unwrap()])
        .args(["--proto-max-bulk-len", "8mb"])
        .env("SIEVED_CLIENT_QUERY_BUFFER_LIMIT", "3g")
        .stdin(Stdio::null());
    let child = command.spawn().expect("start sieved");
    let _server = wait_until_serving(Running(child), port);
    let mut client = RawClient::connect(([127, 0, 0, 1], port).into());
    for (name, bytes) in [
        ("maxmemory", "2147483648"),
        ("repl-backlog-size", "65536"),
        ("proto-max-bulk-len", "8388608"),
        ("client-query-buffer-limit", "3000000000"),
    ] {
        assert_eq!(config_get(&mut client, name), bytes, "{name}");
    }
}

/// What sieved prints when it refuses to start with `args` and the file `conf_text`.
fn refusal(args: &[&str], conf_text: Option<&str>) -> String {
    let dir = DataDir::new("units-refused");
    let mut command = sieved_command(&dir.0.join("data"), free_port(), args);
    if let Some(text) = conf_text {
        let conf = dir.0.join("bad.conf");
        std::fs::write(&conf, text).unwrap();
        command.args(["--config", conf.to_str().unwrap()]);
    }
    let output = output_of_refused_start(
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sieved"),
    );
    assert!(!output.status.success());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn start_up_refuses_a_value_that_is_not_memory() {
    let units = "a memory value is a number of bytes, optionally followed by k (1000), kb (1024), \
                 m, mb, g or gb";
    let stderr = refusal(&["--maxmemory", "1tb"], None);
    assert!(
        stderr.contains(&format!("--maxmemory: invalid value '1tb': {units}")),
        "{stderr}"
    );
    let stderr = refusal(&[], Some("maxmemory 100mb\nrepl-backlog-size 1.5mb\n"));
    assert!(
        stderr.contains(&format!(
            "bad.conf:2: repl-backlog-size: invalid value '1.5mb': {units}"
        )),
        "{stderr}"
    );
}

#[test]
fn config_rewrite_writes_units_and_drops_replicaof_of_a_primary() {
    let dir = DataDir::new("units-rewrite");
    let conf = dir.0.join("sieved.conf");
    // A primary nobody runs: the link stays down, which does not matter here.
    let nobody = free_port();
    std::fs::write(
        &conf,
        format!("# mine\nmaxmemory 100mb\nreplicaof 127.0.0.1 {nobody}\nbf-initial-size 100\n"),
    )
    .unwrap();
    let port = free_port();
    let config = conf.to_str().unwrap();
    let _server = spawn_server(
        &dir.0.join("data"),
        port,
        &["--config", config, "--repl-backlog-size", "2mb"],
    );
    let mut client = RawClient::connect(([127, 0, 0, 1], port).into());
    assert_eq!(config_get(&mut client, "maxmemory"), "104857600");
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "auto-aof-rewrite-min-size", "1000000"]),
        b"+OK\r\n"
    );
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "max-filter-memory", "3gb"]),
        b"+OK\r\n"
    );
    assert_eq!(client.cmd(&["REPLICAOF", "NO", "ONE"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    // As Redis 7.4 rewrites: an unchanged line stays as written, memory values get the largest
    // binary unit that divides them, flags given for this run (--repl-backlog-size, and the
    // --save "" that `sieved_command` adds) are written like a CONFIG SET, fixed settings
    // given as flags (--port, --dir) are not, and replicaof goes.
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        "# mine\nmaxmemory 100mb\nbf-initial-size 100\n# Generated by CONFIG REWRITE\n\
         save \"\"\nauto-aof-rewrite-min-size 1000000\nmax-filter-memory 3gb\n\
         repl-backlog-size 2mb\n"
    );
    // Following a primary again writes it back, as two words.
    let line = format!("replicaof 127.0.0.1 {nobody}\n");
    assert_eq!(
        client.cmd(&["REPLICAOF", "127.0.0.1", &nobody.to_string()]),
        b"+OK\r\n"
    );
    assert_eq!(client.cmd(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    let rewritten = std::fs::read_to_string(&conf).unwrap();
    assert!(rewritten.ends_with(&line), "{rewritten}");
}
