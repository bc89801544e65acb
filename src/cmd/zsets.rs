//! Sorted sets: ZADD, ZINCRBY, ZCARD, ZSCORE, ZRANK, ZREVRANK, ZRANGE (by rank or score, either
//! way, with LIMIT and WITHSCORES), ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZREVRANGE, ZREM,
//! ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZPOPMIN, ZPOPMAX, BZPOPMIN, BZPOPMAX and ZSCAN, as Redis has them. Score
//! arithmetic is in f64, as in Redis, so a replayed ZINCRBY lands on the same score.

use super::args::{is, parse_f64};
use super::collection::*;
use super::errors::*;
use super::key_specs::*;
use super::spec::{
    bits, double, integer, key, pure_token, string, Arg, CommandSpec, Group, KeySpec,
};
use super::Ctx;
use crate::protocol::Request;
use crate::store::{Value, ZSet};

const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";

fn parse_score(arg: &[u8]) -> Result<f64, CmdError> {
    parse_f64(arg).ok_or_else(|| NOT_FLOAT.into())
}

fn read_zset<R>(ctx: &Ctx, key: &[u8], f: impl FnOnce(Option<&ZSet>) -> R) -> Result<R, CmdError> {
    ctx.db().get(key, ctx.now, |value| match value {
        None => Ok(f(None)),
        Some(Value::ZSet(zset)) => Ok(f(Some(zset))),
        Some(_) => Err(WRONGTYPE.into()),
    })
}

fn change_zset<R>(
    ctx: &Ctx,
    key: &[u8],
    f: impl FnOnce(&mut ZSet) -> Result<R, CmdError>,
) -> Result<Option<R>, CmdError> {
    modify(ctx, key, |value| match value {
        None => Ok(None),
        Some(Value::ZSet(zset)) => f(zset).map(Some),
        Some(_) => Err(WRONGTYPE.into()),
    })
}

#[derive(Default, Clone, Copy)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What adding one member did.
enum Added {
    New(f64),
    Updated(f64),
    Unchanged(f64),
    Skipped,
}

fn add_one(zset: &mut ZSet, flags: AddFlags, member: &[u8], score: f64) -> Result<Added, CmdError> {
    // -0 is stored as 0, as Redis's compact encoding does, but answered as computed.
    match zset.score(member) {
        Some(current) => {
            if flags.nx {
                return Ok(Added::Skipped);
            }
            let new = if flags.incr { current + score } else { score };
            if new.is_nan() {
                return Err(NAN_SCORE.into());
            }
            if (flags.lt && new >= current) || (flags.gt && new <= current) {
                return Ok(Added::Skipped);
            }
            if new == current {
                return Ok(Added::Unchanged(new));
            }
            zset.insert(member, new + 0.0);
            Ok(Added::Updated(new))
        }
        None if flags.xx => Ok(Added::Skipped),
        None => {
            zset.insert(member, score + 0.0);
            Ok(Added::New(score))
        }
    }
}

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...], checked in Redis's
/// order: syntax, incompatible options, INCR's single pair, every score, then the key.
pub(super) fn zadd(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut flags = AddFlags::default();
    let mut at = 2;
    while at < request.len() {
        let arg = request.arg(at);
        let flag = match () {
            _ if is(arg, "NX") => &mut flags.nx,
            _ if is(arg, "XX") => &mut flags.xx,
            _ if is(arg, "GT") => &mut flags.gt,
            _ if is(arg, "LT") => &mut flags.lt,
            _ if is(arg, "CH") => &mut flags.ch,
            _ if is(arg, "INCR") => &mut flags.incr,
            _ => break,
        };
        *flag = true;
        at += 1;
    }
    let elements = request.len() - at;
    if elements % 2 == 1 || elements == 0 {
        return Err(SYNTAX.into());
    }
    if flags.nx && flags.xx {
        return Err("ERR XX and NX options at the same time are not compatible".into());
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Err("ERR GT, LT, and/or NX options at the same time are not compatible".into());
    }
    if flags.incr && elements > 2 {
        return Err("ERR INCR option supports a single increment-element pair".into());
    }
    let pairs = (at..request.len())
        .step_by(2)
        .map(|i| Ok((parse_score(request.arg(i))?, request.arg(i + 1))))
        .collect::<Result<Vec<_>, CmdError>>()?;
    let key = request.arg(1);
    let apply = |zset: &mut ZSet| {
        let (mut added, mut updated, mut last) = (0, 0, None);
        for &(score, member) in &pairs {
            match add_one(zset, flags, member, score)? {
                Added::New(score) => (added, last) = (added + 1, Some(score)),
                Added::Updated(score) => (updated, last) = (updated + 1, Some(score)),
                Added::Unchanged(score) => last = Some(score),
                Added::Skipped => last = None,
            }
        }
        Ok::<_, CmdError>((added, updated, last))
    };
    let outcome = if flags.xx {
        // XX never creates the key.
        change_zset(ctx, key, apply)?.unwrap_or((0, 0, None))
    } else {
        let create = || Value::ZSet(Box::default());
        upsert(ctx, key, create, |value| match value {
            Value::ZSet(zset) => apply(zset),
            _ => Err(WRONGTYPE.into()),
        })?
    };
    let (added, updated, last) = outcome;
    match (flags.incr, last) {
        (true, Some(score)) => reply_score(ctx, score),
        (true, None) => ctx.reply.null(),
        (false, _) => ctx.reply.int(added + if flags.ch { updated } else { 0 }),
    }
    Ok(())
}

