//! The server's work per command without the network: parsing a request, encoding its reply, and
//! the whole of it (parse, look up, lock, probe, reply) for pipelines of 32 BF.ADD or BF.EXISTS
//! and for BF.MADD / BF.MEXISTS of 100 items, run through the same `cmd::execute` that serves
//! clients. Run with `cargo bench --bench protocol`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sieved::cmd::{self, Ctx, Session};
use sieved::config::Config;
use sieved::protocol::{Limits, Protocol, Reply, RequestParser};
use sieved::server::Shared;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const PIPELINE: usize = 32;
const BATCH: usize = 100;

fn encode_request(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Twelve-digit items, as redis-benchmark's `__rand_int__` makes them.
fn item(i: usize) -> Vec<u8> {
    format!(
        "{:012}",
        (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) % 100_000_000
    )
    .into_bytes()
}

/// `count` requests of `name key item`, one item each.
fn single_item_requests(name: &str, count: usize, first: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..count {
        encode_request(&[name.as_bytes(), b"bench", &item(first + i)], &mut out);
    }
    out
}

/// One request of `name key item...` with `BATCH` items.
fn batch_request(name: &str, first: usize) -> Vec<u8> {
    let items: Vec<Vec<u8>> = (first..first + BATCH).map(item).collect();
    let mut args: Vec<&[u8]> = vec![name.as_bytes(), b"bench"];
    args.extend(items.iter().map(Vec::as_slice));
    let mut out = Vec::new();
    encode_request(&args, &mut out);
    out
}

/// Parses every request in `input`, returning how many.
fn parse_all(parser: &mut RequestParser, input: &[u8]) -> usize {
    let mut count = 0;
    let mut rest = input;
    while let Ok(Some(request)) = parser.parse(rest) {
        black_box(request.arg(request.len() - 1));
        count += 1;
        rest = &rest[parser.take_consumed()..];
    }
    rest = &rest[parser.take_consumed()..];
    assert!(rest.is_empty());
    count
}

fn parsing(c: &mut Criterion) {
    let mut parser = RequestParser::new(Limits::default());
    let mut group = c.benchmark_group("parse");
    let pipeline = single_item_requests("BF.ADD", PIPELINE, 0);
    group.throughput(Throughput::Elements(PIPELINE as u64));
    group.bench_function("bf.add", |b| b.iter(|| parse_all(&mut parser, &pipeline)));
    let batch = batch_request("BF.MADD", 0);
    group.throughput(Throughput::Elements(1));
    group.bench_function("bf.madd-100", |b| b.iter(|| parse_all(&mut parser, &batch)));
    group.finish();
}

fn encoding(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");
    let mut reply = Reply::new(Protocol::Resp2);
    group.throughput(Throughput::Elements(PIPELINE as u64));
    group.bench_function("boolean", |b| {
        b.iter(|| {
            reply.clear();
            for i in 0..PIPELINE {
                reply.boolean(black_box(i % 3 == 0));
            }
            reply.len()
        })
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("array-of-100-booleans", |b| {
        b.iter(|| {
            reply.clear();
            reply.array(BATCH);
            for i in 0..BATCH {
                reply.boolean(black_box(i % 3 == 0));
            }
            reply.len()
        })
    });
    group.finish();
}

/// A server's shared state and one client session, with no listener.
struct Server {
    shared: Arc<Shared>,
    session: Session,
    parser: RequestParser,
    reply: Reply,
}

impl Server {
    fn new() -> Server {
        let shared = Arc::new(Shared::new(
            Config::default_for_tests(),
            "127.0.0.1:0".parse().expect("an address"),
        ));
        let addr = "127.0.0.1:1".parse().expect("an address");
        let client = shared.clients.register(addr, addr, 0).info.clone();
        Server {
            session: Session::new(client, true),
            shared,
            parser: RequestParser::new(Limits::default()),
            reply: Reply::new(Protocol::Resp2),
        }
    }

    /// Parses and executes every request in `input`, as a connection does with one read.
    fn run(&mut self, input: &[u8]) -> usize {
        self.reply.clear();
        let mut rest = input;
        while let Ok(Some(request)) = self.parser.parse(rest) {
            let mut ctx = Ctx {
                server: &self.shared,
                store: &self.shared.store,
                session: &mut self.session,
                reply: &mut self.reply,
                now: 1,
            };
            cmd::execute(&mut ctx, request);
            rest = &rest[self.parser.take_consumed()..];
        }
        self.parser.take_consumed();
        self.reply.len()
    }
}

fn executing(c: &mut Criterion) {
    let mut server = Server::new();
    // Reserved for the items the load benchmark draws from, as a crawler would size its filter.
    let mut reserve = Vec::new();
    encode_request(
        &[b"BF.RESERVE", b"bench", b"0.01", b"100000000"],
        &mut reserve,
    );
    server.run(&reserve);
    assert_eq!(server.reply.bytes(), b"+OK\r\n");

    let pipelines: Vec<(Vec<u8>, Vec<u8>)> = (0..64)
        .map(|p| {
            (
                single_item_requests("BF.ADD", PIPELINE, p * PIPELINE),
                single_item_requests("BF.EXISTS", PIPELINE, p * PIPELINE + 7),
            )
        })
        .collect();
    let batches: Vec<(Vec<u8>, Vec<u8>)> = (0..64)
        .map(|p| {
            (
                batch_request("BF.MADD", p * BATCH),
                batch_request("BF.MEXISTS", p * BATCH + 7),
            )
        })
        .collect();
    let mut group = c.benchmark_group("execute");
    let mut next = 0;
    let mut cycle = move || {
        next = (next + 1) % 64;
        next
    };
    group.throughput(Throughput::Elements(PIPELINE as u64));
    group.bench_function("bf.add-pipeline-32", |b| {
        b.iter(|| server.run(&pipelines[cycle()].0))
    });
    group.bench_function("bf.exists-pipeline-32", |b| {
        b.iter(|| server.run(&pipelines[cycle()].1))
    });
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("bf.madd-100", |b| {
        b.iter(|| server.run(&batches[cycle()].0))
    });
    group.bench_function("bf.mexists-100", |b| {
        b.iter(|| server.run(&batches[cycle()].1))
    });
    group.finish();
}

criterion_group! {
    name = protocol_benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = parsing, encoding, executing
}
criterion_main!(protocol_benches);
