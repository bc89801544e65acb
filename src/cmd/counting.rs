//! The CBF.* family: counting Bloom filters, which RedisBloom does not have. Everything BF.* also
//! does (creating, adding, checking, INFO, CARD, dumps) follows the BF.* conventions of bloom.rs:
//! the same arities, reply shapes, error strings and defaults. What is new is deletion (CBF.DEL,
//! CBF.MDEL), counts (CBF.COUNT), the counter width (COUNTERBITS) and the extra INFO fields.

use super::args::{is, parse_i64, Cursor};
use super::bloom::{
    parse_reserve_capacity, parse_reserve_error_rate, parse_reserve_expansion, reserve_expansion,
    FILTER_KEY, KEY_ITEM, KEY_ITEMS, MERGE_ARGS, MERGE_KEYS,
};
use super::errors::*;
use super::filters::{self, write_results, InsertOption};
use super::spec::{
    bits, double, integer, key, one_of, pure_token, string, CommandSpec, Group, FIRST_RELEASE,
};
use super::Ctx;
use crate::filter::{CounterBits, CountingChain, CountingOptions};
use crate::protocol::Request;
use crate::store::Value;

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

    fn parse(request: Request<'a>, max_capacity: u64) -> Result<Self, CmdError> {
        if request.len() > Self::MAX_ARGS {
            return Err(CmdError::arity("cbf.reserve"));
        }
        let error_rate = parse_reserve_error_rate(request.arg(2))?;
        let capacity = parse_reserve_capacity(request.arg(3), max_capacity)?;
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

pub(super) fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    let command = Reserve::parse(request, filters::max_capacity(ctx))?;
    filters::reserve::<CountingChain>(ctx, command.key, command.options)
}

/// CBF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] [COUNTERBITS b]
/// ITEMS item...: the options and their errors are BF.INSERT's.
pub(super) fn insert(ctx: &mut Ctx, request: Request) -> CmdResult {
    filters::insert::<CountingChain>(ctx, request, "cbf.insert", whole_words)
}

/// CBF.INSERT's keywords are matched whole: BF.INSERT's first-letter matching cannot tell
/// COUNTERBITS from CAPACITY.
fn whole_words(arg: &[u8]) -> Option<InsertOption> {
    [
        ("CAPACITY", InsertOption::Capacity),
        ("ERROR", InsertOption::Error),
        ("EXPANSION", InsertOption::Expansion),
        ("COUNTERBITS", InsertOption::CounterBits),
        ("NOCREATE", InsertOption::NoCreate),
        ("NONSCALING", InsertOption::NonScaling),
        ("ITEMS", InsertOption::Items),
    ]
    .into_iter()
    .find_map(|(word, option)| is(arg, word).then_some(option))
}

