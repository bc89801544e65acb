//! Reading arguments: one reader, `Args`, for every command, in the spirit of dragonfly's
//! `CmdArgParser`, and Redis's strict number syntax.
//!
//! A command parses its request into a struct of its own (`Reserve`, `Insert`, ...) with `Args`,
//! then a function applies the struct. Each read names the error to give, so the order of the
//! reads is the order of precedence of the errors, which is how RedisBloom's and Redis's exact
//! error order is kept: the first error ends the parse (every read returns a `Result`, and `?`
//! latches the first that fails).
//!
//! - Positional words: `required()` (missing: the command's arity error), `next_or(error)`.
//! - Optional words: `next()`, `peek()`; keywords, matched without regard to case:
//!   `check("KW")` (taken if it is the keyword), `one_of(&[("KW", value), ...])` (taken if it is
//!   one of them, giving its value: a `match` on keywords).
//! - Numbers: `int_in(range, error)` reads the next word as an integer of the range's type;
//!   `int`, `int_in`, `float` and `within` convert a word already read, each with its error.
//! - The rest: `items()` (a cheap view of the words left, to keep in the struct), `rest()`;
//!   `finish(error)` where nothing may be left over, `words_at_most(n)` for an arity error that
//!   comes before any other check.
//! - Options Redis applies one by one as it reads them (HELLO, REPLCONF): `UpToError`, the
//!   options read before the first wrong one, and its error.
//!
//! No other file of `cmd` reads a request's words itself (`request.arg(n)`): the test at the
//! end of this file fails on one.

use super::errors::{CmdError, CmdResult};
use crate::protocol::Request;
use std::ops::RangeInclusive;

pub(super) use crate::protocol::parse_i64;

/// Redis's strict float syntax: what strtod accepts in full, with no leading space and no NaN.
pub(super) fn parse_f64(text: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(text).ok()?;
    let first = text.bytes().next()?;
    if first.is_ascii_whitespace() {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    (!value.is_nan()).then_some(value)
}

pub(super) fn is(arg: &[u8], keyword: &str) -> bool {
    arg.eq_ignore_ascii_case(keyword.as_bytes())
}

/// `arg` as an integer in Redis's syntax, else `error`.
pub(super) fn int(arg: &[u8], error: impl Into<CmdError>) -> Result<i64, CmdError> {
    parse_i64(arg).ok_or_else(|| error.into())
}

/// `arg` as an integer of `range`'s type inside it; `error` if it is not an integer or outside.
pub(super) fn int_in<T>(
    arg: &[u8],
    range: RangeInclusive<T>,
    error: impl Into<CmdError>,
) -> Result<T, CmdError>
where
    T: TryFrom<i64> + PartialOrd,
{
    parse_i64(arg)
        .and_then(|value| T::try_from(value).ok())
        .filter(|value| range.contains(value))
        .ok_or_else(|| error.into())
}

/// `arg` as a float in Redis's syntax, else `error`.
pub(super) fn float(arg: &[u8], error: impl Into<CmdError>) -> Result<f64, CmdError> {
    parse_f64(arg).ok_or_else(|| error.into())
}

/// `value` if inside `range`, else `error`: a range check with an error of its own, after the
/// syntax check.
pub(super) fn within<T: PartialOrd>(
    value: T,
    range: RangeInclusive<T>,
    error: impl Into<CmdError>,
) -> Result<T, CmdError> {
    match range.contains(&value) {
        true => Ok(value),
        false => Err(error.into()),
    }
}

/// The value `arg` names among `choices` (keyword, value), matched without regard to case.
pub(super) fn keyword<T: Copy>(arg: &[u8], choices: &[(&str, T)]) -> Option<T> {
    choices
        .iter()
        .find(|(name, _)| is(arg, name))
        .map(|&(_, value)| value)
}

/// The command's name as the client sent it: the request's first word, which dispatch looks up.
pub(super) fn command_name(request: Request<'_>) -> &[u8] {
    request.arg(0)
}

/// Reads a request's words in order; see the top of this file.
pub(super) struct Args<'a> {
    request: Request<'a>,
    next: usize,
}

impl<'a> Args<'a> {
    /// Reads from the word at `start` (1 is the first after the command's name).
    pub(super) fn new(request: Request<'a>, start: usize) -> Self {
        Args {
            request,
            next: start,
        }
    }

