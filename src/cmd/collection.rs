//! What the collection families (lists, sets, sorted sets, hashes) share: reaching a value of
//! the right type, removing a collection its command emptied, rank ranges, the *SCAN options,
//! and Redis's way of writing scores.

use super::args::{int, keyword, Args, Items};
use super::errors::*;
use super::Ctx;
use crate::protocol::{Reply, Request};
use crate::store::Value;
use std::time::Duration;

/// A blocking command's timeout in seconds, as Redis reads it (a float, rounded up to whole
/// milliseconds); None for 0, which waits for as long as it takes. A timeout that rounds to 0
/// from below (-0.0001) is 0, as in Redis.
pub(super) fn parse_timeout(arg: &[u8], now: u64) -> Result<Option<Duration>, CmdError> {
    let seconds = std::str::from_utf8(arg)
        .ok()
        .and_then(|text| text.parse::<f64>().ok())
        .filter(|seconds| !seconds.is_nan())
        .ok_or(TIMEOUT_NOT_FLOAT)?;
    let millis = (seconds * 1000.0).ceil();
    if millis > i64::MAX as f64 {
        return Err(TIMEOUT_RANGE.into());
    }
    if millis < 0.0 {
        return Err(TIMEOUT_NEGATIVE.into());
    }
    let millis = millis as u64;
    if millis > (i64::MAX as u64).saturating_sub(now) {
        return Err(TIMEOUT_RANGE.into());
    }
    Ok((millis > 0).then(|| Duration::from_millis(millis)))
}

/// BLPOP, BRPOP, BZPOPMIN and BZPOPMAX: `key [key ...] timeout`.
struct BlockingPop<'a> {
    keys: Items<'a>,
    timeout: Option<Duration>,
}

impl<'a> BlockingPop<'a> {
    /// A timeout from `now`.
    fn parse(request: Request<'a>, now: u64) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let keys = args.items_but_last(1);
        Ok(BlockingPop {
            keys,
            timeout: parse_timeout(args.required()?, now)?,
        })
    }
}

/// A blocking pop (`BlockingPop`): `pop` tries each key in turn
/// and, at the first that had something, writes the reply and says so; that pop is logged as
/// `logged_as` on its key, so that the log and replicas never see a pop wait. With nothing to
/// pop, the client waits for a value that `serves` (inside EXEC: a null reply at once), and
/// nothing is logged.
pub(super) fn pop_or_block(
    ctx: &mut Ctx,
    request: Request,
    logged_as: &[u8],
    serves: fn(&Value) -> bool,
    mut pop: impl FnMut(&mut Ctx, &[u8]) -> Result<bool, CmdError>,
) -> CmdResult {
    let BlockingPop { keys, timeout } = BlockingPop::parse(request, ctx.now)?;
    for key in keys.iter() {
        if pop(ctx, key)? {
            ctx.note_effect([logged_as, key]);
            ctx.log_effects_only();
            return Ok(());
        }
    }
    ctx.log_effects_only();
    if ctx.may_block() {
        let keys = keys.iter().map(<[u8]>::to_vec).collect();
        ctx.block_on(&request, keys, timeout, serves, Reply::null_array);
    } else {
        ctx.reply.null_array();
    }
    Ok(())
}

/// Runs `f` on the live value at `key` (None if there is none), write-locked; if that leaves
/// an empty collection, the key goes, as in Redis, where no key holds an empty collection.
pub(super) fn modify<R>(
    ctx: &Ctx,
    key: &[u8],
    f: impl FnOnce(Option<&mut Value>) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    let (result, emptied) = ctx.db().get_mut(key, ctx.now, |value| match value {
        Some(value) => {
            let result = f(Some(&mut *value));
            (result, value.is_empty_collection())
        }
        None => (f(None), false),
    });
    if emptied {
        ctx.db().remove_if(key, ctx.now, Value::is_empty_collection);
    }
    result
}

