//! The CF.* family: RedisBloom's cuckoo filters, with RedisBloom 8.8's syntax, replies and error
//! strings, quirks included (CF.INSERTNX answers integers under RESP3, CF.EXISTS answers 0 on a
//! key of another type, CF.DEL says `Not found` for one). The filter itself is
//! `filter::CuckooFilter`; this file reads arguments and writes replies.
//!
//! Every write replays deterministically: the filter's placement and eviction depend only on its
//! bytes and the request, and a filter created implicitly (with the `cf-*` settings of the
//! moment) is logged as the CF.LOADCHUNK of its header, so replay builds the same shape whatever
//! the settings are by then.

use super::args::{int, int_in, within, Args, Items, Key, KeyItem, KeyItems};
use super::errors::*;
use super::filter_specs::*;
use super::filters;
use super::spec::{command_table, CommandSpec, Docs};
use super::Ctx;
use crate::filter::{
    CuckooFilter, CuckooOptions, FilterError, Insertion, BUCKET_SIZE_RANGE, CUCKOO_HEADER_LEN,
    EXPANSION_RANGE, MAX_ITERATIONS_RANGE,
};
use crate::protocol::Request;
use crate::store::Value;

/// The largest capacity RedisBloom accepts for a cuckoo filter.
const MAX_CAPACITY: i64 = 1 << 30;

fn of(value: &Value) -> Option<&CuckooFilter> {
    match value {
        Value::Cuckoo(filter) => Some(filter),
        _ => None,
    }
}

fn of_mut(value: &mut Value) -> Option<&mut CuckooFilter> {
    match value {
        Value::Cuckoo(filter) => Some(filter),
        _ => None,
    }
}

/// Runs `f` on the filter at `key`: `ERR not found` if missing, WRONGTYPE if of another type.
fn with_filter<R>(
    ctx: &Ctx,
    key: &[u8],
    f: impl FnOnce(&CuckooFilter) -> R,
) -> Result<R, CmdError> {
    ctx.db().get(key, ctx.now, |value| match value {
        Some(value) => of(value).map(f).ok_or(WRONGTYPE.into()),
        None => Err(BF_NOT_FOUND.into()),
    })
}

/// A creation the allocator or `max-filter-memory` refused, in RedisBloom's words where it has
/// them.
fn creation_error(error: FilterError) -> CmdError {
    match error {
        FilterError::TooLarge { .. } => error.into(),
        _ => BF_NO_MEMORY.into(),
    }
}

/// CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e]: the arguments come
/// in pairs; the options are checked before the capacity, in RedisBloom's order, each found
/// anywhere among the arguments as RedisBloom finds it.
struct Reserve<'a> {
    key: &'a [u8],
    options: CuckooOptions,
}

impl<'a> Reserve<'a> {
    /// `defaults` are the `cf-*` settings, for the options not given.
    fn parse(request: Request<'a>, defaults: CuckooOptions) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        if args.word_count() % 2 == 0 {
            return Err(args.arity_error());
        }
        let anywhere = Args::new(request, 1);
        let option = |keyword, default, (min, max): (u16, u16), unparsable, out_of_range| {
            let Some(mut value) = anywhere.after(keyword) else {
                return Ok(default);
            };
            let value = int(value.next_or(unparsable)?, unparsable)?;
            Ok::<u16, CmdError>(
                within(value, i64::from(min)..=i64::from(max), out_of_range)? as u16,
            )
        };
        let key = args.required()?;
        let capacity = int(args.required()?, CF_BAD_CAPACITY)?;
        let max_iterations = option(
            "MAXITERATIONS",
            defaults.max_iterations,
            MAX_ITERATIONS_RANGE,
            CF_BAD_MAX_ITERATIONS,
            CF_MAX_ITERATIONS_RANGE,
        )?;
        let bucket_size = option(
            "BUCKETSIZE",
            defaults.bucket_size,
            BUCKET_SIZE_RANGE,
            CF_BAD_BUCKET_SIZE,
            CF_BUCKET_SIZE_RANGE,
        )?;
        let expansion = option(
            "EXPANSION",
            defaults.expansion,
            EXPANSION_RANGE,
            CF_BAD_EXPANSION,
            CF_EXPANSION_RANGE,
        )?;
        if i64::from(bucket_size) * 2 > capacity || capacity > MAX_CAPACITY {
            return Err(CF_RESERVE_CAPACITY_RANGE.into());
        }
        Ok(Reserve {
            key,
            options: CuckooOptions {
                capacity: capacity as u64,
                bucket_size,
                max_iterations,
                expansion,
            },
        })
    }
}

