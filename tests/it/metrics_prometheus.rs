//! /metrics as Prometheus reads it: a primary (logging every write) and its replica, with a
//! workload of every kind the dashboard shows, each page passing `promtool check metrics`; the
//! alert rules passing `promtool check rules` and their own unit tests; and a real Prometheus
//! scraping both servers, answering a query on each metric deploy/grafana's dashboard uses.
//! CONFIG SET of `metrics-addr` turns the endpoint on, moves it and turns it off.

use crate::support::metrics::{http_get, sample};
use crate::support::{
    encode_command, free_port, repo_file, spawn_server, tool, DataDir, RawClient, Running,
};
use std::collections::BTreeSet;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn metrics_page(addr: SocketAddr) -> String {
    let response = http_get(addr, "/metrics").expect("the endpoint answers");
    assert_eq!(response.status, "HTTP/1.1 200 OK");
    response.body
}

/// `promtool check metrics` of `page`: nothing to say, and success.
fn assert_promtool_accepts(promtool: &Path, page: &str) {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success() && output.stdout.is_empty() && output.stderr.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The sieved_* names the dashboard's queries use, read from each `"expr"` of its JSON.
fn dashboard_metrics() -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo_file("deploy/grafana/sieved-dashboard.json")).unwrap();
    let mut names = BTreeSet::new();
    for expr in text.split("\"expr\": \"").skip(1) {
        let expr = &expr[..expr.find('"').expect("a whole string")];
        let mut rest = expr;
        while let Some(at) = rest.find("sieved_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            names.insert(name);
        }
    }
    names
}

/// Prometheus, killed when dropped.
struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether Prometheus's instant query `query` returns a series; None while it cannot answer.
fn has_series(prometheus: SocketAddr, query: &str) -> Option<bool> {
    let response = http_get(prometheus, &format!("/api/v1/query?query={query}"))?;
    let body = response.body;
    if !response.status.contains("200") || !body.contains("\"status\":\"success\"") {
        return None;
    }
    Some(!body.contains("\"result\":[]"))
}

