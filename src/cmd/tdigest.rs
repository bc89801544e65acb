//! TDIGEST.*: RedisBloom's t-digest (`filter/t_digest.rs`), its commands parsed, checked and
//! answered as RedisBloom 8.8's src/rm_tdigest.c does, error for error and in its order, its
//! doubles written as Redis 7.4's `RedisModule_ReplyWithDouble` writes them.
//!
//! As in RedisBloom, the reads that estimate (QUANTILE, CDF, RANK, BYRANK, TRIMMED_MEAN and
//! their reverses) first compress the digest's buffer into its centroids, which TDIGEST.INFO
//! shows; the log and replicas see writes only, so a replica compresses at its own reads.

use super::args::{int, Args};
use super::errors::*;
use super::filter_specs::{READ_KEY, WRITE_KEY};
use super::sketches::{module_double, read_sketch, write_sketch, Sketch};
use super::spec::{command_table, CommandSpec};
use super::Ctx;
use crate::filter::{merge_compression, reply_double_text, TDigest, T_DIGEST_DEFAULT_COMPRESSION};
use crate::protocol::{parse_i64, Reply, Request};
use crate::store::Value;

impl Sketch for TDigest {
    const MISSING: &'static str = TDIGEST_KEY_MISSING;
    fn of(value: &Value) -> Option<&Self> {
        match value {
            Value::TDigest(digest) => Some(digest),
            _ => None,
        }
    }
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        match value {
            Value::TDigest(digest) => Some(digest),
            _ => None,
        }
    }
}

/// A double as RedisBloom replies it.
fn reply_double(reply: &mut Reply, value: f64) {
    reply.double_text(reply_double_text(value).as_bytes());
}

fn reply_doubles(reply: &mut Reply, values: &[f64]) {
    reply.array(values.len());
    for &value in values {
        reply_double(reply, value);
    }
}

/// RedisBloom's `RMUtil_ArgIndex`: where `keyword` first is among `words`, in any case.
fn position_of(words: &[&[u8]], keyword: &[u8]) -> Option<usize> {
    words
        .iter()
        .position(|word| word.eq_ignore_ascii_case(keyword))
}

/// A compression: an integer, then positive.
fn compression(word: &[u8]) -> Result<i64, CmdError> {
    let compression = int(word, TDIGEST_BAD_COMPRESSION)?;
    if compression <= 0 {
        return Err(TDIGEST_COMPRESSION_NOT_POSITIVE.into());
    }
    Ok(compression)
}

/// TDIGEST.CREATE key [COMPRESSION compression]
fn create(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let words: Vec<&[u8]> = args.rest().collect();
    if !(words.is_empty() || words.len() == 2) {
        return Err(args.arity_error());
    }
    match ctx
        .db()
        .get(key, ctx.now, |v| v.map(|v| TDigest::of(v).is_some()))
    {
        Some(true) => return Err(TDIGEST_KEY_EXISTS.into()),
        Some(false) => return Err(WRONGTYPE.into()),
        None => {}
    }
    let compression = match words[..] {
        [] => T_DIGEST_DEFAULT_COMPRESSION,
        _ if position_of(&words, b"COMPRESSION").is_none() => {
            return Err(TDIGEST_WRONG_KEYWORD.into())
        }
        _ => compression(words[1])?,
    };
    let digest = TDigest::new(compression, ctx.filter_memory_limit())?;
    if !ctx
        .db()
        .insert_new(key, Value::TDigest(Box::new(digest)), ctx.now)
    {
        return Err(TDIGEST_KEY_EXISTS.into());
    }
    ctx.reply.ok();
    Ok(())
}

/// TDIGEST.RESET key
fn reset(ctx: &mut Ctx, request: Request) -> CmdResult {
    let key = Args::new(request, 1).required()?;
    write_sketch(ctx, key, TDigest::reset)?;
    ctx.reply.ok();
    Ok(())
}

/// TDIGEST.ADD key value [value ...]: the key is checked first, then every value (a finite
/// double), then they are added in order.
fn add(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let words = args.items();
    write_sketch(ctx, key, |digest: &mut TDigest| {
        let mut parsed = Vec::with_capacity(words.len());
        for word in words.iter() {
            let value = module_double(word).ok_or(CmdError::from(TDIGEST_BAD_VALUE))?;
            if value.is_infinite() {
                return Err(TDIGEST_VALUE_NOT_FINITE.into());
            }
            parsed.push(value);
        }
        parsed
            .into_iter()
            .try_for_each(|value| digest.add(value))
            .map_err(CmdError::from)
    })??;
    ctx.reply.ok();
    Ok(())
}

