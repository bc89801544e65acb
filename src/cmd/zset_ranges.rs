//! The ranges of the sorted-set commands: by score (`(` makes an end exclusive) and by name
//! (`[`, `(`, `-`, `+`), each parsed from its word and walked over a set as Redis walks it.

use super::args::float;
use super::errors::{CmdError, LEX_RANGE_ITEM, MIN_MAX_FLOAT};
use crate::store::ZSet;

/// One end of a score range: `(` before the number makes it exclusive.
#[derive(Clone, Copy)]
pub(super) struct Bound {
    score: f64,
    exclusive: bool,
}

impl Bound {
    pub(super) fn parse(arg: &[u8]) -> Result<Bound, CmdError> {
        let (text, exclusive) = match arg {
            [b'(', rest @ ..] => (rest, true),
            _ => (arg, false),
        };
        // Read as strtod reads it: leading space skipped, and nothing at all is 0.
        let score = match text.trim_ascii_start() {
            _ if text.is_empty() => 0.0,
            text => float(text, MIN_MAX_FLOAT)?,
        };
        Ok(Bound { score, exclusive })
    }

    fn above_min(self, score: f64) -> bool {
        score > self.score || (!self.exclusive && score == self.score)
    }

    fn below_max(self, score: f64) -> bool {
        score < self.score || (!self.exclusive && score == self.score)
    }
}

/// Members with scores between `min` and `max`, lowest first or (`reverse`) highest first.
pub(super) fn by_score(
    zset: &ZSet,
    min: Bound,
    max: Bound,
    reverse: bool,
) -> Box<dyn Iterator<Item = (&[u8], f64)> + '_> {
    if reverse {
        Box::new(
            zset.down_from_score(max.score)
                .skip_while(move |(_, s)| !max.below_max(*s))
                .take_while(move |(_, s)| min.above_min(*s)),
        )
    } else {
        Box::new(
            zset.from_score(min.score)
                .skip_while(move |(_, s)| !min.above_min(*s))
                .take_while(move |(_, s)| max.below_max(*s)),
        )
    }
}

/// One end of a lexicographic range: `[` inclusive, `(` exclusive, `-` and `+` unbounded.
#[derive(Clone, Copy)]
pub(super) enum Lex<'a> {
    Lowest,
    Highest,
    Inclusive(&'a [u8]),
    Exclusive(&'a [u8]),
}

impl<'a> Lex<'a> {
    pub(super) fn parse(arg: &'a [u8]) -> Result<Lex<'a>, CmdError> {
        match arg {
            b"-" => Ok(Lex::Lowest),
            b"+" => Ok(Lex::Highest),
            [b'[', rest @ ..] => Ok(Lex::Inclusive(rest)),
            [b'(', rest @ ..] => Ok(Lex::Exclusive(rest)),
            _ => Err(LEX_RANGE_ITEM.into()),
        }
    }

    fn at_least(self, member: &[u8]) -> bool {
        match self {
            Lex::Lowest => true,
            Lex::Highest => false,
            Lex::Inclusive(min) => member >= min,
            Lex::Exclusive(min) => member > min,
        }
    }

    fn at_most(self, member: &[u8]) -> bool {
        match self {
            Lex::Lowest => false,
            Lex::Highest => true,
            Lex::Inclusive(max) => member <= max,
            Lex::Exclusive(max) => member < max,
        }
    }
}

/// Members between `min` and `max` by name, walking in the set's order as Redis does (which
/// is name order when all scores are equal, the case BYLEX is meant for). As Redis, nothing is
/// found when the last member is below `min` or the first above `max`.
pub(super) fn by_lex<'z>(
    zset: &'z ZSet,
    min: Lex<'z>,
    max: Lex<'z>,
    reverse: bool,
) -> Box<dyn Iterator<Item = (&'z [u8], f64)> + 'z> {
    let last_above_min = zset
        .iter()
        .next_back()
        .is_some_and(|(m, _)| min.at_least(m));
    let first_below_max = zset.iter().next().is_some_and(|(m, _)| max.at_most(m));
    if !(last_above_min && first_below_max) {
        return Box::new(std::iter::empty());
    }
    if reverse {
        Box::new(
            zset.iter()
                .rev()
                .skip_while(move |(m, _)| !max.at_most(m))
                .take_while(move |(m, _)| min.at_least(m)),
        )
    } else {
        Box::new(
            zset.iter()
                .skip_while(move |(m, _)| !min.at_least(m))
                .take_while(move |(m, _)| max.at_most(m)),
        )
    }
}
