//! What operators read: INFO's commandstats, stats and bloom sections, the Prometheus endpoint,
//! SLOWLOG and SIEVED.STATS, each checked against the numbers of a known workload. The server is
//! started from deploy/sieved.conf, with the test's port, directory and metrics address on top.

use crate::support::metrics::{http_get, sample};
use crate::support::{info_field, repo_file, DataDir, RawClient, TestServer};
use sieved::config::{self, Config};
use std::time::Duration;

/// A server started from deploy/sieved.conf, its data directory removed when dropped (it runs
/// with `save ""`, so it writes no exit snapshot there).
struct Deployed {
    server: TestServer,
    _dir: DataDir,
}

impl std::ops::Deref for Deployed {
    type Target = TestServer;

    fn deref(&self) -> &TestServer {
        &self.server
    }
}

fn start_from_deployed_config() -> Deployed {
    let config_file = repo_file("deploy/sieved.conf");
    let dir = DataDir::new("observability");
    let matches = config::command()
        .try_get_matches_from([
            "sieved",
            "--config",
            config_file.to_str().unwrap(),
            "--port",
            "0",
            "--dir",
            dir.0.to_str().unwrap(),
            "--save",
            "",
            "--threads",
            "2",
            "--metrics-addr",
            "127.0.0.1:0",
        ])
        .expect("flags");
    Deployed {
        server: TestServer::start_with(Config::from_matches(&matches).expect("config")),
        _dir: dir,
    }
}

fn text(reply: Vec<u8>) -> String {
    String::from_utf8(reply).expect("text")
}

/// The workload every test here measures: 3 filters' worth of known commands.
fn workload(client: &mut RawClient) {
    client.cmd(&["BF.RESERVE", "urls", "0.01", "1000"]);
    for i in 0..10 {
        client.cmd(&["BF.ADD", "urls", &format!("u{i}")]);
    }
    client.cmd(&["BF.MADD", "urls", "u0", "v1", "v2"]);
    client.cmd(&["CBF.RESERVE", "counts", "0.01", "100", "COUNTERBITS", "4"]);
    for _ in 0..20 {
        client.cmd(&["CBF.ADD", "counts", "hot"]);
    }
    client.cmd(&["SET", "plain", "x"]);
    // Fails as it runs (wrong type), and is rejected before running (arity).
    assert!(text(client.cmd(&["BF.ADD", "plain", "x"])).starts_with("-WRONGTYPE"));
    assert!(text(client.cmd(&["BF.ADD", "urls"])).starts_with("-ERR wrong number"));
    assert!(text(client.cmd(&["NOSUCH"])).starts_with("-ERR unknown command"));
}

#[test]
fn info_reports_the_workload() {
    let server = start_from_deployed_config();
    let mut client = server.client();
    workload(&mut client);
    let mut other = server.client();

    let stats = text(client.cmd(&["INFO", "commandstats"]));
    assert!(stats.starts_with("$"), "{stats}");
    let bf_add = info_field(&stats, "cmdstat_bf.add");
    assert!(bf_add.starts_with("calls=11,usec="), "{bf_add}");
    assert!(
        bf_add.ends_with(",rejected_calls=1,failed_calls=1"),
        "{bf_add}"
    );
    let per_call: f64 = bf_add
        .split("usec_per_call=")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Calls are timed in whole microseconds, so eleven fast adds may total 0: the field must be
    // a number, not a particular one (tests assert nothing on wall-clock time).
    assert!(per_call >= 0.0, "{bf_add}");
    assert!(info_field(&stats, "cmdstat_cbf.add").starts_with("calls=20,"));
    assert!(info_field(&stats, "cmdstat_bf.madd").starts_with("calls=1,"));
    assert!(
        !stats.contains("cmdstat_info"),
        "INFO counted before it ran: {stats}"
    );
    assert!(!stats.contains("nosuch"), "{stats}");

    let bloom = text(client.cmd(&["INFO", "bloom"]));
    assert_eq!(info_field(&bloom, "bf_filters"), "1");
    assert_eq!(info_field(&bloom, "bf_items"), "12");
    assert_eq!(info_field(&bloom, "bf_capacity"), "1000");
    assert_eq!(info_field(&bloom, "bf_links"), "1");
    assert_eq!(info_field(&bloom, "cbf_filters"), "1");
    assert_eq!(info_field(&bloom, "cbf_items"), "20");
    let hashes = 8; // the first link of a scaling filter at 1%, built for 0.5%
    assert_eq!(
        info_field(&bloom, "cbf_saturated_counters"),
        hashes.to_string()
    );
    let memory: u64 = text(client.cmd(&["MEMORY", "USAGE", "urls"]))
        .lines()
        .next()
        .unwrap()[1..]
        .parse()
        .unwrap();
    let bf_bytes: u64 = info_field(&bloom, "bf_bytes").parse().unwrap();
    assert!(
        bf_bytes <= memory && bf_bytes + 128 > memory,
        "{bf_bytes} vs MEMORY USAGE {memory}"
    );

    let info = text(other.cmd(&["INFO"]));
    assert_eq!(info_field(&info, "connected_clients"), "2");
    assert!(
        !info.contains("# Commandstats") && !info.contains("# Bloom"),
        "{info}"
    );
    let all = text(other.cmd(&["INFO", "all"]));
    for section in [
        "# Server",
        "# Stats",
        "# Commandstats",
        "# Keyspace",
        "# Bloom",
    ] {
        assert!(all.contains(section), "no {section} in INFO all");
    }

    assert_eq!(client.cmd(&["CONFIG", "RESETSTAT"]), b"+OK\r\n");
    let stats = text(client.cmd(&["INFO", "commandstats"]));
    assert!(
        info_field(&stats, "cmdstat_config").starts_with("calls=1,"),
        "{stats}"
    );
    assert!(!stats.contains("cmdstat_bf.add"), "{stats}");
}