/// TDIGEST.MERGE destination numkeys source [source ...] [COMPRESSION c] [OVERRIDE]: a new
/// digest of the compression the options (or the inputs) give, into which the destination's
/// old digest (unless OVERRIDE) and each source are merged in order; it replaces the
/// destination, TTL and all, as RedisBloom's `ModuleTypeSetValue` does.
fn merge(ctx: &mut Ctx, request: Request) -> CmdResult {
    let mut args = Args::new(request, 1);
    let destination = args.required()?;
    let numkeys = args.required()?;
    let old = ctx.db().get(destination, ctx.now, |value| match value {
        None => Ok(None),
        Some(value) => TDigest::of(value)
            .map(|digest| Some(digest.compression()))
            .ok_or(CmdError::from(WRONGTYPE)),
    })?;
    let count = int(numkeys, TDIGEST_BAD_NUMKEYS)?;
    if count <= 0 {
        return Err(TDIGEST_NUMKEYS_NOT_POSITIVE.into());
    }
    let rest: Vec<&[u8]> = args.rest().collect();
    if count > rest.len() as i64 {
        return Err(args.arity_error());
    }
    let (sources, options) = rest.split_at(count as usize);
    let mut given = None;
    let mut override_destination = false;
    if !options.is_empty() {
        let compression_at = position_of(options, b"COMPRESSION");
        if let Some(at) = compression_at {
            let word = options.get(at + 1).ok_or_else(|| args.arity_error())?;
            given = Some(compression(word)?);
        }
        override_destination = position_of(options, b"OVERRIDE").is_some();
        if compression_at.is_none() && !override_destination {
            return Err(TDIGEST_WRONG_KEYWORD.into());
        }
    }
    let mut compressions = Vec::with_capacity(sources.len());
    for &source in sources {
        if source == destination && old.is_none() {
            return Err(TDIGEST_KEY_MISSING.into());
        }
        compressions.push(read_sketch(ctx, source, TDigest::compression)?);
    }
    let compression = merge_compression(given, old, &compressions, override_destination);
    let mut merged = TDigest::merge_destination(compression, ctx.filter_memory_limit())?;
    if old.is_some() && !override_destination {
        // RedisBloom does not look at this merge's outcome.
        let _ = write_sketch(ctx, destination, |digest: &mut TDigest| {
            merged.merge_from(digest)
        });
    }
    for &source in sources {
        write_sketch(ctx, source, |digest: &mut TDigest| {
            merged.merge_from(digest)
        })??;
    }
    ctx.db()
        .insert(destination, Value::TDigest(Box::new(merged)), 0);
    ctx.reply.ok();
    Ok(())
}

/// TDIGEST.MIN key, TDIGEST.MAX key: NaN while empty.
fn min(ctx: &mut Ctx, request: Request) -> CmdResult {
    let key = Args::new(request, 1).required()?;
    let value = read_sketch(ctx, key, TDigest::min)?;
    reply_double(ctx.reply, value);
    Ok(())
}

fn max(ctx: &mut Ctx, request: Request) -> CmdResult {
    let key = Args::new(request, 1).required()?;
    let value = read_sketch(ctx, key, TDigest::max)?;
    reply_double(ctx.reply, value);
    Ok(())
}

/// A read that estimates: the key, then its arguments parsed by `parse`, then `estimate` on
/// the digest (which may compress it).
fn estimate<T, R>(
    ctx: &mut Ctx,
    request: Request,
    parse: impl FnOnce(Vec<&[u8]>) -> Result<T, CmdError>,
    estimate: impl FnOnce(&mut TDigest, T) -> R,
) -> Result<R, CmdError> {
    let mut args = Args::new(request, 1);
    let key = args.required()?;
    let words: Vec<&[u8]> = args.rest().collect();
    write_sketch(ctx, key, |digest: &mut TDigest| {
        parse(words).map(|parsed| estimate(digest, parsed))
    })?
}

