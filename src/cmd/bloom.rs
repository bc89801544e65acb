//! The BF.* family, replying as RedisBloom 8 does (see shared/reference/redisbloom-behaviour.md).

use super::args::{is, parse_f64, parse_i64, Cursor};
use super::errors::*;
use super::Ctx;
use crate::config::{Settings, MAX_CAPACITY, MAX_EXPANSION};
use crate::filter::{format_g, BloomChain, ChainOptions};
use crate::protocol::{Reply, Request};
use crate::store::{Db, Value};

fn options_from_settings(settings: &Settings) -> ChainOptions {
    ChainOptions {
        error_rate: settings.bf_error_rate,
        capacity: settings.bf_initial_size,
        expansion: settings.bf_expansion_factor,
    }
}

fn new_filter(options: ChainOptions, settings: &Settings) -> Result<Value, CmdError> {
    Ok(Value::Bloom(BloomChain::new(
        options,
        settings.max_filter_memory,
    )?))
}

/// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
struct Reserve<'a> {
    key: &'a [u8],
    options: ChainOptions,
}

impl<'a> Reserve<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        if request.len() > 7 {
            return Err(CmdError::arity("bf.reserve"));
        }
        let error_rate = parse_reserve_error_rate(request.arg(2))?;
        let capacity = parse_reserve_capacity(request.arg(3))?;
        let mut expansion = None;
        let mut non_scaling = false;
        let mut cursor = Cursor::new(request, 4);
        while let Some(arg) = cursor.next() {
            if is(arg, "EXPANSION") {
                expansion = Some(parse_reserve_expansion(cursor.next_or(BF_NO_EXPANSION)?)?);
            } else if is(arg, "NONSCALING") {
                non_scaling = true;
            }
        }
        let expansion = reserve_expansion(expansion, non_scaling)?;
        Ok(Reserve {
            key: request.arg(1),
            options: ChainOptions {
                error_rate,
                capacity,
                expansion,
            },
        })
    }
}

/// The error_rate argument of a RESERVE.
pub(super) fn parse_reserve_error_rate(arg: &[u8]) -> Result<f64, CmdError> {
    let error_rate = parse_f64(arg).ok_or(BF_BAD_ERROR_RATE)?;
    if !(error_rate > 0.0 && error_rate < 1.0) {
        return Err(BF_ERROR_RATE_RANGE.into());
    }
    Ok(error_rate)
}

/// The capacity argument of a RESERVE.
pub(super) fn parse_reserve_capacity(arg: &[u8]) -> Result<u64, CmdError> {
    let capacity = parse_i64(arg).ok_or(BF_BAD_CAPACITY)?;
    if !(1..=MAX_CAPACITY as i64).contains(&capacity) {
        return Err(BF_CAPACITY_RANGE.into());
    }
    Ok(capacity as u64)
}

/// The value after a RESERVE's EXPANSION keyword.
pub(super) fn parse_reserve_expansion(arg: &[u8]) -> Result<u32, CmdError> {
    let value = parse_i64(arg).ok_or(BF_BAD_EXPANSION)?;
    if !(0..=MAX_EXPANSION as i64).contains(&value) {
        return Err(BF_EXPANSION_RANGE.into());
    }
    Ok(value as u32)
}

/// A RESERVE's growth factor from its EXPANSION and NONSCALING options; 0 is non-scaling.
pub(super) fn reserve_expansion(
    expansion: Option<u32>,
    non_scaling: bool,
) -> Result<u32, CmdError> {
    if non_scaling && expansion.is_some_and(|e| e != 0) {
        return Err(BF_NONSCALING_EXPAND.into());
    }
    Ok(if non_scaling {
        0
    } else {
        expansion.unwrap_or(2)
    })
}

/// The value after an INSERT's CAPACITY keyword.
pub(super) fn parse_insert_capacity(arg: &[u8]) -> Result<u64, CmdError> {
    parse_i64(arg)
        .filter(|capacity| (1..=MAX_CAPACITY as i64).contains(capacity))
        .map(|capacity| capacity as u64)
        .ok_or(BF_INSERT_BAD_CAPACITY.into())
}

