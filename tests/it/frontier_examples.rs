//! The crawl frontier's examples, run against the real binary: examples/frontier/crawl.py (four
//! redis-py workers over a multi-host site, one killed mid-crawl) and
//! examples/scrapy-frontier/crawl.py (Scrapy workers with the frontier as their scheduler). Each
//! script checks its own crawl and exits non-zero on any problem; this test runs them.

use crate::support::{free_port, python_with, repo_file, spawn_server, DataDir};
use std::path::Path;
use std::process::Command;

/// Runs `script` with `args` and returns its last line (its JSON summary).
fn run_example(python: &Path, script: &str, args: &[&str]) -> String {
    let script = repo_file(script);
    let output = Command::new(python)
        .arg(&script)
        .args(args)
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{} failed ({:?}):\n{stdout}\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    println!("{summary}");
    summary
}

#[test]
fn four_workers_one_killed_crawl_every_page() {
    let Some(python) = python_with("redis", "redis-py (pip install redis)") else {
        return;
    };
    let dir = DataDir::new("frontier-example");
    let port = free_port();
    let _server = spawn_server(&dir.0, port, &["--appendonly", "yes"]);
    let summary = run_example(
        &python,
        "examples/frontier/crawl.py",
        &[
            "--port",
            &port.to_string(),
            "--workers",
            "4",
            "--pages",
            "600",
        ],
    );
    assert!(summary.contains("\"pages\": 600"), "{summary}");
}

#[test]
fn scrapy_with_the_frontier_as_scheduler_fetches_each_page_once() {
    let Some(python) = python_with(
        "scrapy, scrapy_redis",
        "scrapy (pip install -r examples/scrapy-redis/requirements.txt)",
    ) else {
        return;
    };
    let dir = DataDir::new("scrapy-frontier");
    let port = free_port();
    let _server = spawn_server(&dir.0, port, &["--appendonly", "yes"]);
    let summary = run_example(
        &python,
        "examples/scrapy-frontier/crawl.py",
        &[
            "--port",
            &port.to_string(),
            "--workers",
            "2",
            "--pages",
            "500",
        ],
    );
    assert!(summary.contains("\"duplicates\": 0"), "{summary}");
}
