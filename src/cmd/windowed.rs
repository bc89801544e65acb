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

use super::args::{is, parse_i64, Cursor};
use super::bloom::{
    parse_reserve_capacity, parse_reserve_error_rate, FILTER_KEY, KEY_ITEM, KEY_ITEMS,
};
use super::errors::*;
use super::filters::{self, write_results, Dumped};
use super::spec::{
    bits, double, integer, key, one_of, pure_token, string, CommandSpec, Group, FIRST_RELEASE,
};
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
fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    if request.len() > 7 {
        return Err(CmdError::arity("tbf.reserve"));
    }
    let error_rate = parse_reserve_error_rate(request.arg(2))?.min(MAX_ERROR_RATE);
    let capacity = parse_reserve_capacity(request.arg(3), filters::max_capacity(ctx))?;
    let window_ms = parse_i64(request.arg(4))
        .and_then(|window| u64::try_from(window).ok())
        .ok_or(TBF_BAD_WINDOW)?;
    let mut slices = DEFAULT_SLICES;
    let mut cursor = Cursor::new(request, 5);
    while let Some(arg) = cursor.next() {
        if !is(arg, "SLICES") {
            return Err(SYNTAX.into());
        }
        slices = parse_i64(cursor.next_or(TBF_NO_SLICES)?)
            .ok_or(TBF_BAD_SLICES)
            .and_then(|n| {
                u32::try_from(n)
                    .ok()
                    .filter(|n| (1..=MAX_SLICES).contains(n))
                    .ok_or(TBF_SLICES_RANGE)
            })?;
    }
    if window_ms < u64::from(slices) {
        return Err(TBF_WINDOW_RANGE.into());
    }
    let key = request.arg(1);
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
    let (item, now) = (request.arg(2), ctx.now);
    let added = with_filter_mut(ctx, request.arg(1), |filter, retired| {
        filter.add(item, now, retired)
    })?
    .map_err(add_error)?;
    ctx.reply.boolean(added);
    Ok(())
}

/// TBF.MADD key item [item ...]: one reply each; the first failure ends the run, as BF.MADD's.
fn madd(ctx: &mut Ctx, request: Request) -> CmdResult {
    let now = ctx.now;
    let results = with_filter_mut(ctx, request.arg(1), |filter, retired| {
        let mut results = Vec::with_capacity(request.len() - 2);
        for item in request.args().skip(2) {
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
    let (item, now) = (request.arg(2), ctx.now);
    let found = with_filter(ctx, request.arg(1), |filter| {
        filter.is_some_and(|filter| filter.contains(item, now))
    });
    ctx.reply.boolean(found);
    Ok(())
}

/// TBF.MEXISTS key item [item ...]: TBF.EXISTS for each item, replied as it is looked up.
fn mexists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let (reply, now) = (&mut *ctx.reply, ctx.now);
    let db = ctx.store.db(ctx.session.db);
    db.get(request.arg(1), now, |value| {
        let filter = value.and_then(WindowedFilter::of);
        reply.array(request.len() - 2);
        for item in request.args().skip(2) {
            reply.boolean(filter.is_some_and(|filter| filter.contains(item, now)));
        }
    });
    Ok(())
}

/// TBF.CARD key: the items inside the window now (adds new to their slice); 0 for a missing key.
fn card(ctx: &mut Ctx, request: Request) -> CmdResult {
    let now = ctx.now;
    let items = ctx.db().get(request.arg(1), now, |value| match value {
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

/// TBF.INFO's fields in reply order: the name a single-field INFO takes and the full reply's key.
const INFO_FIELDS: [(InfoField, &str, &str); 6] = [
    (InfoField::Capacity, "CAPACITY", "Capacity"),
    (InfoField::Size, "SIZE", "Size"),
    (InfoField::Slices, "SLICES", "Number of slices"),
    (InfoField::Window, "WINDOW", "Window ms"),
    (InfoField::Items, "ITEMS", "Number of items inserted"),
    (InfoField::ErrorRate, "ERROR", "Error rate"),
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
    if request.len() > 3 {
        return Err(CmdError::arity("tbf.info"));
    }
    let now = ctx.now;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    filters::with_filter(db, now, request.arg(1), |filter: &WindowedFilter| {
        filters::write_info(reply, &INFO_FIELDS, request, |field, reply| {
            write_info_field(filter, field, now, reply)
        })
    })?
}

/// TBF.SCANDUMP key iterator, as BF.SCANDUMP.
fn scandump(ctx: &mut Ctx, request: Request) -> CmdResult {
    filters::scandump::<WindowedFilter>(ctx, request)
}

/// TBF.LOADCHUNK key iterator data, as BF.LOADCHUNK: iterator 1 on a missing key creates the
/// filter from a header; any other chunk goes where TBF.SCANDUMP took it from.
fn loadchunk(ctx: &mut Ctx, request: Request) -> CmdResult {
    filters::loadchunk::<WindowedFilter>(ctx, request)
}

const PROBES_PER_SLICE: &str =
    "O(n * k), where n is the number of slices and k the number of hash functions";

/// TBF.*, declared as a module's commands the way BF.* are.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "tbf.reserve",
        -5,
        Group::Bloom,
        "Creates a time-windowed Bloom filter: items are remembered for a window of time",
        reserve,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: WRITE, FAST, BLOOM])
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
    ]),
    CommandSpec::new(
        "tbf.add",
        3,
        Group::Bloom,
        "Adds an item to a time-windowed Bloom filter, in the slice of the current time",
        add,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(PROBES_PER_SLICE)
    .args(KEY_ITEM),
    CommandSpec::new(
        "tbf.madd",
        -3,
        Group::Bloom,
        "Adds one or more items to a time-windowed Bloom filter",
        madd,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(PROBES_PER_SLICE)
    .args(KEY_ITEMS),
    CommandSpec::new(
        "tbf.exists",
        3,
        Group::Bloom,
        "Checks whether an item was added to a time-windowed Bloom filter within its window",
        exists,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(PROBES_PER_SLICE)
    .args(KEY_ITEM),
    CommandSpec::new(
        "tbf.mexists",
        -3,
        Group::Bloom,
        "Checks whether one or more items were added to a time-windowed Bloom filter within its \
         window",
        mexists,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(PROBES_PER_SLICE)
    .args(KEY_ITEMS),
    CommandSpec::new(
        "tbf.card",
        2,
        Group::Bloom,
        "Returns the number of items added to a time-windowed Bloom filter within its window",
        card,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, FAST, BLOOM])
    .since(FIRST_RELEASE)
    .complexity("O(n), where n is the number of slices")
    .args(&[key("key")]),
    CommandSpec::new(
        "tbf.info",
        -2,
        Group::Bloom,
        "Returns information about a time-windowed Bloom filter",
        info,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, FAST, BLOOM])
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
    ]),
    CommandSpec::new(
        "tbf.scandump",
        3,
        Group::Bloom,
        "Begins an incremental save of a time-windowed Bloom filter",
        scandump,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .since(FIRST_RELEASE)
    .complexity("O(n), where n is the capacity")
    .args(&[key("key"), integer("iterator")]),
    CommandSpec::new(
        "tbf.loadchunk",
        4,
        Group::Bloom,
        "Restores a time-windowed Bloom filter previously saved using TBF.SCANDUMP",
        loadchunk,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .since(FIRST_RELEASE)
    .complexity("O(n), where n is the capacity")
    .args(&[key("key"), integer("iterator"), string("data")]),
];
