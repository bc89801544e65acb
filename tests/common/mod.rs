//! Test support: the real server on an ephemeral port, and a raw client that sends exact bytes
//! and frames each reply with redis-protocol's decoder, an implementation independent of ours.
#![allow(dead_code)]

pub mod async_client;
pub mod proxy;
pub mod redisbloom;
pub mod tls;

use sieved::config::Config;
use sieved::server::{Server, Shared};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
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

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Resp {
    Two,
    Three,
}

/// One test of a binary at a time, for tests that measure the process's memory, which the
/// in-process servers of the others would disturb.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

pub struct RawClient {
    stream: TcpStream,
    pending: Vec<u8>,
    pub resp: Resp,
}

/// Encodes a command the way client libraries do: an array of bulk strings.
pub fn encode_command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Shows bytes the way transcripts write them.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        match b {
            b'\r' => out.push_str("\\r"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

impl RawClient {
    /// A client that has switched to `resp` (HELLO 3 for RESP3).
    pub fn speaking(addr: SocketAddr, resp: Resp) -> RawClient {
        let mut client = RawClient::connect(addr);
        if resp == Resp::Three {
            client.hello3();
        }
        client
    }

    pub fn connect(addr: SocketAddr) -> RawClient {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        stream.set_nodelay(true).expect("nodelay");
        RawClient {
            stream,
            pending: Vec::new(),
            resp: Resp::Two,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Length of the first complete reply in `buf`, by redis-protocol's decoder; panics if the
    /// bytes are not valid RESP for the connection's protocol.
    fn frame_len(&self, buf: &[u8]) -> Option<usize> {
        let decoded = match self.resp {
            Resp::Two => redis_protocol::resp2::decode::decode(buf).map(|f| f.map(|(_, n)| n)),
            Resp::Three => {
                redis_protocol::resp3::decode::complete::decode(buf).map(|f| f.map(|(_, n)| n))
            }
        };
        match decoded {
            Ok(found) => found,
            Err(error) => panic!("invalid {:?} reply {}: {error:?}", self.resp, escape(buf)),
        }
    }

    /// Appends what the server sent next to `pending`; the connection must not close first.
    fn read_more(&mut self) {
        let mut chunk = [0u8; 64 * 1024];
        let n = self.stream.read(&mut chunk).expect("read reply");
        assert!(
            n > 0,
            "connection closed; partial reply {}",
            escape(&self.pending)
        );
        self.pending.extend_from_slice(&chunk[..n]);
    }

    /// Reads exactly one reply and returns its bytes.
    pub fn read_reply(&mut self) -> Vec<u8> {
        loop {
            if let Some(len) = self.frame_len(&self.pending) {
                return self.pending.drain(..len).collect();
            }
            self.read_more();
        }
    }

    /// Sends a command and returns its reply, framed by `Node` rather than redis-protocol's
    /// decoder, whose RESP3 takes no aggregate inside a set (COMMAND DOCS's `history`).
    pub fn cmd_framed_by_node(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&encode_command(&args));
        loop {
            if let Some((_, len)) = Node::parse_prefix(&self.pending) {
                return self.pending.drain(..len).collect();
            }
            self.read_more();
        }
    }

    /// Sends a command and returns its reply.
    pub fn command(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(&encode_command(args));
        self.read_reply()
    }

    /// Same as `command` for text arguments.
    pub fn cmd(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.command(&args)
    }

    pub fn hello3(&mut self) {
        self.send(&encode_command(&[b"HELLO", b"3"]));
        self.resp = Resp::Three;
        self.read_reply();
    }

    /// Reads until the server ends the connection (a reset counts as an end) and returns what
    /// came before; a server that keeps it open past the read timeout fails the test.
    pub fn read_until_closed(&mut self) -> Vec<u8> {
        let mut received = std::mem::take(&mut self.pending);
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return received,
                Ok(n) => received.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    panic!("the server did not close the connection")
                }
                Err(_) => return received,
            }
        }
    }

    /// True if the server closed the connection with nothing more to read.
    pub fn is_closed(&mut self) -> bool {
        if !self.pending.is_empty() {
            return false;
        }
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte), Ok(0) | Err(_))
    }
}

/// A data directory of the test's own, removed when dropped.
pub struct DataDir(pub PathBuf);

