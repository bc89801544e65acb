//! The server driven by programs written for Redis: redis-cli (one-shot commands in RESP2 and
//! RESP3, and --pipe mass insertion), redis-benchmark, and the redis-py suite in tests/python/.
//!
//! A missing program skips its test with a notice, except when the environment variable CI is
//! set: .ci/run installs every one of them, so there a missing program is a failure.

use crate::support::tls;
use crate::support::{missing, python_with, repo_file, tool, TestServer};
use sieved::config::ClientAuth;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Only there so that a wedged program fails the test instead of hanging the whole run; no
/// working program comes anywhere near it.
const HANG_GUARD: Duration = Duration::from_secs(300);

struct Output {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Runs a program to completion with `input` on its stdin.
fn run(mut command: Command, input: Vec<u8>) -> Output {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    // The program may not read its input at all, so a failed write is not an error here.
    let feeder = thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let deadline = Instant::now() + HANG_GUARD;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} hung; killed");
        }
        thread::sleep(Duration::from_millis(20));
    };
    let _ = feeder.join();
    Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// redis-cli aimed at one server.
struct Cli {
    program: PathBuf,
    server: TestServer,
}

impl Cli {
    fn start() -> Option<Cli> {
        Some(Cli {
            program: tool("redis-cli")?,
            server: TestServer::start(),
        })
    }

    fn command(&self, options: &[&str]) -> Command {
        let mut command = Command::new(&self.program);
        command
            .arg("-h")
            .arg(self.server.addr.ip().to_string())
            .arg("-p")
            .arg(self.server.addr.port().to_string())
            .args(options);
        command
    }

    /// Runs one command; returns what redis-cli printed for the reply, without the final newline.
    fn run(&self, options: &[&str], args: &[&str]) -> String {
        let mut command = self.command(options);
        command.args(args);
        let output = run(command, Vec::new());
        assert!(
            output.status.success(),
            "redis-cli {options:?} {args:?}: {:?}\n{}{}",
            output.status,
            output.stdout,
            output.stderr
        );
        output.stdout.trim_end_matches('\n').to_string()
    }

    /// Runs a command whose reply is an error; redis-cli versions differ in the stream and exit
    /// status they use for it, so both streams are returned together.
    fn run_error(&self, options: &[&str], args: &[&str]) -> String {
        let mut command = self.command(options);
        command.args(args);
        let output = run(command, Vec::new());
        format!("{}{}", output.stdout, output.stderr)
            .trim_end_matches('\n')
            .to_string()
    }
}

/// `redis-cli` in its default output mode when stdout is not a terminal, as scripts use it.
const RAW: &[&str] = &[];
/// The output format of an interactive terminal: `(integer) 1`, `1) ...`, `1# key => value`.
const TTY: &[&str] = &["--no-raw"];
const TTY3: &[&str] = &["-3", "--no-raw"];

