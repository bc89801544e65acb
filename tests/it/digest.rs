//! SIEVED.DIGEST: two nodes that hold the same data answer the same digest, whatever order they
//! took the writes in and however their keyspace is sharded; any difference changes it; and a
//! restart from the append-only file brings back a keyspace with the same digest.

use crate::support::{free_port, loopback, spawn_server, DataDir, RawClient};

const ZEROS: &[u8] = b"$32\r\n00000000000000000000000000000000\r\n";

/// The same writes, in the order given.
fn write(client: &mut RawClient, order: &[usize]) {
    let writes: [&[&str]; 6] = [
        &["BF.RESERVE", "bf", "0.01", "1000"],
        &["BF.MADD", "bf", "a", "b", "c"],
        &["CBF.MADD", "cbf", "x", "x", "y"],
        &["SET", "s", "value"],
        &["PEXPIREAT", "s", "4102444800000"],
        &["SELECT", "3"],
    ];
    for &i in order {
        client.cmd(writes[i]);
        if i == 5 {
            client.cmd(&["SET", "in3", "v"]);
            client.cmd(&["SELECT", "0"]);
        }
    }
}

#[test]
fn equal_data_gives_equal_digests_and_any_change_shows() {
    let (dir_a, dir_b) = (DataDir::new("digest-a"), DataDir::new("digest-b"));
    let (port_a, port_b) = (free_port(), free_port());
    let _a = spawn_server(&dir_a.0, port_a, &["--shards", "4"]);
    let _b = spawn_server(&dir_b.0, port_b, &["--shards", "64"]);
    let (mut a, mut b) = (
        RawClient::connect(loopback(port_a)),
        RawClient::connect(loopback(port_b)),
    );
    assert_eq!(a.cmd(&["SIEVED.DIGEST"]), ZEROS);
    write(&mut a, &[0, 1, 2, 3, 4, 5]);
    write(&mut b, &[5, 2, 0, 3, 1, 4]);
    let digest = a.cmd(&["SIEVED.DIGEST"]);
    assert_ne!(digest, ZEROS);
    assert_eq!(b.cmd(&["SIEVED.DIGEST"]), digest);
    let keys = ["SIEVED.DIGEST", "bf", "cbf", "s", "missing"];
    let per_key = a.cmd(&keys);
    assert_eq!(b.cmd(&keys), per_key);
    assert!(
        per_key.ends_with(ZEROS),
        "{}",
        String::from_utf8_lossy(&per_key)
    );

    // One more item, a counter, an expiry, a database: each shows.
    let changes: [&[&[&str]]; 4] = [
        &[&["BF.ADD", "bf", "d"]],
        &[&["CBF.DEL", "cbf", "x"]],
        &[&["PEXPIREAT", "s", "4102444800001"]],
        &[&["SELECT", "1"], &["SET", "s2", "value"], &["SELECT", "0"]],
    ];
    for change in changes {
        change.iter().for_each(|command| drop(b.cmd(command)));
        assert_ne!(b.cmd(&["SIEVED.DIGEST"]), digest, "{change:?}");
        a.cmd(&["FLUSHALL"]);
        b.cmd(&["FLUSHALL"]);
        write(&mut a, &[0, 1, 2, 3, 4, 5]);
        write(&mut b, &[0, 1, 2, 3, 4, 5]);
        assert_eq!(b.cmd(&["SIEVED.DIGEST"]), digest);
    }
}

#[test]
fn a_restart_from_the_log_gives_back_the_same_digest() {
    let dir = DataDir::new("digest-restart");
    let port = free_port();
    let flags = ["--appendonly", "yes", "--appendfsync", "always"];
    let server = spawn_server(&dir.0, port, &flags);
    let mut client = RawClient::connect(loopback(port));
    write(&mut client, &[0, 1, 2, 3, 4, 5]);
    for i in 0..2000 {
        client.cmd(&["CBF.ADD", "counts", &format!("item{}", i % 700)]);
    }
    let digest = client.cmd(&["SIEVED.DIGEST"]);
    server.kill();
    let _server = spawn_server(&dir.0, port, &flags);
    let mut client = RawClient::connect(loopback(port));
    assert_eq!(client.cmd(&["SIEVED.DIGEST"]), digest);
}
