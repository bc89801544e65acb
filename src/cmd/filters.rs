//! What the BF.* and CBF.* families have in common, written once for either filter type:
//! creating, adding (creating a missing key with the defaults), checking, CARD and the dump
//! commands, with RedisBloom's replies and errors. bloom.rs and counting.rs keep what is their
//! own: option parsing (over `filter_options`), INFO fields, and (for counting filters) deletion
//! and counts.

use super::args::{int, keyword, Args, Items, Key, KeyItem, KeyItems};
use super::errors::*;
use super::filter_options::Create;
use super::prefetch::Hashed;
use super::Ctx;
use crate::config::Settings;
use crate::filter::{
    BloomChain, ChainOptions, CounterBits, CountingChain, CountingOptions, DumpStep, FilterError,
    HashedChain, WindowedFilter,
};
use crate::protocol::{Reply, Request};
use crate::store::{Db, Value};

/// A value type as SCANDUMP and LOADCHUNK see it: the Bloom and counting chains, the
/// time-windowed filter.
pub(super) trait Dumped: Sized {
    /// The command that creates a value of this type from a dump header: how the log records a
    /// creation, shape and all.
    const LOADCHUNK: &'static [u8];
    fn from_header(data: &[u8], limit_bytes: u64) -> Result<Self, FilterError>;
    fn into_value(self) -> Value;
    fn of(value: &Value) -> Option<&Self>;
    fn of_mut(value: &mut Value) -> Option<&mut Self>;
    fn dump_chunk(&self, iterator: i64) -> DumpStep;
    fn load_chunk(&mut self, iterator: i64, data: &[u8]) -> Result<(), FilterError>;
}

/// Implements `Dumped` for `$type`, held in `Value::$variant` as `$wrap` makes it, forwarding to
/// the type's inherent methods of the same names.
macro_rules! dumped_value {
    ($type:ty, $variant:ident, $wrap:expr, $loadchunk:literal) => {
        impl Dumped for $type {
            const LOADCHUNK: &'static [u8] = $loadchunk;
            fn from_header(data: &[u8], limit_bytes: u64) -> Result<Self, FilterError> {
                <$type>::from_header(data, limit_bytes)
            }
            fn into_value(self) -> Value {
                Value::$variant($wrap(self))
            }
            fn of(value: &Value) -> Option<&Self> {
                match value {
                    Value::$variant(filter) => Some(filter),
                    _ => None,
                }
            }
            fn of_mut(value: &mut Value) -> Option<&mut Self> {
                match value {
                    Value::$variant(filter) => Some(filter),
                    _ => None,
                }
            }
            fn dump_chunk(&self, iterator: i64) -> DumpStep {
                <$type>::dump_chunk(self, iterator)
            }
            fn load_chunk(&mut self, iterator: i64, data: &[u8]) -> Result<(), FilterError> {
                <$type>::load_chunk(self, iterator, data)
            }
        }
    };
}

dumped_value!(BloomChain, Bloom, std::convert::identity, b"BF.LOADCHUNK");
dumped_value!(CountingChain, Counting, Box::new, b"CBF.LOADCHUNK");
dumped_value!(WindowedFilter, Windowed, Box::new, b"TBF.LOADCHUNK");

/// A filter type as the shared commands see it.
pub(super) trait Filter: Dumped + HashedChain {
    type Options: Copy;
    /// The options of a key created implicitly (ADD, MADD, INSERT on a missing key).
    fn default_options(settings: &Settings) -> Self::Options;
    fn create(options: Self::Options, limit_bytes: u64) -> Result<Self, FilterError>;
    fn add(&mut self, item: &[u8], limit_bytes: u64) -> Result<bool, FilterError>;
    fn contains(&self, item: &[u8]) -> bool;
    fn items(&self) -> u64;
    fn capacity(&self) -> u64;
    fn memory_bytes(&self) -> u64;
    /// INFO's Size.
    fn info_size(&self) -> u64 {
        self.memory_bytes()
    }
    fn link_count(&self) -> usize;
    fn expansion(&self) -> Option<u32>;

    /// How many of `INFO_FIELDS` this type reports, from the first.
    const INFO_FIELD_COUNT: usize = COMMON_INFO_FIELDS;
    /// Writes a field beyond the common ones.
    fn write_own_info(&self, _field: InfoField, _reply: &mut Reply) {}
}

/// The fields of BF.INFO and CBF.INFO, in reply order: a counting filter has the Bloom filter's
/// five and three of its own.
#[derive(Clone, Copy)]
pub(super) enum InfoField {
    Capacity,
    Size,
    Filters,
    Items,
    Expansion,
    CounterBits,
    ErrorRate,
    Saturated,
}

