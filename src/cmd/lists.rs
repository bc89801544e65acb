//! Lists: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, BLPOP, BRPOP, LLEN, LRANGE, LTRIM, LINDEX,
//! LREM, LSET, LPOS and LINSERT, as Redis has them; the commands that move elements out to
//! another list or pop from several (LMPOP, LMOVE and their kin) are in `moves`. A list is a
//! double-ended queue, so both ends are O(1).

mod moves;
pub(super) use moves::SPECS as MOVE_SPECS;

use super::args::{int, keyword, Args, Items, Key, KeyItems};
use super::collection::*;
use super::errors::*;
use super::key_specs::*;
use super::spec::{command_table, CommandSpec};
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

fn push_all(list: &mut List, end: End, items: Items) -> usize {
    list.reserve(end == End::Head, items.iter().map(<[u8]>::len));
    for item in items.iter() {
        match end {
            End::Head => list.push_front(item),
            End::Tail => list.push_back(item),
        }
    }
    list.len()
}

fn push(ctx: &mut Ctx, request: Request, end: End) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let create = || Value::List(Box::default());
    let len = upsert(ctx, key, create, |value| match value {
        Value::List(list) => Ok(push_all(list, end, items)),
        _ => Err(WRONGTYPE.into()),
    })?;
    ctx.reply.int(len as i64);
    Ok(())
}

fn push_existing(ctx: &mut Ctx, request: Request, end: End) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let len = change_list(ctx, key, |list| Ok(push_all(list, end, items)))?;
    ctx.reply.int(len.unwrap_or(0) as i64);
    Ok(())
}

fn lpush(ctx: &mut Ctx, request: Request) -> CmdResult {
    push(ctx, request, End::Head)
}

fn rpush(ctx: &mut Ctx, request: Request) -> CmdResult {
    push(ctx, request, End::Tail)
}

fn lpushx(ctx: &mut Ctx, request: Request) -> CmdResult {
    push_existing(ctx, request, End::Head)
}

fn rpushx(ctx: &mut Ctx, request: Request) -> CmdResult {
    push_existing(ctx, request, End::Tail)
}

/// LPOP/RPOP key [count]: more words are an arity error.
struct Pop<'a> {
    key: &'a [u8],
    count: Option<usize>,
}

impl<'a> Pop<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        args.words_at_most(3)?;
        Ok(Pop {
            key: args.required()?,
            count: args.next().map(parse_count).transpose()?,
        })
    }
}

/// LPOP/RPOP key [count]: one element (or nil), or with a count an array of up to that many
/// (nil for a missing key).
fn pop(ctx: &mut Ctx, request: Request, end: End) -> CmdResult {
    let Pop { key, count } = Pop::parse(request)?;
    let popped = change_list(ctx, key, |list| {
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

fn lpop(ctx: &mut Ctx, request: Request) -> CmdResult {
    pop(ctx, request, End::Head)
}

fn rpop(ctx: &mut Ctx, request: Request) -> CmdResult {
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

fn blpop(ctx: &mut Ctx, request: Request) -> CmdResult {
    blocking_pop(ctx, request, End::Head)
}

fn brpop(ctx: &mut Ctx, request: Request) -> CmdResult {
    blocking_pop(ctx, request, End::Tail)
}

fn llen(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let len = read_list(ctx, key, List::len)?;
    ctx.reply.int(len.unwrap_or(0) as i64);
    Ok(())
}

/// LRANGE and LTRIM key start stop: ranks, negative from the end.
struct Range<'a> {
    key: &'a [u8],
    start: i64,
    stop: i64,
}

impl<'a> Range<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(Range {
            key: args.required()?,
            start: args.int(NOT_INTEGER)?,
            stop: args.int(NOT_INTEGER)?,
        })
    }
}

