//! The list commands that take from one list and give to a client or another list: LMPOP and
//! BLMPOP (from the first non-empty of several lists), LMOVE, BLMOVE, RPOPLPUSH and BRPOPLPUSH.
//! Their blocking forms wait as BLPOP does (`Ctx::block_on`) and are logged as the
//! non-blocking command that served them, as Redis propagates them; LMPOP is logged as the
//! LPOP or RPOP with a count it came to, as in Redis.

use super::super::args::{int, keyword, Args};
use super::super::collection::{parse_timeout, upsert};
use super::super::errors::*;
use super::super::spec::{bits, command_table, CommandSpec, KeySpec};
use super::super::Ctx;
use super::{change_list, is_list, End};
use crate::protocol::{Reply, Request};
use crate::store::{Bytes, List, Value};
use std::time::Duration;

const ENDS: &[(&str, End)] = &[("LEFT", End::Head), ("RIGHT", End::Tail)];

/// LEFT or RIGHT, as Redis's `getListPositionFromObjectOrReply` reads it.
fn end(arg: &[u8]) -> Result<End, CmdError> {
    keyword(arg, ENDS).ok_or_else(|| SYNTAX.into())
}

fn end_word(end: End) -> &'static [u8] {
    match end {
        End::Head => b"LEFT",
        End::Tail => b"RIGHT",
    }
}

/// `numkeys key [key ...] LEFT|RIGHT [COUNT count]`, checked in Redis's order: numkeys, that
/// the end word is there, the end word, then the options.
struct MultiPop<'a> {
    keys: Vec<&'a [u8]>,
    end: End,
    count: usize,
}

impl<'a> MultiPop<'a> {
    fn parse(args: &mut Args<'a>) -> Result<Self, CmdError> {
        // As Redis's getRangeLongFromObjectOrReply: one error for a word that is not a number
        // and for a number out of range.
        let numkeys = int(args.required()?, NUMKEYS_NOT_POSITIVE)?;
        if numkeys < 1 {
            return Err(NUMKEYS_NOT_POSITIVE.into());
        }
        let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
        if numkeys >= args.remaining() {
            return Err(SYNTAX.into());
        }
        let keys = (0..numkeys).filter_map(|_| args.next()).collect();
        let end = end(args.required()?)?;
        let mut count = None;
        while let Some(option) = args.next() {
            match args.peek() {
                Some(value) if count.is_none() && option.eq_ignore_ascii_case(b"COUNT") => {
                    args.next();
                    let value = int(value, COUNT_NOT_POSITIVE)?;
                    if value < 1 {
                        return Err(COUNT_NOT_POSITIVE.into());
                    }
                    count = Some(usize::try_from(value).unwrap_or(usize::MAX));
                }
                _ => return Err(SYNTAX.into()),
            }
        }
        Ok(MultiPop {
            keys,
            end,
            count: count.unwrap_or(1),
        })
    }
}

/// Pops up to `count` elements from `end` of the list at `key`, in the order popped.
fn pop_some(list: &mut List, end: End, count: usize) -> Vec<Bytes> {
    let take = count.min(list.len());
    match end {
        End::Head => (0..take).filter_map(|_| list.pop_front()).collect(),
        End::Tail => (0..take).filter_map(|_| list.pop_back()).collect(),
    }
}

/// The multi-pop on the first non-empty list of `keys`: replies `[key, [elements]]`, notes the
/// pop as the LPOP or RPOP with a count Redis propagates, and says whether it found one. A key
/// of another type before it is an error, as in Redis.
fn multi_pop(ctx: &mut Ctx, keys: &[&[u8]], end: End, count: usize) -> Result<bool, CmdError> {
    for &key in keys {
        let Some(popped) = change_list(ctx, key, |list| Ok(pop_some(list, end, count)))? else {
            continue;
        };
        ctx.reply.array(2);
        ctx.reply.bulk(key);
        ctx.reply.array(popped.len());
        popped.iter().for_each(|item| ctx.reply.bulk(item));
        let popped = popped.len().to_string();
        let name: &[u8] = if end == End::Head { b"LPOP" } else { b"RPOP" };
        ctx.note_effect([name, key, popped.as_bytes()]);
        return Ok(true);
    }
    Ok(false)
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
fn lmpop(ctx: &mut Ctx, request: Request) -> CmdResult {
    let MultiPop { keys, end, count } = MultiPop::parse(&mut Args::new(request, 1))?;
    ctx.log_effects_only();
    if !multi_pop(ctx, &keys, end, count)? {
        ctx.reply.null_array();
    }
    Ok(())
}

/// Parks the client on `keys` when it may block; inside EXEC (or on replay) it answers at once
/// with `denied`, as Redis answers a blocking command it may not block.
fn wait(
    ctx: &mut Ctx,
    request: &Request,
    keys: &[&[u8]],
    timeout: Option<Duration>,
    denied: fn(&mut Reply),
) {
    if ctx.may_block() {
        let keys = keys.iter().map(|key| key.to_vec()).collect();
        ctx.block_on(request, keys, timeout, is_list, Reply::null_array);
    } else {
        denied(ctx.reply);
    }
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]: the timeout is read after
/// the rest, as Redis reads it.
fn blmpop(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let timeout = args.required()?;
    let MultiPop { keys, end, count } = MultiPop::parse(&mut args)?;
    let timeout = parse_timeout(timeout, ctx.now)?;
    ctx.log_effects_only();
    if !multi_pop(ctx, &keys, end, count)? {
        wait(ctx, &request, &keys, timeout, Reply::null_array);
    }
    Ok(())
}

/// LMOVE's words: source destination and the two ends.
struct Move<'a> {
    source: &'a [u8],
    destination: &'a [u8],
    from: End,
    to: End,
}