pub(super) fn del(ctx: &mut Ctx, request: Request) -> CmdResult {
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
pub(super) fn mdel(ctx: &mut Ctx, request: Request) -> CmdResult {
    let results = &mut ctx.session.scratch;
    results.clear();
    let db = ctx.store.db(ctx.session.db);
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

pub(super) fn count(ctx: &mut Ctx, request: Request) -> CmdResult {
    let count = ctx.db().get(request.arg(1), ctx.now, |value| match value {
        Some(Value::Counting(chain)) => Ok(chain.count(request.arg(2))),
        Some(_) => Err(CmdError::from(WRONGTYPE)),
        None => Ok(0),
    })?;
    ctx.reply.int(count as i64);
    Ok(())
}

/// CBF.* declared in RedisBloom's style (module `bf`, category @bloom), since sieved's own
/// version of it.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "cbf.reserve",
        -4,
        Group::Bloom,
        "Creates a new counting Bloom filter",
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
        integer("expansion").token("EXPANSION").optional(),
        pure_token("nonscaling", "NONSCALING").optional(),
        integer("counterbits").token("COUNTERBITS").optional(),
    ]),
    CommandSpec::new(
        "cbf.add",
        3,
        Group::Bloom,
        "Adds one copy of an item to a counting Bloom filter",
        filters::add::<CountingChain>,
    )
    .runs(filters::add_run::<CountingChain>)
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(HASHES_OF_LAST_LINK)
    .args(KEY_ITEM),
    CommandSpec::new(
        "cbf.madd",
        -3,
        Group::Bloom,
        "Adds one copy of each of one or more items to a counting Bloom filter. A \
        filter will be created if it does not exist",
        filters::madd::<CountingChain>,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(HASHES_TIMES_ITEMS)
    .args(KEY_ITEMS),
    CommandSpec::new(
        "cbf.insert",
        -4,
        Group::Bloom,
        "Adds one copy of each of one or more items to a counting Bloom filter. A \
        filter will be created with the given options if it does not exist",
        insert,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
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
    ]),
    CommandSpec::new(
        "cbf.exists",
        3,
        Group::Bloom,
        "Checks whether an item exists in a counting Bloom filter",
        filters::exists::<CountingChain>,
    )
    .runs(filters::exists_run::<CountingChain>)
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(HASHES_OF_EACH_LINK)
    .args(KEY_ITEM),
    CommandSpec::new(
        "cbf.mexists",
        -3,
        Group::Bloom,
        "Checks whether one or more items exist in a counting Bloom filter",
        filters::mexists::<CountingChain>,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(HASHES_TIMES_ITEMS)
    .args(KEY_ITEMS),
    CommandSpec::new(
        "cbf.del",
        3,
        Group::Bloom,
        "Deletes one copy of an item from a counting Bloom filter",
        del,
    )
    .flags(bits![Flags: WRITE, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(HASHES_OF_EACH_LINK)
    .args(KEY_ITEM),
    CommandSpec::new(
        "cbf.mdel",
        -3,
        Group::Bloom,
        "Deletes one copy of each of one or more items from a counting Bloom filter",
        mdel,
    )
    .flags(bits![Flags: WRITE, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(HASHES_TIMES_ITEMS)
    .args(KEY_ITEMS),
    CommandSpec::new(
        "cbf.count",
        3,
        Group::Bloom,
        "Returns how many copies of an item a counting Bloom filter holds, at most",
        count,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .since(FIRST_RELEASE)
    .complexity(HASHES_OF_EACH_LINK)
    .args(KEY_ITEM),
    CommandSpec::new(
        "cbf.card",
        2,
        Group::Bloom,
        "Returns the number of items held by a counting Bloom filter",
        filters::card::<CountingChain>,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, FAST, BLOOM])
    .since(FIRST_RELEASE)
    .complexity("O(1)")
    .args(&[key("key")]),
    CommandSpec::new(
        "cbf.info",
        -2,
        Group::Bloom,
        "Returns information about a counting Bloom filter",
        filters::info::<CountingChain>,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, FAST, BLOOM])
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
    ]),
    CommandSpec::new(
        "cbf.merge",
        -3,
        Group::Bloom,
        "Adds counting Bloom filters of the same shape, not yet grown, into a destination, which \
         takes part in the sum if it exists",
        super::merge::cbf_merge,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(MERGE_KEYS)
    .acl(bits![Acl: WRITE, BLOOM])
    .since(FIRST_RELEASE)
    .complexity("O(m), where m is the size of the filters in bytes")
    .args(MERGE_ARGS),
    CommandSpec::new(
        "cbf.scandump",
        3,
        Group::Bloom,
        "Begins an incremental save of the counting Bloom filter",
        filters::scandump::<CountingChain>,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .since(FIRST_RELEASE)
    .complexity("O(n), where n is the capacity")
    .args(&[key("key"), integer("iterator")]),
    CommandSpec::new(
        "cbf.loadchunk",
        4,
        Group::Bloom,
        "Restores a counting Bloom filter previously saved using CBF.SCANDUMP",
        filters::loadchunk::<CountingChain>,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(FILTER_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .since(FIRST_RELEASE)
    .complexity("O(n), where n is the capacity")
    .args(&[key("key"), integer("iterator"), string("data")]),
];

const HASHES_OF_LAST_LINK: &str =
    "O(k), where k is the number of hash functions used by the last sub-filter";
const HASHES_OF_EACH_LINK: &str =
    "O(k * f), where k is the number of hash functions and f the number of sub-filters";
const HASHES_TIMES_ITEMS: &str =
    "O(k * n), where k is the number of hash functions and n is the number of items";