/// LRANGE key start stop. The reply is written straight from the list, so a range over a
/// million elements costs the reply and nothing more.
fn lrange(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Range { key, start, stop } = Range::parse(request)?;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(key, ctx.now, |value| match value {
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

fn ltrim(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Range { key, start, stop } = Range::parse(request)?;
    change_list(ctx, key, |list| {
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

/// LINDEX key index, and LSET's first words. As Redis, the key is looked up before the index
/// is read: its error is given only for a list.
struct Index<'a> {
    key: &'a [u8],
    index: Result<i64, CmdError>,
}

impl<'a> Index<'a> {
    fn parse(args: &mut Args<'a>) -> Result<Self, CmdError> {
        Ok(Index {
            key: args.required()?,
            index: int(args.required()?, NOT_INTEGER),
        })
    }
}

fn lindex(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Index { key, index } = Index::parse(&mut Args::new(request, 1))?;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(key, ctx.now, |value| match value {
        None => {
            reply.null();
            Ok(())
        }
        Some(Value::List(list)) => {
            match position(index?, list.len()).and_then(|at| list.get(at)) {
                Some(item) => reply.bulk(item),
                None => reply.null(),
            }
            Ok(())
        }
        Some(_) => Err(WRONGTYPE.into()),
    })
}

/// LSET key index element
fn lset(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let Index { key, index } = Index::parse(&mut args)?;
    let item = args.required()?;
    change_list(ctx, key, |list| {
        let at = position(index?, list.len()).ok_or(INDEX_RANGE)?;
        list.set(at, item);
        Ok(())
    })?
    .ok_or(NO_SUCH_KEY)?;
    ctx.reply.ok();
    Ok(())
}

/// LREM key count element
struct Remove<'a> {
    key: &'a [u8],
    count: i64,
    item: &'a [u8],
}

impl<'a> Remove<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(Remove {
            key: args.required()?,
            count: args.int(NOT_INTEGER)?,
            item: args.required()?,
        })
    }
}

/// LREM key count element: removes up to |count| matches, from the head when count is positive,
/// from the tail when negative, every one when 0.
fn lrem(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Remove { key, count, item } = Remove::parse(request)?;
    let removed = change_list(ctx, key, |list| {
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

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]; an option repeated takes its
/// last value, as in Redis.
struct Lpos<'a> {
    key: &'a [u8],
    item: &'a [u8],
    /// Which match to start from, counted from the tail when negative; never 0.
    rank: i64,
    /// None without COUNT (one position or nil); Some(0) for every match.
    count: Option<u64>,
    /// How many elements to look at; 0 for all.
    maxlen: u64,
}

impl<'a> Lpos<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let mut lpos = Lpos {
            key: args.required()?,
            item: args.required()?,
            rank: 1,
            count: None,
            maxlen: 0,
        };
        let not_negative = |value: &[u8], error: &'static str| {
            // Redis gives its one message for a word that is not a number too.
            let value = int(value, error)?;
            u64::try_from(value).map_err(|_| CmdError::from(error))
        };
        while let Some(option) = args.next() {
            let Some(value) = args.next() else {
                return Err(SYNTAX.into());
            };
            if option.eq_ignore_ascii_case(b"RANK") {
                lpos.rank = match int(value, NOT_INTEGER)? {
                    0 => return Err(LPOS_RANK_ZERO.into()),
                    i64::MIN => return Err(LPOS_RANK_RANGE.into()),
                    rank => rank,
                };
            } else if option.eq_ignore_ascii_case(b"COUNT") {
                lpos.count = Some(not_negative(value, LPOS_COUNT_NEGATIVE)?);
            } else if option.eq_ignore_ascii_case(b"MAXLEN") {
                lpos.maxlen = not_negative(value, LPOS_MAXLEN_NEGATIVE)?;
            } else {
                return Err(SYNTAX.into());
            }
        }
        Ok(lpos)
    }

    /// The positions of the matches asked for, from the rank's end, as many as COUNT says.
    fn find(&self, list: &List) -> Vec<usize> {
        let len = list.len();
        let scanned = match self.maxlen {
            0 => len,
            maxlen => usize::try_from(maxlen).unwrap_or(usize::MAX).min(len),
        };
        let wanted = match self.count {
            None => 1,
            Some(0) => usize::MAX,
            Some(count) => usize::try_from(count).unwrap_or(usize::MAX),
        };
        let skip = usize::try_from(self.rank.unsigned_abs() - 1).unwrap_or(usize::MAX);
        let matches = |(_, element): &(usize, &[u8])| *element == self.item;
        if self.rank > 0 {
            let from_head = list.iter().take(scanned).enumerate();
            from_head
                .filter(matches)
                .skip(skip)
                .take(wanted)
                .map(|(at, _)| at)
                .collect()
        } else {
            let from_tail = list.iter().rev().take(scanned).enumerate();
            let found = from_tail.filter(matches).skip(skip).take(wanted);
            found.map(|(back, _)| len - 1 - back).collect()
        }
    }
}

