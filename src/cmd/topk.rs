//! TOPK.*: RedisBloom's Top-K (`filter/top_k.rs`), its commands parsed, checked and answered
//! as RedisBloom 8.8's src/rm_topk.c does, error for error and in its order.
//!
//! The decay draws come from the generator each Top-K carries (`store/sketch.rs`), so the
//! log, a replica and a replay, which run the same adds on the same state, draw the same
//! numbers: the commands are logged as sent.
//!
//! One quirk is not kept: RedisBloom answers a TOPK.INCRBY whose bad increment is not the last
//! pair with fewer elements than the array it announced, which leaves the client's connection
//! out of step. sieved answers that pair and every one after it with the error (and, as
//! RedisBloom, applies none of them), so the reply is RedisBloom's whenever RedisBloom's is
//! well-formed.

use super::args::Args;
use super::errors::*;
use super::filter_specs::{READ_KEY, WRITE_KEY};
use super::sketches::{module_double, read_sketch, write_sketch, Sketch};
use super::spec::{command_table, CommandSpec};
use super::Ctx;
use crate::filter::{reply_double_text, TopK, TopKListed};
use crate::protocol::{parse_i64, Request};
use crate::store::{TopKValue, Value};

impl Sketch for TopKValue {
    const MISSING: &'static str = TOPK_KEY_MISSING;
    fn of(value: &Value) -> Option<&Self> {
        match value {
            Value::TopK(top_k) => Some(top_k),
            _ => None,
        }
    }
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        match value {
            Value::TopK(top_k) => Some(top_k),
            _ => None,
        }
    }
}

/// A dimension: an integer in 1..=u32::MAX, else `error`.
fn dimension(word: &[u8], error: &'static str) -> Result<i64, CmdError> {
    parse_i64(word)
        .filter(|value| (1..=i64::from(u32::MAX)).contains(value))
        .ok_or(error.into())
}

/// TOPK.RESERVE key k [width depth decay]: the key must be free (of any type).
fn reserve(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let k = args.required()?;
    let rest: Vec<&[u8]> = args.rest().collect();
    if !(rest.is_empty() || rest.len() == 3) {
        return Err(args.arity_error());
    }
    if ctx.db().contains(key, ctx.now) {
        return Err(TOPK_KEY_EXISTS.into());
    }
    let k = dimension(k, TOPK_INVALID_K)?;
    let limit = ctx.filter_memory_limit();
    let sketch = match rest[..] {
        [width, depth, decay] => {
            let width = dimension(width, TOPK_INVALID_WIDTH)?;
            let depth = dimension(depth, TOPK_INVALID_DEPTH)?;
            let decay = module_double(decay)
                .filter(|&decay| decay > 0.0 && decay <= 1.0)
                .ok_or(CmdError::from(TOPK_INVALID_DECAY))?;
            TopK::new(k, width, depth, decay, limit)?
        }
        _ => TopK::with_defaults(k, limit)?,
    };
    let value = Value::TopK(Box::new(TopKValue::new(sketch)));
    if !ctx.db().insert_new(key, value, ctx.now) {
        return Err(TOPK_KEY_EXISTS.into());
    }
    ctx.reply.ok();
    Ok(())
}

/// The item an add expelled, as RedisBloom replies it: a C string, or a null.
fn reply_expelled(ctx: &mut Ctx, expelled: Option<Vec<u8>>) {
    match expelled {
        Some(item) => ctx.reply.bulk(&item),
        None => ctx.reply.null(),
    }
}

/// TOPK.ADD key item [item ...]: for each, the item it expelled from the top k, if any.
fn add(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let items = args.items();
    let expelled = write_sketch(ctx, key, |top_k: &mut TopKValue| {
        let TopKValue { sketch, draws } = top_k;
        items
            .iter()
            .map(|item| sketch.add(item, 1, draws))
            .collect::<Vec<_>>()
    })?;
    ctx.reply.array(expelled.len());
    for item in expelled {
        reply_expelled(ctx, item);
    }
    Ok(())
}

/// TOPK.INCRBY key item increment [item increment ...]: each increment in 0..=100,000, read
/// as its pair is applied.
fn incrby(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    if args.word_count() % 2 == 1 {
        return Err(args.arity_error());
    }
    let key = args.required()?;
    let words: Vec<&[u8]> = args.rest().collect();
    let pairs = words.len() / 2;
    let answers = write_sketch(ctx, key, |top_k: &mut TopKValue| {
        let TopKValue { sketch, draws } = top_k;
        let mut answers = Vec::with_capacity(pairs);
        for pair in words.chunks_exact(2) {
            let increment = parse_i64(pair[1]).map(TopK::checked_increment);
            match increment {
                Some(Ok(increment)) => answers.push(sketch.add(pair[0], increment, draws)),
                _ => break,
            }
        }
        answers
    })?;
    ctx.reply.array(pairs);
    let applied = answers.len();
    for answer in answers {
        reply_expelled(ctx, answer);
    }
    for _ in applied..pairs {
        ctx.reply.error(TOPK_INVALID_INCREMENT);
    }
    Ok(())
}

/// TOPK.QUERY key item [item ...]: booleans under RESP3, 0/1 under RESP2.
fn query(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let items = args.items();
    let found = read_sketch(ctx, key, |top_k: &TopKValue| {
        items
            .iter()
            .map(|item| top_k.sketch.query(item))
            .collect::<Vec<_>>()
    })?;
    ctx.reply.array(found.len());
    for found in found {
        ctx.reply.boolean(found);
    }
    Ok(())
}

