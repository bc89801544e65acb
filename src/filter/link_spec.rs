//! One link as a dump's header describes it, sieved's (`dump.rs`) or RedisBloom's
//! (`redisbloom_dump.rs`), and the empty links both build from their headers before the
//! chunks fill them.

use super::chain::allocate_links;
use super::link::{Link, LinkArray};
use super::sizing::LinkSize;
use super::FilterError;
use std::convert::identity;

/// One link as a header (sieved's or RedisBloom's) describes it.
pub(super) struct LinkSpec {
    pub(super) capacity: u64,
    pub(super) error_rate: f64,
    pub(super) size: LinkSize,
    pub(super) items: u64,
}

impl LinkSpec {
    /// Whether the links' items add up to a header's count of the chain's items.
    pub(super) fn add_up_to(links: &[LinkSpec], items: u64) -> bool {
        links
            .iter()
            .try_fold(0u64, |sum, link| sum.checked_add(link.items))
            == Some(items)
    }

    /// Whether a link of `capacity` and `error_rate` is this one grown by `expansion`, as
    /// chain.rs grows links.
    pub(super) fn grows_into(&self, expansion: u32, capacity: u64, error_rate: f64) -> bool {
        self.capacity.checked_mul(u64::from(expansion)) == Some(capacity)
            && self.error_rate * 0.5 == error_rate
    }
}

/// The links a header describes, empty but for their counts of items; refused before anything
/// is allocated if their `total_bytes` is over `limit_bytes`.
pub(super) fn empty_links<A: LinkArray>(
    kind: A::Kind,
    specs: &[LinkSpec],
    total_bytes: u64,
    limit_bytes: u64,
) -> Result<Vec<Link<A>>, FilterError> {
    let shapes = specs
        .iter()
        .map(|spec| (spec.size, spec.capacity, spec.error_rate));
    let mut links = allocate_links(kind, shapes, total_bytes, limit_bytes, identity)?;
    for (link, spec) in links.iter_mut().zip(specs) {
        link.set_items(spec.items);
    }
    Ok(links)
}
