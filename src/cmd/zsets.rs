//! Sorted sets: ZADD, ZINCRBY, ZCARD, ZSCORE, ZRANK, ZREVRANK, ZRANGE (by rank or score, either
//! way, with LIMIT and WITHSCORES), ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZREVRANGE, ZREM,
//! ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZPOPMIN, ZPOPMAX, BZPOPMIN, BZPOPMAX, ZSCAN, ZCOUNT,
//! ZLEXCOUNT, ZMSCORE and the BYLEX ranges (ZRANGEBYLEX, ZREVRANGEBYLEX, ZREMRANGEBYLEX), as
//! Redis has them. Score
//! arithmetic is in f64, as in Redis, so a replayed ZINCRBY lands on the same score.

use super::args::{float, int, keyword, Args, Key, KeyItem, KeyItems};
use super::collection::*;
use super::errors::*;
use super::key_specs::*;
use super::spec::{command_table, CommandSpec};
use super::zset_ranges::{by_lex, by_score, Bound, Lex};
use super::Ctx;
use crate::protocol::Request;
use crate::store::{Value, ZSet};

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
                return Err(ZSET_NAN_SCORE.into());
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

#[derive(Clone, Copy)]
enum AddFlag {
    Nx,
    Xx,
    Gt,
    Lt,
    Ch,
    Incr,
}

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...], checked in Redis's
/// order: syntax, incompatible options, INCR's single pair, every score, then the key.
struct ZAdd<'a> {
    key: &'a [u8],
    flags: AddFlags,
    pairs: Vec<(f64, &'a [u8])>,
}

impl<'a> ZAdd<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        const FLAGS: &[(&str, AddFlag)] = &[
            ("NX", AddFlag::Nx),
            ("XX", AddFlag::Xx),
            ("GT", AddFlag::Gt),
            ("LT", AddFlag::Lt),
            ("CH", AddFlag::Ch),
            ("INCR", AddFlag::Incr),
        ];
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let mut flags = AddFlags::default();
        while let Some(flag) = args.one_of(FLAGS) {
            *match flag {
                AddFlag::Nx => &mut flags.nx,
                AddFlag::Xx => &mut flags.xx,
                AddFlag::Gt => &mut flags.gt,
                AddFlag::Lt => &mut flags.lt,
                AddFlag::Ch => &mut flags.ch,
                AddFlag::Incr => &mut flags.incr,
            } = true;
        }
        let elements = args.remaining();
        if elements % 2 == 1 || elements == 0 {
            return Err(SYNTAX.into());
        }
        if flags.nx && flags.xx {
            return Err(ZADD_XX_AND_NX.into());
        }
        if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
            return Err(ZADD_GT_LT_NX.into());
        }
        if flags.incr && elements > 2 {
            return Err(ZADD_INCR_PAIRS.into());
        }
        let mut pairs = Vec::with_capacity(elements / 2);
        while let Some(score) = args.next() {
            pairs.push((float(score, NOT_FLOAT)?, args.required()?));
        }
        Ok(ZAdd { key, flags, pairs })
    }
}

fn zadd(ctx: &mut Ctx, request: Request) -> CmdResult {
    let ZAdd { key, flags, pairs } = ZAdd::parse(request)?;
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

/// ZINCRBY key increment member
struct ZIncrBy<'a> {
    key: &'a [u8],
    by: f64,
    member: &'a [u8],
}

impl<'a> ZIncrBy<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(ZIncrBy {
            key: args.required()?,
            by: float(args.required()?, NOT_FLOAT)?,
            member: args.required()?,
        })
    }
}

