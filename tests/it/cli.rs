//! The command line's one rule for its first argument: a known subcommand's name
//! (`import-rdb`) is the subcommand, anything else the configuration file, as redis-server
//! takes one (`sieved /etc/sieved/sieved.conf`), read as `--config` reads it.

use crate::support::{binary, free_port, wait_until_serving, DataDir, RawClient, Running};
use std::process::{Command, Output, Stdio};

fn sieved(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .output()
        .expect("run sieved")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_the_subcommand_and_the_configuration_file() {
    let output = sieved(&["--help"]);
    let help = text(&output.stdout);
    assert!(output.status.success(), "{help}{}", text(&output.stderr));
    assert!(help.contains("import-rdb"), "{help}");
    assert!(help.contains("[config-file]"), "{help}");
}

#[test]
fn the_subcommand_name_is_the_subcommand() {
    let output = sieved(&["import-rdb", "--help"]);
    let help = text(&output.stdout);
    assert!(output.status.success(), "{help}{}", text(&output.stderr));
    assert!(help.contains("Usage: sieved import-rdb"), "{help}");

    let dir = DataDir::new("cli-subcommand");
    let missing = dir.0.join("dump.rdb");
    let output = sieved(&["import-rdb", missing.to_str().unwrap()]);
    let errors = text(&output.stderr);
    assert!(!output.status.success());
    assert!(errors.starts_with("sieved import-rdb: "), "{errors}");
    assert!(!errors.contains("configuration file"), "{errors}");
}

#[test]
fn the_server_s_flags_are_refused_before_the_subcommand() {
    let output = sieved(&["--port", "7000", "import-rdb", "dump.rdb"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "sieved: --port is the server's; import-rdb does not take it\n"
    );
}

#[test]
fn any_other_first_argument_is_the_configuration_file() {
    let dir = DataDir::new("cli-config-file");
    let data = dir.0.join("data");
    let port = free_port();
    // Named as the subcommand is: given as a path, it is a file all the same.
    let file = dir.0.join("import-rdb");
    std::fs::write(
        &file,
        format!(
            "port {port}\ndir {}\nsave \"\"\nio-threads 2\nloglevel warn\ndatabases 5\n",
            data.display()
        ),
    )
    .expect("write the configuration file");
    let child = Command::new(binary())
        .arg(&file)
        .stdin(Stdio::null())
        .spawn()
        .expect("start sieved");
    let server = wait_until_serving(Running(child), port);
    let mut client = RawClient::connect(([127, 0, 0, 1], port).into());
    assert_eq!(
        client.cmd(&["CONFIG", "GET", "databases"]),
        b"*2\r\n$9\r\ndatabases\r\n$1\r\n5\r\n"
    );
    assert_eq!(client.cmd(&["SELECT", "4"]), b"+OK\r\n");
    // CONFIG REWRITE's target is the file given.
    assert_eq!(
        client.cmd(&["CONFIG", "SET", "maxclients", "77"]),
        b"+OK\r\n"
    );
    assert_eq!(client.cmd(&["CONFIG", "REWRITE"]), b"+OK\r\n");
    let rewritten = std::fs::read_to_string(&file).expect("read the configuration file");
    assert!(rewritten.contains("maxclients 77"), "{rewritten}");
    drop(client);
    server.kill();
}
