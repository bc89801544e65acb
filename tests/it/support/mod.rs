//! Test support, shared by every integration test and by the transcript runner (tests/proto):
//! the server in this process on an ephemeral port, the real binary as a child process, data
//! directories, ports, the external programs tests drive, and checks several test files make.
//! The client (client.rs) and the generator (rng.rs) stand alone, for benches/ to take in too.

pub mod async_client;
pub mod client;
pub mod metrics;
pub mod proxy;
pub mod redisbloom;
pub mod rng;
pub mod tls;

pub use client::{
    encode_command, escape, info_field, loopback, try_info_field, words, Node, RawClient, Resp,
};
pub use rng::Rng;

use sieved::config::Config;
use sieved::server::{Server, Shared};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use std::time::Instant;

/// Servers run inside the test process, so the test installs the allocator the daemon's
/// binary installs: memory limits and the memory figures tests check count as they do there.
#[global_allocator]
static ALLOCATOR: sieved::memory::CountingAllocator = sieved::memory::CountingAllocator;

pub struct TestServer {
    pub addr: SocketAddr,
    /// The TLS port, when the configuration asked for one.
    pub tls_addr: Option<SocketAddr>,
    pub shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The server's data directory, removed on drop when the test did not choose it.
    owned_dir: Option<std::path::PathBuf>,
}

impl TestServer {
    pub fn start() -> TestServer {
        let config = Config::default_for_tests();
        let dir = config.dir.clone();
        let mut server = Self::start_with(config);
        server.owned_dir = Some(dir);
        server
    }

    /// A server with its data in `dir`, after loading the snapshot there if any.
    pub fn start_in(dir: &std::path::Path) -> TestServer {
        let mut config = Config::default_for_tests();
        config.dir = dir.to_path_buf();
        Self::start_with(config)
    }

    pub fn start_with(config: Config) -> TestServer {
        let (sender, receiver) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let server = Server::bind(config).await.expect("bind");
                server.load().expect("load the snapshot");
                sender
                    .send((server.local_addr().expect("address"), server.shared()))
                    .expect("report address");
                server.run(false).await.expect("serve");
            });
        });
        let (addr, shared) = receiver.recv().expect("server started");
        TestServer {
            addr,
            tls_addr: shared.tls_addr,
            shared,
            thread: Some(thread),
            owned_dir: None,
        }
    }

    /// A server that asks for `password` (requirepass).
    pub fn with_password(password: &str) -> TestServer {
        let config = Config::default_for_tests();
        config
            .set_many(&[(b"requirepass", password.as_bytes())])
            .expect("password");
        Self::start_with(config)
    }

    pub fn client(&self) -> RawClient {
        RawClient::connect(self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        // As SIGTERM would, but a test's server stops even if its exit snapshot fails.
        self.shared
            .shutdown
            .request_with(sieved::cmd::ExitSave::Default, true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(dir) = self.owned_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A data directory of the test's own, removed when dropped.
pub struct DataDir(pub PathBuf);

impl DataDir {
    /// A new, empty directory named after `name`, the process and a count: every test of the
    /// binary shares the process, and two may well pick the same name.
    pub fn new(name: &str) -> DataDir {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "sieved-test-{name}-{}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create data dir");
        DataDir(path)
    }

    pub fn snapshot(&self) -> PathBuf {
        self.0.join("sieved.snap")
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_sieved")
}

/// A file of the repository (deploy/, examples/, docs/...), by its path from the top.
pub fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// For a test that measures its process's memory (the counting allocator's total, which is also
/// what an in-process server holds against `maxmemory`, or the resident set): every integration
/// test shares this process, and what the others allocate meanwhile would count. So the test
/// runs again, by itself, in a child process of this binary, and this returns true there, where
/// the test goes on; in the parent it waits for the child, fails if the test failed there, and
/// returns false. `module` is the test's `module_path!()`, `test` its name.
pub fn alone_in_process(module: &str, test: &str) -> bool {
    const CHILD: &str = "SIEVED_TEST_ALONE";
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    // The module path starts with the crate's name; libtest names tests without it.
    let name = match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_string(),
    };
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args([&name, "--exact", "--test-threads", "1", "--nocapture"])
        .env(CHILD, "1")
        .stdin(Stdio::null())
        .output()
        .expect("run the test in a process of its own");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    // Shown, as the test's own output is, when it fails or under --nocapture.
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        output.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name} failed in a process of its own ({})",
        output.status
    );
    false
}

/// A port for a server that a test is about to start. It is below the kernel's ephemeral range
/// (32768 and up on Linux), so no client socket can take it before the server binds it, and it
/// is never handed out twice in one process, whose tests run in parallel: a port the kernel
/// picked could be picked again for another test between this call and the server's bind.
pub fn free_port() -> u16 {
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // Test binaries run one after another; each starts elsewhere in the range all the same.
    let start = std::process::id().wrapping_mul(7919);
    loop {
        let port =
            (FIRST + start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)) % COUNT) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// The real binary, killed (as with kill -9) when dropped, so a failing test leaves no server.