/// Each field by the name a single-field INFO takes (in any case), with its key in the full
/// reply.
const INFO_FIELDS: [(&str, (InfoField, &str)); 8] = [
    ("CAPACITY", (InfoField::Capacity, "Capacity")),
    ("SIZE", (InfoField::Size, "Size")),
    ("FILTERS", (InfoField::Filters, "Number of filters")),
    ("ITEMS", (InfoField::Items, "Number of items inserted")),
    ("EXPANSION", (InfoField::Expansion, "Expansion rate")),
    ("COUNTERBITS", (InfoField::CounterBits, "Counter bits")),
    ("ERROR", (InfoField::ErrorRate, "Error rate")),
    ("SATURATED", (InfoField::Saturated, "Saturated counters")),
];

/// The Bloom filter's fields, which every filter type has.
const COMMON_INFO_FIELDS: usize = 5;

/// Forwards the trait's filter operations to the chain's inherent methods of the same names.
macro_rules! forward_filter_operations {
    () => {
        fn add(&mut self, item: &[u8], limit_bytes: u64) -> Result<bool, FilterError> {
            Self::add(self, item, limit_bytes)
        }
        fn contains(&self, item: &[u8]) -> bool {
            Self::contains(self, item)
        }
        fn items(&self) -> u64 {
            Self::items(self)
        }
        fn capacity(&self) -> u64 {
            Self::capacity(self)
        }
        fn memory_bytes(&self) -> u64 {
            Self::memory_bytes(self)
        }
        fn link_count(&self) -> usize {
            Self::links(self).len()
        }
        fn expansion(&self) -> Option<u32> {
            Self::expansion(self)
        }
    };
}

impl Filter for BloomChain {
    type Options = ChainOptions;

    fn default_options(settings: &Settings) -> ChainOptions {
        ChainOptions {
            error_rate: settings.bf_error_rate,
            capacity: settings.bf_initial_size,
            expansion: settings.bf_expansion_factor,
            non_scaling: false,
            layout: settings.bf_layout,
            hash: settings.bf_hash_scheme,
        }
    }

    fn create(options: ChainOptions, limit_bytes: u64) -> Result<Self, FilterError> {
        BloomChain::new(options, limit_bytes)
    }

    /// RedisBloom's figure, which differs from what sieved's structures take.
    fn info_size(&self) -> u64 {
        BloomChain::info_size(self)
    }

    forward_filter_operations!();
}

impl Filter for CountingChain {
    type Options = CountingOptions;
    const INFO_FIELD_COUNT: usize = INFO_FIELDS.len();

    fn write_own_info(&self, field: InfoField, reply: &mut Reply) {
        match field {
            InfoField::CounterBits => reply.int(i64::from(self.counter_bits().bits())),
            InfoField::ErrorRate => reply.double(self.error_rate()),
            InfoField::Saturated => reply.int(self.saturated_counters() as i64),
            _ => {}
        }
    }

    /// A counting filter created implicitly gets the BF defaults and 4-bit counters.
    fn default_options(settings: &Settings) -> CountingOptions {
        CountingOptions {
            error_rate: settings.bf_error_rate,
            capacity: settings.bf_initial_size,
            expansion: settings.bf_expansion_factor,
            counter_bits: CounterBits::Four,
        }
    }

    fn create(options: CountingOptions, limit_bytes: u64) -> Result<Self, FilterError> {
        CountingChain::new(options, limit_bytes)
    }

    forward_filter_operations!();
}

/// Notes for the write log that `key` was created as the filter whose dump header is `header`:
/// replay then makes exactly this filter, whatever the `bf-*` defaults, the layout and the
/// limits are by then.
fn note_created<F: Dumped>(ctx: &mut Ctx, key: &[u8], header: &[u8]) {
    ctx.note_effect([F::LOADCHUNK, key, b"1".as_slice(), header]);
}

fn header_of<F: Dumped>(filter: &F) -> Vec<u8> {
    filter.dump_chunk(0).data
}

/// A new filter. Growth past what can be represented is `CannotScale` for a filter that grows;
/// for one being created it means the error rate asked for cannot be met.
fn create_filter<F: Filter>(options: F::Options, limit_bytes: u64) -> Result<F, CmdError> {
    match F::create(options, limit_bytes) {
        Ok(filter) => Ok(filter),
        Err(FilterError::CannotScale) => Err(BF_RATE_UNREACHABLE.into()),
        Err(error) => Err(error.into()),
    }
}