#[test]
fn redis_cli_resp2() {
    let Some(cli) = Cli::start() else { return };
    assert_eq!(cli.run(RAW, &["PING"]), "PONG");
    assert_eq!(cli.run(RAW, &["BF.ADD", "urls", "x"]), "1");
    assert_eq!(cli.run(RAW, &["BF.ADD", "urls", "x"]), "0");
    assert_eq!(cli.run(RAW, &["BF.EXISTS", "urls", "x"]), "1");
    assert_eq!(cli.run(RAW, &["BF.EXISTS", "urls", "y"]), "0");
    assert_eq!(cli.run(RAW, &["ECHO", "hello world"]), "hello world");

    assert_eq!(cli.run(TTY, &["BF.ADD", "urls", "y"]), "(integer) 1");
    assert_eq!(cli.run(TTY, &["BF.EXISTS", "urls", "y"]), "(integer) 1");
    assert_eq!(
        cli.run(TTY, &["BF.MADD", "urls", "x", "z"]),
        "1) (integer) 0\n2) (integer) 1"
    );
    assert_eq!(
        cli.run(TTY, &["BF.MEXISTS", "urls", "x", "nope"]),
        "1) (integer) 1\n2) (integer) 0"
    );
    assert_eq!(cli.run(TTY, &["BF.CARD", "urls"]), "(integer) 3");
    assert_eq!(
        cli.run(TTY, &["BF.INFO", "urls", "CAPACITY"]),
        "1) (integer) 100"
    );
    let size = cli.run(RAW, &["BF.INFO", "urls", "SIZE"]);
    assert_eq!(
        cli.run(TTY, &["BF.INFO", "urls"]),
        format!(
            " 1) Capacity\n 2) (integer) 100\n 3) Size\n 4) (integer) {size}\n \
             5) Number of filters\n 6) (integer) 1\n 7) Number of items inserted\n \
             8) (integer) 3\n 9) Expansion rate\n10) (integer) 2"
        )
    );
    assert_eq!(
        cli.run(RAW, &["BF.INFO", "urls"]),
        format!(
            "Capacity\n100\nSize\n{size}\nNumber of filters\n1\nNumber of items inserted\n3\n\
             Expansion rate\n2"
        )
    );
    assert_eq!(
        cli.run(TTY, &["BF.RESERVE", "ns", "0.01", "10", "NONSCALING"]),
        "OK"
    );
    assert_eq!(cli.run(TTY, &["BF.INFO", "ns", "EXPANSION"]), "1) (nil)");
    assert_eq!(cli.run(TTY, &["TYPE", "urls"]), "MBbloom--");
    assert_eq!(
        cli.run_error(TTY, &["GET", "urls"]),
        "(error) WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(
        cli.run_error(TTY, &["BF.INFO", "nokey"]),
        "(error) ERR not found"
    );

    let info = cli.run(RAW, &["INFO", "server"]);
    assert!(info.starts_with("# Server"), "{info}");
    assert!(
        info.lines().any(|l| l.starts_with("redis_version:")),
        "{info}"
    );
}

#[test]
fn redis_cli_resp3() {
    let Some(cli) = Cli::start() else { return };
    assert_eq!(cli.run(&["-3"], &["PING"]), "PONG");
    assert_eq!(cli.run(TTY3, &["BF.ADD", "urls", "x"]), "(true)");
    assert_eq!(cli.run(TTY3, &["BF.ADD", "urls", "x"]), "(false)");
    assert_eq!(cli.run(TTY3, &["BF.EXISTS", "urls", "x"]), "(true)");
    assert_eq!(cli.run(TTY3, &["BF.EXISTS", "urls", "nope"]), "(false)");
    assert_eq!(
        cli.run(TTY3, &["BF.MADD", "urls", "x", "y", "z"]),
        "1) (false)\n2) (true)\n3) (true)"
    );
    assert_eq!(
        cli.run(TTY3, &["BF.MEXISTS", "urls", "x", "nope"]),
        "1) (true)\n2) (false)"
    );
    assert_eq!(cli.run(TTY3, &["BF.CARD", "urls"]), "(integer) 3");
    let size = cli.run(RAW, &["BF.INFO", "urls", "SIZE"]);
    assert_eq!(
        cli.run(TTY3, &["BF.INFO", "urls"]),
        format!(
            "1# Capacity => (integer) 100\n2# Size => (integer) {size}\n\
             3# Number of filters => (integer) 1\n4# Number of items inserted => (integer) 3\n\
             5# Expansion rate => (integer) 2"
        )
    );
    assert_eq!(
        cli.run(TTY3, &["BF.INFO", "urls", "ITEMS"]),
        "1# Number of items inserted => (integer) 3"
    );
    cli.run(TTY3, &["BF.RESERVE", "ns", "0.01", "10", "NONSCALING"]);
    assert_eq!(
        cli.run(TTY3, &["BF.INFO", "ns", "EXPANSION"]),
        "1# Expansion rate => (nil)"
    );
    assert_eq!(
        cli.run_error(TTY3, &["BF.INFO", "nokey"]),
        "(error) ERR not found"
    );

    let hello = cli.run(TTY3, &["HELLO", "3"]);
    assert!(hello.contains("\"proto\" => (integer) 3"), "{hello}");
    let info = cli.run(&["-3"], &["INFO", "server"]);
    assert!(
        info.lines().any(|l| l.starts_with("redis_version:")),
        "{info}"
    );
}

/// redis-cli with `--tls`; builds without TLS support (Debian's has it) count as missing.
fn tls_cli() -> Option<PathBuf> {
    let program = tool("redis-cli")?;
    let mut help = Command::new(&program);
    help.arg("--help");
    if !run(help, Vec::new()).stdout.contains("--tls") {
        missing("redis-cli built with TLS (--tls)");
        return None;
    }
    Some(program)
}

