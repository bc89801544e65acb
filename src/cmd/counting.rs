//! The CBF.* family: counting Bloom filters, which RedisBloom does not have. Everything BF.* also
//! does (creating, adding, checking, INFO, CARD, dumps) follows the BF.* conventions of bloom.rs:
//! the same arities, reply shapes, error strings and defaults. What is new is deletion (CBF.DEL,
//! CBF.MDEL), counts (CBF.COUNT), the counter width (COUNTERBITS) and the extra INFO fields.

use super::args::{int, keyword, Args, KeyItem, KeyItems};
use super::errors::*;
use super::filter_options::{
    growth, max_capacity, reserve_capacity, reserve_error_rate, reserve_expansion, Insert,
    InsertOption,
};
use super::filter_specs::*;
use super::filters::{
    self, add, add_run, card, default_options, exists, exists_run, info, loadchunk, madd, mexists,
    scandump, write_results,
};
use super::merge::merge;
use super::spec::{command_table, CommandSpec};
use super::Ctx;
use crate::filter::{CounterBits, CountingChain, CountingOptions};
use crate::protocol::Request;
use crate::store::Value;

/// CBF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING] [COUNTERBITS 4|8]
/// Like BF.RESERVE, unknown words are ignored and more words than the options can use are an
/// arity error.
struct Reserve<'a> {
    key: &'a [u8],
    options: CountingOptions,
}

#[derive(Clone, Copy)]
enum ReserveOption {
    Expansion,
    NonScaling,
    CounterBits,
}

impl<'a> Reserve<'a> {
    fn parse(request: Request<'a>, max_capacity: u64) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        args.words_at_most(9)?;
        let key = args.required()?;
        let error_rate = reserve_error_rate(args.required()?)?;
        let capacity = reserve_capacity(args.required()?, max_capacity)?;
        let (mut expansion, mut non_scaling) = (None, false);
        let mut counter_bits = CounterBits::Four;
        while let Some(word) = args.next() {
            let options = [
                ("EXPANSION", ReserveOption::Expansion),
                ("NONSCALING", ReserveOption::NonScaling),
                ("COUNTERBITS", ReserveOption::CounterBits),
            ];
            match keyword(word, &options) {
                Some(ReserveOption::Expansion) => {
                    expansion = Some(reserve_expansion(args.next_or(BF_NO_EXPANSION)?)?)
                }
                Some(ReserveOption::NonScaling) => non_scaling = true,
                Some(ReserveOption::CounterBits) => {
                    counter_bits = reserve_counter_bits(args.next_or(CBF_NO_COUNTER_BITS)?)?
                }
                None => {}
            }
        }
        Ok(Reserve {
            key,
            options: CountingOptions {
                error_rate,
                capacity,
                expansion: growth(expansion, non_scaling)?,
                counter_bits,
            },
        })
    }
}

/// The value after a RESERVE's COUNTERBITS keyword.
fn reserve_counter_bits(arg: &[u8]) -> Result<CounterBits, CmdError> {
    let bits = int(arg, CBF_BAD_COUNTER_BITS)?;
    u64::try_from(bits)
        .ok()
        .and_then(CounterBits::from_bits)
        .ok_or(CBF_COUNTER_BITS_VALUE.into())
}

fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = Reserve::parse(request, max_capacity(ctx))?;
    filters::reserve::<CountingChain>(ctx, command.key, command.options)
}

/// CBF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] [COUNTERBITS b]
/// ITEMS item...: the options and their errors are BF.INSERT's.
fn insert(ctx: &mut Ctx, request: Request) -> CmdResult {
    let defaults = default_options::<CountingChain>(ctx);
    let command = Insert::parse(request, defaults, max_capacity(ctx), whole_words)?;
    filters::add_many::<CountingChain>(ctx, command.key, command.create, command.items)
}

/// CBF.INSERT's keywords are matched whole: BF.INSERT's first-letter matching cannot tell
/// COUNTERBITS from CAPACITY.
fn whole_words(arg: &[u8]) -> Option<InsertOption> {
    keyword(
        arg,
        &[
            ("CAPACITY", InsertOption::Capacity),
            ("ERROR", InsertOption::Error),
            ("EXPANSION", InsertOption::Expansion),
            ("COUNTERBITS", InsertOption::CounterBits),
            ("NOCREATE", InsertOption::NoCreate),
            ("NONSCALING", InsertOption::NonScaling),
            ("ITEMS", InsertOption::Items),
        ],
    )
}