fn zincrby(ctx: &mut Ctx, request: Request) -> CmdResult {
    let ZIncrBy { key, by, member } = ZIncrBy::parse(request)?;
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    let create = || Value::ZSet(Box::default());
    let added = upsert(ctx, key, create, |value| match value {
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

fn zcard(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let len = read_zset(ctx, key, |zset| zset.map_or(0, ZSet::len))?;
    ctx.reply.int(len as i64);
    Ok(())
}

fn zscore(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item: member } = KeyItem::parse(request)?;
    match read_zset(ctx, key, |zset| zset.and_then(|z| z.score(member)))? {
        Some(score) => reply_score(ctx, score),
        None => ctx.reply.null(),
    }
    Ok(())
}

fn rank(ctx: &mut Ctx, request: Request, reverse: bool) -> CmdResult {
    let KeyItem { key, item: member } = KeyItem::parse(request)?;
    let rank = read_zset(ctx, key, |zset| {
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

fn zrank(ctx: &mut Ctx, request: Request) -> CmdResult {
    rank(ctx, request, false)
}

fn zrevrank(ctx: &mut Ctx, request: Request) -> CmdResult {
    rank(ctx, request, true)
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

#[derive(Clone, Copy)]
enum RangeOption {
    WithScores,
    Limit,
    Rev,
    ByScore,
    ByLex,
}

/// The ZRANGE family, its arguments read: `by` and `reverse` are what the command fixes (Auto
/// and None for ZRANGE, which takes them as options). Checked in Redis's order: options, their
/// conflicts, the range, then the key.
struct Range<'a> {
    key: &'a [u8],
    selection: Selection<'a>,
    reverse: bool,
    withscores: bool,
    /// Offset and count.
    limit: Option<(i64, i64)>,
}

impl<'a> Range<'a> {
    fn parse(
        request: Request<'a>,
        mut by: RangeBy,
        mut reverse: Option<bool>,
    ) -> Result<Self, CmdError> {
        const OPTIONS: &[(&str, RangeOption)] = &[
            ("WITHSCORES", RangeOption::WithScores),
            ("LIMIT", RangeOption::Limit),
            ("REV", RangeOption::Rev),
            ("BYSCORE", RangeOption::ByScore),
            ("BYLEX", RangeOption::ByLex),
        ];
        let mut args = Args::new(request, 1);
        let (key, from, to) = (args.required()?, args.required()?, args.required()?);
        let (mut withscores, mut limit) = (false, None);
        while let Some(word) = args.next() {
            match keyword(word, OPTIONS) {
                Some(RangeOption::WithScores) => withscores = true,
                Some(RangeOption::Limit) if args.remaining() >= 2 => {
                    let offset = args.int(NOT_INTEGER)?;
                    limit = Some((offset, args.int(NOT_INTEGER)?));
                }
                Some(RangeOption::Rev) if reverse.is_none() => reverse = Some(true),
                Some(RangeOption::ByScore) if by == RangeBy::Auto => by = RangeBy::Score,
                Some(RangeOption::ByLex) if by == RangeBy::Auto => by = RangeBy::Lex,
                _ => return Err(SYNTAX.into()),
            }
        }
        let reverse = reverse.unwrap_or(false);
        if limit.is_some_and(|(_, count)| count != -1)
            && matches!(by, RangeBy::Auto | RangeBy::Rank)
        {
            return Err(ZRANGE_LIMIT.into());
        }
        if withscores && by == RangeBy::Lex {
            return Err(ZRANGE_WITHSCORES_BYLEX.into());
        }
        // Reversed score and name ranges name their upper end first.
        let (from, to) = match (from, to) {
            (from, to) if reverse && matches!(by, RangeBy::Score | RangeBy::Lex) => (to, from),
            ends => ends,
        };
        let selection = match by {
            RangeBy::Score => Selection::Scores(Bound::parse(from)?, Bound::parse(to)?),
            RangeBy::Lex => Selection::Names(Lex::parse(from)?, Lex::parse(to)?),
            RangeBy::Auto | RangeBy::Rank => Selection::Ranks(rank_of(from)?, rank_of(to)?),
        };
        Ok(Range {
            key,
            selection,
            reverse,
            withscores,
            limit,
        })
    }
}

fn range(ctx: &mut Ctx, request: Request, by: RangeBy, reverse: Option<bool>) -> CmdResult {
    let Range {
        key,
        selection,
        reverse,
        withscores,
        limit,
    } = Range::parse(request, by, reverse)?;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    let resp3 = reply.is_resp3();
    db.get(key, ctx.now, |value| {
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

fn zrange(ctx: &mut Ctx, request: Request) -> CmdResult {
    range(ctx, request, RangeBy::Auto, None)
}

fn zrangebyscore(ctx: &mut Ctx, request: Request) -> CmdResult {
    range(ctx, request, RangeBy::Score, Some(false))
}

fn zrevrangebyscore(ctx: &mut Ctx, request: Request) -> CmdResult {
    range(ctx, request, RangeBy::Score, Some(true))
}

fn zrangebylex(ctx: &mut Ctx, request: Request) -> CmdResult {
    range(ctx, request, RangeBy::Lex, Some(false))
}

fn zrevrangebylex(ctx: &mut Ctx, request: Request) -> CmdResult {
    range(ctx, request, RangeBy::Lex, Some(true))
}

/// ZCOUNT key min max.
fn zcount(ctx: &mut Ctx, request: Request) -> CmdResult {
    let RemoveRange { key, from, to } = RemoveRange::parse(request, Bound::parse)?;
    let count = read_zset(ctx, key, |zset| {
        zset.map_or(0, |zset| by_score(zset, from, to, false).count())
    })?;
    ctx.reply.int(count as i64);
    Ok(())
}

/// ZLEXCOUNT key min max.
fn zlexcount(ctx: &mut Ctx, request: Request) -> CmdResult {
    let RemoveRange { key, from, to } = RemoveRange::parse(request, Lex::parse)?;
    let count = read_zset(ctx, key, |zset| {
        zset.map_or(0, |zset| by_lex(zset, from, to, false).count())
    })?;
    ctx.reply.int(count as i64);
    Ok(())
}

/// ZMSCORE key member [member ...]: a null for each member not there.
fn zmscore(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let scores: Vec<Option<f64>> = read_zset(ctx, key, |zset| {
        items
            .iter()
            .map(|m| zset.and_then(|z| z.score(m)))
            .collect()
    })?;
    ctx.reply.array(scores.len());
    for score in scores {
        match score {
            Some(score) => reply_score(ctx, score),
            None => ctx.reply.null(),
        }
    }
    Ok(())
}

fn zrevrange(ctx: &mut Ctx, request: Request) -> CmdResult {
    range(ctx, request, RangeBy::Rank, Some(true))
}

fn zrem(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let removed = change_zset(ctx, key, |zset| {
        Ok(items.iter().filter(|m| zset.remove(m)).count())
    })?;
    ctx.reply.int(removed.unwrap_or(0) as i64);
    Ok(())
}

fn remove_all(zset: &mut ZSet, members: Vec<Box<[u8]>>) -> usize {
    members.iter().for_each(|member| _ = zset.remove(member));
    members.len()
}

/// ZREMRANGEBYRANK key start stop, and ZREMRANGEBYSCORE key min max: each end as `read` reads it.
struct RemoveRange<'a, T> {
    key: &'a [u8],
    from: T,
    to: T,
}

impl<'a, T> RemoveRange<'a, T> {
    fn parse(
        request: Request<'a>,
        read: fn(&'a [u8]) -> Result<T, CmdError>,
    ) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(RemoveRange {
            key: args.required()?,
            from: read(args.required()?)?,
            to: read(args.required()?)?,
        })
    }
}

fn rank_of(arg: &[u8]) -> Result<i64, CmdError> {
    int(arg, NOT_INTEGER)
}

fn zremrangebyrank(ctx: &mut Ctx, request: Request) -> CmdResult {
    let RemoveRange {
        key,
        from: start,
        to: stop,
    } = RemoveRange::parse(request, rank_of)?;
    let removed = change_zset(ctx, key, |zset| {
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

fn zremrangebyscore(ctx: &mut Ctx, request: Request) -> CmdResult {
    let RemoveRange {
        key,
        from: min,
        to: max,
    } = RemoveRange::parse(request, Bound::parse)?;
    let removed = change_zset(ctx, key, |zset| {
        let doomed = by_score(zset, min, max, false)
            .map(|(member, _)| Box::from(member))
            .collect();
        Ok(remove_all(zset, doomed))
    })?;
    ctx.reply.int(removed.unwrap_or(0) as i64);
    Ok(())
}

fn zremrangebylex(ctx: &mut Ctx, request: Request) -> CmdResult {
    let RemoveRange { key, from, to } = RemoveRange::parse(request, Lex::parse)?;
    let removed = change_zset(ctx, key, |zset| {
        let doomed = by_lex(zset, from, to, false)
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
    let KeyCount { key, count } = KeyCount::parse(request, parse_count)?;
    let popped = change_zset(ctx, key, |zset| {
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

fn zpopmin(ctx: &mut Ctx, request: Request) -> CmdResult {
    pop(ctx, request, false)
}

fn zpopmax(ctx: &mut Ctx, request: Request) -> CmdResult {
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

fn bzpopmin(ctx: &mut Ctx, request: Request) -> CmdResult {
    blocking_pop(ctx, request, false)
}

fn bzpopmax(ctx: &mut Ctx, request: Request) -> CmdResult {
    blocking_pop(ctx, request, true)
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count] [NOSCORES].
fn zscan(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Scan {
        key,
        cursor,
        options,
    } = Scan::parse(request, Scanned::ZSet)?;
    let (next, found, members_only) = read_zset(ctx, key, |zset| {
        let Some(zset) = zset else {
            return Ok((0, Vec::new(), false));
        };
        let options = options?;
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

/// Sorted set commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &command_table! { SortedSet:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "zadd", -4, [WRITE, DENYOOM, FAST], RW_UPDATE, [SORTEDSET], zadd, docs::ZADD;
    "zincrby", 4, [WRITE, DENYOOM, FAST], RW_ACCESS_UPDATE, [SORTEDSET], zincrby, docs::ZINCRBY;
    "zcard", 2, [READONLY, FAST], RO, [SORTEDSET], zcard, docs::ZCARD;
    "zscore", 3, [READONLY, FAST], RO_ACCESS, [SORTEDSET], zscore, docs::ZSCORE;
    "zrank", 3, [READONLY, FAST], RO_ACCESS, [SORTEDSET], zrank, docs::ZRANK;
    "zrevrank", 3, [READONLY, FAST], RO_ACCESS, [SORTEDSET], zrevrank, docs::ZREVRANK;
    "zrange", -4, [READONLY], RO_ACCESS, [SORTEDSET], zrange, docs::ZRANGE;
    "zrangebyscore", -4, [READONLY], RO_ACCESS, [SORTEDSET], zrangebyscore, docs::ZRANGEBYSCORE;
    "zrevrangebyscore", -4, [READONLY], RO_ACCESS, [SORTEDSET], zrevrangebyscore,
        docs::ZREVRANGEBYSCORE;
    "zrevrange", -4, [READONLY], RO_ACCESS, [SORTEDSET], zrevrange, docs::ZREVRANGE;
    "zrem", -3, [WRITE, FAST], RW_DELETE, [SORTEDSET], zrem, docs::ZREM;
    "zremrangebyrank", 4, [WRITE], RW_DELETE, [SORTEDSET], zremrangebyrank, docs::ZREMRANGEBYRANK;
    "zremrangebyscore", 4, [WRITE], RW_DELETE, [SORTEDSET], zremrangebyscore,
        docs::ZREMRANGEBYSCORE;
    "zpopmin", -2, [WRITE, FAST], RW_ACCESS_DELETE, [SORTEDSET], zpopmin, docs::ZPOPMIN;
    "zpopmax", -2, [WRITE, FAST], RW_ACCESS_DELETE, [SORTEDSET], zpopmax, docs::ZPOPMAX;
    "bzpopmin", -3, [WRITE, NOSCRIPT, BLOCKING, FAST], RW_ACCESS_DELETE_ALL_BUT_LAST, [SORTEDSET],
        bzpopmin, docs::BZPOPMIN;
    "bzpopmax", -3, [WRITE, NOSCRIPT, BLOCKING, FAST], RW_ACCESS_DELETE_ALL_BUT_LAST, [SORTEDSET],
        bzpopmax, docs::BZPOPMAX;
    "zscan", -3, [READONLY], RO_ACCESS, [SORTEDSET], zscan, docs::ZSCAN,
        tips(&["nondeterministic_output"]);
    "zcount", 4, [READONLY, FAST], RO_ACCESS, [SORTEDSET], zcount, docs::ZCOUNT;
    "zlexcount", 4, [READONLY, FAST], RO_ACCESS, [SORTEDSET], zlexcount, docs::ZLEXCOUNT;
    "zmscore", -3, [READONLY, FAST], RO_ACCESS, [SORTEDSET], zmscore, docs::ZMSCORE;
    "zrangebylex", -4, [READONLY], RO_ACCESS, [SORTEDSET], zrangebylex, docs::ZRANGEBYLEX;
    "zrevrangebylex", -4, [READONLY], RO_ACCESS, [SORTEDSET], zrevrangebylex,
        docs::ZREVRANGEBYLEX;
    "zremrangebylex", 4, [WRITE], RW_DELETE, [SORTEDSET], zremrangebylex, docs::ZREMRANGEBYLEX;
};

/// What COMMAND DOCS says of each, in Redis 8's words.
mod docs {
    use super::super::spec::{
        block, double, integer, key, one_of, pattern, pure_token, string, Arg, Docs,
    };

    pub(super) const ZADD: Docs = Docs::new("Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.")
        .since("1.2.0")
        .complexity("O(log(N)) for each item added, where N is the number of elements in the sorted set.")
        .history(&[
            ("2.4.0", "Accepts multiple elements."),
            ("3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."),
            ("6.2.0", "Added the `GT` and `LT` options."),
        ])
        .args(&[
            key("key"),
            one_of("condition", &[pure_token("nx", "NX"), pure_token("xx", "XX")]).optional().since("3.0.2"),
            one_of("comparison", &[pure_token("gt", "GT"), pure_token("lt", "LT")]).optional().since("6.2.0"),
            pure_token("change", "CH").optional().since("3.0.2"),
            pure_token("increment", "INCR").optional().since("3.0.2"),
            block("data", &[double("score"), string("member")]).multiple(),
        ]);
    pub(super) const ZINCRBY: Docs = Docs::new("Increments the score of a member in a sorted set.")
        .since("1.2.0")
        .complexity("O(log(N)) where N is the number of elements in the sorted set.")
        .args(&[key("key"), integer("increment"), string("member")]);
    pub(super) const ZCARD: Docs = Docs::new("Returns the number of members in a sorted set.")
        .since("1.2.0")
        .complexity("O(1)")
        .args(&[key("key")]);
    pub(super) const ZSCORE: Docs = Docs::new("Returns the score of a member in a sorted set.")
        .since("1.2.0")
        .complexity("O(1)")
        .args(&[key("key"), string("member")]);
    pub(super) const ZRANK: Docs =
        Docs::new("Returns the index of a member in a sorted set ordered by ascending scores.")
            .since("2.0.0")
            .complexity("O(log(N))")
            .args(&[key("key"), string("member")]);
    pub(super) const ZREVRANK: Docs =
        Docs::new("Returns the index of a member in a sorted set ordered by descending scores.")
            .since("2.0.0")
            .complexity("O(log(N))")
            .args(&[key("key"), string("member")]);
    pub(super) const ZRANGE: Docs = Docs::new("Returns members in a sorted set within a range of indexes.")
        .since("1.2.0")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.")
        .history(&[
            ("6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options."),
        ])
        .args(&[
            key("key"),
            string("start"),
            string("stop"),
            one_of("sortby", &[pure_token("byscore", "BYSCORE"), pure_token("bylex", "BYLEX")]).optional().since("6.2.0"),
            pure_token("rev", "REV").optional().since("6.2.0"),
            LIMIT.since("6.2.0"),
            WITHSCORES,
        ]);
    pub(super) const ZRANGEBYSCORE: Docs = Docs::new("Returns members in a sorted set within a range of scores.")
        .since("1.0.5")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .deprecated("6.2.0", "`ZRANGE` with the `BYSCORE` argument")
        .history(&[
            ("2.0.0", "Added the `WITHSCORES` modifier."),
        ])
        .args(&[key("key"), double("min"), double("max"), WITHSCORES.since("2.0.0"), LIMIT]);
    pub(super) const ZREVRANGEBYSCORE: Docs = Docs::new("Returns members in a sorted set within a range of scores in reverse order.")
        .since("2.2.0")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .deprecated("6.2.0", "`ZRANGE` with the `REV` and `BYSCORE` arguments")
        .history(&[
            ("2.1.6", "`min` and `max` can be exclusive."),
        ])
        .args(&[key("key"), double("max"), double("min"), WITHSCORES, LIMIT]);
    pub(super) const ZREVRANGE: Docs = Docs::new("Returns members in a sorted set within a range of indexes in reverse order.")
        .since("1.2.0")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.")
        .deprecated("6.2.0", "`ZRANGE` with the `REV` argument")
        .args(&[key("key"), integer("start"), integer("stop"), WITHSCORES]);
    pub(super) const ZREM: Docs = Docs::new("Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.")
        .since("1.2.0")
        .complexity("O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.")
        .history(&[
            ("2.4.0", "Accepts multiple elements."),
        ])
        .args(&[key("key"), string("member").multiple()]);
    pub(super) const ZREMRANGEBYRANK: Docs = Docs::new("Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.")
        .since("2.0.0")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[key("key"), integer("start"), integer("stop")]);
    pub(super) const ZREMRANGEBYSCORE: Docs = Docs::new("Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.")
        .since("1.2.0")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[key("key"), double("min"), double("max")]);
    pub(super) const ZPOPMIN: Docs = Docs::new("Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.")
        .since("5.0.0")
        .complexity("O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[key("key"), integer("count").optional()]);
    pub(super) const ZPOPMAX: Docs = Docs::new("Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.")
        .since("5.0.0")
        .complexity("O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.")
        .args(&[key("key"), integer("count").optional()]);
    pub(super) const BZPOPMIN: Docs = Docs::new("Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.")
        .since("5.0.0")
        .complexity("O(log(N)) with N being the number of elements in the sorted set.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[key("key").multiple(), double("timeout")]);
    pub(super) const BZPOPMAX: Docs = Docs::new("Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.")
        .since("5.0.0")
        .complexity("O(log(N)) with N being the number of elements in the sorted set.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[key("key").multiple(), double("timeout")]);
    pub(super) const ZSCAN: Docs = Docs::new("Iterates over members and scores of a sorted set.")
        .since("2.8.0")
        .complexity("O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.")
        .args(&[
            key("key"),
            integer("cursor"),
            pattern("pattern").token("MATCH").optional(),
            integer("count").token("COUNT").optional(),
            pure_token("noscores", "NOSCORES").optional().since("8.0.0"),
        ]);

    pub(super) const ZCOUNT: Docs =
        Docs::new("Returns the count of members in a sorted set that have scores within a range.")
            .since("2.0.0")
            .complexity("O(log(N)) with N being the number of elements in the sorted set.")
            .args(&[key("key"), double("min"), double("max")]);
    pub(super) const ZLEXCOUNT: Docs =
        Docs::new("Returns the number of members in a sorted set within a lexicographical range.")
            .since("2.8.9")
            .complexity("O(log(N)) with N being the number of elements in the sorted set.")
            .args(&[key("key"), string("min"), string("max")]);
    pub(super) const ZMSCORE: Docs =
        Docs::new("Returns the score of one or more members in a sorted set.")
            .since("6.2.0")
            .complexity("O(N) where N is the number of members being requested.")
            .args(&[key("key"), string("member").multiple()]);
    pub(super) const ZRANGEBYLEX: Docs = Docs::new("Returns members in a sorted set within a lexicographical range.")
        .since("2.8.9")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .deprecated("6.2.0", "`ZRANGE` with the `BYLEX` argument")
        .args(&[key("key"), string("min"), string("max"), LIMIT]);
    pub(super) const ZREVRANGEBYLEX: Docs = Docs::new("Returns members in a sorted set within a lexicographical range in reverse order.")
        .since("2.8.9")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).")
        .deprecated("6.2.0", "`ZRANGE` with the `REV` and `BYLEX` arguments")
        .args(&[key("key"), string("max"), string("min"), LIMIT]);
    pub(super) const ZREMRANGEBYLEX: Docs = Docs::new("Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.")
        .since("2.8.9")
        .complexity("O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.")
        .args(&[key("key"), string("min"), string("max")]);
    const LIMIT: Arg = block("limit", &[integer("offset"), integer("count")])
        .token("LIMIT")
        .optional();
    const WITHSCORES: Arg = pure_token("withscores", "WITHSCORES").optional();
}
