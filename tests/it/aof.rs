//! The append-only file: kill -9 during sustained writes under each fsync policy, compaction
//! while clients write, torn tails dropped, and damage detected at every offset.

use crate::support::{
    free_port, loopback, sieved_command, spawn_server, try_info_field, DataDir, RawClient, Running,
    TestServer,
};
use sieved::config::Config;
use sieved::persist::aof::{list_segments, SegmentReader, Stop};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sends a command from a writer that the test kills the server under, where any failure just
/// ends the writer: whether the server answered with an integer (acknowledged the write).
fn acknowledged(client: &mut RawClient, args: &[&str]) -> bool {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    client
        .try_command(&args)
        .is_ok_and(|reply| reply.starts_with(b":"))
}

/// Asserts that every item answers 1 to `exists` (BF.MEXISTS or CBF.MEXISTS) on `key`.
fn assert_all_present(
    client: &mut RawClient,
    exists: &str,
    key: &str,
    items: &[String],
    what: &str,
) {
    for chunk in items.chunks(1000) {
        let mut command = vec![exists, key];
        command.extend(chunk.iter().map(String::as_str));
        let reply = client.cmd(&command);
        if let Some(at) = reply.windows(4).position(|w| w == b":0\r\n") {
            let index = reply[..at].windows(2).filter(|w| w == b"\r\n").count() - 1;
            panic!(
                "{what}: acknowledged item {} of {key} is missing",
                chunk[index]
            );
        }
    }
}

/// What the writers of one cycle had acknowledged when the server was killed.
#[derive(Default)]
struct Acknowledged {
    /// BF.ADD items, with when the reply arrived.
    added: Vec<(String, Instant)>,
    /// Counting-filter items added twice and deleted once: each must still be there.
    kept: Vec<String>,
}

/// Writers on their own connections until the server goes away: BF.ADD of new items, and on a
/// counting filter ADD, ADD, DEL of the same item (so a delete replayed twice would show).
fn run_writers(
    port: u16,
    cycle: usize,
    writers: usize,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<Acknowledged>> {
    (0..writers)
        .map(|writer| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut acked = Acknowledged::default();
                let mut client = RawClient::connect(loopback(port));
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let item = format!("c{cycle}-w{writer}-{i}");
                    if !acknowledged(&mut client, &["BF.ADD", "urls", &item]) {
                        break;
                    }
                    acked.added.push((item.clone(), Instant::now()));
                    if i % 4 == 0 {
                        let ops = [
                            ["CBF.ADD", "counted", &item],
                            ["CBF.ADD", "counted", &item],
                            ["CBF.DEL", "counted", &item],
                        ];
                        if !ops.iter().all(|op| acknowledged(&mut client, op)) {
                            break;
                        }
                        acked.kept.push(item);
                    }
                }
                acked
            })
        })
        .collect()
}

/// Kills the server after `run_for`, then gathers what its writers had acknowledged.
fn kill_during_writes(
    server: Running,
    port: u16,
    cycle: usize,
    run_for: Duration,
) -> (Acknowledged, Instant) {
    let stop = Arc::new(AtomicBool::new(false));
    let writers = run_writers(port, cycle, 3, &stop);
    let mut compactor = RawClient::connect(loopback(port));
    std::thread::sleep(run_for / 2);
    // A compaction in the middle, so that kills also land during and after one.
    compactor.cmd(&["BGREWRITEAOF"]);
    std::thread::sleep(run_for / 2);
    let killed_at = Instant::now();
    server.kill();
    stop.store(true, Ordering::Relaxed);
    let mut all = Acknowledged::default();
    for writer in writers {
        let acked = writer.join().expect("writer");
        all.added.extend(acked.added);
        all.kept.extend(acked.kept);
    }
    (all, killed_at)
}

