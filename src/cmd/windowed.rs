//! The TBF.* family: time-windowed Bloom filters, "have I seen this item in the last `window`
//! ms?" (`filter/windowed.rs` states the guarantees). RedisBloom has none; the family follows
//! BF.*'s conventions: RESP2 integers and RESP3 booleans, INFO as a map, EXISTS answering 0 for a
//! missing key, SCANDUMP/LOADCHUNK with BF's iterators, RedisBloom's error strings where the
//! situation is BF's.
//!
//! Every add happens at the command's time, which on replay and on replicas is the time logged
//! with the write: the log replays into the same slices whenever it is replayed. A filter made
//! by TBF.RESERVE takes its layout from `bf-layout`, so it is logged as the TBF.LOADCHUNK of its
//! header, as BF.RESERVE is.

use super::args::{int, within, Args, Key, KeyItem, KeyItems};
use super::errors::*;
use super::filter_options::{max_capacity, reserve_capacity, reserve_error_rate};
use super::filter_specs::*;
use super::filters::{self, loadchunk, scandump, write_results, Dumped, Info};
use super::spec::{command_table, CommandSpec};
use super::Ctx;
use crate::filter::{FilterError, Retired, WindowOptions, WindowedFilter, MAX_SLICES};
use crate::protocol::{Reply, Request};

/// Slices when SLICES is not given: an item is remembered for at least three quarters of the
/// window, at four times the memory of one Bloom filter for the window's items.
const DEFAULT_SLICES: u32 = 4;
/// RedisBloom's cap on the error rate of a Bloom filter, which every slice is.
const MAX_ERROR_RATE: f64 = 0.25;

/// An add refused because the window holds its capacity gets words of its own.
fn add_error(error: FilterError) -> CmdError {
    match error {
        FilterError::Full => TBF_FULL.into(),
        error => error.into(),
    }
}

/// TBF.RESERVE key error_rate capacity window_ms [SLICES n]
struct Reserve<'a> {
    key: &'a [u8],
    error_rate: f64,
    capacity: u64,
    window_ms: u64,
    slices: u32,
}

impl<'a> Reserve<'a> {
    fn parse(request: Request<'a>, max_capacity: u64) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        args.words_at_most(7)?;
        let key = args.required()?;
        let error_rate = reserve_error_rate(args.required()?)?.min(MAX_ERROR_RATE);
        let capacity = reserve_capacity(args.required()?, max_capacity)?;
        let window_ms = args.int_in(0..=u64::MAX, TBF_BAD_WINDOW)?;
        let mut slices = DEFAULT_SLICES;
        while args.check("SLICES") {
            let n = int(args.next_or(TBF_NO_SLICES)?, TBF_BAD_SLICES)?;
            slices = within(n, 1..=i64::from(MAX_SLICES), TBF_SLICES_RANGE)? as u32;
        }
        args.finish(SYNTAX)?;
        if window_ms < u64::from(slices) {
            return Err(TBF_WINDOW_RANGE.into());
        }
        Ok(Reserve {
            key,
            error_rate,
            capacity,
            window_ms,
            slices,
        })
    }
}

fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Reserve {
        key,
        error_rate,
        capacity,
        window_ms,
        slices,
    } = Reserve::parse(request, max_capacity(ctx))?;
    filters::refuse_existing(ctx, key, |v| WindowedFilter::of(v).is_some())?;
    let options = WindowOptions {
        error_rate,
        capacity,
        window_ms,
        slices,
        layout: ctx.config().settings().bf_layout,
    };
    let filter = match WindowedFilter::new(options, ctx.filter_memory_limit()) {
        Err(FilterError::CannotScale) => return Err(BF_RATE_UNREACHABLE.into()),
        other => other?,
    };
    filters::store_reserved(ctx, key, filter)
}

/// Runs `add` on the filter at `key` at the command's time: `ERR not found` if missing (a window
/// has no default), WRONGTYPE for another type. Arrays of slices that aged out are freed once
/// the filter's lock is released.
fn with_filter_mut<R>(
    ctx: &mut Ctx,
    key: &[u8],
    add: impl FnOnce(&mut WindowedFilter, &mut Retired) -> R,
) -> Result<R, CmdError> {
    let mut retired = Retired::default();
    let result = ctx.db().get_mut(key, ctx.now, |value| match value {
        Some(value) => WindowedFilter::of_mut(value)
            .map(|filter| add(filter, &mut retired))
            .ok_or(CmdError::from(WRONGTYPE)),
        None => Err(BF_NOT_FOUND.into()),
    });
    drop(retired);
    result
}

