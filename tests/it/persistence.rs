//! Snapshots: round trips of every value type, TTLs and databases; background saves that keep
//! serving; damaged files detected wherever the damage is; and kill -9 during sustained writes.

use crate::support::{
    binary, encode_command, free_port, info_field, repo_file, spawn_server, DataDir, RawClient,
    TestServer,
};
use sieved::persist::snapshot;
use sieved::store::Store;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn fill(client: &mut RawClient) {
    client.cmd(&["SET", "plain", "value"]);
    client.cmd(&["SET", "binary", "\r\n\x00\u{ff}"]);
    client.cmd(&["SET", "volatile", "v", "EX", "1000"]);
    client.cmd(&["BF.RESERVE", "fixed", "0.001", "5000", "NONSCALING"]);
    client.cmd(&["BF.RESERVE", "chain", "0.01", "100", "EXPANSION", "3"]);
    client.cmd(&["CONFIG", "SET", "bf-layout", "blocked"]);
    client.cmd(&["BF.RESERVE", "blocked", "0.001", "100", "EXPANSION", "2"]);
    client.cmd(&["CONFIG", "SET", "bf-layout", "classic"]);
    for i in 0..2000 {
        client.cmd(&["BF.ADD", "chain", &format!("item{i}")]);
        client.cmd(&["BF.ADD", "blocked", &format!("item{i}")]);
        if i < 500 {
            client.cmd(&["BF.ADD", "fixed", &format!("item{i}")]);
        }
    }
    client.cmd(&["BF.ADD", "expiring", "x"]);
    client.cmd(&["EXPIRE", "expiring", "1000"]);
    client.cmd(&["CBF.RESERVE", "counted", "0.01", "50", "COUNTERBITS", "8"]);
    for i in 0..300 {
        client.cmd(&["CBF.ADD", "counted", &format!("c{}", i % 100)]);
    }
    client.cmd(&["CBF.DEL", "counted", "c7"]);
    // A window of a day: nothing ages out between the save and the restart.
    client.cmd(&[
        "TBF.RESERVE",
        "windowed",
        "0.01",
        "500",
        "86400000",
        "SLICES",
        "6",
    ]);
    for i in 0..300 {
        client.cmd(&["TBF.ADD", "windowed", &format!("w{i}")]);
    }
    client.cmd(&["SELECT", "5"]);
    client.cmd(&["BF.ADD", "elsewhere", "y"]);
    client.cmd(&["SELECT", "0"]);
}

/// Everything `fill` wrote, as the server describes it.
fn describe(client: &mut RawClient) -> Vec<Vec<u8>> {
    let mut seen = Vec::new();
    for command in [
        &["DBSIZE"][..],
        &["GET", "plain"],
        &["GET", "binary"],
        &["GET", "volatile"],
        &["BF.DEBUG", "fixed"],
        &["BF.DEBUG", "chain"],
        &["BF.INFO", "chain"],
        &["BF.DEBUG", "blocked"],
        &["BF.EXISTS", "expiring", "x"],
        &["CBF.INFO", "counted"],
        &["CBF.COUNT", "counted", "c7"],
        &["CBF.COUNT", "counted", "c8"],
        &["TYPE", "windowed"],
        &["TBF.INFO", "windowed"],
        &["TBF.MEXISTS", "windowed", "w0", "w150", "w299", "w300"],
        &["EXPIRETIME", "volatile"],
        &["EXPIRETIME", "expiring"],
        &["EXPIRETIME", "plain"],
        &["SELECT", "5"],
        &["BF.EXISTS", "elsewhere", "y"],
        &["SELECT", "0"],
    ] {
        seen.push(client.cmd(command));
    }
    let names: Vec<String> = (0..2000).map(|i| format!("item{i}")).collect();
    let others: Vec<String> = (0..2000).map(|i| format!("other{i}")).collect();
    for key in ["chain", "blocked"] {
        let mut items = vec!["BF.MEXISTS", key];
        items.extend(names.iter().map(String::as_str));
        let found = client.cmd(&items);
        assert!(
            !found.windows(4).any(|w| w == b":0\r\n"),
            "an item of {key} went missing"
        );
        seen.push(found);
        let mut strangers = vec!["BF.MEXISTS", key];
        strangers.extend(others.iter().map(String::as_str));
        seen.push(client.cmd(&strangers));
    }
    seen
}