fn doubles(words: Vec<&[u8]>, error: &'static str) -> Result<Vec<f64>, CmdError> {
    words
        .into_iter()
        .map(|word| module_double(word).ok_or(CmdError::from(error)))
        .collect()
}

/// TDIGEST.QUANTILE key quantile [quantile ...]: each in [0, 1].
fn quantile(ctx: &mut Ctx, request: Request) -> CmdResult {
    let parse = |words: Vec<&[u8]>| {
        let mut quantiles = Vec::with_capacity(words.len());
        for word in words {
            let q = module_double(word).ok_or(CmdError::from(TDIGEST_BAD_QUANTILE))?;
            if !(0.0..=1.0).contains(&q) {
                return Err(TDIGEST_QUANTILE_RANGE.into());
            }
            quantiles.push(q);
        }
        Ok(quantiles)
    };
    let values = estimate(ctx, request, parse, |digest, q: Vec<f64>| {
        digest.quantiles(&q)
    })?;
    reply_doubles(ctx.reply, &values);
    Ok(())
}

/// TDIGEST.CDF key value [value ...]
fn cdf(ctx: &mut Ctx, request: Request) -> CmdResult {
    let parse = |words: Vec<&[u8]>| doubles(words, TDIGEST_BAD_CDF);
    let values = estimate(ctx, request, parse, |digest, values: Vec<f64>| {
        values
            .into_iter()
            .map(|v| digest.cdf(v))
            .collect::<Vec<_>>()
    })?;
    reply_doubles(ctx.reply, &values);
    Ok(())
}

/// TDIGEST.RANK and TDIGEST.REVRANK key value [value ...]
fn ranks(ctx: &mut Ctx, request: Request, reverse: bool) -> CmdResult {
    let parse = |words: Vec<&[u8]>| doubles(words, TDIGEST_BAD_RANK_VALUE);
    let ranks = estimate(ctx, request, parse, |digest, values: Vec<f64>| {
        values
            .into_iter()
            .map(|v| match reverse {
                true => digest.rev_rank(v),
                false => digest.rank(v),
            })
            .collect::<Vec<_>>()
    })?;
    ctx.reply.array(ranks.len());
    for rank in ranks {
        ctx.reply.int(rank);
    }
    Ok(())
}

fn rank(ctx: &mut Ctx, request: Request) -> CmdResult {
    ranks(ctx, request, false)
}

fn revrank(ctx: &mut Ctx, request: Request) -> CmdResult {
    ranks(ctx, request, true)
}

/// TDIGEST.BYRANK and TDIGEST.BYREVRANK key rank [rank ...]: integers, not negative.
fn by_ranks(ctx: &mut Ctx, request: Request, reverse: bool) -> CmdResult {
    let parse = |words: Vec<&[u8]>| {
        let mut ranks = Vec::with_capacity(words.len());
        for word in words {
            let rank = parse_i64(word).ok_or(CmdError::from(TDIGEST_BAD_RANK))?;
            if rank < 0 {
                return Err(TDIGEST_RANK_NEGATIVE.into());
            }
            ranks.push(rank);
        }
        Ok(ranks)
    };
    let values = estimate(ctx, request, parse, |digest, ranks: Vec<i64>| {
        ranks
            .into_iter()
            .map(|rank| match reverse {
                true => digest.by_rev_rank(rank),
                false => digest.by_rank(rank),
            })
            .collect::<Vec<_>>()
    })?;
    reply_doubles(ctx.reply, &values);
    Ok(())
}

fn byrank(ctx: &mut Ctx, request: Request) -> CmdResult {
    by_ranks(ctx, request, false)
}

fn byrevrank(ctx: &mut Ctx, request: Request) -> CmdResult {
    by_ranks(ctx, request, true)
}

/// TDIGEST.TRIMMED_MEAN key low high: each a double in [0, 1], low below high.
fn trimmed_mean(ctx: &mut Ctx, request: Request) -> CmdResult {
    let parse = |words: Vec<&[u8]>| {
        let low = module_double(words[0]).ok_or(CmdError::from(TDIGEST_BAD_LOW_CUT))?;
        let high = module_double(words[1]).ok_or(CmdError::from(TDIGEST_BAD_HIGH_CUT))?;
        let outside = |cut: f64| !(0.0..=1.0).contains(&cut);
        if outside(low) || outside(high) {
            return Err(TDIGEST_CUTS_RANGE.into());
        }
        if low >= high {
            return Err(TDIGEST_CUTS_ORDER.into());
        }
        Ok((low, high))
    };
    let mean = estimate(ctx, request, parse, |digest, (low, high)| {
        digest.trimmed_mean(low, high)
    })?;
    reply_double(ctx.reply, mean);
    Ok(())
}