    /// The command's name as the client sent it.
    pub(super) fn name(&self) -> &'a [u8] {
        command_name(self.request)
    }

    /// Words in the request, the name included.
    pub(super) fn word_count(&self) -> usize {
        self.request.len()
    }

    /// Words not read yet.
    pub(super) fn remaining(&self) -> usize {
        self.request.len().saturating_sub(self.next)
    }

    /// The next word, left unread.
    pub(super) fn peek(&self) -> Option<&'a [u8]> {
        (self.next < self.request.len()).then(|| self.request.arg(self.next))
    }

    /// The next word, if there is one.
    pub(super) fn next(&mut self) -> Option<&'a [u8]> {
        let arg = self.peek()?;
        self.next += 1;
        Some(arg)
    }

    /// The next word, or `missing`.
    pub(super) fn next_or(&mut self, missing: impl Into<CmdError>) -> Result<&'a [u8], CmdError> {
        self.next().ok_or_else(|| missing.into())
    }

    /// The next word, or the command's arity error: a positional argument (which the arity
    /// checked before the command ran guarantees) or a keyword's value.
    pub(super) fn required(&mut self) -> Result<&'a [u8], CmdError> {
        match self.next() {
            Some(arg) => Ok(arg),
            None => Err(self.arity_error()),
        }
    }

    /// The next word as an integer of `range`'s type inside it; `error` if missing, not an
    /// integer or outside.
    pub(super) fn int_in<T>(
        &mut self,
        range: RangeInclusive<T>,
        error: impl Into<CmdError>,
    ) -> Result<T, CmdError>
    where
        T: TryFrom<i64> + PartialOrd,
    {
        match self.next() {
            Some(arg) => int_in(arg, range, error),
            None => Err(error.into()),
        }
    }

    /// The next word as an integer in Redis's syntax; `error` if missing or not one.
    pub(super) fn int(&mut self, error: impl Into<CmdError>) -> Result<i64, CmdError> {
        match self.next() {
            Some(arg) => int(arg, error),
            None => Err(error.into()),
        }
    }

    /// Whether the next word is `keyword` (in any case); taken if it is.
    pub(super) fn check(&mut self, keyword: &str) -> bool {
        let found = self.peek().is_some_and(|arg| is(arg, keyword));
        self.next += usize::from(found);
        found
    }

    /// The value of the keyword the next word is among `choices` (keyword, value), in any case;
    /// taken if it is one of them.
    pub(super) fn one_of<T: Copy>(&mut self, choices: &[(&str, T)]) -> Option<T> {
        let found = keyword(self.peek()?, choices)?;
        self.next += 1;
        Some(found)
    }

    /// A reader just after the first `keyword` among the words left, if it is there: RedisBloom
    /// looks some options up anywhere among the arguments (its `RMUtil_ArgIndex`).
    pub(super) fn after(&self, keyword: &str) -> Option<Args<'a>> {
        (self.next..self.request.len())
            .find(|&at| is(self.request.arg(at), keyword))
            .map(|at| Args::new(self.request, at + 1))
    }

    /// The words left, as items to keep: the reader is at the end after.
    pub(super) fn items(&mut self) -> Items<'a> {
        self.items_but_last(0)
    }

    /// The words left but the last `kept`, as items to keep: the reader is at those after (a
    /// blocking pop's keys, before its timeout).
    pub(super) fn items_but_last(&mut self, kept: usize) -> Items<'a> {
        let start = self.next.min(self.request.len());
        let end = self.request.len().saturating_sub(kept).max(start);
        self.next = end;
        Items {
            request: self.request,
            start,
            end,
        }
    }

    /// The next `count` words (or as many as are left), as items to keep: the reader is at
    /// those after (the keys `numkeys` counts, before the options).
    pub(super) fn take_items(&mut self, count: usize) -> Items<'a> {
        let start = self.next.min(self.request.len());
        let end = start.saturating_add(count).min(self.request.len());
        self.next = end;
        Items {
            request: self.request,
            start,
            end,
        }
    }

    /// The words left, one by one: the reader is at the end after.
    pub(super) fn rest(&mut self) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.items().iter()
    }

    /// `extra` if any word is left.
    pub(super) fn finish(&self, extra: impl Into<CmdError>) -> CmdResult {
        match self.remaining() {
            0 => Ok(()),
            _ => Err(extra.into()),
        }
    }

    /// The arity error if the request has more than `words` words, its name included: for the
    /// commands that declare a minimum arity but check a maximum before anything else.
    pub(super) fn words_at_most(&self, words: usize) -> CmdResult {
        match self.request.len() <= words {
            true => Ok(()),
            false => Err(self.arity_error()),
        }
    }

    /// Redis's "wrong number of arguments" error, naming the command in lower case as its
    /// table does (the request's name matched it without regard to case).
    #[cold]
    pub(super) fn arity_error(&self) -> CmdError {
        CmdError::arity(&String::from_utf8_lossy(self.name()).to_ascii_lowercase())
    }
}