impl DataDir {
    pub fn new(name: &str) -> DataDir {
        let path = std::env::temp_dir().join(format!("sieved-test-{name}-{}", std::process::id()));
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

/// A port for a server that a test is about to start. It is below the kernel's ephemeral range
/// (32768 and up on Linux), so no client socket can take it before the server binds it, and it
/// is never handed out twice in one test binary, whose tests run in parallel: a port the kernel
/// picked could be picked again for another test between this call and the server's bind.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
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

fn on_path(name: &str) -> Option<PathBuf> {
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

/// xorshift64*: the same sequence on every run for a given seed, for tests that draw their
/// arguments at random.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, choices: &[&'a str]) -> &'a str {
        choices[self.below(choices.len())]
    }
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

/// A reply, parsed just enough to look inside its aggregates (to put unordered elements in
/// order, or compare a map field by field).
pub enum Node {
    /// A whole scalar reply, its bytes as sent.
    Scalar(Vec<u8>),
    /// An aggregate: its type byte, and its elements (a map's keys and values in turn).
    Aggregate(u8, Vec<Node>),
}

impl Node {
    /// The first reply in `bytes`, which must be whole RESP2 or RESP3.
    pub fn parse(bytes: &[u8]) -> Node {
        Node::parse_prefix(bytes).expect("a whole reply").0
    }

    /// The first reply in `bytes` and its length, or None while it is incomplete.
    pub fn parse_prefix(bytes: &[u8]) -> Option<(Node, usize)> {
        let mut at = 0;
        Node::parse_at(bytes, &mut at).map(|node| (node, at))
    }

    fn parse_at(bytes: &[u8], at: &mut usize) -> Option<Node> {
        let end = *at + bytes.get(*at..)?.windows(2).position(|w| w == b"\r\n")? + 2;
        let kind = bytes[*at];
        let number = || -> i64 {
            std::str::from_utf8(&bytes[*at + 1..end - 2])
                .unwrap()
                .parse()
                .unwrap()
        };
        Some(match kind {
            b'$' | b'=' | b'!' if number() >= 0 => {
                let stop = end + number() as usize + 2;
                let node = Node::Scalar(bytes.get(*at..stop)?.to_vec());
                *at = stop;
                node
            }
            b'*' | b'~' | b'%' | b'>' if number() >= 0 => {
                let len = number() as usize * if kind == b'%' { 2 } else { 1 };
                *at = end;
                let items = (0..len).map(|_| Node::parse_at(bytes, at));
                Node::Aggregate(kind, items.collect::<Option<_>>()?)
            }
            _ => {
                let node = Node::Scalar(bytes[*at..end].to_vec());
                *at = end;
                node
            }
        })
    }

    /// The reply's bytes, as they would be sent.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Node::Scalar(bytes) => out.extend_from_slice(bytes),
            Node::Aggregate(kind, items) => {
                let len = items.len() / if *kind == b'%' { 2 } else { 1 };
                out.extend_from_slice(format!("{}{len}\r\n", *kind as char).as_bytes());
                items.iter().for_each(|item| item.write(out));
            }
        }
    }
}

/// Bytes the test process holds beyond `before`, for checks on an in-process server.
pub fn grown_since(before: usize) -> usize {
    sieved::memory::allocated().saturating_sub(before)
}

/// Words as redis-cli splits a line, with "" for an empty one; each character is one byte, so
/// that a line can carry any byte.
pub fn words(line: &str) -> Vec<Vec<u8>> {
    line.split(' ')
        .map(|word| match word {
            "\"\"" => Vec::new(),
            word => word.chars().map(|c| c as u32 as u8).collect(),
        })
        .collect()
}

/// The value of `field` in INFO's text, a line `field:value`; panics, showing the text, if there
/// is none.
pub fn info_field<'a>(info: &'a str, field: &str) -> &'a str {
    let prefix = format!("{field}:");
    info.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {field} in {info}"))
}

impl RawClient {
    /// The value of `field` in `INFO section`.
    pub fn info_field(&mut self, section: &str, field: &str) -> String {
        let info = String::from_utf8(self.cmd(&["INFO", section])).expect("INFO is text");
        info_field(&info, field).to_string()
    }

    /// Sends a command written as one line (see `words`) and returns its reply.
    pub fn line(&mut self, line: &str) -> Vec<u8> {
        let words = words(line);
        let args: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
        self.command(&args)
    }
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

/// Sends each line; none may be answered with an error.
pub fn run_lines_without_errors(client: &mut RawClient, lines: &[&str]) {
    for line in lines {
        let reply = client.line(line);
        assert!(!reply.starts_with(b"-"), "{line}: {}", escape(&reply));
    }
}