/// TDIGEST.INFO key
fn info(ctx: &mut Ctx, request: Request) -> CmdResult {
    let key = Args::new(request, 1).required()?;
    let info = read_sketch(ctx, key, TDigest::info)?;
    let fields = [
        ("Compression", info.compression),
        ("Capacity", info.capacity),
        ("Merged nodes", info.merged_nodes),
        ("Unmerged nodes", info.unmerged_nodes),
        ("Merged weight", info.merged_weight),
        ("Unmerged weight", info.unmerged_weight),
        ("Observations", info.observations),
        ("Total compressions", info.total_compressions),
        ("Memory usage", info.memory_usage as i64),
    ];
    ctx.reply.map(fields.len());
    for (name, value) in fields {
        ctx.reply.simple(name);
        ctx.reply.int(value);
    }
    Ok(())
}

/// TDIGEST.* as RedisBloom 8.8 declares them: module `bf`, its flags, categories, key
/// specifications and documentation (src/rm_tdigest.c, src/cmd_info/tdigest_info.c).
pub(super) const SPECS: &[CommandSpec] = &command_table! { Bloom:
    // name, arity, [flags], key specs, [ACL categories], handler, docs[, more]
    "tdigest.create", -2, [WRITE, DENYOOM], WRITE_KEY, [WRITE, FAST, TDIGEST], create,
        docs::CREATE;
    "tdigest.add", -3, [WRITE, DENYOOM], WRITE_KEY, [WRITE, TDIGEST], add, docs::ADD;
    "tdigest.reset", 2, [WRITE, DENYOOM], WRITE_KEY, [WRITE, FAST, TDIGEST], reset, docs::RESET;
    // RedisBloom also declares the sources, by numkeys, which sieved's key specs cannot say.
    "tdigest.merge", -4, [WRITE, DENYOOM], WRITE_KEY, [WRITE, TDIGEST], merge, docs::MERGE;
    "tdigest.min", 2, [READONLY], READ_KEY, [READ, FAST, TDIGEST], min, docs::MIN;
    "tdigest.max", 2, [READONLY], READ_KEY, [READ, FAST, TDIGEST], max, docs::MAX;
    "tdigest.quantile", -3, [READONLY], READ_KEY, [READ, FAST, TDIGEST], quantile,
        docs::QUANTILE;
    "tdigest.byrank", -3, [READONLY], READ_KEY, [READ, FAST, TDIGEST], byrank, docs::BYRANK;
    "tdigest.byrevrank", -3, [READONLY], READ_KEY, [READ, FAST, TDIGEST], byrevrank,
        docs::BYREVRANK;
    "tdigest.rank", -3, [READONLY], READ_KEY, [READ, FAST, TDIGEST], rank, docs::RANK;
    "tdigest.revrank", -3, [READONLY], READ_KEY, [READ, FAST, TDIGEST], revrank, docs::REVRANK;
    "tdigest.cdf", -3, [READONLY], READ_KEY, [READ, FAST, TDIGEST], cdf, docs::CDF;
    "tdigest.trimmed_mean", 4, [READONLY], READ_KEY, [READ, TDIGEST], trimmed_mean,
        docs::TRIMMED_MEAN;
    "tdigest.info", 2, [READONLY], READ_KEY, [READ, FAST, TDIGEST], info, docs::INFO,
        tips(&["dont_cache"]);
};

/// What COMMAND DOCS says of each, in RedisBloom 8.8's words.
mod docs {
    use super::super::spec::{block, double, integer, key, pure_token, Docs};

    const SINCE: &str = "2.4.0";
    const PER_VALUE: &str = "O(N) where N is the number of values specified.";
    const KEY_VALUES: &[super::super::spec::Arg] = &[key("key"), double("value").multiple()];
    const KEY_ALONE: &[super::super::spec::Arg] = &[key("key")];