/// The value after an INSERT's ERROR keyword.
pub(super) fn parse_insert_error_rate(arg: &[u8]) -> Result<f64, CmdError> {
    parse_f64(arg)
        .filter(|rate| *rate > 0.0 && *rate < 1.0)
        .ok_or(BF_INSERT_BAD_ERROR_RATE.into())
}

/// The value after an INSERT's EXPANSION keyword.
pub(super) fn parse_insert_expansion(arg: &[u8]) -> Result<u32, CmdError> {
    parse_i64(arg)
        .filter(|expansion| (0..=MAX_EXPANSION as i64).contains(expansion))
        .map(|expansion| expansion as u32)
        .ok_or(BF_INSERT_BAD_EXPANSION.into())
}

pub fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = Reserve::parse(request)?;
    let existing = ctx.db().get(command.key, ctx.now, |v| {
        v.map(|v| matches!(v, Value::Bloom(_)))
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
/// is false, which makes a missing key `ERR not found`).
fn with_filter_for_add<R>(
    ctx: &mut Ctx,
    key: &[u8],
    options: Option<ChainOptions>,
    add: impl FnOnce(&mut BloomChain, &mut Vec<Result<bool, CmdError>>, u64) -> R,
) -> Result<R, CmdError> {
    let settings = ctx.shared.config.settings();
    let limit = settings.max_filter_memory;
    let scratch = &mut ctx.session.scratch;
    let db = ctx.shared.store.db(ctx.session.db);
    let apply = |value: &mut Value, _created: bool| match value {
        Value::Bloom(chain) => Ok(add(chain, scratch, limit)),
        _ => Err(CmdError::from(WRONGTYPE)),
    };
    match options {
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
    options: Option<ChainOptions>,
    items: impl Iterator<Item = &'a [u8]>,
) -> CmdResult {
    with_filter_for_add(ctx, key, options, |chain, results, limit| {
        results.clear();
        chain.add_all(items, limit, |result| {
            results.push(result.map_err(CmdError::from));
        });
    })?;
    write_results(ctx.reply, &ctx.session.scratch);
    Ok(())
}

/// One array element per result: a boolean, or the error that ended the run.
pub(super) fn write_results(reply: &mut Reply, results: &[Result<bool, CmdError>]) {
    reply.array(results.len());
    for result in results {
        match result {
            Ok(flag) => reply.boolean(*flag),
            Err(error) => reply.error(error.message()),
        }
    }
}

pub fn madd(ctx: &mut Ctx, request: Request) -> CmdResult {
    let options = options_from_settings(&ctx.shared.config.settings());
    add_many(ctx, request.arg(1), Some(options), request.args().skip(2))
}

/// BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item...
/// Keywords are recognised by their first letters, as RedisBloom does.
struct Insert<'a> {
    key: &'a [u8],
    create: Option<ChainOptions>,
    first_item: usize,
}

impl<'a> Insert<'a> {
    fn parse(request: Request<'a>, defaults: ChainOptions) -> Result<Self, CmdError> {
        let arity = || CmdError::arity("bf.insert");
        let mut options = defaults;
        let (mut no_create, mut non_scaling) = (false, false);
        let mut cursor = Cursor::new(request, 2);
        let mut first_item = None;
        while let Some(arg) = cursor.next() {
            let letter = |i: usize| arg.get(i).map(u8::to_ascii_lowercase);
            match letter(0) {
                Some(b'c') => {
                    options.capacity = parse_insert_capacity(cursor.next().ok_or_else(arity)?)?;
                }
                Some(b'e') if letter(1) == Some(b'r') => {
                    options.error_rate = parse_insert_error_rate(cursor.next().ok_or_else(arity)?)?;
                }
                Some(b'e') => {
                    options.expansion = parse_insert_expansion(cursor.next().ok_or_else(arity)?)?;
                }
                Some(b'n') if letter(2) == Some(b'c') => no_create = true,
                Some(b'n') => non_scaling = true,
                Some(b'i') => {
                    if cursor.remaining() == 0 {
                        return Err(arity());
                    }
                    first_item = Some(request.len() - cursor.remaining());
                    break;
                }
                _ => return Err(BF_UNKNOWN_ARGUMENT.into()),
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

/// BF.EXISTS and BF.MEXISTS answer 0 for a key of another type, as RedisBloom does.
fn contains(value: Option<&Value>, item: &[u8]) -> bool {
    matches!(value, Some(Value::Bloom(chain)) if chain.contains(item))
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
            Some(Value::Bloom(chain)) => chain.contains_all(request.args().skip(2), |found| {
                reply.boolean(found);
            }),
            _ => (2..request.len()).for_each(|_| reply.boolean(false)),
        }
    });
    Ok(())
}

/// Runs `f` on the filter at `key`: `ERR not found` if missing, WRONGTYPE if not a filter.
fn with_filter<R>(
    db: &Db,
    now: u64,
    key: &[u8],
    f: impl FnOnce(&BloomChain) -> R,
) -> Result<R, CmdError> {
    db.get(key, now, |value| match value {
        Some(Value::Bloom(chain)) => Ok(f(chain)),
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
}

impl InfoField {
    const ALL: [InfoField; 5] = [
        InfoField::Capacity,
        InfoField::Size,
        InfoField::Filters,
        InfoField::Items,
        InfoField::Expansion,
    ];

    fn parse(arg: &[u8]) -> Option<InfoField> {
        ["CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"]
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
        }
    }

    fn write(self, chain: &BloomChain, reply: &mut Reply) {
        match self {
            InfoField::Capacity => reply.int(chain.capacity() as i64),
            InfoField::Size => reply.int(chain.memory_bytes() as i64),
            InfoField::Filters => reply.int(chain.links().len() as i64),
            InfoField::Items => reply.int(chain.items() as i64),
            InfoField::Expansion => match chain.expansion() {
                Some(expansion) => reply.int(expansion as i64),
                None => reply.null(),
            },
        }
    }
}

pub fn info(ctx: &mut Ctx, request: Request) -> CmdResult {
    if request.len() > 3 {
        return Err(CmdError::arity("bf.info"));
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

pub fn card(ctx: &mut Ctx, request: Request) -> CmdResult {
    let items = ctx.db().get(request.arg(1), ctx.now, |value| match value {
        Some(Value::Bloom(chain)) => Ok(chain.items()),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(0),
    })?;
    ctx.reply.int(items as i64);
    Ok(())
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
        Some(Value::Bloom(chain)) => Some(chain.load_chunk(iterator, data).map_err(CmdError::from)),
        Some(_) => Some(Err(WRONGTYPE.into())),
        None => None,
    });
    match loaded {
        Some(result) => result?,
        None if iterator == 1 => {
            let limit = ctx.shared.config.settings().max_filter_memory;
            let chain = BloomChain::from_header(data, limit)?;
            if !ctx.db().insert_new(key, Value::Bloom(chain), ctx.now) {
                return Err(BF_BAD_DATA.into());
            }
        }
        None => return Err(BF_NOT_FOUND.into()),
    }
    ctx.reply.ok();
    Ok(())
}

pub fn debug(ctx: &mut Ctx, request: Request) -> CmdResult {
    if request.len() != 2 {
        return Err(CmdError::arity("bf.debug"));
    }
    let lines = with_filter(ctx.db(), ctx.now, request.arg(1), |chain| {
        let mut lines = vec![format!("size:{}", chain.items())];
        lines.extend(chain.links().iter().map(|link| {
            format!(
                "bytes:{} bits:{} hashes:{} hashwidth:64 capacity:{} size:{} ratio:{}",
                link.bytes(),
                link.bits(),
                link.hashes(),
                link.capacity(),
                link.items(),
                format_g(link.error_rate())
            )
        }));
        lines
    })?;
    ctx.reply.array(lines.len());
    for line in lines {
        ctx.reply.bulk(line.as_bytes());
    }
    Ok(())
}
