//! The kinds of value a setting holds: how each reads from text (a flag, an environment
//! variable, a line of the file, CONFIG SET) and how CONFIG GET and CONFIG REWRITE print it,
//! plus the range checks entries of the table use.

use super::{ClientAuth, Fsync, ReplicaOf, SaveRules};
use crate::filter::{HashScheme, Layout};
use crate::store::EvictionPolicy;
use std::fmt::Display;
use std::path::PathBuf;

/// Why a text is not a valid value. Kept apart from a plain message because the two audiences
/// word a number that does not parse differently: CONFIG SET answers in Redis's words, while
/// start-up quotes the text, since a file or a command line holds many values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Invalid {
    /// Not a value of the kind at all; Redis's wording.
    Unparsable(&'static str),
    /// Not a memory value (`Bytes`): Redis's wording to a client, the units at start-up.
    NotMemory,
    /// A value of the kind, refused by the setting's own check.
    Refused(String),
}

impl Invalid {
    /// The reason CONFIG SET gives a client.
    pub(crate) fn for_client(&self) -> String {
        match self {
            Invalid::Unparsable(why) => (*why).to_string(),
            Invalid::NotMemory => "argument must be a memory value".into(),
            Invalid::Refused(why) => why.clone(),
        }
    }

    /// The reason start-up gives, for `text` as the flag, variable or file gave it.
    pub(crate) fn at_start_up(&self, text: &str) -> String {
        match self {
            Invalid::Unparsable(_) => format!("invalid value '{text}'"),
            Invalid::NotMemory => format!(
                "invalid value '{text}': a memory value is a number of bytes, optionally followed \
                 by k (1000), kb (1024), m, mb, g or gb"
            ),
            Invalid::Refused(why) => why.clone(),
        }
    }
}

impl From<String> for Invalid {
    fn from(why: String) -> Invalid {
        Invalid::Refused(why)
    }
}

/// A kind of value a setting can hold.
pub(crate) trait Value: Sized {
    /// What the value looks like, for `--help` and the README (`yes|no`, `integer`, ...).
    const KIND: &'static str;
    /// A list (`save`): several words on one line of the file, lines adding up, written back
    /// as bare words.
    const LIST: bool = false;

    /// A value that says nothing (`replicaof` of a primary) is no line of the file at all:
    /// CONFIG REWRITE removes the directive rather than write it empty, as Redis does.
    const ABSENT_WHEN_EMPTY: bool = false;

    fn parse(text: &str) -> Result<Self, Invalid>;

    /// The text CONFIG GET shows; `parse` reads it back as the same value.
    fn show(&self) -> String;

    /// The text CONFIG REWRITE writes into the file; `parse` reads it back as the same value.
    fn written(&self) -> String {
        self.show()
    }
}

/// A number of bytes, read as Redis reads a memory value (its `memtoull`): decimal digits and
/// at most one unit, in any case: `b` 1, `k` 1000, `kb` 1024, `m` 10^6, `mb` 2^20, `g` 10^9,
/// `gb` 2^30. No sign, space, fraction or other unit; no digits at all reads as 0, as in Redis
/// (`""` and `mb` are 0). CONFIG GET shows the plain number; CONFIG REWRITE writes the largest
/// of gb, mb and kb that divides it, as Redis writes it.
///
/// One departure: a value past 2^64 - 1 bytes is refused, where Redis's arithmetic wraps it
/// around (`17179869184gb` is 0 bytes there, which is "no limit" for maxmemory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bytes(pub(crate) u64);

impl From<Bytes> for u64 {
    fn from(bytes: Bytes) -> u64 {
        bytes.0
    }
}

impl From<u64> for Bytes {
    fn from(bytes: u64) -> Bytes {
        Bytes(bytes)
    }
}

impl Value for Bytes {
    const KIND: &'static str = "bytes";

    fn parse(text: &str) -> Result<Bytes, Invalid> {
        let digits = text.bytes().take_while(u8::is_ascii_digit).count();
        let (number, unit) = text.split_at(digits);
        let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" => 1000,
            "kb" => 1 << 10,
            "m" => 1000 * 1000,
            "mb" => 1 << 20,
            "g" => 1000 * 1000 * 1000,
            "gb" => 1 << 30,
            _ => return Err(Invalid::NotMemory),
        };
        // Redis copies the digits into a buffer of 128 bytes, refusing more.
        if number.len() >= 128 {
            return Err(Invalid::NotMemory);
        }
        let number: u64 = match number {
            "" => 0,
            digits => digits.parse().map_err(|_| Invalid::NotMemory)?,
        };
        number
            .checked_mul(multiplier)
            .map(Bytes)
            .ok_or(Invalid::NotMemory)
    }

    fn show(&self) -> String {
        self.0.to_string()
    }

    fn written(&self) -> String {
        let bytes = self.0;
        for (unit, size) in [("gb", 1u64 << 30), ("mb", 1 << 20), ("kb", 1 << 10)] {
            if bytes != 0 && bytes % size == 0 {
                return format!("{}{unit}", bytes / size);
            }
        }
        bytes.to_string()
    }
}