pub(super) fn zincrby(ctx: &mut Ctx, request: Request) -> CmdResult {
    let by = parse_score(request.arg(2))?;
    let member = request.arg(3);
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    let create = || Value::ZSet(Box::default());
    let added = upsert(ctx, request.arg(1), create, |value| match value {
        Value::ZSet(zset) => add_one(zset, flags, member, by),
        _ => Err(WRONGTYPE.into()),
    })?;
    match added {
        Added::New(score) | Added::Updated(score) | Added::Unchanged(score) => {
            reply_score(ctx, score)
        }
        Added::Skipped => ctx.reply.null(),
    }
    Ok(())
}

pub(super) fn zcard(ctx: &mut Ctx, request: Request) -> CmdResult {
    let len = read_zset(ctx, request.arg(1), |zset| zset.map_or(0, ZSet::len))?;
    ctx.reply.int(len as i64);
    Ok(())
}

pub(super) fn zscore(ctx: &mut Ctx, request: Request) -> CmdResult {
    let member = request.arg(2);
    match read_zset(ctx, request.arg(1), |zset| {
        zset.and_then(|z| z.score(member))
    })? {
        Some(score) => reply_score(ctx, score),
        None => ctx.reply.null(),
    }
    Ok(())
}

fn rank(ctx: &mut Ctx, request: Request, reverse: bool) -> CmdResult {
    let member = request.arg(2);
    let rank = read_zset(ctx, request.arg(1), |zset| {
        let zset = zset?;
        let rank = zset.rank(member)?;
        Some(if reverse { zset.len() - 1 - rank } else { rank })
    })?;
    match rank {
        Some(rank) => ctx.reply.int(rank as i64),
        None => ctx.reply.null(),
    }
    Ok(())
}

pub(super) fn zrank(ctx: &mut Ctx, request: Request) -> CmdResult {
    rank(ctx, request, false)
}

pub(super) fn zrevrank(ctx: &mut Ctx, request: Request) -> CmdResult {
    rank(ctx, request, true)
}

/// One end of a score range: `(` before the number makes it exclusive.
#[derive(Clone, Copy)]
struct Bound {
    score: f64,
    exclusive: bool,
}