#[test]
fn instantaneous_ops_per_sec_follows_the_load() {
    let server = start_from_deployed_config();
    let mut client = server.client();
    let ops = |client: &mut RawClient| -> u64 {
        client
            .info_field("stats", "instantaneous_ops_per_sec")
            .parse()
            .unwrap()
    };
    let pipeline: Vec<u8> = (0..2000)
        .flat_map(|i| crate::support::encode_command(&[b"BF.ADD", b"k", format!("{i}").as_bytes()]))
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        client.send(&pipeline);
        for _ in 0..2000 {
            client.read_reply();
        }
        std::thread::sleep(Duration::from_millis(100));
        if ops(&mut client) > 1000 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the rate never showed the load"
        );
    }
    std::thread::sleep(Duration::from_millis(2000));
    assert!(
        ops(&mut client) < 50,
        "the rate did not fall back once the load stopped"
    );
}

/// The status line and the body of `GET path` at the metrics endpoint, whose every response
/// gives its length.
fn get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let response = http_get(addr, path).expect("the endpoint answers");
    assert!(
        response
            .head
            .contains(&format!("Content-Length: {}\r\n", response.body.len())),
        "{}",
        response.head
    );
    (response.status, response.body)
}

#[test]
fn metrics_endpoint_reports_the_workload() {
    let server = start_from_deployed_config();
    let metrics = server.shared.metrics_addr.expect("metrics are on");
    let mut client = server.client();
    workload(&mut client);
    client.cmd(&["SELECT", "3"]);
    client.cmd(&["BF.ADD", "elsewhere", "x"]);
    client.cmd(&["EXPIRE", "elsewhere", "100"]);

    let (status, page) = get(metrics, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let count = |command: &str| {
        sample(
            &page,
            &format!("sieved_command_duration_seconds_count{{command=\"{command}\"}}"),
        )
    };
    assert_eq!(count("bf.add"), 12.0);
    assert_eq!(count("cbf.add"), 20.0);
    assert_eq!(
        sample(
            &page,
            "sieved_command_duration_seconds_bucket{command=\"bf.add\",le=\"+Inf\"}"
        ),
        12.0
    );
    let fast = sample(
        &page,
        "sieved_command_duration_seconds_bucket{command=\"bf.add\",le=\"1\"}",
    );
    assert_eq!(fast, 12.0, "a BF.ADD took over a second");
    assert!(
        sample(
            &page,
            "sieved_command_duration_seconds_sum{command=\"bf.add\"}"
        ) > 0.0
    );
    for (reason, expected) in [("failed", 1.0), ("rejected", 1.0)] {
        let name = format!("sieved_command_errors_total{{command=\"bf.add\",reason=\"{reason}\"}}");
        assert_eq!(sample(&page, &name), expected);
    }
    assert_eq!(sample(&page, "sieved_connected_clients"), 1.0);
    assert_eq!(sample(&page, "sieved_keys{db=\"0\",type=\"bloom\"}"), 1.0);
    assert_eq!(
        sample(&page, "sieved_keys{db=\"0\",type=\"counting\"}"),
        1.0
    );
    assert_eq!(sample(&page, "sieved_keys{db=\"0\",type=\"string\"}"), 1.0);
    assert_eq!(sample(&page, "sieved_keys{db=\"3\",type=\"bloom\"}"), 1.0);
    assert_eq!(sample(&page, "sieved_expiring_keys{db=\"3\"}"), 1.0);
    assert!(!page.contains("db=\"1\""), "empty databases are listed");
    assert_eq!(sample(&page, "sieved_filters{type=\"bloom\"}"), 2.0);
    assert_eq!(sample(&page, "sieved_filter_items{type=\"bloom\"}"), 13.0);
    assert_eq!(
        sample(&page, "sieved_filter_items{type=\"counting\"}"),
        20.0
    );
    assert_eq!(sample(&page, "sieved_counting_saturated_counters"), 8.0);
    assert!(sample(&page, "sieved_memory_used_bytes") > 0.0);
    assert_eq!(sample(&page, "sieved_snapshots_total"), 0.0);
    assert_eq!(sample(&page, "sieved_snapshot_file_bytes"), 0.0);

    assert_eq!(client.cmd(&["SAVE"]), b"+OK\r\n");
    let (_, page) = get(metrics, "/metrics?fresh=1");
    assert_eq!(sample(&page, "sieved_snapshots_total"), 1.0);
    assert_eq!(sample(&page, "sieved_snapshot_age_seconds"), 0.0);
    assert!(sample(&page, "sieved_snapshot_file_bytes") > 0.0);
    assert_eq!(sample(&page, "sieved_changes_since_snapshot"), 0.0);

    let (status, _) = get(metrics, "/");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
}

#[test]
fn slowlog_records_as_redis_does() {
    let server = start_from_deployed_config();
    let mut client = server.client();
    assert_eq!(text(client.cmd(&["CONFIG", "GET", "slowlog-*"])), "*4\r\n$23\r\nslowlog-log-slower-than\r\n$5\r\n10000\r\n$15\r\nslowlog-max-len\r\n$3\r\n128\r\n");
    client.cmd(&["PING"]);
    assert_eq!(client.cmd(&["SLOWLOG", "LEN"]), b":0\r\n");

    client.cmd(&["CLIENT", "SETNAME", "crawler-7"]);
    client.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    let long = "x".repeat(200);
    let mut args = vec!["BF.MADD", "urls", long.as_str()];
    let items: Vec<String> = (0..37).map(|i| format!("i{i}")).collect();
    args.extend(items.iter().map(String::as_str));
    client.cmd(&args);
    client.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);

    // Logging is decided once a command has run, so the CONFIG SET that turned it on is logged
    // and the one that turned it off is not.
    let reply = text(client.cmd(&["SLOWLOG", "GET", "5"]));
    assert!(reply.starts_with("*2\r\n*6\r\n:1\r\n:"), "{reply}");
    let (madd, config) = reply.split_once("*6\r\n:0\r\n").expect("two entries");
    assert!(
        config.contains("*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n"),
        "{config}"
    );
    assert!(
        madd.contains("*32\r\n$7\r\nBF.MADD\r\n$4\r\nurls\r\n"),
        "not cut to 32: {madd}"
    );
    let cut = format!("{}... (72 more bytes)", "x".repeat(128));
    assert!(
        madd.contains(&format!("${}\r\n{cut}\r\n", cut.len())),
        "{madd}"
    );
    assert!(
        madd.contains("$3\r\ni27\r\n$22\r\n... (9 more arguments)\r\n"),
        "{madd}"
    );
    let me = text(client.cmd(&["CLIENT", "INFO"]));
    let addr = me
        .split(" addr=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        madd.ends_with(&format!("${}\r\n{addr}\r\n$9\r\ncrawler-7\r\n", addr.len())),
        "{madd}"
    );
    assert_eq!(client.cmd(&["SLOWLOG", "LEN"]), b":2\r\n");

    client.cmd(&[
        "CONFIG",
        "SET",
        "slowlog-log-slower-than",
        "0",
        "slowlog-max-len",
        "2",
    ]);
    for _ in 0..5 {
        client.cmd(&["PING"]);
    }
    assert_eq!(client.cmd(&["SLOWLOG", "LEN"]), b":2\r\n");
    client.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    assert_eq!(client.cmd(&["SLOWLOG", "RESET"]), b"+OK\r\n");
    assert_eq!(client.cmd(&["SLOWLOG", "LEN"]), b":0\r\n");
    assert_eq!(client.cmd(&["SLOWLOG", "GET"]), b"*0\r\n");
    assert_eq!(
        text(client.cmd(&["SLOWLOG", "GET", "-2"])),
        "-ERR count should be greater than or equal to -1\r\n"
    );
    assert_eq!(
        text(client.cmd(&["SLOWLOG", "NOPE"])),
        "-ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP.\r\n"
    );
}

