//! Shared by replication.rs and sentinel.rs: commands over fresh connections (the servers they
//! talk to are killed and restarted), polling with a deadline, and INFO fields.

use crate::support::try_info_field;
use std::thread;
use std::time::{Duration, Instant};

/// Only there so that a stuck step fails the test instead of hanging the run; every step that
/// works takes a small fraction of it.
pub const GUARD: Duration = Duration::from_secs(60);

pub fn command(args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd
}

pub fn connect(port: u16) -> redis::RedisResult<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
    let con = client.get_connection_with_timeout(Duration::from_secs(2))?;
    con.set_read_timeout(Some(Duration::from_secs(60)))?;
    Ok(con)
}

/// One command on a fresh connection.
pub fn query<T: redis::FromRedisValue>(port: u16, args: &[&str]) -> redis::RedisResult<T> {
    command(args).query(&mut connect(port)?)
}

/// Polls `check` until it gives a value; fails the test, naming `what`, after `GUARD`.
pub fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + GUARD;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(50));
    }
}

/// The text of INFO `section`, if the server answers.
pub fn info(port: u16, section: &str) -> Option<String> {
    query(port, &["INFO", section]).ok()
}

/// One field of INFO `section`, if the server answers and has it.
pub fn query_info_field(port: u16, section: &str, field: &str) -> Option<String> {
    try_info_field(&info(port, section)?, field).map(str::to_string)
}

/// A counter of INFO stats (`sync_full`, `sync_partial_ok`, ...); fails the test if missing.
pub fn stat(port: u16, field: &str) -> u64 {
    query_info_field(port, "stats", field)
        .unwrap_or_else(|| panic!("no {field} in INFO stats of {port}"))
        .parse()
        .unwrap_or_else(|_| panic!("{field} of {port} is not a number"))
}

/// Whether the server at `port` is a replica of `primary` with its link up.
pub fn follows(port: u16, primary: u16) -> bool {
    let Some(text) = info(port, "replication") else {
        return false;
    };
    try_info_field(&text, "role") == Some("slave")
        && try_info_field(&text, "master_port") == Some(primary.to_string().as_str())
        && try_info_field(&text, "master_link_status") == Some("up")
}