/// TOPK.COUNT key item [item ...]
fn count(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let items = args.items();
    let counts = read_sketch(ctx, key, |top_k: &TopKValue| {
        items
            .iter()
            .map(|item| top_k.sketch.count(item))
            .collect::<Vec<_>>()
    })?;
    ctx.reply.array(counts.len());
    for count in counts {
        ctx.reply.int(i64::from(count));
    }
    Ok(())
}

/// TOPK.LIST key [WITHCOUNT]: any prefix of WITHCOUNT (the empty word too) is WITHCOUNT, as
/// RedisBloom compares only the word's length; it is checked before the key.
fn list(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let with_count = match args.next() {
        None => false,
        Some(word) if word.len() <= 9 && b"WITHCOUNT"[..word.len()].eq_ignore_ascii_case(word) => {
            true
        }
        Some(_) => return Err(TOPK_WITHCOUNT_EXPECTED.into()),
    };
    if args.remaining() > 0 {
        return Err(args.arity_error());
    }
    let listed = read_sketch(ctx, key, |top_k: &TopKValue| {
        top_k
            .sketch
            .list()
            .into_iter()
            .map(|TopKListed { item, count }| (item.map(<[u8]>::to_vec), count))
            .collect::<Vec<_>>()
    })?;
    ctx.reply
        .array(listed.len() * if with_count { 2 } else { 1 });
    for (item, count) in listed {
        match item {
            Some(item) => ctx.reply.bulk(&item),
            None => ctx.reply.null(),
        }
        if with_count {
            ctx.reply.int(i64::from(count));
        }
    }
    Ok(())
}

/// TOPK.INFO key: k, width, depth and decay.
fn info(ctx: &mut Ctx, request: Request) -> CmdResult {
    let key = Args::new(request, 1).required()?;
    let info = read_sketch(ctx, key, |top_k: &TopKValue| top_k.sketch.info())?;
    ctx.reply.map(4);
    for (name, value) in [("k", info.k), ("width", info.width), ("depth", info.depth)] {
        ctx.reply.simple(name);
        ctx.reply.int(value as i64);
    }
    ctx.reply.simple("decay");
    ctx.reply
        .double_text(reply_double_text(info.decay).as_bytes());
    Ok(())
}

/// TOPK.* as RedisBloom 8.8 declares them: module `bf`, its flags, categories, key
/// specifications and documentation (src/rm_topk.c, src/cmd_info/topk_info.c).
pub(super) const SPECS: &[CommandSpec] = &command_table! { Bloom:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "topk.reserve", -3, [WRITE, DENYOOM], WRITE_KEY, [WRITE, FAST, TOPK], reserve, docs::RESERVE;
    "topk.add", -3, [WRITE, DENYOOM], WRITE_KEY, [WRITE, TOPK], add, docs::ADD;
    "topk.incrby", -4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, TOPK], incrby, docs::INCRBY;
    "topk.query", -3, [READONLY], READ_KEY, [READ, TOPK], query, docs::QUERY;
    "topk.count", -3, [READONLY], READ_KEY, [READ, TOPK], count, docs::COUNT;
    "topk.list", -2, [READONLY], READ_KEY, [READ, TOPK], list, docs::LIST;
    "topk.info", 2, [READONLY], READ_KEY, [READ, FAST, TOPK], info, docs::INFO;
};

/// What COMMAND DOCS says of each, in RedisBloom 8.8's words.
mod docs {
    use super::super::spec::{block, double, integer, key, pure_token, string, Arg, Docs};

    const SINCE: &str = "2.0.0";
    const KEY_ITEMS: &[Arg] = &[key("key"), string("item").multiple()];
    const PER_ITEM: &str = "O(n) where n is the number of items";

    pub(super) const RESERVE: Docs =
        Docs::new("Initializes a Top-K sketch with specified parameters")
            .since(SINCE)
            .complexity("O(1)")
            .args(&[
                key("key"),
                integer("topk"),
                block(
                    "params",
                    &[integer("width"), integer("depth"), double("decay")],
                )
                .optional(),
            ]);
    pub(super) const ADD: Docs =
        Docs::new("Adds an item to a Top-k sketch. Multiple items can be added at the same time.")
            .since(SINCE)
            .complexity("O(n * k) where n is the number of items and k is the depth")
            .args(KEY_ITEMS);
    pub(super) const INCRBY: Docs =
        Docs::new("Increases the count of one or more items by increment")
            .since(SINCE)
            .complexity(
                "O(n * k * incr) where n is the number of items, k is the depth and incr is the \
                 increment",
            )
            .args(&[
                key("key"),
                block("item_increment", &[string("item"), integer("increment")]).multiple(),
            ]);
    pub(super) const QUERY: Docs = Docs::new("Checks whether one or more items are in a sketch")
        .since(SINCE)
        .complexity(PER_ITEM)
        .args(KEY_ITEMS);
    pub(super) const COUNT: Docs =
        Docs::new("Return the count for one or more items are in a sketch")
            .since(SINCE)
            .complexity(PER_ITEM)
            .history(&[(
                "2.4.0",
                "As of Bloom version 2.4, this command is regarded as deprecated. The count value \
                 is not a representative of the number of appearances of an item",
            )])
            .args(KEY_ITEMS);
    pub(super) const LIST: Docs = Docs::new("Return the full list of items in Top-K sketch.")
        .since(SINCE)
        .complexity("O(k*log(k)) where k is the value of top-k")
        .args(&[key("key"), pure_token("withcount", "WITHCOUNT").optional()]);
    pub(super) const INFO: Docs = Docs::new("Returns information about a sketch")
        .since(SINCE)
        .complexity("O(1)")
        .args(&[key("key")]);
}