/// TBF.ADD key item: 1 if the item was not in the window before.
fn add(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item } = KeyItem::parse(request)?;
    let now = ctx.now;
    let added = with_filter_mut(ctx, key, |filter, retired| filter.add(item, now, retired))?
        .map_err(add_error)?;
    ctx.reply.boolean(added);
    Ok(())
}

/// TBF.MADD key item [item ...]: one reply each; the first failure ends the run, as BF.MADD's.
fn madd(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let now = ctx.now;
    let results = with_filter_mut(ctx, key, |filter, retired| {
        let mut results = Vec::with_capacity(items.len());
        for item in items.iter() {
            let result = filter.add(item, now, retired).map_err(add_error);
            let failed = result.is_err();
            results.push(result);
            if failed {
                break;
            }
        }
        results
    })?;
    write_results(ctx.reply, &results);
    Ok(())
}

/// Runs `f` on the filter at `key`, if there is one of this type.
fn with_filter<R>(ctx: &Ctx, key: &[u8], f: impl FnOnce(Option<&WindowedFilter>) -> R) -> R {
    ctx.db()
        .get(key, ctx.now, |value| f(value.and_then(WindowedFilter::of)))
}

/// TBF.EXISTS key item: 0 for a missing key, as BF.EXISTS.
fn exists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item } = KeyItem::parse(request)?;
    let now = ctx.now;
    let found = with_filter(ctx, key, |filter| {
        filter.is_some_and(|filter| filter.contains(item, now))
    });
    ctx.reply.boolean(found);
    Ok(())
}

/// TBF.MEXISTS key item [item ...]: TBF.EXISTS for each item, replied as it is looked up.
fn mexists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let (reply, now) = (&mut *ctx.reply, ctx.now);
    let db = ctx.store.db(ctx.session.db);
    db.get(key, now, |value| {
        let filter = value.and_then(WindowedFilter::of);
        reply.array(items.len());
        for item in items.iter() {
            reply.boolean(filter.is_some_and(|filter| filter.contains(item, now)));
        }
    });
    Ok(())
}

/// TBF.CARD key: the items inside the window now (adds new to their slice); 0 for a missing key.
fn card(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let now = ctx.now;
    let items = ctx.db().get(key, now, |value| match value {
        Some(value) => WindowedFilter::of(value)
            .map(|filter| filter.items(now))
            .ok_or(CmdError::from(WRONGTYPE)),
        None => Ok(0),
    })?;
    ctx.reply.int(items.min(i64::MAX as u64) as i64);
    Ok(())
}

#[derive(Clone, Copy)]
enum InfoField {
    Capacity,
    Size,
    Slices,
    Window,
    Items,
    ErrorRate,
}

/// TBF.INFO's fields in reply order, by the name a single-field INFO takes, with the full
/// reply's key.
const INFO_FIELDS: [(&str, (InfoField, &str)); 6] = [
    ("CAPACITY", (InfoField::Capacity, "Capacity")),
    ("SIZE", (InfoField::Size, "Size")),
    ("SLICES", (InfoField::Slices, "Number of slices")),
    ("WINDOW", (InfoField::Window, "Window ms")),
    ("ITEMS", (InfoField::Items, "Number of items inserted")),
    ("ERROR", (InfoField::ErrorRate, "Error rate")),
];

fn write_info_field(filter: &WindowedFilter, field: InfoField, now: u64, reply: &mut Reply) {
    match field {
        InfoField::Capacity => reply.int(filter.capacity() as i64),
        InfoField::Size => reply.int(filter.memory_bytes() as i64),
        InfoField::Slices => reply.int(filter.slice_count() as i64),
        InfoField::Window => reply.int(filter.window_ms() as i64),
        InfoField::Items => reply.int(filter.items(now).min(i64::MAX as u64) as i64),
        InfoField::ErrorRate => reply.double(filter.error_rate()),
    }
}

/// TBF.INFO key [field]: shaped as BF.INFO's and CBF.INFO's replies.
fn info(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Info { key, field } = Info::parse(request)?;
    let now = ctx.now;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    filters::with_filter(db, now, key, |filter: &WindowedFilter| {
        filters::write_info(reply, &INFO_FIELDS, field, |field, reply| {
            write_info_field(filter, field, now, reply)
        })
    })?
}

const PROBES_PER_SLICE: &str =
    "O(n * k), where n is the number of slices and k the number of hash functions";