/// CBF.DEL key item: 1 if a copy was deleted; 0 on a missing key.
fn del(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item } = KeyItem::parse(request)?;
    let deleted = ctx.db().get_mut(key, ctx.now, |value| match value {
        Some(Value::Counting(chain)) => Ok(chain.delete(item)),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(false),
    })?;
    ctx.reply.boolean(deleted);
    Ok(())
}

/// Deletes each item once, in order, under one write lock; on a missing key, nothing is present.
fn mdel(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItems { key, items } = KeyItems::parse(request)?;
    let results = &mut ctx.session.scratch;
    results.clear();
    let db = ctx.store.db(ctx.session.db);
    db.get_mut(key, ctx.now, |value| match value {
        Some(Value::Counting(chain)) => {
            results.extend(items.iter().map(|item| Ok(chain.delete(item))));
            Ok(())
        }
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => {
            results.extend(items.iter().map(|_| Ok(false)));
            Ok(())
        }
    })?;
    write_results(ctx.reply, &ctx.session.scratch);
    Ok(())
}

/// CBF.COUNT key item: how many copies the filter holds at most; 0 on a missing key.
fn count(ctx: &mut Ctx, request: Request) -> CmdResult {
    let KeyItem { key, item } = KeyItem::parse(request)?;
    let count = ctx.db().get(key, ctx.now, |value| match value {
        Some(Value::Counting(chain)) => Ok(chain.count(item)),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(0),
    })?;
    ctx.reply.int(count as i64);
    Ok(())
}

/// CBF.* declared in RedisBloom's style (module `bf`, category @bloom), since sieved's own
/// version of it.
pub(super) const SPECS: &[CommandSpec] = &command_table! { Bloom:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "cbf.reserve", -4, [WRITE, DENYOOM], FILTER_KEY, [WRITE, FAST, BLOOM], reserve, docs::RESERVE;
    "cbf.add", 3, [WRITE, DENYOOM], FILTER_KEY, [WRITE, BLOOM], add::<CountingChain>, docs::ADD,
        runs(add_run::<CountingChain>);
    "cbf.madd", -3, [WRITE, DENYOOM], FILTER_KEY, [WRITE, BLOOM], madd::<CountingChain>, docs::MADD;
    "cbf.insert", -4, [WRITE, DENYOOM], FILTER_KEY, [WRITE, BLOOM], insert, docs::INSERT;
    "cbf.exists", 3, [READONLY, FAST], FILTER_KEY, [READ, BLOOM], exists::<CountingChain>,
        docs::EXISTS, runs(exists_run::<CountingChain>);
    "cbf.mexists", -3, [READONLY, FAST], FILTER_KEY, [READ, BLOOM], mexists::<CountingChain>,
        docs::MEXISTS;
    "cbf.del", 3, [WRITE, FAST], FILTER_KEY, [WRITE, BLOOM], del, docs::DEL;
    "cbf.mdel", -3, [WRITE, FAST], FILTER_KEY, [WRITE, BLOOM], mdel, docs::MDEL;
    "cbf.count", 3, [READONLY, FAST], FILTER_KEY, [READ, BLOOM], count, docs::COUNT;
    "cbf.card", 2, [READONLY, FAST], FILTER_KEY, [READ, FAST, BLOOM], card::<CountingChain>, docs::CARD;
    "cbf.info", -2, [READONLY, FAST], FILTER_KEY, [READ, FAST, BLOOM], info::<CountingChain>, docs::INFO;
    "cbf.merge", -3, [WRITE, DENYOOM], MERGE_KEYS, [WRITE, BLOOM], merge::<CountingChain>,
        docs::MERGE;
    "cbf.scandump", 3, [READONLY, FAST], FILTER_KEY, [READ, BLOOM], scandump::<CountingChain>,
        docs::SCANDUMP;
    "cbf.loadchunk", 4, [WRITE, DENYOOM], FILTER_KEY, [WRITE, BLOOM], loadchunk::<CountingChain>,
        docs::LOADCHUNK;
};

/// What COMMAND DOCS says of each.
mod docs {
    use super::super::filter_specs::*;
    use super::super::spec::{
        double, integer, key, one_of, pure_token, string, Docs, FIRST_RELEASE,
    };