pub(super) fn default_options<F: Filter>(ctx: &Ctx) -> F::Options {
    F::default_options(&ctx.config().settings())
}

/// Refuses to create a value at `key` if one is there: `ERR item exists` (RedisBloom's words)
/// if it is of the type being created (`same_type`), WRONGTYPE if not.
pub(super) fn refuse_existing(
    ctx: &Ctx,
    key: &[u8],
    same_type: impl FnOnce(&Value) -> bool,
) -> CmdResult {
    match ctx.db().get(key, ctx.now, |v| v.map(same_type)) {
        Some(true) => Err(BF_ITEM_EXISTS.into()),
        Some(false) => Err(WRONGTYPE.into()),
        None => Ok(()),
    }
}

/// RESERVE: `ERR item exists` for a filter of this type, WRONGTYPE for another value.
pub(super) fn reserve<F: Filter>(ctx: &mut Ctx, key: &[u8], options: F::Options) -> CmdResult {
    refuse_existing(ctx, key, |v| F::of(v).is_some())?;
    let filter = create_filter::<F>(options, ctx.filter_memory_limit())?;
    store_reserved(ctx, key, filter)
}

/// The end of a RESERVE: stores the new `filter` at `key` (`ERR item exists` if a value took
/// the key meanwhile), notes its creation for the log as its LOADCHUNK, and replies OK.
pub(super) fn store_reserved<F: Dumped>(ctx: &mut Ctx, key: &[u8], filter: F) -> CmdResult {
    let header = header_of(&filter);
    if !ctx.db().insert_new(key, filter.into_value(), ctx.now) {
        return Err(BF_ITEM_EXISTS.into());
    }
    note_created::<F>(ctx, key, &header);
    ctx.log_effects_only();
    ctx.reply.ok();
    Ok(())
}

/// Runs `add` on the filter at `key`, creating it as `create` says when missing. The settings
/// (`Settings`, a clone under a lock shared by every connection) are read only to create one: an
/// add to a filter that exists, the common case, reads just the limit's atomics.
fn with_filter_for_add<F: Filter, R>(
    ctx: &mut Ctx,
    key: &[u8],
    create: Create<F::Options>,
    add: impl FnOnce(&mut F, &mut Vec<Result<bool, CmdError>>, u64) -> R,
) -> Result<R, CmdError> {
    let limit = ctx.filter_memory_limit();
    let server = ctx.server;
    let scratch = &mut ctx.session.scratch;
    let db = ctx.store.db(ctx.session.db);
    let apply = |value: &mut Value, created: bool| match F::of_mut(value) {
        Some(filter) => {
            let header = created.then(|| header_of(filter));
            Ok((add(filter, scratch, limit), header))
        }
        None => Err(CmdError::from(WRONGTYPE)),
    };
    let options = match create {
        Create::Defaults => None,
        Create::With(options) => Some(options),
        Create::Never => {
            return db
                .get_mut(key, ctx.now, |value| match value {
                    Some(value) => apply(value, false),
                    None => Err(BF_NOT_FOUND.into()),
                })
                .map(|(result, _)| result);
        }
    };
    let make = || {
        let options = options.unwrap_or_else(|| F::default_options(&server.config().settings()));
        create_filter::<F>(options, limit).map(F::into_value)
    };
    let (result, created) = db.get_or_create(key, ctx.now, make, apply)??;
    if let Some(header) = created {
        note_created::<F>(ctx, key, &header);
    }
    Ok(result)
}

/// ADD key item, creating the key with the defaults.
pub(super) fn add<F: Filter>(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item } = KeyItem::parse(request)?;
    // Looked ahead: hashed already, and its memory on the way.
    let ahead = ctx.session.hashed_ahead.take(item);
    let added = with_filter_for_add::<F, _>(ctx, key, Create::Defaults, |filter, _, limit| {
        add_item(filter, ahead, item, limit)
    })??;
    ctx.reply.boolean(added);
    Ok(())
}

/// Adds `item`, by the hash the look-ahead computed for it if it did so under the filter's scheme.
fn add_item<F: Filter>(
    filter: &mut F,
    ahead: Option<Hashed>,
    item: &[u8],
    limit: u64,
) -> Result<bool, FilterError> {
    match ahead.and_then(|ahead| ahead.for_filter(filter)) {
        Some(hash) => filter.add_hashed(hash, limit),
        None => Filter::add(filter, item, limit),
    }
}