/// TBF.*, declared as a module's commands the way BF.* are. SCANDUMP and LOADCHUNK are
/// BF.SCANDUMP's and BF.LOADCHUNK's: iterator 1 on a missing key creates the filter from a
/// header; any other chunk goes where TBF.SCANDUMP took it from.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Bloom:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "tbf.reserve", -5, [WRITE, DENYOOM], FILTER_KEY, [WRITE, FAST, BLOOM], reserve, docs::RESERVE;
    "tbf.add", 3, [WRITE, DENYOOM], FILTER_KEY, [WRITE, BLOOM], add, docs::ADD;
    "tbf.madd", -3, [WRITE, DENYOOM], FILTER_KEY, [WRITE, BLOOM], madd, docs::MADD;
    "tbf.exists", 3, [READONLY, FAST], FILTER_KEY, [READ, BLOOM], exists, docs::EXISTS;
    "tbf.mexists", -3, [READONLY, FAST], FILTER_KEY, [READ, BLOOM], mexists, docs::MEXISTS;
    "tbf.card", 2, [READONLY, FAST], FILTER_KEY, [READ, FAST, BLOOM], card, docs::CARD;
    "tbf.info", -2, [READONLY, FAST], FILTER_KEY, [READ, FAST, BLOOM], info, docs::INFO;
    "tbf.scandump", 3, [READONLY, FAST], FILTER_KEY, [READ, BLOOM], scandump::<WindowedFilter>,
        docs::SCANDUMP;
    "tbf.loadchunk", 4, [WRITE, DENYOOM], FILTER_KEY, [WRITE, BLOOM], loadchunk::<WindowedFilter>,
        docs::LOADCHUNK;
};

/// What COMMAND DOCS says of each.
mod docs {
    use super::super::filter_specs::*;
    use super::super::spec::{double, integer, key, one_of, pure_token, Docs, FIRST_RELEASE};
    use super::PROBES_PER_SLICE;

    pub(super) const RESERVE: Docs = Docs::new(
        "Creates a time-windowed Bloom filter: items are remembered for a window of time",
    )
    .since(FIRST_RELEASE)
    .complexity("O(1)")
    .args(&[
        key("key"),
        double("error_rate"),
        integer("capacity"),
        integer("window").summary("Milliseconds an item is remembered for"),
        integer("slices")
            .token("SLICES")
            .summary(
                "Filters the window is cut into, 1 to 64; the oldest is forgotten as time moves on",
            )
            .optional(),
    ]);
    pub(super) const ADD: Docs =
        Docs::new("Adds an item to a time-windowed Bloom filter, in the slice of the current time")
            .since(FIRST_RELEASE)
            .complexity(PROBES_PER_SLICE)
            .args(KEY_ITEM);
    pub(super) const MADD: Docs =
        Docs::new("Adds one or more items to a time-windowed Bloom filter")
            .since(FIRST_RELEASE)
            .complexity(PROBES_PER_SLICE)
            .args(KEY_ITEMS);
    pub(super) const EXISTS: Docs = Docs::new(
        "Checks whether an item was added to a time-windowed Bloom filter within its window",
    )
    .since(FIRST_RELEASE)
    .complexity(PROBES_PER_SLICE)
    .args(KEY_ITEM);
    pub(super) const MEXISTS: Docs = Docs::new(
        "Checks whether one or more items were added to a time-windowed Bloom filter within its \
         window",
    )
    .since(FIRST_RELEASE)
    .complexity(PROBES_PER_SLICE)
    .args(KEY_ITEMS);
    pub(super) const CARD: Docs = Docs::new(
        "Returns the number of items added to a time-windowed Bloom filter within its window",
    )
    .since(FIRST_RELEASE)
    .complexity("O(n), where n is the number of slices")
    .args(&[key("key")]);
    pub(super) const INFO: Docs =
        Docs::new("Returns information about a time-windowed Bloom filter")
            .since(FIRST_RELEASE)
            .complexity("O(n), where n is the number of slices")
            .args(&[
                key("key"),
                one_of(
                    "single_value",
                    &[
                        pure_token("capacity", "CAPACITY"),
                        pure_token("size", "SIZE"),
                        pure_token("slices", "SLICES"),
                        pure_token("window", "WINDOW"),
                        pure_token("items", "ITEMS"),
                        pure_token("error", "ERROR"),
                    ],
                )
                .optional(),
            ]);
    pub(super) const SCANDUMP: Docs =
        Docs::new("Begins an incremental save of a time-windowed Bloom filter")
            .since(FIRST_RELEASE)
            .complexity(DUMP_COMPLEXITY)
            .args(KEY_ITERATOR);
    pub(super) const LOADCHUNK: Docs =
        Docs::new("Restores a time-windowed Bloom filter previously saved using TBF.SCANDUMP")
            .since(FIRST_RELEASE)
            .complexity(DUMP_COMPLEXITY)
            .args(KEY_ITERATOR_DATA);
}