#[test]
fn sieved_stats_describes_each_filter() {
    let server = start_from_deployed_config();
    let mut client = server.client();
    client.cmd(&["BF.RESERVE", "fixed", "0.01", "1000", "NONSCALING"]);
    for i in 0..1000 {
        client.cmd(&["BF.ADD", "fixed", &format!("item{i}")]);
    }
    client.cmd(&["CBF.RESERVE", "counts", "0.01", "100", "COUNTERBITS", "4"]);
    for _ in 0..20 {
        client.cmd(&["CBF.ADD", "counts", "hot"]);
    }
    client.cmd(&["SET", "plain", "x"]);

    client.hello3();
    let reply = text(client.cmd(&["SIEVED.STATS", "fixed"]));
    let fields: Vec<&str> = reply.split("\r\n").collect();
    assert_eq!(fields[0], "%10");
    let value = |name: &str| -> &str {
        let at = fields
            .iter()
            .position(|f| *f == name)
            .unwrap_or_else(|| panic!("no {name}: {reply}"));
        &fields[at + 1][1..]
    };
    assert_eq!(fields[1..5], ["$4", "type", "$5", "bloom"]);
    assert_eq!(value("links"), "1");
    assert_eq!(value("capacity"), "1000");
    let items: u64 = value("items").parse().unwrap();
    assert!(items > 990, "{reply}");
    assert_eq!(value("items_until_full"), (1000 - items).to_string());
    let fill: f64 = value("fill_ratio").parse().unwrap();
    assert!((fill - 0.5).abs() < 0.05, "{reply}");
    let estimate: f64 = value("estimated_error_rate").parse().unwrap();
    assert!(estimate > 0.005 && estimate < 0.02, "{reply}");
    assert_eq!(value("target_error_rate"), "0.01");

    let reply = text(client.cmd(&["SIEVED.STATS", "counts"]));
    assert!(
        reply.starts_with("%11\r\n$4\r\ntype\r\n$8\r\ncounting\r\n"),
        "{reply}"
    );
    assert!(
        reply.ends_with(
            "$21\r\nitems_until_scale_out\r\n:80\r\n$18\r\nsaturated_counters\r\n:8\r\n"
        ),
        "{reply}"
    );

    assert_eq!(
        text(client.cmd(&["SIEVED.STATS", "missing"])),
        "-ERR not found\r\n"
    );
    assert!(text(client.cmd(&["SIEVED.STATS", "plain"])).starts_with("-WRONGTYPE"));
    let mut resp2 = server.client();
    assert!(text(resp2.cmd(&["SIEVED.STATS", "counts"])).starts_with("*22\r\n$4\r\ntype\r\n"));
}

