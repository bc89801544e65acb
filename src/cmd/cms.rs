//! CMS.*: RedisBloom's Count-Min sketch (`filter/count_min.rs`), its commands parsed, checked
//! and answered as RedisBloom 8.8's src/rm_cms.c does, error for error and in its order.
//! Every command is deterministic, so the log and replicas take each as it was sent.

use super::args::{int, Args};
use super::errors::*;
use super::filter_specs::{READ_KEY, WRITE_KEY};
use super::sketches::{module_double, read_sketch, write_sketch, Sketch};
use super::spec::{command_table, CommandSpec};
use super::Ctx;
use crate::filter::{CountMinSketch, CountMinSource};
use crate::protocol::{parse_i64, Request};
use crate::store::Value;

impl Sketch for CountMinSketch {
    const MISSING: &'static str = CMS_KEY_MISSING;
    fn of(value: &Value) -> Option<&Self> {
        match value {
            Value::CountMin(sketch) => Some(sketch),
            _ => None,
        }
    }
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        match value {
            Value::CountMin(sketch) => Some(sketch),
            _ => None,
        }
    }
}

/// CMS.INITBYDIM key width depth, CMS.INITBYPROB key error probability: RedisBloom checks
/// that the key is free before it reads the numbers.
fn create(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let (first, second) = (args.required()?, args.required()?);
    if ctx.db().contains(key, ctx.now) {
        return Err(CMS_KEY_EXISTS.into());
    }
    let limit = ctx.filter_memory_limit();
    let sketch = if args.name().eq_ignore_ascii_case(b"cms.initbydim") {
        let width = parse_i64(first).filter(|&width| width >= 1);
        let width = width.ok_or(CmdError::from(CMS_INVALID_WIDTH))?;
        let depth = int(second, CMS_INVALID_DEPTH)?;
        CountMinSketch::by_dimensions(width, depth, limit)?
    } else {
        let error = module_double(first).filter(|&error| error > 0.0 && error < 1.0);
        let error = error.ok_or(CmdError::from(CMS_INVALID_OVERESTIMATION))?;
        let probability = module_double(second).ok_or(CmdError::from(CMS_INVALID_PROBABILITY))?;
        CountMinSketch::by_probability(error, probability, limit)?
    };
    if !ctx
        .db()
        .insert_new(key, Value::CountMin(Box::new(sketch)), ctx.now)
    {
        return Err(CMS_KEY_EXISTS.into());
    }
    ctx.reply.ok();
    Ok(())
}

/// CMS.INCRBY key item increment [item increment ...]: the key is looked up before the
/// increments are read; an item whose estimate saturates answers an error in its place.
fn incrby(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    if args.word_count() % 2 == 1 {
        return Err(args.arity_error());
    }
    let key = args.required()?;
    let mut pairs = Vec::with_capacity(args.remaining() / 2);
    let mut parsed = Ok(());
    while let (Some(item), Some(increment)) = (args.next(), args.next()) {
        match parse_i64(increment) {
            None => parsed = parsed.and(Err(CMS_CANNOT_PARSE)),
            Some(by) if by < 0 => parsed = parsed.and(Err(CMS_NEGATIVE)),
            Some(by) => pairs.push((item, by as u64)),
        }
        if parsed.is_err() {
            break;
        }
    }
    let reply = &mut *ctx.reply;
    let db = ctx.store.db(ctx.session.db);
    db.get_mut(key, ctx.now, |value| {
        let sketch = match value {
            None => return Err(CmdError::from(CMS_KEY_MISSING)),
            Some(value) => CountMinSketch::of_mut(value).ok_or(CmdError::from(WRONGTYPE))?,
        };
        parsed?;
        reply.array(pairs.len());
        for (item, by) in pairs {
            match sketch.increment(item, by) {
                Some(count) => reply.int(i64::from(count)),
                None => reply.error(CMS_INCRBY_OVERFLOW),
            }
        }
        Ok(())
    })
}

/// CMS.QUERY key item [item ...]
fn query(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let items = args.items();
    let counts: Vec<u32> = read_sketch(ctx, key, |sketch: &CountMinSketch| {
        items.iter().map(|item| sketch.query(item)).collect()
    })?;
    ctx.reply.array(counts.len());
    for count in counts {
        ctx.reply.int(i64::from(count));
    }
    Ok(())
}