/// The `cf-*` settings: the shape of a filter made without options.
fn default_options(ctx: &Ctx) -> CuckooOptions {
    let settings = ctx.config().settings();
    CuckooOptions {
        capacity: settings.cf_initial_size,
        bucket_size: settings.cf_bucket_size,
        max_iterations: settings.cf_max_iterations,
        expansion: settings.cf_expansion_factor,
    }
}

fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Reserve { key, options } = Reserve::parse(request, default_options(ctx))?;
    filters::refuse_existing(ctx, key, |v| of(v).is_some())?;
    let filter = CuckooFilter::new(options, ctx.filter_memory_limit()).map_err(creation_error)?;
    let header = filter.header();
    if !ctx
        .db()
        .insert_new(key, Value::Cuckoo(Box::new(filter)), ctx.now)
    {
        return Err(BF_ITEM_EXISTS.into());
    }
    // Options left out take the `cf-*` settings of the moment: the log records the shape made.
    note_created(ctx, key, &header);
    ctx.log_effects_only();
    ctx.reply.ok();
    Ok(())
}

/// How an add's replies are shaped: RedisBloom answers CF.INSERTNX with integers even under
/// RESP3, and a multi-item add reports a full filter per item rather than failing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Single,
    Insert,
    InsertNx,
}

/// CF.ADD and CF.ADDNX key item; CF.INSERT and CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS
/// item..., where, as in RedisBloom, an option is known by its first letter alone.
struct Add<'a> {
    /// The command's name as sent, for the log.
    name: &'a [u8],
    key: &'a [u8],
    /// The capacity of a filter the add creates, with the `cf-*` settings; None for NOCREATE.
    capacity: Option<u64>,
    items: Items<'a>,
}

impl<'a> Add<'a> {
    /// ADD and ADDNX: a missing key is created with `capacity`.
    fn parse_single(request: Request<'a>, capacity: u64) -> Result<Self, CmdError> {
        let KeyItems { key, items } = KeyItems::parse(request)?;
        Ok(Add {
            name: Args::new(request, 0).name(),
            key,
            capacity: Some(capacity),
            items,
        })
    }

    /// INSERT and INSERTNX: `capacity` unless CAPACITY says otherwise, which must be at least
    /// `min_capacity` (twice the bucket size).
    fn parse_insert(
        request: Request<'a>,
        capacity: u64,
        min_capacity: i64,
    ) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        let key = args.required()?;
        let mut capacity = Some(capacity);
        loop {
            match args.required()?.first().map(u8::to_ascii_lowercase) {
                Some(b'c') => {
                    let value = int(args.required()?, CF_BAD_CAPACITY)?;
                    let value =
                        within(value, min_capacity..=MAX_CAPACITY, CF_INSERT_CAPACITY_RANGE)?;
                    // NOCREATE before or after CAPACITY wins either way.
                    capacity = capacity.map(|_| value as u64);
                }
                Some(b'i') => break,
                Some(b'n') => capacity = None,
                _ => return Err(BF_UNKNOWN_ARGUMENT.into()),
            }
        }
        let items = args.items();
        if items.is_empty() {
            return Err(args.arity_error());
        }
        Ok(Add {
            name: args.name(),
            key,
            capacity,
            items,
        })
    }
}