/// INFO replication with Redis's field names, as Sentinel and redis-py read it; the replication
/// ID and the run ID are 40 hexadecimal characters of their own.
#[test]
fn info_replication_reads_as_a_primary_without_replicas() {
    let server = TestServer::start();
    let mut client = server.client();
    let replication = text(client.cmd(&["INFO", "replication"]));
    for (name, value) in [
        ("role", "master"),
        ("connected_slaves", "0"),
        ("master_failover_state", "no-failover"),
        ("master_replid2", "0000000000000000000000000000000000000000"),
        ("master_repl_offset", "0"),
        ("second_repl_offset", "-1"),
        ("repl_backlog_active", "0"),
        ("repl_backlog_size", "1048576"),
    ] {
        assert_eq!(info_field(&replication, name), value, "{replication}");
    }
    let server_section = text(client.cmd(&["INFO", "server"]));
    let replid = info_field(&replication, "master_replid");
    let run_id = info_field(&server_section, "run_id");
    for id in [&replid, &run_id] {
        assert!(
            id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
    }
    assert_ne!(replid, run_id);
    let stats = text(client.cmd(&["INFO", "stats"]));
    for name in ["sync_full", "sync_partial_ok", "sync_partial_err"] {
        assert_eq!(info_field(&stats, name), "0");
    }
    assert!(text(client.cmd(&["INFO"])).contains("# Replication\r\n"));
}
