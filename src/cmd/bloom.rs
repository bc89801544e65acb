//! The BF.* family, replying as RedisBloom 8 does (see shared/reference/redisbloom-behaviour.md).

use super::args::{is, parse_f64, parse_i64, Cursor};
use super::errors::*;
use super::filters::{self, InsertOption};
use super::spec::{
    bits, block, double, integer, key, one_of, pure_token, string, Arg, CommandSpec, Group,
    KeySpec, FIRST_RELEASE,
};
use super::Ctx;
use crate::config::{MAX_CAPACITY, MAX_EXPANSION};
use crate::filter::{format_g, BloomChain, ChainOptions, HashScheme, Layout};
use crate::protocol::Request;

/// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
struct Reserve<'a> {
    key: &'a [u8],
    options: ChainOptions,
}

impl<'a> Reserve<'a> {
    /// `layout` and `hash` are the server's `bf-layout` and `bf-hash-scheme`: RESERVE has no
    /// option for them.
    fn parse(
        request: Request<'a>,
        layout: Layout,
        hash: HashScheme,
        max_capacity: u64,
    ) -> Result<Self, CmdError> {
        if request.len() > 7 {
            return Err(CmdError::arity("bf.reserve"));
        }
        let error_rate = parse_reserve_error_rate(request.arg(2))?;
        let capacity = parse_reserve_capacity(request.arg(3), max_capacity)?;
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
        let growth = reserve_expansion(expansion, non_scaling)?;
        // A non-scaling filter keeps the expansion stated (or the default), as RedisBloom's
        // dump header shows it.
        let (expansion, non_scaling) = match growth {
            0 => (expansion.unwrap_or(2), true),
            growth => (growth, false),
        };
        Ok(Reserve {
            key: request.arg(1),
            options: ChainOptions {
                error_rate,
                capacity,
                expansion,
                non_scaling,
                layout,
                hash,
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

/// The capacity argument of a RESERVE, at most `max` (`filters::max_capacity`).
pub(super) fn parse_reserve_capacity(arg: &[u8], max: u64) -> Result<u64, CmdError> {
    let capacity = parse_i64(arg).ok_or(BF_BAD_CAPACITY)?;
    if capacity < 1 || capacity as u64 > max {
        return Err(match max {
            MAX_CAPACITY => BF_CAPACITY_RANGE.into(),
            max => bf_capacity_range(max),
        });
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

pub(super) fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    let defaults = filters::default_options::<BloomChain>(ctx);
    let max_capacity = filters::max_capacity(ctx);
    let command = Reserve::parse(request, defaults.layout, defaults.hash, max_capacity)?;
    filters::reserve::<BloomChain>(ctx, command.key, command.options)
}

/// BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item...
pub(super) fn insert(ctx: &mut Ctx, request: Request) -> CmdResult {
    filters::insert::<BloomChain>(ctx, request, "bf.insert", first_letters)
}

/// BF.INSERT's keywords are recognised by their first letters, as RedisBloom does.
fn first_letters(arg: &[u8]) -> Option<InsertOption> {
    let letter = |i: usize| arg.get(i).map(u8::to_ascii_lowercase);
    Some(match letter(0)? {
        b'c' => InsertOption::Capacity,
        b'e' if letter(1) == Some(b'r') => InsertOption::Error,
        b'e' => InsertOption::Expansion,
        b'n' if letter(2) == Some(b'c') => InsertOption::NoCreate,
        b'n' => InsertOption::NonScaling,
        b'i' => InsertOption::Items,
        _ => return None,
    })
}

pub(super) fn debug(ctx: &mut Ctx, request: Request) -> CmdResult {
    if request.len() != 2 {
        return Err(CmdError::arity("bf.debug"));
    }
    let lines =
        filters::with_filter::<BloomChain, _>(ctx.db(), ctx.now, request.arg(1), |chain| {
            // Classic links read as RedisBloom's; blocked ones say so at the end.
            let layout = match chain.layout() {
                Layout::Classic => String::new(),
                Layout::Blocked => format!(" layout:{}", Layout::Blocked.name()),
            };
            let mut lines = vec![format!("size:{}", chain.items())];
            lines.extend(chain.links().iter().map(|link| {
                format!(
                    "bytes:{} bits:{} hashes:{} hashwidth:64 capacity:{} size:{} ratio:{}{layout}",
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

/// BF.* as RedisBloom 8 declares them: module `bf`, its flags, categories and documentation.
pub(super) const SPECS: &[CommandSpec] = &[
    CommandSpec::new(
        "bf.reserve",
        -4,
        Group::Bloom,
        "Creates a new Bloom Filter",
        reserve,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(WRITE_KEY)
    .acl(bits![Acl: WRITE, FAST, BLOOM])
    .complexity("O(1)")
    .args(&[
        key("key"),
        double("error_rate"),
        integer("capacity"),
        block("expansion", &[integer("expansion")])
            .token("EXPANSION")
            .optional(),
        pure_token("nonscaling", "NONSCALING").optional(),
    ]),
    CommandSpec::new(
        "bf.add",
        3,
        Group::Bloom,
        "Adds an item to a Bloom Filter",
        filters::add::<BloomChain>,
    )
    .runs(filters::add_run::<BloomChain>)
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(WRITE_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .complexity(HASHES_OF_LAST_LINK)
    .args(KEY_ITEM),
    CommandSpec::new(
        "bf.madd",
        -3,
        Group::Bloom,
        ADD_MANY,
        filters::madd::<BloomChain>,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(WRITE_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .complexity(HASHES_TIMES_ITEMS)
    .args(KEY_ITEMS),
    CommandSpec::new("bf.insert", -4, Group::Bloom, ADD_MANY, insert)
        .flags(bits![Flags: WRITE, DENYOOM])
        .key_specs(WRITE_KEY)
        .acl(bits![Acl: WRITE, BLOOM])
        .complexity(HASHES_TIMES_ITEMS)
        .args(&[
            key("key"),
            block("capacity", &[integer("capacity")])
                .token("CAPACITY")
                .optional(),
            block("error", &[double("error")]).token("ERROR").optional(),
            block("expansion", &[integer("expansion")])
                .token("EXPANSION")
                .optional(),
            pure_token("nocreate", "NOCREATE").optional(),
            pure_token("nonscaling", "NONSCALING").optional(),
            pure_token("items", "ITEMS"),
            string("item").multiple(),
        ]),
    CommandSpec::new(
        "bf.exists",
        3,
        Group::Bloom,
        "Checks whether an item exists in a Bloom Filter",
        filters::exists::<BloomChain>,
    )
    .runs(filters::exists_run::<BloomChain>)
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(READ_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .complexity(HASHES_OF_LAST_LINK)
    .args(KEY_ITEM),
    CommandSpec::new(
        "bf.mexists",
        -3,
        Group::Bloom,
        "Checks whether one or more items exist in a Bloom Filter",
        filters::mexists::<BloomChain>,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(READ_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .complexity(HASHES_TIMES_ITEMS)
    .args(KEY_ITEMS),
    CommandSpec::new(
        "bf.info",
        -2,
        Group::Bloom,
        "Returns information about a Bloom Filter",
        filters::info::<BloomChain>,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(READ_KEY)
    .acl(bits![Acl: READ, FAST, BLOOM])
    .complexity("O(1)")
    .args(&[
        key("key"),
        one_of(
            "single_value",
            // RedisBloom's names, its misspelling included.
            &[
                pure_token("capcaity", "CAPACITY"),
                pure_token("SIZE", "SIZE"),
                pure_token("FILTERS", "FILTERS"),
                pure_token("ITEMS", "ITEMS"),
                pure_token("EXPANSION", "EXPANSION"),
            ],
        )
        .optional(),
    ]),
    CommandSpec::new(
        "bf.card",
        2,
        Group::Bloom,
        "Returns the cardinality of a Bloom filter",
        filters::card::<BloomChain>,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(READ_KEY)
    .acl(bits![Acl: READ, FAST, BLOOM])
    .since("2.4.4")
    .complexity("O(1)")
    .args(&[key("key")]),
    CommandSpec::new(
        "bf.scandump",
        3,
        Group::Bloom,
        "Begins an incremental save of the bloom filter",
        filters::scandump::<BloomChain>,
    )
    .flags(bits![Flags: READONLY, FAST])
    .key_specs(WRITE_KEY)
    .acl(bits![Acl: READ, BLOOM])
    .complexity("O(n), where n is the capacity")
    .args(&[key("key"), integer("iterator")]),
    CommandSpec::new(
        "bf.loadchunk",
        4,
        Group::Bloom,
        "Restores a filter previously saved using SCANDUMP",
        filters::loadchunk::<BloomChain>,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(WRITE_KEY)
    .acl(bits![Acl: WRITE, BLOOM])
    .complexity("O(n), where n is the capacity")
    .args(&[key("key"), integer("iterator"), string("data")]),
    // sieved's own: RedisBloom has no merge (its issues #20 and #274 ask for one).
    CommandSpec::new(
        "bf.merge",
        -3,
        Group::Bloom,
        "Merges Bloom filters of the same shape into a destination, which takes part in the union \
         if it exists",
        super::merge::bf_merge,
    )
    .flags(bits![Flags: WRITE, DENYOOM])
    .key_specs(MERGE_KEYS)
    .acl(bits![Acl: WRITE, BLOOM])
    .since(FIRST_RELEASE)
    .complexity("O(m), where m is the size of the filters in bytes")
    .args(MERGE_ARGS),
    CommandSpec::new(
        "bf.unioncard",
        -2,
        Group::Bloom,
        "Estimates the number of distinct items in the union of Bloom filters of the same shape",
        super::merge::bf_unioncard,
    )
    .flags(bits![Flags: READONLY])
    .key_specs(&[KeySpec::range(bits![KeyFlags: RO, ACCESS], 1, -1, 1)])
    .acl(bits![Acl: READ, BLOOM])
    .since(FIRST_RELEASE)
    .complexity("O(m), where m is the size of the filters in bytes")
    .args(&[key("key").multiple()]),
    // Undocumented by RedisBloom, which declares arity -1 and checks for exactly one key itself,
    // and gives it no documentation: COMMAND DOCS has only its group and module.
    CommandSpec::new("bf.debug", -1, Group::Bloom, "", debug)
        .flags(bits![Flags: READONLY, FAST])
        .key_specs(FILTER_KEY)
        .acl(bits![Acl: READ, BLOOM])
        .undocumented(),
];

const ADD_MANY: &str =
    "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist";
const HASHES_OF_LAST_LINK: &str =
    "O(k), where k is the number of hash functions used by the last sub-filter";
const HASHES_TIMES_ITEMS: &str =
    "O(k * n), where k is the number of hash functions and n is the number of items";
/// A module command declared with a first key gets this key specification from Redis, which
/// cannot know better: read-write, full access. RedisBloom 8.8 declares its own for the
/// documented BF.* and CF.* commands (below); the others keep this one.
pub(super) const FILTER_KEY: &[KeySpec] =
    &[KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE], 1, 0, 1)];
/// The key specifications RedisBloom 8.8 declares: read-only for lookups, read-write for the
/// rest (SCANDUMP included).
pub(super) const READ_KEY: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RO], 1, 0, 1)];
pub(super) const WRITE_KEY: &[KeySpec] = &[KeySpec::range(bits![KeyFlags: RW], 1, 0, 1)];
/// A merge's destination, which it reads and writes, then its sources, which it only reads.
pub(super) const MERGE_KEYS: &[KeySpec] = &[
    KeySpec::range(bits![KeyFlags: RW, ACCESS, UPDATE, INSERT], 1, 0, 1),
    KeySpec::range(bits![KeyFlags: RO, ACCESS], 2, -1, 1),
];
pub(super) const MERGE_ARGS: &[Arg] = &[key("destkey"), key("sourcekey").key_spec(1).multiple()];
pub(super) const KEY_ITEM: &[Arg] = &[key("key"), string("item")];
pub(super) const KEY_ITEMS: &[Arg] = &[key("key"), string("item").multiple()];