/// Adds the items to the filter at the key, creating it with the capacity (and the `cf-*`
/// settings) unless None, and writes the replies.
fn add_items(ctx: &mut Ctx, command: &Add, unique: bool, shape: Shape) -> CmdResult {
    let Add {
        key,
        capacity,
        items,
        ..
    } = *command;
    let limit = ctx.filter_memory_limit();
    // A logged add passed this check when it ran; replay must not refuse it under other settings.
    let replaying = ctx.session.replaying;
    let (defaults, max_filters) = {
        let settings = ctx.config().settings();
        let defaults = capacity.map(|capacity| CuckooOptions {
            capacity,
            bucket_size: settings.cf_bucket_size,
            max_iterations: settings.cf_max_iterations,
            expansion: settings.cf_expansion_factor,
        });
        (defaults, settings.cf_max_expansions as usize)
    };
    let scratch = &mut ctx.session.scratch;
    scratch.clear();
    let mut apply = |value: &mut Value, created: bool| {
        let Some(filter) = of_mut(value) else {
            return (None, Err(CmdError::from(WRONGTYPE)));
        };
        let header = created.then(|| filter.header());
        // RedisBloom refuses adds to a filter with this many sub-filters, even adds that would
        // fit, so that a flood of items cannot grow it without end.
        if filter.filter_count() >= max_filters && !replaying {
            return (header, Err(CF_MAX_EXPANSIONS.into()));
        }
        for item in items.iter() {
            let insertion = match unique {
                true => filter.insert_unique(item, limit),
                false => filter.insert(item, limit),
            };
            scratch.push(match insertion {
                Insertion::Inserted => Ok(true),
                Insertion::Exists => Ok(false),
                Insertion::NoSpace => Err(CF_FULL.into()),
                Insertion::NoMemory => Err(CF_NO_MEMORY.into()),
            });
        }
        (header, Ok(()))
    };
    let db = ctx.store.db(ctx.session.db);
    let (created, ran) = match defaults {
        Some(options) => db.get_or_create(key, ctx.now, || create(options, limit), apply)?,
        None => db.get_mut(key, ctx.now, |value| match value {
            Some(value) => Ok(apply(value, false)),
            None => Err(CmdError::from(BF_NOT_FOUND)),
        })?,
    };
    if let Some(header) = created {
        note_created(ctx, key, &header);
    }
    ran?;
    if shape != Shape::Single {
        log_without_refused(ctx, command);
    }
    write_added(ctx, shape)
}

/// Items refused for memory (`max-filter-memory`) changed nothing, but replay runs without that
/// limit and would add them: such an insert is logged with only the other items, each of which
/// leaves the filter as it did here.
fn log_without_refused(ctx: &mut Ctx, command: &Add) {
    let refused = |result: &Result<bool, CmdError>| matches!(result, Err(error) if error.message() == CF_NO_MEMORY);
    let results = &ctx.session.scratch;
    if !ctx.logging() || !results.iter().any(refused) {
        return;
    }
    let kept: Vec<&[u8]> = command
        .items
        .iter()
        .zip(results)
        .filter(|(_, result)| !refused(result))
        .map(|(item, _)| item)
        .collect();
    if !kept.is_empty() {
        let head = [command.name, command.key, b"NOCREATE", b"ITEMS"];
        ctx.note_effect(head.into_iter().chain(kept));
    }
    ctx.log_effects_only();
}

/// A filter created by an add, with the `cf-*` settings of the moment.
fn create(options: CuckooOptions, limit: u64) -> Result<Value, CmdError> {
    if options.capacity < u64::from(options.bucket_size) * 2 {
        return Err(CF_CANNOT_CREATE.into());
    }
    let filter = CuckooFilter::new(options, limit).map_err(creation_error)?;
    Ok(Value::Cuckoo(Box::new(filter)))
}

/// Logs a filter created implicitly as the CF.LOADCHUNK of its empty header, so that replay
/// makes the same shape whatever the `cf-*` settings are then.
fn note_created(ctx: &mut Ctx, key: &[u8], header: &[u8]) {
    ctx.note_effect([b"CF.LOADCHUNK".as_slice(), key, b"1", header]);
}

/// The replies of an add, from the results it left in the session's scratch space.
fn write_added(ctx: &mut Ctx, shape: Shape) -> CmdResult {
    let results = &ctx.session.scratch;
    let reply = &mut *ctx.reply;
    if shape == Shape::Single {
        return match results.first() {
            Some(Ok(added)) => {
                reply.boolean(*added);
                Ok(())
            }
            Some(Err(error)) => Err(error.clone()),
            None => Ok(()),
        };
    }
    reply.array(results.len());
    for result in results {
        match (shape, result) {
            (Shape::InsertNx, Ok(added)) => reply.int(i64::from(*added)),
            (Shape::InsertNx, Err(_)) => reply.int(-1),
            (_, Ok(added)) => reply.boolean(*added),
            (_, Err(_)) if reply.is_resp3() => reply.boolean(false),
            (_, Err(_)) => reply.int(-1),
        }
    }
    Ok(())
}

