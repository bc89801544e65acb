//! Running sieved as a service: the configuration file in deploy/ and its precedence, CONFIG
//! REWRITE, readiness through sd_notify, SIGTERM, and the systemd unit (checked with
//! `systemd-analyze verify`, required under CI as external.rs requires its programs).

use crate::support::{
    binary, free_port, missing, on_path, python_with, repo_file, wait_until_serving, DataDir,
    RawClient, Running,
};
use std::io::{Read, Write};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The real binary, killed if the test ends without stopping it.
fn sieved() -> Command {
    let mut command = Command::new(binary());
    command.stdin(Stdio::null()).env_remove("NOTIFY_SOCKET");
    command
}

/// Starts the binary with the test's data directory and port on top of `args`, and waits until
/// it answers.
fn start(args: &[&str], dir: &Path, port: u16, configure: impl FnOnce(&mut Command)) -> Running {
    let mut command = sieved();
    command
        .args(args)
        .args([
            "--port",
            &port.to_string(),
            "--dir",
            &dir.display().to_string(),
        ])
        .args(["--threads", "2", "--log-level", "warn"]);
    configure(&mut command);
    wait_until_serving(Running(command.spawn().expect("start sieved")), port)
}

fn config_get(client: &mut RawClient, name: &str) -> String {
    let reply = client.cmd(&["CONFIG", "GET", name]);
    let text = String::from_utf8(reply).expect("text");
    text.lines().nth(4).unwrap_or_default().to_string()
}

/// Copies deploy/sieved.conf where the test may change it.
fn copy_of_deployed_config(dir: &DataDir) -> PathBuf {
    let path = dir.0.join("sieved.conf");
    std::fs::copy(repo_file("deploy/sieved.conf"), &path).expect("copy sieved.conf");
    path
}

#[test]
fn deployed_config_sets_every_parameter_to_its_default() {
    let dir = DataDir::new("defaults");
    let conf = copy_of_deployed_config(&dir);
    let data = dir.0.join("data");
    let port = free_port();
    let _server = start(&["--config", conf.to_str().unwrap()], &data, port, |_| {});
    let mut from_file = RawClient::local(port);
    let other_port = free_port();
    let _plain = start(&[], &dir.0.join("plain"), other_port, |_| {});
    let mut built_in = RawClient::local(other_port);
    for name in [
        "bind",
        "databases",
        "shards",
        "loglevel",
        "save",
        "bf-error-rate",
        "bf-initial-size",
        "bf-expansion-factor",
        "bf-layout",
        "max-filter-memory",
        "proto-max-bulk-len",
        "slowlog-log-slower-than",
        "slowlog-max-len",
        "metrics-addr",
    ] {
        assert_eq!(
            config_get(&mut from_file, name),
            config_get(&mut built_in, name),
            "{name}: deploy/sieved.conf does not say the default"
        );
    }
    let info = String::from_utf8(from_file.cmd(&["INFO", "server"])).unwrap();
    assert!(
        info.contains(&format!("config_file:{}\r\n", conf.display())),
        "{info}"
    );
}

#[test]
fn flags_override_the_environment_which_overrides_the_file() {
    let dir = DataDir::new("precedence");
    let conf = dir.0.join("sieved.conf");
    std::fs::write(
        &conf,
        "bf-initial-size 300\nbf-expansion-factor 3\nslowlog-max-len 7\nsave 60 1\nsave 30 5\n",
    )
    .unwrap();
    let port = free_port();
    let _server = start(
        &[
            "--config",
            conf.to_str().unwrap(),
            "--bf-expansion-factor",
            "4",
        ],
        &dir.0.join("data"),
        port,
        |command| {
            command
                .env("SIEVED_BF_EXPANSION_FACTOR", "5")
                .env("SIEVED_SLOWLOG_MAX_LEN", "9");
        },
    );
    let mut client = RawClient::local(port);
    assert_eq!(config_get(&mut client, "bf-initial-size"), "300");
    assert_eq!(config_get(&mut client, "bf-expansion-factor"), "4");
    assert_eq!(config_get(&mut client, "slowlog-max-len"), "9");
    assert_eq!(config_get(&mut client, "save"), "60 1 30 5");
}

