//! Lists: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, BLPOP, BRPOP, LLEN, LRANGE, LTRIM, LINDEX,
//! LREM and LSET, as Redis has them. A list is a double-ended queue, so both ends are O(1).

use super::collection::*;
use super::errors::*;
use super::key_specs::*;
use super::spec::{bits, double, integer, key, string, CommandSpec, Group};
use super::Ctx;
use crate::protocol::Request;
use crate::store::{Bytes, List, Value};

#[derive(Clone, Copy, PartialEq)]
enum End {
    Head,
    Tail,
}

/// Runs `f` on the list at `key`, read-locked; None if there is none.
fn read_list<R>(ctx: &Ctx, key: &[u8], f: impl FnOnce(&List) -> R) -> Result<Option<R>, CmdError> {
    ctx.db().get(key, ctx.now, |value| match value {
        None => Ok(None),
        Some(Value::List(list)) => Ok(Some(f(list))),
        Some(_) => Err(WRONGTYPE.into()),
    })
}

/// Runs `f` on the list at `key`, write-locked; None if there is none. A list left empty goes.
fn change_list<R>(
    ctx: &Ctx,
    key: &[u8],
    f: impl FnOnce(&mut List) -> Result<R, CmdError>,
) -> Result<Option<R>, CmdError> {
    modify(ctx, key, |value| match value {
        None => Ok(None),
        Some(Value::List(list)) => f(list).map(Some),
        Some(_) => Err(WRONGTYPE.into()),
    })
}

fn push_all(list: &mut List, end: End, request: Request) -> usize {
    list.reserve(end == End::Head, request.args().skip(2).map(<[u8]>::len));
    for item in request.args().skip(2) {
        match end {
            End::Head => list.push_front(item),
            End::Tail => list.push_back(item),
        }
    }
    list.len()
}

fn push(ctx: &mut Ctx, request: Request, end: End) -> CmdResult {
    let create = || Value::List(Box::default());
    let len = upsert(ctx, request.arg(1), create, |value| match value {
        Value::List(list) => Ok(push_all(list, end, request)),
        _ => Err(WRONGTYPE.into()),
    })?;
    ctx.reply.int(len as i64);
    Ok(())
}

fn push_existing(ctx: &mut Ctx, request: Request, end: End) -> CmdResult {
    let len = change_list(ctx, request.arg(1), |list| Ok(push_all(list, end, request)))?;
    ctx.reply.int(len.unwrap_or(0) as i64);
    Ok(())
}

pub(super) fn lpush(ctx: &mut Ctx, request: Request) -> CmdResult {
    push(ctx, request, End::Head)
}

pub(super) fn rpush(ctx: &mut Ctx, request: Request) -> CmdResult {
    push(ctx, request, End::Tail)
}

pub(super) fn lpushx(ctx: &mut Ctx, request: Request) -> CmdResult {
    push_existing(ctx, request, End::Head)
}

pub(super) fn rpushx(ctx: &mut Ctx, request: Request) -> CmdResult {
    push_existing(ctx, request, End::Tail)
}

/// LPOP/RPOP key [count]: one element (or nil), or with a count an array of up to that many
/// (nil for a missing key).
fn pop(ctx: &mut Ctx, request: Request, end: End) -> CmdResult {
    if request.len() > 3 {
        return Err(CmdError::arity(if end == End::Head {
            "lpop"
        } else {
            "rpop"
        }));
    }
    let count = match request.len() {
        3 => Some(parse_count(request.arg(2))?),
        _ => None,
    };
    let popped = change_list(ctx, request.arg(1), |list| {
        let take = count.unwrap_or(1).min(list.len());
        let popped: Vec<Bytes> = match end {
            End::Head => (0..take).filter_map(|_| list.pop_front()).collect(),
            End::Tail => (0..take).filter_map(|_| list.pop_back()).collect(),
        };
        Ok(popped)
    })?;
    match (popped, count) {
        (None, Some(_)) => ctx.reply.null_array(),
        (None, None) => ctx.reply.null(),
        (Some(popped), None) => match popped.first() {
            Some(item) => ctx.reply.bulk(item),
            None => ctx.reply.null(),
        },
        (Some(popped), Some(_)) => {
            ctx.reply.array(popped.len());
            popped.iter().for_each(|item| ctx.reply.bulk(item));
        }
    }
    Ok(())
}

pub(super) fn lpop(ctx: &mut Ctx, request: Request) -> CmdResult {
    pop(ctx, request, End::Head)
}

pub(super) fn rpop(ctx: &mut Ctx, request: Request) -> CmdResult {
    pop(ctx, request, End::Tail)
}

fn is_list(value: &Value) -> bool {
    matches!(value, Value::List(_))
}