#[test]
fn save_and_restart_restore_everything() {
    let dir = DataDir::new("roundtrip");
    let before = {
        let server = TestServer::start_in(&dir.0);
        let mut client = server.client();
        fill(&mut client);
        assert_eq!(client.cmd(&["SAVE"]), b"+OK\r\n");
        describe(&mut client)
    };
    let server = TestServer::start_in(&dir.0);
    let after = describe(&mut server.client());
    assert_eq!(before, after);
}

/// `tests/data/v1.snap` was written by the build before filters had a layout (commit c314493,
/// snapshot and dump format 1) after:
/// `BF.RESERVE chain 0.01 100 EXPANSION 2`, `BF.ADD chain item<i>` for i in 0..300,
/// `BF.RESERVE fixed 0.001 50 NONSCALING`, `BF.ADD fixed item<i>` for i in 0..30,
/// `SET plain value`. The BF.DEBUG lines are what that build answered.
#[test]
fn a_version_1_snapshot_still_loads() {
    let dir = DataDir::new("v1");
    let fixture = repo_file("tests/data/v1.snap");
    std::fs::copy(fixture, dir.snapshot()).expect("copy the snapshot");
    let server = TestServer::start_in(&dir.0);
    let mut client = server.client();
    assert_eq!(client.cmd(&["DBSIZE"]), b":3\r\n");
    assert_eq!(client.cmd(&["GET", "plain"]), b"$5\r\nvalue\r\n");
    assert_eq!(
        client.cmd(&["BF.DEBUG", "chain"]),
        &b"*3\r\n$8\r\nsize:299\r\n\
           $75\r\nbytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:100 ratio:0.005\r\n\
           $76\r\nbytes:312 bits:2496 hashes:9 hashwidth:64 capacity:200 size:199 ratio:0.0025\r\n"
            [..]
    );
    assert_eq!(
        client.cmd(&["BF.DEBUG", "fixed"]),
        &b"*2\r\n$7\r\nsize:30\r\n\
           $72\r\nbytes:96 bits:768 hashes:10 hashwidth:64 capacity:50 size:30 ratio:0.001\r\n"[..]
    );
    for (key, count) in [("chain", 300), ("fixed", 30)] {
        let names: Vec<String> = (0..count).map(|i| format!("item{i}")).collect();
        let mut items = vec!["BF.MEXISTS", key];
        items.extend(names.iter().map(String::as_str));
        assert!(!client.cmd(&items).windows(4).any(|w| w == b":0\r\n"));
    }
    // Saved again, it is a version 5 file that loads the same.
    assert_eq!(client.cmd(&["SAVE"]), b"+OK\r\n");
    let saved = std::fs::read(dir.snapshot()).expect("snapshot");
    assert_eq!(&saved[8..12], &5u32.to_le_bytes());
    let before = client.cmd(&["BF.DEBUG", "chain"]);
    drop(server);
    let server = TestServer::start_in(&dir.0);
    assert_eq!(server.client().cmd(&["BF.DEBUG", "chain"]), before);
}

