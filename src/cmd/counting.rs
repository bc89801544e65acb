//! The CBF.* family: counting Bloom filters, which RedisBloom does not have. Everything BF.* also
//! does (creating, adding, checking, INFO, CARD, dumps) follows the BF.* conventions of bloom.rs:
//! the same arities, reply shapes, error strings and defaults. What is new is deletion (CBF.DEL,
//! CBF.MDEL), counts (CBF.COUNT), the counter width (COUNTERBITS) and the extra INFO fields.

use super::args::{is, parse_i64, Cursor};
use super::bloom::{
    parse_insert_capacity, parse_insert_error_rate, parse_insert_expansion, parse_reserve_capacity,
    parse_reserve_error_rate, parse_reserve_expansion, reserve_expansion, write_results,
};
use super::errors::*;
use super::Ctx;
use crate::config::Settings;
use crate::filter::{CounterBits, CountingChain, CountingOptions};
use crate::protocol::{Reply, Request};
use crate::store::{Db, Value};

/// A key created by CBF.ADD, CBF.MADD or CBF.INSERT gets the BF defaults and 4-bit counters.
fn options_from_settings(settings: &Settings) -> CountingOptions {
    CountingOptions {
        error_rate: settings.bf_error_rate,
        capacity: settings.bf_initial_size,
        expansion: settings.bf_expansion_factor,
        counter_bits: CounterBits::Four,
    }
}

fn new_filter(options: CountingOptions, settings: &Settings) -> Result<Value, CmdError> {
    let chain = CountingChain::new(options, settings.max_filter_memory)?;
    Ok(Value::Counting(Box::new(chain)))
}

/// The value after a RESERVE's COUNTERBITS keyword.
fn parse_reserve_counter_bits(arg: &[u8]) -> Result<CounterBits, CmdError> {
    let bits = parse_i64(arg).ok_or(CBF_BAD_COUNTER_BITS)?;
    u64::try_from(bits)
        .ok()
        .and_then(CounterBits::from_bits)
        .ok_or(CBF_COUNTER_BITS_VALUE.into())
}

/// CBF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [COUNTERBITS 4|8]
/// Like BF.RESERVE, unknown words are ignored and more words than the options can use are an
/// arity error.
struct Reserve<'a> {
    key: &'a [u8],
    options: CountingOptions,
}

impl<'a> Reserve<'a> {
    const MAX_ARGS: usize = 9;

    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        if request.len() > Self::MAX_ARGS {
            return Err(CmdError::arity("cbf.reserve"));
        }
        let error_rate = parse_reserve_error_rate(request.arg(2))?;
        let capacity = parse_reserve_capacity(request.arg(3))?;
        let mut expansion = None;
        let mut non_scaling = false;
        let mut counter_bits = CounterBits::Four;
        let mut cursor = Cursor::new(request, 4);
        while let Some(arg) = cursor.next() {
            if is(arg, "EXPANSION") {
                expansion = Some(parse_reserve_expansion(cursor.next_or(BF_NO_EXPANSION)?)?);
            } else if is(arg, "NONSCALING") {
                non_scaling = true;
            } else if is(arg, "COUNTERBITS") {
                counter_bits = parse_reserve_counter_bits(cursor.next_or(CBF_NO_COUNTER_BITS)?)?;
            }
        }
        Ok(Reserve {
            key: request.arg(1),
            options: CountingOptions {
                error_rate,
                capacity,
                expansion: reserve_expansion(expansion, non_scaling)?,
                counter_bits,
            },
        })
    }
}

pub fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = Reserve::parse(request)?;
    let existing = ctx.db().get(command.key, ctx.now, |v| {
        v.map(|v| matches!(v, Value::Counting(_)))
    });
    match existing {
        Some(true) => return Err(BF_ITEM_EXISTS.into()),
        Some(false) => return Err(WRONGTYPE.into()),
        None => {}
    }
    let value = new_filter(command.options, &ctx.shared.config.settings())?;
    if !ctx.db().insert_new(command.key, value, ctx.now) {
        return Err(BF_ITEM_EXISTS.into());
    }
    ctx.reply.ok();
    Ok(())
}