/// The lines a rewrite changed, each as (before, after), pairing lines by position.
fn changed_lines<'a>(original: &'a str, rewritten: &'a str) -> Vec<(&'a str, &'a str)> {
    original
        .lines()
        .zip(rewritten.lines())
        .filter(|(before, after)| before != after)
        .collect()
}

fn start_failure(conf_text: &str) -> Output {
    let dir = DataDir::new(&format!("bad-{}", conf_text.len()));
    let conf = dir.0.join("bad.conf");
    std::fs::write(&conf, conf_text).unwrap();
    let child = sieved()
        .args(["--config", conf.to_str().unwrap(), "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sieved");
    crate::support::output_of_refused_start(child)
}

#[test]
fn a_bad_file_stops_start_up_naming_file_and_line() {
    for (text, expected) in [
        (
            "port 6390\n\nlatency-tracking yes\n",
            "bad.conf:3: unknown directive 'latency-tracking'",
        ),
        (
            "port 6390\n\nappendfsync sometimes\n",
            "bad.conf:3: appendfsync: argument must be one of 'always', 'everysec' or 'no'",
        ),
        (
            "# comment\nbf-error-rate 2\n",
            "bad.conf:2: bf-error-rate: argument must be between 0 and 1 exclusive",
        ),
        ("bind \"127.0.0.1\n", "bad.conf:1: unbalanced quotes"),
        ("port 1 2\n", "bad.conf:1: 'port' takes one value"),
        ("port many\n", "bad.conf:1: port: invalid value 'many'"),
    ] {
        let output = start_failure(text);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{text:?}: {stderr}");
        assert!(stderr.contains(expected), "{text:?}: {stderr}");
    }
}

#[test]
fn config_rewrite_round_trips_and_keeps_the_file_as_written() {
    let dir = DataDir::new("rewrite");
    let conf = copy_of_deployed_config(&dir);
    let original = std::fs::read_to_string(&conf).unwrap();
    let data = dir.0.join("data");
    let port = free_port();
    let server = start(&["--config", conf.to_str().unwrap()], &data, port, |_| {});
    let mut client = RawClient::local(port);
    assert_eq!(client.cmd(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        original,
        "nothing changed, yet the rewrite changed the file (or wrote the --port/--dir flags)"
    );
    assert_eq!(
        client.cmd(&[
            "CONFIG",
            "SET",
            "bf-error-rate",
            "0.05",
            "save",
            "",
            "slowlog-max-len",
            "64"
        ]),
        b"+OK\r\n"
    );
    assert_eq!(client.cmd(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    let rewritten = std::fs::read_to_string(&conf).unwrap();
    let changed = changed_lines(&original, &rewritten);
    assert_eq!(
        changed,
        [
            ("save 3600 1 300 100 60 10000", "save \"\""),
            ("bf-error-rate 0.01", "bf-error-rate 0.05"),
            ("slowlog-max-len 128", "slowlog-max-len 64"),
        ]
    );
    assert_eq!(original.lines().count(), rewritten.lines().count());
    drop(server);

    let port = free_port();
    let _again = start(&["--config", conf.to_str().unwrap()], &data, port, |_| {});
    let mut client = RawClient::local(port);
    assert_eq!(config_get(&mut client, "bf-error-rate"), "0.05");
    assert_eq!(config_get(&mut client, "save"), "");
    assert_eq!(config_get(&mut client, "slowlog-max-len"), "64");
}

#[test]
fn config_rewrite_writes_requirepass() {
    let dir = DataDir::new("requirepass");
    let conf = copy_of_deployed_config(&dir);
    let original = std::fs::read_to_string(&conf).unwrap();
    let data = dir.0.join("data");
    let port = free_port();
    let server = start(&["--config", conf.to_str().unwrap()], &data, port, |_| {});
    let mut client = RawClient::local(port);
    let password = "two words, \"quoted\"";
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "requirepass", password]),
        b"+OK\r\n"
    );
    assert_eq!(client.cmd(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    let rewritten = std::fs::read_to_string(&conf).unwrap();
    let changed = changed_lines(&original, &rewritten);
    assert_eq!(
        changed,
        [(
            "requirepass \"\"",
            "requirepass \"two words, \\\"quoted\\\"\""
        )]
    );
    // A password the file could not hold as it is stops the rewrite and leaves the file alone.
    assert_eq!(
        client.command(&[b"CONFIG", b"SET", b"requirepass", b"\xff"]),
        b"+OK\r\n"
    );
    assert_eq!(
        client.cmd(&["CONFIG", "REWRITE"]),
        &b"-ERR Rewriting config file: requirepass is not UTF-8 text, which the file cannot hold\r\n"[..]
    );
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), rewritten);
    drop(server);

    let port = free_port();
    let _again = start(&["--config", conf.to_str().unwrap()], &data, port, |_| {});
    let mut client = RawClient::local(port);
    assert_eq!(
        client.cmd(&["PING"]),
        b"-NOAUTH Authentication required.\r\n"
    );
    assert_eq!(client.cmd(&["AUTH", password]), b"+OK\r\n");
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "requirepass", ""]),
        b"+OK\r\n"
    );
    assert_eq!(client.cmd(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), original);
}

