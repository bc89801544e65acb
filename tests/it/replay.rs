//! What the append-only file brings back never depends on the settings in force when it is
//! replayed: filters created implicitly come back with the shape they were created with, filters
//! grown past a limit that was lowered since come back whole, and a counting filter's deletes
//! replay against the same counters. Each scenario adds, changes settings, is killed (kill -9)
//! under `appendfsync always`, and restarts with different settings.

use crate::support::{
    free_port, loopback, output_of_refused_start, sieved_command, spawn_server, DataDir, RawClient,
};
use std::process::Stdio;
use std::sync::{Mutex, MutexGuard};

/// The tests of this file run one at a time: each picks a free port and then starts a server
/// on it, and two tests picking at once could be handed the same port.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

const LOGGED: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

fn flags<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    LOGGED
        .iter()
        .copied()
        .chain(extra.iter().copied())
        .collect()
}

/// How many of `items` answer 0 to `exists` on `key`: acknowledged items lost.
fn missing(client: &mut RawClient, exists: &str, key: &str, items: &[String]) -> usize {
    let mut lost = 0;
    for chunk in items.chunks(500) {
        let mut command = vec![exists, key];
        command.extend(chunk.iter().map(String::as_str));
        let reply = client.cmd(&command);
        lost += reply.windows(4).filter(|w| w == b":0\r\n").count();
    }
    lost
}

fn add_all(client: &mut RawClient, add: &str, key: &str, items: &[String]) {
    for chunk in items.chunks(500) {
        let mut command = vec![add, key];
        command.extend(chunk.iter().map(String::as_str));
        let reply = client.cmd(&command);
        assert!(
            reply.starts_with(b"*"),
            "{}",
            String::from_utf8_lossy(&reply)
        );
    }
}

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

#[test]
fn implicit_filters_come_back_with_the_shape_they_were_created_with() {
    let _serial = one_at_a_time();
    let dir = DataDir::new("replay-implicit");
    let port = free_port();
    let server = spawn_server(&dir.0, port, &flags(&["--bf-initial-size", "50"]));
    let mut client = RawClient::connect(loopback(port));
    let urls = items("url", 1000);
    add_all(&mut client, "BF.MADD", "implicit", &urls);
    let info_before = client.cmd(&["BF.INFO", "implicit"]);
    let debug_before = client.cmd(&["BF.DEBUG", "implicit"]);
    // Settings that would shape a filter created at replay differently.
    for (name, value) in [
        ("bf-expansion-factor", "0"),
        ("bf-initial-size", "7"),
        ("bf-error-rate", "0.2"),
        ("bf-layout", "blocked"),
    ] {
        assert_eq!(client.cmd(&["CONFIG", "SET", name, value]), b"+OK\r\n");
    }
    assert!(client
        .cmd(&["BGREWRITEAOF"])
        .starts_with(b"+Background append only file rewriting"));
    // More adds after the compaction started, into the new segment.
    let more = items("more", 200);
    add_all(&mut client, "BF.MADD", "implicit", &more);
    let info_after_adds = client.cmd(&["BF.INFO", "implicit"]);
    server.kill();

    let server = spawn_server(&dir.0, port, &flags(&["--bf-initial-size", "3"]));
    let mut client = RawClient::connect(loopback(port));
    assert_eq!(missing(&mut client, "BF.MEXISTS", "implicit", &urls), 0);
    assert_eq!(missing(&mut client, "BF.MEXISTS", "implicit", &more), 0);
    assert_eq!(client.cmd(&["BF.INFO", "implicit"]), info_after_adds);
    assert_ne!(info_before, info_after_adds);
    let debug_after = client.cmd(&["BF.DEBUG", "implicit"]);
    // The first links are the ones created before the settings changed.
    let first_link = |debug: &[u8]| {
        String::from_utf8_lossy(debug)
            .split("\r\n")
            .find(|line| line.contains("bytes:"))
            .map(str::to_string)
    };
    assert_eq!(first_link(&debug_after), first_link(&debug_before));
    server.kill();
}