/// Runs `f` on the value at `key`, creating it with `create` if there is none. `f` must leave
/// a collection it was given empty non-empty.
pub(super) fn upsert<R>(
    ctx: &Ctx,
    key: &[u8],
    create: impl FnOnce() -> Value,
    f: impl FnOnce(&mut Value) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    let create = || Ok::<_, CmdError>(create());
    let (result, emptied) = ctx.db().get_or_create(key, ctx.now, create, |value, _| {
        let result = f(value);
        (result, value.is_empty_collection())
    })?;
    // A command that fails on a key it just created (an invalid argument found late) leaves
    // nothing behind.
    if emptied {
        ctx.db().remove_if(key, ctx.now, Value::is_empty_collection);
    }
    result
}

/// Redis's rank range: negative positions count from the end; None when nothing is in it.
pub(super) fn rank_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + len
    } else {
        stop.min(len - 1)
    };
    (start <= stop && start < len).then_some((start as usize, stop as usize))
}

/// SPOP, SRANDMEMBER, ZPOPMIN and ZPOPMAX key [count]: `count` read as each reads it; more
/// words are a syntax error.
pub(super) struct KeyCount<'a, T> {
    pub(super) key: &'a [u8],
    pub(super) count: Option<T>,
}

impl<'a, T> KeyCount<'a, T> {
    pub(super) fn parse(
        request: Request<'a>,
        count: impl FnOnce(&[u8]) -> Result<T, CmdError>,
    ) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let count = match args.remaining() {
            0 => None,
            1 => Some(count(args.required()?)?),
            _ => return Err(SYNTAX.into()),
        };
        Ok(KeyCount { key, count })
    }
}

/// A count that must not be negative, as LPOP, SPOP and ZPOPMIN read it.
pub(super) fn parse_count(arg: &[u8]) -> Result<usize, CmdError> {
    let count = int(arg, NOT_POSITIVE)?;
    usize::try_from(count).map_err(|_| NOT_POSITIVE.into())
}

/// What a collection scan's options ask for.
pub(super) struct ScanOptions<'a> {
    pub(super) pattern: Option<&'a [u8]>,
    pub(super) count: usize,
    /// HSCAN's NOVALUES (Redis 7.4) or ZSCAN's NOSCORES (Redis 8): the members alone.
    pub(super) members_only: bool,
}

/// Which scan reads the options: HSCAN takes NOVALUES and ZSCAN NOSCORES.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Scanned {
    Set,
    Hash,
    ZSet,
}

/// Redis's COUNT when none is given.
const SCAN_COUNT: usize = 10;

#[derive(Clone, Copy)]
enum ScanOption {
    NoValues,
    NoScores,
    Match,
    Count,
}

/// SSCAN, HSCAN and ZSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES | NOSCORES]. A
/// small collection, packed as Redis's listpacks and intsets are, is answered in one page
/// (cursor 0); a larger one a page of about COUNT elements at a time, with Redis's promise that
/// an element present throughout is returned at least once (see `store/dense.rs`).
pub(super) struct Scan<'a> {
    pub(super) key: &'a [u8],
    pub(super) cursor: u64,
    /// Redis reads the cursor, then looks the key up, then reads the options: their error is
    /// given only for a collection of the right type.
    pub(super) options: Result<ScanOptions<'a>, CmdError>,
}

impl<'a> Scan<'a> {
    pub(super) fn parse(request: Request<'a>, scanned: Scanned) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let cursor = std::str::from_utf8(args.required()?)
            .ok()
            .and_then(|text| text.parse::<u64>().ok())
            .ok_or(INVALID_CURSOR)?;
        Ok(Scan {
            key,
            cursor,
            options: scan_options(args, scanned),
        })
    }
}