/// Numbers, read by `FromStr` and shown by `Display`.
macro_rules! number_values {
    ($($kind:literal, $unparsable:literal: $($ty:ty),*;)*) => {$($(
        impl Value for $ty {
            const KIND: &'static str = $kind;

            fn parse(text: &str) -> Result<Self, Invalid> {
                text.parse().map_err(|_| Invalid::Unparsable($unparsable))
            }

            fn show(&self) -> String {
                self.to_string()
            }
        }
    )*)*};
}

number_values! {
    "integer", "argument couldn't be parsed into an integer": u16, u32, u64, i64, usize;
    "number", "argument couldn't be parsed into a number": f64;
}

impl Value for bool {
    const KIND: &'static str = "yes|no";

    fn parse(text: &str) -> Result<bool, Invalid> {
        match text.to_ascii_lowercase().as_str() {
            "yes" => Ok(true),
            "no" => Ok(false),
            _ => Err(Invalid::Refused("argument must be 'yes' or 'no'".into())),
        }
    }

    fn show(&self) -> String {
        if *self { "yes" } else { "no" }.into()
    }
}

impl Value for String {
    const KIND: &'static str = "text";

    fn parse(text: &str) -> Result<String, Invalid> {
        Ok(text.to_string())
    }

    fn show(&self) -> String {
        self.clone()
    }
}

impl Value for PathBuf {
    const KIND: &'static str = "path";

    fn parse(text: &str) -> Result<PathBuf, Invalid> {
        Ok(PathBuf::from(text))
    }

    fn show(&self) -> String {
        self.display().to_string()
    }
}

/// Empty text for none: a setting whose default is worked out at start-up.
impl<T: Value> Value for Option<T> {
    const KIND: &'static str = T::KIND;

    fn parse(text: &str) -> Result<Option<T>, Invalid> {
        if text.is_empty() {
            return Ok(None);
        }
        T::parse(text).map(Some)
    }

    fn show(&self) -> String {
        self.as_ref().map(T::show).unwrap_or_default()
    }
}

/// Two words on the file's line, as Redis writes it.
impl Value for ReplicaOf {
    const KIND: &'static str = "host port";
    const LIST: bool = true;
    const ABSENT_WHEN_EMPTY: bool = true;

    fn parse(text: &str) -> Result<ReplicaOf, Invalid> {
        Ok(ReplicaOf::parse(text)?)
    }

    fn show(&self) -> String {
        ReplicaOf::show(self)
    }
}

impl Value for SaveRules {
    const KIND: &'static str = "seconds changes ...";
    const LIST: bool = true;

    fn parse(text: &str) -> Result<SaveRules, Invalid> {
        Ok(SaveRules::parse(text)?)
    }

    fn show(&self) -> String {
        self.to_string()
    }
}

/// Kinds read from one of a few names (their type's `parse` gives `None` for any other) and
/// shown by `name()`.
macro_rules! named_values {
    ($($ty:ty: $kind:literal, $refusal:literal;)*) => {$(
        impl Value for $ty {
            const KIND: &'static str = $kind;

            fn parse(text: &str) -> Result<$ty, Invalid> {
                <$ty>::parse(text).ok_or_else(|| Invalid::Refused($refusal.into()))
            }

            fn show(&self) -> String {
                self.name().into()
            }
        }
    )*};
}

named_values! {
    Layout: "classic|blocked", "argument must be 'classic' or 'blocked'";
    HashScheme: "murmur|xxh3", "argument must be 'murmur' or 'xxh3'";
    Fsync: "always|everysec|no", "argument must be one of 'always', 'everysec' or 'no'";
    EvictionPolicy: "policy", "argument(s) must be one of the following: volatile-lru, \
        volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, \
        noeviction";
}

impl Value for ClientAuth {
    const KIND: &'static str = "yes|optional|no";

    fn parse(text: &str) -> Result<ClientAuth, Invalid> {
        Ok(ClientAuth::parse(text)?)
    }

    fn show(&self) -> String {
        self.name().into()
    }
}