/// ADD for each of `items` in turn (`cmd::runs`), under one look-up of the key, which the first
/// creates with the defaults if it is missing. Each reply is the one `add` would have written.
pub(super) fn add_run<F: Filter>(
    ctx: &mut Ctx,
    key: &[u8],
    items: &[&[u8]],
    after_each: &mut dyn FnMut(bool),
) {
    let limit = ctx.filter_memory_limit();
    let server = ctx.server;
    let make = || {
        let options = F::default_options(&server.config().settings());
        create_filter::<F>(options, limit).map(F::into_value)
    };
    let db = ctx.store.db(ctx.session.db);
    let (reply, hashed) = (&mut *ctx.reply, &mut ctx.session.hashed_ahead);
    let ran = db.get_or_create_for(key, ctx.now, items.len(), make, |value, created| {
        let filter = F::of_mut(value).ok_or(CmdError::from(WRONGTYPE))?;
        let header = created.then(|| header_of(filter));
        for &item in items {
            let added = add_item(filter, hashed.take(item), item, limit);
            let succeeded = added.is_ok();
            match added {
                Ok(added) => reply.boolean(added),
                Err(error) => reply.error(CmdError::from(error).message()),
            }
            after_each(succeeded);
        }
        Ok(header)
    });
    match ran {
        Ok(Ok(Some(header))) => note_created::<F>(ctx, key, &header),
        Ok(Ok(None)) => {}
        Ok(Err(error)) | Err(error) => {
            for _ in items {
                reply.error(error.message());
                after_each(false);
            }
        }
    }
}

/// MADD key item...: adds each item, creating the key with the defaults if it is missing.
pub(super) fn madd<F: Filter>(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    add_many::<F>(ctx, key, Create::Defaults, items)
}

/// Adds items in order and replies with one element each; the first failure is the last element.
pub(super) fn add_many<F: Filter>(
    ctx: &mut Ctx,
    key: &[u8],
    create: Create<F::Options>,
    items: Items,
) -> CmdResult {
    with_filter_for_add::<F, _>(ctx, key, create, |filter, results, limit| {
        results.clear();
        filter.add_all(items.iter(), limit, |result| {
            results.push(result.map_err(CmdError::from))
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

/// EXISTS answers 0 for a missing key and for a key of another type, as RedisBloom does.
pub(super) fn exists<F: Filter>(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item } = KeyItem::parse(request)?;
    exists_run::<F>(ctx, key, &[item], &mut |_| {});
    Ok(())
}

/// EXISTS for each of `items` in turn (`cmd::runs`), under one look-up of the key.
pub(super) fn exists_run<F: Filter>(
    ctx: &mut Ctx,
    key: &[u8],
    items: &[&[u8]],
    after_each: &mut dyn FnMut(bool),
) {
    let db = ctx.store.db(ctx.session.db);
    let (reply, hashed) = (&mut *ctx.reply, &mut ctx.session.hashed_ahead);
    db.get_for(key, ctx.now, items.len(), |value| {
        let filter = value.and_then(F::of);
        for &item in items {
            let ahead = hashed.take(item);
            let found = filter.is_some_and(|filter| {
                match ahead.and_then(|ahead| ahead.for_filter(filter)) {
                    Some(hash) => filter.contains_hashed(hash),
                    None => Filter::contains(filter, item),
                }
            });
            reply.boolean(found);
            after_each(true);
        }
    });
}

pub(super) fn mexists<F: Filter>(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get(key, ctx.now, |value| {
        reply.array(items.len());
        match value.and_then(F::of) {
            Some(filter) => filter.contains_all(items.iter(), |found| reply.boolean(found)),
            None => items.iter().for_each(|_| reply.boolean(false)),
        }
    });
    Ok(())
}

/// CARD: 0 for a missing key, WRONGTYPE for another type.
pub(super) fn card<F: Filter>(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse(request)?;
    let items = ctx.db().get(key, ctx.now, |value| match value {
        Some(value) => F::of(value).map(F::items).ok_or(CmdError::from(WRONGTYPE)),
        None => Ok(0),
    })?;
    ctx.reply.int(items as i64);
    Ok(())
}

/// Runs `f` on the filter at `key`: `ERR not found` if missing, WRONGTYPE if of another type.
pub(super) fn with_filter<F: Dumped, R>(
    db: &Db,
    now: u64,
    key: &[u8],
    f: impl FnOnce(&F) -> R,
) -> Result<R, CmdError> {
    db.get(key, now, |value| match value {
        Some(value) => F::of(value).map(f).ok_or(WRONGTYPE.into()),
        None => Err(BF_NOT_FOUND.into()),
    })
}

/// INFO key [FIELD] of a filter (BF, CBF, TBF): the field is looked up once the filter is
/// found, so that a missing key is `ERR not found` whatever the field.
pub(super) struct Info<'a> {
    pub(super) key: &'a [u8],
    pub(super) field: Option<&'a [u8]>,
}

impl<'a> Info<'a> {
    pub(super) fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        args.words_at_most(3)?;
        Ok(Info {
            key: args.required()?,
            field: args.next(),
        })
    }
}

/// INFO key [FIELD]: every field as a map (a flat array under RESP2) with simple-string keys;
/// one field as a one-element array under RESP2, a one-entry map under RESP3, as RedisBloom 8.
pub(super) fn info<F: Filter>(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = Info::parse(request)?;
    let fields = &INFO_FIELDS[..F::INFO_FIELD_COUNT];
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    with_filter(db, ctx.now, command.key, |filter: &F| {
        write_info(reply, fields, command.field, |field, reply| {
            write_info_field(filter, field, reply)
        })
    })?
}

/// The reply of an INFO key [FIELD] whose fields are `fields` (each with the name FIELD gives
/// and its label), `write_field` writing a field's value: every field as a map, or the one
/// `asked` names as RedisBloom 8 answers it.
pub(super) fn write_info<T: Copy>(
    reply: &mut Reply,
    fields: &[(&str, (T, &str))],
    asked: Option<&[u8]>,
    mut write_field: impl FnMut(T, &mut Reply),
) -> CmdResult {
    let Some(asked) = asked else {
        reply.map(fields.len());
        for &(_, (field, label)) in fields {
            reply.simple(label);
            write_field(field, reply);
        }
        return Ok(());
    };
    let (field, label) = keyword(asked, fields).ok_or(BF_INVALID_INFO)?;
    if reply.is_resp3() {
        reply.map(1);
        reply.simple(label);
    } else {
        reply.array(1);
    }
    write_field(field, reply);
    Ok(())
}

fn write_info_field<F: Filter>(filter: &F, field: InfoField, reply: &mut Reply) {
    match field {
        InfoField::Capacity => reply.int(filter.capacity() as i64),
        InfoField::Size => reply.int(filter.info_size() as i64),
        InfoField::Filters => reply.int(filter.link_count() as i64),
        InfoField::Items => reply.int(filter.items() as i64),
        InfoField::Expansion => match filter.expansion() {
            Some(expansion) => reply.int(i64::from(expansion)),
            None => reply.null(),
        },
        own => filter.write_own_info(own, reply),
    }
}

/// SCANDUMP key iterator, of a BF, CBF or TBF.
struct Scandump<'a> {
    key: &'a [u8],
    iterator: i64,
}

impl<'a> Scandump<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(Scandump {
            key: args.required()?,
            iterator: int(args.required()?, BF_SCANDUMP_NOT_NUMERIC)?,
        })
    }
}