/// `tests/data/v3.snap` was written by the build before the file checksum left out the key
/// records (commit b2dc112, snapshot format 3, whose checksum covers every byte) after:
/// `SET plain value`, `SET volatile v PXAT 4102444800000`, `BF.RESERVE chain 0.01 100 EXPANSION
/// 2`, `BF.ADD chain item<i>` for i in 0..300, `CONFIG SET bf-layout blocked`, `BF.RESERVE
/// blocked 0.001 100`, `BF.ADD blocked item<i>` for i in 0..150, `CBF.RESERVE counted 0.01 50`,
/// `CBF.ADD counted c<i % 40>` for i in 0..100, `CF.RESERVE cuckoo 64`, `CF.ADD cuckoo a`,
/// `CF.ADD cuckoo b`, `RPUSH list a b c`, `SADD set x y`, `HSET hash f v`, `ZADD zset 1.5 m`.
/// The replies below are what that build answered after loading it.
#[test]
fn a_version_3_snapshot_still_loads() {
    let dir = DataDir::new("v3");
    let fixture = repo_file("tests/data/v3.snap");
    std::fs::copy(fixture, dir.snapshot()).expect("copy the snapshot");
    let server = TestServer::start_in(&dir.0);
    let mut client = server.client();
    let expected: [(&[&str], &[u8]); 11] = [
        (&["DBSIZE"], b":10\r\n"),
        (&["GET", "plain"], b"$5\r\nvalue\r\n"),
        (&["PEXPIRETIME", "volatile"], b":4102444800000\r\n"),
        (
            &["BF.DEBUG", "chain"],
            b"*3\r\n$8\r\nsize:298\r\n\
              $75\r\nbytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:100 ratio:0.005\r\n\
              $76\r\nbytes:312 bits:2496 hashes:9 hashwidth:64 capacity:200 size:198 ratio:0.0025\r\n",
        ),
        (
            &["BF.DEBUG", "blocked"],
            b"*3\r\n$8\r\nsize:150\r\n\
              $92\r\nbytes:256 bits:2048 hashes:10 hashwidth:64 capacity:100 size:100 ratio:0.0005 layout:blocked\r\n\
              $92\r\nbytes:512 bits:4096 hashes:11 hashwidth:64 capacity:200 size:50 ratio:0.00025 layout:blocked\r\n",
        ),
        (&["CBF.COUNT", "counted", "c7"], b":3\r\n"),
        (&["CF.EXISTS", "cuckoo", "a"], b":1\r\n"),
        (&["LRANGE", "list", "0", "-1"], b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"),
        (&["SISMEMBER", "set", "y"], b":1\r\n"),
        (&["HGET", "hash", "f"], b"$1\r\nv\r\n"),
        (&["ZSCORE", "zset", "m"], b"$3\r\n1.5\r\n"),
    ];
    for (command, reply) in expected {
        assert_eq!(client.cmd(command), reply, "{command:?}");
    }
    for (key, count) in [("chain", 300), ("blocked", 150)] {
        let names: Vec<String> = (0..count).map(|i| format!("item{i}")).collect();
        let mut items = vec!["BF.MEXISTS", key];
        items.extend(names.iter().map(String::as_str));
        assert!(!client.cmd(&items).windows(4).any(|w| w == b":0\r\n"));
    }
}

#[test]
fn shutdown_writes_the_exit_snapshot() {
    let dir = DataDir::new("exit");
    {
        let server = TestServer::start_in(&dir.0);
        let mut client = server.client();
        client.cmd(&["BF.ADD", "k", "x"]);
        client.send(&encode_command(&[b"SHUTDOWN", b"SAVE"]));
        assert!(client.is_closed());
    }
    assert!(dir.snapshot().exists());
    let server = TestServer::start_in(&dir.0);
    assert_eq!(server.client().cmd(&["BF.EXISTS", "k", "x"]), b":1\r\n");
}

#[test]
fn bgsave_runs_while_clients_are_served() {
    let dir = DataDir::new("bgsave");
    let server = TestServer::start_in(&dir.0);
    let mut client = server.client();
    client.cmd(&["BF.RESERVE", "big", "0.0001", "20000000", "NONSCALING"]);
    client.cmd(&["BF.ADD", "big", "a"]);
    let last = client.cmd(&["LASTSAVE"]);
    assert_eq!(client.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    let mut other = server.client();
    let mut served_during_save = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = String::from_utf8(other.cmd(&["INFO", "persistence"])).expect("text");
        if info.contains("rdb_bgsave_in_progress:0") {
            break;
        }
        assert_eq!(
            other
                .cmd(&["BF.ADD", "big", &format!("during{served_during_save}")])
                .len(),
            4
        );
        served_during_save += 1;
        assert!(
            Instant::now() < deadline,
            "the background save never finished"
        );
    }
    assert!(client
        .cmd(&["INFO", "persistence"])
        .windows(26)
        .any(|w| w == b"rdb_last_bgsave_status:ok\r"));
    assert!(client.cmd(&["LASTSAVE"]) >= last);
    assert!(dir.snapshot().metadata().expect("snapshot").len() > 45_000_000);
}

#[test]
fn every_damaged_byte_is_detected() {
    let dir = DataDir::new("damage");
    {
        let server = TestServer::start_in(&dir.0);
        let mut client = server.client();
        client.cmd(&["SET", "s", "v", "EX", "1000"]);
        client.cmd(&["BF.MADD", "f", "a", "b", "c"]);
        client.cmd(&["SELECT", "1"]);
        client.cmd(&["BF.RESERVE", "n", "0.1", "10", "NONSCALING"]);
        assert_eq!(client.cmd(&["SAVE"]), b"+OK\r\n");
    }
    let good = std::fs::read(dir.snapshot()).expect("snapshot");
    let damaged = dir.0.join("damaged");
    std::fs::create_dir_all(&damaged).expect("dir");
    let attempt = |bytes: &[u8]| {
        std::fs::write(damaged.join("sieved.snap"), bytes).expect("write");
        snapshot::load(&Store::new(16, 4), &damaged, |_, _| {})
    };
    assert_eq!(
        attempt(&good)
            .expect("the good file loads")
            .expect("found")
            .keys,
        3
    );
    for at in 0..good.len() {
        let mut bad = good.clone();
        bad[at] ^= 0x20;
        let error = attempt(&bad).expect_err(&format!("a flipped byte at {at} went unnoticed"));
        assert!(error.to_string().contains("sieved.snap"), "{error}");
    }
    for len in 0..good.len() {
        attempt(&good[..len]).expect_err(&format!("a file cut at {len} bytes went unnoticed"));
    }
    let mut longer = good.clone();
    longer.push(0);
    attempt(&longer).expect_err("trailing bytes went unnoticed");
}

/// Each cycle writes its own key: items before a SAVE are safe for good; items after it may be
/// lost by the kill (or saved by the background snapshot the kill interrupts). Every restart
/// must find every safe item of every earlier cycle.
#[test]
fn kill_9_never_loses_what_a_completed_snapshot_holds() {
    let dir = DataDir::new("crash");
    const CYCLES: usize = 6;
    const SAFE: usize = 1000;
    let safe_items =
        |cycle: usize| -> Vec<String> { (0..SAFE).map(|i| format!("c{cycle}-url-{i}")).collect() };
    for cycle in 0..=CYCLES {
        let port = free_port();
        let child = spawn_server(&dir.0, port, &[]);
        let addr = format!("127.0.0.1:{port}").parse().expect("address");
        let mut client = RawClient::connect(addr);
        for earlier in 0..cycle {
            let key = format!("urls-{earlier}");
            let items = safe_items(earlier);
            let mut check = vec!["BF.MEXISTS", key.as_str()];
            check.extend(items.iter().map(String::as_str));
            let reply = client.cmd(&check);
            assert!(
                !reply.windows(4).any(|w| w == b":0\r\n"),
                "after kill {cycle}: an item of cycle {earlier} acknowledged before its SAVE is missing"
            );
        }
        if cycle == CYCLES {
            child.kill();
            break;
        }
        let key = format!("urls-{cycle}");
        let mut saver = RawClient::connect(addr);
        let batches = [
            safe_items(cycle),
            (0..500).map(|i| format!("c{cycle}-late-{i}")).collect(),
        ];
        for (index, batch) in batches.iter().enumerate() {
            let mut madd = vec!["BF.MADD", key.as_str()];
            madd.extend(batch.iter().map(String::as_str));
            client.cmd(&madd);
            if index == 0 {
                assert_eq!(saver.cmd(&["SAVE"]), b"+OK\r\n");
            }
        }
        saver.send(&encode_command(&[b"BGSAVE"]));
        child.kill();
    }
}

#[test]
fn a_damaged_snapshot_stops_start_up_and_is_kept() {
    let dir = DataDir::new("refuse");
    let garbage = b"SIEVEDSN\x01\x00\x00\x00garbage".to_vec();
    std::fs::write(dir.snapshot(), &garbage).expect("write");
    let output = Command::new(binary())
        .args(["--port", "0", "--dir", &dir.0.display().to_string()])
        .stdin(Stdio::null())
        .output()
        .expect("run sieved");
    assert!(!output.status.success());
    let log = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("sieved.snap"), "{log}");
    assert_eq!(std::fs::read(dir.snapshot()).expect("still there"), garbage);
}

