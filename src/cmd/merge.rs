//! BF.MERGE, CBF.MERGE and BF.UNIONCARD: the union of filters of one shape, written to a key or
//! only counted. `filter/merge.rs` says which filters can be merged and how items are counted.
//!
//! `MERGE dest src [src ...]` folds every source into `dest`. A `dest` that exists takes part in
//! the union (a union *into* it), and so must have the sources' shape; a missing one is created
//! with the shape of the first source that exists. A key named twice counts once, `dest` among
//! the sources included. Missing sources are empty filters, as BF.CARD and BF.EXISTS treat a
//! missing key; with nothing at all to merge the reply is `ERR not found`.
//!
//! Every check (types, shapes, the size limit) is made, and every array the result needs is
//! allocated, before anything changes: a refused merge changes nothing. The sources are then
//! read in pieces, each under a brief read lock, and folded into `dest` under a brief write
//! lock, so no two filters are ever locked at once and a large merge never copies a filter whole.
//! With the log on, writes run one at a time, so no write lands between the pieces and replaying
//! the logged MERGE (each write replays in order) rebuilds exactly the same `dest`.

use super::args::{Args, Items};
use super::errors::*;
use super::filters::{Dumped, Filter};
use super::Ctx;
use crate::filter::{bounded_estimate, BloomChain, CountingChain, MergeShape};
use crate::protocol::Request;
use crate::store::{read, write, ValueHandle};

/// How much of a link one lock covers: the time a reader of the filter may wait.
const PIECE_BYTES: u64 = 256 * 1024;

/// What differs between the filter types a merge handles.
pub(super) trait Union: Filter {
    /// Why a filter cannot take part in a merge whatever the others are.
    fn refusal(&self, _key: &[u8]) -> Option<CmdError> {
        None
    }
    /// The item count of each link of `union`, from the counts of the links merged into it,
    /// `counts[link]` holding one count per filter that has that link.
    fn union_items(&self, counts: &[Vec<u64>]) -> Vec<u64>;

    fn merge_shape(&self) -> MergeShape;
    fn link_items(&self) -> Vec<u64>;
    fn empty_like(&self, links: usize, limit: u64) -> Result<Self, CmdError>;
    fn extend_to(&mut self, links: usize, limit: u64) -> Result<(), CmdError>;
    fn link_len(&self, link: usize) -> u64;
    fn read_link(&self, link: usize, from: u64, len: u64, out: &mut Vec<u8>) -> bool;
    fn merge_link(&mut self, link: usize, from: u64, data: &[u8]) -> bool;
    fn set_link_items(&mut self, items: &[u64]);
}

/// Forwards `Union`'s chain operations to the chain's methods of the same names.
macro_rules! forward_union_operations {
    () => {
        fn merge_shape(&self) -> MergeShape {
            Self::merge_shape(self)
        }
        fn link_items(&self) -> Vec<u64> {
            self.links().iter().map(|link| link.items()).collect()
        }
        fn empty_like(&self, links: usize, limit: u64) -> Result<Self, CmdError> {
            Ok(Self::empty_like(self, links, limit)?)
        }
        fn extend_to(&mut self, links: usize, limit: u64) -> Result<(), CmdError> {
            Ok(Self::extend_to(self, links, limit)?)
        }
        fn link_len(&self, link: usize) -> u64 {
            Self::link_len(self, link)
        }
        fn read_link(&self, link: usize, from: u64, len: u64, out: &mut Vec<u8>) -> bool {
            Self::read_link(self, link, from, len, out)
        }
        fn merge_link(&mut self, link: usize, from: u64, data: &[u8]) -> bool {
            Self::merge_link(self, link, from, data)
        }
        fn set_link_items(&mut self, items: &[u64]) {
            Self::set_link_items(self, items)
        }
    };
}

impl Union for BloomChain {
    /// The distinct items behind each link's bits, between the largest count merged and the sum.
    fn union_items(&self, counts: &[Vec<u64>]) -> Vec<u64> {
        self.links()
            .iter()
            .zip(counts)
            .map(|(link, counts)| {
                set_union_count(link.items_for_set_bits(link.used_slots()), counts)
            })
            .collect()
    }

    forward_union_operations!();
}

impl Union for CountingChain {
    /// `filter/merge.rs` says why a counting filter that has grown cannot be merged.
    fn refusal(&self, key: &[u8]) -> Option<CmdError> {
        (self.links().len() > 1).then(|| merge_grown(key, self.links().len()))
    }

    /// A multiset's union is its sum.
    fn union_items(&self, counts: &[Vec<u64>]) -> Vec<u64> {
        counts.iter().map(|counts| saturating_sum(counts)).collect()
    }

    forward_union_operations!();
}