#[test]
fn filters_grown_past_a_lowered_limit_come_back_whole() {
    let _serial = one_at_a_time();
    let dir = DataDir::new("replay-limit");
    let port = free_port();
    let server = spawn_server(&dir.0, port, &flags(&["--max-filter-memory", "100000"]));
    let mut client = RawClient::connect(loopback(port));
    assert_eq!(
        client.cmd(&["BF.RESERVE", "big", "0.01", "1000"]),
        b"+OK\r\n"
    );
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "max-filter-memory", "100000000"]),
        b"+OK\r\n"
    );
    let urls = items("grown", 100_000);
    add_all(&mut client, "BF.MADD", "big", &urls);
    let info = client.cmd(&["BF.INFO", "big"]);
    server.kill();

    // Restarted with the lower limit the filter was created under: replay applies what was
    // logged, as Redis loads whatever it logged.
    let server = spawn_server(&dir.0, port, &flags(&["--max-filter-memory", "100000"]));
    let mut client = RawClient::connect(loopback(port));
    assert_eq!(missing(&mut client, "BF.MEXISTS", "big", &urls), 0);
    assert_eq!(client.cmd(&["BF.INFO", "big"]), info);
    // New growth is still held to the limit in force now.
    let refused = client.cmd(&["BF.MADD", "big", "one-more-item"]);
    assert!(
        refused.starts_with(b"*1\r\n"),
        "{}",
        String::from_utf8_lossy(&refused)
    );
    server.kill();
}

#[test]
fn counting_deletes_replay_against_the_same_counters() {
    let _serial = one_at_a_time();
    let dir = DataDir::new("replay-cbf");
    let port = free_port();
    let server = spawn_server(&dir.0, port, &flags(&["--bf-initial-size", "3000"]));
    let mut client = RawClient::connect(loopback(port));
    let held = items("held", 3000);
    add_all(&mut client, "CBF.MADD", "counts", &held);
    let info = client.cmd(&["CBF.INFO", "counts"]);
    // Deletes of items never added: on a filter of another shape they would hit false
    // positives and take counts from held items.
    let never = items("never", 20_000);
    for chunk in never.chunks(500) {
        let mut command = vec!["CBF.MDEL", "counts"];
        command.extend(chunk.iter().map(String::as_str));
        client.cmd(&command);
    }
    let card = client.cmd(&["CBF.CARD", "counts"]);
    // A delete that hits a false positive takes counts from held items (the counting filter's
    // known risk): what matters here is that replay takes exactly the same ones.
    let answers_before = answers(&mut client, "CBF.MEXISTS", "counts", &held);
    server.kill();

    let server = spawn_server(&dir.0, port, &flags(&["--bf-initial-size", "100"]));
    let mut client = RawClient::connect(loopback(port));
    assert_eq!(
        client.cmd(&["CBF.INFO", "counts"]),
        info_with_card(&info, &card)
    );
    assert_eq!(client.cmd(&["CBF.CARD", "counts"]), card);
    assert_eq!(
        answers(&mut client, "CBF.MEXISTS", "counts", &held),
        answers_before
    );
    server.kill();
}

/// The replies to `exists` for every item, in order.
fn answers(client: &mut RawClient, exists: &str, key: &str, items: &[String]) -> Vec<u8> {
    let mut all = Vec::new();
    for chunk in items.chunks(500) {
        let mut command = vec![exists, key];
        command.extend(chunk.iter().map(String::as_str));
        all.extend(client.cmd(&command));
    }
    all
}

/// CBF.INFO after the deletes: only the item count moved.
fn info_with_card(info: &[u8], card: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(info).into_owned();
    let card = String::from_utf8_lossy(card)
        .trim_start_matches(':')
        .trim_end()
        .to_string();
    let mut lines: Vec<String> = text.split("\r\n").map(str::to_string).collect();
    if let Some(at) = lines.iter().position(|l| l == "+Number of items inserted") {
        lines[at + 1] = format!(":{card}");
    }
    lines.join("\r\n").into_bytes()
}

