//! sieved: a Redis-protocol server for a crawler fleet's shared state: RedisBloom-compatible
//! filters, a crawl frontier, Redis data types, replication.

#![warn(unreachable_pub)]

pub mod acl;
pub mod cmd;
pub mod config;
pub mod filter;
pub mod frontier;
/// The fuzz targets' harnesses: public only to the fuzz crate (feature `fuzzing`); the unit
/// tests replay every input the fuzzers kept through them.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz_support;
pub mod import_rdb;
pub mod json;
pub mod lua;
pub mod memory;
pub mod notify;
pub(crate) mod observe;
pub mod open_files;
pub mod persist;
pub mod protocol;
pub mod rdb;
pub mod server;
pub mod store;
mod stripes;

/// The Redis version sieved reports to clients (HELLO, INFO redis_version): the release whose
/// commands and replies it follows, so that clients enable the matching features.
pub const REDIS_VERSION: &str = "8.0.0";
/// The RedisBloom release whose BF.* behaviour sieved follows, as MODULE LIST would report it.
pub const BLOOM_MODULE_VERSION: i64 = 80800;
/// The RedisJSON release whose JSON.* behaviour sieved follows (2.8.19), as MODULE LIST reports it.
pub const JSON_MODULE_VERSION: i64 = 20819;
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
