//! JSON documents as RedisJSON 2.8 keeps and answers them: the value and its text forms
//! (`text` in, `write` out), paths in both syntaxes (`path`), the `JSON.*` commands over a
//! document (`commands`), replies as a tree (`answer`) and the `ReJSON-RL` RDB encoding
//! (`rdb`). Data structures and semantics only: no protocol writing, no I/O, no settings.
//!
//! What the command adapter supplies around `execute`:
//! - a `Keyspace` over the store: a key holding another type is `Lookup::OtherType` (the
//!   engine answers RedisJSON's `Existing key has wrong Redis type`, or nil in `JSON.MGET`),
//!   and `document_budget` the bytes left under `maxmemory` (beyond it the engine answers the
//!   OOM error while parsing, before the document is whole);
//! - the encoding of the `Answer` for the connection's protocol (`redis_double` spells
//!   doubles as Redis 7.4 does);
//! - for each key in `Outcome::events`, the keyspace notification, and for each key in
//!   `Outcome::changed`, the write to the log: the command as given, except that the numeric
//!   commands log `Outcome::numbers`, replayed with `set_number`;
//! - the commands registered without an arity of their own (RedisJSON's are -1; the engine
//!   answers `wrong number of arguments` itself, naming the command in lower case);
//! - `Value::memory` for `JSON.DEBUG MEMORY` and `MEMORY USAGE`, `Value::clone` for `COPY`
//!   (a copy's capacities shrink to its contents, as `ijson`'s do), `rdb` for DUMP, RESTORE and
//!   RDB files, and `ParseLimits::own` for texts sieved writes itself.

mod answer;
mod commands;
mod edit;
/// Harnesses for the fuzz targets and their regression tests.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz;
pub mod path;
pub mod rdb;
mod text;
mod value;
mod write;

pub use answer::{redis_double, Answer};
pub use commands::{execute, set_number, Keyspace, Lookup, NumberWrite, Outcome};
pub use text::{parse, ErrorCode, ParseError, ParseLimits, COMMAND_NESTING};
pub use value::{Array, Kind, Member, Number, Object, Value, MAX_NESTING};
pub use write::{to_text, to_text_with, Layout};

#[cfg(test)]
mod transcripts;