fn default_capacity(ctx: &Ctx) -> u64 {
    ctx.config().settings().cf_initial_size
}

fn add(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = Add::parse_single(request, default_capacity(ctx))?;
    add_items(ctx, &command, false, Shape::Single)
}

fn addnx(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = Add::parse_single(request, default_capacity(ctx))?;
    add_items(ctx, &command, true, Shape::Single)
}

fn insert(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = Add::parse_insert(request, default_capacity(ctx), min_capacity(ctx))?;
    add_items(ctx, &command, false, Shape::Insert)
}

fn insertnx(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = Add::parse_insert(request, default_capacity(ctx), min_capacity(ctx))?;
    add_items(ctx, &command, true, Shape::InsertNx)
}

/// The smallest capacity an INSERT may give: two buckets of `cf-bucket-size`.
fn min_capacity(ctx: &Ctx) -> i64 {
    i64::from(ctx.config().settings().cf_bucket_size) * 2
}

/// CF.EXISTS: 0 for a missing key and for a key of another type, as RedisBloom.
fn exists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item } = KeyItem::parse(request)?;
    let found = ctx.db().get(key, ctx.now, |value| {
        value
            .and_then(of)
            .is_some_and(|filter| filter.contains(item))
    });
    ctx.reply.boolean(found);
    Ok(())
}

fn mexists(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(key, ctx.now, |value| {
        let filter = value.and_then(of);
        reply.array(items.len());
        for item in items.iter() {
            reply.boolean(filter.is_some_and(|filter| filter.contains(item)));
        }
    });
    Ok(())
}

/// CF.COUNT: an integer under both protocols, 0 where CF.EXISTS says false.
fn count(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item } = KeyItem::parse(request)?;
    let count = ctx.db().get(key, ctx.now, |value| {
        value.and_then(of).map_or(0, |filter| filter.count(item))
    });
    ctx.reply.int(count as i64);
    Ok(())
}

/// CF.DEL: `Not found` for a missing key and for a key of another type, as RedisBloom.
fn del(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item } = KeyItem::parse(request)?;
    let deleted = ctx.db().get_mut(key, ctx.now, |value| {
        value
            .and_then(of_mut)
            .map(|filter| filter.delete(item))
            .ok_or(CmdError::from(CF_DEL_NOT_FOUND))
    })?;
    ctx.reply.boolean(deleted);
    Ok(())
}

/// CF.INFO: a map under RESP3, a flat array under RESP2; `Size` is RedisBloom's count.
fn info(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let fields = with_filter(ctx, key, |filter| {
        [
            ("Size", filter.reported_size()),
            ("Number of buckets", filter.buckets()),
            ("Number of filters", filter.filter_count() as u64),
            ("Number of items inserted", filter.items()),
            ("Number of items deleted", filter.deletes()),
            ("Bucket size", u64::from(filter.bucket_size())),
            ("Expansion rate", u64::from(filter.expansion())),
            ("Max iterations", u64::from(filter.max_iterations())),
        ]
    })?;
    ctx.reply.map(fields.len());
    for (label, value) in fields {
        ctx.reply.simple(label);
        ctx.reply.int(value as i64);
    }
    Ok(())
}

/// CF.COMPACT key; declared with any arity, as RedisBloom, and checked here.
fn compact(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse_alone(request)?;
    ctx.db().get_mut(key, ctx.now, |value| {
        value
            .and_then(of_mut)
            .map(CuckooFilter::compact)
            .ok_or(CmdError::from(CF_COMPACT_NOT_FOUND))
    })?;
    ctx.reply.ok();
    Ok(())
}

/// CF.DEBUG key; declared with any arity, as RedisBloom, and checked here.
fn debug(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse_alone(request)?;
    let text = with_filter(ctx, key, |filter| {
        format!(
            "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
            filter.bucket_size(),
            filter.buckets(),
            filter.items(),
            filter.deletes(),
            filter.filter_count(),
            filter.max_iterations(),
            filter.expansion()
        )
    })?;
    ctx.reply.bulk(text.as_bytes());
    Ok(())
}