/// Moves one element from `from` of `source` to `to` of `destination`; None (and nothing
/// changed) when there is no source list. A destination of another type is an error before
/// anything moves, as in Redis.
fn move_one(ctx: &Ctx, step: &Move) -> Result<Option<Bytes>, CmdError> {
    let &Move {
        source,
        destination,
        from,
        to,
    } = step;
    let push = |list: &mut List, item: &[u8]| match to {
        End::Head => list.push_front(item),
        End::Tail => list.push_back(item),
    };
    let pop = |list: &mut List| match from {
        End::Head => list.pop_front(),
        End::Tail => list.pop_back(),
    };
    if source == destination {
        // A rotation: the element goes back before the list can be seen empty.
        return Ok(change_list(ctx, source, |list| {
            Ok(pop(list).inspect(|item| push(list, item)))
        })?
        .flatten());
    }
    let exists = ctx.db().get(source, ctx.now, |value| match value {
        None => Ok(false),
        Some(Value::List(_)) => Ok(true),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
    })?;
    if !exists {
        return Ok(None);
    }
    ctx.db().get(destination, ctx.now, |value| match value {
        Some(value) if !is_list(value) => Err(CmdError::from(WRONGTYPE)),
        _ => Ok(()),
    })?;
    let Some(item) = change_list(ctx, source, |list| Ok(pop(list)))?.flatten() else {
        return Ok(None);
    };
    let create = || Value::List(Box::default());
    let pushed = upsert(ctx, destination, create, |value| match value {
        Value::List(list) => {
            push(list, &item);
            Ok(())
        }
        _ => Err(CmdError::from(WRONGTYPE)),
    });
    if let Err(error) = pushed {
        // Another client made the destination something else since it was looked at: the
        // element goes back where it came from rather than being lost.
        let create = || Value::List(Box::default());
        upsert(ctx, source, create, |value| {
            if let Value::List(list) = value {
                match from {
                    End::Head => list.push_front(&item),
                    End::Tail => list.push_back(&item),
                }
            }
            Ok(())
        })?;
        return Err(error);
    }
    Ok(Some(item))
}

/// LMOVE and RPOPLPUSH: the element moved, or nil. A blocking form that found one notes the
/// move as LMOVE, as Redis propagates BLMOVE and BRPOPLPUSH.
fn run_move(ctx: &mut Ctx, step: &Move, note: bool) -> Result<bool, CmdError> {
    let Some(item) = move_one(ctx, step)? else {
        return Ok(false);
    };
    ctx.reply.bulk(&item);
    if note {
        ctx.note_effect([
            b"LMOVE".as_slice(),
            step.source,
            step.destination,
            end_word(step.from),
            end_word(step.to),
        ]);
    }
    Ok(true)
}

fn moves(ctx: &mut Ctx, step: Move) -> CmdResult {
    if !run_move(ctx, &step, false)? {
        ctx.reply.null();
    }
    Ok(())
}

