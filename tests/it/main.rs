//! The integration tests, as one binary: each module was a test binary of its own, and each of
//! those linked the whole crate, which made a cold build take minutes. A test keeps its name
//! under its module (`cargo test --test it replication::` runs one file's). The transcripts of
//! proto-tests/ have a binary of their own (tests/proto), whose harness names each file.
//!
//! Every test here shares one process: `support::DataDir` and `support::free_port` hand out
//! what is unique per process, and a test that measures the process's memory runs alone in a
//! child process (`support::alone_in_process`).

mod ha;
mod support;

mod aof;
mod architecture;
mod bitstrings;
mod blocking;
mod book;
mod cbf_network;
mod cbf_properties;
mod cli;
mod client_kill;
mod clients;
mod collection_scan;
mod collections;
mod command_docs;
mod config_units;
mod crawlee;
mod cuckoo;
mod digest;
mod dump_restore;
mod eviction;
mod external;
mod fpr;
mod frontier;
mod frontier_examples;
mod import_rdb;
mod json_documents;
mod many_clients;
mod metrics_prometheus;
mod observability;
mod operations;
mod package;
mod persistence;
mod pubsub;
mod query_buffers;
mod randomized;
mod redisbloom_fixtures;
mod replay;
mod replication;
mod replication_chaos;
mod replication_trust;
mod robustness;
mod scan;
mod scrapy_redis;
mod scripting;
mod security;
mod sentinel;
mod server;
mod sketches;
mod tls;
