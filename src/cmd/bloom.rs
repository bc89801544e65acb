//! The BF.* family, replying as RedisBloom 8 does (see shared/reference/redisbloom-behaviour.md).
//! What BF.* and CBF.* do alike is in filters.rs; here are BF.*'s own options and BF.DEBUG.

use super::args::{keyword, Args, Key};
use super::errors::*;
use super::filter_options::{
    growth, max_capacity, reserve_capacity, reserve_error_rate, reserve_expansion, Insert,
    InsertOption,
};
use super::filter_specs::*;
use super::filters::{
    self, add, add_run, card, default_options, exists, exists_run, info, loadchunk, madd, mexists,
    scandump,
};
use super::merge::{merge, unioncard};
use super::spec::{command_table, CommandSpec, Docs};
use super::Ctx;
use crate::filter::{format_g, BloomChain, ChainOptions, HashScheme, Layout};
use crate::protocol::Request;

/// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]: unknown words are
/// ignored, and more words than the options can use are an arity error, as RedisBloom's.
struct Reserve<'a> {
    key: &'a [u8],
    options: ChainOptions,
}

#[derive(Clone, Copy)]
enum ReserveOption {
    Expansion,
    NonScaling,
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
        let mut args = Args::new(request, 1);
        args.words_at_most(7)?;
        let key = args.required()?;
        let error_rate = reserve_error_rate(args.required()?)?;
        let capacity = reserve_capacity(args.required()?, max_capacity)?;
        let (mut expansion, mut non_scaling) = (None, false);
        while let Some(word) = args.next() {
            let options = [
                ("EXPANSION", ReserveOption::Expansion),
                ("NONSCALING", ReserveOption::NonScaling),
            ];
            match keyword(word, &options) {
                Some(ReserveOption::Expansion) => {
                    expansion = Some(reserve_expansion(args.next_or(BF_NO_EXPANSION)?)?)
                }
                Some(ReserveOption::NonScaling) => non_scaling = true,
                None => {}
            }
        }
        // A non-scaling filter keeps the expansion stated (or the default), as RedisBloom's
        // dump header shows it.
        let (expansion, non_scaling) = match growth(expansion, non_scaling)? {
            0 => (expansion.unwrap_or(2), true),
            growth => (growth, false),
        };
        Ok(Reserve {
            key,
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

fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    let defaults = default_options::<BloomChain>(ctx);
    let command = Reserve::parse(request, defaults.layout, defaults.hash, max_capacity(ctx))?;
    filters::reserve::<BloomChain>(ctx, command.key, command.options)
}

/// BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item...
fn insert(ctx: &mut Ctx, request: Request) -> CmdResult {
    let defaults = default_options::<BloomChain>(ctx);
    let command = Insert::parse(request, defaults, max_capacity(ctx), first_letters)?;
    filters::add_many::<BloomChain>(ctx, command.key, command.create, command.items)
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

/// BF.DEBUG key: declared with any arity, as RedisBloom, and checked here.
fn debug(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Key { key } = Key::parse_alone(request)?;
    let lines = filters::with_filter::<BloomChain, _>(ctx.db(), ctx.now, key, |chain| {
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
/// BF.MERGE and BF.UNIONCARD are sieved's own: RedisBloom has no merge (its issues #20 and #274
/// ask for one).
pub(super) const SPECS: &[CommandSpec] = &command_table! { Bloom:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "bf.reserve", -4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, FAST, BLOOM], reserve, docs::RESERVE;
    "bf.add", 3, [WRITE, DENYOOM], WRITE_KEY, [WRITE, BLOOM], add::<BloomChain>, docs::ADD,
        runs(add_run::<BloomChain>);
    "bf.madd", -3, [WRITE, DENYOOM], WRITE_KEY, [WRITE, BLOOM], madd::<BloomChain>, docs::MADD;
    "bf.insert", -4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, BLOOM], insert, docs::INSERT;
    "bf.exists", 3, [READONLY, FAST], READ_KEY, [READ, BLOOM], exists::<BloomChain>, docs::EXISTS,
        runs(exists_run::<BloomChain>);
    "bf.mexists", -3, [READONLY, FAST], READ_KEY, [READ, BLOOM], mexists::<BloomChain>,
        docs::MEXISTS;
    "bf.info", -2, [READONLY, FAST], READ_KEY, [READ, FAST, BLOOM], info::<BloomChain>, docs::INFO;
    "bf.card", 2, [READONLY, FAST], READ_KEY, [READ, FAST, BLOOM], card::<BloomChain>, docs::CARD;
    "bf.scandump", 3, [READONLY, FAST], WRITE_KEY, [READ, BLOOM], scandump::<BloomChain>,
        docs::SCANDUMP;
    "bf.loadchunk", 4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, BLOOM], loadchunk::<BloomChain>,
        docs::LOADCHUNK;
    "bf.merge", -3, [WRITE, DENYOOM], MERGE_KEYS, [WRITE, BLOOM], merge::<BloomChain>, docs::MERGE;
    "bf.unioncard", -2, [READONLY], READ_ACCESS_KEYS, [READ, BLOOM], unioncard, docs::UNIONCARD;
    // RedisBloom declares arity -1 and checks for exactly one key itself.
    "bf.debug", -1, [READONLY, FAST], FILTER_KEY, [READ, BLOOM], debug, Docs::undocumented();
};

/// What COMMAND DOCS says of each, in RedisBloom 8.8's words.
mod docs {
    use super::super::filter_specs::*;
    use super::super::spec::{
        block, double, integer, key, one_of, pure_token, string, Docs, FIRST_RELEASE,
    };

    pub(super) const RESERVE: Docs = Docs::new("Creates a new Bloom Filter")
        .complexity("O(1)")
        .args(&[
            key("key"),
            double("error_rate"),
            integer("capacity"),
            block("expansion", &[integer("expansion")])
                .token("EXPANSION")
                .optional(),
            pure_token("nonscaling", "NONSCALING").optional(),
        ]);
    pub(super) const ADD: Docs = Docs::new("Adds an item to a Bloom Filter")
        .complexity(HASHES_OF_LAST_LINK)
        .args(KEY_ITEM);
    pub(super) const MADD: Docs = Docs::new(ADD_MANY)
        .complexity(HASHES_TIMES_ITEMS)
        .args(KEY_ITEMS);
    pub(super) const INSERT: Docs = Docs::new(ADD_MANY).complexity(HASHES_TIMES_ITEMS).args(&[
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
    ]);
    pub(super) const EXISTS: Docs = Docs::new("Checks whether an item exists in a Bloom Filter")
        .complexity(HASHES_OF_LAST_LINK)
        .args(KEY_ITEM);
    pub(super) const MEXISTS: Docs =
        Docs::new("Checks whether one or more items exist in a Bloom Filter")
            .complexity(HASHES_TIMES_ITEMS)
            .args(KEY_ITEMS);
    pub(super) const INFO: Docs = Docs::new("Returns information about a Bloom Filter")
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
        ]);
    pub(super) const CARD: Docs = Docs::new("Returns the cardinality of a Bloom filter")
        .since("2.4.4")
        .complexity("O(1)")
        .args(&[key("key")]);
    pub(super) const SCANDUMP: Docs = Docs::new("Begins an incremental save of the bloom filter")
        .complexity(DUMP_COMPLEXITY)
        .args(KEY_ITERATOR);
    pub(super) const LOADCHUNK: Docs =
        Docs::new("Restores a filter previously saved using SCANDUMP")
            .complexity(DUMP_COMPLEXITY)
            .args(KEY_ITERATOR_DATA);
    pub(super) const MERGE: Docs = Docs::new(
        "Merges Bloom filters of the same shape into a destination, which takes part in the \
         union if it exists",
    )
    .since(FIRST_RELEASE)
    .complexity(MERGE_COMPLEXITY)
    .args(MERGE_ARGS);
    pub(super) const UNIONCARD: Docs = Docs::new(
        "Estimates the number of distinct items in the union of Bloom filters of the same shape",
    )
    .since(FIRST_RELEASE)
    .complexity(MERGE_COMPLEXITY)
    .args(&[key("key").multiple()]);

    const ADD_MANY: &str =
        "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist";
}