#[test]
fn appendfsync_always_loses_no_acknowledged_write_to_kill_9() {
    let dir = DataDir::new("aof-always");
    let flags = [
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--auto-aof-rewrite-min-size",
        "32768",
        "--auto-aof-rewrite-percentage",
        "50",
    ];
    let mut safe: Vec<String> = Vec::new();
    let mut kept: Vec<String> = Vec::new();
    const CYCLES: usize = 5;
    for cycle in 0..=CYCLES {
        let port = free_port();
        let server = spawn_server(&dir.0, port, &flags);
        let mut client = RawClient::connect(loopback(port));
        let what = format!("after kill {cycle}");
        assert_all_present(&mut client, "BF.MEXISTS", "urls", &safe, &what);
        assert_all_present(&mut client, "CBF.MEXISTS", "counted", &kept, &what);
        if cycle == CYCLES {
            break;
        }
        let run_for = Duration::from_millis(400 + 150 * cycle as u64);
        let (acked, _) = kill_during_writes(server, port, cycle, run_for);
        assert!(!acked.added.is_empty(), "cycle {cycle} wrote nothing");
        safe.extend(acked.added.into_iter().map(|(item, _)| item));
        kept.extend(acked.kept);
    }
}

/// With everysec and no, a reply waits until the write is handed to the operating system, as
/// in Redis: a crash of the process alone (kill -9, not a power cut) loses nothing acknowledged.
#[test]
fn appendfsync_everysec_and_no_lose_no_acknowledged_write_to_kill_9() {
    for fsync in ["everysec", "no"] {
        let dir = DataDir::new(&format!("aof-{fsync}"));
        let flags = ["--appendonly", "yes", "--appendfsync", fsync];
        let port = free_port();
        let server = spawn_server(&dir.0, port, &flags);
        let (acked, _) = kill_during_writes(server, port, 0, Duration::from_millis(1500));
        let items: Vec<String> = acked.added.iter().map(|(item, _)| item.clone()).collect();
        assert!(!items.is_empty(), "nothing was acknowledged");
        let port = free_port();
        let _server = spawn_server(&dir.0, port, &flags);
        let mut client = RawClient::connect(loopback(port));
        assert_all_present(&mut client, "BF.MEXISTS", "urls", &items, fsync);
    }
}

fn config_in(dir: &Path, fsync: &str) -> Config {
    let mut config = Config::default_for_tests();
    config.dir = dir.to_path_buf();
    config.appendonly = true;
    config
        .set_many(&[(b"appendfsync", fsync.as_bytes())])
        .expect("fsync policy");
    config
}

/// The keyspace the compaction test builds, as the server describes it: every counter of the
/// counting filter item by item (a write replayed twice, or lost, shows), and the other keys.
fn describe(client: &mut RawClient, items: &[String]) -> Vec<Vec<u8>> {
    let mut seen: Vec<Vec<u8>> = items
        .iter()
        .map(|item| client.cmd(&["CBF.COUNT", "counted", item]))
        .collect();
    for command in [
        &["CBF.INFO", "counted"][..],
        &["BF.INFO", "urls"],
        &["GET", "plain"],
        &["EXPIRETIME", "volatile"],
        &["SELECT", "3"],
        &["BF.INFO", "fixed"],
    ] {
        seen.push(client.cmd(command));
    }
    seen
}