#[test]
fn config_rewrite_appends_what_the_file_lacks() {
    let dir = DataDir::new("append");
    let conf = dir.0.join("small.conf");
    std::fs::write(&conf, "# mine\nbf-initial-size 500\n").unwrap();
    let port = free_port();
    let _server = start(
        &["--config", conf.to_str().unwrap()],
        &dir.0.join("data"),
        port,
        |_| {},
    );
    let mut client = RawClient::local(port);
    client.cmd(&[
        "CONFIG",
        "SET",
        "bf-initial-size",
        "100",
        "bf-expansion-factor",
        "4",
    ]);
    assert_eq!(client.cmd(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        "# mine\nbf-initial-size 100\n# Generated by CONFIG REWRITE\nbf-expansion-factor 4\n",
    );
    let leftovers: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("rewrite"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

fn receive(socket: &UnixDatagram) -> String {
    let mut buffer = [0u8; 4096];
    let n = socket.recv(&mut buffer).expect("a notification in time");
    String::from_utf8_lossy(&buffer[..n]).into_owned()
}

fn notification_socket(dir: &DataDir) -> (UnixDatagram, PathBuf) {
    let path = dir.0.join("notify.sock");
    let socket = UnixDatagram::bind(&path).expect("bind notify socket");
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    (socket, path)
}

#[test]
fn ready_after_loading_then_stopping_on_sigterm() {
    let dir = DataDir::new("notify");
    let (socket, path) = notification_socket(&dir);
    let data = dir.0.join("data");
    let port = free_port();
    // A snapshot to load first, so READY has something to wait for.
    {
        let server = start(&[], &data, port, |_| {});
        let mut client = RawClient::local(port);
        client.cmd(&["BF.MADD", "seen", "a", "b", "c"]);
        client.cmd(&["SAVE"]);
        drop(server);
    }
    let mut child = Running(
        sieved()
            .args(["--port", &port.to_string(), "--dir", data.to_str().unwrap()])
            .args(["--save", "", "--log-level", "info"])
            .env("NOTIFY_SOCKET", &path)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start sieved"),
    );
    let ready = receive(&socket);
    assert!(ready.starts_with("READY=1\n"), "{ready:?}");
    assert!(ready.contains("1 keys loaded"), "{ready:?}");
    let mut client = RawClient::local(port);
    assert_eq!(client.cmd(&["BF.EXISTS", "seen", "b"]), b":1\r\n");

    let status = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    assert_eq!(receive(&socket), "STOPPING=1\nSTATUS=shutting down");
    let mut log = String::new();
    child
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    let status = child.0.wait().expect("sieved exits");
    assert!(status.success(), "{status:?}");
    for event in [
        "sieved starting",
        "listening",
        "loaded 1 keys from the snapshot in",
        "ready to accept connections",
        "received SIGTERM",
        "sieved stopped",
    ] {
        assert!(log.contains(event), "no {event:?} in the log:\n{log}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn notifies_an_abstract_socket() {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("sieved-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let socket = UnixDatagram::bind_addr(&addr).expect("bind abstract socket");
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let dir = DataDir::new("abstract");
    let port = free_port();
    let _server = start(&["--save", ""], &dir.0, port, |command| {
        command.env("NOTIFY_SOCKET", format!("@{name}"));
    });
    assert!(receive(&socket).starts_with("READY=1\n"));
}

/// The unit names /usr/local/bin/sieved, which verify checks exists; the copy checked here
/// names the binary just built instead, and is otherwise the file as shipped.
#[test]
fn systemd_accepts_the_unit() {
    let Some(analyze) = on_path("systemd-analyze") else {
        missing("systemd-analyze (apt-get install systemd)");
        return;
    };
    let unit = std::fs::read_to_string(repo_file("deploy/sieved.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/sieved --config /etc/sieved/sieved.conf\n"));
    let dir = DataDir::new("unit");
    let path = dir.0.join("sieved.service");
    std::fs::write(&path, unit.replace("/usr/local/bin/sieved", binary())).unwrap();
    let output = Command::new(analyze)
        .arg("verify")
        .arg(&path)
        .current_dir(&dir.0)
        .output()
        .expect("run systemd-analyze");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        !stderr.contains("sieved.service"),
        "systemd-analyze complains about the unit:\n{stderr}"
    );
}

#[test]
fn crawler_example_prints_each_url_once() {
    let Some(python) = python_with("redis", "python3 with redis-py") else {
        return;
    };
    let server = crate::support::TestServer::start();
    let unique: Vec<String> = (0..3000)
        .map(|i| format!("https://site{}.example/page/{i}", i % 7))
        .collect();
    let mut input = String::new();
    for (i, url) in unique.iter().enumerate() {
        input.push_str(&format!("{url}\n{}\n", unique[i / 2]));
    }
    let mut child = Command::new(python)
        .arg(repo_file("examples/crawler.py"))
        .args(["--port", &server.addr.port().to_string(), "--batch", "100"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the crawler");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().expect("crawler finishes");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let printed: Vec<&str> = std::str::from_utf8(&output.stdout)
        .unwrap()
        .lines()
        .collect();
    assert_eq!(printed, unique, "each URL once, in first-seen order");
    assert_eq!(stderr.trim(), "6000 URLs read, 3000 new");
    let mut client = server.client();
    assert_eq!(client.cmd(&["BF.CARD", "crawler:seen"]), b":3000\r\n");
}

/// The resident memory of a process, from /proc.
#[cfg(target_os = "linux")]
fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// A reserved filter takes memory as its bits are set, not when it is reserved, whatever its
/// layout: two filters of some 240 MB each raise the resident size by a small part of that.
#[cfg(target_os = "linux")]
#[test]
fn reserving_a_large_filter_takes_no_memory_yet() {
    let dir = DataDir::new("lazy");
    let port = free_port();
    let server = start(&[], &dir.0, port, |_| {});
    let mut client = RawClient::local(port);
    let before = resident_kib(server.0.id());
    for layout in ["classic", "blocked"] {
        client.cmd(&["CONFIG", "SET", "bf-layout", layout]);
        assert_eq!(
            client.cmd(&["BF.RESERVE", layout, "0.01", "200000000", "NONSCALING"]),
            b"+OK\r\n"
        );
        client.cmd(&["BF.ADD", layout, "one item"]);
    }
    let grown = resident_kib(server.0.id()) - before;
    assert!(
        grown < 64 * 1024,
        "reserving 488 MB made {grown} KiB resident"
    );
}
