//! Stock Scrapy-Redis crawls (scrapy-redis with the scrapy-redis-bloomfilter dupefilter) with
//! sieved as their only server, and the same crawls on redis-server where it is at hand.
//! examples/scrapy-redis/crawl.py checks each crawl (every page fetched, the queue drained);
//! this test checks what lies between the runs: the commands sent, and the duplicates.

use crate::support::{free_port, python_with, repo_file, spawn_server, DataDir, RedisServer};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const PAGES: &str = "1000";

/// Runs a crawl against the server on `port` and returns its JSON summary line.
fn crawl(python: &Path, port: u16, workers: u32, dupefilter: &str, exactly_once: bool) -> String {
    let script = repo_file("examples/scrapy-redis/crawl.py");
    let mut command = Command::new(python);
    command
        .arg(&script)
        .args(["--port", &port.to_string(), "--pages", PAGES])
        .args([
            "--workers",
            &workers.to_string(),
            "--dupefilter",
            dupefilter,
        ]);
    if exactly_once {
        command.arg("--exactly-once");
    }
    let output = command.output().expect("run crawl.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{workers}-worker {dupefilter} crawl against port {port} failed ({:?}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    println!("port {port}: {summary}");
    summary
}

/// The names of an object's keys inside the summary's `"field": {...}`.
fn names_in(summary: &str, field: &str) -> BTreeSet<String> {
    let start = summary
        .find(&format!("\"{field}\": {{"))
        .unwrap_or_else(|| panic!("no {field} in {summary}"));
    let object = &summary[start..];
    let object = &object[object.find('{').expect("object")..=object.find('}').expect("end")];
    object
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn number_in(summary: &str, field: &str) -> u64 {
    let start = summary
        .find(&format!("\"{field}\": "))
        .unwrap_or_else(|| panic!("no {field} in {summary}"))
        + field.len()
        + 4;
    let digits: String = summary[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().expect("a number")
}

/// The commands a crawl sent, less the probe redis-py 8 makes of every server: CLIENT
/// MAINT_NOTIFICATIONS, a Redis 8.2 command, which Redis 7.0 refuses as sieved does and after
/// which the client carries on.
fn commands_sent(summary: &str) -> BTreeSet<String> {
    let mut commands = names_in(summary, "commands");
    commands.remove("client");
    commands
}

fn assert_none_failed(summary: &str) {
    let failed = names_in(summary, "failed");
    assert!(
        failed.iter().all(|name| name == "client"),
        "commands failed during the crawl: {failed:?}"
    );
}

#[test]
fn stock_scrapy_redis_crawls_run_against_sieved_as_against_redis() {
    let Some(python) = python_with(
        "scrapy_redis, scrapy_redis_bloomfilter",
        "scrapy-redis (pip install -r examples/scrapy-redis/requirements.txt)",
    ) else {
        return;
    };
    let dir = DataDir::new("scrapy-redis");
    let port = free_port();
    let server = spawn_server(&dir.0, port, &["--appendonly", "yes"]);

    // One worker: every page exactly once.
    let alone = crawl(&python, port, 1, "bitmap", true);
    assert_none_failed(&alone);
    // Two workers sharing the queue: every page, and duplicates only where both workers checked
    // a request's bits before either set them (the package's GETBITs then SETBITs).
    let shared = crawl(&python, port, 2, "bitmap", false);
    assert_none_failed(&shared);
    // The same with a sieved Bloom filter as the dupefilter: BF.INSERT tests and sets at once, so
    // no page is ever fetched twice.
    let bloom = crawl(&python, port, 2, "bloom", true);
    assert_none_failed(&bloom);
    server.kill();

    let Some(redis) = RedisServer::start("scrapy-redis-oracle") else {
        return;
    };
    let on_redis = crawl(&python, redis.addr.port(), 2, "bitmap", false);
    assert_eq!(commands_sent(&shared), commands_sent(&on_redis));
    // Both runs race the same way; their duplicate counts are small and vary from run to run,
    // so sieved is held to redis-server's count with a margin of 1% of the pages.
    let (on_sieved, on_redis) = (
        number_in(&shared, "duplicates"),
        number_in(&on_redis, "duplicates"),
    );
    assert!(
        on_sieved <= on_redis + 10,
        "{on_sieved} duplicate fetches on sieved, {on_redis} on redis-server"
    );
}
