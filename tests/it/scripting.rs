//! Scripting against the real binary: EVAL, EVALSHA, SCRIPT, FUNCTION and FCALL as Redis 7.4
//! answers them, a crawler's "check and enqueue" script (BF.MADD, then HSET and RPUSH for what
//! was new), and a script's effects surviving kill -9 through the append-only file; FUNCTION's
//! libraries as data: in snapshots, the log (kill -9 and a compaction), replicas (full sync and
//! stream) and `import-rdb` of an RDB that Redis 7.4 wrote.

use crate::support::{binary, encode_command, free_port, spawn_server, DataDir, RawClient};

fn client(port: u16) -> RawClient {
    RawClient::local(port)
}

fn bulk(text: &str) -> Vec<u8> {
    format!("${}\r\n{text}\r\n", text.len()).into_bytes()
}

fn text(reply: &[u8]) -> String {
    String::from_utf8_lossy(reply).into_owned()
}

#[test]
fn eval_evalsha_script_and_functions_answer_as_redis() {
    let dir = DataDir::new("scripting-commands");
    let port = free_port();
    let _server = spawn_server(&dir.0, port, &[]);
    let mut c = RawClient::local(port);

    assert_eq!(c.cmd(&["EVAL", "return 1", "0"]), b":1\r\n");
    assert_eq!(
        c.cmd(&[
            "EVAL",
            "return {KEYS[1], ARGV[1], ARGV[2]}",
            "1",
            "k",
            "a",
            "b"
        ]),
        b"*3\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    assert_eq!(
        c.cmd(&[
            "EVAL",
            "return redis.call('SET', KEYS[1], ARGV[1])",
            "1",
            "s",
            "v"
        ]),
        b"+OK\r\n"
    );
    assert_eq!(c.cmd(&["GET", "s"]), bulk("v"));
    assert_eq!(
        c.cmd(&["EVAL", "return redis.call('GET', 'missing')", "0"]),
        b"$-1\r\n"
    );
    assert_eq!(
        c.cmd(&["EVAL", "return 1", "2", "a"]),
        b"-ERR Number of keys can't be greater than number of args\r\n"
    );
    assert_eq!(
        c.cmd(&["EVAL", "return 1", "-1"]),
        b"-ERR Number of keys can't be negative\r\n"
    );
    assert_eq!(
        c.cmd(&["EVAL", "return 1", "x"]),
        b"-ERR value is not an integer or out of range\r\n"
    );

    // The cache: SCRIPT LOAD's SHA1 runs with EVALSHA; unknown ones get NOSCRIPT.
    let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    assert_eq!(c.cmd(&["SCRIPT", "LOAD", "return 1"]), bulk(sha));
    assert_eq!(c.cmd(&["EVALSHA", sha, "0"]), b":1\r\n");
    assert_eq!(c.cmd(&["EVALSHA", &sha.to_uppercase(), "0"]), b":1\r\n");
    assert_eq!(
        c.cmd(&[
            "SCRIPT",
            "EXISTS",
            sha,
            "0000000000000000000000000000000000000000"
        ]),
        b"*2\r\n:1\r\n:0\r\n"
    );
    assert_eq!(
        c.cmd(&["EVALSHA", "0000000000000000000000000000000000000000", "0"]),
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
    );
    assert_eq!(c.cmd(&["SCRIPT", "FLUSH"]), b"+OK\r\n");
    assert_eq!(
        c.cmd(&["EVALSHA", sha, "0"]),
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
    );
    assert_eq!(
        c.cmd(&["SCRIPT", "KILL"]),
        b"-NOTBUSY No scripts in execution right now.\r\n"
    );

    // Errors as Redis 7.4 words them.
    let script = "return redis.call('nosuch')";
    let reply = text(&c.cmd(&["EVAL", script, "0"]));
    assert!(
        reply.starts_with("-ERR Unknown Redis command called from script script: "),
        "{reply}"
    );
    assert_eq!(
        c.cmd(&["EVAL", "return redis.pcall('incr', KEYS[1])", "1", "s"]),
        b"-ERR value is not an integer or out of range\r\n"
    );
    let reply = text(&c.cmd(&["EVAL", "return redis.call('eval', 'return 1', 0)", "0"]));
    assert!(
        reply.starts_with("-ERR This Redis command is not allowed from script script: "),
        "{reply}"
    );
    let reply = text(&c.cmd(&["EVAL_RO", "return redis.call('set', 'x', 1)", "0"]));
    assert!(
        reply.starts_with("-ERR Write commands are not allowed from read-only scripts."),
        "{reply}"
    );
    assert_eq!(
        c.cmd(&["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "s"]),
        bulk("v")
    );
    // A script's SELECT is its own: the caller stays in its database.
    assert_eq!(
        c.cmd(&[
            "EVAL",
            "redis.call('select', 1) return redis.call('set', 'in1', 'x')",
            "0"
        ]),
        b"+OK\r\n"
    );
    assert_eq!(c.cmd(&["EXISTS", "in1"]), b":0\r\n");

    // FUNCTION LOAD, FCALL, FCALL_RO.
    let library = "#!lua name=mylib\n\
        redis.register_function('setget', function(keys, args) \
            redis.call('set', keys[1], args[1]) return redis.call('get', keys[1]) end)\n\
        redis.register_function{function_name='peek', callback=function(keys) \
            return redis.call('get', keys[1]) end, flags={'no-writes'}}";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", library]), bulk("mylib"));
    assert_eq!(
        c.cmd(&["FUNCTION", "LOAD", library]),
        b"-ERR Library 'mylib' already exists\r\n"
    );
    assert_eq!(
        c.cmd(&["FUNCTION", "LOAD", "REPLACE", library]),
        bulk("mylib")
    );
    assert_eq!(c.cmd(&["FCALL", "setget", "1", "f", "fv"]), bulk("fv"));
    assert_eq!(c.cmd(&["FCALL_RO", "peek", "1", "f"]), bulk("fv"));
    assert_eq!(
        c.cmd(&["FCALL_RO", "setget", "1", "f", "x"]),
        b"-ERR Can not execute a script with write flag using *_ro command.\r\n"
    );
    assert_eq!(
        c.cmd(&["FCALL", "nosuch", "0"]),
        b"-ERR Function not found\r\n"
    );
    let listed = text(&c.cmd(&["FUNCTION", "LIST"]));
    assert!(
        listed.contains("mylib") && listed.contains("setget") && listed.contains("no-writes"),
        "{listed}"
    );
    assert_eq!(c.cmd(&["FUNCTION", "DELETE", "mylib"]), b"+OK\r\n");
    assert_eq!(
        c.cmd(&["FCALL", "setget", "1", "f", "x"]),
        b"-ERR Function not found\r\n"
    );
}

/// A crawler's atomic "add requests": BF.MADD decides which URLs are new; only those are stored
/// in a hash and queued, in one script, as Crawlee's Redis storage does.
const ADD_REQUESTS: &str = "\
local seen, queue, data = KEYS[1], KEYS[2], KEYS[3]
local urls = cjson.decode(ARGV[1])
local added = redis.call('BF.MADD', seen, unpack(urls))
local fresh = {}
for i, url in ipairs(urls) do
  if added[i] == 1 then
    redis.call('HSET', data, url, cjson.encode({url = url}))
    fresh[#fresh + 1] = url
  end
end
if #fresh > 0 then
  redis.call('RPUSH', queue, unpack(fresh))
end
return cjson.encode(fresh)";

#[test]
fn a_script_adds_to_a_bloom_filter_then_stores_and_queues_what_was_new() {
    let dir = DataDir::new("scripting-crawler");
    let port = free_port();
    let _server = spawn_server(&dir.0, port, &[]);
    let mut c = RawClient::local(port);
    let sha = String::from_utf8(c.cmd(&["SCRIPT", "LOAD", ADD_REQUESTS])).unwrap();
    let sha = sha.lines().nth(1).expect("the SHA1").to_string();
    let keys = ["seen", "queue", "data"];
    let run = |c: &mut RawClient, urls: &str| {
        let mut args = vec!["EVALSHA", &sha, "3"];
        args.extend(keys);
        args.push(urls);
        c.cmd(&args)
    };
    assert_eq!(
        run(&mut c, r#"["https://a/","https://b/"]"#),
        bulk(r#"["https:\/\/a\/","https:\/\/b\/"]"#)
    );
    assert_eq!(
        run(&mut c, r#"["https://b/","https://c/"]"#),
        bulk(r#"["https:\/\/c\/"]"#)
    );
    assert_eq!(run(&mut c, r#"["https://a/"]"#), bulk("{}"));
    assert_eq!(
        c.cmd(&["LRANGE", "queue", "0", "-1"]),
        b"*3\r\n$10\r\nhttps://a/\r\n$10\r\nhttps://b/\r\n$10\r\nhttps://c/\r\n"
    );
    assert_eq!(c.cmd(&["HLEN", "data"]), b":3\r\n");
    assert_eq!(
        c.cmd(&[
            "BF.MEXISTS",
            "seen",
            "https://a/",
            "https://c/",
            "https://d/"
        ]),
        b"*3\r\n:1\r\n:1\r\n:0\r\n"
    );
    // The commands the script called are counted as Redis counts them.
    let stats = text(&c.cmd(&["INFO", "commandstats"]));
    assert!(stats.contains("cmdstat_bf.madd:calls=3"), "{stats}");
    assert!(stats.contains("cmdstat_evalsha:calls=3"), "{stats}");
}

/// What a script did is logged as its effects: after kill -9 the log rebuilds the same data,
/// though the script read the clock and random numbers; a script that failed half-way keeps
/// the writes it made before failing, logged too.
#[test]
fn script_effects_survive_kill_9_through_the_log() {
    let dir = DataDir::new("scripting-aof");
    let port = free_port();
    let server = spawn_server(
        &dir.0,
        port,
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    let mut c = RawClient::local(port);
    let script = "\
        local t = redis.call('TIME')
        redis.call('SET', KEYS[1], t[1] .. '.' .. t[2] .. '/' .. math.random())
        redis.call('RPUSH', KEYS[2], math.random(1000000), math.random(1000000))
        return redis.call('INCR', KEYS[3])";
    for round in 1..=5 {
        assert_eq!(
            c.cmd(&["EVAL", script, "3", "t", "l", "n"]),
            format!(":{round}\r\n").into_bytes()
        );
    }
    let half = "redis.call('SET', 'before', 1) redis.call('INCR', 'before-list-is-not-int') \
                return redis.call('LPUSH', 'before', 1)";
    c.cmd(&["RPUSH", "before-list-is-not-int", "x"]);
    let reply = text(&c.cmd(&["EVAL", half, "0"]));
    assert!(reply.starts_with("-WRONGTYPE"), "{reply}");
    let digest = c.cmd(&["SIEVED.DIGEST"]);
    let value = c.cmd(&["GET", "t"]);
    server.kill();

    let _server = spawn_server(&dir.0, port, &["--appendonly", "yes"]);
    let mut c = RawClient::local(port);
    assert_eq!(c.cmd(&["GET", "t"]), value);
    assert_eq!(c.cmd(&["GET", "before"]), bulk("1"));
    assert_eq!(c.cmd(&["SIEVED.DIGEST"]), digest);
}

/// Past busy-reply-threshold a running script makes other clients' commands answer BUSY;
/// SCRIPT KILL stops a script that has not written, and the server serves again. One that has
/// written cannot be killed (UNKILLABLE), as in Redis.
#[test]
fn busy_scripts_answer_busy_and_script_kill_stops_them() {
    let dir = DataDir::new("scripting-busy");
    let port = free_port();
    let _server = spawn_server(&dir.0, port, &["--busy-reply-threshold", "100"]);
    let mut runner = RawClient::local(port);
    let mut other = RawClient::local(port);
    let busy = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN \
                NOSAVE.\r\n";

    runner.send(&encode_command(&[b"EVAL", b"while true do end", b"0"]));
    wait_for_busy(&mut other, busy);
    assert_eq!(
        other.cmd(&["FUNCTION", "KILL"]),
        busy.as_bytes(),
        "FUNCTION KILL names the SCRIPT KILL a running EVAL needs"
    );
    assert_eq!(other.cmd(&["SCRIPT", "KILL"]), b"+OK\r\n");
    let killed = text(&runner.read_reply());
    assert!(
        killed.starts_with("-ERR Script killed by user with SCRIPT KILL..."),
        "{killed}"
    );
    assert_eq!(other.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(runner.cmd(&["EVAL", "return 2", "0"]), b":2\r\n");

    runner.send(&encode_command(&[
        b"EVAL",
        b"redis.call('set', 'w', 1) while true do end",
        b"0",
    ]));
    wait_for_busy(&mut other, busy);
    let refused = text(&other.cmd(&["SCRIPT", "KILL"]));
    assert!(refused.starts_with("-UNKILLABLE "), "{refused}");
    // The server is left running the script; the test's kill -9 ends it.
}

/// PINGs until the server answers BUSY (a guard stops a test that would otherwise hang).
fn wait_for_busy(client: &mut RawClient, busy: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let reply = client.cmd(&["PING"]);
        if reply == busy.as_bytes() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never busy: {}",
            text(&reply)
        );
    }
}

/// Two libraries, one of them read-only, as a crawler's seen-set might use them.
const SEEN: &str = "#!lua name=seen
redis.register_function('seen_add', function(keys, args) return redis.call('SADD', keys[1], args[1]) end)
redis.register_function{function_name='seen_count', callback=function(keys) return redis.call('SCARD', keys[1]) end, flags={'no-writes'}}";
const QUEUE: &str = "#!lua name=queue
redis.register_function('enqueue', function(keys, args) return redis.call('RPUSH', keys[1], args[1]) end)";

/// Loads `SEEN` and `QUEUE`, replaces `QUEUE`, adds through both, and deletes `QUEUE`: only
/// `SEEN` is left, after a history of every kind of change.
fn load_then_change_libraries(c: &mut RawClient) {
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", SEEN]), bulk("seen"));
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", QUEUE]), bulk("queue"));
    assert_eq!(
        c.cmd(&["FUNCTION", "LOAD", "REPLACE", QUEUE]),
        bulk("queue")
    );
    assert_eq!(c.cmd(&["FCALL", "seen_add", "1", "s", "a"]), b":1\r\n");
    assert_eq!(c.cmd(&["FCALL", "enqueue", "1", "q", "a"]), b":1\r\n");
    assert_eq!(c.cmd(&["FUNCTION", "DELETE", "queue"]), b"+OK\r\n");
}

/// What is left: `seen` runs, `queue` is gone.
fn assert_only_seen_is_left(c: &mut RawClient) {
    assert_eq!(c.cmd(&["FCALL_RO", "seen_count", "1", "s"]), b":1\r\n");
    assert_eq!(c.cmd(&["FCALL", "seen_add", "1", "s", "b"]), b":1\r\n");
    assert_eq!(
        c.cmd(&["FCALL", "enqueue", "1", "q", "b"]),
        b"-ERR Function not found\r\n"
    );
    let listed = text(&c.cmd(&["FUNCTION", "LIST"]));
    assert!(
        listed.contains("seen") && !listed.contains("queue"),
        "{listed}"
    );
}

#[test]
fn function_libraries_survive_kill_9_through_the_log_and_a_compaction() {
    let dir = DataDir::new("scripting-functions-aof");
    let port = crate::support::free_port();
    let flags = ["--appendonly", "yes", "--appendfsync", "always"];
    let server = spawn_server(&dir.0, port, &flags);
    let mut c = client(port);
    load_then_change_libraries(&mut c);
    server.kill();

    let server = spawn_server(&dir.0, port, &flags);
    let mut c = client(port);
    assert_only_seen_is_left(&mut c);
    // A compaction replays the log beside the live data: the live libraries stay as they are,
    // and the new snapshot holds them.
    assert!(c
        .cmd(&["BGREWRITEAOF"])
        .starts_with(b"+Background append only file rewriting"));
    while text(&c.cmd(&["INFO", "persistence"])).contains("aof_rewrite_in_progress:1") {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", QUEUE]), bulk("queue"));
    assert_eq!(c.cmd(&["FCALL_RO", "seen_count", "1", "s"]), b":2\r\n");
    server.kill();

    let _server = spawn_server(&dir.0, port, &flags);
    let mut c = client(port);
    assert_eq!(c.cmd(&["FCALL_RO", "seen_count", "1", "s"]), b":2\r\n");
    assert_eq!(c.cmd(&["FCALL", "enqueue", "1", "q", "c"]), b":2\r\n");
    assert_eq!(c.cmd(&["FUNCTION", "FLUSH"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["FUNCTION", "LIST"]), b"*0\r\n");
}

#[test]
fn function_libraries_are_saved_in_snapshots() {
    let dir = DataDir::new("scripting-functions-snapshot");
    let port = crate::support::free_port();
    let server = spawn_server(&dir.0, port, &[]);
    let mut c = client(port);
    load_then_change_libraries(&mut c);
    assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
    server.kill();

    let _server = spawn_server(&dir.0, port, &[]);
    let mut c = client(port);
    assert_only_seen_is_left(&mut c);
    let memory = text(&c.cmd(&["INFO", "memory"]));
    for field in ["number_of_functions:2", "number_of_libraries:1"] {
        assert!(memory.contains(field), "{memory}");
    }
}

#[test]
fn a_replica_gets_the_libraries_in_its_full_sync_and_then_from_the_stream() {
    let primary_dir = DataDir::new("scripting-functions-primary");
    let replica_dir = DataDir::new("scripting-functions-replica");
    let (primary_port, replica_port) = (crate::support::free_port(), crate::support::free_port());
    let _primary = spawn_server(&primary_dir.0, primary_port, &[]);
    let mut primary = client(primary_port);
    assert_eq!(primary.cmd(&["FUNCTION", "LOAD", SEEN]), bulk("seen"));
    assert_eq!(
        primary.cmd(&["FCALL", "seen_add", "1", "s", "a"]),
        b":1\r\n"
    );

    let replicaof = format!("127.0.0.1 {primary_port}");
    let _replica = spawn_server(&replica_dir.0, replica_port, &["--replicaof", &replicaof]);
    let mut replica = client(replica_port);
    assert_eq!(primary.cmd(&["WAIT", "1", "60000"]), b":1\r\n");
    assert_eq!(
        replica.cmd(&["FCALL_RO", "seen_count", "1", "s"]),
        b":1\r\n"
    );

    assert_eq!(primary.cmd(&["FUNCTION", "LOAD", QUEUE]), bulk("queue"));
    assert_eq!(primary.cmd(&["FUNCTION", "DELETE", "seen"]), b"+OK\r\n");
    assert_eq!(primary.cmd(&["WAIT", "1", "60000"]), b":1\r\n");
    assert_eq!(
        replica.cmd(&["FUNCTION", "LIST"]),
        primary.cmd(&["FUNCTION", "LIST"])
    );
    assert_eq!(
        replica.cmd(&["FCALL_RO", "seen_count", "1", "s"]),
        b"-ERR Function not found\r\n"
    );
    let refused = text(&replica.cmd(&["FUNCTION", "LOAD", SEEN]));
    assert!(refused.starts_with("-READONLY"), "{refused}");
}

#[test]
fn import_rdb_takes_the_function_libraries_redis_7_4_saved() {
    // tests/data/redis74_functions.rdb: Redis 7.4.x after `FUNCTION LOAD` of the `crawl`
    // library (seen_add, and seen_count flagged no-writes), `SADD seen a b` and `SAVE`.
    let rdb = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/redis74_functions.rdb"
    );
    let dir = DataDir::new("scripting-functions-import");
    let data = dir.0.join("data");
    let output = std::process::Command::new(binary())
        .args(["import-rdb", rdb, "--dir", &data.display().to_string()])
        .output()
        .expect("run sieved import-rdb");
    let report = text(&output.stdout);
    assert!(output.status.success(), "{report}{}", text(&output.stderr));
    assert!(
        report.contains("imported 1 function libraries: crawl"),
        "{report}"
    );

    let port = crate::support::free_port();
    let _server = spawn_server(&data, port, &[]);
    let mut c = client(port);
    assert_eq!(c.cmd(&["FCALL_RO", "seen_count", "1", "seen"]), b":2\r\n");
    assert_eq!(c.cmd(&["FCALL", "seen_add", "1", "seen", "c"]), b":1\r\n");
    let listed = text(&c.cmd(&["FUNCTION", "LIST", "LIBRARYNAME", "crawl"]));
    assert!(listed.contains("no-writes"), "{listed}");
}

/// As Redis 7.4 counts them: the commands a script calls in INFO commandstats (a failed
/// `redis.pcall` as a failed call), and in the SLOWLOG before the EVAL, with no client address
/// or name.
#[test]
fn commands_a_script_calls_are_counted_and_slow_logged_as_redis_does() {
    let dir = DataDir::new("scripting-observed");
    let port = crate::support::free_port();
    let _server = spawn_server(&dir.0, port, &[]);
    let mut c = client(port);
    c.cmd(&["SET", "word", "a"]);
    c.cmd(&["CONFIG", "RESETSTAT"]);
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    let script = "redis.call('SET', 'x', 1) return redis.pcall('INCR', 'word')";
    let reply = text(&c.cmd(&["EVAL", script, "0"]));
    assert!(reply.starts_with("-ERR value is not an integer"), "{reply}");
    let stats = text(&c.cmd(&["INFO", "commandstats"]));
    for counted in [
        "cmdstat_set:calls=1,",
        "cmdstat_incr:calls=1,",
        "cmdstat_eval:calls=1,",
    ] {
        assert!(stats.contains(counted), "{stats}");
    }
    assert!(
        crate::support::info_field(&stats, "cmdstat_incr")
            .ends_with("rejected_calls=0,failed_calls=1"),
        "{stats}"
    );
    let slow = text(&c.cmd(&["SLOWLOG", "GET", "4"]));
    let eval = slow.find("$4\r\nEVAL\r\n").expect("EVAL logged");
    let incr = slow
        .find("$4\r\nINCR\r\n$4\r\nword\r\n$0\r\n\r\n$0\r\n\r\n")
        .expect("INCR logged");
    let set = slow
        .find("$3\r\nSET\r\n$1\r\nx\r\n$1\r\n1\r\n$0\r\n\r\n$0\r\n\r\n")
        .expect("SET logged");
    assert!(eval < incr && incr < set, "{slow}");
}