/// LPOS: a position or nil; with COUNT an array of positions (empty for a missing key).
fn lpos(ctx: &mut Ctx, request: Request) -> CmdResult {
    let lpos = Lpos::parse(request)?;
    let found = read_list(ctx, lpos.key, |list| lpos.find(list))?;
    match (lpos.count, found.unwrap_or_default()) {
        (Some(_), found) => {
            ctx.reply.array(found.len());
            found.iter().for_each(|&at| ctx.reply.int(at as i64));
        }
        (None, found) => match found.first() {
            Some(&at) => ctx.reply.int(at as i64),
            None => ctx.reply.null(),
        },
    }
    Ok(())
}

/// LINSERT key BEFORE|AFTER pivot element: the new length, -1 without the pivot, 0 without
/// the list. The side is read before the key is looked up, as in Redis.
fn linsert(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let after = match keyword(args.required()?, &[("BEFORE", false), ("AFTER", true)]) {
        Some(after) => after,
        None => return Err(SYNTAX.into()),
    };
    let (pivot, item) = (args.required()?, args.required()?);
    let len = change_list(ctx, key, |list| {
        let Some(at) = list.iter().position(|element| element == pivot) else {
            return Ok(-1);
        };
        list.insert(at + usize::from(after), item);
        Ok(list.len() as i64)
    })?;
    ctx.reply.int(len.unwrap_or(0));
    Ok(())
}

/// List commands as Redis 7 declares them.
pub(super) const SPECS: &[CommandSpec] = &command_table! { List:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "lpush", -3, [WRITE, DENYOOM, FAST], RW_INSERT, [LIST], lpush, docs::LPUSH;
    "rpush", -3, [WRITE, DENYOOM, FAST], RW_INSERT, [LIST], rpush, docs::RPUSH;
    "lpushx", -3, [WRITE, DENYOOM, FAST], RW_INSERT, [LIST], lpushx, docs::LPUSHX;
    "rpushx", -3, [WRITE, DENYOOM, FAST], RW_INSERT, [LIST], rpushx, docs::RPUSHX;
    "lpop", -2, [WRITE, FAST], RW_ACCESS_DELETE, [LIST], lpop, docs::LPOP;
    "rpop", -2, [WRITE, FAST], RW_ACCESS_DELETE, [LIST], rpop, docs::RPOP;
    "blpop", -3, [WRITE, NOSCRIPT, BLOCKING], RW_ACCESS_DELETE_ALL_BUT_LAST, [LIST], blpop,
        docs::BLPOP;
    "brpop", -3, [WRITE, NOSCRIPT, BLOCKING], RW_ACCESS_DELETE_ALL_BUT_LAST, [LIST], brpop,
        docs::BRPOP;
    "llen", 2, [READONLY, FAST], RO, [LIST], llen, docs::LLEN;
    "lrange", 4, [READONLY], RO_ACCESS, [LIST], lrange, docs::LRANGE;
    "ltrim", 4, [WRITE], RW_DELETE, [LIST], ltrim, docs::LTRIM;
    "lindex", 3, [READONLY], RO_ACCESS, [LIST], lindex, docs::LINDEX;
    "lrem", 4, [WRITE], RW_DELETE, [LIST], lrem, docs::LREM;
    "lset", 4, [WRITE, DENYOOM], RW_UPDATE, [LIST], lset, docs::LSET;
    "lpos", -3, [READONLY], RO_ACCESS, [LIST], lpos, docs::LPOS;
    "linsert", 5, [WRITE, DENYOOM], RW_INSERT, [LIST], linsert, docs::LINSERT;
};

/// What COMMAND DOCS says of each, in Redis 8's words.
mod docs {
    use super::super::spec::{double, integer, key, one_of, pure_token, string, Docs};

