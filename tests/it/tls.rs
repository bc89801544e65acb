//! The TLS port: exact replies over TLS, client certificates as tls-auth-clients asks, clients
//! that never finish the handshake or speak plain text to it, and start-up with bad files.
//! redis-cli --tls is driven in external.rs with the other programs.

use crate::support::tls::{self, Identity};
use crate::support::{
    binary, encode_command, output_of_refused_start, DataDir, RawClient, TestServer,
};
use sieved::config::{ClientAuth, Config};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tls_addr(server: &TestServer) -> std::net::SocketAddr {
    server.tls_addr.expect("the TLS port is on")
}

/// Waits until the server counts `expected` clients; a test that never gets there times out.
fn wait_for_clients(server: &TestServer, expected: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.shared.clients.count() != expected {
        assert!(
            Instant::now() < deadline,
            "{} clients, expected {expected}",
            server.shared.clients.count()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test]
async fn replies_over_tls_are_byte_exact() {
    let server = TestServer::start_with(tls::config(ClientAuth::Required));
    let mut client = tls::connect(tls_addr(&server), Identity::Signed)
        .await
        .expect("handshake");
    assert_eq!(client.cmd(&["PING"]).await.unwrap(), b"+PONG\r\n");
    assert_eq!(client.cmd(&["BF.ADD", "k", "x"]).await.unwrap(), b":1\r\n");
    assert_eq!(client.cmd(&["BF.ADD", "k", "x"]).await.unwrap(), b":0\r\n");
    assert_eq!(
        client.cmd(&["BF.EXISTS", "k", "x"]).await.unwrap(),
        b":1\r\n"
    );
    assert_eq!(
        client.cmd(&["BF.EXISTS", "k", "y"]).await.unwrap(),
        b":0\r\n"
    );

    // A pipeline, and a reply far larger than one TLS record.
    let mut pipeline = Vec::new();
    for i in 0..100 {
        pipeline.extend(encode_command(&[
            b"BF.ADD",
            b"many",
            format!("{i}").as_bytes(),
        ]));
    }
    client.send(&pipeline).await.unwrap();
    for _ in 0..100 {
        let reply = client.read_reply().await.unwrap();
        assert!(reply == b":1\r\n" || reply == b":0\r\n", "{reply:?}");
    }
    let big = "x".repeat(3 * 1024 * 1024);
    let mut expected = format!("${}\r\n", big.len()).into_bytes();
    expected.extend(big.as_bytes());
    expected.extend(b"\r\n");
    assert!(client.cmd(&["ECHO", &big]).await.unwrap() == expected);

    // One keyspace behind both ports.
    let mut plain = server.client();
    assert_eq!(plain.cmd(&["BF.EXISTS", "k", "x"]), b":1\r\n");
    assert_eq!(client.cmd(&["QUIT"]).await.unwrap(), b"+OK\r\n");
    assert!(client.read_until_closed().await.is_empty());
}

/// Whether the server serves a client that shows `identity`.
async fn served(server: &TestServer, identity: Identity) -> bool {
    let Ok(mut client) = tls::connect(tls_addr(server), identity).await else {
        return false;
    };
    match client.cmd(&["PING"]).await {
        Ok(reply) => {
            assert_eq!(reply, b"+PONG\r\n");
            true
        }
        Err(_) => false,
    }
}

#[tokio::test]
async fn client_certificates_are_checked_as_tls_auth_clients_says() {
    for (auth, signed, none, untrusted) in [
        (ClientAuth::Required, true, false, false),
        (ClientAuth::Optional, true, true, false),
        (ClientAuth::Off, true, true, true),
    ] {
        let server = TestServer::start_with(tls::config(auth));
        assert_eq!(served(&server, Identity::Signed).await, signed, "{auth:?}");
        assert_eq!(served(&server, Identity::None).await, none, "{auth:?}");
        assert_eq!(
            served(&server, Identity::Untrusted).await,
            untrusted,
            "{auth:?}"
        );
        // Refused handshakes leave nothing behind, and the server serves on.
        wait_for_clients(&server, 0);
        assert!(served(&server, Identity::Signed).await);
        assert_eq!(server.client().cmd(&["PING"]), b"+PONG\r\n");
    }
}

#[test]
fn plain_text_on_the_tls_port_is_closed() {
    let server = TestServer::start_with(tls::config(ClientAuth::Optional));
    let mut confused = RawClient::connect(tls_addr(&server));
    confused.send(&encode_command(&[b"PING"]));
    let answer = confused.read_until_closed();
    // At most a TLS alert record (content type 21), never a RESP reply.
    assert!(
        answer.is_empty() || answer[0] == 21,
        "{}",
        crate::support::escape(&answer)
    );
    wait_for_clients(&server, 0);
    assert_eq!(server.client().cmd(&["PING"]), b"+PONG\r\n");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert!(runtime.block_on(served(&server, Identity::Signed)));
}

#[test]
fn a_client_that_never_shakes_hands_loses_its_slot() {
    let config = tls::config(ClientAuth::Optional);
    config
        .set_many(&[(b"maxclients", b"1"), (b"timeout", b"1")])
        .unwrap();
    let server = TestServer::start_with(config);
    let mut silent = RawClient::connect(tls_addr(&server));
    wait_for_clients(&server, 1);
    // The slot is taken while the handshake is pending...
    assert_eq!(
        server.client().read_reply(),
        b"-ERR max number of clients reached\r\n"
    );
    // ...until the server gives up on it (after the idle timeout, which bounds handshakes).
    assert!(silent.is_closed());
    wait_for_clients(&server, 0);
    assert_eq!(server.client().cmd(&["PING"]), b"+PONG\r\n");
}

fn sieved() -> Command {
    let mut command = Command::new(binary());
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("NOTIFY_SOCKET");
    command
}

/// Runs the binary with `args`, expecting it to refuse to start; returns its exit code and
/// everything it printed.
fn start_failure(args: &[&str]) -> (Option<i32>, String) {
    let dir = DataDir::new("tls-start");
    let child = sieved()
        .args([
            "--port",
            "0",
            "--save",
            "",
            "--dir",
            dir.0.to_str().unwrap(),
        ])
        .args(args)
        .spawn()
        .expect("run sieved");
    let output = output_of_refused_start(child);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

fn file(name: &str) -> String {
    tls::cert_file(name).display().to_string()
}

#[test]
fn bad_tls_settings_stop_start_up_naming_the_file() {
    let (server_crt, server_key, client_key, ca, missing) = (
        file("server.crt"),
        file("server.key"),
        file("client.key"),
        file("ca.crt"),
        file("missing.crt"),
    );
    // Certificate, key, CA ("" for none) and tls-auth-clients; the exit code and message.
    let cases = [
        (
            &missing,
            &server_key,
            "",
            "no",
            1,
            format!("tls-cert-file {missing}: "),
        ),
        (
            &server_key,
            &server_key,
            "",
            "no",
            1,
            format!("tls-cert-file {server_key}: no PEM certificate in the file"),
        ),
        (
            &server_crt,
            &server_crt,
            "",
            "no",
            1,
            format!("tls-key-file {server_crt}: no PEM private key in the file"),
        ),
        (
            &server_crt,
            &client_key,
            "",
            "no",
            1,
            format!("tls-key-file {client_key}: cannot be used with tls-cert-file {server_crt}"),
        ),
        (
            &server_crt,
            &server_key,
            server_key.as_str(),
            "yes",
            1,
            format!("tls-ca-cert-file {server_key}: no PEM certificate in the file"),
        ),
        (
            &server_crt,
            &server_key,
            "",
            "yes",
            2,
            "--tls-auth-clients yes: needs --tls-ca-cert-file".to_string(),
        ),
        (
            &server_crt,
            &server_key,
            "",
            "optional",
            2,
            "--tls-auth-clients optional: needs --tls-ca-cert-file".to_string(),
        ),
        (
            &server_crt,
            &server_key,
            ca.as_str(),
            "maybe",
            2,
            "--tls-auth-clients: argument must be 'yes', 'no' or 'optional'".to_string(),
        ),
        (
            &server_crt,
            &String::new(),
            "",
            "no",
            2,
            "--tls-port: needs --tls-cert-file and --tls-key-file".to_string(),
        ),
    ];
    for (cert, key, ca, auth, expected_code, expected) in cases {
        let args = [
            "--tls-port",
            "16391",
            "--tls-cert-file",
            cert,
            "--tls-key-file",
            key,
            "--tls-ca-cert-file",
            ca,
            "--tls-auth-clients",
            auth,
        ];
        let (code, output) = start_failure(&args);
        assert_eq!(code, Some(expected_code), "{args:?}: {output}");
        assert!(
            output.contains(&expected),
            "{args:?}: expected {expected:?} in {output}"
        );
    }
}

#[test]
fn config_get_reports_the_tls_settings() {
    let server = TestServer::start_with(tls::config(ClientAuth::Optional));
    let mut client = server.client();
    let reply = client.cmd(&["CONFIG", "GET", "tls-*"]);
    let text = String::from_utf8(reply).unwrap();
    for (name, value) in [
        ("tls-port", "0".to_string()),
        ("tls-cert-file", file("server.crt")),
        ("tls-key-file", file("server.key")),
        ("tls-ca-cert-file", file("ca.crt")),
        ("tls-auth-clients", "optional".to_string()),
        ("tls-client-cert-file", file("client.crt")),
        ("tls-client-key-file", file("client.key")),
        ("tls-replication", "no".to_string()),
    ] {
        let pair = format!(
            "${}\r\n{name}\r\n${}\r\n{value}\r\n",
            name.len(),
            value.len()
        );
        assert!(text.contains(&pair), "{pair:?} not in {text:?}");
    }
    assert!(text.starts_with("*16\r\n"), "{text:?}");
    let plain = TestServer::start_with(Config::default_for_tests());
    assert_eq!(
        plain.client().cmd(&["CONFIG", "GET", "tls-auth-clients"]),
        b"*2\r\n$16\r\ntls-auth-clients\r\n$3\r\nyes\r\n"
    );
}

/// Polls a client with `args` until the reply is `expected`; a reply that never comes times the
/// test out.
fn wait_for_reply(client: &mut RawClient, args: &[&str], expected: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = client.cmd(args);
        if reply == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{args:?} answers {}, expected {}",
            String::from_utf8_lossy(&reply),
            String::from_utf8_lossy(expected)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_replica_follows_its_primary_over_tls_with_a_client_certificate() {
    let primary = TestServer::start_with(tls::config(ClientAuth::Required));
    let replica = TestServer::start_with(tls::config(ClientAuth::Required));
    let mut writer = primary.client();
    assert_eq!(writer.cmd(&["BF.ADD", "urls", "before"]), b":1\r\n");
    let mut reader = replica.client();
    assert_eq!(
        reader.cmd(&["CONFIG", "SET", "tls-replication", "yes"]),
        b"+OK\r\n"
    );
    let port = tls_addr(&primary).port().to_string();
    assert_eq!(reader.cmd(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
    wait_for_reply(&mut reader, &["BF.EXISTS", "urls", "before"], b":1\r\n");
    assert_eq!(writer.cmd(&["BF.ADD", "urls", "after"]), b":1\r\n");
    assert_eq!(writer.cmd(&["WAIT", "1", "0"]), b":1\r\n");
    assert_eq!(reader.cmd(&["BF.EXISTS", "urls", "after"]), b":1\r\n");
    assert_eq!(
        reader.cmd(&["SIEVED.DIGEST"]),
        writer.cmd(&["SIEVED.DIGEST"])
    );
}

#[test]
fn a_replica_without_the_authority_cannot_link_over_tls() {
    let primary = TestServer::start_with(tls::config(ClientAuth::Required));
    let mut config = Config::default_for_tests();
    config.tls.ca_cert_file = None;
    let replica = TestServer::start_with(config);
    let mut reader = replica.client();
    assert_eq!(
        reader.cmd(&["CONFIG", "SET", "tls-replication", "yes"]),
        b"+OK\r\n"
    );
    let port = tls_addr(&primary).port().to_string();
    assert_eq!(reader.cmd(&["REPLICAOF", "127.0.0.1", &port]), b"+OK\r\n");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = String::from_utf8_lossy(&reader.cmd(&["INFO", "replication"])).into_owned();
        if info.contains("master_link_last_error:tls-replication needs tls-ca-cert-file") {
            assert!(info.contains("master_link_status:down"), "{info}");
            break;
        }
        assert!(Instant::now() < deadline, "{info}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
