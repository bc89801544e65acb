//! Replies as a small tree, for the command adapter to encode. Where RESP2 and RESP3 differ
//! the adapter picks the form as Redis does for a module: `Nil` is `$-1` or `_`, `Bool` is
//! `:1`/`:0` or `#t`/`#f`, `Double` is a bulk string or `,` (both spelled by `redis_double`),
//! `Map` is a flat array or `%`.

#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `+OK`
    Ok,
    /// A simple string (`+true`, `+[` in `JSON.RESP`).
    Simple(&'static str),
    Bulk(Vec<u8>),
    Integer(i64),
    Double(f64),
    Bool(bool),
    Nil,
    Array(Vec<Answer>),
    /// Keys are bulk strings.
    Map(Vec<(Vec<u8>, Answer)>),
    /// The whole error line, its code included (`ERR ...`, `WRONGTYPE ...`, or RedisJSON's
    /// messages that have none).
    Error(String),
}

impl Answer {
    pub fn bulk(text: impl Into<Vec<u8>>) -> Answer {
        Answer::Bulk(text.into())
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Answer::Error(_))
    }
}

/// A double as Redis 7.4 replies it (`d2string`): the same text RedisBloom's doubles take,
/// so one implementation of Redis's Grisu2 serves both.
pub use crate::filter::reply_double_text as redis_double;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_redis_prints_them() {
        for (value, text) in [
            (0.1, "0.1"),
            (-1e-300, "-1e-300"),
            (4_500_000_000_000_019.0, "4500000000000019"),
            (31_500_000_000_000_000.0, "31500000000000000"),
            (-9_223_372_036_854_775_808.0, "-9223372036854776000"),
            (3.0000001, "3.0000001"),
            (-0.000001, "-0.000001"),
            (1003.14159, "1003.14159"),
            (25_000_000_004.5, "25000000004.5"),
            (1e22, "1e+22"),
            (1.5e300, "1.5e+300"),
            (123.456, "123.456"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (-0.0, "-0"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(redis_double(value), text, "{value:e}");
        }
    }
}