/// CMS.MERGE destination numkeys source [source ...] [WEIGHTS weight [weight ...]]: the
/// destination must exist; the counts are checked as RedisBloom's parser checks them, then
/// each source in turn (its weight, its key, its dimensions).
fn merge(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let destination = args.required()?;
    let numkeys = args.required()?;
    let (width, depth) = read_sketch(ctx, destination, |sketch: &CountMinSketch| {
        (sketch.width(), sketch.depth())
    })?;
    let count = int(numkeys, CMS_INVALID_NUMKEYS)?;
    if count <= 0 {
        return Err(CMS_KEYS_NOT_POSITIVE.into());
    }
    let rest: Vec<&[u8]> = args.rest().collect();
    let weights_at = rest
        .iter()
        .position(|word| word.eq_ignore_ascii_case(b"WEIGHTS"));
    let fits = match weights_at {
        None => count == rest.len() as i64,
        Some(at) => at as i64 == count && rest.len() as i64 == 1 + count * 2,
    };
    if !fits {
        return Err(match weights_at {
            None => CMS_WRONG_KEYS,
            Some(_) => CMS_WRONG_KEYS_WEIGHTS,
        }
        .into());
    }
    let count = count as usize;
    let mut sources = Vec::with_capacity(count);
    for (i, &key) in rest[..count].iter().enumerate() {
        let weight = match weights_at {
            None => 1,
            Some(_) => int(rest[count + 1 + i], CMS_INVALID_WEIGHT)?,
        };
        let source = read_sketch(ctx, key, |sketch: &CountMinSketch| {
            (sketch.width() == width && sketch.depth() == depth).then(|| sketch.clone())
        })?;
        sources.push((source.ok_or(CmdError::from(CMS_DIMENSIONS_DIFFER))?, weight));
    }
    let weighted: Vec<(CountMinSource, i64)> = sources
        .iter()
        .map(|(sketch, weight)| (CountMinSource::Sketch(sketch), *weight))
        .collect();
    write_sketch(ctx, destination, |sketch: &mut CountMinSketch| {
        sketch.merge(&weighted)
    })??;
    ctx.reply.ok();
    Ok(())
}

/// CMS.INFO key: width, depth and the total of the increments.
fn info(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let info = read_sketch(ctx, key, CountMinSketch::info)?;
    ctx.reply.map(3);
    for (name, value) in [
        ("width", info.width),
        ("depth", info.depth),
        ("count", info.count),
    ] {
        ctx.reply.simple(name);
        ctx.reply.int(value as i64);
    }
    Ok(())
}

/// CMS.* as RedisBloom 8.8 declares them: module `bf`, its flags, categories, key
/// specifications and documentation (src/rm_cms.c, src/cmd_info/cms_info.c).
pub(super) const SPECS: &[CommandSpec] = &command_table! { Bloom:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "cms.initbydim", 4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, FAST, CMS], create,
        docs::INITBYDIM;
    "cms.initbyprob", 4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, FAST, CMS], create,
        docs::INITBYPROB;
    "cms.incrby", -4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, CMS], incrby, docs::INCRBY;
    "cms.query", -3, [READONLY], READ_KEY, [READ, CMS], query, docs::QUERY;
    // RedisBloom declares the destination alone as a key.
    "cms.merge", -4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, CMS], merge, docs::MERGE;
    "cms.info", 2, [READONLY], READ_KEY, [READ, FAST, CMS], info, docs::INFO,
        tips(&["dont_cache"]);
};

/// What COMMAND DOCS says of each, in RedisBloom 8.8's words.
mod docs {
    use super::super::spec::{block, double, integer, key, pure_token, string, Docs};

    const SINCE: &str = "2.0.0";
    const PER_ITEM: &str = "O(n) where n is the number of items";

    pub(super) const INITBYDIM: Docs =
        Docs::new("Initializes a Count-Min Sketch to dimensions specified by user")
            .since(SINCE)
            .complexity("O(1)")
            .args(&[key("key"), integer("width"), integer("depth")]);
    pub(super) const INITBYPROB: Docs =
        Docs::new("Initializes a Count-Min Sketch to accommodate requested tolerances.")
            .since(SINCE)
            .complexity("O(1)")
            .args(&[key("key"), double("error"), double("probability")]);
    pub(super) const INCRBY: Docs =
        Docs::new("Increases the count of one or more items by increment")
            .since(SINCE)
            .complexity(PER_ITEM)
            .args(&[
                key("key"),
                block("items", &[string("item"), integer("increment")]).multiple(),
            ]);
    pub(super) const QUERY: Docs = Docs::new("Returns the count for one or more items in a sketch")
        .since(SINCE)
        .complexity(PER_ITEM)
        .args(&[key("key"), string("item").multiple()]);
    pub(super) const MERGE: Docs = Docs::new("Merges several sketches into one sketch")
        .since(SINCE)
        .complexity("O(n) where n is the number of sketches")
        .args(&[
            key("key"),
            integer("numKeys"),
            key("source").multiple(),
            block(
                "weights",
                &[
                    pure_token("weights", "WEIGHTS"),
                    double("weight").multiple(),
                ],
            )
            .optional(),
        ]);
    pub(super) const INFO: Docs = Docs::new("Returns information about a sketch")
        .since(SINCE)
        .complexity("O(1)")
        .args(&[key("key")]);
}