/// The words at the end of a request, kept as a view: items, members, URLs, ids.
#[derive(Clone, Copy)]
pub(super) struct Items<'a> {
    request: Request<'a>,
    start: usize,
    end: usize,
}

impl<'a> Items<'a> {
    pub(super) fn len(&self) -> usize {
        self.end - self.start
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        self.request.args().take(self.end).skip(self.start)
    }

    /// The word at `index` among these, if there is one.
    pub(super) fn get(&self, index: usize) -> Option<&'a [u8]> {
        (index < self.len()).then(|| self.request.arg(self.start + index))
    }

    /// The request's words before these: its name, key and options, as sent.
    pub(super) fn head(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        self.request.args().take(self.start)
    }
}

/// Options read in order up to the first wrong one, for the commands Redis applies option by
/// option as it reads them (HELLO authenticates at its AUTH, REPLCONF takes each setting): the
/// handler applies `options`, then fails with `error`, so that effects and errors come in
/// Redis's order although the request is read before anything is applied.
pub(super) struct UpToError<T> {
    pub(super) options: Vec<T>,
    pub(super) error: Option<CmdError>,
}

impl<T> UpToError<T> {
    /// Reads options with `one` while words are left, up to the first error, or up to an
    /// option after which Redis reads nothing more (`last`).
    pub(super) fn read<'a>(
        args: &mut Args<'a>,
        mut one: impl FnMut(&mut Args<'a>) -> Result<T, CmdError>,
        last: impl Fn(&T) -> bool,
    ) -> Self {
        let mut options = Vec::new();
        while args.remaining() > 0 {
            match one(args) {
                Ok(option) => {
                    let stop = last(&option);
                    options.push(option);
                    if stop {
                        break;
                    }
                }
                Err(error) => {
                    return UpToError {
                        options,
                        error: Some(error),
                    }
                }
            }
        }
        UpToError {
            options,
            error: None,
        }
    }

    /// The error where reading stopped, for the handler to give once it applied the options.
    pub(super) fn result(self) -> CmdResult {
        self.error.map_or(Ok(()), Err)
    }
}

/// `key`: the words of a command on one key and nothing else.
pub(super) struct Key<'a> {
    pub(super) key: &'a [u8],
}

impl<'a> Key<'a> {
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(Key {
            key: args.required()?,
        })
    }

    /// The key and nothing else, for a command declared with any arity (as RedisBloom declares
    /// some) that checks its own: more words, or none, are its arity error.
    pub(super) fn parse_alone(request: Request<'a>) -> Result<Self, CmdError> {
        Args::new(request, 1).words_at_most(2)?;
        Key::parse(request)
    }
}

/// `key item`: ADD, EXISTS, DEL, COUNT of a filter.
pub(super) struct KeyItem<'a> {
    pub(super) key: &'a [u8],
    pub(super) item: &'a [u8],
}

impl<'a> KeyItem<'a> {
    #[inline]
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(KeyItem {
            key: args.required()?,
            item: args.required()?,
        })
    }
}

/// `key item [item ...]`: MADD, MEXISTS, MDEL of a filter, and the like.
pub(super) struct KeyItems<'a> {
    pub(super) key: &'a [u8],
    pub(super) items: Items<'a>,
}