    pub(super) const RESERVE: Docs = Docs::new("Creates a new counting Bloom filter")
        .since(FIRST_RELEASE)
        .complexity("O(1)")
        .args(&[
            key("key"),
            double("error_rate"),
            integer("capacity"),
            integer("expansion").token("EXPANSION").optional(),
            pure_token("nonscaling", "NONSCALING").optional(),
            integer("counterbits").token("COUNTERBITS").optional(),
        ]);
    pub(super) const ADD: Docs = Docs::new("Adds one copy of an item to a counting Bloom filter")
        .since(FIRST_RELEASE)
        .complexity(HASHES_OF_LAST_LINK)
        .args(KEY_ITEM);
    pub(super) const MADD: Docs = Docs::new(
        "Adds one copy of each of one or more items to a counting Bloom filter. A filter will be \
         created if it does not exist",
    )
    .since(FIRST_RELEASE)
    .complexity(HASHES_TIMES_ITEMS)
    .args(KEY_ITEMS);
    pub(super) const INSERT: Docs = Docs::new(
        "Adds one copy of each of one or more items to a counting Bloom filter. A filter will be \
         created with the given options if it does not exist",
    )
    .since(FIRST_RELEASE)
    .complexity(HASHES_TIMES_ITEMS)
    .args(&[
        key("key"),
        integer("capacity").token("CAPACITY").optional(),
        double("error").token("ERROR").optional(),
        integer("expansion").token("EXPANSION").optional(),
        pure_token("nocreate", "NOCREATE").optional(),
        pure_token("nonscaling", "NONSCALING").optional(),
        integer("counterbits").token("COUNTERBITS").optional(),
        pure_token("items", "ITEMS"),
        string("item").multiple(),
    ]);
    pub(super) const EXISTS: Docs =
        Docs::new("Checks whether an item exists in a counting Bloom filter")
            .since(FIRST_RELEASE)
            .complexity(HASHES_OF_EACH_LINK)
            .args(KEY_ITEM);
    pub(super) const MEXISTS: Docs =
        Docs::new("Checks whether one or more items exist in a counting Bloom filter")
            .since(FIRST_RELEASE)
            .complexity(HASHES_TIMES_ITEMS)
            .args(KEY_ITEMS);
    pub(super) const DEL: Docs =
        Docs::new("Deletes one copy of an item from a counting Bloom filter")
            .since(FIRST_RELEASE)
            .complexity(HASHES_OF_EACH_LINK)
            .args(KEY_ITEM);
    pub(super) const MDEL: Docs =
        Docs::new("Deletes one copy of each of one or more items from a counting Bloom filter")
            .since(FIRST_RELEASE)
            .complexity(HASHES_TIMES_ITEMS)
            .args(KEY_ITEMS);
    pub(super) const COUNT: Docs =
        Docs::new("Returns how many copies of an item a counting Bloom filter holds, at most")
            .since(FIRST_RELEASE)
            .complexity(HASHES_OF_EACH_LINK)
            .args(KEY_ITEM);
    pub(super) const CARD: Docs =
        Docs::new("Returns the number of items held by a counting Bloom filter")
            .since(FIRST_RELEASE)
            .complexity("O(1)")
            .args(&[key("key")]);
    pub(super) const INFO: Docs = Docs::new("Returns information about a counting Bloom filter")
        .since(FIRST_RELEASE)
        .complexity("O(1)")
        .args(&[
            key("key"),
            one_of(
                "single_value",
                &[
                    pure_token("capacity", "CAPACITY"),
                    pure_token("size", "SIZE"),
                    pure_token("filters", "FILTERS"),
                    pure_token("items", "ITEMS"),
                    pure_token("expansion", "EXPANSION"),
                    pure_token("counterbits", "COUNTERBITS"),
                    pure_token("error", "ERROR"),
                    pure_token("saturated", "SATURATED"),
                ],
            )
            .optional(),
        ]);
    pub(super) const MERGE: Docs = Docs::new(
        "Adds counting Bloom filters of the same shape, not yet grown, into a destination, which \
         takes part in the sum if it exists",
    )
    .since(FIRST_RELEASE)
    .complexity(MERGE_COMPLEXITY)
    .args(MERGE_ARGS);
    pub(super) const SCANDUMP: Docs =
        Docs::new("Begins an incremental save of the counting Bloom filter")
            .since(FIRST_RELEASE)
            .complexity(DUMP_COMPLEXITY)
            .args(KEY_ITERATOR);
    pub(super) const LOADCHUNK: Docs =
        Docs::new("Restores a counting Bloom filter previously saved using CBF.SCANDUMP")
            .since(FIRST_RELEASE)
            .complexity(DUMP_COMPLEXITY)
            .args(KEY_ITERATOR_DATA);

    const HASHES_OF_EACH_LINK: &str =
        "O(k * f), where k is the number of hash functions and f the number of sub-filters";
}