/// Runs `add` on the filter at `key`, creating it with `options` when missing (unless `create`
/// is None, which makes a missing key `ERR not found`).
fn with_filter_for_add<R>(
    ctx: &mut Ctx,
    key: &[u8],
    create: Option<CountingOptions>,
    add: impl FnOnce(&mut CountingChain, &mut Vec<Result<bool, CmdError>>, u64) -> R,
) -> Result<R, CmdError> {
    let settings = ctx.shared.config.settings();
    let limit = settings.max_filter_memory;
    let scratch = &mut ctx.session.scratch;
    let db = ctx.shared.store.db(ctx.session.db);
    let apply = |value: &mut Value, _created: bool| match value {
        Value::Counting(chain) => Ok(add(chain, scratch, limit)),
        _ => Err(CmdError::from(WRONGTYPE)),
    };
    match create {
        Some(options) => {
            db.get_or_create(key, ctx.now, || new_filter(options, &settings), apply)?
        }
        None => db.get_mut(key, ctx.now, |value| match value {
            Some(value) => apply(value, false),
            None => Err(BF_NOT_FOUND.into()),
        }),
    }
}

pub fn add(ctx: &mut Ctx, request: Request) -> CmdResult {
    let options = options_from_settings(&ctx.shared.config.settings());
    let item = request.arg(2);
    let added = with_filter_for_add(ctx, request.arg(1), Some(options), |chain, _, limit| {
        chain.add(item, limit)
    })??;
    ctx.reply.boolean(added);
    Ok(())
}

/// Adds items in order and replies with one element each; the first failure is the last element.
fn add_many<'a>(
    ctx: &mut Ctx,
    key: &[u8],
    create: Option<CountingOptions>,
    items: impl Iterator<Item = &'a [u8]>,
) -> CmdResult {
    with_filter_for_add(ctx, key, create, |chain, results, limit| {
        results.clear();
        chain.add_all(items, limit, |result| {
            results.push(result.map_err(CmdError::from));
        });
    })?;
    write_results(ctx.reply, &ctx.session.scratch);
    Ok(())
}

pub fn madd(ctx: &mut Ctx, request: Request) -> CmdResult {
    let options = options_from_settings(&ctx.shared.config.settings());
    add_many(ctx, request.arg(1), Some(options), request.args().skip(2))
}

/// CBF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] [COUNTERBITS b]
/// ITEMS item... The options and their errors are BF.INSERT's, but keywords are matched whole:
/// BF.INSERT's first-letter matching cannot tell COUNTERBITS from CAPACITY.
struct Insert<'a> {
    key: &'a [u8],
    create: Option<CountingOptions>,
    first_item: usize,
}

impl<'a> Insert<'a> {
    fn parse(request: Request<'a>, defaults: CountingOptions) -> Result<Self, CmdError> {
        let arity = || CmdError::arity("cbf.insert");
        let mut options = defaults;
        let (mut no_create, mut non_scaling) = (false, false);
        let mut cursor = Cursor::new(request, 2);
        let mut first_item = None;
        while let Some(arg) = cursor.next() {
            if is(arg, "CAPACITY") {
                options.capacity = parse_insert_capacity(cursor.next().ok_or_else(arity)?)?;
            } else if is(arg, "ERROR") {
                options.error_rate = parse_insert_error_rate(cursor.next().ok_or_else(arity)?)?;
            } else if is(arg, "EXPANSION") {
                options.expansion = parse_insert_expansion(cursor.next().ok_or_else(arity)?)?;
            } else if is(arg, "COUNTERBITS") {
                let value = cursor.next().ok_or_else(arity)?;
                options.counter_bits = parse_i64(value)
                    .and_then(|bits| u64::try_from(bits).ok())
                    .and_then(CounterBits::from_bits)
                    .ok_or(CBF_INSERT_BAD_COUNTER_BITS)?;
            } else if is(arg, "NOCREATE") {
                no_create = true;
            } else if is(arg, "NONSCALING") {
                non_scaling = true;
            } else if is(arg, "ITEMS") {
                if cursor.remaining() == 0 {
                    return Err(arity());
                }
                first_item = Some(request.len() - cursor.remaining());
                break;
            } else {
                return Err(BF_UNKNOWN_ARGUMENT.into());
            }
        }
        if non_scaling {
            options.expansion = 0;
        }
        Ok(Insert {
            key: request.arg(1),
            create: (!no_create).then_some(options),
            first_item: first_item.ok_or_else(arity)?,
        })
    }
}

