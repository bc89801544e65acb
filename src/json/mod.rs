//! JSON documents as RedisJSON 2.8 keeps and answers them: the value and its text forms
//! (`text` in, `write` out), paths in both syntaxes (`path`), the `JSON.*` commands over a
//! document (`commands`), replies as a tree (`answer`) and the `ReJSON-RL` RDB encoding
//! (`rdb`). Data structures and semantics only: no protocol writing, no I/O, no settings.

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