/// CF.SCANDUMP key iterator: the header at 0, then the sub-filters' slots; `0` and a null once
/// done, and at once for a filter holding no items.
fn scandump(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let iterator = int_in(args.required()?, 0..=i64::MAX, CF_INVALID_POSITION)?;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(key, ctx.now, |value| {
        let filter = match value {
            Some(value) => of(value).ok_or(CmdError::from(WRONGTYPE))?,
            None => return Err(BF_NOT_FOUND.into()),
        };
        reply.array(2);
        if filter.items() == 0 {
            reply.int(0);
            reply.null();
        } else if iterator == 0 {
            reply.int(1);
            reply.bulk(&filter.header());
        } else if let Some((next, chunk)) = filter.dump_chunk(iterator) {
            reply.int(next);
            reply.bulk(chunk);
        } else {
            reply.int(0);
            reply.null();
        }
        Ok(())
    })
}

/// CF.LOADCHUNK key iterator data: iterator 1 creates the filter from a header, any other puts
/// a chunk back where CF.SCANDUMP took it from.
fn loadchunk(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let iterator = int(args.required()?, CF_INVALID_POSITION)?;
    if iterator == 0 {
        return Err(CF_INVALID_POSITION.into());
    }
    let data = args.required()?;
    if iterator == 1 {
        filters::refuse_existing(ctx, key, |v| of(v).is_some())?;
        if data.len() != CUCKOO_HEADER_LEN {
            return Err(CF_INVALID_HEADER.into());
        }
        let filter = CuckooFilter::from_header(data, ctx.filter_memory_limit()).map_err(
            |error| match error {
                FilterError::TooLarge { .. } => CmdError::from(error),
                _ => CF_BAD_HEADER.into(),
            },
        )?;
        if !ctx
            .db()
            .insert_new(key, Value::Cuckoo(Box::new(filter)), ctx.now)
        {
            return Err(BF_ITEM_EXISTS.into());
        }
    } else {
        ctx.db().get_mut(key, ctx.now, |value| match value {
            Some(value) => of_mut(value)
                .ok_or(CmdError::from(WRONGTYPE))?
                .load_chunk(iterator, data)
                .map_err(|_| CmdError::from(CF_BAD_CHUNK)),
            None => Err(BF_NOT_FOUND.into()),
        })?;
    }
    ctx.reply.ok();
    Ok(())
}

/// CF.* as RedisBloom 8.8 declares them (module `bf`, category @cuckoo), except CF.COMPACT,
/// which RedisBloom flags read-only although it moves fingerprints: here it is a write, so that
/// the log and replicas see it. RedisBloom documents neither CF.COMPACT nor CF.DEBUG: COMMAND DOCS
/// has only their group and module.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Bloom:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "cf.reserve", -3, [WRITE, DENYOOM], WRITE_KEY, [WRITE, FAST, CUCKOO], reserve, docs::RESERVE;
    "cf.add", 3, [WRITE, DENYOOM], WRITE_KEY, [WRITE, CUCKOO], add, docs::ADD;
    "cf.addnx", 3, [WRITE, DENYOOM], WRITE_KEY, [WRITE, CUCKOO], addnx, docs::ADDNX;
    "cf.insert", -4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, CUCKOO], insert, docs::INSERT;
    "cf.insertnx", -4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, CUCKOO], insertnx, docs::INSERTNX;
    "cf.exists", 3, [READONLY, FAST], READ_KEY, [READ, CUCKOO], exists, docs::EXISTS;
    "cf.mexists", -3, [READONLY, FAST], READ_KEY, [READ, CUCKOO], mexists, docs::MEXISTS;
    "cf.del", 3, [WRITE, FAST], WRITE_KEY, [WRITE, CUCKOO], del, docs::DEL;
    "cf.count", 3, [READONLY, FAST], READ_KEY, [READ, CUCKOO], count, docs::COUNT;
    "cf.info", 2, [READONLY, FAST], READ_KEY, [READ, FAST, CUCKOO], info, docs::INFO;
    "cf.compact", -1, [WRITE, FAST], FILTER_KEY, [WRITE, CUCKOO], compact, Docs::undocumented();
    "cf.debug", -1, [READONLY, FAST], FILTER_KEY, [READ, CUCKOO], debug, Docs::undocumented();
    "cf.scandump", 3, [READONLY, FAST], WRITE_KEY, [READ, CUCKOO], scandump, docs::SCANDUMP;
    "cf.loadchunk", 4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, CUCKOO], loadchunk, docs::LOADCHUNK;
};