#[test]
fn a_compaction_while_clients_write_replays_to_the_same_keyspace() {
    let dir = DataDir::new("aof-compact");
    let items: Vec<String> = (0..200).map(|i| format!("item{i}")).collect();
    let before = {
        let server = TestServer::start_with(config_in(&dir.0, "no"));
        let mut setup = server.client();
        setup.cmd(&["SET", "plain", "value"]);
        setup.cmd(&["SET", "volatile", "v", "EX", "1000"]);
        setup.cmd(&["SELECT", "3"]);
        setup.cmd(&["BF.RESERVE", "fixed", "0.001", "500", "NONSCALING"]);
        setup.cmd(&["SELECT", "0"]);
        let writing = Arc::new(AtomicBool::new(true));
        let writer = {
            let writing = writing.clone();
            let items = items.clone();
            let addr = server.addr;
            std::thread::spawn(move || {
                let mut client = RawClient::connect(addr);
                let mut round = 0;
                while writing.load(Ordering::Relaxed) || round < 3 {
                    for (i, item) in items.iter().enumerate() {
                        client.cmd(&["CBF.ADD", "counted", item]);
                        if (i + round) % 3 == 0 {
                            client.cmd(&["CBF.DEL", "counted", item]);
                        }
                        client.cmd(&["BF.ADD", "urls", &format!("{round}-{item}")]);
                    }
                    client.cmd(&["MULTI"]);
                    client.cmd(&["SELECT", "3"]);
                    client.cmd(&["BF.ADD", "fixed", &format!("tx{round}")]);
                    client.cmd(&["SELECT", "0"]);
                    client.cmd(&["EXEC"]);
                    round += 1;
                }
            })
        };
        let mut admin = server.client();
        for _ in 0..3 {
            assert!(admin
                .cmd(&["BGREWRITEAOF"])
                .starts_with(b"+Background append only file rewriting"));
            while String::from_utf8_lossy(&admin.cmd(&["INFO", "persistence"]))
                .contains("aof_rewrite_in_progress:1")
            {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        writing.store(false, Ordering::Relaxed);
        writer.join().expect("writer");
        describe(&mut server.client(), &items)
    };
    let segments = list_segments(&dir.0).expect("segments");
    assert_eq!(segments.len(), 1, "compaction left {segments:?}");
    let server = TestServer::start_with(config_in(&dir.0, "no"));
    let after = describe(&mut server.client(), &items);
    assert_eq!(before, after);
}

/// Writes a few records through a real server and returns the one segment's bytes and the
/// items it holds, one per record.
fn written_segment(dir: &Path) -> (Vec<u8>, Vec<String>) {
    let items: Vec<String> = (0..20).map(|i| format!("item-{i}")).collect();
    {
        let server = TestServer::start_with(config_in(dir, "always"));
        let mut client = server.client();
        for item in &items {
            client.cmd(&["BF.ADD", "urls", item]);
        }
    }
    let segments = list_segments(dir).expect("segments");
    assert_eq!(segments.len(), 1);
    (std::fs::read(&segments[0].1).expect("read"), items)
}

/// Reads a segment's bytes back: how many records, and why it stopped.
fn read_back(dir: &Path, bytes: &[u8]) -> Result<(usize, Stop), String> {
    let path = dir.join("sieved-1.aof");
    std::fs::write(&path, bytes).expect("write");
    let mut reader = SegmentReader::open(&path, 1).map_err(|(_, why)| why.to_string())?;
    let mut records = 0;
    loop {
        match reader.next_record() {
            Ok(_) => records += 1,
            Err(stop) => return Ok((records, stop)),
        }
    }
}

#[test]
fn every_cut_is_a_torn_tail_and_every_flipped_byte_is_detected() {
    let dir = DataDir::new("aof-damage");
    let (good, items) = written_segment(&dir.0);
    let scratch = DataDir::new("aof-damage-scratch");
    let (records, stop) = read_back(&scratch.0, &good).expect("the intact file reads");
    assert_eq!((records, stop), (items.len(), Stop::End));
    for len in 24..good.len() {
        match read_back(&scratch.0, &good[..len]).expect("a cut file opens") {
            (n, Stop::End) => assert!(n < records, "cut at {len}: all records read"),
            (n, Stop::Torn { .. }) => assert!(n < records, "cut at {len}"),
            (_, stop) => panic!("a file cut at {len} is a torn tail, not {stop:?}"),
        }
    }
    let last_record_starts = {
        let mut cut = good.len() - 1;
        while !matches!(read_back(&scratch.0, &good[..cut]), Ok((n, Stop::End)) if n == records - 1)
        {
            cut -= 1;
        }
        cut
    };
    for offset in 0..good.len() {
        let mut damaged = good.clone();
        damaged[offset] ^= 0x40;
        match read_back(&scratch.0, &damaged) {
            Err(_) => assert!(offset < 24, "byte {offset}: the header was fine"),
            Ok((_, Stop::Damaged { offset: at, .. })) => {
                assert!(at as usize <= offset, "byte {offset}: reported at {at}")
            }
            Ok((n, Stop::Torn { .. })) => assert!(
                offset >= last_record_starts && n == records - 1,
                "byte {offset}: damage before the last record passed for a torn tail"
            ),
            Ok((_, Stop::End)) => panic!("a flipped byte at {offset} went unnoticed"),
        }
    }
}

/// Whether the server on `port` answers and has loaded its data.
fn loaded(port: u16) -> bool {
    let Ok(mut client) = RawClient::try_connect(loopback(port)) else {
        return false;
    };
    match client.try_command(&[b"INFO", b"persistence"]) {
        Ok(reply) => try_info_field(&String::from_utf8_lossy(&reply), "loading") == Some("0"),
        Err(_) => false,
    }
}

fn start_output(dir: &Path, extra: &[&str]) -> (bool, String) {
    let port = free_port();
    let mut child = sieved_command(dir, port, &["--appendonly", "yes"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sieved");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(_status) = child.try_wait().expect("wait") {
            break;
        }
        // The port opens before loading, and INFO answers while the data loads (`loading:1`);
        // a server that fails to load closes the connection and exits.
        if loaded(port) {
            if let Ok(mut client) = RawClient::try_connect(loopback(port)) {
                let _ = client.try_command(&[b"SHUTDOWN", b"NOSAVE"]);
            }
            break;
        }
        assert!(
            Instant::now() < deadline,
            "sieved neither started nor failed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    let log = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), log)
}

#[test]
fn start_up_drops_a_torn_tail_refuses_damage_and_keeps_what_it_can_when_told() {
    let dir = DataDir::new("aof-startup");
    let (good, items) = written_segment(&dir.0);
    let path = dir.0.join("sieved-1.aof");

    std::fs::write(&path, &good[..good.len() - 3]).expect("write");
    let (ok, log) = start_output(&dir.0, &[]);
    assert!(ok, "{log}");
    assert!(log.contains("cut short"), "{log}");
    {
        let server = TestServer::start_with(config_in(&dir.0, "always"));
        let mut client = server.client();
        assert_all_present(
            &mut client,
            "BF.MEXISTS",
            "urls",
            &items[..items.len() - 1],
            "torn tail",
        );
        assert_eq!(
            client.cmd(&["BF.EXISTS", "urls", &items[items.len() - 1]]),
            b":0\r\n"
        );
    }

    let good = std::fs::read(&path).expect("read");
    let mut damaged = good.clone();
    damaged[60] ^= 1;
    std::fs::write(&path, &damaged).expect("write");
    let (ok, log) = start_output(&dir.0, &[]);
    assert!(!ok, "{log}");
    assert!(
        log.contains("sieved-1.aof") && log.contains("at byte"),
        "{log}"
    );
    assert_eq!(std::fs::read(&path).expect("kept as it was"), damaged);

    let (ok, log) = start_output(&dir.0, &["--aof-load-damaged", "yes"]);
    assert!(ok, "{log}");
    assert!(!path.exists(), "the damaged file was not set aside");
    let aside = std::fs::read_dir(&dir.0)
        .expect("list")
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains(".damaged-"));
    assert!(aside, "the damaged file is gone");
}

#[test]
fn config_reports_and_changes_the_policy() {
    let dir = DataDir::new("aof-config");
    let server = TestServer::start_with(config_in(&dir.0, "everysec"));
    let mut client = server.client();
    assert_eq!(
        client.cmd(&["CONFIG", "GET", "appendonly"]),
        b"*2\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n"
    );
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "appendfsync", "always"]),
        b"+OK\r\n"
    );
    assert_eq!(
        client.cmd(&["CONFIG", "GET", "appendfsync"]),
        b"*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n"
    );
    assert_eq!(client.cmd(&["BF.ADD", "k", "x"]), b":1\r\n");
    let info = String::from_utf8(client.cmd(&["INFO", "persistence"])).expect("text");
    assert!(info.contains("aof_enabled:1"), "{info}");
    assert!(client
        .cmd(&["CONFIG", "SET", "appendfsync", "sometimes"])
        .starts_with(b"-ERR"));
}
