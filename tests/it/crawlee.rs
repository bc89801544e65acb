//! Stock Crawlee for Python (1.11.0, its RedisStorageClient unchanged) crawling a small loopback
//! site with sieved as its only server: examples/crawlee/crawl.py, in both of the request queue's
//! de-duplication modes (Redis sets, and a Bloom filter), alone and as two processes sharing one
//! queue, and a two-process crawl through a kill -9 of sieved (append-only log on) that resumes
//! and loses no page. examples/crawlee/site.py counts what the site served.

use crate::support::{free_port, missing, spawn_server, tool, DataDir, Running};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PAGES: u32 = 120;

fn example(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/crawlee")
        .join(file)
}

fn crawlee_python() -> Option<PathBuf> {
    let python = tool("python3")?;
    let import = Command::new(&python)
        .args(["-c", "import crawlee.storage_clients, parsel, redis"])
        .output()
        .expect("run python3");
    if !import.status.success() {
        missing("Crawlee (pip install \"crawlee[redis,parsel]==1.11.0\")");
        return None;
    }
    Some(python)
}

/// The example's site on a free port, each page taking `delay` seconds.
fn site(python: &Path, delay: &str) -> (Running, u16) {
    let port = free_port();
    let mut child = Command::new(python)
        .arg(example("site.py"))
        .args(["--port", &port.to_string(), "--pages", &PAGES.to_string()])
        .args(["--delay", delay])
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .expect("start site.py");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("read");
    assert_eq!(line.trim(), "serving");
    (Running(child), port)
}

fn crawl_command(python: &Path, action: &str, redis: u16, site: u16, dedup: &str) -> Command {
    let mut command = Command::new(python);
    command
        .arg(example("crawl.py"))
        .arg(action)
        .args(["--redis-port", &redis.to_string()])
        .args(["--site-port", &site.to_string()])
        .args(["--pages", &PAGES.to_string(), "--dedup", dedup])
        .stdin(Stdio::null());
    command
}

fn start_crawl(python: &Path, redis: u16, site: u16, dedup: &str, extra: &[&str]) -> Child {
    crawl_command(python, "crawl", redis, site, dedup)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start crawl.py")
}

fn finish(crawl: Child, what: &str) -> bool {
    let output = crawl.wait_with_output().expect("wait for crawl.py");
    if !output.status.success() {
        eprintln!(
            "{what} exited {:?}:\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    output.status.success()
}

/// The check's JSON summary line.
fn check(python: &Path, redis: u16, site: u16, dedup: &str) -> String {
    let output = crawl_command(python, "check", redis, site, dedup)
        .output()
        .expect("run crawl.py check");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "check failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    println!("{dedup}: {summary}");
    summary
}

fn field<'a>(summary: &'a str, name: &str) -> &'a str {
    let start = summary
        .find(&format!("\"{name}\": "))
        .unwrap_or_else(|| panic!("no {name} in {summary}"))
        + name.len()
        + 4;
    let rest = &summary[start..];
    let end = rest.find([',', '}']).expect("end of field");
    rest[..end].trim()
}

/// Every page served, the dataset one item per page, the queue empty with handled = pages;
/// `exactly_once`: no page served twice and no item twice.
fn assert_complete(summary: &str, exactly_once: bool) {
    let pages = PAGES.to_string();
    assert_eq!(field(summary, "fetched"), pages, "{summary}");
    assert_eq!(field(summary, "distinct_items"), pages, "{summary}");
    assert_eq!(field(summary, "handled"), pages, "{summary}");
    assert_eq!(field(summary, "pending"), "0", "{summary}");
    assert_eq!(field(summary, "empty"), "true", "{summary}");
    assert_eq!(field(summary, "finished"), "true", "{summary}");
    if exactly_once {
        assert_eq!(field(summary, "fetches"), pages, "{summary}");
        assert_eq!(field(summary, "items"), pages, "{summary}");
    }
}

/// Server CPU seconds (user + system) from /proc/<pid>/stat.
fn cpu_seconds(server: &Running) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", server.0.id())).expect("stat");
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .expect("fields")
        .split_whitespace()
        .collect();
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    ticks / 100.0
}

#[test]
fn stock_crawlee_crawls_on_sieved_in_both_dedup_modes() {
    let Some(python) = crawlee_python() else {
        return;
    };
    for dedup in ["default", "bloom"] {
        for processes in [1, 2] {
            let dir = DataDir::new(&format!("crawlee-{dedup}-{processes}"));
            let port = free_port();
            let server = spawn_server(&dir.0, port, &["--appendonly", "yes"]);
            let (_site, site_port) = site(&python, "0");
            let started = Instant::now();
            let crawls: Vec<Child> = (0..processes)
                .map(|_| start_crawl(&python, port, site_port, dedup, &[]))
                .collect();
            for crawl in crawls {
                assert!(finish(crawl, "crawl"), "{dedup} crawl failed");
            }
            let seconds = started.elapsed().as_secs_f64();
            let summary = check(&python, port, site_port, dedup);
            assert_complete(&summary, true);
            println!(
                "{dedup}, {processes} process(es): {PAGES} pages in {seconds:.1} s, server CPU {:.2} s",
                cpu_seconds(&server)
            );
        }
    }
}

/// Waits until the site has served `at_least` pages.
fn wait_for_progress(python: &Path, site: u16, at_least: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let probe = format!(
        "import json,urllib.request;print(len(json.load(urllib.request.urlopen('http://127.0.0.1:{site}/stats'))))"
    );
    loop {
        let output = Command::new(python)
            .args(["-c", &probe])
            .output()
            .expect("probe");
        let served: usize = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        if served >= at_least {
            return;
        }
        assert!(Instant::now() < deadline, "the crawl made no progress");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_two_process_crawlee_crawl_survives_a_kill_of_sieved() {
    let Some(python) = crawlee_python() else {
        return;
    };
    let dir = DataDir::new("crawlee-kill");
    let port = free_port();
    let server = spawn_server(&dir.0, port, &["--appendonly", "yes"]);
    let (_site, site_port) = site(&python, "0.02");
    let crawls: Vec<Child> = (0..2)
        .map(|_| start_crawl(&python, port, site_port, "bloom", &[]))
        .collect();
    wait_for_progress(&python, site_port, PAGES as usize / 3);
    server.kill();
    // The crawlers lose their server mid-crawl; whichever of them gives up, the crawl resumes
    // on the restarted server from what its log held, with a short lease so that the requests
    // the first processes held come back at once.
    let server = spawn_server(&dir.0, port, &["--appendonly", "yes"]);
    // They may carry on against the restarted server, fail, or go on retrying: past a bound
    // they are ended as crashed crawlers would be.
    let deadline = Instant::now() + Duration::from_secs(120);
    for mut crawl in crawls {
        while crawl.try_wait().expect("poll crawl.py").is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = crawl.kill();
        finish(crawl, "crawl through the kill");
    }
    let resumed: Vec<Child> = (0..2)
        .map(|_| start_crawl(&python, port, site_port, "bloom", &["--lease-ms", "1000"]))
        .collect();
    for crawl in resumed {
        assert!(finish(crawl, "resumed crawl"), "the resumed crawl failed");
    }
    let summary = check(&python, port, site_port, "bloom");
    assert_complete(&summary, false);
    drop(server);
}