/// The estimated count of a union of sets holding `counts` items: at least the largest set, at
/// most all of them.
fn set_union_count(estimate: f64, counts: &[u64]) -> u64 {
    let most = counts.iter().copied().max().unwrap_or(0);
    bounded_estimate(estimate, most, saturating_sum(counts))
}

fn saturating_sum(counts: &[u64]) -> u64 {
    counts.iter().fold(0u64, |sum, &n| sum.saturating_add(n))
}

/// The first key that exists among those merged, whose shape every other must have.
struct Reference<'a> {
    key: &'a [u8],
    handle: ValueHandle,
    shape: MergeShape,
}

/// The filters of a merge or a union count that exist, each held by its handle (so that it
/// stays readable whatever happens to its key meanwhile), with the count of each of its links.
struct Members<'a> {
    reference: Option<Reference<'a>>,
    sources: Vec<ValueHandle>,
    /// `counts[link]`: the item count of that link in each filter that has it.
    counts: Vec<Vec<u64>>,
}

impl<'a> Members<'a> {
    /// Checks each key in order against the first that exists: its type, whether it can be
    /// merged at all, and its shape. A missing key is skipped.
    fn gather<F: Union>(ctx: &Ctx, keys: &[&'a [u8]]) -> Result<Members<'a>, CmdError> {
        let mut members = Members {
            reference: None,
            sources: Vec::new(),
            counts: Vec::new(),
        };
        for &key in keys {
            let Some((_, handle)) = ctx.db().entry(key, ctx.now) else {
                continue;
            };
            let (shape, items) = {
                let value = read(&handle);
                let filter = F::of(&value).ok_or(CmdError::from(WRONGTYPE))?;
                if let Some(refusal) = filter.refusal(key) {
                    return Err(refusal);
                }
                (filter.merge_shape(), filter.link_items())
            };
            if let Some(reference) = &members.reference {
                if let Some(mismatch) = reference.shape.mismatch(&shape) {
                    return Err(merge_mismatch(key, reference.key, &mismatch));
                }
            }
            if members.counts.len() < items.len() {
                members.counts.resize(items.len(), Vec::new());
            }
            for (counts, items) in members.counts.iter_mut().zip(items) {
                counts.push(items);
            }
            match members.reference {
                None => members.reference = Some(Reference { key, handle, shape }),
                Some(_) => members.sources.push(handle),
            }
        }
        Ok(members)
    }

    fn links(&self) -> usize {
        self.counts.len()
    }
}

/// `keys`, each once, leaving out `except`.
fn distinct_keys<'a>(keys: Items<'a>, except: Option<&[u8]>) -> Vec<&'a [u8]> {
    let mut distinct: Vec<&[u8]> = Vec::new();
    for key in keys.iter() {
        if Some(key) != except && !distinct.contains(&key) {
            distinct.push(key);
        }
    }
    distinct
}

/// The length of link `link` of the filter behind `handle`; None if it has no such link.
fn link_len<F: Union>(handle: &ValueHandle, link: usize) -> Result<Option<u64>, CmdError> {
    let value = read(handle);
    let filter = F::of(&value).ok_or(CmdError::from(WRONGTYPE))?;
    Ok((link < filter.link_count()).then(|| filter.link_len(link)))
}

/// Replaces `out` with bytes `at..at + len` of link `link` of the filter behind `handle`, read
/// under a brief lock.
fn read_piece<F: Union>(
    handle: &ValueHandle,
    link: usize,
    at: u64,
    len: u64,
    out: &mut Vec<u8>,
) -> CmdResult {
    out.clear();
    let value = read(handle);
    let filter = F::of(&value).ok_or(CmdError::from(WRONGTYPE))?;
    match filter.read_link(link, at, len, out) {
        true => Ok(()),
        false => Err(WRONGTYPE.into()),
    }
}

/// MERGE dest src [src ...]; see the top of this file.
struct Merge<'a> {
    dest: &'a [u8],
    sources: Items<'a>,
}

impl<'a> Merge<'a> {
    fn parse(request: Request<'a>) -> Result<Self, CmdError> {
        let mut args = Args::new(request, 1);
        Ok(Merge {
            dest: args.required()?,
            sources: args.items(),
        })
    }
}