/// The workload: filters of both kinds, a frontier, keys of several types with and without a
/// time to live, a subscriber and a blocked client (returned, to stay connected).
fn workload(primary: SocketAddr) -> (RawClient, RawClient) {
    let mut client = RawClient::connect(primary);
    client.cmd(&["BF.RESERVE", "urls", "0.01", "1000"]);
    client.cmd(&["BF.MADD", "urls", "a", "b", "c"]);
    client.cmd(&["CBF.RESERVE", "counts", "0.01", "100"]);
    client.cmd(&["CBF.ADD", "counts", "hot"]);
    client.cmd(&["SET", "session", "x", "EX", "1000"]);
    client.cmd(&["HSET", "host:a", "visits", "3"]);
    client.cmd(&["RPUSH", "log", "one", "two"]);
    for i in 0..5 {
        client.cmd(&["FQ.PUSH", "crawl", &format!("http://h.test/p{i}")]);
    }
    client.cmd(&["FQ.POP", "crawl", "COUNT", "2"]);

    let mut subscriber = RawClient::connect(primary);
    subscriber.cmd(&["SUBSCRIBE", "news"]);
    let mut blocked = RawClient::connect(primary);
    blocked.send(&encode_command(&[b"BLPOP", b"nothing", b"0"]));
    // Each of these is answered once the two before it are in place.
    assert_eq!(client.cmd(&["PUBLISH", "news", "hi"]), b":1\r\n");
    let deadline = Instant::now() + Duration::from_secs(30);
    while client.info_field("clients", "blocked_clients") != "1" {
        assert!(Instant::now() < deadline, "BLPOP never blocked");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(client.cmd(&["WAIT", "1", "60000"]), b":1\r\n");
    (subscriber, blocked)
}

struct Pair {
    primary: SocketAddr,
    primary_metrics: SocketAddr,
    replica_metrics: SocketAddr,
    _servers: [Running; 2],
    _dirs: [DataDir; 2],
}

fn start_pair() -> Pair {
    let local = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    let dirs = [
        DataDir::new("metrics-prometheus-primary"),
        DataDir::new("metrics-prometheus-replica"),
    ];
    let ports = [free_port(), free_port()];
    let metrics = [free_port(), free_port()];
    let primary = spawn_server(
        &dirs[0].0,
        ports[0],
        &[
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--maxmemory",
            "1gb",
            "--metrics-addr",
            &local(metrics[0]).to_string(),
        ],
    );
    let replicaof = format!("127.0.0.1 {}", ports[0]);
    let replica = spawn_server(
        &dirs[1].0,
        ports[1],
        &[
            "--replicaof",
            &replicaof,
            "--metrics-addr",
            &local(metrics[1]).to_string(),
        ],
    );
    Pair {
        primary: local(ports[0]),
        primary_metrics: local(metrics[0]),
        replica_metrics: local(metrics[1]),
        _servers: [replica, primary],
        _dirs: dirs,
    }
}

#[test]
fn pages_pass_promtool_and_show_replication_the_log_and_the_keyspace() {
    let Some(promtool) = tool("promtool") else {
        return;
    };
    let pair = start_pair();
    let _clients = workload(pair.primary);

    let primary = metrics_page(pair.primary_metrics);
    assert_promtool_accepts(&promtool, &primary);
    for (name, expected) in [
        ("sieved_replication_role{role=\"primary\"}", 1.0),
        ("sieved_replication_role{role=\"replica\"}", 0.0),
        ("sieved_connected_replicas", 1.0),
        ("sieved_aof_enabled", 1.0),
        ("sieved_aof_last_write_ok", 1.0),
        ("sieved_memory_max_bytes", 1024.0 * 1024.0 * 1024.0),
        ("sieved_pubsub_clients", 1.0),
        ("sieved_blocked_clients", 1.0),
        ("sieved_keys{db=\"0\",type=\"hash\"}", 1.0),
        ("sieved_keys{db=\"0\",type=\"list\"}", 1.0),
        ("sieved_keys{db=\"0\",type=\"frontier\"}", 1.0),
        ("sieved_expiring_keys{db=\"0\"}", 1.0),
        ("sieved_frontier_items{state=\"queued\"}", 3.0),
        ("sieved_frontier_items{state=\"leased\"}", 2.0),
        ("sieved_filters_full{type=\"bloom\"}", 0.0),
        ("sieved_filters_over_error_rate{type=\"bloom\"}", 0.0),
    ] {
        assert_eq!(sample(&primary, name), expected, "{name}");
    }
    // Every write was synced under appendfsync always.
    assert!(sample(&primary, "sieved_aof_fsync_duration_seconds_count") >= 10.0);
    assert!(sample(&primary, "sieved_aof_size_bytes") > 0.0);
    assert!(sample(&primary, "sieved_key_memory_bytes{db=\"0\",type=\"bloom\"}") > 0.0);
    assert_eq!(sample(&primary, "sieved_replication_full_syncs_total"), 1.0);
    let replica_line = primary
        .lines()
        .find(|line| line.starts_with("sieved_replica_online{"))
        .expect("the replica's state");
    assert!(replica_line.ends_with(" 1"), "{replica_line}");
    let offset = sample(&primary, "sieved_replication_offset_bytes");
    assert!(offset > 0.0);

    let replica = metrics_page(pair.replica_metrics);
    assert_promtool_accepts(&promtool, &replica);
    for (name, expected) in [
        ("sieved_replication_role{role=\"replica\"}", 1.0),
        ("sieved_replication_link_up", 1.0),
        ("sieved_replication_sync_in_progress", 0.0),
        ("sieved_replication_link_down_seconds", 0.0),
        ("sieved_aof_enabled", 0.0),
        ("sieved_keys{db=\"0\",type=\"frontier\"}", 1.0),
    ] {
        assert_eq!(sample(&replica, name), expected, "{name}");
    }
}

#[test]
fn alert_rules_pass_promtool_and_their_unit_tests() {
    let Some(promtool) = tool("promtool") else {
        return;
    };
    for args in [
        ["check", "rules", "sieved-rules.yml"],
        ["test", "rules", "sieved-rules.test.yml"],
    ] {
        let output = Command::new(&promtool)
            .args(args)
            .current_dir(repo_file("deploy/prometheus"))
            .output()
            .expect("run promtool");
        assert!(
            output.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn prometheus_scrapes_every_metric_the_dashboard_uses() {
    let Some(prometheus) = tool("prometheus") else {
        return;
    };
    let pair = start_pair();
    let _clients = workload(pair.primary);

    let dir = DataDir::new("metrics-prometheus-scraper");
    let port = free_port();
    let config = dir.0.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {}\n\
             scrape_configs:\n  - job_name: sieved\n    static_configs:\n      \
             - targets: ['{}', '{}']\n",
            repo_file("deploy/prometheus/sieved-rules.yml").display(),
            pair.primary_metrics,
            pair.replica_metrics
        ),
    )
    .unwrap();
    let scraper = Prometheus(
        Command::new(prometheus)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.0.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );
    let api = SocketAddr::from(([127, 0, 0, 1], port));

    let names = dashboard_metrics();
    assert!(names.len() > 40, "{names:?}");
    // Both targets up first: then every name is in the scrapes already taken, or the next one.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let both_up = ["up%7Binstance%3D%22", "%22%7D%3D%3D1"];
        let up = |target: SocketAddr| {
            let query = format!("{}{target}{}", both_up[0], both_up[1]);
            has_series(api, &query) == Some(true)
        };
        if up(pair.primary_metrics) && up(pair.replica_metrics) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never scraped both servers"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut missing: Vec<&String> = names.iter().collect();
    while !missing.is_empty() {
        missing.retain(|name| has_series(api, name) != Some(true));
        assert!(
            Instant::now() < deadline,
            "Prometheus has no series of {missing:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The rules loaded and evaluate without error.
    let rules = http_get(api, "/api/v1/rules").expect("the rules").body;
    assert!(rules.contains("\"health\":\"ok\""), "{rules}");
    assert!(!rules.contains("\"health\":\"err\""), "{rules}");
    drop(scraper);
}

#[test]
fn config_set_turns_the_endpoint_on_moves_it_and_off() {
    let dir = DataDir::new("metrics-config-set");
    let port = free_port();
    let _server = spawn_server(&dir.0, port, &[]);
    let mut client = RawClient::connect(([127, 0, 0, 1], port).into());
    let local = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    let wait_for = |addr: SocketAddr, serving: bool| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while http_get(addr, "/metrics").is_some() != serving {
            assert!(Instant::now() < deadline, "{addr} serving is not {serving}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };

    let first = local(free_port());
    let set =
        |client: &mut RawClient, value: &str| client.cmd(&["CONFIG", "SET", "metrics-addr", value]);
    assert_eq!(set(&mut client, &first.to_string()), b"+OK\r\n");
    wait_for(first, true);
    assert!(metrics_page(first).contains("sieved_build_info"));

    let second = local(free_port());
    assert_eq!(set(&mut client, &second.to_string()), b"+OK\r\n");
    wait_for(second, true);
    wait_for(first, false);

    assert_eq!(set(&mut client, ""), b"+OK\r\n");
    wait_for(second, false);
    assert_eq!(
        String::from_utf8(set(&mut client, "nowhere")).unwrap(),
        "-ERR CONFIG SET failed (possibly related to argument 'metrics-addr') - argument must be \
         <host>:<port>, or empty\r\n"
    );
}
