//! Harnesses for the fuzz targets in `fuzz/` and for their regression tests: each takes
//! arbitrary bytes and must neither panic nor allocate without bound, whatever the bytes are.

use crate::cmd::{self, After, Ctx, Session};
use crate::config::Config;
use crate::filter::{BloomChain, CountingChain, CuckooFilter, Retired, WindowedFilter};
use crate::persist::{aof, snapshot};
use crate::protocol::{peek_request, Limits, Protocol, Reply, RequestParser};
use crate::rdb;
use crate::server::Shared;
use crate::store::{now_ms, Store};
use std::sync::Arc;

/// Small enough that the fuzzer reaches the limits, large enough for real requests.
const FUZZ_LIMITS: Limits = Limits {
    max_bulk_len: 1 << 20,
    max_args: 1 << 16,
    max_inline_len: 64 * 1024,
};
const FUZZ_FILTER_LIMIT: u64 = 64 << 20;

/// Feeds the bytes to the request parser in pieces whose size the first byte chooses, as a
/// network would deliver them, until the input is used up or the parser reports a violation.
pub fn request_parser(data: &[u8]) {
    let Some((&piece, data)) = data.split_first() else {
        return;
    };
    let piece = usize::from(piece).max(1);
    let mut parser = RequestParser::new(FUZZ_LIMITS);
    let mut buffer = Vec::new();
    for chunk in data.chunks(piece) {
        buffer.extend_from_slice(chunk);
        loop {
            // The look-ahead's view of the request at the front (the buffer always starts at
            // one), which the parser must confirm whenever it accepts that request.
            let mut peeked_args = [&[][..]; 4];
            let peeked = peek_request(&buffer, &mut peeked_args)
                .map(|(count, len)| (peeked_args[..count].to_vec(), len));
            let wants_more = match parser.parse(&buffer) {
                Ok(Some(request)) => {
                    assert!(!request.is_empty());
                    // Arguments are slices of what arrived (escapes only shorten inline ones).
                    let total: usize = request.args().map(<[u8]>::len).sum();
                    assert!(total <= buffer.len());
                    if let Some((args, _)) = &peeked {
                        assert!(request.args().eq(args.iter().copied()));
                    }
                    false
                }
                // A request the look-ahead saw whole is never one the parser waits for.
                Ok(None) => {
                    assert!(peeked.is_none());
                    true
                }
                Err(_) => return,
            };
            let consumed = parser.take_consumed();
            if let Some((_, len)) = peeked {
                assert_eq!(consumed, len);
            }
            buffer.drain(..consumed);
            if wants_more {
                break;
            }
        }
    }
}

/// Commands that need the runtime or end the process are left out; everything else runs.
fn allowed(name: &[u8]) -> bool {
    !["save", "bgsave", "shutdown"]
        .iter()
        .any(|skipped| name.eq_ignore_ascii_case(skipped.as_bytes()))
}

