//! A stock Scrapy-Redis crawl (scrapy-redis with the scrapy-redis-bloomfilter dupefilter, three
//! worker processes) with sieved as its only server: examples/scrapy-redis/crawl.py checks the
//! crawl itself; this test checks that every command it sent worked, and, where redis-server is
//! at hand, that the crawl sent sieved exactly the commands it sends Redis.

mod common;

use common::{free_port, missing, spawn_server, tool, DataDir, RedisServer};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the crawl against the server on `port` and returns its JSON summary line.
fn crawl(python: &Path, port: u16) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scrapy-redis/crawl.py");
    let output = Command::new(python)
        .arg(&script)
        .args([
            "--port",
            &port.to_string(),
            "--workers",
            "3",
            "--pages",
            "300",
        ])
        .output()
        .expect("run crawl.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "crawl against port {port} failed ({:?}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout.lines().last().unwrap_or_default().to_string()
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

fn scrapy_python() -> Option<PathBuf> {
    let python = tool("python3")?;
    let import = Command::new(&python)
        .args(["-c", "import scrapy_redis, scrapy_redis_bloomfilter"])
        .output()
        .expect("run python3");
    if !import.status.success() {
        missing("scrapy-redis (pip install -r examples/scrapy-redis/requirements.txt)");
        return None;
    }
    Some(python)
}

#[test]
fn a_stock_scrapy_redis_crawl_runs_against_sieved_as_against_redis() {
    let Some(python) = scrapy_python() else {
        return;
    };
    let dir = DataDir::new("scrapy-redis");
    let port = free_port();
    let server = spawn_server(&dir.0, port, &["--appendonly", "yes"]);
    let summary = crawl(&python, port);
    println!("sieved: {summary}");
    // redis-py 8 asks CLIENT MAINT_NOTIFICATIONS, a Redis 8.2 command, and carries on when a
    // server refuses it (Redis 7.0 refuses it too); everything else must have worked.
    let failed = names_in(&summary, "failed");
    assert!(
        failed.iter().all(|name| name == "client"),
        "commands failed during the crawl: {failed:?}"
    );
    server.kill();

    let Some(redis) = RedisServer::start("scrapy-redis-oracle") else {
        return;
    };
    let on_redis = crawl(&python, redis.addr.port());
    println!("redis-server: {on_redis}");
    let mut sent_to_sieved = names_in(&summary, "commands");
    let mut sent_to_redis = names_in(&on_redis, "commands");
    // INFO reads the counts (Redis counts it after replying) and CLIENT is the refused probe above.
    for counted_differently in ["info", "client"] {
        sent_to_sieved.remove(counted_differently);
        sent_to_redis.remove(counted_differently);
    }
    assert_eq!(sent_to_sieved, sent_to_redis);
}