pub fn insert(ctx: &mut Ctx, request: Request) -> CmdResult {
    let defaults = options_from_settings(&ctx.shared.config.settings());
    let command = Insert::parse(request, defaults)?;
    add_many(
        ctx,
        command.key,
        command.create,
        request.args().skip(command.first_item),
    )
}

/// CBF.EXISTS and CBF.MEXISTS answer 0 for a key of another type, as BF.EXISTS does.
fn contains(value: Option<&Value>, item: &[u8]) -> bool {
    matches!(value, Some(Value::Counting(chain)) if chain.contains(item))
}

pub fn exists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let found = ctx
        .db()
        .get(request.arg(1), ctx.now, |v| contains(v, request.arg(2)));
    ctx.reply.boolean(found);
    Ok(())
}

pub fn mexists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let reply = &mut *ctx.reply;
    let db = ctx.shared.store.db(ctx.session.db);
    db.get(request.arg(1), ctx.now, |value| {
        reply.array(request.len() - 2);
        match value {
            Some(Value::Counting(chain)) => chain.contains_all(request.args().skip(2), |found| {
                reply.boolean(found);
            }),
            _ => (2..request.len()).for_each(|_| reply.boolean(false)),
        }
    });
    Ok(())
}

pub fn del(ctx: &mut Ctx, request: Request) -> CmdResult {
    let item = request.arg(2);
    let deleted = ctx
        .db()
        .get_mut(request.arg(1), ctx.now, |value| match value {
            Some(Value::Counting(chain)) => Ok(chain.delete(item)),
            Some(_) => Err(CmdError::from(WRONGTYPE)),
            None => Ok(false),
        })?;
    ctx.reply.boolean(deleted);
    Ok(())
}

/// Deletes each item once, in order, under one write lock; on a missing key, nothing is present.
pub fn mdel(ctx: &mut Ctx, request: Request) -> CmdResult {
    let results = &mut ctx.session.scratch;
    results.clear();
    let db = ctx.shared.store.db(ctx.session.db);
    db.get_mut(request.arg(1), ctx.now, |value| match value {
        Some(Value::Counting(chain)) => {
            results.extend(request.args().skip(2).map(|item| Ok(chain.delete(item))));
            Ok(())
        }
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => {
            results.extend(request.args().skip(2).map(|_| Ok(false)));
            Ok(())
        }
    })?;
    write_results(ctx.reply, &ctx.session.scratch);
    Ok(())
}

pub fn count(ctx: &mut Ctx, request: Request) -> CmdResult {
    let count = ctx.db().get(request.arg(1), ctx.now, |value| match value {
        Some(Value::Counting(chain)) => Ok(chain.count(request.arg(2))),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(0),
    })?;
    ctx.reply.int(count as i64);
    Ok(())
}

pub fn card(ctx: &mut Ctx, request: Request) -> CmdResult {
    let items = ctx.db().get(request.arg(1), ctx.now, |value| match value {
        Some(Value::Counting(chain)) => Ok(chain.items()),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(0),
    })?;
    ctx.reply.int(items as i64);
    Ok(())
}

/// Runs `f` on the filter at `key`: `ERR not found` if missing, WRONGTYPE if not a counting filter.
fn with_filter<R>(
    db: &Db,
    now: u64,
    key: &[u8],
    f: impl FnOnce(&CountingChain) -> R,
) -> Result<R, CmdError> {
    db.get(key, now, |value| match value {
        Some(Value::Counting(chain)) => Ok(f(chain)),
        Some(_) => Err(WRONGTYPE.into()),
        None => Err(BF_NOT_FOUND.into()),
    })
}

#[derive(Clone, Copy)]
enum InfoField {
    Capacity,
    Size,
    Filters,
    Items,
    Expansion,
    CounterBits,
    ErrorRate,
    Saturated,
}

impl InfoField {
    const ALL: [InfoField; 8] = [
        InfoField::Capacity,
        InfoField::Size,
        InfoField::Filters,
        InfoField::Items,
        InfoField::Expansion,
        InfoField::CounterBits,
        InfoField::ErrorRate,
        InfoField::Saturated,
    ];