/// Parses the bytes as requests and executes them against a fresh in-memory server, the way a
/// connection would (in RESP2, or RESP3 if the first byte is odd).
pub fn commands(data: &[u8]) {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    let config = Config::default_for_tests();
    let filter_limit = FUZZ_FILTER_LIMIT.to_string();
    config
        .set_many(&[(b"max-filter-memory", filter_limit.as_bytes())])
        .expect("a valid limit");
    let addr = "127.0.0.1:0".parse().expect("an address");
    let shared = Arc::new(Shared::new(config, addr));
    let registration = shared.clients.register(addr, addr, now_ms());
    let mut session = Session::new(registration.info.clone(), true);
    let protocol = if mode % 2 == 1 {
        Protocol::Resp3
    } else {
        Protocol::Resp2
    };
    let mut reply = Reply::new(protocol);
    let mut parser = RequestParser::new(FUZZ_LIMITS);
    let mut input = data;
    loop {
        match parser.parse(input) {
            Ok(Some(request)) if allowed(request.arg(0)) => {
                let mut ctx = Ctx {
                    server: &shared,
                    store: &shared.store,
                    session: &mut session,
                    reply: &mut reply,
                    now: now_ms(),
                };
                cmd::execute(&mut ctx, request);
                reply.clear();
                // What a connection would do after it (park, wait, stream) is left undone.
                if let Some(After::Close) = session.after.take() {
                    return;
                }
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return,
        }
        input = &input[parser.take_consumed()..];
    }
}

/// Reads the bytes as a dump: a header, then chunks (iterator, length, data), for every filter
/// type that dumps (Bloom, counting, cuckoo, time-windowed); a filter that loads is then dumped
/// again, queried and written to (a windowed one at times around the slices it holds).
pub fn filter_dumps(data: &[u8]) {
    let Some((length, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let header_len = usize::from(u16::from_le_bytes(*length)).min(rest.len());
    let (header, mut chunks) = rest.split_at(header_len);
    let mut bloom = BloomChain::from_header(header, FUZZ_FILTER_LIMIT).ok();
    let mut counting = CountingChain::from_header(header, FUZZ_FILTER_LIMIT).ok();
    let mut cuckoo = CuckooFilter::from_header(header, FUZZ_FILTER_LIMIT).ok();
    let mut windowed = WindowedFilter::from_header(header, FUZZ_FILTER_LIMIT).ok();
    while let Some((head, tail)) = chunks.split_first_chunk::<10>() {
        let iterator = i64::from_le_bytes(head[..8].try_into().expect("eight bytes"));
        let len = usize::from(u16::from_le_bytes([head[8], head[9]])).min(tail.len());
        let (chunk, tail) = tail.split_at(len);
        if let Some(chain) = bloom.as_mut() {
            let _ = chain.load_chunk(iterator, chunk);
        }
        if let Some(chain) = counting.as_mut() {
            let _ = chain.load_chunk(iterator, chunk);
        }
        if let Some(filter) = cuckoo.as_mut() {
            let _ = filter.load_chunk(iterator, chunk);
        }
        if let Some(filter) = windowed.as_mut() {
            let _ = filter.load_chunk(iterator, chunk);
        }
        chunks = tail;
    }
    if let Some(chain) = bloom {
        dump_all(|iterator| chain.dump_chunk(iterator).next);
        chain.contains(b"probe");
    }
    if let Some(mut chain) = counting {
        dump_all(|iterator| chain.dump_chunk(iterator).next);
        chain.contains(b"probe");
        chain.count(b"probe");
        chain.delete(b"probe");
    }
    if let Some(mut filter) = cuckoo {
        // A cuckoo filter's walk starts at 1, as RedisBloom's does.
        dump_all(|iterator| {
            filter
                .dump_chunk(iterator.max(1))
                .map_or(0, |(next, _)| next)
        });
        filter.contains(b"probe");
        filter.count(b"probe");
        filter.delete(b"probe");
        let _ = filter.insert(b"probe", FUZZ_FILTER_LIMIT);
        filter.compact();
    }
    if let Some(mut filter) = windowed {
        dump_all(|iterator| filter.dump_chunk(iterator).next);
        let mut retired = Retired::default();
        // Times from the start of the epoch to the end of u64, with the item counts as given.
        for now in [0, 1, 1 << 40, u64::MAX / 2, u64::MAX] {
            filter.contains(b"probe", now);
            filter.items(now);
            let _ = filter.add(b"probe", now, &mut retired);
            filter.expire(now, &mut retired);
        }
    }
}

/// Walks a SCANDUMP to its end; every step must move forward.
fn dump_all(mut step: impl FnMut(i64) -> i64) {
    let mut iterator = 0;
    loop {
        let next = step(iterator);
        if next == 0 {
            return;
        }
        assert!(
            next > iterator,
            "SCANDUMP went from {iterator} back to {next}"
        );
        iterator = next;
    }
}

/// Loads the bytes as a snapshot file, then reads them as an append-only file segment.
pub fn snapshot_file(data: &[u8]) {
    let dir = std::env::temp_dir().join(format!("sieved-fuzz-snapshot-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err()
        || std::fs::write(dir.join(snapshot::FILE_NAME), data).is_err()
    {
        return;
    }
    // No setting bounds a load: the file's own size does.
    let _ = snapshot::load(&Store::new(16, 4), &dir, |_, _| {});
    let segment = aof::segment_path(&dir, 1);
    if std::fs::write(&segment, data).is_err() {
        return;
    }
    if let Ok(mut reader) = aof::SegmentReader::open(&segment, 1) {
        while let Ok(record) = reader.next_record() {
            for (_, args) in &record.commands {
                assert!(args.iter().all(|range| range.end <= record.body.len()));
            }
        }
    }
}

/// RESTORE's decoder on the bytes as they are, and sealed with a valid trailer so that the fuzzer
/// reaches the value itself: nothing may panic or pass the limits, and whatever restores must
/// dump and restore again to the same value.
pub fn restore_payload(data: &[u8]) {
    let limits = rdb::Limits {
        string_bytes: FUZZ_LIMITS.max_bulk_len as u64,
        filter_bytes: FUZZ_FILTER_LIMIT,
    };
    let _ = rdb::restore(data, &limits);
    let mut sealed = data.to_vec();
    rdb::append_trailer(&mut sealed, rdb::DUMP_VERSION);
    if let Ok(value) = rdb::restore(&sealed, &limits) {
        let payload = rdb::dump(&value);
        let copy = rdb::restore(&payload, &limits).expect("a dump restores");
        assert_eq!(copy.snapshot_header(), value.snapshot_header());
        assert_eq!(copy.payload_len(), value.payload_len());
    }
}

/// Every input the fuzzers in fuzz/ ever found a problem with, replayed through the same
/// harness, which must neither panic nor fail; the seeds exercise each harness too.
#[cfg(test)]
mod regressions {
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
        replay("request_parser", super::request_parser);
        super::request_parser(b"\x03*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nPING\r\n");
    }

    use proptest::prelude::*;

    proptest! {
        /// Requests, near-requests and noise, delivered in pieces: the look-ahead and the parser
        /// agree on every request the look-ahead takes (`request_parser` asserts it).
        #[test]
        fn the_look_ahead_agrees_with_the_parser(
            piece in 1u8..40,
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::collection::vec(
                        proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
                        0..6,
                    )
                    .prop_map(|args| {
                        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                        let mut out = Vec::new();
                        crate::protocol::encode_request(&mut out, &args);
                        out
                    }),
                    proptest::sample::select(vec![
                        b"*".to_vec(),
                        b"$".to_vec(),
                        b"\r\n".to_vec(),
                        b"\n".to_vec(),
                        b"*3\r\n$6\r\nBF.ADD\r\n".to_vec(),
                        b"$-1\r\n".to_vec(),
                        b"*-1\r\n".to_vec(),
                        b"$05\r\n".to_vec(),
                        b"PING\r\n".to_vec(),
                    ]),
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..6),
                ],
                0..12,
            )
        ) {
            let mut data = vec![piece];
            data.extend(parts.concat());
            super::request_parser(&data);
        }
    }

    #[test]
    fn commands_regressions() {
        replay("commands", super::commands);
        super::commands(
            b"\x01BF.ADD k a\r\nCBF.MADD c a a\r\nMULTI\r\nCBF.DEL c a\r\nEXEC\r\nBF.SCANDUMP k 0\r\n",
        );
    }

    #[test]
    fn filter_dumps_regressions() {
        replay("filter_dumps", super::filter_dumps);
        super::filter_dumps(&[0, 0]);
    }

    #[test]
    fn restore_payload_regressions() {
        replay("restore_payload", super::restore_payload);
        super::restore_payload(b"\x00\x05hello");
    }

    #[test]
    fn snapshot_file_regressions() {
        replay("snapshot_file", super::snapshot_file);
        super::snapshot_file(b"SIEVEDSN\x01\x00\x00\x00");
    }
}