/// Runs redis-cli against the server's TLS port, trusting the test CA.
fn run_tls(program: &Path, server: &TestServer, options: &[&str], args: &[&str]) -> Output {
    let addr = server.tls_addr.expect("the TLS port is on");
    let mut command = Command::new(program);
    command
        .args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string()])
        .args(["--tls", "--cacert"])
        .arg(tls::cert_file("ca.crt"))
        .args(options)
        .args(args);
    run(command, Vec::new())
}

#[test]
fn redis_cli_over_tls() {
    let Some(program) = tls_cli() else { return };
    let client_cert = tls::cert_file("client.crt").display().to_string();
    let client_key = tls::cert_file("client.key").display().to_string();
    let identity = ["--cert", client_cert.as_str(), "--key", client_key.as_str()];

    let optional = TestServer::start_with(tls::config(ClientAuth::Optional));
    for (options, args, expected) in [
        (&[][..], &["BF.ADD", "k", "x"][..], "1"),
        (&[][..], &["BF.ADD", "k", "x"][..], "0"),
        (&identity[..], &["BF.EXISTS", "k", "x"][..], "1"),
        (
            &["-3", "--no-raw"][..],
            &["BF.EXISTS", "k", "x"][..],
            "(true)",
        ),
    ] {
        let output = run_tls(&program, &optional, options, args);
        assert!(
            output.status.success() && output.stdout.trim_end() == expected,
            "{options:?} {args:?}: {:?}\n{}{}",
            output.status,
            output.stdout,
            output.stderr
        );
    }

    let required = TestServer::start_with(tls::config(ClientAuth::Required));
    let output = run_tls(&program, &required, &identity, &["BF.ADD", "k", "x"]);
    assert_eq!(output.stdout.trim_end(), "1", "{}", output.stderr);
    let refused = run_tls(&program, &required, &[], &["BF.ADD", "k", "y"]);
    assert!(
        !refused.stdout.trim_end().ends_with('1'),
        "served without a client certificate: {}{}",
        refused.stdout,
        refused.stderr
    );
    assert_eq!(required.client().cmd(&["BF.EXISTS", "k", "y"]), b":0\r\n");
}