/// BF.MERGE and CBF.MERGE.
pub(super) fn merge<F: Union>(ctx: &mut Ctx, request: Request) -> CmdResult {
    let Merge { dest, sources } = Merge::parse(request)?;
    let mut keys = vec![dest];
    keys.extend(distinct_keys(sources, Some(dest)));
    let members = Members::gather::<F>(ctx, &keys)?;
    let Some(reference) = &members.reference else {
        return Err(BF_NOT_FOUND.into());
    };
    let limit = ctx.filter_memory_limit();
    let links = members.links();
    let dest_exists = reference.key == dest;
    // The result's arrays, allocated before anything changes: a new filter, or the links an
    // existing one lacks.
    let mut created = None;
    if dest_exists {
        ctx.db().get_mut(dest, ctx.now, |value| {
            match value.and_then(|value| F::of_mut(value)) {
                Some(filter) => filter.extend_to(links, limit),
                None => Err(WRONGTYPE.into()),
            }
        })?;
    } else {
        let value = read(&reference.handle);
        let first = F::of(&value).ok_or(CmdError::from(WRONGTYPE))?;
        created = Some(first.empty_like(links, limit)?);
    }
    let sources = match dest_exists {
        true => members.sources.clone(),
        false => std::iter::once(reference.handle.clone())
            .chain(members.sources.iter().cloned())
            .collect(),
    };
    let target = match dest_exists {
        true => Some(reference.handle.clone()),
        false => None,
    };
    // Folds a piece into the result, wherever it is.
    let mut fold = |link: usize, at: u64, piece: &[u8]| -> CmdResult {
        let folded = match (&mut created, &target) {
            (Some(filter), _) => filter.merge_link(link, at, piece),
            (None, Some(handle)) => {
                let mut value = write(handle);
                let filter = F::of_mut(&mut value).ok_or(CmdError::from(WRONGTYPE))?;
                filter.merge_link(link, at, piece)
            }
            (None, None) => unreachable!("a merge has a result"),
        };
        match folded {
            true => Ok(()),
            false => Err(WRONGTYPE.into()),
        }
    };
    let mut piece = Vec::new();
    for source in &sources {
        for link in 0..links {
            let Some(len) = link_len::<F>(source, link)? else {
                break;
            };
            let mut at = 0;
            while at < len {
                let take = PIECE_BYTES.min(len - at);
                read_piece::<F>(source, link, at, take, &mut piece)?;
                fold(link, at, &piece)?;
                at += take;
            }
        }
    }
    let set_items = |filter: &mut F| {
        let items = filter.union_items(&members.counts);
        filter.set_link_items(&items);
    };
    match (created, target) {
        (Some(mut filter), _) => {
            set_items(&mut filter);
            if !ctx.db().insert_new(dest, filter.into_value(), ctx.now) {
                return Err(BF_ITEM_EXISTS.into());
            }
        }
        (None, Some(handle)) => {
            let mut value = write(&handle);
            set_items(F::of_mut(&mut value).ok_or(CmdError::from(WRONGTYPE))?);
        }
        (None, None) => unreachable!("a merge has a result"),
    }
    ctx.reply.ok();
    Ok(())
}

/// BF.UNIONCARD key [key ...]: the estimated number of distinct items in the union of the
/// filters, without writing it: each link's bits or-ed across the filters, piece by piece, and
/// counted, then BF.CARD's estimate for that many bits, held between the largest count of the
/// link among the filters and their sum. Missing keys are empty; none at all answers 0.
pub(super) fn unioncard(ctx: &mut Ctx, request: Request) -> CmdResult {
    let keys = distinct_keys(Args::new(request, 1).items(), None);
    let members = Members::gather::<BloomChain>(ctx, &keys)?;
    let Some(reference) = &members.reference else {
        ctx.reply.int(0);
        return Ok(());
    };
    let filters: Vec<&ValueHandle> = std::iter::once(&reference.handle)
        .chain(&members.sources)
        .collect();
    let mut total = 0u64;
    let mut piece = Vec::new();
    for (link, counts) in members.counts.iter().enumerate() {
        // The filters that have the link, found once for all its pieces; the first of them
        // gives its length, which they share.
        let (mut holders, mut len) = (Vec::new(), None);
        for &handle in &filters {
            if let Some(found) = link_len::<BloomChain>(handle, link)? {
                len.get_or_insert(found);
                holders.push(handle);
            }
        }
        let len = len.unwrap_or(0);
        // Links are whole 64-bit words, and so is every piece.
        let (mut set, mut union) = (0u64, Vec::new());
        let mut at = 0;
        while at < len {
            let take = PIECE_BYTES.min(len - at);
            union.clear();
            union.resize((take / 8) as usize, 0u64);
            for handle in &holders {
                read_piece::<BloomChain>(handle, link, at, take, &mut piece)?;
                for (word, bytes) in union.iter_mut().zip(piece.chunks_exact(8)) {
                    *word |= u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
                }
            }
            set += union.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
            at += take;
        }
        let estimate = filters
            .iter()
            .find_map(|handle| {
                let value = read(handle);
                let chain = BloomChain::of(&value)?;
                chain.links().get(link).map(|l| l.items_for_set_bits(set))
            })
            .unwrap_or(0.0);
        total = total.saturating_add(set_union_count(estimate, counts));
    }
    ctx.reply.int(total.min(i64::MAX as u64) as i64);
    Ok(())
}