pub struct Running(pub Child);

impl Running {
    pub fn kill(mut self) {
        self.0.kill().expect("kill -9");
        self.0.wait().expect("reap");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The real binary on `port` with its data in `dir`, no snapshot schedule, and `extra` flags.
pub fn sieved_command(dir: &Path, port: u16, extra: &[&str]) -> Command {
    let mut command = Command::new(binary());
    command
        .args([
            "--port",
            &port.to_string(),
            "--dir",
            &dir.display().to_string(),
        ])
        .args(["--save", "", "--threads", "2", "--log-level", "warn"])
        .args(extra);
    command
}

/// Starts the real binary with `extra` flags and waits until it answers.
pub fn spawn_server(dir: &Path, port: u16, extra: &[&str]) -> Running {
    let child = sieved_command(dir, port, extra)
        .stdin(Stdio::null())
        .spawn()
        .expect("start sieved");
    wait_until_serving(Running(child), port)
}

/// Waits until the server just started answers on `port`: it, not whatever else may listen
/// there (a server that could not bind the port, or stopped, is reported with its exit status).
pub fn wait_until_serving(mut server: Running, port: u16) -> Running {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answered = answers_as(port, server.0.id());
        if let Some(status) = server.0.try_wait().expect("poll sieved") {
            panic!("sieved on port {port} exited at start-up: {status}");
        }
        if answered {
            return server;
        }
        assert!(Instant::now() < deadline, "sieved did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether the server on `port` is the process `pid`, by its INFO server, and has loaded its
/// data; one that asks for a password counts, as long as the caller then finds `pid` alive.
fn answers_as(port: u16, pid: u32) -> bool {
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(&encode_command(&[b"INFO", b"server", b"persistence"]))
        .is_err()
    {
        return false;
    }
    let expected = format!("process_id:{pid}\r\n");
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    while seen.len() < 64 * 1024 {
        match stream.read(&mut chunk) {
            Ok(n) if n > 0 => seen.extend_from_slice(&chunk[..n]),
            _ => return false,
        }
        let text = String::from_utf8_lossy(&seen);
        // A server answers INFO while its data loads (`loading:1`), before it serves the data.
        if text.contains("loading:1\r\n") {
            return false;
        }
        if (text.contains(&expected) && text.contains("loading:0\r\n"))
            || text.starts_with("-NOAUTH")
        {
            return true;
        }
    }
    false
}

/// Waits for a server expected to refuse to start and returns what it printed; one that starts
/// anyway is killed after 20 s rather than left to hang the test.
pub fn output_of_refused_start(mut child: Child) -> Output {
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("poll sieved").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().expect("run sieved")
}

pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Reports a missing program: under CI a failure, otherwise a notice that the test is skipped.
/// The notice goes straight to stderr because the test harness captures (and, for passing tests,
/// hides) what `eprintln!` prints.
pub fn missing(what: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} not found, and CI is set: .ci/run installs it"
    );
    let _ = writeln!(std::io::stderr(), "skipping: {what} not found");
}

/// The program `name` on PATH; when it is missing, skips (a notice) or, under CI, fails.
pub fn tool(name: &str) -> Option<PathBuf> {
    let path = on_path(name);
    if path.is_none() {
        missing(name);
    }
    path
}

/// python3, if it can import `modules`; when either is missing, skips (a notice naming
/// `install`) or, under CI, fails.
pub fn python_with(modules: &str, install: &str) -> Option<PathBuf> {
    let python = tool("python3")?;
    let import = Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .expect("run python3");
    if !import.status.success() {
        missing(install);
        return None;
    }
    Some(python)
}

/// Debian's redis-server on a port of its own, the oracle of differential tests; stopped when
/// dropped. None when it is not installed (which fails the test under CI; see `tool`).
pub struct RedisServer {
    child: Child,
    pub addr: SocketAddr,
    _dir: DataDir,
}

impl RedisServer {
    pub fn start(name: &str) -> Option<RedisServer> {
        let program = tool("redis-server")?;
        let dir = DataDir::new(name);
        let port = free_port();
        let child = Command::new(program)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--dir", &dir.0.display().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(RedisServer {
            child,
            addr: ([127, 0, 0, 1], port).into(),
            _dir: dir,
        })
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `writes` on the real binary, then checks that `state` reads the same after each kind of
/// restart: from the append-only file (kill -9 under `appendfsync always`), again after a
/// compaction folded it into a snapshot, and from a snapshot alone (SAVE, kill -9).
pub fn check_writes_survive_restarts(
    name: &str,
    writes: fn(&mut RawClient),
    state: fn(&mut RawClient) -> Vec<u8>,
) {
    let logged = ["--appendonly", "yes", "--appendfsync", "always"];
    let dir = DataDir::new(&format!("{name}-aof"));
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let restart = |server: Running, extra: &[&str]| {
        server.kill();
        (spawn_server(&dir.0, port, extra), RawClient::connect(addr))
    };
    let server = spawn_server(&dir.0, port, &logged);
    let mut client = RawClient::connect(addr);
    writes(&mut client);
    let before = state(&mut client);
    let (server, mut client) = restart(server, &logged);
    assert_eq!(escape(&state(&mut client)), escape(&before), "from the log");
    assert!(client
        .cmd(&["BGREWRITEAOF"])
        .starts_with(b"+Background append only file rewriting"));
    writes(&mut client);
    let before = state(&mut client);
    let (server, mut client) = restart(server, &logged);
    assert_eq!(
        escape(&state(&mut client)),
        escape(&before),
        "from a compaction and the log after it"
    );
    drop(client);
    server.kill();

    let dir = DataDir::new(&format!("{name}-snapshot"));
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let server = spawn_server(&dir.0, port, &[]);
    let mut client = RawClient::connect(addr);
    writes(&mut client);
    let before = state(&mut client);
    assert_eq!(client.cmd(&["SAVE"]), b"+OK\r\n");
    server.kill();
    let server = spawn_server(&dir.0, port, &[]);
    let mut client = RawClient::connect(addr);
    assert_eq!(
        escape(&state(&mut client)),
        escape(&before),
        "from a snapshot"
    );
    drop(client);
    server.kill();
}

/// A primary and its replica, both running until this is dropped.
pub struct ReplicatedPair {
    pub replica: RawClient,
    _servers: [Running; 2],
    _dirs: [DataDir; 2],
}

/// Runs `writes` on a primary with one replica and, once WAIT says the replica has them all,
/// checks that the replica's `state` is the primary's.
pub fn check_replica_holds_the_same(
    name: &str,
    writes: fn(&mut RawClient),
    state: fn(&mut RawClient) -> Vec<u8>,
) -> ReplicatedPair {
    let primary_dir = DataDir::new(&format!("{name}-primary"));
    let replica_dir = DataDir::new(&format!("{name}-replica"));
    let (primary_port, replica_port) = (free_port(), free_port());
    let primary_server = spawn_server(&primary_dir.0, primary_port, &[]);
    let replicaof = format!("127.0.0.1 {primary_port}");
    let replica_server = spawn_server(&replica_dir.0, replica_port, &["--replicaof", &replicaof]);
    let mut primary = RawClient::connect(([127, 0, 0, 1], primary_port).into());
    let mut replica = RawClient::connect(([127, 0, 0, 1], replica_port).into());
    writes(&mut primary);
    assert_eq!(primary.cmd(&["WAIT", "1", "60000"]), b":1\r\n");
    assert_eq!(escape(&state(&mut replica)), escape(&state(&mut primary)));
    ReplicatedPair {
        replica,
        _servers: [replica_server, primary_server],
        _dirs: [replica_dir, primary_dir],
    }
}

/// Checks that COMMAND INFO of each command is, byte for byte, what redis-server answers. RESP2
/// only: the test's RESP3 decoder cannot read maps inside sets; src/cmd/tests/table.rs checks
/// the RESP3 shape.
pub fn assert_command_info_as_redis(ours: SocketAddr, redis: SocketAddr, names: &[&str]) {
    let mut ours = RawClient::speaking(ours, Resp::Two);
    let mut theirs = RawClient::speaking(redis, Resp::Two);
    for name in names {
        assert_eq!(
            escape(&ours.cmd(&["COMMAND", "INFO", name])),
            escape(&theirs.cmd(&["COMMAND", "INFO", name])),
            "{name}"
        );
    }
}

/// Bytes the test process holds beyond `before`, for checks on an in-process server.
pub fn grown_since(before: usize) -> usize {
    sieved::memory::allocated().saturating_sub(before)
}

/// Sends each line to both servers; the replies must be the same bytes. `context` names the
/// run in a failure (the protocol, say).
pub fn assert_lines_as_redis(
    ours: &mut RawClient,
    theirs: &mut RawClient,
    lines: &[&str],
    context: &str,
) {
    for line in lines {
        assert_eq!(
            escape(&ours.line(line)),
            escape(&theirs.line(line)),
            "{line} {context}"
        );
    }
}

/// `assert_lines_as_redis` from an empty keyspace on both servers, once in RESP2 and once in
/// RESP3: sieved at `ours`, redis-server at `theirs`.
pub fn assert_lines_as_redis_in_both_protocols(
    ours: SocketAddr,
    theirs: SocketAddr,
    lines: &[&str],
) {
    for resp in [Resp::Two, Resp::Three] {
        let mut sieved = RawClient::speaking(ours, resp);
        let mut redis = RawClient::speaking(theirs, resp);
        sieved.cmd(&["FLUSHALL"]);
        redis.cmd(&["FLUSHALL"]);
        assert_lines_as_redis(&mut sieved, &mut redis, lines, &format!("({resp:?})"));
    }
}

/// Sends each line; none may be answered with an error.
pub fn run_lines_without_errors(client: &mut RawClient, lines: &[&str]) {
    for line in lines {
        let reply = client.line(line);
        assert!(!reply.starts_with(b"-"), "{line}: {}", escape(&reply));
    }
}