/// The value of an integer reply, `:<n>\r\n`.
fn integer(reply: Vec<u8>) -> i64 {
    let text = String::from_utf8(reply).expect("text");
    text.strip_prefix(':')
        .and_then(|rest| rest.strip_suffix("\r\n"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not an integer reply: {text:?}"))
}

fn encode(args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    crate::support::encode_command(&args)
}

/// Mass insertion as the Redis documentation describes it: RESP on redis-cli's stdin.
#[test]
fn redis_cli_pipe_mode() {
    let Some(cli) = Cli::start() else { return };
    const ITEMS: usize = 3000;
    let mut input = Vec::new();
    for i in 0..ITEMS {
        input.extend(encode(&["BF.ADD", "piped", &format!("item{i}")]));
    }
    input.extend(encode(&["SET", "text", "value"]));
    // One error, to see that pipe mode counts the server's error replies.
    input.extend(encode(&["BF.ADD", "text", "x"]));
    input.extend(encode(&["BF.ADD", "piped", "item0"]));

    let output = run(cli.command(&["--pipe"]), input);
    let summary = format!("errors: 1, replies: {}", ITEMS + 3);
    assert!(
        output.stdout.lines().any(|line| line == summary),
        "expected {summary:?} in:\n{}{}",
        output.stdout,
        output.stderr
    );
    assert!(
        output.stderr.contains("WRONGTYPE") || output.stdout.contains("WRONGTYPE"),
        "{}{}",
        output.stdout,
        output.stderr
    );

    let mut client = cli.server.client();
    let card = integer(client.cmd(&["BF.CARD", "piped"])) as usize;
    // Adds that hit a false positive are not counted; at a 1% error rate that is a few dozen.
    assert!((ITEMS - 100..=ITEMS).contains(&card), "BF.CARD {card}");
    let names: Vec<String> = (0..ITEMS).map(|i| format!("item{i}")).collect();
    let mut mexists = vec!["BF.MEXISTS", "piped"];
    mexists.extend(names.iter().map(String::as_str));
    let mut expected = format!("*{ITEMS}\r\n").into_bytes();
    expected.extend(b":1\r\n".repeat(ITEMS));
    assert!(client.cmd(&mexists) == expected, "a piped item is missing");
    assert_eq!(client.cmd(&["GET", "text"]), b"$5\r\nvalue\r\n");
}

#[test]
fn inline_commands_over_tcp() {
    let server = TestServer::start();
    let mut client = server.client();
    client.send(b"PING\r\n");
    assert_eq!(client.read_reply(), b"+PONG\r\n");
    client.send(b"BF.ADD inline \"hello world\"\r\nBF.ADD inline 'hello world'\r\nPING\n");
    assert_eq!(client.read_reply(), b":1\r\n");
    assert_eq!(client.read_reply(), b":0\r\n");
    assert_eq!(client.read_reply(), b"+PONG\r\n");
    assert_eq!(
        client.cmd(&["BF.EXISTS", "inline", "hello world"]),
        b":1\r\n"
    );
}

/// The value of one field of INFO, read over a raw connection.
fn benchmark(server: &TestServer, program: &Path, args: &[&str]) -> String {
    let mut command = Command::new(program);
    command
        .arg("-h")
        .arg(server.addr.ip().to_string())
        .arg("-p")
        .arg(server.addr.port().to_string())
        .args(["-n", "2000", "-q"])
        .args(args);
    let output = run(command, Vec::new());
    assert!(
        output.status.success(),
        "redis-benchmark {args:?}: {:?}\n{}{}",
        output.status,
        output.stdout,
        output.stderr
    );
    assert!(
        !output.stdout.contains("Error"),
        "redis-benchmark {args:?} saw errors:\n{}",
        output.stdout
    );
    output.stdout
}

fn commands_processed(server: &TestServer) -> u64 {
    server
        .client()
        .info_field("stats", "total_commands_processed")
        .parse()
        .expect("a count")
}

#[test]
fn redis_benchmark_ping() {
    let Some(program) = tool("redis-benchmark") else {
        return;
    };
    let server = TestServer::start();
    let output = benchmark(&server, &program, &["-t", "ping"]);
    // -q prints one line per test, after progress lines that end in \r.
    for test in ["PING_INLINE: ", "PING_MBULK: "] {
        assert!(
            output
                .split(['\r', '\n'])
                .any(|line| line.trim_start().starts_with(test)
                    && line.contains("requests per second")),
            "no result for {test} in {output:?}"
        );
    }
    assert!(commands_processed(&server) >= 4000);
    assert_eq!(server.client().cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn redis_benchmark_bf_add() {
    let Some(program) = tool("redis-benchmark") else {
        return;
    };
    let server = TestServer::start();
    let output = benchmark(
        &server,
        &program,
        &["-r", "100000", "BF.ADD", "bench", "__rand_int__"],
    );
    assert!(
        output
            .split(['\r', '\n'])
            .any(|line| line.contains("requests per second")),
        "no result in {output:?}"
    );
    assert!(commands_processed(&server) >= 2000);

    let mut client = server.client();
    assert_eq!(client.cmd(&["TYPE", "bench"]), b"+MBbloom--\r\n");
    let card = integer(client.cmd(&["BF.CARD", "bench"]));
    // 2000 random draws from 100000 values: a few collide, and a few adds are false positives.
    assert!((1000..=2000).contains(&card), "BF.CARD {card}");
}

#[test]
fn python_redis_py_suite() {
    let Some(python) = python_with("redis", "redis-py (python3 -m pip install 'redis>=5')") else {
        return;
    };
    let server = TestServer::start();
    let script = repo_file("tests/python/test_clients.py");
    let mut command = Command::new(&python);
    command.arg(&script).arg(server.addr.port().to_string());
    command.env("SIEVED_HOST", server.addr.ip().to_string());
    let output = run(command, Vec::new());
    // Shown when the test fails.
    println!("{}{}", output.stdout, output.stderr);
    let last = output.stdout.lines().last().unwrap_or_default();
    let passed = last
        .strip_suffix(" passed, 0 failed")
        .and_then(|n| n.parse::<u32>().ok());
    assert!(
        output.status.success() && passed.is_some_and(|n| n > 0),
        "redis-py suite failed ({:?}): {last}",
        output.status
    );
}