/// BLPOP/BRPOP key [key ...] timeout: the first element of the first non-empty list, with its
/// key, logged as LPOP/RPOP (`pop_or_block`).
fn blocking_pop(ctx: &mut Ctx, request: Request, end: End) -> CmdResult {
    let logged_as: &[u8] = if end == End::Head { b"LPOP" } else { b"RPOP" };
    pop_or_block(ctx, request, logged_as, is_list, |ctx, key| {
        let popped = change_list(ctx, key, |list| {
            Ok(match end {
                End::Head => list.pop_front(),
                End::Tail => list.pop_back(),
            })
        })?;
        let Some(item) = popped.flatten() else {
            return Ok(false);
        };
        ctx.reply.array(2);
        ctx.reply.bulk(key);
        ctx.reply.bulk(&item);
        Ok(true)
    })
}

pub(super) fn blpop(ctx: &mut Ctx, request: Request) -> CmdResult {
    blocking_pop(ctx, request, End::Head)
}

pub(super) fn brpop(ctx: &mut Ctx, request: Request) -> CmdResult {
    blocking_pop(ctx, request, End::Tail)
}

pub(super) fn llen(ctx: &mut Ctx, request: Request) -> CmdResult {
    let len = read_list(ctx, request.arg(1), List::len)?;
    ctx.reply.int(len.unwrap_or(0) as i64);
    Ok(())
}

/// LRANGE key start stop. The reply is written straight from the list, so a range over a
/// million elements costs the reply and nothing more.
pub(super) fn lrange(ctx: &mut Ctx, request: Request) -> CmdResult {
    let start = parse_rank(request.arg(2))?;
    let stop = parse_rank(request.arg(3))?;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(request.arg(1), ctx.now, |value| match value {
        None => {
            reply.array(0);
            Ok(())
        }
        Some(Value::List(list)) => {
            match rank_range(start, stop, list.len()) {
                None => reply.array(0),
                Some((first, last)) => {
                    reply.array(last - first + 1);
                    list.range(first, last).for_each(|item| reply.bulk(item));
                }
            }
            Ok(())
        }
        Some(_) => Err(WRONGTYPE.into()),
    })
}

pub(super) fn ltrim(ctx: &mut Ctx, request: Request) -> CmdResult {
    let start = parse_rank(request.arg(2))?;
    let stop = parse_rank(request.arg(3))?;
    change_list(ctx, request.arg(1), |list| {
        match rank_range(start, stop, list.len()) {
            None => list.clear(),
            Some((first, last)) => {
                list.truncate(last + 1);
                list.remove_front(first);
            }
        }
        Ok(())
    })?;
    ctx.reply.ok();
    Ok(())
}

/// A list position: negative counts from the end; None when outside the list.
fn position(index: i64, len: usize) -> Option<usize> {
    let index = if index < 0 {
        index.checked_add(len as i64)?
    } else {
        index
    };
    usize::try_from(index).ok().filter(|&index| index < len)
}

/// LINDEX key index: as Redis, the key is looked up before the index is read.
pub(super) fn lindex(ctx: &mut Ctx, request: Request) -> CmdResult {
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(request.arg(1), ctx.now, |value| match value {
        None => {
            reply.null();
            Ok(())
        }
        Some(Value::List(list)) => {
            let index = parse_rank(request.arg(2))?;
            match position(index, list.len()).and_then(|at| list.get(at)) {
                Some(item) => reply.bulk(item),
                None => reply.null(),
            }
            Ok(())
        }
        Some(_) => Err(WRONGTYPE.into()),
    })
}

/// LSET key index element: as Redis, the key is looked up before the index is read.
pub(super) fn lset(ctx: &mut Ctx, request: Request) -> CmdResult {
    let item = request.arg(3);
    change_list(ctx, request.arg(1), |list| {
        let index = parse_rank(request.arg(2))?;
        let at = position(index, list.len()).ok_or(INDEX_RANGE)?;
        list.set(at, item);
        Ok(())
    })?
    .ok_or(NO_SUCH_KEY)?;
    ctx.reply.ok();
    Ok(())
}

/// LREM key count element: removes up to |count| matches, from the head when count is positive,
/// from the tail when negative, every one when 0.
pub(super) fn lrem(ctx: &mut Ctx, request: Request) -> CmdResult {
    let count = parse_rank(request.arg(2))?;
    let item = request.arg(3);
    let removed = change_list(ctx, request.arg(1), |list| {
        let limit = if count == 0 {
            usize::MAX
        } else {
            usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
        };
        // The matches to remove are all those in one run of positions: from the head to the
        // `limit`th match, or from the `limit`th match from the tail to the end. Only that
        // match is looked for, which takes no memory however many there are.
        let last = list.len().saturating_sub(1);
        let doomed = if count < 0 {
            let from_tail = list.iter().rev().enumerate();
            from_tail
                .filter(|(_, element)| *element == item)
                .take(limit)
                .last()
                .map(|(back, _)| last - back..=last)
        } else {
            let from_head = list.iter().enumerate();
            from_head
                .filter(|(_, element)| *element == item)
                .take(limit)
                .last()
                .map(|(at, _)| 0..=at)
        };
        Ok(doomed.map_or(0, |doomed| {
            list.retain(|at, element| !(doomed.contains(&at) && element == item))
        }))
    })?;
    ctx.reply.int(removed.unwrap_or(0) as i64);
    Ok(())
}