/// BLMOVE and BRPOPLPUSH. Without an element they wait for the source; inside EXEC they
/// answer nil, and when the wait times out a nil array, as Redis does.
fn blocking_move(ctx: &mut Ctx, request: Request, step: Move, timeout: &[u8]) -> CmdResult {
    let timeout = parse_timeout(timeout, ctx.now)?;
    ctx.log_effects_only();
    if !run_move(ctx, &step, true)? {
        wait(ctx, &request, &[step.source], timeout, Reply::null);
    }
    Ok(())
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
fn lmove(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let (source, destination) = (args.required()?, args.required()?);
    let (from, to) = (end(args.required()?)?, end(args.required()?)?);
    let step = Move {
        source,
        destination,
        from,
        to,
    };
    moves(ctx, step)
}

/// RPOPLPUSH source destination: LMOVE source destination RIGHT LEFT.
fn rpoplpush(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let step = Move {
        source: args.required()?,
        destination: args.required()?,
        from: End::Tail,
        to: End::Head,
    };
    moves(ctx, step)
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
fn blmove(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let (source, destination) = (args.required()?, args.required()?);
    let (from, to) = (end(args.required()?)?, end(args.required()?)?);
    let step = Move {
        source,
        destination,
        from,
        to,
    };
    blocking_move(ctx, request, step, args.required()?)
}

/// BRPOPLPUSH source destination timeout
fn brpoplpush(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let step = Move {
        source: args.required()?,
        destination: args.required()?,
        from: End::Tail,
        to: End::Head,
    };
    blocking_move(ctx, request, step, args.required()?)
}

/// LMPOP's keys follow its numkeys, which sieved's key specifications cannot say: they are
/// given as every word after it but the end word, which is exact without COUNT.
const LMPOP_KEYS: &[KeySpec] = &[KeySpec::range(
    bits![KeyFlags: RW, ACCESS, DELETE],
    2,
    -2,
    1,
)];
const BLMPOP_KEYS: &[KeySpec] = &[KeySpec::range(
    bits![KeyFlags: RW, ACCESS, DELETE],
    3,
    -2,
    1,
)];
/// The source, then the destination.
const MOVE_KEYS: &[KeySpec] = &[
    KeySpec::range(bits![KeyFlags: RW, ACCESS, DELETE], 1, 0, 1),
    KeySpec::range(bits![KeyFlags: RW, INSERT], 2, 0, 1),
];

/// The moving list commands as Redis 7.4 declares them; the blocking ones are kept out of
/// scripts, as sieved keeps BLPOP.
pub(in crate::cmd) const SPECS: &[CommandSpec] = &command_table! { List:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "lmpop", -4, [WRITE], LMPOP_KEYS, [LIST], lmpop, docs::LMPOP;
    "blmpop", -5, [WRITE, NOSCRIPT, BLOCKING], BLMPOP_KEYS, [LIST], blmpop, docs::BLMPOP;
    "lmove", 5, [WRITE, DENYOOM], MOVE_KEYS, [LIST], lmove, docs::LMOVE;
    "blmove", 6, [WRITE, DENYOOM, NOSCRIPT, BLOCKING], MOVE_KEYS, [LIST], blmove,
        docs::BLMOVE;
    "rpoplpush", 3, [WRITE, DENYOOM], MOVE_KEYS, [LIST], rpoplpush, docs::RPOPLPUSH;
    "brpoplpush", 4, [WRITE, DENYOOM, NOSCRIPT, BLOCKING], MOVE_KEYS, [LIST],
        brpoplpush, docs::BRPOPLPUSH;
};

/// What COMMAND DOCS says of each, in Redis 7.4's words.
mod docs {
    use super::super::super::spec::{double, integer, key, one_of, pure_token, Arg, Docs};

    const ENDS_FROM: Arg = one_of(
        "wherefrom",
        &[pure_token("left", "LEFT"), pure_token("right", "RIGHT")],
    );
    const ENDS_TO: Arg = one_of(
        "whereto",
        &[pure_token("left", "LEFT"), pure_token("right", "RIGHT")],
    );
    const WHERE: Arg = one_of(
        "where",
        &[pure_token("left", "LEFT"), pure_token("right", "RIGHT")],
    );

    pub(super) const LMPOP: Docs = Docs::new("Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.")
        .since("7.0.0")
        .complexity("O(N+M) where N is the number of provided keys and M is the number of elements returned.")
        .args(&[integer("numkeys"), key("key").multiple(), WHERE, integer("count").token("COUNT").optional()]);
    pub(super) const BLMPOP: Docs = Docs::new("Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.")
        .since("7.0.0")
        .complexity("O(N+M) where N is the number of provided keys and M is the number of elements returned.")
        .args(&[double("timeout"), integer("numkeys"), key("key").multiple(), WHERE, integer("count").token("COUNT").optional()]);
    pub(super) const LMOVE: Docs = Docs::new("Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.")
        .since("6.2.0")
        .complexity("O(1)")
        .args(&[key("source"), key("destination").key_spec(1), ENDS_FROM, ENDS_TO]);
    pub(super) const BLMOVE: Docs = Docs::new("Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.")
        .since("6.2.0")
        .complexity("O(1)")
        .args(&[key("source"), key("destination").key_spec(1), ENDS_FROM, ENDS_TO, double("timeout")]);
    pub(super) const RPOPLPUSH: Docs = Docs::new("Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.")
        .since("1.2.0")
        .complexity("O(1)")
        .deprecated("6.2.0", "`LMOVE` with the `RIGHT` and `LEFT` arguments")
        .args(&[key("source"), key("destination").key_spec(1)]);
    pub(super) const BRPOPLPUSH: Docs = Docs::new("Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.")
        .since("2.2.0")
        .complexity("O(1)")
        .deprecated("6.2.0", "`BLMOVE` with the `RIGHT` and `LEFT` arguments")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[key("source"), key("destination").key_spec(1), double("timeout")]);
}