    pub(super) const CREATE: Docs =
        Docs::new("Allocates memory and initializes a new t-digest sketch")
            .since(SINCE)
            .complexity("O(1)")
            .args(&[
                key("key"),
                block(
                    "compression_block",
                    &[
                        pure_token("compression_token", "COMPRESSION"),
                        integer("compression"),
                    ],
                )
                .optional(),
            ]);
    pub(super) const ADD: Docs = Docs::new("Adds one or more observations to a t-digest sketch")
        .since(SINCE)
        .complexity("O(N), where N is the number of samples to add")
        .args(KEY_VALUES);
    pub(super) const RESET: Docs =
        Docs::new("Resets a t-digest sketch: empty the sketch and re-initializes it.")
            .since(SINCE)
            .complexity("O(1)")
            .args(KEY_ALONE);
    pub(super) const MERGE: Docs = Docs::new(
        "Merges multiple t-digest sketches into a single sketch",
    )
    .since(SINCE)
    .complexity(
        "O(N*K), where N is the number of centroids and K being the number of input sketches",
    )
    .args(&[
        key("destination-key"),
        integer("numkeys"),
        key("source-key").key_spec(1).multiple(),
        block(
            "compression_block",
            &[
                pure_token("compression_token", "COMPRESSION"),
                integer("compression"),
            ],
        )
        .optional(),
        pure_token("override", "OVERRIDE").optional(),
    ]);
    pub(super) const MIN: Docs =
        Docs::new("Returns the minimum observation value from a t-digest sketch")
            .since(SINCE)
            .complexity("O(1)")
            .args(KEY_ALONE);
    pub(super) const MAX: Docs =
        Docs::new("Returns the maximum observation value from a t-digest sketch")
            .since(SINCE)
            .complexity("O(1)")
            .args(KEY_ALONE);
    pub(super) const QUANTILE: Docs = Docs::new(
        "Returns, for each input fraction, an estimation of the value (floating point) that is \
         smaller than the given fraction of observations",
    )
    .since(SINCE)
    .complexity("O(N) where N is the number of quantiles specified.")
    .args(&[key("key"), double("quantile").multiple()]);
    pub(super) const BYRANK: Docs = Docs::new(
        "Returns, for each input rank, an estimation of the value (floating-point) with that rank",
    )
    .since(SINCE)
    .complexity("O(N) where N is the number of ranks specified")
    .args(&[key("key"), double("rank").multiple()]);
    pub(super) const BYREVRANK: Docs = Docs::new(
        "Returns, for each input reverse rank, an estimation of the value (floating-point) with \
         that reverse rank",
    )
    .since(SINCE)
    .complexity("O(N) where N is the number of reverse ranks specified.")
    .args(&[key("key"), double("reverse_rank").multiple()]);
    pub(super) const RANK: Docs = Docs::new(
        "Returns, for each input value (floating-point), the estimated rank of the value (the \
         number of observations in the sketch that are smaller than the value + half the number \
         of observations that are equal to the value)",
    )
    .since(SINCE)
    .complexity(PER_VALUE)
    .args(KEY_VALUES);
    pub(super) const REVRANK: Docs = Docs::new(
        "Returns, for each input value (floating-point), the estimated reverse rank of the value \
         (the number of observations in the sketch that are larger than the value + half the \
         number of observations that are equal to the value)",
    )
    .since(SINCE)
    .complexity(PER_VALUE)
    .args(KEY_VALUES);
    pub(super) const CDF: Docs = Docs::new(
        "Returns, for each input value, an estimation of the floating-point fraction of \
         (observations smaller than the given value + half the observations equal to the given \
         value). Multiple fractions can be retrieved in a single call.",
    )
    .since(SINCE)
    .complexity(PER_VALUE)
    .args(KEY_VALUES);
    pub(super) const TRIMMED_MEAN: Docs = Docs::new(
        "Returns an estimation of the mean value from the sketch, excluding observation values \
         outside the low and high cutoff quantiles",
    )
    .since(SINCE)
    .complexity("O(N) where N is the number of centroids")
    .args(&[
        key("key"),
        double("low_cut_quantile"),
        double("high_cut_quantile"),
    ]);
    pub(super) const INFO: Docs =
        Docs::new("Returns information and statistics about a t-digest sketch")
            .since(SINCE)
            .complexity("O(1)")
            .args(KEY_ALONE);
}