impl Bound {
    fn parse(arg: &[u8]) -> Result<Bound, CmdError> {
        let (text, exclusive) = match arg {
            [b'(', rest @ ..] => (rest, true),
            _ => (arg, false),
        };
        // Read as strtod reads it: leading space skipped, and nothing at all is 0.
        let score = match text.trim_ascii_start() {
            _ if text.is_empty() => 0.0,
            text => parse_f64(text).ok_or(MIN_MAX_FLOAT)?,
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
fn by_score(
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
enum Lex<'a> {
    Lowest,
    Highest,
    Inclusive(&'a [u8]),
    Exclusive(&'a [u8]),
}

impl<'a> Lex<'a> {
    fn parse(arg: &'a [u8]) -> Result<Lex<'a>, CmdError> {
        match arg {
            b"-" => Ok(Lex::Lowest),
            b"+" => Ok(Lex::Highest),
            [b'[', rest @ ..] => Ok(Lex::Inclusive(rest)),
            [b'(', rest @ ..] => Ok(Lex::Exclusive(rest)),
            _ => Err("ERR min or max not valid string range item".into()),
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
fn by_lex<'z>(
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

#[derive(Clone, Copy, PartialEq)]
enum RangeBy {
    Auto,
    Rank,
    Score,
    Lex,
}

/// What a ZRANGE selects, its arguments read.
enum Selection<'a> {
    Ranks(i64, i64),
    Scores(Bound, Bound),
    Names(Lex<'a>, Lex<'a>),
}

/// The ZRANGE family: `by` and `reverse` are what the command fixes (Auto and None for ZRANGE,
/// which takes them as options). Checked in Redis's order: options, their conflicts, the
/// range, then the key.
fn range(ctx: &mut Ctx, request: Request, mut by: RangeBy, mut reverse: Option<bool>) -> CmdResult {
    let (mut withscores, mut limit) = (false, None);
    let mut at = 4;
    while at < request.len() {
        let arg = request.arg(at);
        let left = request.len() - at - 1;
        if is(arg, "WITHSCORES") {
            withscores = true;
        } else if is(arg, "LIMIT") && left >= 2 {
            let offset = parse_rank(request.arg(at + 1))?;
            let count = parse_rank(request.arg(at + 2))?;
            limit = Some((offset, count));
            at += 2;
        } else if reverse.is_none() && is(arg, "REV") {
            reverse = Some(true);
        } else if by == RangeBy::Auto && is(arg, "BYSCORE") {
            by = RangeBy::Score;
        } else if by == RangeBy::Auto && is(arg, "BYLEX") {
            by = RangeBy::Lex;
        } else {
            return Err(SYNTAX.into());
        }
        at += 1;
    }
    let reverse = reverse.unwrap_or(false);
    if limit.is_some_and(|(_, count)| count != -1) && matches!(by, RangeBy::Auto | RangeBy::Rank) {
        return Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
                .into(),
        );
    }
    if withscores && by == RangeBy::Lex {
        return Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX".into());
    }
    // Reversed score and name ranges name their upper end first.
    let (from, to) = match (request.arg(2), request.arg(3)) {
        (from, to) if reverse && matches!(by, RangeBy::Score | RangeBy::Lex) => (to, from),
        ends => ends,
    };
    let selection = match by {
        RangeBy::Score => Selection::Scores(Bound::parse(from)?, Bound::parse(to)?),
        RangeBy::Lex => Selection::Names(Lex::parse(from)?, Lex::parse(to)?),
        RangeBy::Auto | RangeBy::Rank => Selection::Ranks(parse_rank(from)?, parse_rank(to)?),
    };
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    let resp3 = reply.is_resp3();
    db.get(request.arg(1), ctx.now, |value| {
        let zset = match value {
            None => {
                reply.array(0);
                return Ok(());
            }
            Some(Value::ZSet(zset)) => zset,
            Some(_) => return Err(CmdError::from(WRONGTYPE)),
        };
        let (offset, count) = limit.unwrap_or((0, -1));
        // As Redis: a negative offset selects nothing, a negative count everything.
        let offset = usize::try_from(offset).ok();
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        let found: Vec<(&[u8], f64)> = match (selection, offset) {
            (Selection::Ranks(start, stop), _) => match rank_range(start, stop, zset.len()) {
                None => Vec::new(),
                Some((first, last)) if reverse => zset
                    .iter()
                    .rev()
                    .skip(first)
                    .take(last - first + 1)
                    .collect(),
                Some((first, last)) => zset.iter().skip(first).take(last - first + 1).collect(),
            },
            (_, None) => Vec::new(),
            (Selection::Scores(min, max), Some(offset)) => by_score(zset, min, max, reverse)
                .skip(offset)
                .take(count)
                .collect(),
            (Selection::Names(min, max), Some(offset)) => by_lex(zset, min, max, reverse)
                .skip(offset)
                .take(count)
                .collect(),
        };
        write_members(reply, &found, withscores, resp3);
        Ok(())
    })
}

/// Members, with their scores if asked: flat under RESP2, as pairs under RESP3.
fn write_members(
    reply: &mut crate::protocol::Reply,
    found: &[(&[u8], f64)],
    withscores: bool,
    resp3: bool,
) {
    if !withscores {
        reply.array(found.len());
        found.iter().for_each(|(member, _)| reply.bulk(member));
        return;
    }
    reply.array(if resp3 { found.len() } else { found.len() * 2 });
    for (member, score) in found {
        if resp3 {
            reply.array(2);
        }
        reply.bulk(member);
        reply.double_text(format_score(*score).as_bytes());
    }
}

pub(super) fn zrange(ctx: &mut Ctx, request: Request) -> CmdResult {
    range(ctx, request, RangeBy::Auto, None)
}

pub(super) fn zrangebyscore(ctx: &mut Ctx, request: Request) -> CmdResult {
    range(ctx, request, RangeBy::Score, Some(false))
}

pub(super) fn zrevrangebyscore(ctx: &mut Ctx, request: Request) -> CmdResult {
    range(ctx, request, RangeBy::Score, Some(true))
}

pub(super) fn zrevrange(ctx: &mut Ctx, request: Request) -> CmdResult {
    range(ctx, request, RangeBy::Rank, Some(true))
}

pub(super) fn zrem(ctx: &mut Ctx, request: Request) -> CmdResult {
    let removed = change_zset(ctx, request.arg(1), |zset| {
        Ok(request.args().skip(2).filter(|m| zset.remove(m)).count())
    })?;
    ctx.reply.int(removed.unwrap_or(0) as i64);
    Ok(())
}

fn remove_all(zset: &mut ZSet, members: Vec<Box<[u8]>>) -> usize {
    members.iter().for_each(|member| _ = zset.remove(member));
    members.len()
}

pub(super) fn zremrangebyrank(ctx: &mut Ctx, request: Request) -> CmdResult {
    let start = parse_rank(request.arg(2))?;
    let stop = parse_rank(request.arg(3))?;
    let removed = change_zset(ctx, request.arg(1), |zset| {
        let Some((first, last)) = rank_range(start, stop, zset.len()) else {
            return Ok(0);
        };
        let doomed = zset
            .iter()
            .skip(first)
            .take(last - first + 1)
            .map(|(member, _)| Box::from(member))
            .collect();
        Ok(remove_all(zset, doomed))
    })?;
    ctx.reply.int(removed.unwrap_or(0) as i64);
    Ok(())
}

pub(super) fn zremrangebyscore(ctx: &mut Ctx, request: Request) -> CmdResult {
    let min = Bound::parse(request.arg(2))?;
    let max = Bound::parse(request.arg(3))?;
    let removed = change_zset(ctx, request.arg(1), |zset| {
        let doomed = by_score(zset, min, max, false)
            .map(|(member, _)| Box::from(member))
            .collect();
        Ok(remove_all(zset, doomed))
    })?;
    ctx.reply.int(removed.unwrap_or(0) as i64);
    Ok(())
}

/// ZPOPMIN/ZPOPMAX key [count]. Under RESP3 the counted form answers pairs, the other a flat
/// member and score, as Redis 7 does.
fn pop(ctx: &mut Ctx, request: Request, highest: bool) -> CmdResult {
    let count = match request.len() {
        2 => None,
        3 => Some(parse_count(request.arg(2))?),
        _ => return Err(SYNTAX.into()),
    };
    let popped = change_zset(ctx, request.arg(1), |zset| {
        Ok(pop_members(zset, count.unwrap_or(1), highest))
    })?
    .unwrap_or_default();
    let found: Vec<(&[u8], f64)> = popped.iter().map(|(m, s)| (&**m, *s)).collect();
    let nested = ctx.reply.is_resp3() && count.is_some();
    write_members(ctx.reply, &found, true, nested);
    Ok(())
}

/// Removes and returns the `take` lowest members (highest if `highest`), in pop order.
fn pop_members(zset: &mut ZSet, take: usize, highest: bool) -> Vec<(Box<[u8]>, f64)> {
    let popped: Vec<(Box<[u8]>, f64)> = if highest {
        zset.iter()
            .rev()
            .take(take)
            .map(|(m, s)| (m.into(), s))
            .collect()
    } else {
        zset.iter().take(take).map(|(m, s)| (m.into(), s)).collect()
    };
    popped
        .iter()
        .for_each(|(member, _)| _ = zset.remove(member));
    popped
}

pub(super) fn zpopmin(ctx: &mut Ctx, request: Request) -> CmdResult {
    pop(ctx, request, false)
}

pub(super) fn zpopmax(ctx: &mut Ctx, request: Request) -> CmdResult {
    pop(ctx, request, true)
}

fn is_zset(value: &Value) -> bool {
    matches!(value, Value::ZSet(_))
}

/// BZPOPMIN/BZPOPMAX key [key ...] timeout: the lowest (highest) member of the first non-empty
/// sorted set, as key, member and score, logged as ZPOPMIN/ZPOPMAX (`pop_or_block`).
fn blocking_pop(ctx: &mut Ctx, request: Request, highest: bool) -> CmdResult {
    let logged_as: &[u8] = if highest { b"ZPOPMAX" } else { b"ZPOPMIN" };
    pop_or_block(ctx, request, logged_as, is_zset, |ctx, key| {
        let popped = change_zset(ctx, key, |zset| Ok(pop_members(zset, 1, highest).pop()))?;
        let Some((member, score)) = popped.flatten() else {
            return Ok(false);
        };
        ctx.reply.array(3);
        ctx.reply.bulk(key);
        ctx.reply.bulk(&member);
        reply_score(ctx, score);
        Ok(true)
    })
}

pub(super) fn bzpopmin(ctx: &mut Ctx, request: Request) -> CmdResult {
    blocking_pop(ctx, request, false)
}

pub(super) fn bzpopmax(ctx: &mut Ctx, request: Request) -> CmdResult {
    blocking_pop(ctx, request, true)
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count] [NOSCORES].
pub(super) fn zscan(ctx: &mut Ctx, request: Request) -> CmdResult {
    let cursor = parse_cursor(request)?;
    let (next, found, members_only) = read_zset(ctx, request.arg(1), |zset| {
        let Some(zset) = zset else {
            return Ok((0, Vec::new(), false));
        };
        let options = scan_options(request, Scanned::ZSet)?;
        let (next, entries) = zset.scan(cursor, options.count);
        let found = entries
            .filter(|(member, _)| matches(options.pattern, member))
            .map(|(member, score)| (member.to_vec(), stored_score(score)))
            .collect::<Vec<_>>();
        Ok::<_, CmdError>((next, found, options.members_only))
    })??;
    ctx.reply.array(2);
    ctx.reply.bulk(next.to_string().as_bytes());
    ctx.reply
        .array(found.len() * if members_only { 1 } else { 2 });
    for (member, score) in &found {
        ctx.reply.bulk(member);
        if !members_only {
            ctx.reply.bulk(score.as_bytes());
        }
    }
    Ok(())
}

/// A score as Redis keeps it in a listpack (`d2string`), which ZSCAN returns as it is: an
/// integral score within half the range of a 64-bit integer in integer digits, others as
/// replies write them.
fn stored_score(score: f64) -> String {
    const HALF_I64: f64 = (i64::MAX / 2) as f64;
    if score.fract() == 0.0 && (-HALF_I64..=HALF_I64).contains(&score) {
        return itoa::Buffer::new().format(score as i64).to_string();
    }
    format_score(score)
}

const RANGE_KEY: &[KeySpec] = RO_ACCESS;
const LIMIT: Arg = super::spec::block("limit", &[integer("offset"), integer("count")])
    .token("LIMIT")
    .optional();
const WITHSCORES: Arg = pure_token("withscores", "WITHSCORES").optional();

/// Sorted set commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new("zadd", -4, Group::SortedSet, "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", zadd)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_UPDATE)
        .acl(bits![Acl: SORTEDSET])
        .since("1.2.0")
        .complexity("O(log(N)) for each item added, where N is the number of elements in the sorted set.")
        .history(&[
            ("2.4.0", "Accepts multiple elements."),
            ("3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."),
            ("6.2.0", "Added the `GT` and `LT` options."),
        ])
        .args(&[
            key("key"),
            super::spec::one_of("condition", &[pure_token("nx", "NX"), pure_token("xx", "XX")]).optional().since("3.0.2"),
            super::spec::one_of("comparison", &[pure_token("gt", "GT"), pure_token("lt", "LT")]).optional().since("6.2.0"),
            pure_token("change", "CH").optional().since("3.0.2"),
            pure_token("increment", "INCR").optional().since("3.0.2"),
            super::spec::block("data", &[double("score"), string("member")]).multiple(),
        ]),
    CommandSpec::new("zincrby", 4, Group::SortedSet, "Increments the score of a member in a sorted set.", zincrby)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_ACCESS_UPDATE)
        .acl(bits![Acl: SORTEDSET])
        .since("1.2.0")
        .complexity("O(log(N)) where N is the number of elements in the sorted set.")
        .args(&[key("key"), integer("increment"), string("member")]),
    CommandSpec::new("zcard", 2, Group::SortedSet, "Returns the number of members in a sorted set.", zcard)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO)
        .acl(bits![Acl: SORTEDSET])
        .since("1.2.0")
        .complexity("O(1)")
        .args(&[key("key")]),
    CommandSpec::new("zscore", 3, Group::SortedSet, "Returns the score of a member in a sorted set.", zscore)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: SORTEDSET])
        .since("1.2.0")
        .complexity("O(1)")
        .args(&[key("key"), string("member")]),
    CommandSpec::new("zrank", 3, Group::SortedSet, "Returns the index of a member in a sorted set ordered by ascending scores.", zrank)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: SORTEDSET])
        .since("2.0.0")
        .complexity("O(log(N))")
        .args(&[key("key"), string("member")]),
    CommandSpec::new("zrevrank", 3, Group::SortedSet, "Returns the index of a member in a sorted set ordered by descending scores.", zrevrank)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: SORTEDSET])
        .since("2.0.0")
        .complexity("O(log(N))")
        .args(&[key("key"), string("member")]),
    CommandSpec::new("zrange", -4, Group::SortedSet, "Returns members in a sorted set within a range of indexes.", zrange)
        .flags(bits![Flags: READONLY])
        .key_specs(RANGE_KEY)
        .acl(bits![Acl: SORTEDSET])
        .since("1.2.0")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.")
        .history(&[
            ("6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options."),
        ])
        .args(&[
            key("key"),
            string("start"),
            string("stop"),
            super::spec::one_of("sortby", &[pure_token("byscore", "BYSCORE"), pure_token("bylex", "BYLEX")]).optional().since("6.2.0"),
            pure_token("rev", "REV").optional().since("6.2.0"),
            LIMIT.since("6.2.0"),
            WITHSCORES,
        ]),
    CommandSpec::new("zrangebyscore", -4, Group::SortedSet, "Returns members in a sorted set within a range of scores.", zrangebyscore)
        .flags(bits![Flags: READONLY])
        .key_specs(RANGE_KEY)
        .acl(bits![Acl: SORTEDSET])
        .since("1.0.5")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .deprecated("6.2.0", "`ZRANGE` with the `BYSCORE` argument")
        .history(&[
            ("2.0.0", "Added the `WITHSCORES` modifier."),
        ])
        .args(&[key("key"), double("min"), double("max"), WITHSCORES.since("2.0.0"), LIMIT]),
    CommandSpec::new("zrevrangebyscore", -4, Group::SortedSet, "Returns members in a sorted set within a range of scores in reverse order.", zrevrangebyscore)
        .flags(bits![Flags: READONLY])
        .key_specs(RANGE_KEY)
        .acl(bits![Acl: SORTEDSET])
        .since("2.2.0")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .deprecated("6.2.0", "`ZRANGE` with the `REV` and `BYSCORE` arguments")
        .history(&[
            ("2.1.6", "`min` and `max` can be exclusive."),
        ])
        .args(&[key("key"), double("max"), double("min"), WITHSCORES, LIMIT]),
    CommandSpec::new("zrevrange", -4, Group::SortedSet, "Returns members in a sorted set within a range of indexes in reverse order.", zrevrange)
        .flags(bits![Flags: READONLY])
        .key_specs(RANGE_KEY)
        .acl(bits![Acl: SORTEDSET])
        .since("1.2.0")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.")
        .deprecated("6.2.0", "`ZRANGE` with the `REV` argument")
        .args(&[key("key"), integer("start"), integer("stop"), WITHSCORES]),
    CommandSpec::new("zrem", -3, Group::SortedSet, "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", zrem)
        .flags(bits![Flags: WRITE, FAST])
        .key_specs(RW_DELETE)
        .acl(bits![Acl: SORTEDSET])
        .since("1.2.0")
        .complexity("O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple elements."),
        ])
        .args(&[key("key"), string("member").multiple()]),
    CommandSpec::new("zremrangebyrank", 4, Group::SortedSet, "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", zremrangebyrank)
        .flags(bits![Flags: WRITE])
        .key_specs(RW_DELETE)
        .acl(bits![Acl: SORTEDSET])
        .since("2.0.0")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[key("key"), integer("start"), integer("stop")]),
    CommandSpec::new("zremrangebyscore", 4, Group::SortedSet, "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", zremrangebyscore)
        .flags(bits![Flags: WRITE])
        .key_specs(RW_DELETE)
        .acl(bits![Acl: SORTEDSET])
        .since("1.2.0")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[key("key"), double("min"), double("max")]),
    CommandSpec::new("zpopmin", -2, Group::SortedSet, "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zpopmin)
        .flags(bits![Flags: WRITE, FAST])
        .key_specs(RW_ACCESS_DELETE)
        .acl(bits![Acl: SORTEDSET])
        .since("5.0.0")
        .complexity("O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[key("key"), integer("count").optional()]),
    CommandSpec::new("zpopmax", -2, Group::SortedSet, "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zpopmax)
        .flags(bits![Flags: WRITE, FAST])
        .key_specs(RW_ACCESS_DELETE)
        .acl(bits![Acl: SORTEDSET])
        .since("5.0.0")
        .complexity("O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[key("key"), integer("count").optional()]),
    CommandSpec::new("bzpopmin", -3, Group::SortedSet, "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", bzpopmin)
        .flags(bits![Flags: WRITE, NOSCRIPT, BLOCKING, FAST])
        .key_specs(RW_ACCESS_DELETE_ALL_BUT_LAST)
        .acl(bits![Acl: SORTEDSET])
        .since("5.0.0")
        .complexity("O(log(N)) with N being the number of elements in the sorted set.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[key("key").multiple(), double("timeout")]),
    CommandSpec::new("bzpopmax", -3, Group::SortedSet, "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", bzpopmax)
        .flags(bits![Flags: WRITE, NOSCRIPT, BLOCKING, FAST])
        .key_specs(RW_ACCESS_DELETE_ALL_BUT_LAST)
        .acl(bits![Acl: SORTEDSET])
        .since("5.0.0")
        .complexity("O(log(N)) with N being the number of elements in the sorted set.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[key("key").multiple(), double("timeout")]),
    CommandSpec::new("zscan", -3, Group::SortedSet, "Iterates over members and scores of a sorted set.", zscan)
        .flags(bits![Flags: READONLY])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: SORTEDSET])
        .since("2.8.0")
        .complexity("O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .args(&[
            key("key"),
            integer("cursor"),
            super::spec::pattern("pattern").token("MATCH").optional(),
            integer("count").token("COUNT").optional(),
            pure_token("noscores", "NOSCORES").optional().since("8.0.0"),
        ])
        .tips(&["nondeterministic_output"]),
];