/// A check that accepts every value of the kind.
pub(crate) fn any<T>(_: &T) -> Result<(), String> {
    Ok(())
}

/// `min..=max`, in CONFIG SET's words.
pub(crate) fn within<T: PartialOrd + Display>(value: T, min: T, max: T) -> Result<(), String> {
    if value < min || value > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T: Value + PartialEq + std::fmt::Debug>(texts: &[&str]) {
        for text in texts {
            let value = T::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
            assert_eq!(T::parse(&value.show()).unwrap(), value, "{text}");
        }
    }

    #[test]
    fn each_kind_reads_back_what_it_prints() {
        round_trips::<u16>(&["0", "6390", "65535"]);
        round_trips::<u32>(&["0", "32768"]);
        round_trips::<u64>(&["0", "18446744073709551615"]);
        round_trips::<i64>(&["-1", "10000", "-9223372036854775808"]);
        round_trips::<usize>(&["1", "1024"]);
        round_trips::<f64>(&["0.01", "1e-9", "0.5"]);
        round_trips::<bool>(&["yes", "NO"]);
        round_trips::<String>(&["", "two words"]);
        round_trips::<PathBuf>(&["./data", "/var/lib/sieved"]);
        round_trips::<Option<usize>>(&["", "4"]);
        round_trips::<SaveRules>(&["", "3600 1 300 100"]);
        round_trips::<Layout>(&["classic", "Blocked"]);
        round_trips::<Fsync>(&["always", "everysec", "no"]);
        round_trips::<ClientAuth>(&["yes", "optional", "no"]);
        round_trips::<EvictionPolicy>(&["noeviction", "ALLKEYS-LFU", "volatile-ttl"]);
        round_trips::<Bytes>(&["0", "1k", "100mb", "3GB", "18446744073709551615"]);
    }

    #[test]
    fn memory_values_read_as_redis_reads_them() {
        for (text, bytes) in [
            ("0", 0),
            ("", 0),
            ("mb", 0),
            ("0100", 100),
            ("1b", 1),
            ("1B", 1),
            ("1k", 1000),
            ("1K", 1000),
            ("1kb", 1024),
            ("1Kb", 1024),
            ("1KB", 1024),
            ("1m", 1_000_000),
            ("100mb", 100 << 20),
            ("1g", 1_000_000_000),
            ("1gb", 1 << 30),
            ("1Gb", 1 << 30),
            ("17179869183gb", 17_179_869_183 << 30),
            ("18446744073709551615", u64::MAX),
        ] {
            assert_eq!(Bytes::parse(text), Ok(Bytes(bytes)), "{text}");
        }
        for text in [
            "-1",
            "+5",
            " 5",
            "5 ",
            "1.5gb",
            "1t",
            "1tb",
            "0x10",
            "1kbb",
            "k1",
            "1 mb",
            // Past 2^64 - 1, where Redis wraps around.
            "18446744073709551616",
            "17179869184gb",
            "18446744073709551615kb",
        ] {
            assert_eq!(Bytes::parse(text), Err(Invalid::NotMemory), "{text}");
        }
        assert!(Bytes::parse(&"1".repeat(128)).is_err());
        assert_eq!(
            Invalid::NotMemory.for_client(),
            "argument must be a memory value"
        );
    }

    #[test]
    fn memory_values_are_written_with_redis_units() {
        for (bytes, written) in [
            (0, "0"),
            (1000, "1000"),
            (1024, "1kb"),
            (1_000_000, "1000000"),
            (100 << 20, "100mb"),
            (1536 << 20, "1536mb"),
            (64 << 30, "64gb"),
            ((1 << 20) + 1, "1048577"),
        ] {
            assert_eq!(Bytes(bytes).written(), written);
            assert_eq!(Bytes::parse(written), Ok(Bytes(bytes)));
        }
    }

    #[test]
    fn refusals_are_worded_for_their_audience() {
        let not_a_number = u64::parse("many").unwrap_err();
        assert_eq!(
            not_a_number.for_client(),
            "argument couldn't be parsed into an integer"
        );
        assert_eq!(not_a_number.at_start_up("many"), "invalid value 'many'");
        let refused = bool::parse("maybe").unwrap_err();
        assert_eq!(refused.for_client(), refused.at_start_up("maybe"));
        assert!(u64::parse("-1").is_err());
        assert!(Option::<usize>::parse("x").is_err());
        assert_eq!(
            within(0u64, 1, 9).unwrap_err(),
            "argument must be between 1 and 9 inclusive"
        );
        assert!(within(9u64, 1, 9).is_ok());
    }
}