impl<'a> KeyItems<'a> {
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(KeyItems {
            key: args.required()?,
            items: args.items(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::Range;

    /// A request of `words`, kept alive by the two vectors it borrows.
    fn words(words: &[&str]) -> (Vec<u8>, Vec<Range<usize>>) {
        let mut base = Vec::new();
        let mut ranges = Vec::new();
        for word in words {
            let start = base.len();
            base.extend_from_slice(word.as_bytes());
            ranges.push(start..base.len());
        }
        (base, ranges)
    }

    #[test]
    fn floats_like_strtod() {
        for good in [
            &b"0.01"[..],
            b".01",
            b"1e-2",
            b"1e-300",
            b"inf",
            b"-1",
            b"1.0",
            b"+1",
        ] {
            assert!(parse_f64(good).is_some(), "{good:?}");
        }
        for bad in [&b"abc"[..], b"", b"0.01abc", b" 0.01", b"nan", b"0.01 "] {
            assert_eq!(parse_f64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn numbers_are_redis_integers_in_range_each_with_its_error() {
        assert_eq!(int(b"-12", "bad"), Ok(-12));
        for bad in [
            &b"+1"[..],
            b" 1",
            b"1 ",
            b"01",
            b"-0",
            b"",
            b"1.0",
            b"9223372036854775808",
        ] {
            assert_eq!(int(bad, "bad"), Err(CmdError::Static("bad")), "{bad:?}");
        }
        assert_eq!(int_in::<u32>(b"7", 1..=7, "range"), Ok(7));
        assert_eq!(int_in::<u32>(b"8", 1..=7, "range"), Err("range".into()));
        assert_eq!(int_in::<u32>(b"-1", 0..=7, "range"), Err("range".into()));
        assert_eq!(int_in::<u64>(b"x", 0..=7, "range"), Err("range".into()));
        assert_eq!(float(b"0.5", "bad"), Ok(0.5));
        assert_eq!(float(b"nan", "bad"), Err("bad".into()));
        assert_eq!(within(0.5, 0.0..=1.0, "outside"), Ok(0.5));
        assert_eq!(within(2, 0..=1, "outside"), Err("outside".into()));
    }

    #[test]
    fn positional_words_then_keywords_in_any_case() {
        let (base, ranges) = words(&[
            "BF.Reserve",
            "k",
            "0.01",
            "100",
            "expansion",
            "4",
            "NonScaling",
        ]);
        let mut args = Args::new(Request::new(&base, &ranges), 1);
        assert_eq!(args.required(), Ok(&b"k"[..]));
        assert_eq!(
            args.next_or("missing").map(|w| float(w, "bad")),
            Ok(Ok(0.01))
        );
        assert_eq!(args.int_in(1..=100u64, "capacity"), Ok(100));
        assert_eq!(args.remaining(), 3);
        assert!(
            !args.check("NONSCALING"),
            "a keyword is only taken where it is"
        );
        assert_eq!(
            args.after("expansion").and_then(|mut at| at.next()),
            Some(&b"4"[..])
        );
        assert!(
            args.after("0.01").is_none(),
            "looked up among the words left"
        );
        assert!(args.check("EXPANSION"));
        assert_eq!(args.int_in(0..=3u32, "range"), Err("range".into()));
        assert_eq!(args.one_of(&[("EXPANSION", 1), ("NONSCALING", 2)]), Some(2));
        assert_eq!(args.one_of(&[("EXPANSION", 1)]), None);
        assert_eq!(args.peek(), None);
        assert_eq!(args.finish("extra"), Ok(()));
    }

    #[test]
    fn missing_words_give_the_error_named_or_the_commands_arity_error() {
        let (base, ranges) = words(&["CBF.Insert", "k"]);
        let mut args = Args::new(Request::new(&base, &ranges), 2);
        assert_eq!(args.next_or("no value"), Err("no value".into()));
        assert_eq!(args.int_in(0..=1i64, "no value"), Err("no value".into()));
        assert_eq!(
            args.required(),
            Err(CmdError::arity("cbf.insert")),
            "named as the table names it"
        );
        assert_eq!(args.words_at_most(2), Ok(()));
        assert_eq!(args.words_at_most(1), Err(CmdError::arity("cbf.insert")));
    }

    #[test]
    fn the_rest_is_items_and_what_is_left_over_is_an_error_where_nothing_may_be() {
        let (base, ranges) = words(&["BF.MADD", "k", "a", "b", "c"]);
        let request = Request::new(&base, &ranges);
        let mut args = Args::new(request, 1);
        assert_eq!(args.required(), Ok(&b"k"[..]));
        assert_eq!(args.finish("extra"), Err("extra".into()));
        let items = args.items();
        assert_eq!(items.len(), 3);
        assert_eq!(items.iter().collect::<Vec<_>>(), [&b"a"[..], b"b", b"c"]);
        assert_eq!(items.head().collect::<Vec<_>>(), [&b"BF.MADD"[..], b"k"]);
        assert_eq!(args.remaining(), 0);
        assert!(args.items().is_empty());
        assert_eq!(args.rest().count(), 0);
        let mut args = Args::new(request, 1);
        let keys = args.items_but_last(1);
        assert_eq!(keys.iter().collect::<Vec<_>>(), [&b"k"[..], b"a", b"b"]);
        assert_eq!((args.next(), args.next()), (Some(&b"c"[..]), None));
        let shape = KeyItems::parse(request).expect("key items");
        assert_eq!((shape.key, shape.items.len()), (&b"k"[..], 3));
        let shape = KeyItem::parse(request).expect("key item");
        assert_eq!((shape.key, shape.item), (&b"k"[..], &b"a"[..]));
    }

    #[test]
    fn options_up_to_the_first_wrong_one_then_its_error() {
        let (base, ranges) = words(&["HELLO", "a", "b", "x", "c", "d"]);
        let request = Request::new(&base, &ranges);
        let read = |args: &mut Args| match args.required()? {
            b"x" => Err(CmdError::Static("wrong")),
            word => Ok(word[0]),
        };
        let up_to = UpToError::read(&mut Args::new(request, 1), read, |_| false);
        assert_eq!(up_to.options, [b'a', b'b']);
        assert_eq!(up_to.result(), Err("wrong".into()));
        let mut args = Args::new(request, 1);
        let up_to = UpToError::read(&mut args, read, |&option| option == b'b');
        assert_eq!((up_to.options.len(), up_to.error), (2, None));
        assert_eq!(args.peek(), Some(&b"x"[..]), "nothing read after the last");
    }

    /// Files of `cmd` that still read words themselves while their conversion to `Args` is under
    /// way in another branch; the check fails once one no longer does, so the list stays true.
    const READING_WORDS_BEING_CONVERTED: &[&str] = &["scripting.rs"];

    /// The lines of one file's code (its tests module and comments left out) that read a request's
    /// words themselves: by position (`.arg(n)`), or every word after a position
    /// (`.args().skip(n)`, `.args().nth(n)`). A whole request taken as it is (logged, sized) is
    /// no reading of its words.
    fn reads_words(text: &str) -> Vec<String> {
        let mut found = Vec::new();
        for line in text.lines() {
            let code = line.trim();
            if code.ends_with("mod tests {") {
                break;
            }
            if code.starts_with("//") {
                continue;
            }
            if [".arg(", ".args().skip(", ".args().nth("]
                .iter()
                .any(|read| code.contains(read))
            {
                found.push(code.to_string());
            }
        }
        found
    }

    #[test]
    fn commands_read_their_words_with_args_only() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
        let mut direct = Vec::new();
        let mut converted = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("src/cmd") {
            let path = entry.expect("an entry").path();
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            if !name.ends_with(".rs") || name == "args.rs" || name == "tests.rs" {
                continue;
            }
            let found = reads_words(&std::fs::read_to_string(&path).expect("a source file"));
            match READING_WORDS_BEING_CONVERTED.contains(&name.as_str()) {
                true if found.is_empty() => converted.push(name),
                true => {}
                false => direct.extend(found.iter().map(|line| format!("src/cmd/{name}: {line}"))),
            }
        }
        assert!(
            direct.is_empty(),
            "a command reads its words with args.rs's `Args`, not itself:\n{}",
            direct.join("\n")
        );
        assert!(
            converted.is_empty(),
            "no longer reading words itself, so off READING_WORDS_BEING_CONVERTED: {converted:?}"
        );
    }

    #[test]
    fn the_check_finds_words_read_directly() {
        assert_eq!(reads_words("let key = request.arg(1);").len(), 1);
        assert_eq!(reads_words("for key in request.args().skip(1) {").len(), 1);
        assert_eq!(reads_words("ctx.note_effect(request.args());").len(), 0);
        assert_eq!(reads_words("    // request.arg(1) in a comment").len(), 0);
        assert_eq!(
            reads_words("#[cfg(test)]\nmod tests {\n    request.arg(0)\n}").len(),
            0
        );
    }
}