pub(super) fn scandump<F: Dumped>(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Scandump { key, iterator } = Scandump::parse(request)?;
    let step = with_filter(ctx.db(), ctx.now, key, |filter: &F| {
        filter.dump_chunk(iterator)
    })?;
    ctx.reply.array(2);
    ctx.reply.int(step.next);
    ctx.reply.bulk(&step.data);
    Ok(())
}

/// LOADCHUNK key iterator data, of a BF, CBF or TBF.
struct Loadchunk<'a> {
    key: &'a [u8],
    iterator: i64,
    data: &'a [u8],
}

impl<'a> Loadchunk<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(Loadchunk {
            key: args.required()?,
            iterator: int(args.required()?, BF_LOADCHUNK_NOT_NUMERIC)?,
            data: args.required()?,
        })
    }
}

/// LOADCHUNK: iterator 1 on a missing key creates the filter from a header; any other chunk
/// goes where SCANDUMP took it from.
pub(super) fn loadchunk<F: Dumped>(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Loadchunk {
        key,
        iterator,
        data,
    } = Loadchunk::parse(request)?;
    let loaded = ctx.db().get_mut(key, ctx.now, |value| {
        value.map(|value| match F::of_mut(value) {
            Some(filter) => filter.load_chunk(iterator, data).map_err(CmdError::from),
            None => Err(WRONGTYPE.into()),
        })
    });
    match loaded {
        Some(result) => result?,
        None if iterator == 1 => {
            let filter = F::from_header(data, ctx.filter_memory_limit())?;
            if !ctx.db().insert_new(key, filter.into_value(), ctx.now) {
                return Err(BF_BAD_DATA.into());
            }
        }
        None => return Err(BF_NOT_FOUND.into()),
    }
    ctx.reply.ok();
    Ok(())
}