    pub(super) const LPUSH: Docs = Docs::new("Prepends one or more elements to a list. Creates the key if it doesn't exist.")
        .complexity("O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[key("key"), string("element").multiple()]);
    pub(super) const RPUSH: Docs = Docs::new("Appends one or more elements to a list. Creates the key if it doesn't exist.")
        .complexity("O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("2.4.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[key("key"), string("element").multiple()]);
    pub(super) const LPUSHX: Docs = Docs::new("Prepends one or more elements to a list only when the list exists.")
        .since("2.2.0")
        .complexity("O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("4.0.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[key("key"), string("element").multiple()]);
    pub(super) const RPUSHX: Docs = Docs::new("Appends an element to a list only when the list exists.")
        .since("2.2.0")
        .complexity("O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.")
        .history(&[
            ("4.0.0", "Accepts multiple `element` arguments."),
        ])
        .args(&[key("key"), string("element").multiple()]);
    pub(super) const LPOP: Docs = Docs::new("Returns the first elements in a list after removing it. Deletes the list if the last element was popped.")
        .complexity("O(N) where N is the number of elements returned")
        .history(&[
            ("6.2.0", "Added the `count` argument."),
        ])
        .args(&[key("key"), integer("count").optional().since("6.2.0")]);
    pub(super) const RPOP: Docs = Docs::new("Returns and removes the last elements of a list. Deletes the list if the last element was popped.")
        .complexity("O(N) where N is the number of elements returned")
        .history(&[
            ("6.2.0", "Added the `count` argument."),
        ])
        .args(&[key("key"), integer("count").optional().since("6.2.0")]);
    pub(super) const BLPOP: Docs = Docs::new("Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.")
        .since("2.0.0")
        .complexity("O(N) where N is the number of provided keys.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[key("key").multiple(), double("timeout")]);
    pub(super) const BRPOP: Docs = Docs::new("Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.")
        .since("2.0.0")
        .complexity("O(N) where N is the number of provided keys.")
        .history(&[
            ("6.0.0", "`timeout` is interpreted as a double instead of an integer."),
        ])
        .args(&[key("key").multiple(), double("timeout")]);
    pub(super) const LLEN: Docs = Docs::new("Returns the length of a list.")
        .complexity("O(1)")
        .args(&[key("key")]);
    pub(super) const LRANGE: Docs = Docs::new("Returns a range of elements from a list.")
        .complexity("O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.")
        .args(&[key("key"), integer("start"), integer("stop")]);
    pub(super) const LTRIM: Docs = Docs::new(
        "Removes elements from both ends a list. Deletes the list if all elements were trimmed.",
    )
    .complexity("O(N) where N is the number of elements to be removed by the operation.")
    .args(&[key("key"), integer("start"), integer("stop")]);
    pub(super) const LINDEX: Docs = Docs::new("Returns an element from a list by its index.")
        .complexity("O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).")
        .args(&[key("key"), integer("index")]);
    pub(super) const LREM: Docs = Docs::new(
        "Removes elements from a list. Deletes the list if the last element was removed.",
    )
    .complexity("O(N+M) where N is the length of the list and M is the number of elements removed.")
    .args(&[key("key"), integer("count"), string("element")]);
    pub(super) const LSET: Docs = Docs::new("Sets the value of an element in a list by its index.")
        .complexity("O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).")
        .args(&[key("key"), integer("index"), string("element")]);
    pub(super) const LPOS: Docs = Docs::new("Returns the index of matching elements in a list.")
        .since("6.0.6")
        .complexity("O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.")
        .args(&[
            key("key"),
            string("element"),
            integer("rank").token("RANK").optional(),
            integer("num-matches").token("COUNT").optional(),
            integer("len").token("MAXLEN").optional(),
        ]);
    pub(super) const LINSERT: Docs = Docs::new("Inserts an element before or after another element in a list.")
        .since("2.2.0")
        .complexity("O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).")
        .args(&[
            key("key"),
            one_of("where", &[pure_token("before", "BEFORE"), pure_token("after", "AFTER")]),
            string("pivot"),
            string("element"),
        ]);
}