    /// The names CBF.INFO key FIELD accepts, in the order of `ALL`.
    const NAMES: [&'static str; 8] = [
        "CAPACITY",
        "SIZE",
        "FILTERS",
        "ITEMS",
        "EXPANSION",
        "COUNTERBITS",
        "ERROR",
        "SATURATED",
    ];

    fn parse(arg: &[u8]) -> Option<InfoField> {
        Self::NAMES
            .iter()
            .position(|name| is(arg, name))
            .map(|i| Self::ALL[i])
    }

    fn label(self) -> &'static str {
        match self {
            InfoField::Capacity => "Capacity",
            InfoField::Size => "Size",
            InfoField::Filters => "Number of filters",
            InfoField::Items => "Number of items inserted",
            InfoField::Expansion => "Expansion rate",
            InfoField::CounterBits => "Counter bits",
            InfoField::ErrorRate => "Error rate",
            InfoField::Saturated => "Saturated counters",
        }
    }

    fn write(self, chain: &CountingChain, reply: &mut Reply) {
        match self {
            InfoField::Capacity => reply.int(chain.capacity() as i64),
            InfoField::Size => reply.int(chain.memory_bytes() as i64),
            InfoField::Filters => reply.int(chain.links().len() as i64),
            InfoField::Items => reply.int(chain.items() as i64),
            InfoField::Expansion => match chain.expansion() {
                Some(expansion) => reply.int(i64::from(expansion)),
                None => reply.null(),
            },
            InfoField::CounterBits => reply.int(i64::from(chain.counter_bits().bits())),
            InfoField::ErrorRate => reply.double(chain.error_rate()),
            InfoField::Saturated => reply.int(chain.saturated_counters() as i64),
        }
    }
}

pub fn info(ctx: &mut Ctx, request: Request) -> CmdResult {
    if request.len() > 3 {
        return Err(CmdError::arity("cbf.info"));
    }
    let reply = &mut *ctx.reply;
    with_filter(
        ctx.shared.store.db(ctx.session.db),
        ctx.now,
        request.arg(1),
        |chain| {
            if request.len() == 2 {
                reply.map(InfoField::ALL.len());
                for field in InfoField::ALL {
                    reply.simple(field.label());
                    field.write(chain, reply);
                }
                return Ok(());
            }
            let field = InfoField::parse(request.arg(2)).ok_or(BF_INVALID_INFO)?;
            if reply.is_resp3() {
                reply.map(1);
                reply.simple(field.label());
            } else {
                reply.array(1);
            }
            field.write(chain, reply);
            Ok(())
        },
    )?
}

pub fn scandump(ctx: &mut Ctx, request: Request) -> CmdResult {
    let iterator = parse_i64(request.arg(2)).ok_or(BF_SCANDUMP_NOT_NUMERIC)?;
    let step = with_filter(ctx.db(), ctx.now, request.arg(1), |chain| {
        chain.dump_chunk(iterator)
    })?;
    ctx.reply.array(2);
    ctx.reply.int(step.next);
    ctx.reply.bulk(&step.data);
    Ok(())
}

pub fn loadchunk(ctx: &mut Ctx, request: Request) -> CmdResult {
    let iterator = parse_i64(request.arg(2)).ok_or(BF_LOADCHUNK_NOT_NUMERIC)?;
    let (key, data) = (request.arg(1), request.arg(3));
    let loaded = ctx.db().get_mut(key, ctx.now, |value| match value {
        Some(Value::Counting(chain)) => {
            Some(chain.load_chunk(iterator, data).map_err(CmdError::from))
        }
        Some(_) => Some(Err(WRONGTYPE.into())),
        None => None,
    });
    match loaded {
        Some(result) => result?,
        None if iterator == 1 => {
            let limit = ctx.shared.config.settings().max_filter_memory;
            let chain = CountingChain::from_header(data, limit)?;
            if !ctx
                .db()
                .insert_new(key, Value::Counting(Box::new(chain)), ctx.now)
            {
                return Err(BF_BAD_DATA.into());
            }
        }
        None => return Err(BF_NOT_FOUND.into()),
    }
    ctx.reply.ok();
    Ok(())
}
