//! Every input the fuzzers in fuzz/ ever found a problem with, kept as a test: each is replayed
//! through the same harness, which must neither panic nor fail. Seeds exercise each harness too.

use sieved::fuzz_support;
use std::path::Path;

/// Runs the harness on every regression of `target`, and on its seeds.
fn replay(target: &str, harness: fn(&[u8])) -> usize {
    let mut count = 0;
    for kind in ["regressions", "seeds"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz")
            .join(kind)
            .join(target);
        for entry in std::fs::read_dir(&dir).expect("fuzz input directory") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "md") {
                continue;
            }
            harness(&std::fs::read(&path).expect("read"));
            count += 1;
        }
    }
    count
}

#[test]
fn request_parser_regressions() {
    replay("request_parser", fuzz_support::request_parser);
    fuzz_support::request_parser(b"\x03*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nPING\r\n");
}

#[test]
fn commands_regressions() {
    replay("commands", fuzz_support::commands);
    fuzz_support::commands(
        b"\x01BF.ADD k a\r\nCBF.MADD c a a\r\nMULTI\r\nCBF.DEL c a\r\nEXEC\r\nBF.SCANDUMP k 0\r\n",
    );
}

#[test]
fn filter_dumps_regressions() {
    replay("filter_dumps", fuzz_support::filter_dumps);
    fuzz_support::filter_dumps(&[0, 0]);
}

#[test]
fn snapshot_file_regressions() {
    replay("snapshot_file", fuzz_support::snapshot_file);
    fuzz_support::snapshot_file(b"SIEVEDSN\x01\x00\x00\x00");
}