const MISCONF_RDB: &[u8] = b"-MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.\r\n";

/// Runs BGSAVE and waits for it to end; returns INFO persistence's last status.
fn bgsave_status(client: &mut RawClient) -> String {
    assert!(client
        .cmd(&["BGSAVE"])
        .starts_with(b"+Background saving started"));
    for _ in 0..2000 {
        let info = String::from_utf8_lossy(&client.cmd(&["INFO", "persistence"])).into_owned();
        if info.contains("rdb_bgsave_in_progress:0") {
            return info_field(&info, "rdb_last_bgsave_status").to_string();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("BGSAVE did not end");
}

fn terminate(server: &crate::support::Running) {
    // SAFETY: kill only sends a signal to the child's process id.
    unsafe {
        libc::kill(server.0.id() as libc::pid_t, libc::SIGTERM);
    }
}

#[test]
fn a_failing_save_refuses_writes_and_shutdown_and_the_server_keeps_serving() {
    let dir = DataDir::new("failing-save");
    let port = free_port();
    let server = spawn_server(&dir.0, port, &[]);
    let addr = format!("127.0.0.1:{port}").parse().expect("address");
    let mut client = RawClient::connect(addr);
    // Save rules configured, as MISCONF requires (the tests' servers start without).
    assert_eq!(client.cmd(&["CONFIG", "SET", "save", "3600 1"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["BF.ADD", "k", "a"]), b":1\r\n");
    // A non-empty directory where the snapshot goes: every save fails, even for root.
    let blocker = dir.0.join("sieved.snap");
    std::fs::create_dir_all(blocker.join("in-the-way")).expect("blocker");
    assert_eq!(bgsave_status(&mut client), "err");
    assert_eq!(client.cmd(&["BF.ADD", "k", "b"]), MISCONF_RDB);
    assert_eq!(client.cmd(&["PING"]), MISCONF_RDB);
    assert_eq!(client.cmd(&["BF.EXISTS", "k", "a"]), b":1\r\n");
    assert_eq!(
        client.cmd(&["SHUTDOWN"]),
        b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
    );
    assert_eq!(client.cmd(&["BF.EXISTS", "k", "a"]), b":1\r\n");
    terminate(&server);
    std::thread::sleep(Duration::from_millis(300));
    let mut other = RawClient::connect(addr);
    assert_eq!(other.cmd(&["BF.EXISTS", "k", "a"]), b":1\r\n");
    let mut server = server;
    assert!(
        server.0.try_wait().expect("status").is_none(),
        "SIGTERM stopped it"
    );

    // Once a save works again, so do writes; then SIGTERM stops it with everything saved.
    std::fs::remove_dir_all(&blocker).expect("unblock");
    assert_eq!(bgsave_status(&mut client), "ok");
    assert_eq!(client.cmd(&["BF.ADD", "k", "b"]), b":1\r\n");
    terminate(&server);
    assert!(server.0.wait().expect("exit").success());
    let server = spawn_server(&dir.0, port, &[]);
    let mut client = RawClient::connect(addr);
    assert_eq!(
        client.cmd(&["BF.MEXISTS", "k", "a", "b"]),
        b"*2\r\n:1\r\n:1\r\n"
    );

    // FORCE stops even though the save fails.
    std::fs::remove_file(&blocker).expect("the snapshot of the last stop");
    std::fs::create_dir_all(blocker.join("in-the-way")).expect("blocker");
    client.send(&encode_command(&[b"SHUTDOWN", b"SAVE", b"FORCE"]));
    assert!(client.read_until_closed().is_empty());
    let mut server = server;
    assert!(server.0.wait().expect("exit").success());
}