/// List commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new("lpush", -3, Group::List, "Prepends one or more elements to a list. Creates the key if it doesn't exist.", lpush)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_INSERT)
        .acl(bits![Acl: LIST])
        .complexity("O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[key("key"), string("element").multiple()]),
    CommandSpec::new("rpush", -3, Group::List, "Appends one or more elements to a list. Creates the key if it doesn't exist.", rpush)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_INSERT)
        .acl(bits![Acl: LIST])
        .complexity("O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[key("key"), string("element").multiple()]),
    CommandSpec::new("lpushx", -3, Group::List, "Prepends one or more elements to a list only when the list exists.", lpushx)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_INSERT)
        .acl(bits![Acl: LIST])
        .since("2.2.0")
        .complexity("O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("4.0.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[key("key"), string("element").multiple()]),
    CommandSpec::new("rpushx", -3, Group::List, "Appends an element to a list only when the list exists.", rpushx)
        .flags(bits![Flags: WRITE, DENYOOM, FAST])
        .key_specs(RW_INSERT)
        .acl(bits![Acl: LIST])
        .since("2.2.0")
        .complexity("O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("4.0.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[key("key"), string("element").multiple()]),
    CommandSpec::new("lpop", -2, Group::List, "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", lpop)
        .flags(bits![Flags: WRITE, FAST])
        .key_specs(RW_ACCESS_DELETE)
        .acl(bits![Acl: LIST])
        .complexity("O(N) where N is the number of elements returned")
        .history(&[
            ("6.2.0", "Added the `count` argument."),
        ])
        .args(&[key("key"), integer("count").optional().since("6.2.0")]),
    CommandSpec::new("rpop", -2, Group::List, "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", rpop)
        .flags(bits![Flags: WRITE, FAST])
        .key_specs(RW_ACCESS_DELETE)
        .acl(bits![Acl: LIST])
        .complexity("O(N) where N is the number of elements returned")
        .history(&[
            ("6.2.0", "Added the `count` argument."),
        ])
        .args(&[key("key"), integer("count").optional().since("6.2.0")]),
    CommandSpec::new("blpop", -3, Group::List, "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", blpop)
        .flags(bits![Flags: WRITE, NOSCRIPT, BLOCKING])
        .key_specs(RW_ACCESS_DELETE_ALL_BUT_LAST)
        .acl(bits![Acl: LIST])
        .since("2.0.0")
        .complexity("O(N) where N is the number of provided keys.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[key("key").multiple(), double("timeout")]),
    CommandSpec::new("brpop", -3, Group::List, "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", brpop)
        .flags(bits![Flags: WRITE, NOSCRIPT, BLOCKING])
        .key_specs(RW_ACCESS_DELETE_ALL_BUT_LAST)
        .acl(bits![Acl: LIST])
        .since("2.0.0")
        .complexity("O(N) where N is the number of provided keys.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[key("key").multiple(), double("timeout")]),
    CommandSpec::new("llen", 2, Group::List, "Returns the length of a list.", llen)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(RO)
        .acl(bits![Acl: LIST])
        .complexity("O(1)")
        .args(&[key("key")]),
    CommandSpec::new("lrange", 4, Group::List, "Returns a range of elements from a list.", lrange)
        .flags(bits![Flags: READONLY])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: LIST])
        .complexity("O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.")
        .args(&[key("key"), integer("start"), integer("stop")]),
    CommandSpec::new("ltrim", 4, Group::List, "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", ltrim)
        .flags(bits![Flags: WRITE])
        .key_specs(RW_DELETE)
        .acl(bits![Acl: LIST])
        .complexity("O(N) where N is the number of elements to be removed by the operation.")
        .args(&[key("key"), integer("start"), integer("stop")]),
    CommandSpec::new("lindex", 3, Group::List, "Returns an element from a list by its index.", lindex)
        .flags(bits![Flags: READONLY])
        .key_specs(RO_ACCESS)
        .acl(bits![Acl: LIST])
        .complexity("O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).")
        .args(&[key("key"), integer("index")]),
    CommandSpec::new("lrem", 4, Group::List, "Removes elements from a list. Deletes the list if the last element was removed.", lrem)
        .flags(bits![Flags: WRITE])
        .key_specs(RW_DELETE)
        .acl(bits![Acl: LIST])
        .complexity("O(N+M) where N is the length of the list and M is the number of elements removed.")
        .args(&[key("key"), integer("count"), string("element")]),
    CommandSpec::new("lset", 4, Group::List, "Sets the value of an element in a list by its index.", lset)
        .flags(bits![Flags: WRITE, DENYOOM])
        .key_specs(RW_UPDATE)
        .acl(bits![Acl: LIST])
        .complexity("O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).")
        .args(&[key("key"), integer("index"), string("element")]),
];