#[test]
fn writes_logged_for_a_database_that_is_gone_stop_start_up() {
    let _serial = one_at_a_time();
    let dir = DataDir::new("replay-databases");
    let port = free_port();
    let server = spawn_server(&dir.0, port, &flags(&[]));
    let mut client = RawClient::connect(loopback(port));
    assert_eq!(client.cmd(&["SELECT", "9"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["BF.ADD", "k", "x"]), b":1\r\n");
    server.kill();

    let child = sieved_command(&dir.0, port, &flags(&["--databases", "4"]))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sieved");
    let output = output_of_refused_start(child);
    assert!(!output.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        said.contains("sieved-1.aof")
            && said.contains("a write logged for database 9, but there are only 4")
            && said.contains("--databases 10"),
        "{said}"
    );
    // Nothing was lost: with enough databases the write comes back.
    let server = spawn_server(&dir.0, port, &flags(&[]));
    let mut client = RawClient::connect(loopback(port));
    assert_eq!(client.cmd(&["SELECT", "9"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["BF.EXISTS", "k", "x"]), b":1\r\n");
    server.kill();
}

/// Waits until no compaction or snapshot is running.
fn wait_for_saves(client: &mut RawClient) {
    for _ in 0..2000 {
        let info = String::from_utf8_lossy(&client.cmd(&["INFO", "persistence"])).into_owned();
        if info.contains("aof_rewrite_in_progress:0") && info.contains("rdb_bgsave_in_progress:0") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("a save did not end");
}

#[test]
fn a_ttl_changed_after_a_compaction_began_survives_the_compaction() {
    let _serial = one_at_a_time();
    let dir = DataDir::new("replay-sliding-ttl");
    let port = free_port();
    let items = items("kept", 1000);
    // Writes for the compaction to replay, so that it is still running when the key's first
    // deadline passes.
    let filler = self::items("filler", 100_000);
    for round in 0..3 {
        let server = spawn_server(&dir.0, port, &flags(&[]));
        let mut client = RawClient::connect(loopback(port));
        let key = format!("sliding{round}");
        add_all(&mut client, "BF.MADD", &format!("filler{round}"), &filler);
        // Persisted while alive: the compaction's snapshot is written after the key's first
        // deadline has passed, and must not leave it out. On a loaded machine the deadline may
        // pass before PERSIST arrives; then the key is gone, and the round is run again with a
        // longer deadline, so the test depends on no speed.
        let mut deadline_ms = 40;
        loop {
            add_all(&mut client, "BF.MADD", &key, &items);
            assert_eq!(
                client.cmd(&["PEXPIRE", &key, &deadline_ms.to_string()]),
                b":1\r\n"
            );
            assert!(client
                .cmd(&["BGREWRITEAOF"])
                .starts_with(b"+Background append only file rewriting"));
            std::thread::sleep(std::time::Duration::from_millis(deadline_ms / 5));
            let persisted = client.cmd(&["PERSIST", &key]) == b":1\r\n";
            wait_for_saves(&mut client);
            if persisted {
                break;
            }
            deadline_ms *= 4;
            assert!(
                deadline_ms < 600_000,
                "PERSIST never came within the deadline"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        server.kill();

        let server = spawn_server(&dir.0, port, &flags(&[]));
        let mut client = RawClient::connect(loopback(port));
        assert_eq!(client.cmd(&["TTL", &key]), b":-1\r\n", "round {round}");
        assert_eq!(missing(&mut client, "BF.MEXISTS", &key, &items), 0);
        server.kill();
    }
}

#[test]
fn start_up_removes_unfinished_snapshots_of_earlier_runs_and_nothing_else() {
    let _serial = one_at_a_time();
    let dir = DataDir::new("replay-leftovers");
    std::fs::create_dir_all(&dir.0).expect("dir");
    let leftover = dir.0.join("sieved.snap.tmp-4242");
    std::fs::write(&leftover, vec![0u8; 1 << 20]).expect("leftover");
    let keep = ["sieved.snap.tmp-4242.bak", "notes.txt", "sieved.snap.old"];
    for name in keep {
        std::fs::write(dir.0.join(name), name).expect("bystander");
    }
    let port = free_port();
    let server = spawn_server(&dir.0, port, &flags(&[]));
    let mut client = RawClient::connect(loopback(port));
    assert_eq!(client.cmd(&["PING"]), b"+PONG\r\n");
    assert!(!leftover.exists());
    for name in keep {
        assert_eq!(
            std::fs::read_to_string(dir.0.join(name)).ok().as_deref(),
            Some(name)
        );
    }
    server.kill();
}

#[test]
fn a_snapshot_loads_whole_under_a_lower_max_filter_memory() {
    let _serial = one_at_a_time();
    let dir = DataDir::new("replay-snapshot-limit");
    let port = free_port();
    let server = spawn_server(&dir.0, port, &["--max-filter-memory", "10000000"]);
    let mut client = RawClient::connect(loopback(port));
    assert_eq!(
        client.cmd(&["BF.RESERVE", "big", "0.001", "1000000"]),
        b"+OK\r\n"
    );
    let urls = items("snap", 5000);
    add_all(&mut client, "BF.MADD", "big", &urls);
    assert_eq!(client.cmd(&["SAVE"]), b"+OK\r\n");
    let info = client.cmd(&["BF.INFO", "big"]);
    server.kill();

    let server = spawn_server(&dir.0, port, &["--max-filter-memory", "100000"]);
    let mut client = RawClient::connect(loopback(port));
    assert_eq!(missing(&mut client, "BF.MEXISTS", "big", &urls), 0);
    assert_eq!(client.cmd(&["BF.INFO", "big"]), info);
    server.kill();
}

/// Issue 31, item 7: while start-up loads the data, clients are served as Redis serves them:
/// the commands Redis flags `loading` (INFO, ROLE, CONFIG GET, HELLO, AUTH, SUBSCRIBE,
/// SHUTDOWN...) run, every other (PING included) is answered `-LOADING`, and INFO shows the
/// load. The load is held part way by the debug builds' hook (`SIEVED_TEST_LOAD_HOLD`, a file
/// whose presence holds it), so nothing depends on how fast the machine loads. A SHUTDOWN
/// during the load exits without a snapshot of part of the data.
#[test]
fn clients_are_answered_loading_while_the_data_loads() {
    let _serial = one_at_a_time();
    let dir = DataDir::new("replay-loading");
    let port = free_port();
    let server = spawn_server(&dir.0, port, LOGGED);
    let mut client = RawClient::local(port);
    for i in 0..200 {
        client.cmd(&["SET", &format!("key-{i}"), "value"]);
    }
    server.kill();
    let hold = dir.0.join("hold");
    let start_held = || {
        std::fs::write(&hold, b"").expect("hold file");
        let child = sieved_command(&dir.0, port, LOGGED)
            .env("SIEVED_TEST_LOAD_HOLD", &hold)
            .stdin(Stdio::null())
            .spawn()
            .expect("start sieved");
        let running = crate::support::Running(child);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::net::TcpStream::connect(crate::support::loopback(port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "sieved did not listen"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        running
    };
    let mut server = start_held();
    let mut client = RawClient::local(port);
    let loading = b"-LOADING Redis is loading the dataset in memory\r\n";
    for refused in [
        &["PING"][..],
        &["GET", "key-1"],
        &["DBSIZE"],
        &["SET", "other", "x"],
        &["FQ.POP", "q"],
        &["SAVE"],
    ] {
        assert_eq!(client.cmd(refused), loading, "{refused:?}");
    }
    let info = String::from_utf8(client.cmd(&["INFO", "persistence"])).expect("text");
    assert!(info.contains("\r\nloading:1\r\n"), "{info}");
    let perc: f64 = crate::support::info_field(&info, "loading_loaded_perc")
        .parse()
        .expect("a percentage");
    assert!((0.0..100.0).contains(&perc), "{perc}");
    let eta: u64 = crate::support::info_field(&info, "loading_eta_seconds")
        .parse()
        .expect("seconds");
    let total: u64 = crate::support::info_field(&info, "loading_total_bytes")
        .parse()
        .expect("bytes");
    assert!(total > 0, "{info}");
    let _ = eta;
    assert!(client.cmd(&["INFO", "server"]).starts_with(b"$"));
    assert!(client.cmd(&["ROLE"]).starts_with(b"*3\r\n$6\r\nmaster\r\n"));
    assert!(client
        .cmd(&["CONFIG", "GET", "port"])
        .starts_with(b"*2\r\n"));
    assert!(client.cmd(&["HELLO", "2"]).starts_with(b"*"));
    assert!(client.cmd(&["AUTH", "x"]).starts_with(b"-ERR AUTH"));
    // A transaction of a command the load refuses fails as a whole.
    assert_eq!(client.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["GET", "key-1"]), loading);
    assert!(client.cmd(&["EXEC"]).starts_with(b"-EXECABORT"));
    let mut subscriber = RawClient::local(port);
    assert_eq!(
        subscriber.cmd(&["SUBSCRIBE", "news"]),
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
    );
    // The load goes on: the data is served.
    std::fs::remove_file(&hold).expect("release the load");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while client.info_field("persistence", "loading") != "0" {
        assert!(std::time::Instant::now() < deadline, "the load did not end");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(client.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(client.cmd(&["DBSIZE"]), b":200\r\n");
    assert_eq!(client.cmd(&["GET", "key-199"]), b"$5\r\nvalue\r\n");
    let info = String::from_utf8(client.cmd(&["INFO", "persistence"])).expect("text");
    assert!(!info.contains("loading_eta_seconds"), "{info}");
    server.kill();
    // SHUTDOWN during the load: a clean exit, and no snapshot of part of the data.
    server = start_held();
    let mut client = RawClient::local(port);
    assert_eq!(client.cmd(&["GET", "key-1"]), loading);
    client.send(&crate::support::encode_command(&[b"SHUTDOWN", b"SAVE"]));
    let status = server.0.wait().expect("exit");
    assert!(status.success(), "{status}");
    assert!(
        !dir.snapshot().exists(),
        "a snapshot was written during the load"
    );
    let _ = std::fs::remove_file(&hold);
    let _server = spawn_server(&dir.0, port, LOGGED);
    let mut client = RawClient::local(port);
    assert_eq!(client.cmd(&["DBSIZE"]), b":200\r\n");
}