/// What COMMAND DOCS says of each, in RedisBloom 8.8's words.
mod docs {
    use super::super::filter_specs::*;
    use super::super::spec::{block, integer, key, pure_token, string, Arg, Docs};

    pub(super) const RESERVE: Docs = Docs::new("Creates a new Cuckoo Filter")
        .complexity("O(1)")
        .args(&[
            key("key"),
            integer("capacity"),
            block("bucketsize", &[integer("bucketsize")])
                .token("BUCKETSIZE")
                .optional(),
            block("maxiterations", &[integer("maxiterations")])
                .token("MAXITERATIONS")
                .optional(),
            block("expansion", &[integer("expansion")])
                .token("EXPANSION")
                .optional(),
        ]);
    pub(super) const ADD: Docs = Docs::new("Adds an item to a Cuckoo Filter")
        .complexity(ADD_COMPLEXITY)
        .args(KEY_ITEM);
    pub(super) const ADDNX: Docs =
        Docs::new("Adds an item to a Cuckoo Filter if the item did not exist previously.")
            .complexity(ADD_COMPLEXITY)
            .args(KEY_ITEM);
    pub(super) const INSERT: Docs = Docs::new(
        "Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist",
    )
    .complexity(INSERT_COMPLEXITY)
    .args(INSERT_ARGS);
    pub(super) const INSERTNX: Docs = Docs::new(
        "Adds one or more items to a Cuckoo Filter if the items did not exist previously. A \
         filter will be created if it does not exist",
    )
    .complexity(INSERT_COMPLEXITY)
    .args(INSERT_ARGS);
    pub(super) const EXISTS: Docs =
        Docs::new("Checks whether one or more items exist in a Cuckoo Filter")
            .complexity(LOOKUP_COMPLEXITY)
            .args(KEY_ITEM);
    pub(super) const MEXISTS: Docs =
        Docs::new("Checks whether one or more items exist in a Cuckoo Filter")
            .complexity(
                "O(k * n), where k is the number of sub-filters and n is the number of items",
            )
            .args(KEY_ITEMS);
    pub(super) const DEL: Docs = Docs::new("Deletes an item from a Cuckoo Filter")
        .complexity(LOOKUP_COMPLEXITY)
        .args(KEY_ITEM);
    pub(super) const COUNT: Docs =
        Docs::new("Return the number of times an item might be in a Cuckoo Filter")
            .complexity(LOOKUP_COMPLEXITY)
            .args(KEY_ITEM);
    pub(super) const INFO: Docs = Docs::new("Returns information about a Cuckoo Filter")
        .complexity("O(1)")
        .args(&[key("key")]);
    pub(super) const SCANDUMP: Docs = Docs::new("Begins an incremental save of the bloom filter")
        .complexity(DUMP_COMPLEXITY)
        .args(KEY_ITERATOR);
    pub(super) const LOADCHUNK: Docs =
        Docs::new("Restores a filter previously saved using SCANDUMP")
            .complexity(DUMP_COMPLEXITY)
            .args(KEY_ITERATOR_DATA);

    const ADD_COMPLEXITY: &str =
        "O(k + i), where k is the number of sub-filters and i is maxIterations";
    const INSERT_COMPLEXITY: &str = "O(n * (k + i)), where n is the number of items, k is the \
                                     number of sub-filters and i is maxIterations";
    const LOOKUP_COMPLEXITY: &str = "O(k), where k is the number of sub-filters";
    /// As RedisBloom 8.8 declares them, for CF.INSERTNX too: the CAPACITY block holds its token
    /// as a pure token rather than carrying it.
    const INSERT_ARGS: &[Arg] = &[
        key("key"),
        block(
            "capacity",
            &[pure_token("capacity", "CAPACITY"), integer("capacity")],
        )
        .optional(),
        pure_token("nocreate", "NOCREATE").optional(),
        pure_token("items", "ITEMS"),
        string("item").multiple(),
    ];
}