fn scan_options(mut args: Args, scanned: Scanned) -> Result<ScanOptions, CmdError> {
    const OPTIONS: &[(&str, ScanOption)] = &[
        ("NOVALUES", ScanOption::NoValues),
        ("NOSCORES", ScanOption::NoScores),
        ("MATCH", ScanOption::Match),
        ("COUNT", ScanOption::Count),
    ];
    let mut options = ScanOptions {
        pattern: None,
        count: SCAN_COUNT,
        members_only: false,
    };
    while let Some(word) = args.next() {
        let option = keyword(word, OPTIONS);
        match option {
            Some(ScanOption::NoValues) if scanned != Scanned::Hash => {
                return Err(NOVALUES_NOT_HSCAN.into())
            }
            Some(ScanOption::NoScores) if scanned != Scanned::ZSet => {
                return Err(NOSCORES_NOT_ZSCAN.into())
            }
            Some(ScanOption::NoValues | ScanOption::NoScores) => {
                options.members_only = true;
                continue;
            }
            _ => {}
        }
        let value = args.next_or(SYNTAX)?;
        match option {
            Some(ScanOption::Match) => options.pattern = Some(value).filter(|p| *p != b"*"),
            Some(ScanOption::Count) => {
                let count = int(value, NOT_INTEGER)?;
                if count < 1 {
                    return Err(SYNTAX.into());
                }
                options.count = usize::try_from(count).unwrap_or(usize::MAX);
            }
            _ => return Err(SYNTAX.into()),
        }
    }
    Ok(options)
}

pub(super) fn matches(pattern: Option<&[u8]>, member: &[u8]) -> bool {
    pattern.is_none_or(|pattern| crate::store::glob_match(pattern, member, false))
}

/// A score as Redis 8 writes it: the shortest digits that read back the same, laid out as
/// `%.17g` lays them out (exponent form below 1e-4 and from 1e17). Redis 7.0 printed 17
/// significant digits instead (0.1 as 0.10000000000000001).
pub(super) fn format_score(score: f64) -> String {
    if score.is_infinite() {
        return if score > 0.0 { "inf" } else { "-inf" }.into();
    }
    if score == 0.0 {
        return if score.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let scientific = format!("{score:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..17).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs());
    }
    format!("{score}")
}

pub(super) fn reply_score(ctx: &mut Ctx, score: f64) {
    let text = format_score(score);
    ctx.reply.double_text(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_as_redis_8_writes_them() {
        for (score, text) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(format_score(score), text);
        }
    }

    /// The wait a blocking command asks for: whole milliseconds, rounded up, so that it never
    /// ends sooner than the client asked; 0 (or what rounds to it from below) for no limit.
    #[test]
    fn timeouts_round_up_to_whole_milliseconds() {
        let timeout = |text: &str| parse_timeout(text.as_bytes(), 0);
        assert_eq!(timeout("0.3").unwrap(), Some(Duration::from_millis(300)));
        assert_eq!(timeout("5").unwrap(), Some(Duration::from_secs(5)));
        assert_eq!(timeout("0.0001").unwrap(), Some(Duration::from_millis(1)));
        assert_eq!(
            timeout("1.0001").unwrap(),
            Some(Duration::from_millis(1001))
        );
        assert_eq!(timeout("0").unwrap(), None);
        assert_eq!(timeout("-0.0001").unwrap(), None);
        assert!(timeout("-1").is_err());
        assert!(timeout("x").is_err());
        assert!(timeout("nan").is_err());
        assert!(timeout("9223372036854775807").is_err());
        // The deadline, now plus the wait, must fit Redis's milliseconds.
        let now = i64::MAX as u64 - 1000;
        assert_eq!(
            parse_timeout(b"1", now).unwrap(),
            Some(Duration::from_secs(1))
        );
        assert!(parse_timeout(b"1", now + 1).is_err());
    }

    #[test]
    fn rank_ranges_as_redis() {
        assert_eq!(rank_range(0, -1, 3), Some((0, 2)));
        assert_eq!(rank_range(-100, 100, 3), Some((0, 2)));
        assert_eq!(rank_range(2, 1, 3), None);
        assert_eq!(rank_range(3, 5, 3), None);
        assert_eq!(rank_range(0, -4, 3), None);
        assert_eq!(rank_range(0, 0, 0), None);
    }
}
